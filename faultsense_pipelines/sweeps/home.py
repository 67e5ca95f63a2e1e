"""The one persistent Dagster instance that ``faultsense sweep`` and ``faultsense ui`` share.

Its folder (``DAGSTER_HOME``) is ``$DAGSTER_HOME`` when set, else ``.faultsense/dagster`` under
the current directory, beside the default ledger ``.faultsense/ledger``. On first use it is
created with a ``dagster.yaml`` (:data:`INSTANCE_YAML`) that sets the run queue (at most
:data:`MAX_CONCURRENT_RUNS` runs at once, at most one per replica: the
``dagster/partition/replica`` tag every sweep run carries), turns off the "Join the Dagster
community" dialog (``nux``) and telemetry. A ``dagster.yaml`` already there is left as it is.
Run history, schedules, sensors and backfills live in its SQLite storage, so they outlive
``faultsense ui`` restarts, and CLI sweeps appear in the UI.

Dagster's SQLite storages create their tables on first open without guarding against another
process doing the same, so two ``faultsense sweep`` processes started at once on a fresh
folder would fail ("table runs already exists"). :func:`open_instance` therefore opens the
instance under an exclusive ``flock`` on :data:`INIT_LOCK` in the folder; once open, runs of
both processes proceed concurrently.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dagster as dg

__all__ = ["DEFAULT_HOME", "INIT_LOCK", "INSTANCE_YAML", "MAX_CONCURRENT_RUNS", "dagster_home", "ensure_home", "open_instance"]

#: The instance folder when ``$DAGSTER_HOME`` is not set (relative to the current directory).
DEFAULT_HOME = Path(".faultsense") / "dagster"
#: The lock file (in the instance folder) held while an instance is opened.
INIT_LOCK = ".faultsense-open.lock"
#: Runs the queue starts at once (sweeps of different replicas, analytics).
MAX_CONCURRENT_RUNS = 4
#: Longest a run may go before the daemon's run monitoring fails it (seconds): a run whose
#: worker was killed stays STARTED for good otherwise, holding its replica's queue slot.
MAX_RUNTIME_S = 3 * 3600

INSTANCE_YAML = f"""\
# Written by faultsense on first use; edit freely (faultsense never overwrites it).
concurrency:
  runs:
    max_concurrent_runs: {MAX_CONCURRENT_RUNS}
    # Never two sweeps of the same replica at once: every sweep run carries the tag
    # dagster/partition/replica=<name>, and the queue admits one run per distinct value.
    tag_concurrency_limits:
      - key: dagster/partition/replica
        value:
          applyLimitPerUniqueValue: true
        limit: 1
# A run whose worker died (a killed `dagster dev`, an OOM kill) stays STARTED for good and
# holds its replica's slot in the queue: the daemon fails a run stuck starting for 3 minutes
# and any run still going after {MAX_RUNTIME_S // 3600} hours (no sweep comes near it).
run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  max_runtime_seconds: {MAX_RUNTIME_S}
  poll_interval_seconds: 60
nux:
  enabled: false
telemetry:
  enabled: false
"""


def dagster_home() -> Path:
    """The instance folder, absolute: ``$DAGSTER_HOME`` if set (and not blank), else
    :data:`DEFAULT_HOME` under the current directory."""
    env = os.environ.get("DAGSTER_HOME", "").strip()
    return Path(env).expanduser().resolve() if env else DEFAULT_HOME.resolve()


def ensure_home(home: Path | None = None) -> Path:
    """Create the instance folder and its ``dagster.yaml`` (if missing); return the folder.

    Raises:
        ValueError: one line naming the folder when it cannot be created or written.
    """
    home = home or dagster_home()
    try:
        home.mkdir(parents=True, exist_ok=True)
        config = home / "dagster.yaml"
        if not config.exists():
            config.write_text(INSTANCE_YAML)
    except OSError as exc:
        raise ValueError(f"DAGSTER_HOME {home} cannot be created: {exc.strerror or exc}") from None
    return home


def _cli_overrides() -> dict[str, object]:
    """How ``faultsense sweep`` opens the instance: its runs' stdout and stderr go to the
    terminal as they are, not through Dagster's compute-log capture, whose helper processes
    would each print a traceback on Ctrl-C (the UI's own runs keep the capture)."""
    from faultsense_pipelines.resources.dagster_internals import NOOP_COMPUTE_LOGS

    return {"compute_logs": NOOP_COMPUTE_LOGS}


def open_instance(home: Path | None = None) -> dg.DagsterInstance:
    """The persistent Dagster instance in ``home`` (default :func:`dagster_home`), created if
    needed, as ``faultsense sweep`` uses it (runs, events and assets recorded; no compute-log
    capture). Opening is serialized across processes by an exclusive lock on
    ``home/``:data:`INIT_LOCK` (blocks while another process opens the same folder).

    Raises:
        ValueError: the folder cannot be created or the lock file cannot be opened.
    """
    import dagster as dg

    from faultsense_pipelines.resources.dagster_internals import InstanceRef

    home = ensure_home(home)
    try:
        lock = (home / INIT_LOCK).open("a")
    except OSError as exc:
        raise ValueError(f"DAGSTER_HOME {home} lock file cannot be opened: {exc.strerror or exc}") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        return dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home), overrides=_cli_overrides()))
