"""The ledger's Delta table under one URI: where it lives, how it is opened, and the helpers
every part of :class:`~faultsense_pipelines.ledger.store.LedgerStore` shares.

:class:`LedgerTable` is the store's base: the URI checks, the filesystem, the table's location,
and :meth:`LedgerTable._open` (the table, loaded once per thread and then brought up to date
from its new log entries). The store's parts build on it: commit and read
(:mod:`.store`), maintenance (:mod:`.maintenance`), a pre-Delta ledger's conversion (:mod:`.legacy`).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pyarrow as pa
import pyarrow.fs as pafs

from .schema import (
    ACTION_SCHEMA,
    ACTIONS,
    FAULT_LEDGER,
    FAULT_SCHEMA,
    PROBE_RUN_SCHEMA,
    PROBE_RUNS,
    SWEEP_SCHEMA,
    SWEEPS,
)

__all__ = [
    "COMPACT_EVERY",
    "DELTA_SCHEMES",
    "TABLE_DIR",
    "TABLE_SCHEMA",
    "LedgerError",
    "LedgerTable",
    "WriteResult",
    "as_day",
]

#: The Delta table's folder under the ledger URI.
TABLE_DIR = "delta"
#: URI schemes the Delta table can live on (``deltalake``'s object stores).
DELTA_SCHEMES = ("file", "s3", "s3a", "gs", "az", "abfs", "abfss", "azure", "hdfs", "viewfs", "lakefs")
_BATCH_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,199}")
_SCHEMAS = {FAULT_LEDGER: FAULT_SCHEMA, PROBE_RUNS: PROBE_RUN_SCHEMA, SWEEPS: SWEEP_SCHEMA, ACTIONS: ACTION_SCHEMA}
_PARTITION_BY = ["dataset", "date"]
#: A data file's path inside the table, as deltalake and Arrow quote it in their errors.
_DATA_FILE_RE = re.compile(r"dataset=[^/\s'\"]+/date=[^/\s'\"]+/[^/\s'\":]+\.parquet")
_QUOTED_FILE_RE = re.compile(r"(Could not open Parquet input source |for file )?'?[^\s']*dataset=[^\s']+\.parquet'?:?")
_COMMIT_ENTRY_RE = re.compile(r"\d{20}\.json")
_log = logging.getLogger("faultsense_pipelines.ledger.store")  # the store's one logger, whichever part logs

#: Every this many table versions, :meth:`LedgerStore.commit` also compacts the day it wrote
#: (:meth:`LedgerStore.compact_day`). At 200 replicas swept hourly that is about every 15
#: minutes, and a day's partitions hold at most ~50 sweeps' small files besides the merged ones.
COMPACT_EVERY = 50
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


class LedgerTable:
    """The location and the opening of one ledger's Delta table: the base of
    :class:`~faultsense_pipelines.ledger.store.LedgerStore` (its arguments and errors there)."""

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

    def _forget(self) -> None:
        """Drop this table from the per-thread cache (the next :meth:`_open` loads it afresh)."""
        getattr(_LOADED, "tables", {}).pop(self._table_uri, None)
