"""Where the ledger lives, and how its files are written and read.

A :class:`LedgerStore` wraps one ledger URI: a local path, ``file://``, any filesystem
pyarrow knows (``s3://``, ``gs://``, ``hdfs://``, ``abfs://``) or, failing that, any fsspec
protocol (``memory://``, ``gcs://``, ...). Each write is one Parquet file named after its
*batch* under ``<dataset>/date=YYYY-MM-DD/``:

* atomic: the table is written to a hidden temporary file next to the target, then renamed
  over it, so readers (and a run killed mid-write) only ever see a whole old or a whole new
  file; hidden (``.``-prefixed) files are ignored by pyarrow, pandas, DuckDB globs and Spark;
* idempotent: writing the same (day, batch) again replaces that file, never adds rows.

Batch names may hold only ``[A-Za-z0-9_-]``, so nothing written can leave the ledger folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .rows import FaultRow, ProbeRunRow, fault_table, probe_run_table
from .schema import FAULT_LEDGER, FAULT_SCHEMA, PROBE_RUN_SCHEMA, PROBE_RUNS, make_fault_id

__all__ = ["LedgerStore", "WriteResult", "append_faults", "append_passive_faults", "as_day"]

_BATCH_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,199}")
_SCHEMAS = {FAULT_LEDGER: FAULT_SCHEMA, PROBE_RUNS: PROBE_RUN_SCHEMA}
_PARTITIONING = ds.partitioning(pa.schema([("date", pa.string())]), flavor="hive")


@dataclass(frozen=True)
class WriteResult:
    """One file written: its ``path`` (as the store's URI shows it) and its ``rows``."""

    path: str
    rows: int


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
        raise ValueError(f"day must be a date or 'YYYY-MM-DD', got {day!r}") from None


def _check_batch(batch: str) -> str:
    if not isinstance(batch, str) or not _BATCH_RE.fullmatch(batch):
        raise ValueError(f"batch must be 1-200 of A-Z, a-z, 0-9, '_' and '-' (starting alphanumeric), got {batch!r}")
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


class LedgerStore:
    """The fault ledger under one URI.

    Args:
        uri: local path (relative paths are taken from the current directory) or URI.

    Raises:
        ValueError: if no filesystem understands ``uri``.
    """

    def __init__(self, uri: str) -> None:
        if not isinstance(uri, str) or not uri.strip():
            raise ValueError(f"ledger URI must be a non-empty string, got {uri!r}")
        try:
            self._fs, self._root = _resolve(uri)
        except (ValueError, ImportError, OSError) as exc:
            raise ValueError(f"cannot open ledger {_redact(uri)!r}: {exc}") from None
        self.uri = uri

    def __repr__(self) -> str:
        return f"LedgerStore({self.display_uri!r})"

    @property
    def display_uri(self) -> str:
        """The ledger location without credentials (what logs and the UI show)."""
        return self._root if "://" not in self.uri else _redact(self.uri)

    def root_kind(self) -> str:
        """What the ledger URI points at: ``"directory"``, ``"file"`` or ``"missing"``.

        An object store has no real directories: a bucket prefix with nothing under it reads
        as ``"missing"``.
        """
        kind = self._fs.get_file_info(self._root).type
        if kind == pafs.FileType.Directory:
            return "directory"
        return "missing" if kind == pafs.FileType.NotFound else "file"

    def dataset_path(self, dataset: str) -> str:
        """Root of ``fault_ledger`` or ``probe_runs`` on the store's filesystem."""
        if dataset not in _SCHEMAS:
            raise ValueError(f"dataset must be one of {', '.join(_SCHEMAS)}, got {dataset!r}")
        return f"{self._root}/{dataset}"

    def file_path(self, dataset: str, day: date | str, batch: str) -> str:
        """Path of the file holding ``batch`` of ``day`` in ``dataset``."""
        return f"{self.dataset_path(dataset)}/date={as_day(day).isoformat()}/{_check_batch(batch)}.parquet"

    # -- writing -----------------------------------------------------------------------------

    def _write(self, dataset: str, table: pa.Table, day: date | str, batch: str) -> WriteResult:
        final = self.file_path(dataset, day, batch)
        folder, name = final.rsplit("/", 1)
        tmp = f"{folder}/.{name}.{uuid.uuid4().hex}.tmp"
        self._fs.create_dir(folder, recursive=True)
        try:
            pq.write_table(table, tmp, filesystem=self._fs)
            self._fs.move(tmp, final)
        except BaseException:
            self._delete_quietly(tmp)
            raise
        return WriteResult(path=final, rows=table.num_rows)

    def _delete_quietly(self, path: str) -> None:
        with contextlib.suppress(OSError, FileNotFoundError):
            self._fs.delete_file(path)

    def write_faults(self, rows: Sequence[FaultRow], *, day: date | str, batch: str) -> WriteResult:
        """Write (or replace) one batch of fault rows for ``day``.

        Args:
            rows: the batch's rows; may be empty (records that the batch found nothing,
                and clears rows an earlier run of the same batch wrote).
            day: the hive partition, ``date=YYYY-MM-DD``.
            batch: the file's name, unique per writer and window, e.g.
                ``"faultsense-sim-64-h08"`` or ``"minder-2026-11-30T08"``; start it with
                the detector's name.

        Returns:
            The file's path and row count.
        """
        return self._write(FAULT_LEDGER, fault_table(rows), day, batch)

    def write_probe_runs(self, rows: Sequence[ProbeRunRow], *, day: date | str, batch: str) -> WriteResult:
        """Write (or replace) one batch of probe measurements for ``day`` (see :meth:`write_faults`)."""
        return self._write(PROBE_RUNS, probe_run_table(rows), day, batch)

    def delete_batch(self, dataset: str, *, day: date | str, batch: str) -> bool:
        """Remove one batch file (a re-run that supersedes it); True if it existed."""
        path = self.file_path(dataset, day, batch)
        if self._fs.get_file_info(path).type == pafs.FileType.NotFound:
            return False
        self._fs.delete_file(path)
        return True

    # -- reading -----------------------------------------------------------------------------

    def files(self, dataset: str) -> list[str]:
        """Every visible Parquet file of ``dataset``, sorted (hidden temporary files excluded)."""
        selector = pafs.FileSelector(self.dataset_path(dataset), recursive=True, allow_not_found=True)
        infos = self._fs.get_file_info(selector)
        return sorted(
            i.path
            for i in infos
            if i.type == pafs.FileType.File and i.base_name.endswith(".parquet") and not i.base_name.startswith((".", "_"))
        )

    def read_schema(self, path: str) -> pa.Schema:
        """The Parquet schema stored in one file of the ledger."""
        return pq.read_schema(path, filesystem=self._fs)

    def _read(self, dataset: str, since: date | str | None, replica: str | None, extra: ds.Expression | None) -> pd.DataFrame:
        schema = _SCHEMAS[dataset]
        full = schema.append(pa.field("date", pa.string()))
        paths = self.files(dataset)
        if not paths:
            return full.empty_table().to_pandas(types_mapper=_nullable_ints)
        dataset_ = ds.dataset(
            paths,
            schema=full,
            filesystem=self._fs,
            format="parquet",
            partitioning=_PARTITIONING,
            partition_base_dir=self.dataset_path(dataset),
        )
        cond = ds.scalar(True)
        if since is not None:
            cond = cond & (ds.field("date") >= as_day(since).isoformat())
        if replica is not None:
            cond = cond & (ds.field("replica") == replica)
        if extra is not None:
            cond = cond & extra
        return dataset_.to_table(filter=cond).to_pandas(types_mapper=_nullable_ints)

    def read_faults(
        self, *, since: date | str | None = None, replica: str | None = None, detector: str | None = None
    ) -> pd.DataFrame:
        """Fault rows, oldest first, with the partition ``date`` as a column.

        Args:
            since: keep partitions on or after this day.
            replica: keep one replica.
            detector: keep one detector.

        Returns:
            A DataFrame with the :data:`.schema.FAULT_SCHEMA` columns plus ``date``
            (``gpu``, ``peer_gpu``, ``phase``, ``probes_used`` as nullable ``Int32``).
        """
        extra = ds.field("detector") == detector if detector is not None else None
        df = self._read(FAULT_LEDGER, since, replica, extra)
        return df.sort_values(["detected_at", "replica", "component"], kind="stable").reset_index(drop=True)

    def read_probe_runs(self, *, since: date | str | None = None, replica: str | None = None) -> pd.DataFrame:
        """Probe measurements with the partition ``date`` as a column (see :meth:`read_faults`)."""
        return self._read(PROBE_RUNS, since, replica, None)


def _nullable_ints(t: pa.DataType) -> object:
    return pd.Int32Dtype() if t == pa.int32() else None


def append_faults(uri: str, rows: Sequence[FaultRow], *, batch: str, day: date | str | None = None) -> WriteResult:
    """Add one batch of fault rows to the ledger at ``uri`` (the passive detectors' entry point).

    Writing the same ``batch`` for the same day again replaces it, so a re-run never
    duplicates rows.

    Args:
        uri: the ledger URI (the fleet file's ``ledger``).
        rows: fault rows, e.g. ``detector="minder"``, ``component_kind="machine"``,
            ``component="machine:node-07"``, ``gpu``/``peer_gpu`` None.
        batch: file name, e.g. ``"minder-2026-11-30T08"`` (start with the detector's name).
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
