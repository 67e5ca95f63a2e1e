"""What the UI shows for a sweep: markdown tables of suspects and verdicts, a latency plot.

Pure functions from the localization results to Dagster metadata values; nothing here
measures or writes anything.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence

import dagster as dg

from faultsense_pipelines.ledger import gpu_component, link_component
from faultsense_pipelines.localize import Phase1Result, ProbeRecord, Verdict
from faultsense_pipelines.vocabulary import Outcome, Status

__all__ = ["component_of", "frame_markdown", "latency_plot", "suspects_markdown", "verdicts_markdown"]

_MAX_ROWS = 50


def component_of(v: Verdict) -> str:
    """The ledger's component string of a verdict (``gpu:17``, ``link:3-40``)."""
    return gpu_component(v.gpu) if v.peer_gpu is None else link_component(v.gpu, v.peer_gpu)


def _table(header: Sequence[str], rows: Sequence[Sequence[object]], empty: str) -> str:
    if not rows:
        return empty
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows[:_MAX_ROWS]]
    if len(rows) > _MAX_ROWS:
        lines.append(f"\n_{len(rows) - _MAX_ROWS} more rows not shown_")
    return "\n".join(lines)


def frame_markdown(df) -> str:
    """A pandas DataFrame as a markdown table (at most 50 rows)."""
    return _table([str(c) for c in df.columns], [tuple(r) for r in df.itertuples(index=False)], "_empty_")


def _fmt_ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def suspects_markdown(phase1: Phase1Result) -> str:
    """The suspect probes of a Phase 1 sweep (GPUs, median latency, ratio to the baseline)."""
    rows = []
    for i in phase1.suspect_probes:
        r = phase1.records[i]
        ratio = "-" if not (r.latency_ms and phase1.baseline_ms) else f"{r.latency_ms / phase1.baseline_ms:.2f}x"
        rows.append((i, list(r.gpus), _fmt_ms(r.latency_ms), ratio))
    if phase1.replica_degraded:
        return "**Replica-wide degradation**: most probes are slow; no single suspect is blamed."
    return _table(("probe", "GPUs", "latency ms", "vs baseline"), rows, "No suspect probes.")


def verdicts_markdown(verdicts: Sequence[Verdict], probes_phase1: int) -> str:
    """Suspects and confirmed faults of a drill-down, one row per component."""
    order = {Status.CONFIRMED: 0, Status.SUSPECT: 1, Status.INCONCLUSIVE: 2, Status.MASKED: 3}
    rows = [
        (component_of(v), v.status, "-" if v.slowdown is None else f"{v.slowdown:.2f}x", v.phase, probes_phase1 + v.probes_used)
        for v in sorted(verdicts, key=lambda v: (order.get(v.status, 9), v.gpu, v.peer_gpu or -1))
    ]
    return _table(("component", "status", "slowdown", "phase", "probes used"), rows, "No faults found.")


def latency_plot(
    records: Sequence[ProbeRecord], baseline_ms: float | None, threshold_ms: float | None, title: str
) -> dg.MetadataValue:
    """A PNG (embedded in markdown) of every probe's repeats against the suspect threshold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3), dpi=80)
    try:
        xs, ys, colors = [], [], []
        color = {Outcome.PASS: "tab:blue", Outcome.FAIL: "tab:red", Outcome.ERROR: "tab:gray"}
        for r in records:
            for v in r.latencies_ms:
                xs.append(r.probe_index)
                ys.append(v)
                colors.append(color.get(r.outcome, "tab:blue"))
        ax.scatter(xs, ys, s=8, c=colors, alpha=0.7, label="probe repeats (red: slow)")
        if threshold_ms is not None:
            ax.axhline(threshold_ms, color="tab:red", linestyle="--", linewidth=1, label=f"threshold {threshold_ms:.2f} ms")
        if baseline_ms is not None:
            ax.axhline(baseline_ms, color="tab:green", linestyle=":", linewidth=1, label=f"baseline {baseline_ms:.2f} ms")
        ax.set_xlabel("probe index")
        ax.set_ylabel("latency (ms)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7, loc="upper right")
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
    finally:
        plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode()
    return dg.MetadataValue.md(f"![probe latencies](data:image/png;base64,{data})")
