"""Where the ledger lives, and how it is written and read: one Delta Lake table.

A :class:`LedgerStore` wraps one ledger URI: a local path, ``file://``, ``s3://``, ``gs://``,
``az://``/``abfs://``, ``hdfs://`` (what ``deltalake`` understands, :data:`DELTA_SCHEMES`). All rows live in
**one Delta table**, ``<ledger>/delta/``, partitioned by ``dataset`` (``fault_ledger``,
``probe_runs`` or ``sweeps``) and ``date`` (``YYYY-MM-DD``); each row also carries its ``batch`` (what
wrote it: a sweep partition ``faultsense-<replica>-hHH``, its failed attempt
``...-failed``, or a passive detector's scan).

* **one commit per change**: :meth:`LedgerStore.commit` replaces any set of batches of one
  day -- probe rows and fault rows together -- in a single Delta commit (one
  ``_delta_log`` entry, written atomically). A process killed at any moment leaves the table
  at the old or the new version, never between; files of an unfinished write are not in
  the log, invisible to every Delta reader, and removed by :meth:`LedgerStore.maintain`.
* **both datasets, one snapshot**: probe rows and verdict rows of a sweep are in the same
  table, so every reader of one version sees the same sweep in both.
* **concurrent writers**: Delta's optimistic concurrency refuses a commit whose
  partitions changed since it read them; :meth:`commit` then retries its (idempotent,
  whole-batch) replacement, so concurrent writers of one batch are serialized (the last
  one wins, never a mix, never duplicates).
* idempotent: writing the same (day, batch) again replaces its rows, never adds rows.
* **a day stays a few files**: every sweep commits its own small files, so every
  :data:`COMPACT_EVERY`-th table version the committing writer also merges that day's small
  files into files of about :data:`COMPACT_TARGET_BYTES` (:meth:`LedgerStore.compact_day`, one
  more commit, readers unaffected): whatever reads or rewrites a day -- the log replay, the
  commit's own predicate scan, the analytics -- then costs the same in the last hour of a day
  as in the first. Delta's own checkpoint (every 100 versions) bounds the log replay.

Batch names may hold only ``[A-Za-z0-9_-]`` (they appear in predicates and metadata).
Ledgers written before the Delta table (hive-partitioned Parquet files under
``fault_ledger/`` and ``probe_runs/``) are converted by :meth:`LedgerStore.convert_legacy`
(``faultsense ledger convert``).

:class:`LedgerStore` is the one public class, assembled from parts that each do one job: this
module commits and reads; :mod:`.maintenance` compacts, vacuums and names stray files;
:mod:`.legacy` converts a pre-Delta ledger and bulk-loads Arrow tables; :mod:`.delta` locates
and opens the table for all of them.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any
from urllib.parse import unquote

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .delta import (
    _DATA_FILE_RE,
    _LOADED,  # noqa: F401  (the per-thread table cache: tests reset it through this module)
    _PARTITION_BY,
    _SCHEMAS,
    COMPACT_EVERY,
    DELTA_SCHEMES,
    TABLE_DIR,
    TABLE_SCHEMA,
    LedgerError,
    WriteResult,
    _check_batch,
    _file_why,
    _log,
    _to_table,
    _why,
    as_day,
)
from .legacy import LedgerBulkLoads
from .maintenance import COMPACT_TARGET_BYTES, LedgerMaintenance
from .rows import ActionRow, FaultRow, ProbeRunRow, SweepRow, action_table, fault_table, probe_run_table, sweep_table
from .schema import (
    ACTIONS,
    FAULT_LEDGER,
    PROBE_RUNS,
    SWEEPS,
    make_fault_id,
)

__all__ = [
    "COMPACT_EVERY",
    "COMPACT_TARGET_BYTES",
    "DELTA_SCHEMES",
    "TABLE_DIR",
    "TABLE_SCHEMA",
    "LedgerError",
    "LedgerStore",
    "WriteResult",
    "append_faults",
    "append_passive_faults",
    "as_day",
]

_COMMIT_RETRIES = 20


class LedgerStore(LedgerMaintenance, LedgerBulkLoads):
    """The fault ledger under one URI (one Delta table, see the module docstring).

    Args:
        uri: local path (relative paths are taken from the current directory; surrounding
            whitespace is refused) or URI.
        compact_every: :meth:`commit` compacts the day it wrote when the new table version is
            a multiple of this (default :data:`COMPACT_EVERY`); 0 never.

    Raises:
        ValueError: if ``uri`` is empty, has surrounding whitespace, or no filesystem
            understands it; ``compact_every`` is negative.
    """

    def commit(
        self,
        day: date | str,
        *,
        replace: Collection[str],
        faults: Mapping[str, Sequence[FaultRow]] | None = None,
        probe_runs: Mapping[str, Sequence[ProbeRunRow]] | None = None,
        note: Mapping[str, str] | None = None,
        datasets: Collection[str] = (FAULT_LEDGER, PROBE_RUNS, SWEEPS),
        sweeps: Mapping[str, Sequence[SweepRow]] | None = None,
        actions: Mapping[str, Sequence[ActionRow]] | None = None,
    ) -> WriteResult:
        """Replace every row of the batches ``replace`` of ``day`` (every dataset) in **one** commit.

        Args:
            day: the ``date`` partition.
            replace: the batches whose rows (fault, probe and sweep rows alike) are removed.
            faults, probe_runs, sweeps: the new rows, by batch (each batch must be in
                ``replace``); an empty or missing batch just clears it.
            note: extra commit metadata (``faultsense.*`` keys), e.g. the sweep id.
            datasets: the datasets whose rows of those batches are replaced (default
                ``fault_ledger``, ``probe_runs`` and ``sweeps``; name ``actions`` to write
                ``actions``).
            sweeps: rows of the ``sweeps`` dataset, by batch (as ``faults``).
            actions: rows of the ``actions`` dataset, by batch (as ``faults``).

        Returns:
            The table path, the rows written and the table version of this commit (the
            commit's data files are :meth:`added_files` of it). When that version is a
            multiple of ``compact_every``, the day is then compacted in one more commit
            (:meth:`compact_day`; its failure is logged, never raised).

        Raises:
            ValueError: a bad batch name, or a batch to write that is not in ``replace``.
            LedgerError: the commit still conflicted after 20 retries, or the table is broken
                (one line naming the damaged log entry or data file; see :meth:`_commit_failure`).
        """
        from deltalake import CommitProperties, write_deltalake
        from deltalake.exceptions import CommitFailedError, DeltaError

        iso = as_day(day).isoformat()
        batches = sorted({_check_batch(b) for b in replace})
        if not batches:
            raise ValueError("commit needs at least one batch to replace")
        if not datasets or any(d not in _SCHEMAS for d in datasets):
            raise ValueError(f"datasets must be some of {', '.join(_SCHEMAS)}, got {sorted(datasets)}")
        parts = []
        for dataset, rows_by_batch, to_table in (
            (FAULT_LEDGER, faults or {}, fault_table),
            (PROBE_RUNS, probe_runs or {}, probe_run_table),
            (SWEEPS, sweeps or {}, sweep_table),
            (ACTIONS, actions or {}, action_table),
        ):
            for batch, rows in rows_by_batch.items():
                if batch not in batches or dataset not in datasets:
                    raise ValueError(f"batch {batch!r} of {dataset} is written but not replaced ({batches}, {sorted(datasets)})")
                parts.append(_to_table(to_table(list(rows)), dataset, iso, batch))  # type: ignore[arg-type]
        data = pa.concat_tables(parts) if parts else TABLE_SCHEMA.empty_table()
        names = ", ".join(f"'{b}'" for b in batches)
        kinds = ", ".join(f"'{d}'" for d in sorted(datasets))
        predicate = f"dataset IN ({kinds}) AND date = '{iso}' AND batch IN ({names})"
        metadata = {"faultsense.batches": ",".join(batches), "faultsense.date": iso, **(note or {})}
        table = self._open()
        if table is None:
            self._create()
            table = self._open()
        for attempt in range(_COMMIT_RETRIES):
            try:
                # the loaded table is written through, not re-opened: loading the log costs per active file
                write_deltalake(
                    table,
                    data,
                    mode="overwrite",
                    predicate=predicate,
                    partition_by=_PARTITION_BY,
                    schema_mode="merge",  # a table of an older schema version gains the new columns
                    commit_properties=CommitProperties(custom_metadata=metadata, max_commit_retries=10),
                )
                break
            except CommitFailedError as exc:  # a concurrent writer changed these partitions: redo the whole replacement
                self.commit_retries += 1
                _log.info(
                    "ledger %s: commit of %s on %s conflicted (%s); retry %d of %d",
                    self.table_uri, ",".join(batches), iso, _why(exc, 120), attempt + 1, _COMMIT_RETRIES - 1,
                )  # fmt: skip
                time.sleep(0.02 * (attempt + 1))
                table.update_incremental()
            except (OSError, pa.ArrowException, DeltaError) as exc:  # a damaged file among the ones it replaces
                raise LedgerError(self._commit_failure(batches, iso, exc)) from None
        else:
            raise LedgerError(f"ledger table {self.table_uri}: commit of {batches} still conflicts after {_COMMIT_RETRIES} tries")
        version = int(table.version())
        if self.compact_every and version % self.compact_every == 0:
            self.compact_day(iso)
        return WriteResult(path=self.table_uri, rows=data.num_rows, version=version, batch=",".join(batches))

    def added_files(self, version: int, dataset: str) -> list[str]:
        """The data files of ``dataset`` that the commit ``version`` added, as paths relative
        to the table (``dataset=.../date=.../part-...parquet``), from that commit's one log entry
        (``_delta_log/<version>.json``): what a sweep's commit wrote, found without listing or
        loading the day's other files.

        Raises:
            LedgerError: the log entry is gone (the log was cleaned past it) or does not parse.
            ValueError: an unknown ``dataset`` or a negative ``version``.
        """
        if dataset not in _SCHEMAS:
            raise ValueError(f"dataset must be one of {', '.join(_SCHEMAS)}, got {dataset!r}")
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise ValueError(f"version must be an integer >= 0, got {str(version)[:80]!r}")
        entry = f"{self._root}/{TABLE_DIR}/_delta_log/{version:020d}.json"
        try:
            with self._fs.open_input_stream(entry) as f:
                lines = f.read().decode("utf-8").splitlines()
            actions = [json.loads(line) for line in lines if line.strip()]
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise LedgerError(
                f"ledger table {self.table_uri}: log entry of version {version} cannot be read ({_why(exc, 100)})"
            ) from None
        return [
            unquote(a["add"]["path"])
            for a in actions
            if isinstance(a, dict)
            and isinstance(a.get("add"), dict)
            and a["add"].get("partitionValues", {}).get("dataset") == dataset
        ]

    def _commit_failure(self, batches: Sequence[str], iso: str, exc: BaseException) -> str:
        """One line for a commit that failed on a damaged table: the data file the error names
        (one of the files the replacement had to read: this replica's own earlier rows of the
        day) or the log entry that does not parse, else the error's first line."""
        head = f"ledger table {self.table_uri}: cannot commit {','.join(batches)} of {iso}"
        if found := _DATA_FILE_RE.search(str(exc)):
            return (
                f"{head}: its data file {self.table_uri}/{found.group()} cannot be read ({_file_why(exc, 120)}); "
                "other partitions are not affected (docs/ledger.md, 'A damaged ledger')"
            )
        where = self._bad_log_entry()
        return f"{head}: {where}" if where else f"{head}: {_why(exc)}"

    def append_batches(
        self,
        day: date | str,
        *,
        faults: Mapping[str, Sequence[FaultRow]] | None = None,
        probe_runs: Mapping[str, Sequence[ProbeRunRow]] | None = None,
    ) -> int:
        """Add batches that are not in the table yet, in one append commit (nothing replaced).

        For bulk loads of new batches (a generated benchmark ledger): no predicate to evaluate,
        so any number of batches costs one small commit. A batch already in the table would
        get its rows twice -- use :meth:`commit` for anything a re-run may write again.

        Returns:
            The new table version.

        Raises:
            ValueError: a bad batch name.
        """
        from deltalake import CommitProperties, write_deltalake

        iso = as_day(day).isoformat()
        parts = []
        for dataset, by_batch, to_table in (
            (FAULT_LEDGER, faults or {}, fault_table),
            (PROBE_RUNS, probe_runs or {}, probe_run_table),
        ):
            if not by_batch:
                continue
            rows = [r for batch_rows in by_batch.values() for r in batch_rows]
            part = _to_table(to_table(rows), dataset, iso, "-")  # type: ignore[arg-type]  # one table, then the batches
            names = pa.array([_check_batch(b) for b, batch_rows in by_batch.items() for _ in batch_rows], pa.string())
            parts.append(part.set_column(part.schema.get_field_index("batch"), TABLE_SCHEMA.field("batch"), names))
        table = self._open()
        if table is None:
            self._create()
            table = self._open()
        data = pa.concat_tables(parts) if parts else TABLE_SCHEMA.empty_table()
        write_deltalake(
            table, data, mode="append", partition_by=_PARTITION_BY, schema_mode="merge",
            commit_properties=CommitProperties(custom_metadata={"faultsense.operation": "append-batches"}),
        )  # fmt: skip
        return int(table.version())

    def write_faults(self, rows: Sequence[FaultRow], *, day: date | str, batch: str) -> WriteResult:
        """Write (or replace) one batch of fault rows for ``day`` (one commit).

        Args:
            rows: the batch's rows; may be empty (records that the batch found nothing,
                and clears rows an earlier run of the same batch wrote).
            day: the ``date`` partition.
            batch: unique per writer and window, e.g. ``"faultsense-sim-64-h08"`` or
                ``"minder-2026-11-30T08"``; start it with the detector's name.

        Returns:
            The table, the row count and the new version.
        """
        return self.commit(day, replace=[batch], faults={batch: rows}, datasets=[FAULT_LEDGER])

    def write_probe_runs(self, rows: Sequence[ProbeRunRow], *, day: date | str, batch: str) -> WriteResult:
        """Write (or replace) one batch of probe measurements for ``day`` (see :meth:`write_faults`)."""
        return self.commit(day, replace=[batch], probe_runs={batch: rows}, datasets=[PROBE_RUNS])

    def delete_batch(self, dataset: str, *, day: date | str, batch: str) -> bool:
        """Remove one batch's rows of ``dataset`` (one commit); True if it had any."""
        if dataset not in _SCHEMAS:
            raise ValueError(f"dataset must be one of {', '.join(_SCHEMAS)}, got {dataset!r}")
        table = self._open()
        if table is None:
            return False
        iso, batch = as_day(day).isoformat(), _check_batch(batch)
        metrics = table.delete(f"dataset = '{dataset}' AND date = '{iso}' AND batch = '{batch}'")
        return bool(metrics.get("num_deleted_rows", 0))

    def files(self, dataset: str) -> list[str]:
        """The data files of ``dataset`` in the table's current version, sorted (empty without a table)."""
        if dataset not in _SCHEMAS:
            raise ValueError(f"dataset must be one of {', '.join(_SCHEMAS)}, got {dataset!r}")
        table = self._open()
        if table is None:
            return []
        return sorted(f for f in table.file_uris() if f"/dataset={dataset}/" in f)

    def snapshot(self) -> tuple[int, pa.Schema] | None:
        """The table's current version and Arrow schema, from one load of its log (None without a table)."""
        table = self._open()
        return None if table is None else (int(table.version()), pa.schema(table.schema().to_arrow()))

    def table_schema(self) -> pa.Schema | None:
        """The Arrow schema of the table's current version (None without a table)."""
        table = self._open()
        return None if table is None else pa.schema(table.schema().to_arrow())

    def read_schema(self, path: str) -> pa.Schema:
        """The Parquet schema stored in one file of the ledger."""
        return pq.read_schema(path, filesystem=self._fs)

    def read_table(
        self,
        dataset: str,
        *,
        version: int | None = None,
        filter: ds.Expression | None = None,
        files: Mapping[str, str | Collection[str]] | None = None,
        columns: Sequence[str] | None = None,
        since: str | None = None,
        skipped: list[str] | None = None,
        added_in: int | None = None,
    ) -> pa.Table:
        """Rows of ``dataset`` (its own columns plus ``date`` and ``batch``) at ``version`` (default: current).

        Args:
            filter: rows to keep (an Arrow expression, applied to the rows read).
            files: which data files to open at all, as ``{column: value or values}`` equalities,
                e.g. ``{"date": "2026-11-30", "replica": "sim-64"}``: matched exactly on the
                partition columns (``date``) and against each file's min/max statistics in the
                Delta log on the others (``replica``, ``batch``), so a file that cannot hold a
                matching row is never opened. The same equalities are also applied to the rows.
            columns: read only these (default: all of the dataset's, ``date`` and ``batch``).
            since: open only ``date`` partitions on or after this ISO day (and keep only their rows).
            skipped: when given, a data file of the table that cannot be read (truncated, not
                Parquet, another schema) is left out and named here as one line
                ``"<file>: <why>"``, and the other files' rows are returned; when None, such a
                file raises.

        Raises:
            LedgerError: the table exists but cannot be read (its log is damaged: the entry is
                named), or, without ``skipped``, one of the files to open cannot be (named).
        """
        schema = _SCHEMAS[dataset]
        columns = list(columns) if columns is not None else [f.name for f in schema] + ["date", "batch"]
        table = self._open(version)
        if table is None:
            empty = pa.schema([*schema, pa.field("date", pa.string()), pa.field("batch", pa.string())]).empty_table()
            return empty.select(columns)
        cond = ds.field("dataset") == dataset
        prune: list[tuple[str, str, Any]] = [("dataset", "=", dataset)]
        for name, want in (files or {}).items():
            values = [want] if isinstance(want, str) else sorted(want)
            prune.append((name, "in", values))
            cond = cond & ds.field(name).isin(values)
        if since is not None:
            prune.append(("date", ">=", since))
            cond = cond & (ds.field("date") >= since)
        if filter is not None:
            cond = cond & filter
        present = set(pa.schema(table.schema().to_arrow()).names)
        wanted = [c for c in columns if c in present]
        if added_in is not None:
            paths, parts = self._partitioned(self.added_files(added_in, dataset))
        else:
            paths, parts = self._files(table, prune)
        try:
            got = self._dataset(table, paths, parts).to_table(columns=wanted, filter=cond)
        except (OSError, pa.ArrowException) as exc:  # a damaged file: find it, then skip or name it
            got = self._read_file_by_file(table, paths, parts, wanted, cond, exc, skipped)
        # a table written before schema version 2 has no column added since: read it null
        for name in (c for c in columns if c not in present):
            got = got.append_column(name, pa.nulls(got.num_rows, TABLE_SCHEMA.field(name).type))
        got = got.select(columns)
        full = {f.name: f.with_nullable(True) for f in schema} | {
            "date": pa.field("date", pa.string()),
            "batch": pa.field("batch", pa.string()),
        }
        return got.cast(pa.schema([full[c] for c in columns]))

    @staticmethod
    def _files(table: Any, prune: list[tuple[str, str, Any]]) -> tuple[list[str], list[ds.Expression]]:
        """The table's files that ``prune`` selects (paths relative to the table) and each one's
        partition values as an expression (see :meth:`_dataset`)."""
        return LedgerStore._partitioned(
            uri[uri.index("/dataset=") + 1 :] for uri in table.file_uris(file_pruning_predicate=prune)
        )

    @staticmethod
    def _partitioned(relative: Iterable[str]) -> tuple[list[str], list[ds.Expression]]:
        """Table-relative file paths and each one's partition values as an expression."""
        paths, parts = [], []
        for rel in relative:
            values = dict(p.split("=", 1) for p in rel.split("/")[:2])
            paths.append(rel)
            parts.append((ds.field("dataset") == unquote(values["dataset"])) & (ds.field("date") == unquote(values["date"])))
        return paths, parts

    def _dataset(self, table: Any, paths: list[str], parts: list[ds.Expression]) -> ds.Dataset:
        """The Arrow dataset of the table's files ``paths`` (from :meth:`_files`; see :meth:`read_table`).

        The files are chosen by deltalake (``file_uris``: partition values and log statistics,
        in Rust) and read through the ledger's own Arrow filesystem, each with its partition
        values (``dataset``, ``date``; Delta keeps them in the path, not in the file).
        ``DeltaTable.to_pyarrow_dataset`` would do the same but build a per-file statistics
        expression in Python for every file of the table, whatever the predicate keeps.
        """
        schema = pa.schema(table.schema().to_arrow())
        files_fs = pafs.SubTreeFileSystem(f"{self._root}/{TABLE_DIR}", self._fs)
        return ds.FileSystemDataset.from_paths(
            paths, schema=schema, format=ds.ParquetFileFormat(), filesystem=files_fs, partitions=parts
        )

    def _read_file_by_file(
        self,
        table: Any,
        paths: list[str],
        parts: list[ds.Expression],
        columns: list[str],
        cond: ds.Expression,
        error: BaseException,
        skipped: list[str] | None,
    ) -> pa.Table:
        """The read of :meth:`read_table` again, one file at a time, after ``error``: a file that
        fails is named in ``skipped`` (or raised, one line, when ``skipped`` is None). Costs what
        the whole read costs, on the error path only."""
        got, bad = [], []
        for path, part in zip(paths, parts, strict=True):
            try:
                got.append(self._dataset(table, [path], [part]).to_table(columns=columns, filter=cond))
            except (OSError, pa.ArrowException) as exc:
                line = f"{self.table_uri}/{path}: {_file_why(exc)}"
                if skipped is None:
                    raise LedgerError(f"ledger file {line}") from None
                bad.append(line)
        if not bad:  # no single file fails: the error was not one file's
            raise LedgerError(f"ledger table {self.table_uri} cannot be read: {_why(error, 200)}") from None
        for line in bad:
            _log.warning("ledger: skipped unreadable file %s", line)
        assert skipped is not None
        skipped.extend(bad)
        return pa.concat_tables(got) if got else self._dataset(table, [], []).to_table(columns=columns, filter=cond)

    def _read(
        self,
        dataset: str,
        since: date | str | None,
        replica: str | None,
        extra: ds.Expression | None,
        days: Collection[str] | None = None,
        skipped: list[str] | None = None,
        keep_batch: bool = False,
    ) -> pd.DataFrame:
        cond = ds.scalar(True)
        files: dict[str, str | Collection[str]] = {}
        if days is not None:
            files["date"] = sorted(as_day(d).isoformat() for d in days)
        if replica is not None:
            files["replica"] = replica
        if extra is not None:
            cond = cond & extra
        first = as_day(since).isoformat() if since is not None else None
        table = self.read_table(dataset, filter=cond, files=files, since=first, skipped=skipped)
        if not keep_batch:
            table = table.drop_columns(["batch"])
        return table.to_pandas(types_mapper=_nullable_ints)

    def read_faults(
        self,
        *,
        since: date | str | None = None,
        replica: str | None = None,
        detector: str | None = None,
        days: Collection[date | str] | None = None,
        skipped: list[str] | None = None,
        batch: bool = False,
    ) -> pd.DataFrame:
        """Fault rows of the table's current version, oldest first, with the partition ``date``.

        Args:
            since: keep partitions on or after this day.
            replica: keep one replica (only files whose statistics can hold it are opened).
            detector: keep one detector.
            days: keep only these ``date`` partitions (no other partition's file is opened).
            skipped: skip unreadable data files and name them here (see :meth:`read_table`).
            batch: keep the ``batch`` column (what wrote each row, e.g. ``faultsense-sim-64-h08``).

        Returns:
            A DataFrame with the :data:`.schema.FAULT_SCHEMA` columns plus ``date`` (and
            ``batch``) (``gpu``, ``peer_gpu``, ``phase``, ``probes_used`` as nullable ``Int32``).

        Raises:
            LedgerError: the table exists but cannot be read.
        """
        extra = ds.field("detector") == detector if detector is not None else None
        df = self._read(FAULT_LEDGER, since, replica, extra, _days(days), skipped, keep_batch=batch)
        return df.sort_values(["detected_at", "replica", "component"], kind="stable").reset_index(drop=True)

    def read_probe_runs(
        self,
        *,
        since: date | str | None = None,
        replica: str | None = None,
        days: Collection[date | str] | None = None,
        skipped: list[str] | None = None,
    ) -> pd.DataFrame:
        """Probe measurements with the partition ``date`` as a column (see :meth:`read_faults`)."""
        return self._read(PROBE_RUNS, since, replica, None, _days(days), skipped)

    def read_actions(
        self,
        *,
        since: date | str | None = None,
        replica: str | None = None,
        days: Collection[date | str] | None = None,
        batch: str | None = None,
        skipped: list[str] | None = None,
    ) -> pd.DataFrame:
        """Rows of the ``actions`` dataset (schema version 3), oldest decision first, with the
        partition ``date`` and the ``batch`` (see :meth:`read_faults` for the arguments; ``batch``
        keeps one batch, e.g. ``actions-sim-64-h08``). A table written before version 3 has
        none: an empty frame with the columns.

        Raises:
            LedgerError: the table exists but cannot be read.
        """
        files: dict[str, str | Collection[str]] = {}
        if days is not None:
            files["date"] = sorted(as_day(d).isoformat() for d in days)
        if replica is not None:
            files["replica"] = replica
        if batch is not None:
            files["batch"] = _check_batch(batch)
        first = as_day(since).isoformat() if since is not None else None
        table = self.read_table(ACTIONS, files=files, since=first, skipped=skipped)
        df = table.to_pandas(types_mapper=_nullable_ints)
        return df.sort_values(["decided_at", "replica", "action", "component"], kind="stable").reset_index(drop=True)


def _days(days: Collection[date | str] | None) -> list[str] | None:
    return None if days is None else [as_day(d).isoformat() for d in days]


def _nullable_ints(t: pa.DataType) -> object:
    return pd.Int32Dtype() if t == pa.int32() else None


def append_faults(uri: str, rows: Sequence[FaultRow], *, batch: str, day: date | str | None = None) -> WriteResult:
    """Add one batch of fault rows to the ledger at ``uri`` (the passive detectors' entry point).

    Writing the same ``batch`` for the same day again replaces it (one commit), so a re-run
    never duplicates rows.

    Args:
        uri: the ledger URI (the fleet file's ``ledger``).
        rows: fault rows, e.g. ``detector="minder"``, ``component_kind="machine"``,
            ``component="machine:node-07"``, ``gpu``/``peer_gpu`` None.
        batch: e.g. ``"minder-2026-11-30T08"`` (start with the detector's name).
        day: the ``date=`` partition; default the UTC date of the first row's ``detected_at``.

    Raises:
        ValueError: if ``rows`` is empty and ``day`` is not given, or a name is invalid.
    """
    if day is None:
        if not rows:
            raise ValueError("append_faults needs day= when rows is empty")
        day = rows[0].detected_at.astimezone(UTC).date()
    return LedgerStore(uri).write_faults(rows, day=day, batch=batch)


def append_passive_faults(
    uri: str,
    found: Sequence[tuple[str, datetime]],
    *,
    detector: str,
    source: str,
    component_kind: str,
    window: str,
    batch_key: str,
    sweep_id: str,
    day: date,
    suspects: Collection[str] = (),
) -> WriteResult:
    """Write one scan of a passive detector (Minder, FlowPulse) as one idempotent ledger batch.

    Every found component becomes a ``status="confirmed"`` :class:`FaultRow` (``"suspect"``
    for those in ``suspects``) whose
    ``fault_id`` derives from (detector, source, window, component), and the batch is named
    ``<detector>-<source>-<sha256(batch_key)[:12]>``, so re-scanning the same window replaces
    its rows instead of adding them; a scan that finds nothing still writes its (empty)
    batch, which clears what an earlier scan of that window wrote.

    Args:
        uri: the ledger URI.
        found: ``(component, detected_at)`` per fault, e.g. ``("machine:node-07", t)``;
            ``detected_at`` timezone-aware.
        detector: ``"minder"`` or ``"flowpulse"`` (any ledger detector name).
        source: the cluster or fabric name, stored in the ``replica`` column.
        component_kind: one of :data:`.schema.COMPONENT_KINDS`, e.g. ``"machine"``.
        window: the scanned window as text (part of every ``fault_id``).
        batch_key: what identifies the scanned data (hashed into the batch name).
        sweep_id: the run that scanned (the Dagster run id).
        day: the ``date=`` partition to write.
        suspects: components the detector could not pin down (``status="suspect"``).

    Raises:
        ValueError: a name or row field is invalid (see :class:`FaultRow`).
    """
    rows = [
        FaultRow(
            fault_id=make_fault_id(detector, source, window, component), detected_at=detected_at,
            sweep_id=sweep_id, replica=source, detector=detector, component_kind=component_kind,
            component=component, status="suspect" if component in suspects else "confirmed",
        )
        for component, detected_at in found
    ]  # fmt: skip
    digest = hashlib.sha256(batch_key.encode()).hexdigest()[:12]
    return append_faults(uri, rows, batch=f"{detector}-{source}-{digest}", day=day)
