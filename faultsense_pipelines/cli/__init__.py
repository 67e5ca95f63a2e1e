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
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="faultsense",
    help="Localize slow GPUs and GPU-to-GPU paths in MoE serving replicas.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

_COMMAND_MODULES = (
    "plan_cmd",
    "simulate_cmd",
    "probe_cmd",
    "sweep_cmd",
    "ledger_cmd",
    "minder_cmd",
    "flowpulse_cmd",
)

for _name in _COMMAND_MODULES:
    importlib.import_module(f"{__name__}.{_name}").register(app)


def main() -> None:
    """Entry point of the ``faultsense`` console script."""
    app()
