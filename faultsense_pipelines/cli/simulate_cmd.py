"""``faultsense simulate``: Phase 1 + Phase 2 on a simulated replica described by a scenario file."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..cover import COVER_METHODS, plan_cover
from ..localize import Localization, localize
from ..localize.suspects import MedianRatioRule, default_rule
from ..replica.vocabulary import DEFAULT_DRILLDOWN, DrilldownMethod
from ..sim.scenario import MAX_SCENARIO_BYTES, parse_scenario
from ..textfile import TextFileError, load_json, read_text
from ..validation import MAX_MIN_SLOWDOWN, MIN_ERROR_BUDGET, shown
from .errors import check_drilldown_option, check_repeats_option, cover_too_large, fail
from .options import DrilldownOption, JsonOption, RecheckOption

__all__ = ["register", "simulate"]


def simulate(
    scenario: Annotated[Path, typer.Option("--scenario", help="Scenario JSON file.")],
    as_json: JsonOption = False,
    cover: Annotated[str, typer.Option("--cover", help="Phase 1 cover: greedy | best.")] = "best",
    drilldown: DrilldownOption = DEFAULT_DRILLDOWN.value,
    repeats: Annotated[
        str | None,
        typer.Option("--repeats", metavar="INTEGER", help="Measurements per probe (median); default: the scenario's, else 1."),
    ] = None,
    alpha: Annotated[
        float | None,
        typer.Option("--alpha", help="Use the paper's rule T_i > alpha * median(T) instead of the robust rule."),
    ] = None,
    min_slowdown: Annotated[
        float | None,
        typer.Option(
            "--min-slowdown",
            help="Sequential drill-down: smallest slowdown a verdict claims (> 1); default: the scenario's, else 1.2.",
        ),
    ] = None,
    error_budget: Annotated[
        float | None,
        typer.Option(
            "--error-budget",
            help="Sequential drill-down: expected healthy components confirmed per sweep, at most, in [1e-06, 0.5]; "
            "default: the scenario's alpha, else 0.01.",
        ),
    ] = None,
    phase2_budget: Annotated[
        int | None,
        typer.Option(
            "--phase2-budget",
            help="Sequential drill-down: Phase 2 probes, at most (>= 0); default: the scenario's, else about Phase 1's.",
        ),
    ] = None,
    recheck: RecheckOption = True,
) -> None:
    """Localize the faults of a simulated replica (FaultSense Phase 1 + Phase 2)."""
    if cover not in COVER_METHODS:
        fail(f"--cover must be one of {', '.join(COVER_METHODS)}, got {shown(cover)}")
    method = check_drilldown_option(drilldown, recheck)
    count = check_repeats_option(repeats)
    try:
        obj = load_json(read_text(scenario, MAX_SCENARIO_BYTES))  # duplicate keys and huge integers refused
    except TextFileError as exc:
        fail(f"--scenario {scenario}: {exc}")
    try:
        sc = parse_scenario(obj)
    except ValueError as exc:
        fail(f"scenario {scenario}: {exc}")
    try:
        rule = default_rule() if alpha is None else MedianRatioRule(alpha)
    except ValueError as exc:
        fail(f"--alpha: {exc}")
    for flag, value in (("--error-budget", error_budget), ("--phase2-budget", phase2_budget), ("--min-slowdown", min_slowdown)):
        if value is not None and method != DrilldownMethod.SEQUENTIAL:
            fail(f"{flag} is an option of --drilldown sequential, got --drilldown {method}")
    if min_slowdown is not None and not (math.isfinite(min_slowdown) and 1.0 < min_slowdown <= MAX_MIN_SLOWDOWN):
        fail(f"--min-slowdown must be a finite number in (1, {MAX_MIN_SLOWDOWN:g}], got {shown(min_slowdown)}")
    if error_budget is not None and not (math.isfinite(error_budget) and MIN_ERROR_BUDGET <= error_budget <= 0.5):
        fail(f"--error-budget must be a finite number in [{MIN_ERROR_BUDGET:g}, 0.5], got {shown(error_budget)}")
    if phase2_budget is not None and not 0 <= phase2_budget <= 10_000_000:
        fail(f"--phase2-budget must be an integer in [0, 10000000], got {shown(phase2_budget)}")
    if problem := cover_too_large(sc.n_gpus, sc.probe_size):
        fail(f"scenario {scenario}: {problem}")
    plan = plan_cover(sc.n_gpus, sc.probe_size, cover)
    try:
        result = localize(
            sc.replica(),
            plan,
            repeats=sc.repeats if count is None else count,
            rule=rule,
            method=method,
            recheck_explained=recheck,
            topology=sc.topology,
            alpha=sc.alpha if error_budget is None else error_budget,
            min_slowdown=sc.min_slowdown if min_slowdown is None else min_slowdown,
            phase2_budget=sc.phase2_budget if phase2_budget is None else phase2_budget,
            seed=sc.seed,
        )
    except ValueError as exc:  # the scenario's bounds leave none, but a simulated latency that overflows says so in one line
        fail(f"scenario {scenario}: {exc}")
    if as_json:
        typer.echo(json.dumps(result.to_dict()))
    else:
        Console().print(_table(result, method))


def _table(result: Localization, method: DrilldownMethod) -> Table:
    p1 = result.phase1
    table = Table(title=f"FaultSense: {p1.gpus} GPUs, probe size {p1.probe_size}, cover {p1.cover_method}, drill-down {method}")
    table.add_column("component")
    table.add_column("status")
    table.add_column("slowdown", justify="right")
    table.add_column("confidence", justify="right")
    table.add_column("Phase 2 probes", justify="right")
    notes = any(v.reason for v in result.verdicts)
    if notes:
        table.add_column("why inconclusive")
    order = lambda v: (v.shared is None, v.component_kind, -1 if v.gpu is None else v.gpu, v.peer_gpu or -1, v.component)  # noqa: E731
    for v in sorted(result.verdicts, key=order):  # GPU 2 before GPU 10
        name = v.component if v.shared is not None else f"GPU {v.gpu}" if v.peer_gpu is None else f"link {v.gpu}-{v.peer_gpu}"
        slowdown = "" if v.slowdown is None else f"{v.slowdown:.2f}x"
        confidence = "-" if v.confidence is None else ">0.999" if v.confidence > 0.999 else f"{v.confidence:.3f}"
        table.add_row(name, v.status, slowdown, confidence, str(v.probes_used), *((v.reason or "",) if notes else ()))
    degraded = "  REPLICA DEGRADED (most probes slow): no localization" if result.replica_degraded else ""
    unjudged = f"; unjudged links {result.unjudged_links}" if result.unjudged_links else ""
    legend = {
        DrilldownMethod.SEQUENTIAL: "; confidence: 1 - the adjusted anytime p-value (docs/verdicts.md)",
    }.get(method, "")
    table.caption = (
        f"probes: Phase 1 {result.probes_phase1}, Phase 2 {result.probes_phase2}; "
        f"suspect probes {len(p1.suspect_probes)}{unjudged}{degraded}{legend}"
    )
    return table


def register(app: typer.Typer) -> None:
    """Add ``simulate`` to the ``faultsense`` command."""
    app.command("simulate")(simulate)
