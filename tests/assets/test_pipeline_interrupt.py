"""A failed or interrupted sweep never destroys what the ledger already holds.

Real Dagster instance, real Delta ledger, real worker processes, a real ``SIGINT``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
from typer.testing import CliRunner

from faultsense_pipelines.cli import app
from faultsense_pipelines.ledger import FaultRow, LedgerStore, ProbeRunRow, make_fault_id
from faultsense_pipelines.sweeps import run_sweep
from tests.assets.test_pipeline_errors import closed_loopback_port
from tests.pipeline_helpers import HOUR, write_fleet

pytestmark = pytest.mark.integration  # Dagster runs and sweeps interrupted in subprocesses

SIM = """
ledger: {ledger}
replicas:
  - name: sim-faulty
    gpus: 16
    probe_size: 4
    executor: simulated
    simulated: {{faults: [{{gpu: 5, slowdown: 2.0}}], noise_sigma: 0.01, seed: 4}}
"""

#: The same replica, now behind a server nobody answers at.
DEAD = """
ledger: {ledger}
replicas:
  - name: sim-faulty
    gpus: 16
    probe_size: 4
    executor: vllm
    vllm: {{url: "http://127.0.0.1:PORT", timeout_s: 2, retries: 0}}
"""


def ledger_state(ledger: Path) -> dict[str, str]:
    """Every file under the ledger (hidden ones included, the sweep locks not) -> SHA-256 of its bytes."""
    return {
        str(f.relative_to(ledger)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(ledger.rglob("*"))
        if f.is_file() and ".locks" not in f.relative_to(ledger).parts
    }


def test_a_failed_rerun_keeps_the_confirmed_fault_and_a_successful_rerun_replaces_without_duplicates(tmp_path: Path) -> None:
    fleet, ledger = write_fleet(tmp_path, SIM)
    store = LedgerStore(str(ledger))
    with dg.DagsterInstance.ephemeral() as instance:
        (first,), _ = run_sweep(fleet, hour=HOUR, instance=instance)
        assert first.success and first.confirmed == ["gpu:5"]
        faults, runs = store.read_faults(), store.read_probe_runs()
        committed = ledger_state(ledger)

        fleet.write_text(DEAD.replace("PORT", str(closed_loopback_port())).format(ledger=ledger))
        (failed,), _ = run_sweep(fleet, hour=HOUR, instance=instance)
        assert not failed.success and "could not be measured" in failed.error
        # the completed sweep's files are byte for byte what they were; one file was added
        after = ledger_state(ledger)
        assert {k: v for k, v in after.items() if k in committed} == committed
        added = sorted(set(after) - set(committed))  # one commit: a log entry, the attempt's probe rows and its sweep row
        assert len(added) == 3 and added[0].startswith("delta/_delta_log/") and added[0].endswith(".json"), added
        assert added[1].startswith("delta/dataset=probe_runs/date=2026-11-30/") and added[1].endswith(".parquet"), added
        assert added[2].startswith("delta/dataset=sweeps/date=2026-11-30/") and added[2].endswith(".parquet"), added
        kept = store.read_faults()
        assert kept.loc[kept["status"] == "confirmed", "component"].tolist() == ["gpu:5"]
        attempt = store.read_probe_runs()
        attempt = attempt[attempt["sweep_id"] == failed.run_id]
        assert len(attempt) > 0 and attempt["error"].notna().all() and (attempt["executor"] == "vllm").all()
        assert len(store.read_probe_runs()) == len(runs) + len(attempt)

        fleet.write_text(SIM.format(ledger=ledger))
        for _ in range(2):
            (again,), _ = run_sweep(fleet, hour=HOUR, instance=instance)
            assert again.success and again.confirmed == ["gpu:5"]
            faults2, runs2 = store.read_faults(), store.read_probe_runs()
            assert sorted(faults2["fault_id"]) == sorted(faults["fault_id"])  # replaced, not added
            assert len(runs2) == len(runs) and set(runs2["sweep_id"]) == {again.run_id}  # the failed attempt's file is gone
            assert set(faults2["sweep_id"]) == {again.run_id}


def test_a_failed_first_sweep_of_an_hour_writes_its_error_rows_and_no_fault_file(tmp_path: Path) -> None:
    fleet, ledger = write_fleet(tmp_path, DEAD.replace("PORT", str(closed_loopback_port())))
    with dg.DagsterInstance.ephemeral() as instance:
        (failed,), _ = run_sweep(fleet, hour=HOUR, instance=instance)
    assert not failed.success
    store = LedgerStore(str(ledger))
    assert store.read_faults().empty
    runs = store.read_table("probe_runs")
    assert set(runs.column("batch").to_pylist()) == {"faultsense-sim-faulty-h08-failed"} and len(store.files("probe_runs")) == 1


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--repeats", "0"], "error: --repeats must be an integer in 1..100, got '0'"),
        (["--repeats", "abc"], "error: --repeats must be an integer in 1..100, got 'abc'"),
        (["--repeats", "101"], "error: --repeats must be an integer in 1..100, got '101'"),
        (["--ledger", ""], "error: --ledger must be a path or URI, got ''"),
    ],
)
def test_a_bad_repeats_or_an_empty_ledger_gets_one_line_and_exit_2(tmp_path: Path, args: list[str], expected: str) -> None:
    fleet, ledger = write_fleet(tmp_path, SIM)
    result = CliRunner().invoke(app, ["sweep", "--fleet", str(fleet), "--hour", HOUR, *args])
    assert result.exit_code == 2, result.output
    assert [line for line in result.stderr.splitlines() if line.strip()] == [expected]
    assert not ledger.exists()


def _unusable_ledger(tmp_path: Path, kind: str) -> tuple[str, str]:
    """A ledger location no sweep can use, and the one error line it must get."""
    if kind == "parent-is-a-file":
        (tmp_path / "afile").write_text("x")
        where = tmp_path / "afile" / "sub"
        return str(where), f"error: ledger: cannot create the sweep lock in {where}/.locks: Not a directory"
    if kind == "locks-is-a-file":
        (tmp_path / "l2").mkdir()
        (tmp_path / "l2" / ".locks").write_text("")
        return str(tmp_path / "l2"), f"error: ledger: cannot create the sweep lock in {tmp_path / 'l2'}/.locks: File exists"
    if kind == "name-too-long":
        where = str(tmp_path / ("x" * 300))
        return where, f"error: ledger {where[:200]}... cannot be looked at: [errno 36] File name too long"
    (tmp_path / "l3").mkdir()  # "table-not-a-table": its delta folder is a file
    (tmp_path / "l3" / "delta").write_text("")
    return str(tmp_path / "l3"), f"error: ledger table {tmp_path / 'l3'}/delta cannot be read"


@pytest.mark.parametrize("kind", ["parent-is-a-file", "locks-is-a-file", "name-too-long", "table-not-a-table"])
def test_an_unusable_ledger_is_refused_in_one_line_before_any_probe_runs(tmp_path: Path, kind: str) -> None:
    """A newcomer's hostile ledgers: each printed a Python traceback and exit 1 (the first
    three), or was found only after every replica had been probed (the last)."""
    fleet, _ = write_fleet(tmp_path, SIM)
    where, expected = _unusable_ledger(tmp_path, kind)
    home = tmp_path / "dagster-home"
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    result = CliRunner().invoke(app, ["sweep", "--fleet", str(fleet), "--hour", HOUR, "--ledger", where], env=env)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(expected), lines
    from dagster._core.instance.ref import InstanceRef

    if home.exists():  # refused before the first run: none recorded
        with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
            assert instance.get_runs_count() == 0


# -- Ctrl-C ------------------------------------------------------------------------------------

LOCAL_FIRST = """
ledger: {ledger}
replicas:
  - name: local-4
    gpus: 4
    probe_size: 2
    executor: local
    local: {{inject: [{{gpu: 2, slowdown: 3.0}}], hidden: 64, intermediate: 64, tokens: 8, start_timeout_s: 600}}
  - name: sim-after
    gpus: 16
    probe_size: 4
    executor: simulated
"""


def _seed_partition(ledger: Path) -> None:
    """A completed earlier sweep of local-4 at HOUR: probe rows and a confirmed gpu:2."""
    store = LedgerStore(str(ledger))
    day, sweep = "2026-11-30", "earlier-sweep"
    runs = [ProbeRunRow(sweep, "local-4", 1, i, (i, (i + 1) % 4), 10.0 + i, 0, "local") for i in range(4)]
    store.write_probe_runs(runs, day=day, batch="faultsense-local-4-h08")
    fault = FaultRow(
        fault_id=make_fault_id("faultsense", "local-4", HOUR, "gpu:2"),
        detected_at=datetime(2026, 11, 30, 8, 5, tzinfo=UTC),
        sweep_id=sweep,
        replica="local-4",
        detector="faultsense",
        component_kind="gpu",
        component="gpu:2",
        status="confirmed",
        gpu=2,
        slowdown=3.0,
        phase=2,
        probes_used=9,
    )
    store.write_faults([fault], day=day, batch="faultsense-local-4-h08")


def _children(pid: int) -> list[int]:
    """Direct child processes of ``pid`` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("group", [True, False], ids=["process-group", "main-process"])
def test_ctrl_c_while_local_workers_start_stops_the_sweep_and_leaves_the_ledger_untouched(tmp_path: Path, group: bool) -> None:
    fleet, ledger = write_fleet(tmp_path, LOCAL_FIRST)
    _seed_partition(ledger)
    before = ledger_state(ledger)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    env["DAGSTER_HOME"] = str(tmp_path / "dagster-home")  # its own persistent instance, not the checkout's
    exe = Path(sys.executable).with_name("faultsense")
    proc = subprocess.Popen(
        [str(exe), "sweep", "--fleet", str(fleet), "--hour", HOUR],
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    workers: list[int] = []
    try:
        # the marker: the local executor's scratch folder exists and its workers are running
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if any(scratch.glob("faultsense-local-*")):
                workers = _children(proc.pid)
                # all 4 spawned workers (not counting multiprocessing's resource tracker), so
                # the interrupt lands while they boot and join the group, after every start
                if sum("--multiprocessing-fork" in _cmdline(w) for w in workers) >= 4:
                    break
            time.sleep(0.05)
        assert proc.poll() is None and len(workers) >= 4, "the sweep never started its workers"
        if group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, (out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [
        "error: interrupted during local-4's run; its ledger partition holds its last completed sweep; no further replica was swept"
    ], err
    assert "sim-after" not in out
    assert ledger_state(ledger) == before  # nothing written, nothing left behind, not even a hidden file
    # every child of the sweep (workers, multiprocessing's resource tracker) exits; an orphan
    # may take a moment to notice its parent is gone on a loaded machine
    deadline = time.monotonic() + 120
    while [w for w in workers if _alive(w)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [_cmdline(w) for w in workers if _alive(w)]
    assert not any(scratch.glob("faultsense-local-*"))


def test_a_ctrl_c_that_another_handler_swallows_still_stops_the_sweep() -> None:
    # Dagster may turn a SIGINT into a plain run failure (one landing while the executor's
    # workers shut down); the sweep notices it through the signal wakeup fd all the same
    from faultsense_pipelines.sweeps.signals import SigintWatch

    swallowed: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signo, _frame: swallowed.append(signo))
    try:
        with SigintWatch() as watch:
            assert not watch.fired()
            signal.raise_signal(signal.SIGINT)
            assert swallowed == [signal.SIGINT]
            assert watch.fired()
            assert not watch.fired()  # each interrupt is reported once
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals")
def test_sigterm_stops_a_sweep_started_with_sigint_ignored(tmp_path: Path) -> None:
    """A sweep started in the background from a script inherits SIGINT ignored. Every Dagster
    run copies SIGINT's handler to SIGTERM, so after the first replica's run SIGTERM was
    ignored too: a ``kill`` after the first replica let the sweep run on and exit 0 (2 of 2
    before the fix). It must stop as Ctrl-C does: exit 130, the next replica not swept."""
    fleet, _ledger = write_fleet(tmp_path)  # sim-faulty, then sim-healthy
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster-home")}
    exe = Path(sys.executable).with_name("faultsense")
    proc = subprocess.Popen(
        [str(exe), "sweep", "--fleet", str(fleet), "--hour", HOUR],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:  # the progress lines: "  sim-faulty: ok (2.1 s)"
            seen.append(line)
            if "sim-faulty:" in line:
                break
        assert any("sim-faulty: ok" in line for line in seen), seen
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err and "no further replica was swept" in err, err
    assert "sim-healthy: ok" not in err, err


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("fails_it", ["the next sweep", "run monitoring"])
def test_a_sigkilled_sweep_leaves_no_run_started_for_good(tmp_path: Path, fails_it: str, monkeypatch) -> None:
    """SIGKILL mid-run leaves the run STARTED in Dagster's storage (nothing records its end),
    and the run queue's one-run-per-replica limit would hold that replica's scheduled and
    backfill runs behind it forever (a newcomer found 5 such runs). The next sweep of the
    replica marks it failed; where none comes (a run of the UI or a schedule whose worker was
    killed), the daemon's run monitoring does, through Dagster's own timeout check, once the
    run is older than the instance's ``max_runtime_seconds`` (3 hours)."""
    from dagster._core.instance.ref import InstanceRef

    from faultsense_pipelines.sweeps import PID_TAG, fail_orphaned_runs

    fleet, _ = write_fleet(tmp_path, LOCAL_FIRST)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    home = tmp_path / "dagster-home"
    env = {**os.environ, "TMPDIR": str(scratch), "DAGSTER_HOME": str(home)}
    exe = Path(sys.executable).with_name("faultsense")
    proc = subprocess.Popen(
        [str(exe), "sweep", "--fleet", str(fleet), "--hour", HOUR, "--replica", "local-4"],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None and not any(scratch.glob("faultsense-local-*")):
            time.sleep(0.05)
        assert proc.poll() is None, "the sweep ended before its workers started"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
        started = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
        assert [r.tags.get(PID_TAG) for r in started] == [str(proc.pid)]
        if fails_it == "run monitoring":
            from dagster._daemon.monitoring import run_monitoring

            assert instance.run_monitoring_enabled
            (record,) = instance.get_run_records(filters=dg.RunsFilter(run_ids=[started[0].run_id]))
            limit = float(instance.run_monitoring_max_runtime_seconds)
            log = logging.getLogger("run_monitoring")
            run_monitoring.check_run_timeout(instance, record, log, limit)  # young: left running
            assert instance.get_run_by_id(record.dagster_run.run_id).status == dg.DagsterRunStatus.STARTED
            later = time.time() + limit + 60
            monkeypatch.setattr(run_monitoring, "get_current_timestamp", lambda: later)
            run_monitoring.check_run_timeout(instance, record, log, limit)
            assert instance.get_run_by_id(record.dagster_run.run_id).status == dg.DagsterRunStatus.FAILURE
            assert fail_orphaned_runs(instance, "local-4") == 0
            return
        assert fail_orphaned_runs(instance, "sim-after") == 0  # another replica's run is not touched
        assert fail_orphaned_runs(instance, "local-4") == 1
        run = instance.get_run_by_id(started[0].run_id)
        assert run is not None and run.status == dg.DagsterRunStatus.FAILURE
        assert fail_orphaned_runs(instance, "local-4") == 0
