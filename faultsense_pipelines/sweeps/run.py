"""``run_sweep``: sweep replicas of a fleet now, one in-process run of the Dagster sweep job each.

The same job the hourly schedule launches (``faultsense_sweep``), on the persistent Dagster
instance that ``faultsense ui`` shows (:mod:`.home`), so every such sweep is in the UI's run
history. Each replica's run holds the replica's sweep lock on the ledger
(:func:`~faultsense_pipelines.ledger.lock.replica_lock`); a replica another process holds is
put back behind the others and waited for. Runs a killed sweep left live are failed first
(:mod:`.orphans`). Then the analytics job refreshes the swept day's analytics partition and the
fleet view is redrawn.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from pathlib import Path

from faultsense_pipelines.replica.vocabulary import DrilldownMethod
from faultsense_pipelines.validation import shown

from .orphans import cli_tags, fail_orphaned_fleet_runs, fail_orphaned_runs
from .outcome import ReplicaSweep, summarize
from .signals import SigintWatch, SweepInterrupted, TermInterrupts, interrupted

__all__ = ["DEFAULT_LOCK_WAIT_S", "MAX_LOCK_WAIT_S", "check_lock_wait", "run_sweep"]


#: How long a replica held by another sweep is waited for by default (seconds), and at most.
DEFAULT_LOCK_WAIT_S, MAX_LOCK_WAIT_S = 600.0, 86_400.0
_LOCK_POLL_S = 0.25  # pause between tries when every replica left is held by another sweep


def check_lock_wait(value: object, name: str = "lock_wait_s") -> float:
    """``value`` as a lock wait in seconds, 0..:data:`MAX_LOCK_WAIT_S`.

    Raises:
        ValueError: one line naming ``name``, the value cut short.
    """
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_LOCK_WAIT_S:
        raise ValueError(f"{name} must be a number of seconds in 0..{MAX_LOCK_WAIT_S:.0f}, got {shown(value)}")
    return float(value)


def _check_api_key(fleet, name: str, source: str) -> None:
    """Refuse, before any run, a replica whose ``vllm.api_key_env`` variable is unset or unusable.

    Raises:
        KeyError: ``name`` is not a replica of ``fleet``.
        FleetError: one line naming the fleet file ``source``, the field and the variable (never
            its value).
    """
    from faultsense_pipelines.fleet import FleetError
    from faultsense_pipelines.redaction import SecretError, load_secret

    replica = fleet.replica(name)
    variable = replica.vllm.api_key_env if replica.vllm is not None else None
    if variable:
        try:
            load_secret(variable)
        except SecretError as exc:
            where = f"replicas[{fleet.names.index(name)}].vllm.api_key_env"
            raise FleetError(f"{source}: {where}: {exc}; nothing was swept") from None


def run_sweep(
    fleet_path: str | Path | None = None,
    replicas: list[str] | None = None,
    ledger_uri: str | None = None,
    *,
    repeats: int | None = None,
    recheck: bool = True,
    drilldown: str | None = None,
    hour: str | None = None,
    lock_wait_s: float = DEFAULT_LOCK_WAIT_S,
    instance=None,
    on_start=None,
    on_done=None,
    on_wait=None,
) -> tuple[list[ReplicaSweep], str]:
    """Sweep replicas of a fleet through the Dagster job, one in-process run each.

    Args:
        fleet_path: fleet YAML (default ``faultsense_pipelines/data/fleet.yaml``).
        replicas: names to sweep (default: all).
        ledger_uri: overrides ``$FAULTSENSE_LEDGER`` and the fleet's ``ledger:`` (which may then
            be left out of the file).
        repeats: measurements per probe, 1..100 (None: the fleet's, else 3).
        recheck: re-check the links hidden behind a slow GPU or link in Phase 2 (exact);
            False is cheaper and can miss a slow link hidden there (see ``SweepConfig``).
        drilldown: the Phase 2 method, a ``DrilldownMethod`` word (None: ``SweepConfig``'s
            default, ``sequential``).
        hour: hour partition ``"YYYY-MM-DD-HH:00"`` (default: the current UTC hour).
        lock_wait_s: how long (seconds, 0..:data:`MAX_LOCK_WAIT_S`) a replica whose sweep lock
            another process holds is waited for, counted from its first refusal. Such a
            replica is put back behind the others, so the free replicas are swept meanwhile;
            one still locked when its wait ends gets an error row (0: refused at once).
        instance: a Dagster instance (default: the persistent one of :func:`.home.open_instance`,
            created on first use).
        on_start, on_done: progress callbacks, called with the replica name / its result.
        on_wait: called once per replica that another sweep holds, at its first refusal, with
            the replica name, the holder's pid (a string, ``"?"`` when unknown) and
            ``lock_wait_s``; the replica's :attr:`ReplicaSweep.waited_s` then says how long
            (seconds) it waited.

    Returns:
        One :class:`ReplicaSweep` per replica, and the ledger location.

    Raises:
        SweepInterrupted: Ctrl-C (``SIGINT``) stopped a replica's run: no further replica is
            swept, the analytics are not refreshed, and the interrupted replica's ledger
            partition is whole: as it was before its run, or (an interrupt during the run's
            final write waits for it) this run's completed sweep -- never a mix.
        FleetError: malformed fleet file, a replica whose ``vllm.api_key_env`` names an unset or
            unusable variable (checked before any run starts), or no ledger from ``ledger_uri``,
            ``$FAULTSENSE_LEDGER`` or the file. KeyError: unknown replica name. ValueError: ``hour``
            is malformed or outside the sweep partitions, ``repeats`` outside 1..100, or the ledger path
            is a file, cannot hold its sweep locks or holds a table that cannot be read, ``lock_wait_s``
            is outside its range (all checked before any run starts), or the Dagster home cannot be created.
    """
    import dagster as dg

    from faultsense_pipelines.assets.partitions import REPLICAS
    from faultsense_pipelines.definitions import ANALYTICS_JOB, FLEET_VIEW_JOB, SWEEP_JOB, build_definitions
    from faultsense_pipelines.fleet import MAX_REPEATS, load_fleet
    from faultsense_pipelines.fleet import fleet_path as resolve_fleet_path
    from faultsense_pipelines.fleet.hours import check_hour_key, current_hour_key
    from faultsense_pipelines.ledger.lock import ReplicaLocked, ensure_lock_dir, replica_lock

    from .home import open_instance

    hour = check_hour_key(hour) if hour is not None else current_hour_key()
    check_lock_wait(lock_wait_s)
    if ledger_uri is not None and not str(ledger_uri).strip():
        raise ValueError(f"ledger must be a path or URI, got {shown(ledger_uri)}")
    if repeats is not None and (isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS):
        raise ValueError(f"repeats must be an integer in 1..{MAX_REPEATS} or None (the fleet's), got {shown(repeats)}")
    fleet = load_fleet(fleet_path)
    names = replicas or fleet.names
    for name in names:
        _check_api_key(fleet, name, str(resolve_fleet_path(fleet_path)))  # KeyError: unknown replica
    defs = build_definitions(fleet_path, ledger_uri, earliest_hour=hour)
    store = (defs.resources or {})["ledger"].store()  # build_definitions always sets the resources
    ledger = store.display_uri
    if store.root_kind() == "file":
        raise ValueError(f"ledger {ledger} is a file, not a directory")
    # refused before any probe runs: a lock that cannot be created, a table that cannot be read
    for name in names:
        ensure_lock_dir(store.uri, name)
    store.version()  # LedgerError (a ValueError) naming the table when its log cannot be read
    quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    config = dict(quiet)
    ops: dict[str, dict] = {op: {} for op in ("phase1_probe_run", "phase2_drilldown")}
    if repeats is not None:
        for op in ops:
            ops[op]["repeats"] = repeats
    if not recheck:
        ops["phase2_drilldown"]["recheck"] = False
    if drilldown is not None:  # Phase 2's alone: Phase 1 measures whatever drill-down follows
        ops["phase2_drilldown"]["drilldown_method"] = DrilldownMethod.parse(drilldown, "--drilldown").value
    if any(ops.values()):
        config["ops"] = {op: {"config": values} for op, values in ops.items() if values}
    own = instance is None
    instance = instance or open_instance()
    try:
        have = set(instance.get_dynamic_partitions(REPLICAS.name))
        if missing := [n for n in names if n not in have]:
            instance.add_dynamic_partitions(REPLICAS.name, missing)
        job = defs.resolve_job_def(SWEEP_JOB)
        outcomes = []
        with SigintWatch() as sigint, TermInterrupts() as term:
            queue = deque(names)  # a replica another sweep holds waits behind the others
            refused_at: dict[str, float] = {}  # its first refusal (monotonic seconds)
            while queue:
                name = queue.popleft()
                outcome, t0 = ReplicaSweep(name, fleet.replica(name).executor), time.monotonic()
                key = dg.MultiPartitionKey({"hour": hour, "replica": name})
                try:
                    with contextlib.ExitStack() as held:
                        try:
                            # one sweep of a replica at a time on this ledger
                            held.enter_context(replica_lock(store.uri, name))
                        except ReplicaLocked as exc:
                            if name not in refused_at and on_wait is not None:
                                on_wait(name, exc.holder, lock_wait_s)
                            first = refused_at.setdefault(name, t0)
                            if t0 - first < lock_wait_s:
                                queue.append(name)
                                if all(n in refused_at for n in queue):  # every replica left is held elsewhere
                                    time.sleep(_LOCK_POLL_S)
                                continue
                            waited = f" (waited {t0 - first:.1f} s)" if lock_wait_s > 0 else ""
                            outcome.error, outcome.seconds = f"{exc}{waited}", t0 - first
                            outcomes.append(outcome)
                            on_done and on_done(outcome)
                            continue
                        outcome.waited_s = t0 - refused_at[name] if name in refused_at else 0.0
                        on_start and on_start(name)
                        fail_orphaned_runs(instance, name)
                        try:
                            result = job.execute_in_process(
                                instance=instance, partition_key=key, run_config=config, raise_on_error=False, tags=cli_tags()
                            )
                        finally:
                            term.arm()  # at once: the run's end left SIGTERM as SIGINT is (maybe ignored)
                except KeyboardInterrupt:
                    raise SweepInterrupted("" if name in queue else name) from None
                if sigint.fired() or interrupted(result):
                    raise SweepInterrupted(name)
                outcome = summarize(outcome, result)
                outcome.seconds = time.monotonic() - t0
                outcomes.append(outcome)
                on_done and on_done(outcome)
            outcomes.sort(key=lambda o: names.index(o.replica))  # the fleet's order, whatever waited
            if sigint.fired():
                raise SweepInterrupted()
            # the swept day's analytics partition (what the automation sensor requests after these runs)
            fail_orphaned_fleet_runs(instance)  # a killed sweep's analytics or fleet-view run
            defs.resolve_job_def(ANALYTICS_JOB).execute_in_process(
                instance=instance, partition_key=hour[:10], run_config=quiet, raise_on_error=False, tags=cli_tags()
            )
            term.arm()  # as after every run
            view = quiet  # "now": the latest swept hour of each replica, whatever hour this sweep was
            defs.resolve_job_def(FLEET_VIEW_JOB).execute_in_process(
                instance=instance, run_config=view, raise_on_error=False, tags=cli_tags()
            )
    finally:
        if own:
            instance.dispose()
    return outcomes, ledger
