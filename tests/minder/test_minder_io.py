"""Minder's metrics loader: long format in, machine x time x metric grid out, clear errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from faultsense_pipelines.minder.io import load_metrics, to_long_frame, to_metric_array
from faultsense_pipelines.minder.synth import generate_fleet


def _frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["timestamp", "machine", "metric", "value"])


def test_rows_land_on_a_grid_by_machine_time_and_metric():
    frame = _frame([
        ("2026-01-01T00:00:20Z", "b", "gpu_util", 3.0),
        ("2026-01-01T00:00:00Z", "a", "gpu_util", 1.0),
        ("2026-01-01T00:00:10Z", "a", "gpu_util", 2.0),
        ("2026-01-01T00:00:00Z", "b", "cpu_util", 7.0),
    ])  # fmt: skip
    array = to_metric_array(frame)
    assert array.interval_s == 10.0
    assert array.machines == ("a", "b") and array.metrics == ("cpu_util", "gpu_util")
    assert array.start == pd.Timestamp("2026-01-01T00:00:00Z")
    expected_a_gpu = [1.0, 2.0, np.nan]
    np.testing.assert_array_equal(array.values[0, :, 1], expected_a_gpu)
    np.testing.assert_array_equal(array.values[1, :, 0], [7.0, np.nan, np.nan])


def test_unsorted_rows_nan_values_and_dropped_samples_give_the_same_grid_as_the_source():
    fleet = generate_fleet(8, 300, missing_rate=0.05, seed=2)
    frame = fleet.to_frame(shuffle=True)  # unsorted; missing samples already absent
    frame.loc[frame.index[:50], "value"] = np.nan  # NaN rows are missing samples too
    expected = fleet.array.values.copy()
    for row in frame.iloc[:50].itertuples():
        expected[fleet.array.machines.index(row.machine), (row.timestamp - fleet.array.start).seconds // 10,
                 fleet.array.metrics.index(row.metric)] = np.nan  # fmt: skip
    array = to_metric_array(frame)
    np.testing.assert_array_equal(array.values, expected)


def test_finer_samples_are_averaged_onto_a_coarser_requested_grid():
    frame = _frame([(f"2026-01-01T00:00:{s:02d}Z", "a", "m", float(s)) for s in range(0, 40, 5)])
    array = to_metric_array(frame, interval_s=10.0)
    # samples at 5 s go to the nearest 10-s point, ties upward: {0}, {5, 10}, {15, 20}, ...
    np.testing.assert_array_equal(array.values[0, :, 0], [0.0, 7.5, 17.5, 27.5, 35.0])


def test_csv_and_parquet_load_to_the_same_array(tmp_path):
    frame = to_long_frame(generate_fleet(4, 120, seed=1).array)
    frame.to_csv(tmp_path / "m.csv", index=False)
    frame.to_parquet(tmp_path / "m.parquet")
    a, b = load_metrics(tmp_path / "m.csv"), load_metrics(tmp_path / "m.parquet")
    np.testing.assert_allclose(a.values, b.values, rtol=1e-6)
    assert a.machines == b.machines and a.start == b.start


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty"),
        ("timestamp,machine,metric,value\n", "no rows"),
        ("timestamp,machine,value\n2026-01-01T00:00:00Z,a,1\n", "missing column 'metric'"),
        ("timestamp,machine,metric,value\n2026-01-01T00:00:00Z,a,m,1\n2026-01-01T00:00:10Z,a,m,abc\n",
         "non-numeric entries, e.g. 'abc' at row 1"),
        ("timestamp,machine,metric,value\nyesterday,a,m,1\n2026-01-01T00:00:10Z,a,m,2\n",
         "column 'timestamp' has unparseable entries, e.g. 'yesterday' at row 0"),
        ("timestamp,machine,metric,value\n2026-01-01T00:00:00Z,a,m,1\n2026-01-01T00:00:00.1Z,a,m,2\n",
         "outside 1-60 s"),
        ("timestamp,machine,metric,value\n2026-01-01T00:00:00Z,,m,1\n", "column 'machine' has empty entries"),
    ],
)  # fmt: skip
def test_malformed_metrics_file_raises_an_error_naming_the_problem(tmp_path, content, message):
    path = tmp_path / "metrics.csv"
    path.write_text(content)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        load_metrics(path)


def test_missing_file_is_named():
    with pytest.raises(ValueError, match=r"metrics file not found: .*nope\.csv"):
        load_metrics("/nonexistent/nope.csv")


def test_tail_keeps_the_latest_window():
    array = generate_fleet(4, 600, seed=1).array
    tail = array.tail(120)
    assert tail.n_times == 12 and tail.start == array.time_at(48)
    np.testing.assert_array_equal(tail.values, array.values[:, 48:])


def test_metrics_are_read_from_an_fsspec_uri_too(tmp_path):
    frame = to_long_frame(generate_fleet(4, 120, seed=1).array)
    frame.to_parquet(tmp_path / "m.parquet")
    a = load_metrics(f"file://{tmp_path / 'm.parquet'}")
    np.testing.assert_array_equal(a.values, load_metrics(tmp_path / "m.parquet").values)
