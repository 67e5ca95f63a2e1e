"""FaultSense: localize gray failures in MoE serving replicas from the application layer.

One package per stage, in the order a probe's latency travels through them:

* :mod:`~faultsense_pipelines.replica` -- the replica: topology, faults, the probe executor
  interface, the shared vocabulary.
* :mod:`~faultsense_pipelines.cover` -- Phase 1's plan: size-k probes covering every GPU and pair.
* :mod:`~faultsense_pipelines.measure` -- running probes: repeats, rounds, a latency against a threshold.
* :mod:`~faultsense_pipelines.localize` -- suspects, the drill-downs (``sequential`` by default),
  the verdicts, and the driver of both phases.
* :mod:`~faultsense_pipelines.sim` -- a simulated replica (the ``simulated`` executor).
* :mod:`~faultsense_pipelines.probe` -- the probe model and the real executors (``local``,
  ``ray``, ``vllm``).
* :mod:`~faultsense_pipelines.fleet` -- the fleet file: which replicas to sweep, and how.
* :mod:`~faultsense_pipelines.ledger` -- the fault ledger every verdict lands in.

Beside them, two passive detectors write to the same ledger (:mod:`~faultsense_pipelines.minder`
for machine metrics, :mod:`~faultsense_pipelines.flowpulse` for switch-port counters). On top,
the Dagster layer schedules all of it (``resources``, ``assets``, wired in
:mod:`faultsense_pipelines.definitions`), :mod:`~faultsense_pipelines.sweeps` sweeps a fleet
now through it, and :mod:`~faultsense_pipelines.cli` is the ``faultsense`` command. :mod:`~faultsense_pipelines.validation`, :mod:`~faultsense_pipelines.textfile`
and :mod:`~faultsense_pipelines.redaction` read user input with one-line errors and keep secrets
out of them; ``_utils`` holds the few helpers no stage owns. ``tests/test_import_contract.py`` holds the layers to this order.
"""

__version__ = "0.1.0"
