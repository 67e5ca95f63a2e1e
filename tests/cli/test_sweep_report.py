"""What ``faultsense sweep`` tells its user: a wait for another sweep's lock, and the verdicts
the drill-down left unsettled. Real ``faultsense sweep`` processes, a real lock held by this
process, the real Delta ledger read back as the independent source."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from faultsense_pipelines.ledger import LedgerStore
from faultsense_pipelines.ledger.lock import replica_lock
from tests.pipeline_helpers import HOUR, write_fleet

pytestmark = pytest.mark.integration  # sweeps in subprocesses

#: A healthy and a faulty replica, noisy enough (sigma 0.15) that the default drill-down
#: leaves verdicts inconclusive (the test checks that it did).
NOISY = """
ledger: {ledger}
replicas:
  - name: sim-calm
    gpus: 16
    probe_size: 4
    executor: simulated
    simulated: {{noise_sigma: 0.01, seed: 5}}
  - name: sim-noisy
    gpus: 16
    probe_size: 4
    executor: simulated
    simulated: {{faults: [{{gpu: 5, slowdown: 1.3}}], noise_sigma: 0.15, seed: 1}}
"""


def _sweep_argv(fleet: Path, *extra: str) -> list[str]:
    return [str(Path(sys.executable).with_name("faultsense")), "sweep", "--fleet", str(fleet), "--hour", HOUR, *extra]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster-home"), "COLUMNS": "250"}


def test_the_sweep_table_counts_the_inconclusive_rows_beside_the_result(tmp_path: Path) -> None:
    """The table said ``healthy`` while the ledger held inconclusive rows of that replica. The
    result cell must carry ``(N unsettled)`` with N = the replica's inconclusive rows in the
    ledger, and nothing where there are none."""
    fleet, ledger = write_fleet(tmp_path, NOISY)
    done = subprocess.run(_sweep_argv(fleet), env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    faults = LedgerStore(str(ledger)).read_faults(since=HOUR[:10])
    for replica in ("sim-calm", "sim-noisy"):
        n = int(((faults["replica"] == replica) & (faults["status"] == "inconclusive")).sum())
        (row,) = [line for line in done.stdout.splitlines() if line.split()[:1] == [replica]]
        cell = re.search(r"(healthy|faulty|degraded|inconclusive)( \((\d+) unsettled\))?", row)
        assert cell is not None, row
        assert int(cell.group(3) or 0) == n, (row, n)
        # the word is the ledger's own status of that sweep
        sweeps = LedgerStore(str(ledger)).read_table("sweeps", since=HOUR[:10]).to_pandas()
        (status,) = sweeps[sweeps["replica"] == replica]["status"]
        assert cell.group(1) == status, (row, status)
        if replica == "sim-noisy":
            assert n > 0  # the case the test is about did occur
        else:
            assert n == 0 and cell.group(2) is None, row


@pytest.mark.skipif(sys.platform != "linux", reason="flock")
def test_a_sweep_waiting_for_a_lock_says_so_once_and_for_how_long(tmp_path: Path) -> None:
    """A sweep whose replica another sweep holds said nothing; its row only showed an
    inflated time. It must print one line naming the holder's pid and the wait allowed when it
    starts waiting, and its done line how long it waited. The lock is held by this process
    and released only after that line was read (event order, no clock)."""
    fleet, ledger = write_fleet(tmp_path, NOISY)
    with replica_lock(str(ledger), "sim-calm"):
        proc = subprocess.Popen(
            _sweep_argv(fleet, "--replica", "sim-calm", "--lock-wait", "120"),
            env=_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if "waiting up to" in line:
                break
        else:
            pytest.fail(f"no waiting line: {seen}")
    try:
        _out, rest = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, rest
    err = "".join(seen) + rest
    waits = [line.strip() for line in err.splitlines() if "waiting up to" in line]
    assert waits == [f"sim-calm: another sweep (pid {os.getpid()}) holds its lock on this ledger; waiting up to 120 s"]
    done = re.search(r"sim-calm: ok \([0-9.]+ s, after ([0-9.]+) s waiting for its lock\)", err)
    assert done is not None, err
    assert float(done.group(1)) > 0


@pytest.mark.skipif(sys.platform != "linux", reason="flock")
def test_a_sweep_that_may_not_wait_says_it_does_not_wait(tmp_path: Path) -> None:
    # --lock-wait 0: the held lock fails the sweep at once; its line must not promise a wait
    fleet, ledger = write_fleet(tmp_path, NOISY)
    with replica_lock(str(ledger), "sim-calm"):
        done = subprocess.run(
            _sweep_argv(fleet, "--replica", "sim-calm", "--lock-wait", "0"),
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=600,
        )
    held = [line.strip() for line in done.stderr.splitlines() if "holds its lock" in line]
    assert held == [f"sim-calm: another sweep (pid {os.getpid()}) holds its lock on this ledger; not waiting (--lock-wait 0)"]
    assert done.returncode != 0


def test_the_sweep_table_names_the_node_of_each_confirmed_component(tmp_path: Path) -> None:
    from tests.assets.test_fleet_view import TOPOLOGY_FLEET

    fleet, ledger = write_fleet(tmp_path, TOPOLOGY_FLEET)
    done = subprocess.run(
        _sweep_argv(fleet, "--replica", "sim-faulty"), env=_env(tmp_path), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    (row,) = [line for line in done.stdout.splitlines() if line.split()[:1] == ["sim-faulty"]]
    # by hand: gpu 5 on node 5 // 4 = 1 (h1); link 1-9 from node 0 (h0) to node 2 (h2)
    assert "gpu:5 (h1)" in row and "link:1-9 (h0,h2)" in row, row
    faults = LedgerStore(str(ledger)).read_faults(since=HOUR[:10])
    assert dict(zip(faults["component"], faults["node"], strict=True)) == {"gpu:5": "h1", "link:1-9": "h0,h2"}
