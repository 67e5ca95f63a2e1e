"""What the UI shows for a sweep: markdown tables of suspects and verdicts, a latency plot.

Pure functions from the localization results to Dagster metadata values; nothing here
measures or writes anything.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from urllib.parse import quote

import dagster as dg

from faultsense_pipelines.ledger import gpu_component, link_component
from faultsense_pipelines.localize import Phase1Result, ProbeRecord, Verdict
from faultsense_pipelines.replica.vocabulary import Outcome, Status

__all__ = [
    "component_of",
    "frame_markdown",
    "frame_table",
    "latency_plot",
    "partition_metadata",
    "partition_url",
    "suspects_markdown",
    "verdicts_markdown",
]

_MAX_ROWS = 50


def component_of(v: Verdict) -> str:
    """The ledger's component string of a verdict (``gpu:17``, ``link:3-40``, ``nic:node3``)."""
    if v.shared is not None or v.gpu is None:
        return v.component
    return gpu_component(v.gpu) if v.peer_gpu is None else link_component(v.gpu, v.peer_gpu)


def partition_url(asset: str, partition: str) -> dg.UrlMetadataValue:
    """A link to one partition of ``asset`` on its page in the Dagster UI (a path relative to
    the webserver's root, e.g. ``/assets/fault_ledger?view=partitions&partition=2026-11-30-06%3A00%7Csim-64``)."""
    return dg.MetadataValue.url(f"/assets/{quote(asset)}?view=partitions&partition={quote(partition, safe='')}")


def partition_metadata(asset: str, hour: str, replica: str, partition: str) -> dict[str, dg.RawMetadataValue]:
    """The metadata that says which sweep partition a materialization shows: ``partition``
    (``hour|replica``, Dagster's key), ``replica``, ``hour`` (``YYYY-MM-DD-HH:00`` UTC),
    ``partition_page``, a link to that partition of ``asset`` (:func:`partition_url`), and
    ``fleet_now``, a link to ``fleet_health`` (every replica's latest sweep: the asset page
    opens on the partition written last, which may be an older or a healthy one). Text and
    links, not numbers: Dagster's Plots tab leaves them out."""
    return {
        "partition": partition,
        "replica": replica,
        "hour": hour,
        "partition_page": partition_url(asset, partition),
        "fleet_now": dg.MetadataValue.url("/assets/fleet_health"),
    }


def _table(header: Sequence[str], rows: Sequence[Sequence[object]], empty: str) -> str:
    if not rows:
        return empty
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows[:_MAX_ROWS]]
    if len(rows) > _MAX_ROWS:
        lines.append(f"\n_{len(rows) - _MAX_ROWS} more rows not shown_")
    return "\n".join(lines)


def frame_table(df, limit: int = 20) -> dg.TableMetadataValue:
    """The first ``limit`` rows of a pandas DataFrame as a Dagster table, drawn inline on the
    asset page (unlike long markdown) and wrapped to its column: every cell as text, floats
    to at most 3 decimals, missing values ``-``."""
    import pandas as pd

    def cell(v: object) -> str:
        if v is None or (not isinstance(v, list | tuple | dict) and bool(pd.isna(v))):  # type: ignore[call-overload]
            return "-"
        if isinstance(v, float):
            return f"{v:.3f}".rstrip("0").rstrip(".")
        return str(v)

    columns = [str(c) for c in df.columns]
    records = [
        dg.TableRecord({c: cell(v) for c, v in zip(columns, row, strict=True)}) for row in df.head(limit).itertuples(index=False)
    ]
    return dg.MetadataValue.table(records, schema=dg.TableSchema(columns=[dg.TableColumn(c, "string") for c in columns]))


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
    """Suspects and confirmed faults of a drill-down, one row per component: the node it sits
    on (``-`` where the topology does not say), its status, slowdown, confidence
    (``sequential`` drill-down) and the Phase 2 test probes of its claim."""
    order = {Status.CONFIRMED: 0, Status.SUSPECT: 1, Status.INCONCLUSIVE: 2, Status.MASKED: 3}
    rows = [
        (
            component_of(v),
            v.node or "-",
            v.status,
            "-" if v.slowdown is None else f"{v.slowdown:.2f}x",
            "-" if v.confidence is None else ">0.999" if v.confidence > 0.999 else f"{v.confidence:.3f}",
            _evidence(v),
            v.phase,
            probes_phase1 + v.probes_used,
        )
        for v in sorted(verdicts, key=lambda v: (order.get(v.status, 9), v.gpu is not None, v.gpu or 0, v.peer_gpu or -1))
    ]
    header = ("component", "node", "status", "slowdown", "confidence", "evidence", "phase", "probes used")
    return _table(header, rows, "No faults found.")


def _evidence(v: Verdict) -> str:
    """``"4 accusing probes: [2,3,8,9] [2,3,10,11] …"`` (the first two), or the reason."""
    if v.evidence:
        shown = " ".join("[" + ",".join(map(str, p)) + "]" for p in v.evidence[:2])
        more = " …" if len(v.evidence) > 2 else ""
        return f"{len(v.evidence)} accusing probes: {shown}{more}"
    return v.reason or "-"


#: Phase 2 probes up to this many get one x tick each, labelled with the GPUs the probe tested.
_LABELLED_PROBES = 40


def _tested(gpus: Sequence[int]) -> str:
    """What a probe tested, as a tick label: ``gpu 5``, ``1-9`` (a pair), ``0,3,5,7``."""
    if len(gpus) == 1:
        return f"gpu {gpus[0]}"
    if len(gpus) == 2:
        return f"{gpus[0]}-{gpus[1]}"
    shown = ",".join(str(g) for g in gpus[:6])
    return shown + (",..." if len(gpus) > 6 else "")


def latency_plot(
    records: Sequence[ProbeRecord], baseline_ms: float | None, threshold_ms: float | None, title: str
) -> dg.MetadataValue:
    """A PNG (embedded in markdown, 900 x 360 px) of every probe's repeats against the suspect threshold.

    The x axis has integer probe indices; when the plot holds at most 40 probes (a drill-down),
    each has its own tick labelled with the GPUs it tested. The legend sits outside the data,
    right of the axes, so it never hides a point. Drawn on a bare Agg canvas (no pyplot figure
    manager), which is several times cheaper per plot.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(9, 3.6), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    color = {Outcome.PASS: "tab:blue", Outcome.FAIL: "tab:red", Outcome.ERROR: "tab:gray"}
    xs, ys, colors = [], [], []
    for r in records:
        for v in r.latencies_ms:
            xs.append(r.probe_index)
            ys.append(v)
            colors.append(color.get(r.outcome, "tab:blue"))
    ax.scatter(xs, ys, s=10, c=colors, alpha=0.7, label="probe repeats (red: slow)")
    if threshold_ms is not None:
        ax.axhline(threshold_ms, color="tab:red", linestyle="--", linewidth=1, label=f"threshold {threshold_ms:.2f} ms")
    if baseline_ms is not None:
        ax.axhline(baseline_ms, color="tab:green", linestyle=":", linewidth=1, label=f"baseline {baseline_ms:.2f} ms")
    labelled = 0 < len(records) <= _LABELLED_PROBES and any(r.phase == 2 for r in records)
    if labelled:
        ax.set_xticks([r.probe_index for r in records], [_tested(r.gpus) for r in records], rotation=60, fontsize=7, ha="right")
        ax.set_xlabel("probe (the GPUs it tested)")
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("probe index")
    ax.set_ylabel("latency (ms)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    # fixed margins (tight_layout would draw the figure once more just to measure it)
    fig.subplots_adjust(left=0.07, right=0.76, top=0.91, bottom=0.27 if labelled else 0.14)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    data = base64.b64encode(buf.getvalue()).decode()
    return dg.MetadataValue.md(f"![probe latencies](data:image/png;base64,{data})")
