"""``faultsense ledger show``: print recent rows of the fault ledger; ``faultsense ledger
actions``: the decisions of the fleet file's guarded actions (the ``actions`` dataset).

Filters: ``--status`` must be one of the ledger's statuses and ``--detector`` one of
:data:`KNOWN_DETECTORS` (a typo is an error, exit 2, not an empty table). ``--replica`` takes
any name (a replica may have been renamed or retired); when it matches no row, the (empty)
table is still printed, exit 0, and one ``note:`` line on stderr lists the replicas that do
have rows in the range.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..validation import shown as shown_value
from .errors import fail
from .options import FleetOption, LedgerOption, LimitOption, ReplicaFilterOption, SinceOption

if TYPE_CHECKING:
    from faultsense_pipelines.ledger import LedgerStore

__all__ = ["KNOWN_DETECTORS", "default_ledger_uri", "register"]

#: The detectors that write the fault ledger: the active sweep and the two passive detectors.
KNOWN_DETECTORS: tuple[str, ...] = ("faultsense", "minder", "flowpulse")


def default_ledger_uri(ledger: str | None, fleet: Path | None) -> str:
    """``--ledger``, else ``$FAULTSENSE_LEDGER``, else the fleet file's ``ledger``.

    The fleet file is read only when neither of the first two is given.

    Raises:
        FleetError: the fleet file is malformed, or none of the three gives a ledger.
    """
    from faultsense_pipelines.ledger.location import LEDGER_ENV, choose_ledger_uri

    if ledger or os.environ.get(LEDGER_ENV):
        return choose_ledger_uri(ledger, None)
    from faultsense_pipelines.fleet import fleet_path, load_fleet

    return choose_ledger_uri(None, load_fleet(fleet).ledger, fleet_path(fleet))


def register(app: typer.Typer) -> None:
    """Add ``faultsense ledger ...`` to ``app``."""
    ledger_app = typer.Typer(help="Read, convert and maintain the fault ledger.", no_args_is_help=True)
    app.add_typer(ledger_app, name="ledger")
    register_maintenance(ledger_app)

    @ledger_app.command("show")
    def show(
        since: SinceOption = None,
        replica: ReplicaFilterOption = None,
        detector: str = typer.Option(None, "--detector", help=f"Only this detector ({', '.join(KNOWN_DETECTORS)})."),
        status: str = typer.Option(None, "--status", help="Only this status (confirmed, suspect, masked, inconclusive)."),
        ledger: LedgerOption = None,
        fleet: FleetOption = None,
        limit: LimitOption = 50,
        ids: bool = typer.Option(False, "--ids", help="Also show each row's fault_id."),
    ) -> None:
        """Print recent faults by the hour they are about (a sweep's hour), newest last; the
        write time is the second column."""
        import pandas as pd

        from faultsense_pipelines.ledger import STATUSES

        day = _since_day(since)
        if status is not None and status not in STATUSES:
            fail(f"--status must be one of {', '.join(STATUSES)}, got {shown_value(status)}")
        if detector is not None and detector not in KNOWN_DETECTORS:
            fail(f"--detector must be one of {', '.join(KNOWN_DETECTORS)}, got {shown_value(detector)}")
        store = _open_store(ledger, fleet)
        from faultsense_pipelines.ledger import LedgerError

        skipped: list[str] = []
        try:
            df = store.read_faults(since=day, replica=replica, detector=detector, skipped=skipped, batch=True)
            version = store.version()
        except LedgerError as exc:  # a damaged log: one line naming the entry
            fail(str(exc))
        _warn_skipped(skipped)
        _note_strays(store, day)
        if legacy := store.legacy_files():
            what = "holds a pre-Delta Parquet ledger" if version is None else f"still holds {len(legacy)} pre-Delta Parquet files"
            typer.echo(f"note: {store.display_uri} {what}; run `faultsense ledger convert`", err=True)
        if replica is not None and df.empty:
            _note_unmatched_replica(store, replica, day)
        if status is not None:
            df = df[df["status"] == status]
        df = df.assign(hour=[swept_hour(d, b) for d, b in zip(df["date"], df["batch"], strict=True)])
        df = df.sort_values(["hour", "detected_at", "replica", "component"], kind="stable")  # by swept hour, newest last
        shown = df.tail(limit)
        table = _rows_table(f"fault ledger {escape(store.display_uri)}, swept since {day} ({len(shown)} of {len(df)} rows)")
        for col in (
            "hour (UTC)",
            "written (UTC)",
            "replica",
            "detector",
            "component",
            "node",
            "status",
            "slowdown",
            "phase",
            "probes",
        ) + (("fault_id",) if ids else ()):
            table.add_column(col, no_wrap=col in ("replica", "component"), overflow="fold" if col == "fault_id" else "ellipsis")
        for r in shown.to_dict("records"):
            table.add_row(
                r["hour"],
                pd.Timestamp(r["detected_at"]).strftime("%Y-%m-%d %H:%M"),
                *(escape(str(r[c])) for c in ("replica", "detector", "component")),  # rows any detector wrote
                "-" if pd.isna(r["node"]) else escape(str(r["node"])),  # the host it sits on (schema version 3)
                escape(str(r["status"])),
                "-" if pd.isna(r["slowdown"]) else f"{float(r['slowdown']):.2f}x",
                "-" if pd.isna(r["phase"]) else str(r["phase"]),
                "-" if pd.isna(r["probes_used"]) else str(r["probes_used"]),
                *((escape(str(r["fault_id"])),) if ids else ()),
            )
        _print_rows(table)

    @ledger_app.command("actions")
    def actions(
        since: SinceOption = None,
        replica: ReplicaFilterOption = None,
        action: str = typer.Option(None, "--action", help="Only this action (its name in the fleet file)."),
        decision: str = typer.Option(None, "--decision", help="Only this decision (acted, dry_run, skipped, failed, ...)."),
        ledger: LedgerOption = None,
        fleet: FleetOption = None,
        limit: LimitOption = 50,
    ) -> None:
        """Print the recent decisions of the fleet file's actions (acted, dry_run, skipped, failed,
        timed_out), by the hour of the verdict, newest last."""
        import pandas as pd

        from faultsense_pipelines.fleet.hours import display_hour
        from faultsense_pipelines.ledger import ACTION_DECISIONS, LedgerError

        day = _since_day(since)
        if decision is not None and decision not in ACTION_DECISIONS:
            fail(f"--decision must be one of {', '.join(ACTION_DECISIONS)}, got {shown_value(decision)}")
        store = _open_store(ledger, fleet)
        skipped: list[str] = []
        try:
            df = store.read_actions(since=day, replica=replica, skipped=skipped)
        except LedgerError as exc:
            fail(str(exc))
        _warn_skipped(skipped)
        if action is not None:
            df = df[df["action"] == action]
        if decision is not None:
            df = df[df["decision"] == decision]
        df = df.sort_values(["hour", "decided_at", "replica", "action", "component"], kind="stable")
        shown = df.tail(limit)
        table = _rows_table(f"actions in {escape(store.display_uri)} since {day} ({len(shown)} of {len(df)} rows)")
        for col in ("hour (UTC)", "replica", "action", "on", "component", "node", "decision", "exit", "reason"):
            table.add_column(col, no_wrap=col in ("replica", "component"), overflow="fold")
        for r in shown.to_dict("records"):
            code = r["exit_code"]
            table.add_row(
                escape(display_hour(r["hour"])),
                *(escape(str(r[c])) for c in ("replica", "action", "trigger", "component")),
                escape(r["node"]) if isinstance(r["node"], str) else "-",
                escape(str(r["decision"])),
                "-" if pd.isna(code) else str(int(code)),
                escape(str(r["reason"])),
            )
        _print_rows(table)


def _since_day(since: str | None) -> date:
    """``--since`` as a date (default: 7 days ago), or one line and exit 2."""
    try:
        return date.fromisoformat(since) if since else datetime.now(UTC).date() - timedelta(days=7)
    except ValueError:
        fail(f"--since must be a date YYYY-MM-DD, got {shown_value(since)}")


def _warn_skipped(skipped: list[str]) -> None:
    """One warning per damaged data file a read left out (its rows are not shown)."""
    for line in skipped:
        typer.echo(f"warning: skipped unreadable ledger file {' '.join(line.split())[:400]}", err=True)


def _rows_table(title: str) -> Table:
    """The plain table ``ledger show`` and ``ledger actions`` print their rows in."""
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)


def _print_rows(table: Table) -> None:
    """Print ``table``; piped or redirected output has no width to fit: whole rows, not 80
    columns of ellipses."""
    console = Console()
    (console if console.is_terminal else Console(width=250)).print(table)


_SWEPT_HOUR = re.compile(r"-h([01][0-9]|2[0-3])(-failed)?")


def swept_hour(day: object, batch: object) -> str:
    """The hour (UTC) a ledger row is about: its ``date`` partition and, for a sweep's rows
    (batch ``faultsense-<replica>-hHH``), the hour, ``"YYYY-MM-DD HH:00"`` (as
    :func:`~faultsense_pipelines.fleet.hours.display_hour` prints an hour key); the day alone for
    rows of other writers (a passive scan's batch names no hour).

    >>> swept_hour("2026-12-04", "faultsense-sim-64-h13"), swept_hour("2026-11-30", "minder-scan-1")
    ('2026-12-04 13:00', '2026-11-30')
    """
    m = _SWEPT_HOUR.search(str(batch))
    text = str(day)
    return f"{text} {m.group(1)}:00" if m and m.end() == len(str(batch)) else text


def _open_store(ledger: str | None, fleet: Path | None) -> LedgerStore:
    """The ledger store for ``--ledger`` / ``$FAULTSENSE_LEDGER`` / the fleet's, or one line and exit 2."""
    from faultsense_pipelines.fleet import FleetError
    from faultsense_pipelines.ledger import LedgerStore

    try:
        store = LedgerStore(default_ledger_uri(ledger, fleet))
    except (FleetError, ValueError) as exc:
        fail(str(exc))
    try:
        kind = store.root_kind()
    except ValueError as exc:  # LedgerError: the location cannot even be looked at
        fail(str(exc))
    if kind != "directory":
        fail(f"no ledger at {store.display_uri}" + (" (it is a file, not a directory)" if kind == "file" else ""))
    return store


def register_maintenance(ledger_app: typer.Typer) -> None:
    """Add ``faultsense ledger convert`` and ``faultsense ledger maintain`` to ``ledger_app``."""

    @ledger_app.command("convert")
    def convert(
        ledger: LedgerOption = None,
        fleet: FleetOption = None,
        keep: bool = typer.Option(
            False, "--keep-parquet", help="Leave the old Parquet folders in place (default: move them to legacy-parquet/)."
        ),
    ) -> None:
        """Copy a pre-Delta Parquet ledger (fault_ledger/, probe_runs/) into the ledger's Delta table."""
        from faultsense_pipelines.ledger import LedgerError

        store = _open_store(ledger, fleet)
        try:
            rows, skipped = store.convert_legacy(move_aside=not keep)
        except (LedgerError, OSError) as exc:
            fail(str(exc), code=1)
        for line in skipped:
            typer.echo(f"skipped: {' '.join(line.split())[:300]}", err=True)
        typer.echo(f"converted {rows} rows into {store.table_uri} (version {store.version()}); {len(skipped)} files skipped")
        if skipped:
            raise typer.Exit(1)

    @ledger_app.command("maintain")
    def maintain(
        ledger: LedgerOption = None,
        fleet: FleetOption = None,
        retain_days: str = typer.Option(
            None,
            "--retain-days",
            metavar="DAYS",
            help="Delete days older than this (default: the fleet's maintenance:, else keep all).",
        ),
        vacuum_hours: str = typer.Option(
            None,
            "--vacuum-hours",
            metavar="HOURS",
            help="Delete unreferenced files older than this (default: the fleet's, else 168).",
        ),
        compact: bool = typer.Option(True, "--compact/--no-compact", help="Merge each finished day's files (one commit)."),
    ) -> None:
        """Compaction and retention of the ledger's Delta table (safe while readers read and sweeps write).

        What the daily ``ledger_maintenance`` job does; settings not given as options come from
        the fleet file's ``maintenance:`` (when a fleet file is given or found).
        """
        from faultsense_pipelines.fleet import FleetError, load_fleet
        from faultsense_pipelines.fleet.maintenance import MaintenanceOptions
        from faultsense_pipelines.ledger import LedgerError

        def count(text: str | None, flag: str, top: int) -> int | None:
            if text is None:
                return None
            digits = text.strip()  # ASCII digits only ('²'.isdigit() holds), and few of them before int()
            if not (digits.isascii() and digits.isdigit() and len(digits) <= len(str(top))) or int(digits) > top:
                fail(f"{flag} must be an integer in 0..{top}, got {shown_value(text)}")
            return int(digits)

        days, hours = count(retain_days, "--retain-days", 100_000), count(vacuum_hours, "--vacuum-hours", 1_000_000)
        store = _open_store(ledger, fleet)
        try:
            options = load_fleet(fleet).maintenance
        except FleetError as exc:
            if fleet is not None:
                fail(str(exc))
            options = MaintenanceOptions()  # no usable fleet file: the built-in defaults
        days = options.retain_days if retain_days is None else days
        hours = options.vacuum_hours if vacuum_hours is None else hours
        try:
            done = store.maintain(retain_days=days, vacuum_hours=float(hours or 0), compact=compact, z_order=options.z_order)
        except LedgerError as exc:
            fail(str(exc))
        typer.echo(
            f"{store.table_uri}: {done['rows_deleted']} rows deleted (retain_days {days if days is not None else 'all'}), "
            f"{done['partitions_compacted']} days compacted ({done['files_compacted']} files merged), "
            f"{done['files_vacuumed']} files vacuumed, {done['log_files_removed']} log files removed; version {done['version']}"
        )


def _note_strays(store: LedgerStore, day: date) -> None:
    """One stderr line per file in the table's folders of the days shown that no Delta writer
    made (no Delta reader sees it): ``note: ... is not part of the ledger table``. Lists the
    folders of at most the last 31 of those days."""
    today = datetime.now(UTC).date()
    first = max(day, today - timedelta(days=30))
    days = [first + timedelta(days=i) for i in range(max(0, (today - first).days) + 1)]
    for path in store.stray_files(days)[:20]:
        typer.echo(
            f"note: {shown_value(path, 300)} is not part of the ledger table (no reader sees it); move it elsewhere", err=True
        )


def _note_unmatched_replica(store: LedgerStore, replica: str, day: date) -> None:
    """One stderr line: ``--replica`` matched no row; these replicas have rows since ``day``."""
    present = sorted(set(store.read_faults(since=day, skipped=[])["replica"]))
    have = f"replicas with rows: {', '.join(present)}" if present else "no replica has rows"
    typer.echo(f"note: --replica {shown_value(replica)} matches no fault row since {day} ({have})", err=True)
