"""One way for every sub-command to fail on bad input: one line naming the bad value."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console

_stderr = Console(stderr=True, highlight=False, soft_wrap=True)

__all__ = ["fail", "check_cover_args", "cover_too_large", "MAX_PLAN_PROBES"]

#: The most probes a cover planned by the CLI (``faultsense plan``, ``faultsense simulate``)
#: may need. A replica whose Schönheim lower bound L(n, k) exceeds it is refused before any
#: planning: n = 4096, k = 2 needs 8,386,560 probes (minutes and ~5.7 GB to plan, and a
#: Phase 1 of 8 million probes), while n = 1024, k = 2 (523,776) and n = 4096, k = 8
#: (299,520) are allowed. See docs/input-limits.md.
MAX_PLAN_PROBES = 1_000_000


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: <message>`` on one line of stderr and exit with ``code`` (default 2)."""
    _stderr.print(f"error: {' '.join(str(message).split())}", markup=False)
    raise typer.Exit(code)


_FLAGS = {"gpus": "--gpus", "probe_size": "--probe-size", "method": "--method"}


def check_cover_args(n: int, k: int, method: str = "best") -> None:
    """Fail (one line, exit 2) unless ``plan_cover(n, k, method)`` accepts the sizes; the line
    starts with the offending flag, e.g. ``error: --probe-size: probe_size must be <= gpus, ...``.
    """
    from ..cover import validate_cover_args

    try:
        validate_cover_args(n, k, method)
    except ValueError as exc:
        name = str(exc).split(" ", 1)[0]
        fail(f"{_FLAGS.get(name, name)}: {exc}")
    if problem := cover_too_large(n, k):
        fail(f"--gpus/--probe-size: {problem}")


def cover_too_large(n: int, k: int) -> str | None:
    """Why a cover of ``n`` GPUs with probe size ``k`` is too large to plan, or None.

    The cover needs at least Schönheim's bound L(n, k) probes (computed in O(1), before any
    planning); above :data:`MAX_PLAN_PROBES` the plan is refused.

    >>> cover_too_large(4096, 8) is None
    True
    >>> cover_too_large(4096, 2)
    'a cover of gpus=4096 with probe_size=2 needs at least 8,386,560 probes (Schönheim bound), more than the limit of 1,000,000; use a larger probe size'
    """
    from ..cover.bounds import schonheim_bound

    bound = schonheim_bound(n, k)
    if bound <= MAX_PLAN_PROBES:
        return None
    return (
        f"a cover of gpus={n} with probe_size={k} needs at least {bound:,} probes (Schönheim bound), "
        f"more than the limit of {MAX_PLAN_PROBES:,}; use a larger probe size"
    )
