"""``faultsense sweep``: run the Dagster sweep job in-process for the current hour.

The same job the hourly schedule launches (``faultsense_sweep``), one run per replica, on the
persistent Dagster instance that ``faultsense ui`` shows (:mod:`.home`: ``$DAGSTER_HOME``, else
``.faultsense/dagster``), so every CLI sweep is in the UI's run history. Then the analytics job refreshes the swept day's analytics partition, the fleet view is redrawn, and a summary
table shows what each replica's sweep found.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import sys
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from faultsense_pipelines.redaction import scrub
from faultsense_pipelines.replica.vocabulary import DEFAULT_DRILLDOWN, DrilldownMethod, Status

from ..validation import shown
from .errors import check_drilldown_option, check_repeats_option, fail

__all__ = [
    "HOST_TAG",
    "PID_TAG",
    "ReplicaSweep",
    "SweepInterrupted",
    "fail_orphaned_fleet_runs",
    "fail_orphaned_runs",
    "register",
    "run_sweep",
]


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


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C (``SIGINT``); ``replica`` is the one whose run it stopped
    (its ledger partition is whole: its last completed sweep, or this run's if the interrupt
    came while the run was committing it), or empty between runs."""

    def __init__(self, replica: str = "") -> None:
        super().__init__(replica)
        self.replica = replica


@dataclass
class ReplicaSweep:
    """What one replica's sweep run did."""

    replica: str
    executor: str
    run_id: str = ""
    success: bool = False
    probes_phase1: int = 0
    probes_phase2: int = 0
    suspects: int = 0
    drilldown: bool = False
    degraded: bool = False
    #: confirmed components, ``gpu:17``, with the node they sit on where the topology names it: ``gpu:17 (a18)``
    confirmed: list[str] = field(default_factory=list)
    unjudged_links: int = 0
    #: the sweep's ``inconclusive`` ledger rows: verdicts the evidence did not settle, plus the
    #: ``replica:<name>`` row of a sweep that left links unjudged
    unsettled: int = 0
    error: str = ""
    seconds: float = 0.0
    #: how long it waited for another sweep's lock of the replica before its run (seconds)
    waited_s: float = 0.0
    #: the decisions of the fleet file's actions about this sweep (``fault_actions``'s value:
    #: one dict per decision with action, trigger, component, node, decision, reason, exit_code)
    actions: list[dict] = field(default_factory=list)


def _outputs(result) -> set[str]:
    """Names of the ops that yielded an output in ``result`` (none after a step that failed)."""
    return {e.node_name for e in result.all_events if e.is_successful_output}


def _innermost(error) -> str:
    """The last line of the innermost cause of a Dagster ``SerializableErrorInfo``: the
    exception that really stopped the step, not Dagster's "Error occurred while executing op"."""
    messages = []
    while error is not None:
        if error.message and error.message.strip():
            messages.append(error.message.strip().splitlines()[-1])
        error = error.cause or error.context
    return messages[-1] if messages else "step failed"


def _failure_message(result) -> str:
    for event in result.all_events:
        if event.is_step_failure:
            data = event.step_failure_data
            if data.user_failure_data is not None and data.user_failure_data.description:
                return data.user_failure_data.description
            if data.error is None:
                return "step failed"
            outer, cause = data.error.message.strip().splitlines()[-1], _innermost(data.error)
            return outer if cause == outer else f"{outer}: {cause}"
    return "run failed"


class _SigintWatch:
    """Notices every ``SIGINT`` the process receives while it is active, whichever Python
    handler (ours, Dagster's) took it -- through the signal wakeup fd, which Python's C-level
    handler writes the signal number to before any Python handler runs. A Ctrl-C that Dagster
    turns into a plain run failure (e.g. one landing while an executor's workers shut down
    after the run's last step) is still an interrupt of the sweep. Main thread only (where
    ``signal.set_wakeup_fd`` is allowed); elsewhere it notices nothing.
    """

    def __enter__(self) -> _SigintWatch:
        self._sock = None
        if threading.current_thread() is threading.main_thread():
            self._sock, write = socket.socketpair()
            for end in (self._sock, write):
                end.setblocking(False)
            self._write = write
            self._previous = signal.set_wakeup_fd(write.fileno(), warn_on_full_buffer=False)
        return self

    def fired(self) -> bool:
        """Whether a ``SIGINT`` arrived since the last call."""
        got = b""
        while self._sock is not None:
            try:
                chunk = self._sock.recv(4096)
            except BlockingIOError:
                break
            if not chunk:
                break
            got += chunk
        return signal.SIGINT in got or signal.SIGTERM in got

    def __exit__(self, *exc) -> None:
        if self._sock is not None:
            signal.set_wakeup_fd(self._previous)
            self._sock.close()
            self._write.close()


#: Tags of every run ``faultsense sweep`` executes: the process and host that run it.
PID_TAG, HOST_TAG = "faultsense/cli_pid", "faultsense/cli_host"


def _cli_tags() -> dict[str, str]:
    return {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}


def fail_orphaned_runs(instance, replica: str) -> int:
    """Mark failed the sweep runs of ``replica`` that a killed ``faultsense sweep`` left in
    ``NOT_STARTED``, ``STARTING`` or ``STARTED``; return how many.

    A sweep killed with ``SIGKILL`` (or by the OOM killer) never records its run's end, so
    the run stays ``STARTED`` for good -- or ``NOT_STARTED``, when the kill came between the
    run's creation and its start -- and the UI lists it as live while the run queue, which
    admits one run per replica, would hold that replica's scheduled and backfill runs behind
    it. A run counts as orphaned when this host ran it from a process (:data:`PID_TAG`) that
    no longer exists; it is failed with that reason (a ``RUN_FAILURE`` event). Call it holding
    the replica's sweep lock (:func:`~faultsense_pipelines.ledger.lock.replica_lock`), so no
    live sweep of the replica is racing it.
    """
    return _fail_dead_cli_runs(instance, {"dagster/partition/replica": replica}, lambda run: True)


def fail_orphaned_fleet_runs(instance) -> int:
    """Mark failed the analytics and fleet-view runs (runs without a replica) that a killed
    ``faultsense sweep`` of this host left in ``NOT_STARTED``, ``STARTING`` or ``STARTED``;
    return how many. Their process being gone (:data:`PID_TAG`) is enough: no lock guards them.
    """
    return _fail_dead_cli_runs(instance, {}, lambda run: "dagster/partition/replica" not in run.tags)


def _fail_dead_cli_runs(instance, tags: dict[str, str], which) -> int:
    """Fail each live-looking run carrying ``tags`` (and this host's :data:`HOST_TAG`) that
    ``which(run)`` accepts and whose ``faultsense sweep`` process (:data:`PID_TAG`) is gone."""
    import dagster as dg

    runs = instance.get_runs(
        filters=dg.RunsFilter(
            statuses=[dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED],
            tags={**tags, HOST_TAG: socket.gethostname()},
        )
    )
    failed = 0
    for run in runs:
        pid = run.tags.get(PID_TAG, "")
        if which(run) and pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            instance.report_run_failed(run, f"its faultsense sweep process (pid {pid}) is gone: killed before the run ended")
            failed += 1
    return failed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


class _TermInterrupts:
    """While a sweep runs, ``SIGTERM`` stops it as Ctrl-C does (``KeyboardInterrupt``: exit 130,
    no further replica swept), whatever the process inherited.

    Every Dagster run sets ``SIGTERM``'s handler to ``SIGINT``'s when it starts and ends
    (``dagster._utils.interrupts.setup_interrupt_handlers``, meant for Kubernetes). A process
    started in the background from a script inherits ``SIGINT`` ignored, so after its first run
    ``SIGTERM`` was ignored too, and a ``kill`` between two replicas let the sweep run on and
    exit 0. :meth:`arm` (on entry and right after each run) sets ``SIGTERM`` back to raising
    ``KeyboardInterrupt``; during a run Dagster's own handler captures it as an interrupt. (A
    ``SIGTERM`` in the instant between Dagster's restore at a run's end and :meth:`arm` is still
    lost when ``SIGINT`` is ignored.) The handler the process had is restored on exit. Main
    thread only; elsewhere nothing changes.
    """

    def __enter__(self) -> _TermInterrupts:
        self._main = threading.current_thread() is threading.main_thread()
        self._previous = signal.getsignal(signal.SIGTERM) if self._main else None
        self.arm()
        return self

    def arm(self) -> None:
        """Make ``SIGTERM`` raise ``KeyboardInterrupt`` (main thread only)."""
        if self._main:
            signal.signal(signal.SIGTERM, signal.default_int_handler)

    def __exit__(self, *exc) -> None:
        if self._main and self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)


def _interrupted(result) -> bool:
    """Whether a Dagster run was stopped by an interrupt (Ctrl-C) rather than failing."""
    from faultsense_pipelines.resources.dagster_internals import ErrorSource

    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data.error_source == ErrorSource.INTERRUPT:
            return True
        if event.event_type_value in ("RUN_CANCELED", "PIPELINE_CANCELED"):
            return True
    return False


def _summarize(outcome: ReplicaSweep, result) -> ReplicaSweep:
    outcome.run_id, outcome.success = result.run_id, result.success
    if not result.success:
        outcome.error = _failure_message(result)
        return outcome
    phase1 = result.output_for_node("phase1_probe_run")
    outcome.probes_phase1, outcome.suspects = len(phase1.records), len(phase1.suspect_probes)
    outcome.degraded = phase1.replica_degraded
    from faultsense_pipelines.assets.sweep import drilldown_method_of, drills_down

    loc = result.output_for_node("phase2_drilldown") if "phase2_drilldown" in _outputs(result) else None
    # a binary drill-down without a suspect materializes an empty one: shown as skipped
    outcome.drilldown = loc is not None and drills_down(phase1, drilldown_method_of(result.dagster_run.run_config))
    if loc is not None and outcome.drilldown:
        from faultsense_pipelines.assets.report import component_of

        outcome.degraded = loc.replica_degraded
        outcome.probes_phase2 = loc.probes_phase2
        outcome.confirmed = [
            component_of(v) + (f" ({v.node})" if v.node else "") for v in loc.verdicts if v.status == Status.CONFIRMED
        ]
        outcome.unjudged_links = loc.unjudged_links or 0
        outcome.unsettled = unsettled_count(loc)
    if "fault_actions" in _outputs(result):
        outcome.actions = list(result.output_for_node("fault_actions"))
    return outcome


def unsettled_count(loc) -> int:
    """How many ``inconclusive`` rows a sweep's localization ``loc`` writes to the ledger
    (:func:`assets.rows.fault_rows`): one per inconclusive verdict, and one ``replica:<name>``
    row when it left links unjudged."""
    return sum(v.status == Status.INCONCLUSIVE for v in loc.verdicts) + (1 if loc.unjudged_links else 0)


def result_cell(o: ReplicaSweep) -> str:
    """The sweep table's ``result`` of one replica (rich markup): ``FAILED``, ``degraded``,
    ``faulty``, ``inconclusive`` (nothing confirmed, verdicts left unsettled) or ``healthy`` --
    the words of the ledger's ``sweeps.status`` -- with the count of unsettled (inconclusive)
    verdicts beside it, e.g. ``inconclusive (3 unsettled)``, ``faulty (1 unsettled)``."""
    if not o.success:
        return "[red]FAILED[/red]"
    if o.degraded:
        word = "[yellow]degraded[/yellow]"
    elif o.confirmed:
        word = "[red]faulty[/red]"
    else:
        word = "[yellow]inconclusive[/yellow]" if o.unsettled else "[green]healthy[/green]"
    return f"{word} ({o.unsettled} unsettled)" if o.unsettled else word


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
            default, ``evidence``).
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
        with _SigintWatch() as sigint, _TermInterrupts() as term:
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
                                instance=instance, partition_key=key, run_config=config, raise_on_error=False, tags=_cli_tags()
                            )
                        finally:
                            term.arm()  # at once: the run's end left SIGTERM as SIGINT is (maybe ignored)
                except KeyboardInterrupt:
                    raise SweepInterrupted("" if name in queue else name) from None
                if sigint.fired() or _interrupted(result):
                    raise SweepInterrupted(name)
                outcome = _summarize(outcome, result)
                outcome.seconds = time.monotonic() - t0
                outcomes.append(outcome)
                on_done and on_done(outcome)
            outcomes.sort(key=lambda o: names.index(o.replica))  # the fleet's order, whatever waited
            if sigint.fired():
                raise SweepInterrupted()
            # the swept day's analytics partition (what the automation sensor requests after these runs)
            fail_orphaned_fleet_runs(instance)  # a killed sweep's analytics or fleet-view run
            defs.resolve_job_def(ANALYTICS_JOB).execute_in_process(
                instance=instance, partition_key=hour[:10], run_config=quiet, raise_on_error=False, tags=_cli_tags()
            )
            term.arm()  # as after every run
            view = quiet  # "now": the latest swept hour of each replica, whatever hour this sweep was
            defs.resolve_job_def(FLEET_VIEW_JOB).execute_in_process(
                instance=instance, run_config=view, raise_on_error=False, tags=_cli_tags()
            )
    finally:
        if own:
            instance.dispose()
    return outcomes, ledger


def _table(outcomes: list[ReplicaSweep], hour: str, ledger: str) -> Table:
    table = Table(
        title=f"FaultSense sweep {hour} UTC -> ledger {escape(ledger)}",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
        collapse_padding=True,
    )
    for col in ("replica", "executor", "phase 1", "suspects", "phase 2", "confirmed", "result", "actions", "time"):
        numeric = col.startswith("phase") or col in ("suspects", "time")
        table.add_column(col, justify="right" if numeric else "left", no_wrap=col in ("replica", "executor"), overflow="fold")
    for o in outcomes:
        status = result_cell(o)
        confirmed = ", ".join(o.confirmed) or ("-" if o.success else "")
        phase2 = str(o.probes_phase2) if o.drilldown else "skipped"
        table.add_row(
            o.replica,
            o.executor,
            str(o.probes_phase1),
            str(o.suspects),
            phase2,
            confirmed,
            status,
            actions_cell(o.actions),
            f"{o.seconds:.1f} s",
        )
    table.caption = (
        "healthy: nothing found faulty; faulty: components confirmed; degraded: most probes slow, nothing blamed; "
        "inconclusive: nothing confirmed, verdicts left unsettled; "
        "(N unsettled): N ledger rows with status inconclusive (verdicts the evidence did not settle, links left unjudged)"
    )
    table.caption_justify = "left"
    return table


def actions_cell(decisions: list[dict]) -> str:
    """The sweep table's ``actions`` of one replica: its decisions counted by kind, in the
    order ``acted``, ``dry_run``, ``skipped``, ``failed``, ``timed_out``, e.g. ``acted 2,
    skipped 8``; ``-`` when none (each decision is a row of the table under it)."""
    if not decisions:
        return "-"
    counts = Counter(d["decision"] for d in decisions)
    order = ("acted", "dry_run", "skipped", "failed", "timed_out", "started")
    return ", ".join(f"{d} {counts[d]}" for d in sorted(counts, key=lambda d: order.index(d) if d in order else 9))


def _actions_table(outcomes: list[ReplicaSweep]) -> Table | None:
    """Every action decision of the sweep, one row each with its reason; None when there is none."""
    rows = [(o.replica, d) for o in outcomes for d in o.actions]
    if not rows:
        return None
    table = Table(title="actions (ledger dataset actions)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("replica", "action", "on", "component", "node", "decision", "reason"):
        table.add_column(col, overflow="fold")
    for replica, d in rows:
        table.add_row(
            replica, d["action"], d["trigger"], d["component"], d.get("node") or "-", d["decision"], escape(scrub(d["reason"]))
        )
    return table


def _lock_wait_option(text: str | None) -> float:
    """``--lock-wait`` in seconds (None: :data:`DEFAULT_LOCK_WAIT_S`); one line + exit 2 otherwise."""
    if text is None:
        return DEFAULT_LOCK_WAIT_S
    plain = re.fullmatch(r"[0-9]{1,6}(\.[0-9]{1,3})?", text.strip())  # not float()'s 1_0, +5, 1e3, '５'
    value = float(plain.group()) if plain else -1.0
    if not 0 <= value <= MAX_LOCK_WAIT_S:
        fail(f"--lock-wait must be a number of seconds in 0..{MAX_LOCK_WAIT_S:.0f}, got {shown(text)}")
    return value


def register(app: typer.Typer) -> None:
    """Add ``faultsense sweep`` to ``app``."""

    @app.command("sweep")
    def sweep(
        fleet: Path = typer.Option(
            None, "--fleet", help="Fleet YAML (default: $FAULTSENSE_FLEET or faultsense_pipelines/data/fleet.yaml)."
        ),
        replica: list[str] = typer.Option(None, "--replica", help="Replica to sweep (repeatable; default: all)."),
        ledger: str = typer.Option(
            None, "--ledger", help="Ledger path or URI (default: $FAULTSENSE_LEDGER, else the fleet file's ledger:)."
        ),
        repeats: str = typer.Option(
            None,
            "--repeats",
            metavar="INTEGER",
            show_default=False,
            help="Measurements per probe, >= 1 (default: the fleet's, else 3).",
        ),
        hour: str = typer.Option(None, "--hour", help="Hour partition YYYY-MM-DD-HH:00 (default: now, UTC)."),
        recheck: bool = typer.Option(
            True,
            "--recheck/--no-recheck",
            help="Adaptive drill-down: re-check the links hidden behind a slow GPU or link (exact). --no-recheck is cheaper, "
            "can miss a slow link there, and prints how many links it left unjudged.",
        ),
        drilldown: str = typer.Option(
            DEFAULT_DRILLDOWN.value, "--drilldown", help=f"Phase 2: {' | '.join(DrilldownMethod.values())}."
        ),
        lock_wait: str = typer.Option(
            None,
            "--lock-wait",
            metavar="SECONDS",
            show_default=False,
            help=f"Seconds to wait for a replica that another sweep holds on this ledger; the other replicas are "
            f"swept meanwhile (default {DEFAULT_LOCK_WAIT_S:.0f}; 0: skip it at once).",
        ),
    ) -> None:
        """Sweep the fleet's replicas now (Phase 1, drill-down if needed) and write the fault ledger."""
        from faultsense_pipelines.fleet import FleetError, load_fleet
        from faultsense_pipelines.fleet.hours import check_hour_key, current_hour_key

        # every input is checked before Dagster is imported (seconds and ~30 MB): one line, exit 2
        try:
            names = load_fleet(fleet).names
        except FleetError as exc:
            fail(str(exc))
        try:
            hour = check_hour_key(hour) if hour is not None else current_hour_key()
        except ValueError as exc:
            fail(f"--{exc}")
        count = check_repeats_option(repeats)
        method = check_drilldown_option(drilldown, recheck)
        wait_s = _lock_wait_option(lock_wait)
        if ledger is not None and not ledger.strip():
            fail(f"--ledger must be a path or URI, got {shown(ledger)}")
        console = Console(stderr=True)
        # the live progress bar only on a terminal: piped or logged output gets no spinner lines
        live = console.is_terminal and sys.stdout.isatty()
        columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, disable=not live) as progress:
            task = progress.add_task("loading the fleet", total=None)

            def on_start(name: str) -> None:
                progress.update(task, description=f"sweeping [bold]{name}[/bold]")

            def on_done(o: ReplicaSweep) -> None:
                mark = "[green]ok[/green]" if o.success else "[red]failed[/red]"
                waited = f", after {o.waited_s:.1f} s waiting for its lock" if o.waited_s and o.run_id else ""
                progress.console.print(f"  {o.replica}: {mark} ({o.seconds:.1f} s{waited})")
                progress.advance(task)

            def on_wait(name: str, holder: str, wait_s: float) -> None:
                progress.console.print(
                    f"  {name}: another sweep (pid {holder}) holds its lock on this ledger; waiting up to {wait_s:g} s",
                    highlight=False,
                )

            try:
                progress.update(task, total=len(replica or names))
                outcomes, ledger_at = run_sweep(
                    fleet,
                    replica or None,
                    ledger,
                    repeats=count,
                    recheck=recheck,
                    drilldown=method,
                    hour=hour,
                    lock_wait_s=wait_s,
                    on_start=on_start,
                    on_done=on_done,
                    on_wait=on_wait,
                )
            except KeyboardInterrupt as exc:
                progress.stop()
                which = getattr(exc, "replica", "")
                where = f" during {which}'s run; its ledger partition holds its last completed sweep" if which else ""
                fail(f"interrupted{where}; no further replica was swept", code=130)
            except FleetError as exc:
                progress.stop()
                fail(str(exc))
            except KeyError as exc:
                progress.stop()
                fail(str(exc).strip("'\""))
            except ValueError as exc:
                progress.stop()
                fail(str(exc))
            progress.update(task, description="done")
        out = Console()
        if not out.is_terminal and not os.environ.get("COLUMNS"):  # a file or a pipe: no 80-column wrap mid-word
            out = Console(width=160)
        out.print(_table(outcomes, hour, ledger_at))
        if (decided := _actions_table(outcomes)) is not None:
            out.print(decided)
        for o in outcomes:
            if o.unjudged_links:
                out.print(f"{o.replica}: {o.unjudged_links} links unjudged (no passing probe held them)", highlight=False)
            if not o.success:
                out.print(
                    f"[red]{o.replica} failed[/red]{f' (run {o.run_id})' if o.run_id else ''}: {escape(scrub(o.error))}",
                    soft_wrap=True,
                    markup=True,
                    highlight=False,
                )
        if not all(o.success for o in outcomes):
            raise typer.Exit(1)
