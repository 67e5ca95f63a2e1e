"""Slow tier: a fleet sweep launched as separate runs through Dagster's run queue.

A real persistent instance (a temporary ``DAGSTER_HOME`` holding the product's ``dagster.yaml``
of :mod:`faultsense_pipelines.sweeps.home`: at most 4 runs at once, one per
``dagster/partition/replica`` tag), the default run launcher (one subprocess per run), runs
submitted by the documented command (``dagster job backfill``, docs/operations.md) and
dequeued by a real ``dagster-daemon run``. Two replicas times two hours: the queue starts the
two replicas' sweeps side by side but never two sweeps of one replica at once, every run
succeeds with its ledger partition, and the automation sensor refreshes the analytics and the
fleet view through the same queue. 206 s on the busy 2-core machine.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from faultsense_pipelines.sweeps.home import ensure_home, open_instance
from tests.pipeline_helpers import stop_process_group, write_fleet

pytestmark = pytest.mark.slow

LOCATION = "faultsense_pipelines.definitions"
HOURS = ["2026-11-30-05:00", "2026-11-30-06:00"]
REPLICAS = ["sim-faulty", "sim-healthy"]
#: The injected faults of tests.pipeline_helpers.SMALL_FLEET (its independent ground truth).
FAULTS = {"sim-faulty": ["gpu:5", "link:1-9"], "sim-healthy": []}


def _bin(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


@pytest.fixture
def queued_home(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str], Path]]:
    """The instance folder with the product's dagster.yaml and the replica partitions, the
    environment of the Dagster processes, and the ledger path."""
    fleet, ledger = write_fleet(tmp_path)
    home = ensure_home(tmp_path / "dagster_home")
    with open_instance(home) as instance:  # what the fleet_replica_partitions sensor does
        instance.add_dynamic_partitions("replica", REPLICAS)
    env = {**os.environ, "DAGSTER_HOME": str(home), "FAULTSENSE_FLEET": str(fleet)}
    yield home, env, ledger


def _events(instance, run_id: str) -> dict[str, float]:
    """First timestamp of each run-level event of a run (RUN_STARTING, RUN_SUCCESS, ...)."""
    out: dict[str, float] = {}
    for record in instance.all_logs(run_id):
        event = record.dagster_event
        if event is not None and event.event_type_value.startswith(("RUN_", "PIPELINE_")):
            out.setdefault(event.event_type_value.replace("PIPELINE_", "RUN_"), record.timestamp)
    return out


def test_queued_sweeps_of_one_replica_never_overlap_and_of_two_replicas_do(tmp_path: Path, queued_home) -> None:
    import dagster as dg
    from deltalake import DeltaTable

    home, env, ledger = queued_home
    partitions = ",".join(f"{h}|{r}" for h in HOURS for r in REPLICAS)
    submit = subprocess.run(
        [_bin("dagster"), "job", "backfill", "-m", LOCATION, "-j", "faultsense_sweep", "--partitions", partitions, "--noprompt"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert submit.returncode == 0, submit.stdout[-2000:] + submit.stderr[-2000:]
    with open_instance(home) as instance:
        queued = instance.get_runs()
        assert sorted(r.tags["dagster/partition"] for r in queued) == sorted(partitions.split(","))
        assert {r.status for r in queued} == {dg.DagsterRunStatus.QUEUED}  # nothing runs before the daemon

    log_path = tmp_path / "daemon.log"
    with log_path.open("w") as log:
        daemon = subprocess.Popen(
            [_bin("dagster-daemon"), "run", "-m", LOCATION],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 720
            with open_instance(home) as instance:
                while True:
                    assert daemon.poll() is None, log_path.read_text()[-3000:]
                    assert time.monotonic() < deadline, [(r.job_name, r.status) for r in instance.get_runs()]
                    runs = instance.get_runs()
                    sweeps = [r for r in runs if r.job_name == "faultsense_sweep"]
                    done = all(r.is_finished for r in runs)
                    if done and all(r.is_finished for r in sweeps):
                        last_sweep_end = max(_events(instance, r.run_id).get("RUN_SUCCESS", 0.0) for r in sweeps)
                        refreshed = {  # the automation sensor's runs, requested after the last sweep
                            tuple(sorted(k.to_user_string() for k in r.asset_selection or ()))
                            for r in runs
                            if r.job_name != "faultsense_sweep"
                            and _events(instance, r.run_id).get("RUN_ENQUEUED", 0.0) >= last_sweep_end
                        }
                        if any("fleet_health" in s for s in refreshed) and any("gpu_fault_counts" in s for s in refreshed):
                            break
                        if any(r.status != dg.DagsterRunStatus.SUCCESS for r in sweeps):
                            break
                    time.sleep(2)
                runs = instance.get_runs()
                failed = [(r.job_name, r.tags.get("dagster/partition"), r.status) for r in runs if r.status.value != "SUCCESS"]
                assert not failed, failed
                spans = {}
                for r in sweeps:
                    ev = _events(instance, r.run_id)
                    spans[r.tags["dagster/partition"]] = (
                        r.tags["dagster/partition/replica"],
                        ev["RUN_STARTING"],
                        ev["RUN_SUCCESS"],
                    )
        finally:
            stop_process_group(daemon, term_s=30, kill_s=10)

    # one replica: its second sweep was launched only after its first had ended
    for replica in REPLICAS:
        own = sorted((start, end) for rep, start, end in spans.values() if rep == replica)
        assert len(own) == len(HOURS)
        assert all(end <= next_start for (_, end), (next_start, _) in itertools.pairwise(own)), (replica, own)
    # two replicas: the queue had a sweep of each in flight at the same time
    assert any(a[0] != b[0] and max(a[1], b[1]) < min(a[2], b[2]) for a in spans.values() for b in spans.values()), spans

    table = DeltaTable(str(ledger / "delta"))
    faults = table.to_pandas(filters=[("dataset", "=", "fault_ledger")])
    probes = table.to_pandas(filters=[("dataset", "=", "probe_runs")])
    for hour in HOURS:
        for replica in REPLICAS:
            batch = f"faultsense-{replica}-h{hour[11:13]}"
            assert sorted(faults[faults["batch"] == batch]["component"]) == FAULTS[replica], batch
            assert (probes["batch"] == batch).any(), batch
