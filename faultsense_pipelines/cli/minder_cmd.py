"""``faultsense minder train`` / ``faultsense minder scan``: the Minder detector on a metrics file.

``scan`` without ``--model`` trains a model on the file's own history first (all of it:
a fault touches one machine of many, so the fleet is healthy by majority) and then scans
the same file; pass ``--model`` from ``train`` on healthy history for the intended use.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..validation import shown
from .errors import MAX_SEED, check_int_option, fail, writing_to
from .options import MetricsOption

__all__ = ["register"]

#: Most training steps per metric model (``--steps``; the default is 150).
MAX_TRAIN_STEPS = 100_000


def _read_labels(path: Path) -> list:
    """Known faults from a CSV with columns machine, start[, end] (ISO 8601, UTC)."""
    import pandas as pd

    from faultsense_pipelines.minder import FaultLabel

    try:
        frame = pd.read_csv(path, dtype=str)
    except (OSError, pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        fail(f"cannot read labels {path}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    missing = [c for c in ("machine", "start") if c not in frame.columns]
    if missing:
        fail(f"labels {path}: missing column {shown(missing[0])} (need machine, start[, end])")

    def utc(text: str) -> pd.Timestamp:
        stamp = pd.Timestamp(text)
        return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")

    labels = []
    for row, record in enumerate(frame.to_dict("records")):
        end = record.get("end")
        try:
            labels.append(FaultLabel(str(record["machine"]), utc(record["start"]), None if pd.isna(end) else utc(end)))
        except (TypeError, ValueError):
            fail(f"labels {path}: bad time at row {row}: start={shown(record['start'])} end={shown(end)}")
    return labels


def _settings(base, **changes):
    try:
        return base.updated(**changes)
    except ValueError as exc:
        fail(str(exc))


def register(app: typer.Typer) -> None:
    """Add ``faultsense minder ...`` to ``app``."""
    minder_app = typer.Typer(help="Find faulty machines from monitoring metrics (Minder).", no_args_is_help=True)
    app.add_typer(minder_app, name="minder")

    @minder_app.command("train")
    def train(
        metrics: MetricsOption,
        out: Path = typer.Option(..., "--out", help="Model directory to write (minder.safetensors + minder.json)."),
        labels: Path = typer.Option(
            None, "--labels", help="Known faults (CSV: machine, start[, end]) to learn the metric priority from."
        ),
        window_s: float = typer.Option(None, "--window-s", help="Comparison window in seconds (default 60)."),
        continuity_s: float = typer.Option(None, "--continuity-s", help="Seconds a machine must stay the outlier (default 300)."),
        threshold: float = typer.Option(None, "--threshold", help="Outlier score threshold (default 14)."),
        steps: int = typer.Option(None, "--steps", help="Training steps per metric model (default 150)."),
        seed: int = typer.Option(None, "--seed", help="Random seed (default 0)."),
        interval_s: float = typer.Option(
            None,
            "--interval-s",
            help="Average samples onto this interval, in seconds (default: the data's own). Scans use the model's.",
        ),
    ) -> None:
        """Train one LSTM-VAE per metric on the fleet's history and save the model."""
        check_int_option(steps, "--steps", 1, MAX_TRAIN_STEPS)  # before torch is imported (seconds)
        check_int_option(seed, "--seed", 0, MAX_SEED)
        from faultsense_pipelines.minder import MinderSettings, load_metrics, save_model, train_minder

        settings = _settings(MinderSettings(), window_s=window_s, continuity_s=continuity_s, threshold=threshold,
                             train_steps=steps, seed=seed)  # fmt: skip
        known = _read_labels(labels) if labels else []
        began = time.perf_counter()
        try:
            model = train_minder(load_metrics(metrics, interval_s), settings, known)
        except ValueError as exc:
            fail(str(exc))
        with writing_to("--out", out):
            version = save_model(model, out)
        typer.echo(
            f"trained Minder model {version} on {len(model.metrics)} metrics "
            f"(window {model.window} x {model.interval_s:g} s) in {time.perf_counter() - began:.1f} s -> {out}"
        )

    @minder_app.command("scan")
    def scan(
        metrics: MetricsOption,
        model_dir: Path = typer.Option(
            None, "--model", help="Model directory from 'minder train' (default: train on this file first)."
        ),
        as_json: bool = typer.Option(False, "--json", help='Print {"faults": [...]} as JSON.'),
        last_s: float = typer.Option(None, "--last-s", help="Scan only the latest this many seconds."),
        continuity_s: float = typer.Option(
            None, "--continuity-s", help="Seconds a machine must stay the outlier (default: the model's)."
        ),
        threshold: float = typer.Option(None, "--threshold", help="Outlier score threshold (default: the model's)."),
        steps: int = typer.Option(None, "--steps", help="Without --model: training steps per metric model (default 150)."),
    ) -> None:
        """Report machines that stayed far from the rest of the fleet."""
        check_int_option(steps, "--steps", 1, MAX_TRAIN_STEPS)  # before torch is imported (seconds)
        from faultsense_pipelines.minder import MinderSettings, load_metrics, load_model, train_minder
        from faultsense_pipelines.minder import scan as minder_scan

        try:
            model = load_model(model_dir) if model_dir else None
            array = load_metrics(metrics, model.interval_s if model else None)
            if model is None:
                model = train_minder(array, _settings(MinderSettings(), train_steps=steps))
            if last_s is not None:
                array = array.tail(last_s)
            settings = _settings(model.settings, continuity_s=continuity_s, threshold=threshold)
            faults = minder_scan(array, model, settings)
        except ValueError as exc:
            fail(str(exc))
        if as_json:
            typer.echo(json.dumps({"faults": [f.to_dict() for f in faults]}))
            return
        table = Table(title=f"Minder: {len(faults)} faulty machine(s) in {escape(str(metrics))}", title_justify="left")
        for col in ("machine", "onset (UTC)", "confirmed (UTC)", "metric", "score"):
            table.add_column(col)
        for f in faults:
            when = "%Y-%m-%d %H:%M:%S"
            # machine and metric names come from the metrics file: never read as rich markup
            table.add_row(
                escape(f.machine), f.start.strftime(when), f.confirmed_at.strftime(when), escape(f.metric), f"{f.score:.1f}"
            )
        Console().print(table)
