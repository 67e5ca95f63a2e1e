"""Shared set-up of the pipeline tests: a small simulated fleet, a real Dagster instance, sweeps."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from faultsense_pipelines.definitions import SWEEP_JOB, build_definitions

HOUR = "2026-11-30-08:00"
HOURS = ["2026-11-30-05:00", "2026-11-30-06:00", "2026-11-30-07:00"]

#: Two small simulated replicas: one with a slow GPU (5, x2.0) and a slow link (1-9, x1.8),
#: one healthy. The expected verdicts are the injected faults themselves.
SMALL_FLEET = """
ledger: {ledger}
replicas:
  - name: sim-faulty
    gpus: 16
    probe_size: 4
    executor: simulated
    simulated: {{faults: [{{gpu: 5, slowdown: 2.0}}, {{link: [1, 9], slowdown: 1.8}}], noise_sigma: 0.01, seed: 4}}
  - name: sim-healthy
    gpus: 16
    probe_size: 4
    executor: simulated
    simulated: {{noise_sigma: 0.01, seed: 5}}
"""


def write_fleet(tmp_path: Path, text: str = SMALL_FLEET) -> tuple[Path, Path]:
    """Write a fleet file whose ledger is ``tmp_path/ledger``; return (fleet path, ledger path)."""
    ledger = tmp_path / "ledger"
    path = tmp_path / "fleet.yaml"
    path.write_text(text.format(ledger=ledger))
    return path, ledger


def add_replicas(instance: dg.DagsterInstance, defs: dg.Definitions) -> None:
    """Add the fleet's replica partitions (what the fleet sensor does)."""
    fleet = defs.resources["fleet"].load()
    instance.add_dynamic_partitions("replica", fleet.names)


def sweep(
    defs: dg.Definitions, instance: dg.DagsterInstance, replica: str, hour: str = HOUR, **config
) -> dg.ExecuteInProcessResult:
    """One in-process run of the sweep job for (hour, replica)."""
    run_config = {"ops": {op: {"config": config} for op in ("phase1_probe_run", "phase2_drilldown")}} if config else None
    return defs.resolve_job_def(SWEEP_JOB).execute_in_process(
        instance=instance,
        partition_key=dg.MultiPartitionKey({"hour": hour, "replica": replica}),
        run_config=run_config,
        raise_on_error=False,
    )


def skipped_steps(result: dg.ExecuteInProcessResult) -> set[str]:
    return {e.step_key for e in result.all_events if e.is_step_skipped}


def new_defs(tmp_path: Path, text: str = SMALL_FLEET) -> tuple[dg.Definitions, Path]:
    path, ledger = write_fleet(tmp_path, text)
    return build_definitions(path), ledger
