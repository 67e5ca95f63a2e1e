"""Writing the stored-cover tables of ``faultsense_pipelines/cover/data/`` from the offline searches."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from faultsense_pipelines.cover.table import StoredCover, read_table, table_path, write_table

__all__ = ["replace_table", "update_table"]


def update_table(covers: Iterable[StoredCover], *, name: str = "large", path: Path | None = None) -> Path:
    """Add ``covers`` to table ``name`` (or the file ``path``), replacing entries with their (n, k, hole).

    Every other entry is kept as stored (unchecked). Returns the path written.
    """
    path = path or table_path(name)
    entries = {c.key: c for c in read_table(path, validate=False)}
    entries.update((c.key, c) for c in covers)
    write_table(path, entries.values())
    return path


def replace_table(covers: Iterable[StoredCover], *, name: str, path: Path | None = None) -> Path:
    """Write table ``name`` (or the file ``path``) with exactly ``covers``. Returns the path written."""
    path = path or table_path(name)
    write_table(path, covers)
    return path
