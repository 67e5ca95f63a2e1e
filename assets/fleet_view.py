"""``fleet_health``: the current health of every replica of the fleet, for the UI.

One cell per (replica, hour) of the last :data:`RECENT_HOURS` hours, from the ledger's
partitions of the days those hours touch (file-pruned: no other day's file is opened):

* ``faulty`` -- the hour's completed sweep confirmed a GPU or link;
* ``degraded`` -- it judged the replica degraded as a whole (most probes slow);
* ``inconclusive`` -- it left something unjudged (e.g. ``--no-recheck``);
* ``healthy`` -- a completed sweep, nothing found;
* ``error`` -- only a failed attempt (``...-failed`` batch: the executor could not measure);
* ``not swept`` -- nothing for that hour.

The asset's value is one row per replica (its latest swept hour, that hour's health and
confirmed components, faulty hours in the window); its metadata shows that table and a PNG
heatmap, replicas x hours, coloured by health, twice: ``heatmap``, small enough for the
Dagster UI to draw it inline on the asset page (:func:`inline_heatmap`), and
``heatmap_detail``, the labelled matplotlib figure behind the UI's "[Show Markdown]" link. It is refreshed by the automation sensor
after ``fault_ledger`` updates (:data:`~.automation.AFTER_LEDGER_UPDATES`) and by
``faultsense sweep`` after its runs.
"""

import base64
import io
import struct
import zlib
from datetime import UTC, datetime, timedelta

import dagster as dg
import pandas as pd

from faultsense_pipelines.ledger import FAULT_LEDGER, PROBE_RUNS
from faultsense_pipelines.resources.fleet import FleetResource
from faultsense_pipelines.resources.ledger import LedgerResource

from .automation import AFTER_LEDGER_UPDATES
from .ledger import fault_ledger
from .partitions import check_hour_key, current_hour_key
from .report import frame_markdown

__all__ = [
    "HEALTH_COLORS",
    "INLINE_MARKDOWN_LIMIT",
    "RECENT_HOURS",
    "FleetViewConfig",
    "fleet_health",
    "health_grid",
    "inline_heatmap",
]

#: Hours the fleet view covers, ending with the current hour.
RECENT_HOURS = 24
#: Health of a (replica, hour) cell -> heatmap colour, worst first.
HEALTH_COLORS = {
    "faulty": "#d62728",
    "error": "#7f7f7f",
    "degraded": "#ff7f0e",
    "inconclusive": "#bcbd22",
    "healthy": "#2ca02c",
    "not swept": "#f0f0f0",
}
_RANK = {h: i for i, h in enumerate(HEALTH_COLORS)}
#: Markdown metadata shorter than this many characters is drawn inline on a Dagster asset page;
#: longer markdown sits behind a "[Show Markdown]" link (dagster-webserver's ``MetadataEntry``:
#: ``expandSmallValues && mdStr.length < 1000``, ui-core/src/metadata/MetadataEntry.tsx).
INLINE_MARKDOWN_LIMIT = 1000
#: Pixel sizes (width, height) of one (replica, hour) cell that :func:`inline_heatmap` tries, largest first.
_CELL_SIZES = ((32, 20), (24, 16), (16, 12), (12, 9), (8, 6), (4, 4), (2, 2))
_COLOR_NAMES = {
    "faulty": "red",
    "error": "grey",
    "degraded": "orange",
    "inconclusive": "olive",
    "healthy": "green",
    "not swept": "light grey",
}


class FleetViewConfig(dg.Config):
    """Run config of ``fleet_health``: ``end_hour`` (``YYYY-MM-DD-HH:00``; empty: the current
    UTC hour) and the number of ``hours`` shown, 1..168."""

    end_hour: str = ""
    hours: int = RECENT_HOURS


def _hour_of(batch: str, replica: str) -> tuple[int, bool] | None:
    """(hour, failed) of a sweep batch ``faultsense-<replica>-hHH[-failed]``; None for other writers."""
    prefix = f"faultsense-{replica}-h"
    if not batch.startswith(prefix):
        return None
    rest = batch[len(prefix) :]
    failed = rest.endswith("-failed")
    digits = rest[: -len("-failed")] if failed else rest
    return (int(digits), failed) if digits.isdigit() and len(digits) == 2 else None


def _strings(df: pd.DataFrame, *columns: str) -> list[tuple[str, ...]]:
    return list(zip(*(map(str, df[c].tolist()) for c in columns), strict=True))


def health_grid(faults: pd.DataFrame, runs: pd.DataFrame, replicas: list[str], hours: list[datetime]) -> pd.DataFrame:
    """The health of each (replica, hour): a replicas x hours frame of :data:`HEALTH_COLORS` words.

    Args:
        faults: fault rows (``replica``, ``date``, ``batch``, ``status``, ``component_kind``).
        runs: probe rows (``replica``, ``date``, ``batch``), one or more per sweep.
        replicas: row order (the fleet's replicas).
        hours: column order (UTC hour starts).
    """
    cells = {r: dict.fromkeys(hours, "not swept") for r in replicas}
    wanted = {(h.date().isoformat(), h.hour): h for h in hours}
    swept: dict[tuple[str, datetime], bool] = {}  # (replica, hour) -> a completed sweep exists
    for replica, day, batch in set(_strings(runs, "replica", "date", "batch")):
        parsed = _hour_of(batch, replica)
        if replica in cells and parsed and (day, parsed[0]) in wanted:
            key = (replica, wanted[(day, parsed[0])])
            swept[key] = swept.get(key, False) or not parsed[1]
    for (replica, hour), completed in swept.items():
        cells[replica][hour] = "healthy" if completed else "error"
    for replica, day, batch, status, kind in _strings(faults, "replica", "date", "batch", "status", "component_kind"):
        parsed = _hour_of(batch, replica)
        if replica not in cells or not parsed or parsed[1] or (day, parsed[0]) not in wanted:
            continue
        hour = wanted[(day, parsed[0])]
        if status == "confirmed":
            word = "faulty"
        elif kind == "replica":
            word = "degraded" if status == "suspect" else "inconclusive"
        elif status == "inconclusive":
            word = "inconclusive"
        else:
            continue  # a suspect or masked component of a completed sweep: not a verdict against it
        if _RANK[word] < _RANK[cells[replica][hour]]:
            cells[replica][hour] = word
    grid = pd.DataFrame([[cells[r][h] for h in hours] for r in replicas], index=pd.Index(replicas, name="replica"))
    grid.columns = pd.Index(hours)
    return grid


def _heatmap(grid: pd.DataFrame, hours: list[datetime], title: str) -> dg.MetadataValue:
    """The grid as a PNG heatmap: one row per replica, one column per hour, legend outside."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    words = list(HEALTH_COLORS)
    codes = [[words.index(str(v)) for v in row] for row in grid.to_numpy().tolist()]
    height = min(2.0 + 0.18 * len(grid), 40.0)
    fig = Figure(figsize=(10, height), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    colors = ListedColormap(list(HEALTH_COLORS.values()))
    ax.imshow(codes, aspect="auto", interpolation="nearest", cmap=colors, vmin=0, vmax=len(words) - 1)
    step = max(1, len(hours) // 12)
    ax.set_xticks(range(0, len(hours), step), [h.strftime("%m-%d\n%H:00") for h in hours[::step]], fontsize=7)
    ax.set_yticks(range(len(grid)), [str(r) for r in grid.index], fontsize=7 if len(grid) <= 60 else 4)
    ax.set_xlabel("hour (UTC)")
    ax.set_title(title, fontsize=10)
    ax.legend(
        handles=[Patch(color=c, label=w) for w, c in HEALTH_COLORS.items()],
        loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8,
    )  # fmt: skip
    fig.subplots_adjust(left=0.14, right=0.84, top=1 - 0.5 / height, bottom=0.9 / height)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    data = base64.b64encode(buf.getvalue()).decode()
    return dg.MetadataValue.md(f"![fleet health](data:image/png;base64,{data})")


def _palette_png(codes: list[list[int]], cell: tuple[int, int]) -> bytes:
    """A palette PNG of ``codes`` (rows of indices into :data:`HEALTH_COLORS`), each cell
    ``cell`` = (width, height) pixels; built by hand (zlib), a few hundred bytes for a fleet."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    width, height = cell
    raw = bytearray()
    for row in codes:
        line = bytes(c for c in row for _ in range(width))
        raw += b"\x00" + line  # filter None, then "Up" rows: zeros, which deflate to almost nothing
        raw += (b"\x02" + bytes(len(line))) * (height - 1)
    header = struct.pack(">IIBBBBB", len(codes[0]) * width, len(codes) * height, 8, 3, 0, 0, 0)
    palette = b"".join(bytes.fromhex(c[1:]) for c in HEALTH_COLORS.values())
    body = chunk(b"IHDR", header) + chunk(b"PLTE", palette) + chunk(b"IDAT", zlib.compress(bytes(raw), 9))
    return b"\x89PNG\r\n\x1a\n" + body + chunk(b"IEND", b"")


def inline_heatmap(grid: pd.DataFrame, end: str) -> str:
    """The heatmap as markdown short enough for the Dagster UI to draw inline (under
    :data:`INLINE_MARKDOWN_LIMIT` characters): a palette PNG, one block of pixels per
    (replica, hour) cell (rows: replicas in fleet order, columns: hours, oldest left), and a
    line saying what it shows and which colour is which health.

    Tries the cell sizes of :data:`_CELL_SIZES`, largest first, with every replica; when none
    fits (a large fleet with many distinct rows), only the replicas with an hour that is not
    ``healthy``, halved until they fit. Returns a line without an image when not even one row
    fits (never for a 24-hour grid).

    Args:
        grid: :func:`health_grid`'s frame (replicas x hours of :data:`HEALTH_COLORS` words).
        end: the last hour shown (``YYYY-MM-DD-HH:00``), for the caption.
    """
    words = list(HEALTH_COLORS)
    names = [str(r) for r in grid.index]
    codes = {n: [words.index(str(v)) for v in row] for n, row in zip(names, grid.to_numpy().tolist(), strict=True)}
    legend = ", ".join(f"{_COLOR_NAMES[w]} {w}" for w in words)
    problems = [n for n in names if any(c != words.index("healthy") for c in codes[n])]
    choices = [(names, f"{len(names)} replicas")]
    pool, which = (problems, " with an hour not healthy") if 0 < len(problems) < len(names) else (names, "")
    subset = pool[: len(pool) // 2] if pool is names else pool
    while subset:
        choices.append((subset, f"{len(subset)} of the {len(pool)} replicas{which} (of {len(names)})"))
        subset = subset[: len(subset) // 2]
    for rows, what in choices:
        caption = f"rows: {what}, fleet order; columns: {len(grid.columns)} hours to {end} UTC, oldest left. {legend}."
        for cell in _CELL_SIZES:
            data = base64.b64encode(_palette_png([codes[n] for n in rows], cell)).decode()
            text = f"![fleet health now](data:image/png;base64,{data})\n\n{caption}"
            if len(text) < INLINE_MARKDOWN_LIMIT:
                return text
    return f"_too many distinct rows to draw inline: see heatmap_detail_ ({len(names)} replicas)"


def _summary(grid: pd.DataFrame, hours: list[datetime], faults: pd.DataFrame) -> pd.DataFrame:
    """One row per replica: latest swept hour, its health and confirmed components, faulty hours."""
    confirmed: dict[tuple[str, str, str], list[str]] = {}
    for replica, day, batch, status, component in _strings(faults, "replica", "date", "batch", "status", "component"):
        if status == "confirmed":
            confirmed.setdefault((replica, day, batch), []).append(component)
    rows = []
    for replica, row in zip(grid.index, grid.to_numpy().tolist(), strict=True):
        words = [str(v) for v in row]
        swept = [i for i, w in enumerate(words) if w != "not swept"]
        last = hours[swept[-1]] if swept else None
        components: list[str] = []
        if last is not None:
            components = confirmed.get((str(replica), last.date().isoformat(), f"faultsense-{replica}-h{last.hour:02d}"), [])
        rows.append(
            {
                "replica": str(replica),
                "last_sweep": last.strftime("%Y-%m-%d-%H:00") if last else "-",
                "health": words[swept[-1]] if swept else "not swept",
                "confirmed": ", ".join(sorted(components)) or "-",
                "faulty_hours": words.count("faulty"),
                "error_hours": words.count("error"),
            }
        )
    return pd.DataFrame(rows)


@dg.asset(
    deps=[fault_ledger],
    group_name="fleet",
    kinds={"pandas"},
    automation_condition=AFTER_LEDGER_UPDATES,
    description=f"Current health of every replica of the fleet, and a heatmap of the last {RECENT_HOURS} hours.",
)
def fleet_health(
    context: dg.AssetExecutionContext, config: FleetViewConfig, fleet: FleetResource, ledger: LedgerResource
) -> dg.Output[pd.DataFrame]:
    if not 1 <= config.hours <= 168:
        raise dg.Failure(description=f"hours must be in 1..168, got {config.hours}")
    try:
        end = check_hour_key(config.end_hour) if config.end_hour else current_hour_key()
    except ValueError as exc:
        raise dg.Failure(description=f"end_hour: {exc}") from None
    last = datetime.strptime(end, "%Y-%m-%d-%H:%M").replace(tzinfo=UTC)
    hours = [last - timedelta(hours=i) for i in range(config.hours - 1, -1, -1)]
    days = sorted({h.date().isoformat() for h in hours})
    store = ledger.store()
    skipped: list[str] = []  # a damaged data file costs its own rows, not the fleet view: named below
    columns = ["replica", "date", "batch", "status", "component_kind", "component"]
    faults = store.read_table(FAULT_LEDGER, files={"date": days}, columns=columns, skipped=skipped).to_pandas()
    runs = store.read_table(PROBE_RUNS, files={"date": days}, columns=columns[:3], skipped=skipped).to_pandas()
    for line in skipped:
        context.log.warning(f"skipped unreadable ledger file {line}")
    replicas = fleet.load().names
    grid = health_grid(faults, runs, replicas, hours)
    summary = _summary(grid, hours, faults)
    counts: dict[str, int] = {}
    for word in summary["health"].tolist() if len(summary) else []:
        counts[str(word)] = counts.get(str(word), 0) + 1
    return dg.Output(
        summary,
        metadata={
            "replicas": len(replicas),
            "end_hour": end,
            "health_now": dg.MetadataValue.json(counts),
            "fleet": dg.MetadataValue.md(frame_markdown(summary)),
            "heatmap": dg.MetadataValue.md(inline_heatmap(grid, end)),
            "heatmap_detail": _heatmap(
                grid, hours, f"fleet health, {len(replicas)} replicas, last {config.hours} hours to {end} UTC"
            ),
            "ledger": store.display_uri,
            "skipped_files": dg.MetadataValue.md("\n".join(f"- {line}" for line in skipped) or "none"),
        },
    )
