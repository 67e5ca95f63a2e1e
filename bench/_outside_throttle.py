"""Slow one worker process down from outside FaultSense, as a gray failure would.

The ``local`` executor's own fault injection (:mod:`faultsense_pipelines.probe.executors.injection`)
runs inside the worker; these throttles do not touch the product at all. They act on a
process id (``LocalExecutor.worker_pids[g]``), every thread of it:

* :class:`CgroupCpuQuota` -- a cgroup v1 ``cpu`` controller quota (``cpu.cfs_quota_us`` per
  ``cpu.cfs_period_us``): the process gets at most ``cores`` CPUs of time per period. Needs
  root and a writable ``/sys/fs/cgroup/cpu`` (cgroup v2 with the ``cpu`` controller works the
  same way through ``cpu.max``; these machines mount v2 without it).
* :class:`DutyCycle` -- a thread of this process sends ``SIGSTOP`` and ``SIGCONT`` to the
  worker in a fixed cycle (``run_ms`` running, ``stop_ms`` stopped), so a busy worker takes
  ``(run_ms + stop_ms) / run_ms`` times as long. Works wherever the caller may signal the pid.

:func:`throttle` picks the first that works here. Both restore the process on exit.
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

__all__ = ["CGROUP_V1_CPU", "CgroupCpuQuota", "DutyCycle", "cgroup_available", "throttle"]

CGROUP_V1_CPU = Path("/sys/fs/cgroup/cpu")


def cgroup_available(root: Path = CGROUP_V1_CPU) -> bool:
    """Whether a cgroup v1 ``cpu`` hierarchy is mounted at ``root`` and we may create groups."""
    if not (root / "cpu.cfs_quota_us").exists() or not os.access(root, os.W_OK):
        return False
    probe = root / f"faultsense-check-{uuid.uuid4().hex[:8]}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError:
        return False
    return True


class CgroupCpuQuota:
    """Hold process ``pid`` to ``cores`` CPUs of time (e.g. 0.3: 30% of one core).

    Args:
        pid: the process; all its threads move into a new cgroup (``cgroup.procs``).
        cores: CPU time per wall time, ``> 0``.
        period_us: the CFS period, microseconds (10 ms: short stalls, as a throttled GPU's).
        root: the cgroup v1 ``cpu`` mount.

    Raises:
        ValueError: for ``cores <= 0``.
        OSError: if the cgroup cannot be made or the process moved (not root, no controller).
    """

    def __init__(self, pid: int, cores: float, period_us: int = 10_000, root: Path = CGROUP_V1_CPU) -> None:
        if not cores > 0:
            raise ValueError(f"cores must be > 0, got {cores!r}")
        self.pid, self.cores, self.period_us, self.root = pid, cores, period_us, root
        self.group = root / f"faultsense-throttle-{pid}-{uuid.uuid4().hex[:6]}"

    def __enter__(self) -> CgroupCpuQuota:
        self.group.mkdir()
        try:
            (self.group / "cpu.cfs_period_us").write_text(str(self.period_us))
            (self.group / "cpu.cfs_quota_us").write_text(str(max(1000, int(self.cores * self.period_us))))
            (self.group / "cgroup.procs").write_text(str(self.pid))
        except OSError:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for tid in (self.group / "tasks").read_text().split() if self.group.exists() else ():
            with suppress(OSError):  # OSError: the thread has exited
                (self.root / "tasks").write_text(tid)  # back to the root group
        with suppress(OSError):
            self.group.rmdir()


class DutyCycle:
    """Stop process ``pid`` for ``stop_ms`` out of every ``run_ms + stop_ms`` (SIGSTOP/SIGCONT
    from a thread of this process). Always leaves it continued."""

    def __init__(self, pid: int, run_ms: float = 10.0, stop_ms: float = 10.0) -> None:
        if not (run_ms > 0 and stop_ms > 0):
            raise ValueError(f"run_ms and stop_ms must be > 0, got {run_ms!r}, {stop_ms!r}")
        self.pid, self.run_s, self.stop_s = pid, run_ms / 1e3, stop_ms / 1e3
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._cycle, name=f"duty-cycle-{pid}", daemon=True)

    def _cycle(self) -> None:
        try:
            while not self._done.is_set():
                os.kill(self.pid, signal.SIGSTOP)
                self._done.wait(self.stop_s)
                os.kill(self.pid, signal.SIGCONT)
                self._done.wait(self.run_s)
        except ProcessLookupError:
            pass
        finally:
            with suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGCONT)

    def __enter__(self) -> DutyCycle:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


@contextmanager
def throttle(pid: int, how: str = "auto", cores: float = 0.25, run_ms: float = 10.0, stop_ms: float = 10.0) -> Iterator[str]:
    """Throttle ``pid`` for the block; yields which throttle ran (``"cgroup"`` or ``"stop"``).

    Args:
        how: ``"cgroup"``, ``"stop"`` or ``"auto"`` (cgroup where available, else stop).
        cores: the cgroup quota, CPUs.
        run_ms, stop_ms: the duty cycle.
    """
    if how not in ("auto", "cgroup", "stop"):
        raise ValueError(f"how must be auto, cgroup or stop, got {how!r}")
    use_cgroup = how == "cgroup" or (how == "auto" and cgroup_available())
    if use_cgroup:
        with CgroupCpuQuota(pid, cores):
            yield "cgroup"
    else:
        with DutyCycle(pid, run_ms, stop_ms):
            yield "stop"
