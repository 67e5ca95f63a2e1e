"""Entry point of the ``faultsense`` console script.

The command tree (:mod:`faultsense_pipelines.cli`) is imported inside :func:`main`, so that a
Ctrl-C while Python is still loading it ends like a Ctrl-C later on: one line on stderr and
exit status 130, not a ``KeyboardInterrupt`` traceback. Nothing has run at that point.
"""

from __future__ import annotations

import sys

__all__ = ["main"]

INTERRUPTED_WHILE_STARTING = "error: interrupted while starting; nothing was run"


def main() -> None:
    """Load the ``faultsense`` command and run it (exit 130 if interrupted while loading)."""
    try:
        from .cli import main as cli_main
    except KeyboardInterrupt:
        print(INTERRUPTED_WHILE_STARTING, file=sys.stderr)
        raise SystemExit(130) from None
    cli_main()
