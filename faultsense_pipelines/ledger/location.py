"""Where the ledger lives: ``--ledger``, else ``$FAULTSENSE_LEDGER``, else the fleet file's ``ledger:``.

One rule for every entry point that needs the ledger URI (``faultsense sweep``,
``faultsense ledger show``, the Dagster definitions that ``dagster dev`` loads). The fleet
file's ``ledger:`` is optional when one of the other two supplies it; when none does, the
error names all three.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["LEDGER_ENV", "choose_ledger_uri"]

#: The environment variable that overrides the fleet file's ``ledger:``.
LEDGER_ENV = "FAULTSENSE_LEDGER"


def choose_ledger_uri(override: str | None, fleet_ledger: str | None, source: str | Path = "fleet") -> str:
    """The ledger URI: ``override`` (``--ledger``), else ``$FAULTSENSE_LEDGER``, else ``fleet_ledger``.

    Empty values count as not given. The chosen one is checked as a path
    (:func:`~faultsense_pipelines.validation.check_path_text`: no leading or trailing
    whitespace, no control characters, at most 4096 characters) and returned as given (a local
    path is not made absolute here).

    Args:
        override: the ``--ledger`` option, or ``None``.
        fleet_ledger: the fleet file's ``ledger:`` (``Fleet.ledger``), or ``None`` when the
            file has none.
        source: the fleet file, to name it in the error.

    Returns:
        The first of the three that is given (a local path or an fsspec / pyarrow URI).

    Raises:
        FleetError: none of the three is given (one line naming all of them), or the chosen
            one is not a usable path, e.g. ``--ledger: must be a path or URI without leading or
            trailing whitespace, got ' /tmp/x'`` (the CLI prints it and exits 2).

    >>> choose_ledger_uri("/tmp/cli", "/tmp/fleet")
    '/tmp/cli'
    """
    from ..fleet import FleetError
    from ..validation import check_path_text

    for uri, field in (
        (override, "--ledger"),
        (os.environ.get(LEDGER_ENV), f"${LEDGER_ENV}"),
        (fleet_ledger, f"{source}: ledger"),
    ):
        if uri:
            try:
                return check_path_text(uri, field)
            except ValueError as exc:
                raise FleetError(str(exc)) from None

    raise FleetError(f"{source}: no ledger given: set `ledger:` in the fleet file, pass --ledger, or set ${LEDGER_ENV}")
