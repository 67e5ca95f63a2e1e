"""The fleet's state as Prometheus metrics, read from the ledger (``faultsense metrics``).

* :mod:`.labels` -- a component's label values (node, GPU, rail) from the fleet file and the row;
* :mod:`.state` -- the fleet state of a window of ``sweeps`` and fault rows (pure functions);
* :mod:`.exporter` -- the collector: bounded work per scrape, cached by ledger version.

The alert rules over these series live in ``deploy/prometheus/faultsense-rules.yml``
(docs/operations.md, "Metrics and alerts").
"""

from .exporter import DEFAULT_PERSISTENCE_SWEEPS, DEFAULT_WINDOW_DAYS, SWEEP_INTERVAL_S, FleetCollector
from .labels import COMPONENT_LABELS, component_labels
from .state import ComponentState, FleetState, ReplicaState, build_state, episodes

__all__ = [
    "COMPONENT_LABELS",
    "DEFAULT_PERSISTENCE_SWEEPS",
    "DEFAULT_WINDOW_DAYS",
    "SWEEP_INTERVAL_S",
    "ComponentState",
    "FleetCollector",
    "FleetState",
    "ReplicaState",
    "build_state",
    "component_labels",
    "episodes",
]
