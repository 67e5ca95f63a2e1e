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
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .rows import ActionRow, FaultRow, ProbeRunRow, SweepRow, action_table, fault_table, probe_run_table, sweep_table
from .schema import (
    ACTION_SCHEMA,
    ACTIONS,
    ADDED_IN_VERSION_2,
    ADDED_IN_VERSION_3,
    FAULT_LEDGER,
    FAULT_SCHEMA,
    PROBE_RUN_SCHEMA,
    PROBE_RUNS,
    SWEEP_SCHEMA,
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

#: The Delta table's folder under the ledger URI.
TABLE_DIR = "delta"
#: URI schemes the Delta table can live on (``deltalake``'s object stores).
DELTA_SCHEMES = ("file", "s3", "s3a", "gs", "az", "abfs", "abfss", "azure", "hdfs", "viewfs", "lakefs")
_BATCH_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,199}")
_SCHEMAS = {FAULT_LEDGER: FAULT_SCHEMA, PROBE_RUNS: PROBE_RUN_SCHEMA, SWEEPS: SWEEP_SCHEMA, ACTIONS: ACTION_SCHEMA}
_LEGACY = (FAULT_LEDGER, PROBE_RUNS)  # the datasets a pre-Delta ledger can hold
_PARTITION_BY = ["dataset", "date"]
_KEYS = ("dataset", "date", "batch")
_COMMIT_RETRIES = 20
#: A data file's path inside the table, as deltalake and Arrow quote it in their errors.
_DATA_FILE_RE = re.compile(r"dataset=[^/\s'\"]+/date=[^/\s'\"]+/[^/\s'\":]+\.parquet")
_QUOTED_FILE_RE = re.compile(r"(Could not open Parquet input source |for file )?'?[^\s']*dataset=[^\s']+\.parquet'?:?")
_COMMIT_ENTRY_RE = re.compile(r"\d{20}\.json")
#: How Delta writers (delta-rs, Spark) name data files.
_DELTA_FILE_RE = re.compile(r"part-\d{5}-[0-9a-f-]{36}[-.]c\d{3}(\.[a-z0-9]+)?\.parquet")
_log = logging.getLogger(__name__)

#: Every this many table versions, :meth:`LedgerStore.commit` also compacts the day it wrote
#: (:meth:`LedgerStore.compact_day`). At 200 replicas swept hourly that is about every 15
#: minutes, and a day's partitions hold at most ~50 sweeps' small files besides the merged ones.
COMPACT_EVERY = 50
#: The size (bytes of input) up to which :meth:`LedgerStore.compact_day` merges a day's small
#: files; a file above it is never rewritten again by it, so one compaction rewrites at most
#: about this much besides the new small files.
COMPACT_TARGET_BYTES = 4 * 2**20


#: Per thread, the Delta tables loaded so far (by table URI): a later :meth:`LedgerStore._open`
#: of the same table brings it up to date with ``update_incremental`` (the new log entries
#: only) instead of loading its whole log again -- a full load costs per active file (~90 ms
#: CPU at 5,000 files), and one sweep run opens the table several times (checks, commit).
_LOADED = threading.local()


def _table_schema() -> pa.Schema:
    fields: dict[str, pa.Field] = {
        "dataset": pa.field("dataset", pa.string(), nullable=False),
        "date": pa.field("date", pa.string(), nullable=False),
        "batch": pa.field("batch", pa.string(), nullable=False),
    }
    for schema in (FAULT_SCHEMA, PROBE_RUN_SCHEMA, SWEEP_SCHEMA, ACTION_SCHEMA):
        for f in schema:
            if f.name not in fields:
                keep = f.name in ("sweep_id", "replica")
                fields[f.name] = pa.field(f.name, f.type, nullable=not keep)
    return pa.schema(list(fields.values()))


#: The Delta table's columns: ``dataset``, ``date``, ``batch``, then every column of
#: :data:`.schema.FAULT_SCHEMA`, :data:`.schema.PROBE_RUN_SCHEMA`, :data:`.schema.SWEEP_SCHEMA`
#: and :data:`.schema.ACTION_SCHEMA` (shared ones once; a row of one dataset has the others'
#: columns null).
TABLE_SCHEMA = _table_schema()


class LedgerError(ValueError):
    """The ledger cannot be read or written as asked (one line naming the place)."""


def _why(exc: BaseException, limit: int = 160) -> str:
    """What went wrong, in one line: the first line of ``exc``'s message (deltalake appends a
    Rust backtrace on the next ones), whitespace collapsed, cut to ``limit`` characters."""
    lines = str(exc).strip().splitlines()
    text = " ".join(lines[0].split()) if lines else ""
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _file_why(exc: BaseException, limit: int = 160) -> str:
    """:func:`_why` of an error about one data file, without the file's path (the line names it
    already): ``ArrowInvalid: Parquet magic bytes not found in footer. ...``."""
    text = _QUOTED_FILE_RE.sub("", _why(exc, 10_000))
    text = " ".join(text.replace(" :", ":").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class WriteResult:
    """One commit: the table's ``path`` (as the store shows it), the ``rows`` it wrote, the
    table ``version`` it created and the ``batch`` (or comma-joined batches) it replaced."""

    path: str
    rows: int
    version: int = -1
    batch: str = ""


def as_day(day: date | str) -> date:
    """A partition day from a ``date`` or an ISO ``"YYYY-MM-DD"`` string.

    Raises:
        ValueError: naming the value when it is not a date.
    """
    if isinstance(day, date):
        return day if type(day) is date else date(day.year, day.month, day.day)
    try:
        return date.fromisoformat(str(day))
    except ValueError:
        raise ValueError(f"day must be a date or 'YYYY-MM-DD', got {str(day)[:80]!r}") from None


def _check_batch(batch: str) -> str:
    if not isinstance(batch, str) or not _BATCH_RE.fullmatch(batch):
        raise ValueError(f"batch must be 1-200 of A-Z, a-z, 0-9, '_' and '-' (starting alphanumeric), got {str(batch)[:80]!r}")
    return batch


def _redact(uri: str) -> str:
    """The URI without any user:password part, safe to log and show in the UI."""
    parts = urlsplit(uri)
    if parts.scheme and "@" in parts.netloc:
        return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
    return uri


def _resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem and root path of ``uri``: pyarrow's own first, then fsspec's."""
    if "://" not in uri:
        return pafs.LocalFileSystem(), str(Path(uri).expanduser().resolve())
    try:
        fs, root = pafs.FileSystem.from_uri(uri)
        return fs, root.rstrip("/")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        import fsspec

        fs, root = fsspec.core.url_to_fs(uri)
        return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), root.rstrip("/")


def _to_table(table: pa.Table, dataset: str, day: str, batch: str) -> pa.Table:
    """``table`` (one dataset's schema) as rows of :data:`TABLE_SCHEMA`."""
    n = table.num_rows
    columns = []
    for f in TABLE_SCHEMA:
        if f.name == "dataset":
            columns.append(pa.array([dataset] * n, pa.string()))
        elif f.name == "date":
            columns.append(pa.array([day] * n, pa.string()))
        elif f.name == "batch":
            columns.append(pa.array([batch] * n, pa.string()))
        elif f.name in table.column_names:
            columns.append(table.column(f.name).cast(f.type))
        else:
            columns.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(columns, schema=TABLE_SCHEMA)


class LedgerStore:
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

    def __init__(self, uri: str, *, compact_every: int = COMPACT_EVERY) -> None:
        if not isinstance(uri, str) or not uri.strip():
            raise ValueError(f"ledger URI must be a non-empty string, got {str(uri)[:80]!r}")
        if uri != uri.strip() or any(ord(c) < 32 for c in uri):
            raise ValueError(f"ledger URI must not have surrounding whitespace or control characters, got {_redact(uri)[:80]!r}")
        scheme = urlsplit(uri).scheme.lower() if "://" in uri else ""
        if scheme and scheme not in DELTA_SCHEMES:
            raise ValueError(
                f"ledger URI scheme {scheme}:// is not supported by the ledger's Delta table "
                f"(use a local path or one of {', '.join(s + '://' for s in DELTA_SCHEMES)}), got {_redact(uri)[:80]!r}"
            )
        try:
            self._fs, self._root = _resolve(uri)
        except (ValueError, ImportError, OSError) as exc:
            raise ValueError(f"cannot open ledger {_redact(uri)[:80]!r}: {str(exc)[:120]}") from None
        if isinstance(compact_every, bool) or not isinstance(compact_every, int) or compact_every < 0:
            raise ValueError(f"compact_every must be an integer >= 0, got {str(compact_every)[:80]!r}")
        self.uri = uri
        self.compact_every = compact_every
        #: Commit conflicts this store met and retried (:meth:`commit`), each also logged at INFO.
        self.commit_retries = 0
        #: Day compactions this store's commits ran (:meth:`compact_day`), and files they merged.
        self.compactions = 0
        self.files_compacted = 0
        self._table_uri = f"{self._root}/{TABLE_DIR}" if "://" not in uri else f"{uri.rstrip('/')}/{TABLE_DIR}"

    def __repr__(self) -> str:
        return f"LedgerStore({self.display_uri!r})"

    @property
    def display_uri(self) -> str:
        """The ledger location without credentials (what logs and the UI show)."""
        return self._root if "://" not in self.uri else _redact(self.uri)

    @property
    def table_uri(self) -> str:
        """The Delta table's location without credentials (``<ledger>/delta``)."""
        return f"{self.display_uri.rstrip('/')}/{TABLE_DIR}"

    def root_kind(self) -> str:
        """What the ledger URI points at: ``"directory"``, ``"file"`` or ``"missing"``.

        An object store has no real directories: a bucket prefix with nothing under it reads
        as ``"missing"``.

        Raises:
            LedgerError: the location cannot even be looked at (a name over 255 bytes, no
                permission); one line naming it, cut to 200 characters.
        """
        try:
            kind = self._fs.get_file_info(self._root).type
        except OSError as exc:
            where = self.display_uri if len(self.display_uri) <= 200 else self.display_uri[:200] + "..."
            text = str(exc)
            reason = text.rsplit("Detail: ", 1)[1] if "Detail: " in text else (exc.strerror or text)[:120]
            raise LedgerError(f"ledger {where} cannot be looked at: {reason}") from None
        if kind == pafs.FileType.Directory:
            return "directory"
        return "missing" if kind == pafs.FileType.NotFound else "file"

    # -- the Delta table -----------------------------------------------------------------------

    def _open(self, version: int | None = None) -> Any:
        """The Delta table (at ``version``, default the latest), or None when there is none yet."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        cache: dict[str, Any] = _LOADED.__dict__.setdefault("tables", {})
        try:
            if version is None and (known := cache.get(self._table_uri)) is not None:
                try:
                    known.update_incremental()  # only the commits since: milliseconds, not a full load
                    return known
                except Exception:  # the table was replaced or its log cleaned under us: load it afresh
                    cache.pop(self._table_uri, None)
            table = DeltaTable(self._table_uri, version=version)
        except TableNotFoundError:
            return None
        except Exception as exc:  # a corrupt log, a foreign folder: one line naming the table (and the entry)
            where = self._bad_log_entry()
            why = f"{where}; no Delta reader or writer gets past it (restore it from a backup)" if where else _why(exc)
            raise LedgerError(f"ledger table {self.table_uri} cannot be read: {why}") from None
        if version is None:
            cache[self._table_uri] = table
        return table

    def _bad_log_entry(self) -> str | None:
        """The first commit entry of ``_delta_log`` that is not JSON lines of action objects, as
        ``"log entry _delta_log/<version>.json line 3 is not valid JSON (...)"``; None when every
        entry parses (the table is broken some other way). Only the entries after the last
        checkpoint are read (those a reader replays); called on the error path only.
        """
        log = f"{self._root}/{TABLE_DIR}/_delta_log"
        try:
            infos = self._fs.get_file_info(pafs.FileSelector(log, allow_not_found=True))
        except OSError:
            return None
        after = -1
        try:
            with self._fs.open_input_stream(f"{log}/_last_checkpoint") as f:
                after = int(json.loads(f.read())["version"])
        except Exception:  # no checkpoint (or an unreadable pointer): replay from the start
            after = -1
        entries = sorted(
            (i for i in infos if _COMMIT_ENTRY_RE.fullmatch(i.base_name) and int(i.base_name[:20]) > after),
            key=lambda i: i.base_name,
        )
        for info in entries:
            name = f"log entry _delta_log/{info.base_name}"
            try:
                with self._fs.open_input_stream(info.path) as f:
                    text = f.read().decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                return f"{name} cannot be read ({_why(exc, 100)})"
            if not text.strip():
                return f"{name} is empty"
            for number, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    action = json.loads(line)
                except ValueError as exc:
                    return f"{name} line {number} is not valid JSON ({_why(exc, 100)})"
                if not isinstance(action, dict):
                    return f"{name} line {number} is not a JSON object"
        return None

    def _create(self) -> None:
        from deltalake import DeltaTable

        try:
            DeltaTable.create(self._table_uri, schema=TABLE_SCHEMA, partition_by=_PARTITION_BY, mode="ignore")
        except Exception:
            if self._open() is None:  # a concurrent creator won: fine; anything else: raise
                raise

    def version(self) -> int | None:
        """The table's current version, or None when nothing was written yet."""
        table = self._open()
        return None if table is None else int(table.version())

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

    def _forget(self) -> None:
        """Drop this table from the per-thread cache (the next :meth:`_open` loads it afresh)."""
        getattr(_LOADED, "tables", {}).pop(self._table_uri, None)

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

    # -- reading -----------------------------------------------------------------------------

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

    # -- legacy Parquet ledgers -----------------------------------------------------------------

    def legacy_files(self) -> list[str]:
        """Parquet files of a pre-Delta ledger (``fault_ledger/`` and ``probe_runs/`` hive folders)."""
        out = []
        for dataset in _LEGACY:
            selector = pafs.FileSelector(f"{self._root}/{dataset}", recursive=True, allow_not_found=True)
            out += [
                i.path
                for i in self._fs.get_file_info(selector)
                if i.type == pafs.FileType.File and i.base_name.endswith(".parquet") and not i.base_name.startswith((".", "_"))
            ]
        return sorted(out)

    def convert_legacy(self, *, move_aside: bool = True) -> tuple[int, list[str]]:
        """Copy a pre-Delta Parquet ledger into the Delta table, one commit per day.

        Batch names follow the files: a sweep's ``<replica>-hHH-phase1/-phase2`` probe files
        and its ``faultsense-<replica>-hHH`` fault file become batch
        ``faultsense-<replica>-hHH``, ``<replica>-hHH-failed`` becomes
        ``faultsense-<replica>-hHH-failed``, any other file keeps its name. Re-running
        replaces, never duplicates. With ``move_aside`` the old folders are renamed to
        ``legacy-parquet/<dataset>`` afterwards, so nothing reads them twice.

        Returns:
            The rows converted and the files skipped, each as ``"<path>: <why>"`` (a corrupt
            or foreign file is named and skipped; it never stops the others).
        """
        by_day: dict[str, dict[str, dict[str, list[pa.Table]]]] = {}
        skipped: list[str] = []
        for path in self.legacy_files():
            dataset = next(d for d in _LEGACY if f"/{d}/" in path)
            folder, name = path.rsplit("/", 2)[-2:]
            if not folder.startswith("date="):
                skipped.append(f"{path}: not under a date= folder")
                continue
            try:
                day = as_day(folder[len("date=") :]).isoformat()
                table = pq.read_table(path, filesystem=self._fs)
                expected = _SCHEMAS[dataset]
                missing = [f.name for f in expected if f.name not in table.column_names]
                for name in [m for m in missing if m in ADDED_IN_VERSION_2 + ADDED_IN_VERSION_3]:  # a version-1 or -2 file
                    table = table.append_column(expected.field(name), pa.nulls(table.num_rows, expected.field(name).type))
                    missing.remove(name)
                if missing:
                    raise ValueError(f"not a {dataset} file (missing columns {', '.join(missing[:4])})")
                table = table.select([f.name for f in expected]).cast(expected)
            except (OSError, ValueError, pa.ArrowException) as exc:
                skipped.append(f"{path}: {' '.join(str(exc).split())[:120]}")
                continue
            batch = _legacy_batch(dataset, name[: -len(".parquet")])
            by_day.setdefault(day, {}).setdefault(batch, {}).setdefault(dataset, []).append(table)
        converted = 0
        for day, batches in sorted(by_day.items()):
            parts = [
                _to_table(t, dataset, day, batch)
                for batch, datasets in batches.items()
                for dataset, tables in datasets.items()
                for t in tables
            ]
            converted += sum(p.num_rows for p in parts)
            self.commit_tables(day, sorted(batches), pa.concat_tables(parts), operation="convert-legacy")
        if move_aside and by_day:
            for dataset in _LEGACY:
                src = f"{self._root}/{dataset}"
                if self._fs.get_file_info(src).type == pafs.FileType.Directory:
                    self._fs.create_dir(f"{self._root}/legacy-parquet", recursive=True)
                    self._fs.move(src, f"{self._root}/legacy-parquet/{dataset}")
        return converted, skipped

    def commit_tables(self, day: date | str, batches: Collection[str], data: pa.Table, *, operation: str = "bulk") -> int:
        """Replace the batches ``batches`` of ``day`` (both datasets) with ``data``, in one commit.

        The bulk form of :meth:`commit` for rows that are already Arrow tables of
        :data:`TABLE_SCHEMA` (a converted legacy ledger, a generated benchmark ledger): no
        per-row validation, any number of batches in one commit.

        Args:
            day: the ``date`` partition; every row of ``data`` must carry it.
            batches: the batches replaced (and written: ``data``'s ``batch`` values).
            data: rows of :data:`TABLE_SCHEMA` (``dataset``, ``date``, ``batch`` set).
            operation: recorded in the commit's metadata as ``faultsense.operation``.

        Returns:
            The new table version.

        Raises:
            ValueError: a bad batch name, or ``data`` not of :data:`TABLE_SCHEMA`.
        """
        from deltalake import CommitProperties, write_deltalake

        if not data.schema.equals(TABLE_SCHEMA):
            raise ValueError("data must have exactly the ledger's TABLE_SCHEMA")
        table = self._open()
        if table is None:
            self._create()
            table = self._open()
        names = ", ".join(f"'{_check_batch(b)}'" for b in sorted(batches))
        write_deltalake(
            table,
            data,
            mode="overwrite",
            predicate=f"date = '{as_day(day).isoformat()}' AND batch IN ({names})",
            partition_by=_PARTITION_BY,
            schema_mode="merge",
            commit_properties=CommitProperties(custom_metadata={"faultsense.operation": operation}),
        )
        return int(table.version())

    # -- maintenance -------------------------------------------------------------------------

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


def _legacy_batch(dataset: str, name: str) -> str:
    """The Delta batch of a pre-Delta file name (see :meth:`LedgerStore.convert_legacy`)."""
    if dataset == PROBE_RUNS:
        m = re.fullmatch(r"(.+-h\d\d)-(phase1|phase2|failed)", name)
        if m:
            return f"faultsense-{m.group(1)}" + ("-failed" if m.group(2) == "failed" else "")
    return _check_batch(name)


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
