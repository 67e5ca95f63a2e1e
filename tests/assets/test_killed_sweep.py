"""A sweep killed with SIGKILL at any moment leaves no live-looking Dagster run behind.

Real ``faultsense sweep`` processes killed with real signals, a real persistent Dagster
instance; the killed runs are read back from the instance's own storage.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef

from faultsense_pipelines.definitions import SWEEP_JOB, build_definitions
from faultsense_pipelines.sweeps import HOST_TAG, PID_TAG, fail_orphaned_runs
from faultsense_pipelines.sweeps.home import ensure_home, open_instance
from tests.pipeline_helpers import HOUR, write_fleet

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals"),
]

SIM = """
ledger: {ledger}
replicas:
  - name: sim-k
    gpus: 16
    probe_size: 4
    executor: simulated
    simulated: {{faults: [{{gpu: 5, slowdown: 2.0}}], noise_sigma: 0.01, seed: 4}}
"""

LIVE = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]


def _dead_pid() -> int:
    """The id of a process that has exited and been reaped (a real one, not a guess)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_run_created_but_never_started_is_failed_by_the_next_sweep(tmp_path: Path) -> None:
    """A kill between the run's creation and its start (about the first 3 s of a sweep) left
    the run ``NOT_STARTED`` for good: only STARTING and STARTED runs were looked at. The run
    is made here as ``execute_in_process`` makes it (a real run record, tagged with the
    pid of a process that is gone) and must come out ``FAILURE`` with the reason."""
    fleet, _ = write_fleet(tmp_path, SIM)
    defs = build_definitions(fleet)
    job = defs.resolve_job_def(SWEEP_JOB)
    pid = _dead_pid()
    tags = {"dagster/partition/replica": "sim-k", PID_TAG: str(pid), HOST_TAG: socket.gethostname()}
    with dg.DagsterInstance.ephemeral() as instance:
        run = instance.create_run_for_job(job_def=job, tags=tags)
        other = instance.create_run_for_job(job_def=job, tags={**tags, "dagster/partition/replica": "sim-other"})
        assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.NOT_STARTED
        assert fail_orphaned_runs(instance, "sim-k") == 1
        after = instance.get_run_by_id(run.run_id)
        assert after is not None and after.status == dg.DagsterRunStatus.FAILURE
        failures = [e for e in instance.all_logs(run.run_id) if e.dagster_event and e.dagster_event.is_run_failure]
        assert len(failures) == 1 and f"pid {pid}" in failures[0].message
        assert instance.get_run_by_id(other.run_id).status == dg.DagsterRunStatus.NOT_STARTED  # another replica's
        assert fail_orphaned_runs(instance, "sim-k") == 0


#: Kills timed from a sweep's start, seconds: before Dagster is imported and while it loads.
KILL_AT_S = (0.5, 1.5)
#: Kills timed from the moment the sweep's run record exists, seconds: while the run is
#: created, started and executing (the sweep of ``sim-k`` takes about 3-6 s). Timed by an
#: event, not by the clock alone, so a loaded machine still kills runs in flight.
KILL_AFTER_RUN_S = (0.0, 0.2, 0.5, 1.0, 2.0)


def _wait_for_run(home: Path, proc: subprocess.Popen[bytes], timeout_s: float = 300.0) -> bool:
    """Poll the instance until a run tagged with ``proc``'s pid exists (True) or ``proc``
    ended first (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        with open_instance(home) as instance:
            if instance.get_runs(filters=dg.RunsFilter(tags={PID_TAG: str(proc.pid)}), limit=1):
                return True
        time.sleep(0.05)
    return False


def test_sweeps_killed_at_a_spread_of_moments_leave_no_run_live(tmp_path: Path) -> None:
    """Kill ``faultsense sweep`` with SIGKILL at each of :data:`KILL_AT_S` after its start and
    :data:`KILL_AFTER_RUN_S` after its run record appears, then sweep once more: no run of the
    replica is left NOT_STARTED, STARTING or STARTED, and every run a killed sweep created is
    FAILURE, naming the killed process."""
    fleet, _ = write_fleet(tmp_path, SIM)
    home = tmp_path / "dagster-home"
    env = {**os.environ, "DAGSTER_HOME": str(home), "TMPDIR": str(tmp_path)}
    argv = [str(Path(sys.executable).with_name("faultsense")), "sweep", "--fleet", str(fleet), "--hour", HOUR]
    with open_instance(ensure_home(home)) as instance:  # its storage made once, before any sweep races to make it
        assert instance.get_runs() == []
    killed = []

    def kill(proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            killed.append(proc.pid)

    for at in KILL_AT_S:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=at)
        except subprocess.TimeoutExpired:
            kill(proc)
    for after in KILL_AFTER_RUN_S:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if _wait_for_run(home, proc):
            time.sleep(after)
        kill(proc)
    last = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = last.communicate(timeout=600)
    assert last.returncode == 0, err
    done_pid = last.pid
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
        runs = instance.get_runs()  # the sweep runs and the analytics and fleet-view runs after them
        assert [(r.job_name, r.status) for r in runs if r.status in LIVE] == []
        failed_by_next = 0
        for run in (r for r in runs if r.tags.get(PID_TAG) in {str(p) for p in killed}):
            messages = [e.message for e in instance.all_logs(run.run_id) if e.dagster_event and e.dagster_event.is_run_failure]
            if run.status == dg.DagsterRunStatus.FAILURE:  # else it ended before the kill
                assert any(f"pid {run.tags[PID_TAG]}" in m for m in messages), messages
                failed_by_next += 1
        assert failed_by_next >= 1  # the spread did hit runs in flight
        assert any(r.status == dg.DagsterRunStatus.SUCCESS and r.tags.get(PID_TAG) == str(done_pid) for r in runs)
