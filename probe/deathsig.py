"""Worker processes that die with their driver, from their first instructions on.

A spawned worker (``multiprocessing`` ``spawn``) spends its first seconds importing torch
and the probe model, eight at a time on two cores up to 15 s, before any code of ours could
watch its driver: a driver killed with ``SIGKILL`` then left its workers (and, through the
descriptor they hold, multiprocessing's resource tracker) running on for 7-17 s. A worker
started through :func:`run_guarded` asks the kernel (Linux ``prctl(PR_SET_PDEATHSIG)``) for
``SIGKILL`` when its parent dies, before the heavy imports: this module imports only the
standard library, so what runs before the request is the interpreter's start-up and
multiprocessing's own bootstrap. A driver already gone by then is caught by the parent check
right after it.

The kernel sends the signal when the *thread* that started the worker ends, so the driver
asks for it only from its main thread (whose end is the process's end); a worker started from
another thread relies on the worker's own poll (``probe.executors.local.ORPHAN_CHECK_S``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import pickle
import signal
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["pack", "parent_death_signal", "run_guarded"]

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent (thread) dies.

    Returns:
        True when the request took effect (Linux), False where there is no ``prctl`` (other
        systems, a libc without it); never raises.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def pack(target: Callable[..., Any], *args: Any) -> bytes:
    """``target`` and ``args`` pickled for :func:`run_guarded`: the worker unpickles them (and so
    imports their modules, torch among them) only after its death signal is set. Objects that
    must travel through multiprocessing's own pickler (a ``Connection``) are passed beside,
    as ``run_guarded``'s ``extra``."""
    return pickle.dumps((target, args))


def run_guarded(driver_pid: int, deathsig: bool, payload: bytes, *extra: Any) -> None:
    """Body of a worker process: die with the driver, then run the packed target.

    Args:
        driver_pid: the process that started this one; when this process's parent is another
            one already, the driver is gone and the worker exits at once (status 0).
        deathsig: request ``SIGKILL`` on the parent's death (:func:`parent_death_signal`);
            the driver passes True only from its main thread.
        payload: :func:`pack` of the target and its leading arguments.
        extra: arguments appended after the packed ones (e.g. a pipe ``Connection``).
    """
    if deathsig:
        parent_death_signal(signal.SIGKILL)
    if os.getppid() != driver_pid:
        os._exit(0)
    target, args = pickle.loads(payload)  # the heavy imports happen here
    target(*args, *extra)
