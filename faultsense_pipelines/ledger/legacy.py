"""Bulk loads into the ledger's table: a pre-Delta ledger (hive-partitioned Parquet files
under ``fault_ledger/`` and ``probe_runs/``) converted by ``faultsense ledger convert``, and
rows that are already Arrow tables (``commit_tables``: a converted day, a generated benchmark
ledger).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import date

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .delta import _PARTITION_BY, _SCHEMAS, TABLE_SCHEMA, LedgerTable, _check_batch, _to_table, as_day
from .schema import (
    ADDED_IN_VERSION_2,
    ADDED_IN_VERSION_3,
    FAULT_LEDGER,
    PROBE_RUNS,
)

__all__ = ["LedgerBulkLoads"]

_LEGACY = (FAULT_LEDGER, PROBE_RUNS)  # the datasets a pre-Delta ledger can hold


class LedgerBulkLoads(LedgerTable):
    """The bulk-load part of :class:`~faultsense_pipelines.ledger.store.LedgerStore`: a
    pre-Delta ledger's conversion and :meth:`commit_tables`."""

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


def _legacy_batch(dataset: str, name: str) -> str:
    """The Delta batch of a pre-Delta file name (see :meth:`LedgerStore.convert_legacy`)."""
    if dataset == PROBE_RUNS:
        m = re.fullmatch(r"(.+-h\d\d)-(phase1|phase2|failed)", name)
        if m:
            return f"faultsense-{m.group(1)}" + ("-failed" if m.group(2) == "failed" else "")
    return _check_batch(name)
