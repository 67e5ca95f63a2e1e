"""The ``faultsense`` command (typer + rich).

Each sub-command lives in its own module with a ``register(app)`` function; this file only
assembles them, so the command tree is visible at a glance:

    faultsense plan        Phase 1 cover for n GPUs and probe size k      (plan_cmd)
    faultsense simulate    Phase 1 + Phase 2 on a simulated replica       (simulate_cmd)
    faultsense probe ...   build the probe model checkpoint               (probe_cmd)
    faultsense sweep       run the Dagster sweep job in-process           (sweep_cmd)
    faultsense ledger ...  read the fault ledger                          (ledger_cmd)
    faultsense minder ...  train / scan the Minder detector               (minder_cmd)
    faultsense flowpulse . scan switch-port counters with FlowPulse       (flowpulse_cmd)
    faultsense ui          the Dagster UI on the persistent instance      (ui_cmd)
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

from .errors import error_line

# typer's click exceptions (typer >= 0.2x vendors click; older releases use click itself)
_CLICK = sys.modules[typer.BadParameter.__module__]
_USAGE_ERROR: type[Exception] = _CLICK.UsageError
_CLICK_EXCEPTION: type[Exception] = _CLICK.ClickException
_NO_ARGS_IS_HELP: type[Exception] | None = getattr(_CLICK, "NoArgsIsHelpError", None)


class OneLineUsageErrors(TyperGroup):
    """The root command group, whose usage errors (a missing or unknown option, ``--repeats abc``)
    are one line naming the option, ``error: Invalid value for '--repeats': ...``, and exit 2,
    like every other bad input; Typer's own is a 5-line box.

    Help (``--help``, and a group called without a command) is printed as Typer prints it.
    """

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command; with ``standalone_mode`` (the console script, ``CliRunner``) a usage
        error prints :func:`~.errors.error_line` on stderr and exits 2."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except Exception as exc:
            if not isinstance(exc, _CLICK_EXCEPTION):
                raise
            if _NO_ARGS_IS_HELP is not None and isinstance(exc, _NO_ARGS_IS_HELP):
                exc.show()  # type: ignore[attr-defined]  # the group's help, as Typer prints it
            else:
                typer.echo(error_line(exc.format_message()), err=True)  # type: ignore[attr-defined]
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    name="faultsense",
    help="Localize slow GPUs and GPU-to-GPU paths in MoE serving replicas.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=OneLineUsageErrors,
)

_COMMAND_MODULES = (
    "plan_cmd",
    "simulate_cmd",
    "probe_cmd",
    "sweep_cmd",
    "ledger_cmd",
    "minder_cmd",
    "flowpulse_cmd",
    "ui_cmd",
)

for _name in _COMMAND_MODULES:
    importlib.import_module(f"{__name__}.{_name}").register(app)


def main() -> None:
    """Entry point of the ``faultsense`` console script."""
    app()
