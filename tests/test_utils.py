"""The package's private helpers (:mod:`faultsense_pipelines._utils`)."""

from __future__ import annotations

import subprocess
import sys

from faultsense_pipelines._utils import pid_alive


def test_a_process_is_alive_until_it_is_reaped_and_an_impossible_pid_is_left_alone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert pid_alive(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not pid_alive(child.pid)  # reaped: no such process (pids are not reused this fast)
    assert pid_alive(2**80)  # no kernel takes it: cannot tell, so counted alive (nothing removed)
