"""The options more than one command takes, each declared once (name, type, help text).

A command names one as its parameter's annotation and gives the default there, where the
commands differ in it (``--host`` of ``ui`` and ``metrics``, ``--port``):
``fleet: FleetOption = None``. An option whose help or meaning differs between commands (a
``--repeats`` defaulting to the scenario's or to the fleet's) is declared by its command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..replica.vocabulary import DrilldownMethod

__all__ = [
    "DrilldownOption",
    "FleetOption",
    "GpusOption",
    "HostOption",
    "JsonOption",
    "LedgerOption",
    "LimitOption",
    "MetricsOption",
    "PortOption",
    "ProbeSizeOption",
    "RecheckOption",
    "ReplicaFilterOption",
    "SinceOption",
    "VariantOption",
]

#: ``--fleet``: the fleet file (``ledger``, ``sweep``, ``metrics``, ``ui``).
FleetOption = Annotated[
    Path | None, typer.Option("--fleet", help="Fleet YAML (default: $FAULTSENSE_FLEET or faultsense_pipelines/data/fleet.yaml).")
]
#: ``--ledger``: the ledger's location (``ledger``, ``sweep``, ``metrics``, ``ui``).
LedgerOption = Annotated[
    str | None,
    typer.Option("--ledger", help="Ledger path or URI (default: $FAULTSENSE_LEDGER, else the fleet file's ledger:)."),
]
#: ``--json``: one JSON object on stdout instead of tables (``plan``, ``simulate``).
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]

#: ``--since``, ``--replica``, ``--limit``: which rows ``ledger show`` and ``ledger actions`` print.
SinceOption = Annotated[
    str | None, typer.Option("--since", help="First day to show, YYYY-MM-DD (the hour column's day; default: 7 days ago).")
]
ReplicaFilterOption = Annotated[str | None, typer.Option("--replica", help="Only this replica.")]
LimitOption = Annotated[int, typer.Option("--limit", min=1, help="Show at most this many (most recent) rows.")]

#: ``--drilldown``, ``--recheck``: Phase 2 (``simulate``, ``sweep``).
DrilldownOption = Annotated[str, typer.Option("--drilldown", help=f"Phase 2: {' | '.join(DrilldownMethod.values())}.")]
RecheckOption = Annotated[
    bool,
    typer.Option(
        "--recheck/--no-recheck",
        help="Adaptive drill-down: re-check the links hidden behind a slow GPU or link (exact). --no-recheck spends "
        "~(n-1)/(k-1) fewer probes per slow GPU but can miss a slow link hidden there, and counts the links it left "
        "unjudged (unjudged_links).",
    ),
]

#: ``--gpus``, ``--probe-size``, ``--variant``: the probe model (``probe build``, ``memory``, ``serve``).
GpusOption = Annotated[int, typer.Option("--gpus", help="GPUs in the replica (expert-parallel degree).")]
ProbeSizeOption = Annotated[int, typer.Option("--probe-size", help="GPUs per probe k (router top-k), 2 <= k <= --gpus.")]
VariantOption = Annotated[str, typer.Option("--variant", help="slim (default) | paper.")]

#: ``--metrics``: the machine metrics Minder reads (``minder train``, ``minder scan``).
MetricsOption = Annotated[
    Path, typer.Option("--metrics", help="Long-format metrics (Parquet or CSV): timestamp, machine, metric, value.")
]

#: ``--host``, ``--port``: where a server listens (``ui``, ``metrics``); the default is the command's.
HostOption = Annotated[str, typer.Option("--host", help="Address to listen on (0.0.0.0: every interface).")]
PortOption = Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")]
