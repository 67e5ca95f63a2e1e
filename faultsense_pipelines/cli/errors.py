"""One way for every sub-command to fail on bad input: one line naming the bad value."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console

_stderr = Console(stderr=True, highlight=False, soft_wrap=True)

__all__ = ["fail"]


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: <message>`` on one line of stderr and exit with ``code`` (default 2)."""
    _stderr.print(f"error: {' '.join(str(message).split())}", markup=False)
    raise typer.Exit(code)
