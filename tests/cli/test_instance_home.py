"""The persistent Dagster instance: where it lives, what its dagster.yaml says, CLI sweeps in
its run history, and ``faultsense ui`` stopping on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml
from typer.testing import CliRunner

from faultsense_pipelines.cli import app
from faultsense_pipelines.sweeps.home import MAX_CONCURRENT_RUNS, MAX_RUNTIME_S, ensure_home, open_instance
from tests.pipeline_helpers import HOUR, write_fleet

_RUNS_OF_NEW_PROCESS = """
import json, dagster as dg
with dg.DagsterInstance.get() as instance:
    runs = instance.get_runs()
    print(json.dumps([[r.job_name, r.tags.get("dagster/partition/replica"), r.tags.get("dagster/partition"), r.status.value]
                      for r in runs]))
"""


def test_without_dagster_home_the_instance_lives_in_dot_faultsense_with_the_run_queue_and_no_dialog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DAGSTER_HOME")
    monkeypatch.chdir(tmp_path)
    home = ensure_home()
    assert home == tmp_path / ".faultsense" / "dagster"
    config = yaml.safe_load((home / "dagster.yaml").read_text())
    assert config["nux"] == {"enabled": False}
    assert config["concurrency"]["runs"]["tag_concurrency_limits"] == [
        {"key": "dagster/partition/replica", "value": {"applyLimitPerUniqueValue": True}, "limit": 1}
    ]
    with open_instance() as instance:  # Dagster itself accepts the file
        assert instance.get_settings("nux") == {"enabled": False}
        queue = instance.get_concurrency_config().run_queue_config
        assert queue.max_concurrent_runs == MAX_CONCURRENT_RUNS
        assert queue.tag_concurrency_limits[0]["key"] == "dagster/partition/replica"
        assert instance.run_monitoring_enabled  # orphaned runs of killed workers are failed
        assert instance.run_monitoring_max_runtime_seconds == MAX_RUNTIME_S == 3 * 3600
        assert instance.run_monitoring_start_timeout_seconds == 180
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")  # the user's own edits are kept
    ensure_home()
    assert (home / "dagster.yaml").read_text() == "telemetry:\n  enabled: false\n"


@pytest.mark.integration  # a Dagster sweep in-process, then a second Python process
def test_a_cli_sweep_is_in_the_run_history_that_a_new_process_reads(tmp_path: Path, dagster_home: Path) -> None:
    fleet, _ = write_fleet(tmp_path)
    result = CliRunner().invoke(app, ["sweep", "--fleet", str(fleet), "--replica", "sim-healthy", "--hour", HOUR])
    assert result.exit_code == 0, result.output
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home)}
    out = subprocess.run([sys.executable, "-c", _RUNS_OF_NEW_PROCESS], env=env, capture_output=True, text=True, check=True)
    runs = json.loads(out.stdout.strip().splitlines()[-1])
    assert ["faultsense_sweep", "sim-healthy", f"{HOUR}|sim-healthy", "SUCCESS"] in runs
    assert ["faultsense_analytics", None, HOUR[:10], "SUCCESS"] in runs
    assert ["faultsense_fleet_view", None, None, "SUCCESS"] in runs  # the fleet view, redrawn after the sweep
    assert len(runs) == 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ignore_stop_signals() -> None:  # what `cmd &` in a non-interactive shell does to a child
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


@pytest.mark.slow  # starts `dagster dev` (webserver, daemon, code server): a minute on a busy machine
def test_faultsense_ui_started_in_the_background_stops_with_its_children_on_sigterm(tmp_path: Path, dagster_home: Path) -> None:
    port = _free_port()
    exe = Path(sys.executable).with_name("faultsense")
    fleet, _ = write_fleet(tmp_path)
    log = (tmp_path / "ui.log").open("w")  # output redirected to a file, as `faultsense ui > ui.log 2>&1 &`
    proc = subprocess.Popen(
        [str(exe), "ui", "--port", str(port), "--fleet", str(fleet)],
        cwd=Path(__file__).resolve().parents[2],  # the repository root, where a newcomer starts it
        env={**os.environ, "DAGSTER_HOME": str(dagster_home)},
        preexec_fn=_ignore_stop_signals,
        start_new_session=True,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline, up = time.monotonic() + 240, False
        while time.monotonic() < deadline and proc.poll() is None and not up:
            try:
                up = httpx.get(f"http://127.0.0.1:{port}/server_info", timeout=2).status_code == 200
            except httpx.HTTPError:
                time.sleep(1)
        assert up, f"the UI never answered: {proc.poll()=}"
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=90)
        assert code in (0, -signal.SIGTERM), code
        # nothing of the session is left: webserver, daemon and code server stopped with it
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.5)
        else:
            pytest.fail("processes of `faultsense ui` are still running after SIGTERM")
        # the redirected log: Dagster's services logged, with no colour codes, no warning that
        # `dagster dev` is superseded and none about a dagster.yaml in the current folder
        text = (tmp_path / "ui.log").read_text()
        assert "Serving dagster-webserver" in text, text[-2000:]
        assert "\x1b[" not in text and "SupersessionWarning" not in text, text[:2000]
        assert "instance configuration value" not in text and "in the current folder" not in text, text[:2000]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        log.close()


_OPEN_AT_ONCE = """
import sys, time
from pathlib import Path
from faultsense_pipelines.sweeps.home import open_instance
start = float(sys.argv[2])
time.sleep(max(0.0, start - time.time()))  # all children open at the same wall-clock instant
with open_instance(Path(sys.argv[1])) as instance:
    print(instance.get_runs_count())
"""


def test_processes_opening_a_fresh_home_at_once_all_succeed(tmp_path: Path) -> None:
    """Dagster's SQLite storages create their tables without a guard; without the open lock,
    four processes opening one fresh folder at once fail with "table runs already exists" or
    an alembic_version UNIQUE error (3 of 3 trials of 6 processes before the lock)."""
    home = tmp_path / "fresh"
    start = time.time() + 8.0  # past the children's import of dagster on a loaded 2-core machine
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN_AT_ONCE, str(home), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for _ in range(4)
    ]
    outs = [proc.communicate(timeout=240)[0].decode() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0, 0], "\n".join(o[-800:] for o in outs)
    assert [o.strip().splitlines()[-1] for o in outs] == ["0"] * 4


def test_the_repository_root_holds_no_dagster_instance_file() -> None:
    """``dagster dev`` (dagster/_cli/dev.py) warns on every start when the current folder holds
    a dagster.yaml or dagster.yml and ``$DAGSTER_HOME`` is another folder, which is every
    ``faultsense ui`` started from the root while the root held a copy of INSTANCE_YAML."""
    root = Path(__file__).resolve().parents[2]
    assert [name for name in ("dagster.yaml", "dagster.yml") if (root / name).exists()] == []
