"""``faultsense sweep`` takes one lock per (ledger, replica): a second sweep of a replica is refused."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import dagster as dg
import pytest

from faultsense_pipelines.cli.sweep_cmd import run_sweep
from faultsense_pipelines.ledger import LedgerStore
from faultsense_pipelines.ledger.lock import ReplicaLocked, lock_path, replica_lock
from tests.pipeline_helpers import HOUR, write_fleet

pytestmark = pytest.mark.integration  # a second process holds the lock; real Dagster sweeps

FLEET = """
ledger: {ledger}
replicas:
  - {{name: sim-a, gpus: 8, probe_size: 4, executor: simulated}}
  - {{name: sim-b, gpus: 8, probe_size: 4, executor: simulated}}
"""


def test_a_replica_locked_by_another_sweep_is_refused_with_one_line_and_the_others_are_swept(tmp_path: Path) -> None:
    fleet, ledger = write_fleet(tmp_path, FLEET)
    holder = subprocess.Popen(  # another process holds sim-a's lock
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from faultsense_pipelines.ledger.lock import replica_lock
            with replica_lock({str(ledger)!r}, "sim-a"):
                print("held", flush=True)
                sys.stdin.read()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        with dg.DagsterInstance.ephemeral() as instance:
            outcomes, _ = run_sweep(fleet, hour=HOUR, instance=instance)
    finally:
        holder.communicate("", timeout=30)
    by_name = {o.replica: o for o in outcomes}
    assert not by_name["sim-a"].success
    assert by_name["sim-a"].error == (
        f"another sweep of sim-a is running on this ledger (pid {holder.pid}, lock {lock_path(str(ledger), 'sim-a')}); not swept"
    )
    assert by_name["sim-b"].success
    assert set(LedgerStore(str(ledger)).read_probe_runs()["replica"]) == {"sim-b"}
    with replica_lock(str(ledger), "sim-a"):  # released when its holder exited
        pass


def test_the_lock_is_exclusive_within_one_process_too(tmp_path: Path) -> None:
    with (
        replica_lock(str(tmp_path), "sim-a"),
        pytest.raises(ReplicaLocked, match="another sweep of sim-a"),
        replica_lock(str(tmp_path), "sim-a"),
    ):
        pass
    with replica_lock(str(tmp_path), "sim-a"), replica_lock(str(tmp_path), "sim-b"):
        pass
