"""``faultsense sweep``: its options, and the table of what each replica's sweep found.

The sweep itself -- one in-process run of the Dagster sweep job per replica for the current
hour, on the persistent instance that ``faultsense ui`` shows, then the analytics and the fleet
view -- is :func:`faultsense_pipelines.sweeps.run_sweep`.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from faultsense_pipelines.redaction import scrub
from faultsense_pipelines.replica.vocabulary import DEFAULT_DRILLDOWN
from faultsense_pipelines.sweeps.outcome import ReplicaSweep
from faultsense_pipelines.sweeps.run import DEFAULT_LOCK_WAIT_S, MAX_LOCK_WAIT_S, run_sweep

from ..validation import shown
from .errors import check_drilldown_option, check_repeats_option, fail
from .options import DrilldownOption, FleetOption, LedgerOption, RecheckOption

__all__ = ["actions_cell", "register", "result_cell"]


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
        "(N unsettled): N ledger rows with status inconclusive (claims the drill-down did not settle, links left unjudged)"
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
        fleet: FleetOption = None,
        replica: list[str] = typer.Option(None, "--replica", help="Replica to sweep (repeatable; default: all)."),
        ledger: LedgerOption = None,
        repeats: str = typer.Option(
            None,
            "--repeats",
            metavar="INTEGER",
            show_default=False,
            help="Measurements per probe, >= 1 (default: the fleet's, else 3).",
        ),
        hour: str = typer.Option(None, "--hour", help="Hour partition YYYY-MM-DD-HH:00 (default: now, UTC)."),
        recheck: RecheckOption = True,
        drilldown: DrilldownOption = DEFAULT_DRILLDOWN.value,
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
                wait = f"waiting up to {wait_s:g} s" if wait_s > 0 else "not waiting (--lock-wait 0)"
                progress.console.print(
                    f"  {name}: another sweep (pid {holder}) holds its lock on this ledger; {wait}", highlight=False
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
