"""Probe executors: the one interface (:class:`~faultsense_pipelines.replica.executor.ProbeExecutor`)
over four back ends, and the one registry of them, :data:`EXECUTOR_BUILDERS`.

* ``simulated`` — :class:`faultsense_pipelines.sim.simulator.SimulatedReplica`.
* ``local`` — :class:`~.local.LocalExecutor`: worker processes + torch.distributed here.
* ``ray`` — :class:`~.ray_actors.RayExecutor`: the same workers as Ray actors.
* ``vllm`` — :class:`~.vllm_http.VllmExecutor`: a vLLM server over HTTP.

The kinds are the members of :class:`faultsense_pipelines.replica.vocabulary.ExecutorKind` (the fleet
file's ``executor``); :data:`EXECUTOR_BUILDERS` maps each to how it is built, and
:func:`make_executor` builds one from a fleet file's section. Back ends are imported on
first use, so importing this package pulls in neither Ray nor an HTTP client.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from faultsense_pipelines.replica.vocabulary import ExecutorKind

from .injection import GpuFault, LinkDelay, parse_injections

if TYPE_CHECKING:
    from faultsense_pipelines.replica.executor import ProbeExecutor

    from .common import ProbeTrace
    from .local import LocalExecutor
    from .ray_actors import RayExecutor
    from .vllm_http import VllmExecutor

__all__ = [
    "EXECUTOR_BUILDERS",
    "EXECUTOR_KINDS",
    "ExecutorKind",
    "GpuFault",
    "LinkDelay",
    "LocalExecutor",
    "ProbeTrace",
    "RayExecutor",
    "VllmExecutor",
    "make_executor",
    "parse_injections",
]

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


def _simulated(n_gpus: int, probe_size: int, **options: Any) -> ProbeExecutor:
    from faultsense_pipelines.replica.faults import parse_faults
    from faultsense_pipelines.sim.simulator import SimulatedReplica

    del probe_size  # the simulator runs probes of any size
    topology = options.get("topology")
    faults = parse_faults(options.pop("faults", ()), n_gpus, topology)  # objects pass through; mappings are validated
    return SimulatedReplica(n_gpus, faults, **options)


def _lazy_class(name: str) -> Callable[..., ProbeExecutor]:
    def build(n_gpus: int, probe_size: int, **options: Any) -> ProbeExecutor:
        cls: Callable[..., ProbeExecutor] = __getattr__(name)
        return cls(n_gpus, probe_size, **options)

    build.__doc__ = f"Build a :class:`{name}` (imported on first use)."
    return build


#: The one registry of executor kinds: how each :class:`ExecutorKind` is built, as
#: ``builder(n_gpus, probe_size, **options) -> ProbeExecutor``. The fleet file's ``executor``
#: choices (:data:`faultsense_pipelines.fleet.EXECUTORS`) are the same kinds; a test checks
#: that every kind has a builder.
EXECUTOR_BUILDERS: Mapping[ExecutorKind, Callable[..., ProbeExecutor]] = MappingProxyType(
    {
        ExecutorKind.SIMULATED: _simulated,
        ExecutorKind.LOCAL: _lazy_class("LocalExecutor"),
        ExecutorKind.RAY: _lazy_class("RayExecutor"),
        ExecutorKind.VLLM: _lazy_class("VllmExecutor"),
    }
)

#: Executor kinds a fleet file may name, as plain words, in registry order.
EXECUTOR_KINDS: tuple[str, ...] = tuple(k.value for k in EXECUTOR_BUILDERS)


def make_executor(kind: ExecutorKind | str, n_gpus: int, probe_size: int, **options: Any) -> ProbeExecutor:
    """Build the executor of one replica from :data:`EXECUTOR_BUILDERS`.

    Args:
        kind: an :class:`ExecutorKind` or its word (``"simulated"``, ``"local"``, ``"ray"``,
            ``"vllm"``).
        n_gpus: GPUs in the replica, ``n``.
        probe_size: the plan's probe size ``k``.
        **options: the kind's keyword options —
            ``simulated``: ``faults`` (:data:`~faultsense_pipelines.replica.faults.Fault` objects, or
            mappings such as ``{"gpu": 2, "slowdown": 3.0}`` / ``{"link": [0, 5], "slowdown":
            1.5}`` / ``{"nic": 3, "slowdown": 1.5}``), ``noise_sigma``, ``seed``, ``base_ms``,
            ``topology`` (a :class:`~faultsense_pipelines.replica.topology.ReplicaTopology`);
            ``local``: ``inject`` (:data:`~faultsense_pipelines.replica.faults.Injection` objects or
            ``{"gpu": g, "slowdown": f}`` / ``{"link": [a, b], "delay_ms": d}``) and the
            layer options of :class:`~.local.LocalExecutor`;
            ``ray``: ``address``, ``inject``, ``use_gpus`` and the same layer options;
            ``vllm``: ``url``, ``api_key_env``, ``timeout_s``, ... of ``VllmExecutor``.

    Returns:
        A started executor; the caller closes it.

    Raises:
        ValueError: for an unknown kind or a bad option (naming it).
        ExecutorError: if the back end cannot start (workers, cluster).
    """
    return EXECUTOR_BUILDERS[ExecutorKind.parse(kind, "executor kind")](n_gpus, probe_size, **options)
