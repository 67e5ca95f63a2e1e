"""Shared preparation of metric series: normalize, fill gaps from the fleet, cut windows.

Training and scanning must see windows made the same way, so both use these functions.
Missing samples (NaN) are filled with the fleet median at that time: a gap then looks
like an ordinary machine, never like an outlier; windows a machine mostly missed are left
out of the comparison altogether (see ``coverage``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["fleet_median", "normalization", "split_windows"]


def normalization(series: np.ndarray) -> tuple[float, float]:
    """Robust centre and scale of one metric over all machines and times.

    Args:
        series: any-shaped float array, NaN = missing.

    Returns:
        (median, 1.4826 * MAD); the scale falls back to the standard deviation, then to
        1.0, when the metric barely varies.

    >>> normalization(np.array([1.0, 2.0, 3.0, np.nan, 100.0]))
    (2.5, 1.4826)
    """
    finite = series[np.isfinite(series)]
    if finite.size == 0:
        return 0.0, 1.0
    center = float(np.median(finite))
    scale = 1.4826 * float(np.median(np.abs(finite - center)))
    if scale <= 1e-12 * max(1.0, abs(center)):
        scale = float(np.std(finite))
    if scale <= 1e-12 * max(1.0, abs(center)):
        scale = 1.0
    return center, scale


def fleet_median(x: np.ndarray) -> np.ndarray:
    """Median over machines (axis 0) at each time, NaN ignored; NaN where no machine reported.

    Args:
        x: (n_machines, n_times) float array, NaN = missing.

    Returns:
        (n_times,) array of ``x``'s dtype, equal to ``np.nanmedian(x, axis=0)``: the middle
        value, or the mean of the two middle values, of each column's present samples.

    Notes:
        One sort of the whole array, O(n_machines log n_machines * n_times); numpy's
        ``nanmedian`` loops over columns in Python when a column holds 600 or more values,
        which cost a 1,000-machine scan more than its similarity step.

    >>> fleet_median(np.array([[1.0, np.nan, np.nan], [3.0, 2.0, np.nan], [9.0, 4.0, np.nan]])).tolist()
    [3.0, 3.0, nan]
    """
    present = (~np.isnan(x)).sum(axis=0)  # (n_times,)
    ordered = np.sort(x, axis=0)  # NaN sort last
    lower = np.take_along_axis(ordered, np.maximum((present - 1) // 2, 0)[None, :], axis=0)[0]
    upper = np.take_along_axis(ordered, (present // 2)[None, :], axis=0)[0]
    return np.where(present > 0, (lower + upper) / 2, np.nan).astype(x.dtype, copy=False)


def split_windows(x: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Cut each machine's series into non-overlapping windows aligned to the latest sample.

    Args:
        x: (n_machines, n_times) normalized series, NaN = missing.
        window: samples per window.

    Returns:
        ``(windows, coverage, offset)``: windows (n_machines, n_windows, window) with gaps
        filled by the fleet median at that time (0 where no machine reported), coverage
        (n_machines, n_windows) = fraction of samples present, and ``offset`` = index of the
        first sample of window 0 (the oldest ``offset`` samples are not in any window).

    >>> w, c, off = split_windows(np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 5.0]]), 2)
    >>> w.tolist(), c.tolist(), off
    ([[[2.0, 3.0]], [[2.0, 5.0]]], [[0.5], [1.0]], 1)
    """
    n_machines, n_times = x.shape
    n_windows = n_times // window
    offset = n_times - n_windows * window
    body = x[:, offset:]
    median = np.nan_to_num(fleet_median(body), nan=0.0)
    observed = ~np.isnan(body)
    filled = np.where(observed, body, median[None, :])
    windows = filled.reshape(n_machines, n_windows, window)
    coverage = observed.reshape(n_machines, n_windows, window).mean(axis=2)
    return windows, coverage, offset
