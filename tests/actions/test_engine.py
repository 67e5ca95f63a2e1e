"""Guarded actions end to end on a real Delta ledger, with real commands and a real HTTP server.

Each test writes completed sweeps to a real ledger, calls :func:`apply_actions` as the
``fault_actions`` asset does, and reads back what the real script recorded and what the
ledger's ``actions`` dataset holds.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from faultsense_pipelines.actions import apply_actions
from faultsense_pipelines.ledger import TABLE_SCHEMA, LedgerStore
from faultsense_pipelines.ledger.schema import ADDED_IN_VERSION_2, ADDED_IN_VERSION_3
from faultsense_pipelines.redaction import forget_secrets
from tests.actions.ledger_setup import calls_of, commit_sweep, environ, fleet_with, recorder
from tests.hostile_server import HostileServer, send

pytestmark = [pytest.mark.integration, pytest.mark.skipif(sys.platform != "linux", reason="POSIX process groups")]

HOUR = "2026-12-01-08:00"
SECRET = "tok-7f3a9c1e5b2d"


def _decisions(store: LedgerStore) -> list[tuple[str, str, str]]:
    df = store.read_actions()
    return sorted(zip(df["action"], df["component"], df["decision"], strict=True))


def test_ten_faulty_nodes_with_a_cap_of_two(tmp_path: Path) -> None:
    """10 confirmed GPUs on 10 nodes, max_per_replica 2: the script ran twice, the ledger holds
    2 acted and 8 skipped rows (reason max_per_replica); running the hour again changes nothing."""
    store = LedgerStore(str(tmp_path / "ledger"))
    script, calls = recorder(tmp_path)
    fleet = fleet_with(
        tmp_path / "ledger",
        [{"name": "cordon", "on": "confirmed", "command": [str(script)], "dry_run": False, "max_per_replica": 2}],
    )
    commit_sweep(store, "r", HOUR, list(range(0, 20, 2)))
    rows = apply_actions(store, fleet, "r", HOUR, "run-1")
    assert len(calls_of(calls)) == 2
    assert sorted(r.decision for r in rows) == ["acted"] * 2 + ["skipped"] * 8
    df = store.read_actions()
    assert (df["decision"] == "acted").sum() == 2 and (df["decision"] == "skipped").sum() == 8
    assert all(r.startswith("max_per_replica") for r in df[df["decision"] == "skipped"]["reason"])
    apply_actions(store, fleet, "r", HOUR, "run-2")  # a re-run of the hour
    assert len(calls_of(calls)) == 2
    assert len(store.read_actions()) == 10


def test_dry_run_by_default_runs_nothing_and_records_every_decision(tmp_path: Path) -> None:
    """No dry_run key: nothing runs (the script never writes its file), and each of the 3
    confirmed GPUs has a dry_run row; the payload fields are in the rows."""
    store = LedgerStore(str(tmp_path / "ledger"))
    script, calls = recorder(tmp_path)
    fleet = fleet_with(tmp_path / "ledger", [{"name": "cordon", "on": "confirmed", "command": [str(script)]}], gpus_per_node=4)
    commit_sweep(store, "r", HOUR, [1, 5, 9])
    apply_actions(store, fleet, "r", HOUR, "run-1")
    assert calls_of(calls) == []
    df = store.read_actions()
    assert sorted(df["decision"]) == ["dry_run"] * 3
    assert sorted(zip(df["component"], df["node"], strict=True)) == [("gpu:1", "node0"), ("gpu:5", "node1"), ("gpu:9", "node2")]
    assert set(df["hour"]) == {HOUR} and set(df["dry_run"]) == {True} and set(df["trigger"]) == {"confirmed"}


def test_a_hanging_command_times_out_and_the_sweep_goes_on(tmp_path: Path) -> None:
    """A command that starts a child and hangs: at timeout_s its process group is killed (the
    child's pid is gone afterwards), the row is timed_out, and the next action still runs."""
    store = LedgerStore(str(tmp_path / "ledger"))
    pidfile = tmp_path / "child.pid"
    hang = tmp_path / "hang.sh"
    hang.write_text(f'#!/bin/sh\nsleep 300 &\necho $! > "{pidfile}"\necho "hanging now" >&2\nwait\n')
    hang.chmod(0o755)
    script, calls = recorder(tmp_path)
    actions = [
        {"name": "hang", "on": "confirmed", "command": [str(hang)], "dry_run": False, "timeout_s": 1},
        {"name": "after", "on": "confirmed", "command": [str(script)], "dry_run": False},
    ]
    commit_sweep(store, "r", HOUR, [3])
    apply_actions(store, fleet_with(tmp_path / "ledger", actions), "r", HOUR, "run-1")
    assert _decisions(store) == [("after", "gpu:3", "acted"), ("hang", "gpu:3", "timed_out")]
    df = store.read_actions().set_index("action")
    assert df.loc["hang", "stderr"] == "hanging now" and "timed out after 1 s" in df.loc["hang", "reason"]
    child = int(pidfile.read_text())
    for _ in range(50):  # the kill is SIGKILL to the group; its reaping by init may lag a moment
        if not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the hanging command's child {child} outlived its timeout")
    assert len(calls_of(calls)) == 1


def test_a_failing_command_gets_its_exit_code_and_cut_stderr_without_secrets(tmp_path: Path) -> None:
    """The command sees PATH, the FAULTSENSE_* variables and the one variable it was given;
    not the sweep's other secrets. It prints its given token to stderr and exits 3: the row is
    failed, exit_code 3, the stderr tail cut to 300 characters with the token scrubbed."""
    store = LedgerStore(str(tmp_path / "ledger"))
    dump = tmp_path / "env.txt"
    fail = tmp_path / "fail.sh"
    fail.write_text(f'#!/bin/sh\nenv > "{dump}"\nprintf "%0500d token=$OPS_TOKEN\\n" 0 >&2\nexit 3\n')
    fail.chmod(0o755)
    actions = [{"name": "drain", "on": "confirmed", "command": [str(fail)], "dry_run": False, "env": ["OPS_TOKEN"]}]
    commit_sweep(store, "r", HOUR, [3])
    env = environ(OPS_TOKEN=SECRET, AWS_SECRET_ACCESS_KEY="aws-should-never-leak-123")
    apply_actions(store, fleet_with(tmp_path / "ledger", actions), "r", HOUR, "run-1", environ=env)
    row = store.read_actions().iloc[0]
    assert (row["decision"], row["exit_code"]) == ("failed", 3)
    assert row["reason"].endswith("exit code 3")
    assert len(row["stderr"]) <= 300 and row["stderr"].endswith("token=***")
    seen = dict(line.split("=", 1) for line in dump.read_text().splitlines() if "=" in line)
    assert "AWS_SECRET_ACCESS_KEY" not in seen and seen["OPS_TOKEN"] == SECRET
    assert seen["FAULTSENSE_COMPONENT"] == "gpu:3" and seen["FAULTSENSE_HOUR"] == HOUR and seen["FAULTSENSE_NODE"] == "node3"
    assert set(seen) <= {"PATH", "OPS_TOKEN", "PWD", "SHLVL", "_"} | {k for k in seen if k.startswith("FAULTSENSE_")}
    assert SECRET not in store.read_actions().to_csv()


def test_a_command_that_is_not_executable_is_one_failed_row(tmp_path: Path) -> None:
    """A command file without the execute bit: one failed row naming it, nothing else lost
    (the sweep's fault rows are still there)."""
    store = LedgerStore(str(tmp_path / "ledger"))
    plain = tmp_path / "plain.sh"
    plain.write_text("#!/bin/sh\nexit 0\n")
    plain.chmod(0o644)
    commit_sweep(store, "r", HOUR, [3])
    actions = [{"name": "cordon", "on": "confirmed", "command": [str(plain)], "dry_run": False}]
    apply_actions(store, fleet_with(tmp_path / "ledger", actions), "r", HOUR, "run-1")
    row = store.read_actions().iloc[0]
    assert row["decision"] == "failed" and row["reason"] == f"{plain}: cannot start {plain}: Permission denied"
    assert list(store.read_faults()["component"]) == ["gpu:3"]


def _webhook(url: str, **kw: object) -> list[dict]:
    return [
        {
            "name": "page",
            "on": "confirmed",
            "webhook": {"url": url, "headers_env": {"Authorization": "OPS_TOKEN"}},
            "dry_run": False,
            **kw,
        }
    ]


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPS_TOKEN", f"Bearer {SECRET}")
    yield SECRET
    forget_secrets()


def test_a_webhook_that_answers_500_and_echoes_the_token(tmp_path: Path, token: str) -> None:
    """The server receives the verdict JSON with the header ``Bearer <token>``; it answers 500
    and echoes the token alone: one failed row 'HTTP 500', and the token in no row."""
    store = LedgerStore(str(tmp_path / "ledger"))
    commit_sweep(store, "r", HOUR, [3])
    with HostileServer(lambda req, conn: send(conn, 500, f"bad token {req.auth.split()[-1]}")) as server:
        apply_actions(store, fleet_with(tmp_path / "ledger", _webhook(server.url + "/hook?x=1")), "r", HOUR, "run-1")
        (request,) = server.requests
        host = server.url
    assert request.auth == f"Bearer {SECRET}" and json.loads(request.body)["component"] == "gpu:3"
    row = store.read_actions().iloc[0]
    assert row["decision"] == "failed" and row["reason"].endswith(f"HTTP 500 from {host}")
    assert row["stderr"] == "bad token ***"
    assert token not in store.read_actions().to_csv() and "/hook" not in row["reason"]


def test_a_webhook_that_trickles_is_abandoned_at_its_deadline(tmp_path: Path, token: str) -> None:
    """A server that sends its answer one byte every 0.3 s (never a read timeout): the request
    is abandoned at timeout_s 1, the row is timed_out."""

    def trickle(req, conn) -> None:
        for b in b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100:
            conn.sendall(bytes([b]))
            time.sleep(0.3)

    store = LedgerStore(str(tmp_path / "ledger"))
    commit_sweep(store, "r", HOUR, [3])
    with HostileServer(trickle) as server:
        apply_actions(store, fleet_with(tmp_path / "ledger", _webhook(server.url, timeout_s=1)), "r", HOUR, "run-1")
    row = store.read_actions().iloc[0]
    assert row["decision"] == "timed_out" and "within 1 s" in row["reason"]


def test_a_version_2_ledger_reads_and_takes_action_rows(tmp_path: Path) -> None:
    """A table written by schema version 2 (no action columns) with a sweep in it: the actions
    are recorded (the table gains the columns), and its fault rows still read."""
    uri = tmp_path / "ledger"
    v2 = pa.schema([f for f in TABLE_SCHEMA if f.name not in ADDED_IN_VERSION_3])
    assert "confidence" in v2.names and not set(ADDED_IN_VERSION_2) - set(v2.names)
    DeltaTable.create(str(uri / "delta"), schema=v2, partition_by=["dataset", "date"])
    store = LedgerStore(str(uri))
    assert store.read_actions().empty  # before any action row: the columns, no rows
    commit_sweep(store, "r", HOUR, [3])
    apply_actions(store, fleet_with(uri, [{"name": "cordon", "on": "confirmed", "command": ["/bin/true"]}]), "r", HOUR, "run-1")
    assert _decisions(store) == [("cordon", "gpu:3", "dry_run")]
    assert list(store.read_faults()["component"]) == ["gpu:3"]
    assert {"action", "decision"} <= set(DeltaTable(str(uri / "delta")).schema().to_arrow().names)


def test_resolved_runs_after_k_healthy_sweeps_once(tmp_path: Path) -> None:
    """Confirmed at 06:00, healthy at 07:00 and 08:00, resolve_after 2: the un-drain runs at
    08:00 exactly; at 09:00 (healthy again) it does not run again."""
    store = LedgerStore(str(tmp_path / "ledger"))
    script, calls = recorder(tmp_path)
    fleet = fleet_with(
        tmp_path / "ledger",
        [{"name": "undrain", "on": "resolved", "command": [str(script)], "dry_run": False, "resolve_after": 2}],
    )
    ran = {}
    for hour, gpus in (("2026-12-01-06:00", [3]), ("2026-12-01-07:00", []), ("2026-12-01-08:00", []), ("2026-12-01-09:00", [])):
        commit_sweep(store, "r", hour, gpus)
        apply_actions(store, fleet, "r", hour, f"run-{hour}")
        ran[hour] = len(calls_of(calls))
    assert ran == {"2026-12-01-06:00": 0, "2026-12-01-07:00": 0, "2026-12-01-08:00": 1, "2026-12-01-09:00": 1}
    assert calls_of(calls)[0].startswith("gpu:3 node3 ")
    assert _decisions(store) == [("undrain", "gpu:3", "acted")]


_APPLY = """
import sys
from faultsense_pipelines.actions import apply_actions
from faultsense_pipelines.fleet import load_fleet
from faultsense_pipelines.ledger import LedgerStore
fleet = load_fleet(sys.argv[1])
apply_actions(LedgerStore(fleet.ledger), fleet, sys.argv[2], sys.argv[3], "run-" + sys.argv[2])
"""


def test_two_replicas_at_once_never_both_take_the_last_fleet_slot(tmp_path: Path) -> None:
    """Replicas a and b, each with a confirmed GPU, decide in two processes started together;
    max_per_fleet 1 and a command that takes 1 s: exactly one acts, the other is skipped by
    max_per_fleet (the fleet-wide lock serializes their decisions)."""
    import subprocess

    store = LedgerStore(str(tmp_path / "ledger"))
    script, calls = recorder(tmp_path, "sleep 1")
    for name in ("a", "b"):
        commit_sweep(store, name, HOUR, [2])
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        f"ledger: {tmp_path / 'ledger'}\nreplicas:\n"
        "  - {name: a, gpus: 8, probe_size: 4, executor: simulated}\n"
        "  - {name: b, gpus: 8, probe_size: 4, executor: simulated}\n"
        f"actions:\n  - {{name: cordon, on: confirmed, command: [{script}], dry_run: false, max_per_fleet: 1}}\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", _APPLY, str(fleet), name, HOUR]) for name in ("a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert len(calls_of(calls)) == 1
    df = store.read_actions()
    assert sorted(df["decision"]) == ["acted", "skipped"]
    assert df[df["decision"] == "skipped"]["reason"].iloc[0].startswith("max_per_fleet: 1 already acted on")


def test_a_webhook_whose_header_variable_is_unset_sends_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OPS_TOKEN unset: one failed row naming the header, not the variable (a token pasted as
    the variable's name would be echoed); no request made."""
    monkeypatch.delenv("OPS_TOKEN", raising=False)
    store = LedgerStore(str(tmp_path / "ledger"))
    commit_sweep(store, "r", HOUR, [3])
    with HostileServer(lambda req, conn: send(conn, 200, "{}")) as server:
        apply_actions(store, fleet_with(tmp_path / "ledger", _webhook(server.url)), "r", HOUR, "run-1")
        assert server.requests == []
    row = store.read_actions().iloc[0]
    assert row["decision"] == "failed"
    assert row["reason"].endswith(
        "webhook header Authorization: the environment variable headers_env names is not set or empty; nothing sent"
    )
    assert "OPS_TOKEN" not in row["reason"]
