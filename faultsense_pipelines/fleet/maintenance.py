"""``maintenance:`` of a fleet file: how the daily ``ledger_maintenance`` job (and
``faultsense ledger maintain --fleet FILE``) keeps the ledger's Delta table small and fast.

```yaml
maintenance:
  retain_days: 365        # delete days older than this; omit (or null) to keep every day
  vacuum_hours: 168       # delete files no table version of the last 7 days needs
  z_order: [replica]      # cluster each compacted day's rows by these columns; [] for plain compaction
```

Every finished day (before today, UTC) is compacted into few large files once; see
:meth:`faultsense_pipelines.ledger.LedgerStore.maintain`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .sections import Int, StrictModel

__all__ = ["MaintenanceOptions", "ZOrderColumn"]

#: Columns a compacted day may be clustered by (the ones the README's queries filter on).
ZOrderColumn = Literal["replica", "batch", "status", "component", "sweep_id"]
_DEFAULT_Z_ORDER: tuple[ZOrderColumn, ...] = ("replica",)


class MaintenanceOptions(StrictModel):
    """``maintenance:`` of the fleet file (all optional).

    Attributes:
        retain_days: keep only ``date`` partitions within this many days (0..100000); None
            keeps every day.
        vacuum_hours: delete unreferenced data files older than this many hours (0..1000000).
        z_order: columns each compacted day is clustered by (Delta Z-order), at most 3.
    """

    retain_days: Annotated[Int, Field(ge=0, le=100_000)] | None = None
    vacuum_hours: Annotated[Int, Field(ge=0, le=1_000_000)] = 168
    z_order: Annotated[list[ZOrderColumn], Field(max_length=3)] = Field(default_factory=lambda: list(_DEFAULT_Z_ORDER))
