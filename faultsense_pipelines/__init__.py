"""FaultSense: localize gray failures in MoE serving replicas from the application layer.

Data flows one way through this package:

    topology -> cover (plan) -> probes (execute) -> suspects -> drilldown -> localize -> ledger

plus two passive detectors beside it (``minder`` for machine metrics, ``flowpulse`` for
switch-port counters) that write to the same ledger. The Dagster definitions that schedule
all of it live in :mod:`faultsense_pipelines.definitions`.
"""

__version__ = "0.1.0"
