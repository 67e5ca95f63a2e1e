"""Sweep hour keys, ``"YYYY-MM-DD-HH:00"`` (UTC): the hour dimension of the sweep partitions.

Plain Python, no Dagster: the CLI checks ``--hour`` with it before it imports the Dagster
layer; :mod:`faultsense_pipelines.assets.partitions` builds its partitions from
:data:`SWEEPS_START` and re-exports these functions.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ..validation import shown

__all__ = ["SWEEPS_START", "check_hour_key", "current_hour_key"]

#: First hour a sweep can be backfilled for.
SWEEPS_START = "2026-11-01-00:00"


def current_hour_key(now: datetime | None = None) -> str:
    """The hour partition containing ``now`` (UTC), e.g. ``"2026-11-30-08:00"``."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    # written out by hand: strftime("%Y") drops the zero padding of years before 1000
    return f"{now.year:04d}-{now.month:02d}-{now.day:02d}-{now.hour:02d}:00"


def check_hour_key(hour: str, now: datetime | None = None) -> str:
    """``hour`` if it is an hour partition from :data:`SWEEPS_START` to the hour containing
    ``now`` (UTC; default: now).

    Raises:
        ValueError: one line naming ``hour`` and the valid format or range.
    """
    try:
        start = datetime.strptime(hour, "%Y-%m-%d-%H:%M").replace(tzinfo=UTC)
    except (TypeError, ValueError):
        start = None
    if start is None or start.minute != 0 or current_hour_key(start) != hour:
        raise ValueError(f"hour must look like YYYY-MM-DD-HH:00 (e.g. 2026-11-30-08:00), got {shown(hour)}")
    last = current_hour_key(now)
    if not SWEEPS_START <= hour <= last:
        raise ValueError(f"hour {hour} is outside the sweep partitions {SWEEPS_START} .. {last} (UTC)")
    return hour
