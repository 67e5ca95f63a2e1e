"""``kill -9`` of a real ``faultsense sweep`` while its action's command runs, then the hour again.

A real ``faultsense sweep`` process sweeps a simulated replica with a slow GPU; its action runs
a real script that records its call and then sleeps. The sweep is killed with SIGKILL while the
script sleeps; the same hour is swept again by a second real process. The script's own record
says how often it ran; the ledger's ``actions`` rows say what was recorded.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faultsense_pipelines.ledger import LedgerStore
from tests.actions.ledger_setup import calls_of
from tests.pipeline_helpers import HOUR, write_fleet

pytestmark = [pytest.mark.integration, pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals")]

FLEET = """
ledger: {ledger}
replicas:
  - name: sim-k
    gpus: 16
    probe_size: 4
    executor: simulated
    gpus_per_node: 4
    simulated: {{faults: [{{gpu: 5, slowdown: 2.0}}], noise_sigma: 0.01, seed: 4}}
actions:
  - name: cordon
    on: confirmed
    command: [{script}]
    dry_run: false
    timeout_s: 60
"""


def test_a_sweep_killed_during_its_action_acts_exactly_once(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    done = tmp_path / "done.txt"
    script = tmp_path / "cordon.sh"
    script.write_text(f'#!/bin/sh\necho "$FAULTSENSE_COMPONENT $FAULTSENSE_NODE" >> "{calls}"\nsleep 3\necho end >> "{done}"\n')
    script.chmod(0o755)
    fleet, ledger = write_fleet(tmp_path, FLEET.replace("{script}", str(script)))
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster-home"), "TMPDIR": str(tmp_path), "COLUMNS": "250"}
    argv = [str(Path(sys.executable).with_name("faultsense")), "sweep", "--fleet", str(fleet), "--hour", HOUR]
    first = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while not calls.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert calls.exists(), "the action's command never started"
        first.send_signal(signal.SIGKILL)  # the command is asleep: killed mid-action
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()
    rows = LedgerStore(str(ledger)).read_actions()
    assert list(rows["decision"]) == ["started"]  # the intent, recorded before the command ran
    second = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert second.returncode == 0, second.stderr
    for _ in range(100):  # the first command runs on in its own session to its end
        if done.exists():
            break
        time.sleep(0.1)
    assert calls_of(calls) == ["gpu:5 node1"]
    rows = LedgerStore(str(ledger)).read_actions()
    assert list(zip(rows["action"], rows["component"], rows["decision"], strict=True)) == [("cordon", "gpu:5", "acted")]
    assert rows["reason"].iloc[0].startswith("outcome unknown")
    assert re.search(r"sim-k +cordon +confirmed +gpu:5 +node1 +acted +outcome unknown", second.stdout), second.stdout
    third = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert third.returncode == 0 and calls_of(calls) == ["gpu:5 node1"]
