"""The ``faultsense`` command (typer + rich).

Each sub-command lives in its own module with a ``register(app)`` function; this file only
assembles them, so the command tree is visible at a glance. A module is imported only when its
command runs (or ``--help`` lists it): ``faultsense sweep --fleet bad.yaml`` loads the sweep
command, not torch (``probe``, ``minder``) nor pandas (``flowpulse``), and refuses the file
before it imports Dagster.

    faultsense plan        Phase 1 cover for n GPUs and probe size k      (plan_cmd)
    faultsense simulate    Phase 1 + Phase 2 on a simulated replica       (simulate_cmd)
    faultsense probe ...   build the probe model checkpoint               (probe_cmd)
    faultsense sweep       run the Dagster sweep job in-process           (sweep_cmd)
    faultsense ledger ...  read the fault ledger                          (ledger_cmd)
    faultsense minder ...  train / scan the Minder detector               (minder_cmd)
    faultsense flowpulse . scan switch-port counters with FlowPulse       (flowpulse_cmd)
    faultsense ui          the Dagster UI on the persistent instance      (ui_cmd)
    faultsense metrics     Prometheus exporter of the fleet's state       (metrics_cmd)
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
_NO_SUCH_OPTION: type[Exception] | None = getattr(_CLICK, "NoSuchOption", None)

#: How alike (``difflib`` ratio, 0..1) an unknown option's name must be to a real one for the
#: error to suggest it. Click's own cutoff, 0.6, offered ``--hour`` for ``--bogus`` (0.62).
SUGGEST_RATIO = 0.75


def close_options(given: str, possibilities: Sequence[str]) -> list[str]:
    """The options of ``possibilities`` worth suggesting for the unknown option ``given``: those
    it starts (``--lock`` -> ``--lock-wait``) or that are at least :data:`SUGGEST_RATIO` alike
    once the leading dashes are set aside.

    >>> close_options("--bogus", ["--hour"]), close_options("--houre", ["--hour"]), close_options("--lock", ["--lock-wait"])
    ([], ['--hour'], ['--lock-wait'])
    """
    import difflib

    bare = given.lstrip("-")
    return [
        p
        for p in possibilities
        if p.lstrip("-").startswith(bare) or difflib.SequenceMatcher(None, bare, p.lstrip("-")).ratio() >= SUGGEST_RATIO
    ]


#: Each top-level command, in the order ``--help`` lists them, and the module registering it.
COMMAND_MODULES: dict[str, str] = {
    "plan": "plan_cmd",
    "simulate": "simulate_cmd",
    "sweep": "sweep_cmd",
    "ui": "ui_cmd",
    "metrics": "metrics_cmd",
    "probe": "probe_cmd",
    "ledger": "ledger_cmd",
    "minder": "minder_cmd",
    "flowpulse": "flowpulse_cmd",
}
_BUILT: dict[str, Any] = {}


def _command(name: str) -> Any:
    """The click command ``name``, built once from its module's ``register(app)``.

    The module registers onto a scratch Typer app that has a callback, so Typer always makes
    it a group (a lone command would become the app itself), and the command is taken from it.
    """
    if name not in _BUILT:
        module = importlib.import_module(f"{__name__}.{COMMAND_MODULES[name]}")
        scratch = typer.Typer(pretty_exceptions_enable=False, add_completion=False)
        scratch.callback()(lambda: None)
        module.register(scratch)
        _BUILT[name] = typer.main.get_command(scratch).commands[name]  # type: ignore[attr-defined]
    return _BUILT[name]


class OneLineUsageErrors(TyperGroup):
    """The root command group, whose usage errors (a missing or unknown option, ``--alpha abc``)
    are one line naming the option, ``error: Invalid value for '--alpha': ...``, and exit 2,
    like every other bad input; Typer's own is a 5-line box.

    Help (``--help``, and a group called without a command) is printed as Typer prints it.
    Sub-commands are loaded on first use (:data:`COMMAND_MODULES`).
    """

    def list_commands(self, ctx: Any) -> list[str]:
        """Every command name, the lazily loaded ones included, in :data:`COMMAND_MODULES` order."""
        return list(dict.fromkeys([*COMMAND_MODULES, *super().list_commands(ctx)]))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command ``cmd_name``, importing its module now if it is one of :data:`COMMAND_MODULES`."""
        if cmd_name in COMMAND_MODULES and cmd_name not in self.commands:
            self.add_command(_command(cmd_name), cmd_name)
        return super().get_command(ctx, cmd_name)

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
                if _NO_SUCH_OPTION is not None and isinstance(exc, _NO_SUCH_OPTION):
                    exc.possibilities = close_options(exc.option_name, exc.possibilities or ())  # type: ignore[attr-defined]
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
# the commands are added when used (OneLineUsageErrors.get_command); a callback makes the app a
# group without any registered up front
app.callback()(lambda: None)


def main() -> None:
    """Entry point of the ``faultsense`` console script."""
    app()
