"""Load fleet monitoring metrics into a machine x time x metric array.

Minder reads what a monitoring system already scrapes (DCGM, node exporters): long-format
rows of ``timestamp`` (UTC), ``machine``, ``metric`` and ``value``, one row per sample, from
Parquet or CSV. This module validates that table once, at the edge, and puts it on a
regular time grid: a :class:`MetricArray` of shape ``(n_machines, n_times, n_metrics)``
with NaN wherever a sample is missing.

Missing samples, unsorted rows, NaN values and machines that stop reporting are normal in
monitoring data and are kept as NaN (missing), never filled here. Everything else that is
wrong (no such file, empty file, a missing column, a non-numeric value, an unparseable
timestamp, an interval outside 1-60 s) raises :class:`ValueError` naming the problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "REQUIRED_COLUMNS",
    "MetricArray",
    "detect_interval",
    "load_metrics",
    "read_metrics_table",
    "to_long_frame",
    "to_metric_array",
]

REQUIRED_COLUMNS = ("timestamp", "machine", "metric", "value")
_MIN_INTERVAL_S, _MAX_INTERVAL_S = 1.0, 60.0
_MAX_CELLS = 400_000_000  # machines x times x metrics; ~1.6 GB of float32
_MISSING_WORDS = {"", "nan", "null", "none", "na", "n/a"}


@dataclass(frozen=True, eq=False)
class MetricArray:
    """Fleet metrics on a regular time grid.

    Attributes:
        values: float32 array of shape ``(n_machines, n_times, n_metrics)``; NaN = missing.
        machines: machine names, one per row of ``values`` (sorted).
        metrics: metric names, one per last axis of ``values`` (sorted).
        start: UTC time of sample 0.
        interval_s: grid spacing in seconds.
    """

    values: np.ndarray
    machines: tuple[str, ...]
    metrics: tuple[str, ...]
    start: pd.Timestamp
    interval_s: float

    def __post_init__(self) -> None:
        shape = (len(self.machines), self.values.shape[1], len(self.metrics))
        if self.values.ndim != 3 or self.values.shape != shape:
            raise ValueError(f"values has shape {self.values.shape}, expected {shape}")

    @property
    def n_times(self) -> int:
        """Number of grid points."""
        return int(self.values.shape[1])

    def time_at(self, index: float) -> pd.Timestamp:
        """UTC time of (possibly fractional) grid index ``index``."""
        return self.start + pd.Timedelta(seconds=float(index) * self.interval_s)

    def times(self) -> pd.DatetimeIndex:
        """UTC time of every grid point."""
        return pd.date_range(self.start, periods=self.n_times, freq=pd.Timedelta(seconds=self.interval_s))

    def tail(self, duration_s: float) -> MetricArray:
        """The latest ``duration_s`` seconds (the whole array if it is shorter)."""
        keep = min(self.n_times, max(1, round(duration_s / self.interval_s)))
        first = self.n_times - keep
        return MetricArray(self.values[:, first:], self.machines, self.metrics, self.time_at(first), self.interval_s)


def read_metrics_table(path: str | Path) -> pd.DataFrame:
    """Read a long-format metrics table from a Parquet or CSV file, local or remote.

    Args:
        path: a local path or an fsspec URI (``s3://...``, ``file://...``); names ending in
            ``.parquet``/``.pq`` are read as Parquet, anything else as CSV.

    Returns:
        The table as read, not yet validated (see :func:`to_metric_array`).

    Raises:
        ValueError: no such file, empty file, or a file that is not Parquet/CSV.
    """
    import fsspec

    text = str(path)
    fs, location = fsspec.core.url_to_fs(text)
    if not fs.isfile(location):
        raise ValueError(f"metrics file not found: {text}")
    if fs.size(location) == 0:
        raise ValueError(f"metrics file is empty: {text}")
    try:
        with fs.open(location, "rb") as handle:
            if Path(location).suffix.lower() in {".parquet", ".pq"}:
                return pd.read_parquet(handle)
            return pd.read_csv(handle, dtype={"machine": str, "metric": str})
    except pd.errors.EmptyDataError:
        raise ValueError(f"metrics file is empty: {text}") from None
    except (pd.errors.ParserError, OSError, ValueError) as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"cannot read metrics file {text}: {first_line}") from None


def _check_columns(frame: pd.DataFrame) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        found = ", ".join(map(str, frame.columns)) or "none"
        raise ValueError(f"missing column {missing[0]!r} (need {', '.join(REQUIRED_COLUMNS)}; found: {found})")
    if frame.empty:
        raise ValueError("metrics table has no rows")


def _parse_values(column: pd.Series) -> np.ndarray:
    if pd.api.types.is_bool_dtype(column):
        raise ValueError("column 'value' holds booleans, not numbers")
    numbers = column if pd.api.types.is_numeric_dtype(column) else pd.to_numeric(column, errors="coerce")
    suspect = numbers.isna() & column.notna()
    words = column[suspect].astype("string").str.strip().str.lower()
    bad = pd.Series(False, index=column.index)
    bad[suspect] = ~words.isin(_MISSING_WORDS).fillna(True)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(
            f"column 'value' has non-numeric entries, e.g. {column.iloc[row]!r} at row {row} ({int(bad.sum())} rows in all)"
        )
    values = numbers.to_numpy(dtype=np.float64, na_value=np.nan)
    infinite = np.isinf(values)
    if infinite.any():
        row = int(np.flatnonzero(infinite)[0])
        raise ValueError(f"column 'value' has infinite entries, e.g. {values[row]} at row {row}")
    return values


def _parse_timestamps(column: pd.Series) -> pd.DatetimeIndex:
    if pd.api.types.is_numeric_dtype(column):  # unix seconds
        stamps = pd.to_datetime(column, unit="s", utc=True, errors="coerce")
    elif isinstance(column.dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_any_dtype(column):
        stamps = pd.to_datetime(column, utc=True)
    else:
        stamps = pd.to_datetime(column.astype("string"), utc=True, errors="coerce", format="ISO8601")
    bad = stamps.isna()
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(
            f"column 'timestamp' has unparseable entries, e.g. {column.iloc[row]!r} at row {row} ({int(bad.sum())} rows in all)"
        )
    return pd.DatetimeIndex(stamps)


def _parse_names(column: pd.Series, name: str) -> np.ndarray:
    empty = column.isna() | (column.astype("string").str.strip() == "")
    if empty.any():
        row = int(np.flatnonzero(empty.to_numpy())[0])
        raise ValueError(f"column {name!r} has empty entries, e.g. at row {row}")
    return column.astype(str).to_numpy()


def detect_interval(seconds: np.ndarray, series: np.ndarray) -> float:
    """Sampling interval: the median positive gap between samples of one series.

    Args:
        seconds: sample times in seconds, shape (n,).
        series: an integer id per sample naming its (machine, metric) series, shape (n,).

    Returns:
        The interval in seconds, rounded to the millisecond; 0.0 if no series has two samples.

    >>> detect_interval(np.array([0.0, 10, 20, 40, 5, 15]), np.array([0, 0, 0, 0, 1, 1]))
    10.0
    """
    millis = np.round(seconds * 1000.0).astype(np.int64)
    order = np.argsort((series.astype(np.int64) << 40) + millis, kind="stable")  # by series, then time
    t, s = seconds[order], series[order]
    gaps = np.diff(t)[(np.diff(s) == 0)]
    gaps = gaps[gaps > 0]
    return 0.0 if gaps.size == 0 else round(float(np.median(gaps)), 3)


def to_metric_array(frame: pd.DataFrame, interval_s: float | None = None) -> MetricArray:
    """Validate a long-format table and put it on a regular time grid.

    Each sample goes to the nearest grid point; several samples on one point are averaged.
    NaN values count as missing samples.

    Args:
        frame: columns ``timestamp``, ``machine``, ``metric``, ``value`` (others ignored).
        interval_s: grid spacing in seconds; detected from the data when ``None``. Data
            sampled more finely is averaged onto it; data sampled more coarsely is an error.

    Returns:
        The :class:`MetricArray`, machines and metrics sorted by name.

    Raises:
        ValueError: a missing column, no rows, a non-numeric or infinite value, an
            unparseable timestamp, an empty machine/metric name, or an interval outside
            1-60 s (or coarser than ``interval_s``).
    """
    _check_columns(frame)
    values = _parse_values(frame["value"])
    stamps = _parse_timestamps(frame["timestamp"])
    machine_names = _parse_names(frame["machine"], "machine")
    metric_names = _parse_names(frame["metric"], "metric")

    machine_code, machines = pd.factorize(machine_names, sort=True)
    metric_code, metrics = pd.factorize(metric_names, sort=True)
    start = stamps.min()
    seconds = (stamps - start).total_seconds().to_numpy()
    detected = detect_interval(seconds, machine_code * len(metrics) + metric_code)
    if detected == 0.0 and interval_s is None:
        raise ValueError("cannot detect the sampling interval: no series has two samples at different times")
    if interval_s is None:
        if not _MIN_INTERVAL_S <= detected <= _MAX_INTERVAL_S:
            raise ValueError(f"sampling interval {detected} s is outside 1-60 s")
        interval_s = detected
    elif detected > 1.5 * interval_s:
        raise ValueError(f"data is sampled every {detected} s, coarser than the required {interval_s} s")

    index = np.floor(seconds / interval_s + 0.5).astype(np.int64)
    n_times = int(index.max()) + 1
    shape = (len(machines), n_times, len(metrics))
    if np.prod(shape, dtype=np.float64) > _MAX_CELLS:
        raise ValueError(f"metrics span too large: {shape} machines x times x metrics at {interval_s} s")
    observed = ~np.isnan(values)
    flat = np.ravel_multi_index((machine_code[observed], index[observed], metric_code[observed]), shape)
    sums = np.bincount(flat, weights=values[observed], minlength=int(np.prod(shape)))
    counts = np.bincount(flat, minlength=int(np.prod(shape)))
    with np.errstate(invalid="ignore", divide="ignore"):
        grid = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan).astype(np.float32)
    return MetricArray(
        values=grid.reshape(shape),
        machines=tuple(map(str, machines)),
        metrics=tuple(map(str, metrics)),
        start=pd.Timestamp(start),
        interval_s=float(interval_s),
    )


def load_metrics(path: str | Path, interval_s: float | None = None) -> MetricArray:
    """Read and validate a metrics file (see :func:`read_metrics_table`, :func:`to_metric_array`).

    Raises:
        ValueError: naming the file and the problem.
    """
    frame = read_metrics_table(path)
    try:
        return to_metric_array(frame, interval_s)
    except ValueError as exc:
        raise ValueError(f"{Path(str(path)).name}: {exc}") from None


def to_long_frame(array: MetricArray, *, drop_missing: bool = True) -> pd.DataFrame:
    """The inverse of :func:`to_metric_array`: one row per (machine, time, metric) sample.

    Args:
        array: the grid.
        drop_missing: leave out NaN samples (as a scraper that missed them would).

    Returns:
        A frame with columns ``timestamp`` (UTC), ``machine``, ``metric``, ``value``.
    """
    n_machines, n_times, n_metrics = array.values.shape
    m, t, k = np.meshgrid(np.arange(n_machines), np.arange(n_times), np.arange(n_metrics), indexing="ij")
    values = array.values.ravel()
    keep = ~np.isnan(values) if drop_missing else np.ones(values.shape, bool)
    times = array.times()
    return pd.DataFrame(
        {
            "timestamp": times[t.ravel()[keep]],
            "machine": np.asarray(array.machines, dtype=object)[m.ravel()[keep]],
            "metric": np.asarray(array.metrics, dtype=object)[k.ravel()[keep]],
            "value": values[keep].astype(np.float64),
        }
    )
