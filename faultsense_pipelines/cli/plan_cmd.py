"""``faultsense plan``: the Phase 1 cover (probes and rounds) for n GPUs and probe size k."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..cover import Cover, plan_cover
from .errors import check_cover_args, fail

__all__ = ["register", "plan"]

_SHOWN_PROBES = 12


def plan(
    gpus: Annotated[str, typer.Option("--gpus", metavar="N", help="GPUs in the replica, n >= 2.")],
    probe_size: Annotated[str, typer.Option("--probe-size", metavar="K", help="GPUs per probe, 2 <= k <= n.")],
    method: Annotated[str, typer.Option("--method", help="Cover method: best | greedy.")] = "best",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Plan the Phase 1 cover: size-k probes containing every GPU and every GPU pair, in rounds."""
    n = _integer("--gpus", gpus)
    k = _integer("--probe-size", probe_size)
    check_cover_args(n, k, method)
    cover = plan_cover(n, k, method)
    if as_json:
        typer.echo(json.dumps(cover.to_dict()))
    else:
        Console().print(_table(cover))


def _integer(flag: str, text: str) -> int:
    """Parse an integer option ourselves, so a bad value gets our one-line error."""
    try:
        return int(text)
    except ValueError:
        fail(f"{flag} must be an integer, got {text!r}")


def _table(cover: Cover) -> Table:
    n, k = cover.gpus, cover.probe_size
    rounds_bound = -(-(n - 1) // (k - 1))
    table = Table(title=f"Phase 1 cover: {n} GPUs, probe size {k}, method {cover.method}")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_column("reference", justify="right")
    table.add_row("probes", str(len(cover.probes)), f"Schönheim bound {cover.lower_bound}")
    table.add_row("probes / bound", f"{len(cover.probes) / cover.lower_bound:.3f}", "1.000 is optimal")
    table.add_row("all pairs / probes", f"{cover.all_pairs / len(cover.probes):.1f}x", f"all pairs {cover.all_pairs}")
    table.add_row("rounds", str(len(cover.rounds)), f"ceil((n-1)/(k-1)) = {rounds_bound}")
    shown = ", ".join(str(list(p)) for p in cover.probes[:_SHOWN_PROBES])
    more = f" ... (+{len(cover.probes) - _SHOWN_PROBES} more; --json for all)" if len(cover.probes) > _SHOWN_PROBES else ""
    table.caption = f"probes: {shown}{more}"
    return table


def register(app: typer.Typer) -> None:
    """Add ``plan`` to the ``faultsense`` app."""
    app.command("plan")(plan)
