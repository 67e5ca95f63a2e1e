"""One lock per (ledger, replica): two ``faultsense sweep`` processes never sweep one replica at once.

The lock is an advisory ``flock`` on a small file: ``<ledger>/.locks/<replica>.lock`` for a
local ledger, ``$XDG_CACHE_HOME/faultsense/locks/<hash of the URI>-<replica>.lock`` (this
machine only) for an object-store ledger. The kernel drops it when its process dies, however
it dies, so a killed sweep never leaves a stale lock. The file holds the holder's pid, for
the message a refused second sweep prints. (Dagster runs of the UI and the schedules are
serialized per replica by the run queue's tag limit, see ``INSTANCE_YAML`` in ``sweeps/home.py``.)
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from .rows import NAME_RE

__all__ = ["LockUnavailable", "ReplicaLocked", "ensure_lock_dir", "fleet_lock", "lock_path", "replica_lock"]


class ReplicaLocked(RuntimeError):
    """Another process holds the replica's sweep lock.

    Attributes:
        replica: the replica. holder: the holder's pid as its lock file says (``"?"`` when
            unreadable). path: the lock file.
    """

    def __init__(self, message: str, replica: str = "", holder: str = "?", path: Path | None = None) -> None:
        super().__init__(message)
        self.replica, self.holder, self.path = replica, holder, path


class LockUnavailable(ValueError):
    """The lock file cannot be created where the ledger says (bad input: one line, exit 2)."""


def ensure_lock_dir(ledger_uri: str, replica: str) -> Path:
    """Create the folder of ``replica``'s lock file (:func:`lock_path`); return the lock's path.

    ``faultsense sweep`` calls it for every replica before the first run, so a ledger path that
    cannot hold a folder (a parent that is a file, ``/proc``, a name over 255 bytes) is refused
    before any probe runs.

    Raises:
        ValueError: ``replica`` is not a replica name.
        LockUnavailable: one line naming the folder and the operating system's reason.
    """
    path = lock_path(ledger_uri, replica)
    os.close(_open_lock(path))
    return path


def _open_lock(path: Path) -> int:
    """Create ``path``'s folder and open (creating) the lock file: its descriptor.

    Raises:
        LockUnavailable: one line naming the folder and the operating system's reason.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        where = str(path.parent)
        where = where if len(where) <= 200 else where[:200] + "..."
        raise LockUnavailable(f"ledger: cannot create the sweep lock in {where}: {exc.strerror or type(exc).__name__}") from None


def lock_path(ledger_uri: str, replica: str) -> Path:
    """Where the sweep lock of ``replica`` on the ledger at ``ledger_uri`` lives.

    Raises:
        ValueError: ``replica`` is not a replica name.
    """
    if not isinstance(replica, str) or not NAME_RE.fullmatch(replica):
        raise ValueError(f"replica must be 1-64 of a-z, 0-9, '_' and '-', got {str(replica)[:80]!r}")
    return _lock_file(ledger_uri, replica)


def _lock_file(ledger_uri: str, name: str) -> Path:
    """The lock file ``name`` of the ledger at ``ledger_uri``: ``<ledger>/.locks/<name>.lock``, or
    for an object-store ledger ``$XDG_CACHE_HOME/faultsense/locks/<hash of the URI>-<name>.lock``."""
    if "://" not in ledger_uri or ledger_uri.startswith("file://"):
        root = Path(ledger_uri.removeprefix("file://")).expanduser().resolve()
        return root / ".locks" / f"{name}.lock"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha256(ledger_uri.encode()).hexdigest()[:16]
    return cache / "faultsense" / "locks" / f"{digest}-{name}.lock"


def _holder(fd: int) -> str:
    """The pid a held lock file names (``"?"`` when unreadable)."""
    return os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"


@contextlib.contextmanager
def _owned(fd: int) -> Iterator[None]:
    """The lock ``fd`` was just taken: write this process's pid into it for the block, then
    clear it and release the lock."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    try:
        yield
    finally:
        os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def replica_lock(ledger_uri: str, replica: str) -> Iterator[Path]:
    """Hold the sweep lock of ``replica`` while the block runs (never waits).

    Yields:
        The lock file's path.

    Raises:
        ReplicaLocked: another process holds it; the message names the replica, the holder's
            pid and the lock file.
        LockUnavailable: the lock file or its folder cannot be created (as :func:`ensure_lock_dir`).
    """
    path = lock_path(ledger_uri, replica)
    fd = _open_lock(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            raise ReplicaLocked(
                f"another sweep of {replica} is running on this ledger (pid {holder}, lock {path}); not swept",
                replica,
                holder,
                path,
            ) from None
        with _owned(fd):
            yield path
    finally:
        os.close(fd)


@contextlib.contextmanager
def fleet_lock(ledger_uri: str, purpose: str, wait_s: float) -> Iterator[Path]:
    """Hold a fleet-wide lock of the ledger while the block runs, waiting up to ``wait_s`` seconds.

    Beside the replicas' sweep locks (:func:`lock_path`'s folder), named ``<purpose>.fleet.lock``
    (a ``.`` no replica name holds; an object-store ledger's with its URI hash first). The
    guarded actions take it so that two replicas' sweeps never decide a fleet-wide limit at
    once. Like the sweep locks it holds on this machine only.

    Raises:
        TimeoutError: still held by another process after ``wait_s`` seconds (the message names
            the holder's pid and the file).
        LockUnavailable: the lock file or its folder cannot be created.
    """
    path = _lock_file(ledger_uri, f"{purpose}.fleet")
    fd = _open_lock(path)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(
                        f"the {purpose} lock {path} is still held by pid {_holder(fd)} after {wait_s:g} s"
                    ) from None
                time.sleep(0.1)
        with _owned(fd):
            yield path
    finally:
        os.close(fd)
