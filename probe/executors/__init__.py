"""Probe executors: the one interface (:class:`~faultsense_pipelines.probes.ProbeExecutor`)
over four back ends, and :func:`make_executor`, which builds one from a fleet file's section.

* ``simulated`` — :class:`faultsense_pipelines.simulator.SimulatedReplica`.
* ``local`` — :class:`~.local.LocalExecutor`: worker processes + torch.distributed here.
* ``ray`` — :class:`~.ray_actors.RayExecutor`: the same workers as Ray actors.
* ``vllm`` — :class:`~.vllm_http.VllmExecutor`: a vLLM server over HTTP.

Back ends are imported on first use, so importing this package pulls in neither Ray nor
an HTTP client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .injection import GpuSlowdown, LinkDelay, parse_injections

if TYPE_CHECKING:
    from faultsense_pipelines.probes import ProbeExecutor

    from .common import ProbeTrace
    from .local import LocalExecutor
    from .ray_actors import RayExecutor
    from .vllm_http import VllmExecutor

__all__ = [
    "EXECUTOR_KINDS",
    "GpuSlowdown",
    "LinkDelay",
    "LocalExecutor",
    "ProbeTrace",
    "RayExecutor",
    "VllmExecutor",
    "make_executor",
    "parse_injections",
]

#: Executor kinds a fleet file may name.
EXECUTOR_KINDS: tuple[str, ...] = ("simulated", "local", "ray", "vllm")

_LAZY = {
    "LocalExecutor": ".local",
    "RayExecutor": ".ray_actors",
    "VllmExecutor": ".vllm_http",
    "ProbeTrace": ".common",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_executor(kind: str, gpus: int, probe_size: int, **options: Any) -> ProbeExecutor:
    """Build the executor of one replica.

    Args:
        kind: ``"simulated"``, ``"local"``, ``"ray"`` or ``"vllm"``.
        gpus: GPUs in the replica, ``n``.
        probe_size: the plan's probe size ``k``.
        **options: the kind's keyword options —
            ``simulated``: ``faults`` (specs such as ``{"gpu": 2, "slowdown": 3.0}`` or
            ``{"link": [0, 5], "slowdown": 1.5}``), ``noise_sigma``, ``seed``, ``base_ms``;
            ``local``: ``inject`` (``{"gpu": g, "slowdown": f}`` / ``{"link": [a, b],
            "delay_ms": d}``) and the layer options of :class:`~.local.LocalExecutor`;
            ``ray``: ``address``, ``inject``, ``use_gpus`` and the same layer options;
            ``vllm``: ``url``, ``api_key_env``, ``timeout_s``, ... of ``VllmExecutor``.

    Returns:
        A started executor; the caller closes it.

    Raises:
        ValueError: for an unknown kind or a bad option (naming it).
        ExecutorError: if the back end cannot start (workers, cluster).
    """
    if kind == "simulated":
        from faultsense_pipelines.faults import parse_faults
        from faultsense_pipelines.simulator import SimulatedReplica

        faults = parse_faults(options.pop("faults", ()), gpus)
        return SimulatedReplica(gpus, faults, **options)
    if kind in ("local", "ray", "vllm"):
        cls = __getattr__({"local": "LocalExecutor", "ray": "RayExecutor", "vllm": "VllmExecutor"}[kind])
        return cls(gpus, probe_size, **options)
    raise ValueError(f"executor kind must be one of {', '.join(EXECUTOR_KINDS)}, got {kind!r}")
