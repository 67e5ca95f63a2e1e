"""The replica being probed: its GPUs and shared components, the faults it can carry, and the
one interface every probe executor implements.

* :mod:`.vocabulary` -- the closed word sets (component kinds, statuses, outcomes, executor
  kinds, drill-down methods) shared by files, the ledger and the CLI.
* :mod:`.topology` -- GPUs, links and the shared components (NVSwitch, NIC, switch) that carry
  GPU pairs.
* :mod:`.faults` -- the gray failures a replica can carry (slow GPU, link, shared component).
* :mod:`.executor` -- :class:`ProbeExecutor` and the :class:`ProbeMeasurement` it returns.
"""

from __future__ import annotations

from .executor import ExecutorError, ProbeExecutor, ProbeMeasurement
from .faults import (
    MAX_SLOWDOWN,
    AnyFault,
    Fault,
    FaultSpec,
    GpuFault,
    Injection,
    InjectionSpec,
    LinkDelay,
    LinkFault,
    NicFault,
    NvSwitchFault,
    SharedFault,
    SwitchFault,
    check_faults,
    parse_fault,
    parse_faults,
    parse_injections,
)
from .topology import Component, Link, ReplicaTopology, gpu_component, link, link_component
from .vocabulary import DEFAULT_DRILLDOWN, ComponentKind, DrilldownMethod, Engine, ExecutorKind, Outcome, Status, Vocabulary

__all__ = [
    "DEFAULT_DRILLDOWN",
    "MAX_SLOWDOWN",
    "AnyFault",
    "Component",
    "ComponentKind",
    "DrilldownMethod",
    "Engine",
    "ExecutorError",
    "ExecutorKind",
    "Fault",
    "FaultSpec",
    "GpuFault",
    "Injection",
    "InjectionSpec",
    "Link",
    "LinkDelay",
    "LinkFault",
    "NicFault",
    "NvSwitchFault",
    "Outcome",
    "ProbeExecutor",
    "ProbeMeasurement",
    "ReplicaTopology",
    "SharedFault",
    "Status",
    "SwitchFault",
    "Vocabulary",
    "check_faults",
    "gpu_component",
    "link",
    "link_component",
    "parse_fault",
    "parse_faults",
    "parse_injections",
]
