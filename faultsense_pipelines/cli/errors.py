"""One way for every sub-command to fail on bad input: one line naming the bad value."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console

from ..cover.bounds import MAX_PLAN_PROBES, cover_too_large  # re-exported: the CLI's limit

_stderr = Console(stderr=True, highlight=False, soft_wrap=True)

__all__ = ["MAX_PLAN_PROBES", "check_cover_args", "cover_too_large", "fail"]


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
