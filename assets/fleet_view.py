"""``fleet_health``: the fleet *now* -- every replica's current health, for the UI.

"Now" is each replica's latest **completed** sweep by swept hour (its ledger partition), not
by write time: a backfill of an older hour never makes it older, and any order of sweeps and
backfills gives the same "now" (:func:`fleet_now`). It is read from the ledger's partitions
of the newest day with sweeps, then older days one at a time until every replica has a
completed sweep or :data:`LOOKBACK_DAYS` are read (file-pruned by ``date``).

Each (replica, hour) has one health word (:func:`sweep_health`):

* ``faulty`` -- the hour's completed sweep confirmed a component;
* ``degraded`` -- it judged the replica degraded as a whole (most probes slow);
* ``inconclusive`` -- it left something unjudged (e.g. ``--no-recheck``);
* ``healthy`` -- a completed sweep, nothing found;
* ``error`` -- only a failed attempt (``...-failed`` batch: the executor could not measure);
* ``not swept`` -- nothing for that hour.

The asset's value is :func:`fleet_now`'s table (a row per confirmed component of each
replica's latest sweep: node, confidence, since, last sweep hour, age; worst first); its
metadata shows that table inline (``fleet``, a Dagster table), links to the partitions of
``fault_ledger`` with faults, and a heatmap of the :data:`RECENT_HOURS` hours up to the
latest swept hour, replicas x hours, twice: ``heatmap``, a labelled picture short enough for
the Dagster UI to draw inline (:func:`inline_heatmap`), and ``heatmap_detail``, the
matplotlib figure behind the UI's "[Show Markdown]" link. It is refreshed by the automation
sensor after ``fault_ledger`` updates (:data:`~.automation.AFTER_LEDGER_UPDATES`) and by
``faultsense sweep`` after its runs.
"""

import base64
import io
import struct
import zlib
from datetime import UTC, date, datetime, timedelta
from urllib.parse import unquote

import dagster as dg
import pandas as pd

from faultsense_pipelines.ledger import FAULT_LEDGER, PROBE_RUNS, SWEEPS, LedgerStore
from faultsense_pipelines.resources.fleet import FleetResource
from faultsense_pipelines.resources.ledger import LedgerResource

from .automation import AFTER_LEDGER_UPDATES
from .ledger import fault_ledger
from .partitions import check_hour_key, current_hour_key
from .report import partition_url

__all__ = [
    "HEALTH_COLORS",
    "INLINE_MARKDOWN_LIMIT",
    "LOOKBACK_DAYS",
    "NOW_COLUMNS",
    "RECENT_HOURS",
    "SVG_MAX_WIDTH",
    "FleetViewConfig",
    "first_swept_hour",
    "fleet_health",
    "fleet_now",
    "health_grid",
    "heatmap_key",
    "inline_heatmap",
    "sweep_days",
    "sweep_health",
    "ui_table",
]

#: Hours the heatmap covers, ending with the latest swept hour.
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
    """Run config of ``fleet_health``: ``end_hour`` (``YYYY-MM-DD-HH:00``; empty, the default:
    the latest swept hour in the ledger; given: the fleet as of that hour, later sweeps left
    out) and the number of ``hours`` the heatmap shows, 1..168."""

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
    """The health of each (replica, hour): a replicas x hours frame of :data:`HEALTH_COLORS` words
    (:func:`sweep_health`; ``not swept`` where the rows hold no sweep of that hour).

    Args:
        faults: fault rows (``replica``, ``date``, ``batch``, ``status``, ``component_kind``).
        runs: probe rows (``replica``, ``date``, ``batch``), one or more per sweep.
        replicas: row order (the fleet's replicas).
        hours: column order (UTC hour starts).
    """
    cells = sweep_health(faults, runs)
    grid = pd.DataFrame(
        [[cells.get((r, h), "not swept") for h in hours] for r in replicas], index=pd.Index(replicas, name="replica")
    )
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


#: Width (px) of the hours of the labelled inline heatmap, whatever their number (3 px an hour
#: for the default 24), and height (px) of a replica's row (2 of them the gap to the next).
_SVG_GRID_W, _SVG_ROW_H = 72, 14
#: Replica names longer than this are cut (with "…") in the heatmap's labels.
_LABEL_CHARS = 10
#: Width (px) of a character of the labels (10 px sans-serif, rounded up), and the label font size.
_CHAR_PX, _FONT_PX = 6, 10
#: Widest picture (px) :func:`_svg` draws: the names' column, the hours and room for the last
#: hour's label. The Dagster asset page at 1,000 px shows about 148 px of a metadata value (the
#: rest of the metadata table scrolls sideways; tests/assets/test_ui.py measures it).
SVG_MAX_WIDTH = 4 + _CHAR_PX * _LABEL_CHARS + _SVG_GRID_W + 6
#: Hours between two hour labels, the first that leaves 14 px between labels.
_TICK_STEPS = (6, 12, 24, 48, 96)


def _num(x: float) -> str:
    """A coordinate for SVG text: at most two decimals, no trailing zeros."""
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _svg(rows: list[tuple[str, list[int]]], hours: list[datetime]) -> str:
    """The labelled heatmap as an SVG document at most :data:`SVG_MAX_WIDTH` px wide, so that
    it lies whole in the asset page's metadata column at 1,000 px as at 1,600 px: replica names
    left of their rows (cut at :data:`_LABEL_CHARS`), the hours :data:`_SVG_GRID_W` px wide
    in all (3 px an hour for 24, narrower when more), the hour (UTC, ``HH``) under every sixth
    column (or 12th, 24th... when narrower) counted back from the latest, which is always
    labelled and inside the picture. "not swept" cells are the background; each other colour
    is one path of horizontal runs (rows 2 px apart)."""
    cw, ch = _SVG_GRID_W / len(hours), _SVG_ROW_H
    words = list(HEALTH_COLORS)
    rows = [(name if len(name) <= _LABEL_CHARS else name[: _LABEL_CHARS - 1] + "\u2026", row) for name, row in rows]
    left = 4 + _CHAR_PX * max(len(name) for name, _ in rows)
    grid_w, grid_h = _SVG_GRID_W, ch * len(rows)
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{left + grid_w + 6}' height='{grid_h + 13}' "
        f"font-family='sans-serif' font-size='{_FONT_PX}'>",
        f"<rect x='{left}' width='{grid_w}' height='{grid_h}' fill='{HEALTH_COLORS['not swept']}'/>",
    ]
    for code, word in enumerate(words):
        if word == "not swept":
            continue
        d = []
        for r, (_, row) in enumerate(rows):
            c = 0
            while c < len(row):
                if row[c] != code:
                    c += 1
                    continue
                start = c
                while c < len(row) and row[c] == code:
                    c += 1
                x = _num(left + cw * start)
                d.append(f"M{x} {ch * r}h{_num(cw * (c - start))}v{ch - 2}H{x}z")
        if d:
            out.append(f"<path fill='{HEALTH_COLORS[word]}' d='{''.join(d)}'/>")
    names = "".join(f"<text x='{left - 3}' y='{ch * r + ch - 4}'>{name}</text>" for r, (name, _) in enumerate(rows))
    out.append(f"<g text-anchor='end'>{names}</g>")
    step = next((s for s in _TICK_STEPS if s * cw >= 14), _TICK_STEPS[-1])
    ticks = range(len(hours) - 1, -1, -step)
    labels = "".join(f"<text x='{_num(left + cw * (i + 0.5))}' y='{grid_h + 10}'>{hours[i]:%H}</text>" for i in ticks)
    out.append(f"<g text-anchor='middle'>{labels}</g></svg>")
    return "".join(out)


def heatmap_key(end: str, hours: int) -> str:
    """The key under the inline heatmap, as short markdown (drawn inline): a picture of the
    health colours with their words, one a line (90 px wide: it fits the metadata column at
    1,000 px), and a line saying what the rows and columns are."""
    width = 4 + 14 + _CHAR_PX * max(len(word) for word in HEALTH_COLORS)
    edge = {"not swept": " stroke='#999'"}  # a light square on white needs an edge
    lines = "".join(
        f"<path fill='{color}'{edge.get(word, '')} d='M1 {13 * i + 2}h9v9H1z'/><text x='14' y='{13 * i + 10}'>{word}</text>"
        for i, (word, color) in enumerate(HEALTH_COLORS.items())
    )
    svg = (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{13 * len(HEALTH_COLORS)}' "
        f"font-family='sans-serif' font-size='{_FONT_PX}'>{lines}</svg>"
    )
    data = base64.b64encode(svg.encode()).decode()
    return (
        f"![health colours](data:image/svg+xml;base64,{data})\n\n"
        f"rows: replicas; columns: {hours} hours (UTC) to {end}, latest right"
    )


def inline_heatmap(grid: pd.DataFrame, end: str) -> str:
    """The heatmap as markdown short enough for the Dagster UI to draw inline (under
    :data:`INLINE_MARKDOWN_LIMIT` characters).

    First choice: a labelled SVG picture (:func:`_svg`: replica names, hours, the latest hour
    the right-most column; the colours' key is :func:`heatmap_key`), at most
    :data:`SVG_MAX_WIDTH` (142) px wide -- 3 x 14 px cells for 24 hours, about 120 px for the
    default fleet --, whole in the asset page's metadata column at 1,000 and 1,600 px
    (tests/assets/test_ui.py measures it in Chromium). When that
    is too long (many replicas), only the replicas with an hour that is not ``healthy`` are
    drawn, halved until they fit; when not even that fits, an unlabelled palette PNG, one block
    of pixels per cell (the same subsets), with a line saying what it shows. Returns a line
    without an image when not even one row fits.

    Args:
        grid: :func:`health_grid`'s frame (replicas x hours of :data:`HEALTH_COLORS` words;
            columns are the hours' UTC starts).
        end: the last hour shown (``YYYY-MM-DD-HH:00``), for the caption.
    """
    words = list(HEALTH_COLORS)
    names = [str(r) for r in grid.index]
    hours = [pd.Timestamp(h).to_pydatetime() for h in grid.columns]
    codes = {n: [words.index(str(v)) for v in row] for n, row in zip(names, grid.to_numpy().tolist(), strict=True)}
    problems = [n for n in names if any(c != words.index("healthy") for c in codes[n])]
    choices = [(names, f"{len(names)} replicas")]
    pool, which = (problems, " with an hour not healthy") if 0 < len(problems) < len(names) else (names, "")
    subset = pool[: len(pool) // 2] if pool is names else pool
    while subset:
        choices.append((subset, f"{len(subset)} of the {len(pool)} replicas{which} (of {len(names)})"))
        subset = subset[: len(subset) // 2]
    for rows, what in choices:
        data = base64.b64encode(_svg([(n, codes[n]) for n in rows], hours).encode()).decode()
        text = f"![fleet health now](data:image/svg+xml;base64,{data})"
        if len(rows) < len(names):
            text += f"\n\nrows: {what}"
        if len(text) < INLINE_MARKDOWN_LIMIT:
            return text
    legend = ", ".join(f"{_COLOR_NAMES[w]} {w}" for w in words)
    for rows, what in choices:
        caption = f"rows: {what}, fleet order; columns: {len(grid.columns)} hours to {end} UTC, oldest left. {legend}."
        for cell in _CELL_SIZES:
            data = base64.b64encode(_palette_png([codes[n] for n in rows], cell)).decode()
            text = f"![fleet health now](data:image/png;base64,{data})\n\n{caption}"
            if len(text) < INLINE_MARKDOWN_LIMIT:
                return text
    return f"_too many distinct rows to draw inline: see heatmap_detail_ ({len(names)} replicas)"


#: How far back (days before the newest day with sweeps) ``fleet_health`` looks for each
#: replica's latest completed sweep; a replica with none in that span is ``not swept``.
LOOKBACK_DAYS = 7
#: Rows of the ``fleet`` table drawn inline on the asset page (worst first); the asset's value has all.
MAX_TABLE_ROWS = 50
#: Columns of ``fleet_health``'s value and of its ``fleet`` table.
NOW_COLUMNS = ("replica", "status", "component", "node", "confidence", "since", "last_sweep", "age", "failed_after")


def _hour_start(day: str, hour: int) -> datetime | None:
    try:
        return datetime.strptime(day, "%Y-%m-%d").replace(hour=hour, tzinfo=UTC)
    except ValueError:
        return None


def sweep_health(faults: pd.DataFrame, runs: pd.DataFrame) -> dict[tuple[str, datetime], str]:
    """The health word (:data:`HEALTH_COLORS`) of every (replica, hour) that the rows hold a
    sweep batch of: the worst verdict of its completed sweep, ``healthy`` for one without a
    verdict, ``error`` for only a failed attempt. Independent of row order and write times.

    Args:
        faults: fault rows (``replica``, ``date``, ``batch``, ``status``, ``component_kind``).
        runs: probe rows (``replica``, ``date``, ``batch``), one or more per sweep.
    """
    swept: dict[tuple[str, datetime], bool] = {}  # (replica, hour) -> a completed sweep exists
    for replica, day, batch in set(_strings(runs, "replica", "date", "batch")):
        parsed = _hour_of(batch, replica)
        hour = _hour_start(day, parsed[0]) if parsed else None
        if parsed and hour is not None:
            swept[(replica, hour)] = swept.get((replica, hour), False) or not parsed[1]
    cells = {key: "healthy" if completed else "error" for key, completed in swept.items()}
    for replica, day, batch, status, kind in _strings(faults, "replica", "date", "batch", "status", "component_kind"):
        parsed = _hour_of(batch, replica)
        hour = _hour_start(day, parsed[0]) if parsed and not parsed[1] else None
        if hour is None:
            continue
        if status == "confirmed":
            word = "faulty"
        elif kind == "replica":
            word = "degraded" if status == "suspect" else "inconclusive"
        elif status == "inconclusive":
            word = "inconclusive"
        else:
            continue  # a suspect or masked component of a completed sweep: not a verdict against it
        if _RANK[word] < _RANK[cells.get((replica, hour), "not swept")]:
            cells[(replica, hour)] = word
    return cells


def _confirmed(faults: pd.DataFrame) -> dict[tuple[str, datetime], dict[str, tuple[str, float | None]]]:
    """(replica, hour) -> {component: (node, confidence)} of each completed sweep's confirmed rows."""
    out: dict[tuple[str, datetime], dict[str, tuple[str, float | None]]] = {}
    if not len(faults):
        return out
    columns = ["replica", "date", "batch", "status", "component", "node", "confidence"]
    for replica, day, batch, status, component, node, confidence in faults[columns].itertuples(index=False):
        parsed = _hour_of(str(batch), str(replica))
        hour = _hour_start(str(day), parsed[0]) if parsed and not parsed[1] else None
        if hour is None or status != "confirmed":
            continue
        conf = None if confidence is None or pd.isna(confidence) else float(confidence)
        where = "-" if node is None or pd.isna(node) else str(node)
        out.setdefault((str(replica), hour), {})[str(component)] = (where, conf)
    return out


def _key(hour: datetime) -> str:
    return current_hour_key(hour)


def _age(now: datetime, hour: datetime) -> str:
    """How long ago a sweep hour started: ``5h`` (under two days) or ``3d 4h``."""
    hours = max(0, int((now - hour).total_seconds() // 3600))
    return f"{hours}h" if hours < 48 else f"{hours // 24}d {hours % 24}h"


def _confidence(value: float | None) -> str:
    return "-" if value is None else ">0.999" if value > 0.999 else f"{value:.3f}"


def fleet_now(
    faults: pd.DataFrame, runs: pd.DataFrame, replicas: list[str], now: datetime, end: datetime | None = None
) -> pd.DataFrame:
    """The fleet's current state: each replica's latest completed sweep by swept hour (not by
    write time), whatever order hours were swept or backfilled in; one row per confirmed
    component of that sweep (one row with ``component`` ``-`` for a replica without one),
    worst status first (:data:`HEALTH_COLORS` order), then fleet order.

    Columns (:data:`NOW_COLUMNS`, all text): ``replica``; ``status`` (the latest completed
    sweep's health; ``error`` when the replica has only failed attempts, ``not swept`` when
    nothing); ``component``, ``node`` (the host it sits on, ``-`` unknown) and ``confidence``
    (``>0.999``, 3 decimals, ``-`` without one); ``since``: the first sweep hour of the current
    episode -- of the unbroken run of completed sweeps, back from the latest, that confirmed
    this component (for a replica row without one: that had this status), as far back as the
    rows go; ``last_sweep`` (``YYYY-MM-DD-HH:00`` UTC); ``age``: ``now`` minus that hour's start;
    ``failed_after``: the newest failed attempt after the latest completed sweep, ``-`` if none.

    Args:
        faults: fault rows (``replica``, ``date``, ``batch``, ``status``, ``component_kind``,
            ``component``, ``node``, ``confidence``).
        runs: probe rows (``replica``, ``date``, ``batch``).
        replicas: the fleet's replicas, in fleet order (others' rows are ignored).
        now: the time ages are measured to (UTC).
        end: ignore sweeps of later hours (the state as of that hour); None: every hour.
    """
    cells = sweep_health(faults, runs)
    confirmed = _confirmed(faults)
    done: dict[str, list[datetime]] = {r: [] for r in replicas}
    failed: dict[str, list[datetime]] = {r: [] for r in replicas}
    for (replica, hour), word in cells.items():
        if replica in done and (end is None or hour <= end):
            if word == "error":
                failed[replica].append(hour)
            elif word != "not swept":
                done[replica].append(hour)
    rows: list[dict[str, str]] = []
    for replica in replicas:
        hours = sorted(done[replica])
        if not hours:
            status = "error" if failed[replica] else "not swept"
            first = min(failed[replica]) if failed[replica] else None
            rows.append(
                dict.fromkeys(NOW_COLUMNS, "-")
                | {"replica": replica, "status": status, "since": _key(first) if first else "-"}
                | {"failed_after": _key(max(failed[replica])) if failed[replica] else "-"}
            )
            continue
        last = hours[-1]
        status = cells[(replica, last)]
        later = [h for h in failed[replica] if h > last]
        common = {"replica": replica, "status": status, "last_sweep": _key(last), "age": _age(now, last)}
        common["failed_after"] = _key(max(later)) if later else "-"

        found = confirmed.get((replica, last), {})
        if not found:
            rows.append(
                common
                | {
                    "component": "-",
                    "node": "-",
                    "confidence": "-",
                    "since": _since(hours, [cells[(replica, h)] == status for h in hours]),
                }
            )
        for component in sorted(found, key=_component_order):
            node, conf = found[component]
            held = _since(hours, [component in confirmed.get((replica, h), {}) for h in hours])
            rows.append(common | {"component": component, "node": node, "confidence": _confidence(conf), "since": held})
    order = {r: i for i, r in enumerate(replicas)}
    rows.sort(key=lambda r: (_RANK[r["status"]], order[r["replica"]]))
    return pd.DataFrame(rows, columns=list(NOW_COLUMNS))


def _since(hours: list[datetime], holds: list[bool]) -> str:
    """The first of ``hours`` (ascending) of the unbroken run of ``holds`` that ends with the last one."""
    first = hours[-1]
    for hour, held in zip(reversed(hours), reversed(holds), strict=True):
        if not held:
            break
        first = hour
    return _key(first)


def _component_order(component: str) -> tuple[int, str, int]:
    """Shared components first (they explain several GPUs), then GPUs and links by id."""
    kind, _, rest = component.partition(":")
    digits = rest.split("-", 1)[0]
    rank = {"nic": 0, "nvswitch": 0, "switch": 0, "gpu": 1, "link": 2}.get(kind, 3)
    return (rank, kind, int(digits) if digits.isdigit() else -1)


def _short_hour(key: str, day: str) -> str:
    """An hour key for the inline table: ``06:00`` on ``day`` (``YYYY-MM-DD``, the view's last
    day), else ``11-29 06:00`` (the year is ``end_hour``'s); ``-`` unchanged."""
    if len(key) != 16 or key[10] != "-":
        return key
    return key[11:] if key[:10] == day else f"{key[5:10]} {key[11:]}"


#: The inline table's column headers (short: the table must fit the metadata column).
_UI_HEADERS = {"confidence": "conf", "last_sweep": "last", "failed_after": "failed"}


def ui_table(now: pd.DataFrame, end: str) -> tuple[dg.TableSchema, list[dg.TableRecord], str]:
    """:func:`fleet_now`'s table as the Dagster table drawn inline on the asset page, and a
    line to show beside it.

    The table must fit the metadata column at 1,600 px (about 470 px) unwrapped: a browser
    squeezing a table splits names at their hyphens. So: short headers (``conf``, ``last``,
    ``failed``); hours as ``HH:00`` on ``end``'s day (``YYYY-MM-DD-HH:00``), ``MM-DD HH:00``
    before it; ``node`` and ``failed_after`` only when a row has one; and ``last_sweep`` and
    ``age`` only when the swept replicas' last sweeps differ -- when they are one hour (the
    usual case: every replica swept each hour), the line says it instead.

    Returns:
        (schema, records, line): the line is ``"last sweep of every swept replica: 06:00 (4d 2h
        ago)"``, or ``""`` when the columns show it.
    """
    swept = now[now["last_sweep"] != "-"]
    one_hour = swept["last_sweep"].nunique() == 1
    columns = [
        c
        for c in NOW_COLUMNS
        if not (c in ("node", "failed_after") and (now[c] == "-").all()) and not (one_hour and c in ("last_sweep", "age"))
    ]
    records = []
    for row in now.to_dict("records"):
        cells = {c: str(row[c]) for c in columns}
        for c in ("since", "last_sweep", "failed_after"):
            if c in cells:
                cells[c] = _short_hour(cells[c], end[:10])
        records.append(dg.TableRecord({_UI_HEADERS.get(c, c): v for c, v in cells.items()}))
    line = ""
    if one_hour:
        first = swept.iloc[0]
        line = f"last sweep of every swept replica: {_short_hour(str(first['last_sweep']), end[:10])} ({first['age']} ago)"
    return dg.TableSchema(columns=[dg.TableColumn(_UI_HEADERS.get(c, c), "string") for c in columns]), records, line


def sweep_days(store: LedgerStore) -> list[str]:
    """The ``date`` partitions that hold probe rows (every sweep writes some), newest first;
    from the table's log, no data file opened."""
    days = {uri.split("/date=", 1)[1].split("/", 1)[0] for uri in store.files(PROBE_RUNS) if "/date=" in uri}
    return sorted((unquote(d) for d in days), reverse=True)


def first_swept_hour(store: LedgerStore) -> str | None:
    """The earliest hour the ledger holds a sweep of (``YYYY-MM-DD-HH:00``), None without sweeps.

    One small read: the first day with probe rows (:func:`sweep_days`, from the log), then the
    ``swept_hour`` column of that day's ``sweeps`` rows (schema version 3; a row's ``date`` is
    its swept hour's day). A day whose sweeps predate that dataset (a version-2 ledger) starts
    at its 00:00.
    """
    days = sweep_days(store)
    if not days:
        return None
    first = days[-1]
    hours = store.read_table(SWEEPS, files={"date": first}, columns=["swept_hour"], skipped=[]).column("swept_hour")
    swept = [h for h in hours.to_pylist() if h is not None]
    return current_hour_key(min(swept)) if swept else f"{first}-00:00"


@dg.asset(
    deps=[fault_ledger],
    group_name="fleet",
    kinds={"pandas"},
    automation_condition=AFTER_LEDGER_UPDATES,
    description="The fleet now: every replica's latest completed sweep by swept hour (a backfill never makes it "
    f"older), its confirmed components with node, confidence and since, worst first; a heatmap of the last {RECENT_HOURS} hours.",
)
def fleet_health(
    context: dg.AssetExecutionContext, config: FleetViewConfig, fleet: FleetResource, ledger: LedgerResource
) -> dg.Output[pd.DataFrame]:
    if not 1 <= config.hours <= 168:
        raise dg.Failure(description=f"hours must be in 1..168, got {config.hours}")
    try:
        given = check_hour_key(config.end_hour) if config.end_hour else None
    except ValueError as exc:
        raise dg.Failure(description=f"end_hour: {exc}") from None
    now = datetime.now(UTC)
    replicas = fleet.load().names
    store = ledger.store()
    skipped: list[str] = []  # a damaged data file costs its own rows, not the fleet view: named below
    columns = ["replica", "date", "batch", "status", "component_kind", "component", "node", "confidence"]
    parts: dict[str, tuple[pd.DataFrame, pd.DataFrame]] = {}

    def load(day_list: list[str]) -> None:
        want = [d for d in day_list if d not in parts]
        if not want:
            return
        faults = store.read_table(FAULT_LEDGER, files={"date": want}, columns=columns, skipped=skipped).to_pandas()
        runs = store.read_table(PROBE_RUNS, files={"date": want}, columns=columns[:3], skipped=skipped).to_pandas()
        for day in want:
            parts[day] = (faults[faults["date"] == day], runs[runs["date"] == day])

    def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
        faults = [f for f, _ in parts.values()] or [pd.DataFrame(columns=columns)]
        runs = [r for _, r in parts.values()] or [pd.DataFrame(columns=columns[:3])]
        return pd.concat(faults, ignore_index=True), pd.concat(runs, ignore_index=True)

    # "now": each replica's latest completed sweep, from the newest day with sweeps back, a day
    # at a time, until every replica has one or LOOKBACK_DAYS are read
    days = [d for d in sweep_days(store) if given is None or d <= given[:10]]
    for day in days:
        if days[0] > day and (date.fromisoformat(days[0]) - date.fromisoformat(day)).days > LOOKBACK_DAYS:
            break
        load([day])
        faults, runs = frames()
        cells = sweep_health(faults, runs)
        latest = {r for (r, _), w in cells.items() if w not in ("error", "not swept")}
        if all(r in latest for r in replicas):
            break
    faults, runs = frames()
    cells = sweep_health(faults, runs)
    if given is not None:
        end = given
    else:
        swept = [h for (r, h), w in cells.items() if r in replicas and w != "not swept"]
        end = _key(max(swept)) if swept else current_hour_key(now)
    last = datetime.strptime(end, "%Y-%m-%d-%H:%M").replace(tzinfo=UTC)
    hours = [last - timedelta(hours=i) for i in range(config.hours - 1, -1, -1)]
    load(sorted({h.date().isoformat() for h in hours}))
    faults, runs = frames()
    for line in skipped:
        context.log.warning(f"skipped unreadable ledger file {line}")
    grid = health_grid(faults, runs, replicas, hours)
    table = fleet_now(faults, runs, replicas, now, last)
    counts: dict[str, int] = {}
    for word in table.drop_duplicates("replica")["status"].tolist():
        counts[str(word)] = counts.get(str(word), 0) + 1
    schema, records, line = ui_table(table.head(MAX_TABLE_ROWS), end)
    faulty = table[table["status"] == "faulty"].drop_duplicates("replica")
    links = {
        f"faults of {r}": partition_url("fault_ledger", f"{h}|{r}")
        for r, h in zip(faulty["replica"].tolist()[:10], faulty["last_sweep"].tolist()[:10], strict=True)
    }
    more = "" if len(table) <= MAX_TABLE_ROWS else f" (the first {MAX_TABLE_ROWS} of {len(table)} rows, worst first)"
    return dg.Output(
        table,
        metadata={
            "end_hour": end,
            "health_now": dg.MetadataValue.json(counts),
            "fleet": dg.MetadataValue.table(records, schema=schema),
            "fleet_rows": "; ".join(p for p in (f"{len(table)} rows{more}", line, f"age to {_key(now)} UTC") if p),
            "heatmap": dg.MetadataValue.md(inline_heatmap(grid, end)),
            "heatmap_key": dg.MetadataValue.md(heatmap_key(end, config.hours)),
            **links,
            "heatmap_detail": _heatmap(
                grid, hours, f"fleet health, {len(replicas)} replicas, last {config.hours} hours to {end} UTC"
            ),
            "replicas": len(replicas),
            "ledger": store.display_uri,
            "skipped_files": dg.MetadataValue.md("\n".join(f"- {line}" for line in skipped) or "none"),
        },
    )
