"""Small helpers that more than one layer needs and no stage owns (standard library only).

The bottom layer of the import contract (``tests/test_import_contract.py``): every module may
import it, it imports nothing of the package.
"""

from __future__ import annotations

import os

__all__ = ["pid_alive"]


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (signal 0: nothing is sent).

    Someone else's process (``PermissionError``) counts as alive, and so does a number the
    kernel cannot even take (``OverflowError``): where it cannot tell, the caller removes or
    fails nothing on a guess. Used to find what a killed process left behind: a sweep's runs
    (:mod:`faultsense_pipelines.sweeps.orphans`) and a ``local`` pool's rendezvous folders
    (:func:`faultsense_pipelines.probe.executors.local.remove_stale_store_dirs`).

    >>> pid_alive(os.getpid())
    True
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
