"""``faultsense flowpulse``: find lossy fabric links from switch-port counters (FlowPulse).

faultsense flowpulse scan --counters C.parquet --topology T.yaml [--json]
faultsense flowpulse simulate --out DIR [--leaves 4 --spines 8 --loss 0.01 --lossy-leaf 1 ...]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from faultsense_pipelines.cli.errors import MAX_SEED, check_int_option, check_number_option, fail, writing_to
from faultsense_pipelines.flowpulse.counters import load_counters
from faultsense_pipelines.flowpulse.scan import ScanConfig, scan_report
from faultsense_pipelines.flowpulse.simulate import LossyLink, RingAllReduce, counters_frame, simulate
from faultsense_pipelines.flowpulse.topology import fat_tree, load_topology, topology_to_dict

from ..validation import shown

__all__ = ["register"]

#: Bounds of ``flowpulse simulate`` (an example generator: its arrays are iterations x leaves x
#: spines, so the product is bounded too).
MAX_SWITCHES = 256
MAX_ITERATIONS = 100_000
MAX_CELLS = 200_000
MAX_BUFFER_GIB = 1024.0

flowpulse_app = typer.Typer(help="Find lossy fabric links from switch-port counters (FlowPulse).", no_args_is_help=True)


@flowpulse_app.command("scan")
def scan_cmd(
    counters: Annotated[Path, typer.Option(help="Counters file (.parquet or .csv).")],
    topology: Annotated[Path, typer.Option(help="Topology file (.json, .yaml or .yml).")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the faults, and the traffic changes that explain other alarms, as JSON.")
    ] = False,
    model: Annotated[
        str, typer.Option(help="Expected shares: learned (first --reference iterations) or analytic.")
    ] = ScanConfig.model,
    traffic: Annotated[
        str, typer.Option(help="Analytic model's leaf traffic: uniform or ring (ring all-reduce over leaves).")
    ] = ScanConfig.traffic,
    reference: Annotated[int, typer.Option(help="Iterations the learned shares first come from.")] = ScanConfig.reference,
    lag: Annotated[
        int, typer.Option(help="Iterations a deviation is judged before it joins the learned shares.")
    ] = ScanConfig.lag,
    design_loss: Annotated[
        float, typer.Option(help="Smallest loss rate a CUSUM is tuned to (then 2x, 4x, 8x).")
    ] = ScanConfig.design_loss,
    false_alarm_rate: Annotated[
        float, typer.Option(help="False alarms per port and iteration the thresholds allow.")
    ] = ScanConfig.false_alarm_rate,
    threshold: Annotated[
        float | None, typer.Option(help="Fixed CUSUM alarm level instead of the budget's.")
    ] = ScanConfig.threshold,
) -> None:
    """Judge every switch from its own counters; print the lossy links."""
    try:
        config = ScanConfig(
            model=model,  # type: ignore[arg-type]  # ScanConfig validates it
            traffic=traffic,  # type: ignore[arg-type]
            reference=reference,
            lag=lag,
            design_loss=design_loss,
            false_alarm_rate=false_alarm_rate,
            threshold=threshold,
        )
        topo = load_topology(topology)
        frame = load_counters(counters)
        report = scan_report(frame, topo, config)
    except ValueError as exc:
        fail(str(exc))
    faults = report.faults
    if as_json:
        # the contract (tests/cli): "faults" first; "explained": alarms that were traffic, not loss
        typer.echo(json.dumps({"faults": [f.to_json() for f in faults], "explained": [e.to_json() for e in report.explained]}))
        return
    table = Table(title=f"FlowPulse: {len(faults)} lossy link(s)")
    for col in ("switch", "port", "peer", "first iteration", "detected", "loss estimate"):
        table.add_column(col)
    for f in faults:
        table.add_row(
            escape(f.switch),
            escape(f.port),
            escape(f.peer),
            str(f.first_iteration),
            str(f.detected_iteration),
            f"{100 * f.loss_estimate:.2f}%",
        )
    Console().print(table)
    for e in report.explained:  # traffic, not loss: an unmarked down link, or one spine's traffic moved
        where = f"{e.leaf}-{e.spine}" if e.leaf else e.spine
        Console().print(f"not a loss: {escape(e.kind)} at {escape(where)} from iteration {e.first_iteration}")


@flowpulse_app.command("simulate")
def simulate_cmd(
    out: Annotated[Path, typer.Option(help="Folder for counters.parquet and topology.json.")],
    leaves: Annotated[int, typer.Option(help="Leaf switches.")] = 4,
    spines: Annotated[int, typer.Option(help="Spine switches.")] = 8,
    hosts_per_leaf: Annotated[int, typer.Option(help="Hosts under each leaf.")] = 8,
    iterations: Annotated[int, typer.Option(help="All-reduce iterations.")] = 60,
    buffer_gib: Annotated[float, typer.Option(help="All-reduce buffer per iteration, GiB.")] = 16.0,
    loss: Annotated[float, typer.Option(help="Loss rate of the lossy link (0 for a healthy run).")] = 0.01,
    lossy_leaf: Annotated[int, typer.Option(help="Leaf index of the lossy link.")] = 1,
    lossy_spine: Annotated[int, typer.Option(help="Spine index of the lossy link.")] = 2,
    direction: Annotated[str, typer.Option(help="Lossy direction: up, down or both.")] = "both",
    start: Annotated[int, typer.Option(help="Iteration the loss begins.")] = 30,
    down: Annotated[list[str] | None, typer.Option(help="Down link as LEAF,SPINE (repeatable).")] = None,
    leaves_only: Annotated[bool, typer.Option(help="Export only the leaf switches' counters.")] = False,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
) -> None:
    """Write example counters and topology of a sprayed fat tree running ring all-reduce."""
    for value, flag in ((leaves, "--leaves"), (spines, "--spines"), (hosts_per_leaf, "--hosts-per-leaf")):
        check_int_option(value, flag, 1, MAX_SWITCHES)
    check_int_option(iterations, "--iterations", 1, MAX_ITERATIONS)
    check_int_option(seed, "--seed", 0, MAX_SEED)
    check_number_option(buffer_gib, "--buffer-gib", 0.0, MAX_BUFFER_GIB, low_open=True)
    if iterations * leaves * spines > MAX_CELLS:
        fail(f"--iterations x --leaves x --spines must be at most {MAX_CELLS:,}, got {iterations * leaves * spines:,}")
    try:
        dead = [_leaf_spine(d) for d in down or []]
        topo = fat_tree(leaves, spines, hosts_per_leaf, down=dead)
        lossy = [LossyLink(lossy_leaf, lossy_spine, loss, direction, start)] if loss != 0 else []  # type: ignore[arg-type]
        if lossy and not 0 <= start < iterations:
            raise ValueError(f"--start must be an iteration in 0..{iterations - 1} (--iterations), got {start}")
        if lossy and (lossy_leaf, lossy_spine) in dead:
            raise ValueError(f"the lossy link {lossy_leaf},{lossy_spine} is also given as --down")
        collective = RingAllReduce(buffer_bytes=int(buffer_gib * 2**30))
        counters = simulate(topo, iterations, collective=collective, lossy=lossy, seed=seed)
    except ValueError as exc:
        fail(str(exc))
    frame = counters_frame(counters, topo.leaves if leaves_only else None)
    with writing_to("--out", out):
        out.mkdir(parents=True, exist_ok=True)
        frame.to_parquet(out / "counters.parquet", index=False)
        (out / "topology.json").write_text(json.dumps(topology_to_dict(topo), indent=1))
    typer.echo(f"wrote {len(frame)} counter rows to {out / 'counters.parquet'} and {out / 'topology.json'}")


def _leaf_spine(text: str) -> tuple[int, int]:
    parts = text.split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"--down takes LEAF,SPINE (two indices), got {shown(text)}")
    return int(parts[0]), int(parts[1])


def register(app: typer.Typer) -> None:
    """Add the ``flowpulse`` sub-command group to the ``faultsense`` app."""
    app.add_typer(flowpulse_app, name="flowpulse")
