"""Keeping the ledger's table small and fast: a day's small files merged as sweeps commit
(:meth:`~faultsense_pipelines.ledger.store.LedgerStore.compact_day`), retention, compaction,
vacuum and log cleanup (``maintain``, run by ``faultsense ledger maintain`` and the nightly
``ledger_maintenance`` job), and the files in the table's folders that no Delta writer made.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from .delta import _SCHEMAS, TABLE_DIR, LedgerError, LedgerTable, _log, _why, as_day

__all__ = ["COMPACT_TARGET_BYTES", "LedgerMaintenance"]

#: The size (bytes of input) up to which :meth:`LedgerStore.compact_day` merges a day's small
#: files; a file above it is never rewritten again by it, so one compaction rewrites at most
#: about this much besides the new small files.
COMPACT_TARGET_BYTES = 4 * 2**20


#: How Delta writers (delta-rs, Spark) name data files.
_DELTA_FILE_RE = re.compile(r"part-\d{5}-[0-9a-f-]{36}[-.]c\d{3}(\.[a-z0-9]+)?\.parquet")


class LedgerMaintenance(LedgerTable):
    """The maintenance part of :class:`~faultsense_pipelines.ledger.store.LedgerStore`."""

    def compact_day(self, day: date | str, *, target_bytes: int = COMPACT_TARGET_BYTES) -> int:
        """Merge the small files of ``day`` (both datasets) into files of about ``target_bytes``, in one commit.

        Delta's ``optimize.compact`` over the day's partitions: files below ``target_bytes``
        are bin-packed in commit order (rows keep their order; statistics are recomputed), files
        above it are left alone, so each call rewrites at most about ``target_bytes`` per
        dataset besides the small files written since the last one. The data does not change
        (``dataChange: false``): readers of any version see the same rows, and the replaced
        files stay on disk for time travel until :meth:`maintain` vacuums them. A concurrent
        writer that wins the race makes it give up (logged at INFO, nothing changed); the next
        due compaction merges what this one left.

        Args:
            day: the ``date`` partition.
            target_bytes: the merged files' approximate size (input bytes), >= 1 MiB.

        Returns:
            The number of files merged away (0 when nothing was due or it gave up).

        Raises:
            ValueError: ``target_bytes`` below 1 MiB.
        """
        from deltalake import CommitProperties
        from deltalake.exceptions import CommitFailedError, DeltaError

        if isinstance(target_bytes, bool) or not isinstance(target_bytes, int) or target_bytes < 2**20:
            raise ValueError(f"target_bytes must be an integer >= 1 MiB, got {str(target_bytes)[:80]!r}")
        iso = as_day(day).isoformat()
        table = self._open()
        if table is None:
            return 0
        try:
            metrics = table.optimize.compact(
                partition_filters=[("date", "=", iso)],
                target_size=target_bytes,
                commit_properties=CommitProperties(
                    custom_metadata={"faultsense.operation": "compact-day", "faultsense.date": iso}
                ),
            )
        except (CommitFailedError, DeltaError) as exc:  # a concurrent writer won: leave it to the next compaction
            _log.info("ledger %s: compaction of %s gave up (%s)", self.table_uri, iso, _why(exc, 120))
            self._forget()
            return 0
        merged = int(metrics.get("numFilesRemoved", 0))
        self.compactions += 1
        self.files_compacted += merged
        return merged

    def maintain(
        self,
        *,
        retain_days: int | None = None,
        vacuum_hours: float = 168.0,
        compact: bool = True,
        z_order: Sequence[str] = ("replica",),
        today: date | None = None,
    ) -> dict[str, int]:
        """Compaction and retention: drop old days, merge small files, delete unreferenced files
        and expired log entries.

        Only days before ``today`` are compacted (today's partitions still take one commit per
        sweep; compacting them would race the sweeps), and of those only the partitions that
        still hold more than one file, so a daily run rewrites yesterday's files, not the year.

        Args:
            retain_days: keep only ``date`` partitions within this many days before ``today``
                (None: keep everything).
            vacuum_hours: delete data files no version newer than this many hours needs --
                files a replaced sweep, a compaction or a killed write left (time travel stays
                possible that far back).
            compact: merge each finished day's files into few large ones (one commit; readers
                unaffected).
            z_order: columns the merged rows are clustered by (Delta's Z-order; a sort for one
                column), so a day's row groups -- and its files, once there are several -- have
                narrow min/max statistics for them and readers filtering on them skip the rest;
                empty: plain compaction, rows in commit order.
            today: the reference day (default: today, UTC).

        Returns:
            ``rows_deleted``, ``partitions_compacted``, ``files_compacted`` (removed by
            compaction), ``files_vacuumed``, ``log_files_removed`` and the final ``version``.

        Raises:
            LedgerError: there is no ledger table here.
            ValueError: ``retain_days`` is not an integer in 0..100000.
        """
        table = self._open()
        if table is None:
            raise LedgerError(f"no ledger table at {self.table_uri}")
        today = today or datetime.now(UTC).date()
        out = {"rows_deleted": 0, "partitions_compacted": 0, "files_compacted": 0, "files_vacuumed": 0}
        if retain_days is not None:
            if isinstance(retain_days, bool) or not isinstance(retain_days, int) or not 0 <= retain_days <= 100_000:
                raise ValueError(f"retain_days must be an integer in 0..100000, got {str(retain_days)[:80]!r}")
            cutoff = (today - timedelta(days=retain_days)).isoformat()
            out["rows_deleted"] = int(table.delete(f"date < '{cutoff}'").get("num_deleted_rows", 0))
        if compact and (days := self._days_to_compact(table, today.isoformat())):
            where = [("date", "in", days)]
            if z_order:
                metrics = table.optimize.z_order(list(z_order), partition_filters=where)
            else:
                metrics = table.optimize.compact(partition_filters=where)
            out["files_compacted"] = int(metrics.get("numFilesRemoved", 0))
            out["partitions_compacted"] = len(days)
        vacuumed = table.vacuum(retention_hours=int(vacuum_hours), enforce_retention_duration=False, dry_run=False)
        out["files_vacuumed"] = len(vacuumed)
        # a checkpoint, then the log entries older than the table's log retention (30 days by
        # default) go: a year of hourly sweeps is otherwise millions of small log files
        table.create_checkpoint()
        log = f"{self._root}/{TABLE_DIR}/_delta_log"
        before = len(self._fs.get_file_info(pafs.FileSelector(log)))
        table.cleanup_metadata()
        out["log_files_removed"] = before - len(self._fs.get_file_info(pafs.FileSelector(log)))
        out["version"] = int(table.version())
        return out

    @staticmethod
    def _days_to_compact(table: Any, before: str) -> list[str]:
        """``date`` values before ``before`` whose partition (either dataset) holds several files."""
        actions = pa.table(table.get_add_actions(flatten=True))
        counts: dict[tuple[str, str], int] = {}
        for dataset, day in zip(
            actions.column("partition.dataset").to_pylist(), actions.column("partition.date").to_pylist(), strict=True
        ):
            counts[(dataset, day)] = counts.get((dataset, day), 0) + 1
        return sorted({day for (_, day), n in counts.items() if n > 1 and day < before})

    def stray_files(self, days: Collection[date | str]) -> list[str]:
        """Files in the table's partition folders of ``days`` that no Delta writer made: not named
        ``part-<n>-<uuid>-c<n>...parquet`` (a file dropped there by hand, a foreign or pre-Delta
        Parquet file). No Delta reader sees them (the log names the table's files), ours included;
        listed so that they can be named. One folder listing per dataset and day.
        """
        out = []
        for dataset in _SCHEMAS:
            for day in sorted({as_day(d).isoformat() for d in days}):
                folder = f"{self._root}/{TABLE_DIR}/dataset={dataset}/date={day}"
                try:
                    infos = self._fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
                except OSError:
                    continue
                out += [
                    i.path
                    for i in infos
                    if i.type == pafs.FileType.File
                    and not i.base_name.startswith((".", "_"))
                    and not _DELTA_FILE_RE.fullmatch(i.base_name)
                ]
        return sorted(out)
