"""Sweep hour keys, ``"YYYY-MM-DD-HH:00"`` (UTC): the hour dimension of the sweep partitions,
and the one way tables and messages print them (:func:`display_hour`, ``"YYYY-MM-DD HH:00"``).

Plain Python, no Dagster: the CLI checks ``--hour`` with it before it imports the Dagster
layer; :mod:`faultsense_pipelines.assets.partitions` builds its partitions from
:data:`SWEEPS_START` and re-exports these functions.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from ..validation import shown

__all__ = ["SWEEPS_START", "check_hour_key", "current_hour_key", "display_hour"]

#: First hour a sweep can be backfilled for.
SWEEPS_START = "2026-11-01-00:00"

_HOUR_KEY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}-(?:[01][0-9]|2[0-3]):00")


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


def display_hour(hour: object) -> str:
    """A sweep hour key as ``faultsense ledger show`` and ``ledger actions`` print an hour, and
    as an action's ``reason`` names one: ``"YYYY-MM-DD HH:00"``; any other text as it is.

    >>> display_hour("2026-12-04-13:00"), display_hour("odd")
    ('2026-12-04 13:00', 'odd')
    """
    text = str(hour)
    return f"{text[:10]} {text[11:]}" if _HOUR_KEY.fullmatch(text) else text
