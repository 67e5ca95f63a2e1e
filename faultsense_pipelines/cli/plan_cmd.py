"""``faultsense plan``: the Phase 1 cover (probes and rounds) for n GPUs and probe size k."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..cover import Cover, CoverMethod, plan_cover
from ..validation import shown
from .errors import check_cover_args, fail
from .options import JsonOption

__all__ = ["plan", "register"]

_SHOWN_PROBES = 12


def plan(
    gpus: Annotated[str, typer.Option("--gpus", metavar="N", help="GPUs in the replica, n >= 2.")],
    probe_size: Annotated[str, typer.Option("--probe-size", metavar="K", help="GPUs per probe, 2 <= k <= n.")],
    method: Annotated[
        str, typer.Option("--method", help=f"Cover method: {CoverMethod.BEST} | {CoverMethod.GREEDY}.")
    ] = CoverMethod.BEST.value,
    as_json: JsonOption = False,
) -> None:
    """Plan the Phase 1 cover: size-k probes containing every GPU and every GPU pair, in rounds."""
    n = _integer("--gpus", gpus)
    k = _integer("--probe-size", probe_size)
    check_cover_args(n, k, method)
    cover = plan_cover(n, k, CoverMethod(method))
    if as_json:
        typer.echo(json.dumps(cover.to_dict()))
    else:
        console = Console()
        console.print(_table(cover))
        for line in _first_probes(cover):
            console.print(line, soft_wrap=True, highlight=False)


def _integer(flag: str, text: str) -> int:
    """Parse an integer option ourselves, so a bad value gets our one-line error."""
    try:
        return int(text)
    except ValueError:
        fail(f"{flag} must be an integer, got {shown(text)}")


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
    return table


def _first_probes(cover: Cover) -> list[str]:
    """One line per probe (GPU ids) for the first rounds' probes, then how to get them all."""
    round_of = {i: r for r, ids in enumerate(cover.rounds) for i in ids}
    order = sorted(range(len(cover.probes)), key=lambda i: (round_of[i], i))[:_SHOWN_PROBES]
    lines = [f"round {round_of[i]:>3}  probe {i:>5}: {list(cover.probes[i])}" for i in order]
    if len(cover.probes) > _SHOWN_PROBES:
        lines.append(f"... {len(cover.probes) - _SHOWN_PROBES} more probes; --json for all")
    return lines


def register(app: typer.Typer) -> None:
    """Add ``plan`` to the ``faultsense`` app."""
    app.command("plan")(plan)
