"""``faultsense sweep`` takes one lock per (ledger, replica): a second sweep of a replica waits
for it behind the free replicas, up to ``lock_wait_s``, and is then refused for that replica."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import dagster as dg
import pytest

from faultsense_pipelines.ledger import LedgerStore
from faultsense_pipelines.ledger.lock import ReplicaLocked, lock_path, replica_lock
from faultsense_pipelines.sweeps import run_sweep
from tests.pipeline_helpers import HOUR, write_fleet

pytestmark = pytest.mark.integration  # a second process holds the lock; real Dagster sweeps

FLEET = """
ledger: {ledger}
replicas:
  - {{name: sim-a, gpus: 8, probe_size: 4, executor: simulated}}
  - {{name: sim-b, gpus: 8, probe_size: 4, executor: simulated}}
"""


def _hold(ledger: Path, replica: str) -> subprocess.Popen[str]:
    """Another process holding ``replica``'s sweep lock until its stdin closes."""
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from faultsense_pipelines.ledger.lock import replica_lock
            with replica_lock({str(ledger)!r}, {replica!r}):
                print("held", flush=True)
                sys.stdin.read()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def _sweep_while_held(tmp_path: Path, lock_wait_s: float) -> tuple[dict, Path, subprocess.Popen[str]]:
    """Sweep FLEET while another process holds sim-a's lock throughout: outcomes by replica,
    the ledger, the (exited) holder."""
    fleet, ledger = write_fleet(tmp_path, FLEET)
    holder = _hold(ledger, "sim-a")
    try:
        with dg.DagsterInstance.ephemeral() as instance:
            outcomes, _ = run_sweep(fleet, hour=HOUR, lock_wait_s=lock_wait_s, instance=instance)
    finally:
        holder.communicate("", timeout=30)
    return {o.replica: o for o in outcomes}, ledger, holder


def test_a_replica_locked_by_another_sweep_is_refused_with_one_line_and_the_others_are_swept(tmp_path: Path) -> None:
    by_name, ledger, holder = _sweep_while_held(tmp_path, 0)
    assert not by_name["sim-a"].success
    assert by_name["sim-a"].error == (
        f"another sweep of sim-a is running on this ledger (pid {holder.pid}, lock {lock_path(str(ledger), 'sim-a')}); not swept"
    )
    assert by_name["sim-b"].success
    assert set(LedgerStore(str(ledger)).read_probe_runs()["replica"]) == {"sim-b"}
    with replica_lock(str(ledger), "sim-a"):  # released when its holder exited
        pass


def test_a_held_replica_is_swept_after_the_free_ones_once_its_holder_lets_go(tmp_path: Path) -> None:
    fleet, ledger = write_fleet(tmp_path, FLEET)
    holder = _hold(ledger, "sim-a")
    started: list[str] = []

    def on_done(outcome) -> None:
        if outcome.replica == "sim-b":  # the other sweep ends once the free replica is swept
            holder.communicate("", timeout=30)

    try:
        with dg.DagsterInstance.ephemeral() as instance:
            outcomes, _ = run_sweep(
                fleet, hour=HOUR, lock_wait_s=3600, instance=instance, on_start=started.append, on_done=on_done
            )
    finally:
        if holder.poll() is None:
            holder.communicate("", timeout=30)
    assert started == ["sim-b", "sim-a"]  # sim-b went first, sim-a waited behind it
    assert [o.replica for o in outcomes] == ["sim-a", "sim-b"]  # reported in the fleet's order
    assert all(o.success for o in outcomes), [o.error for o in outcomes]
    assert set(LedgerStore(str(ledger)).read_probe_runs()["replica"]) == {"sim-a", "sim-b"}


def test_a_replica_held_past_the_wait_gets_an_error_row_saying_how_long_it_waited(tmp_path: Path) -> None:
    by_name, _, holder = _sweep_while_held(tmp_path, 1.0)
    assert by_name["sim-b"].success and not by_name["sim-a"].success
    assert by_name["sim-a"].error.startswith(f"another sweep of sim-a is running on this ledger (pid {holder.pid}, ")
    assert re.search(r"; not swept \(waited \d+\.\d s\)$", by_name["sim-a"].error), by_name["sim-a"].error
    assert by_name["sim-a"].seconds >= 1.0


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), True, "10"])
def test_a_lock_wait_outside_its_range_is_refused_before_any_run(tmp_path: Path, bad: object) -> None:
    fleet, ledger = write_fleet(tmp_path, FLEET)
    with pytest.raises(ValueError, match=r"^lock_wait_s must be a number of seconds in 0\.\.86400, got "):
        run_sweep(fleet, hour=HOUR, lock_wait_s=bad)  # type: ignore[arg-type]
    assert not ledger.exists()


def test_the_lock_is_exclusive_within_one_process_too(tmp_path: Path) -> None:
    with (
        replica_lock(str(tmp_path), "sim-a"),
        pytest.raises(ReplicaLocked, match="another sweep of sim-a"),
        replica_lock(str(tmp_path), "sim-a"),
    ):
        pass
    with replica_lock(str(tmp_path), "sim-a"), replica_lock(str(tmp_path), "sim-b"):
        pass


def test_two_overlapping_full_fleet_sweeps_both_sweep_every_replica(tmp_path: Path) -> None:
    """Two ``faultsense sweep`` processes of one fleet started together (an hourly sweep still
    running when the next one starts): neither is refused a replica; each sweeps all of them."""
    import os

    fleet, ledger = write_fleet(tmp_path, FLEET)
    home = tmp_path / "dagster"
    env = {**os.environ, "DAGSTER_HOME": str(home), "COLUMNS": "200"}
    env.pop("FAULTSENSE_LEDGER", None)
    exe = str(Path(sys.executable).with_name("faultsense"))
    cmd = [exe, "sweep", "--fleet", str(fleet), "--hour", HOUR]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, out + err
        assert "not swept" not in out + err  # a wait may be announced, never a refusal
        assert [line.split()[0] for line in out.splitlines() if line.strip().startswith("sim-")] == ["sim-a", "sim-b"]
    runs = LedgerStore(str(ledger)).read_probe_runs()
    assert sorted(set(runs["replica"])) == ["sim-a", "sim-b"]
    assert runs.groupby("replica")["sweep_id"].nunique().tolist() == [1, 1]  # the later sweep replaced the earlier
    with dg.DagsterInstance.from_config(str(home)) as instance:
        finished = [r for r in instance.get_runs() if r.tags.get("dagster/partition", "").endswith(("sim-a", "sim-b"))]
    assert len(finished) == 4 and all(r.is_success for r in finished), [(r.tags, r.status) for r in finished]
