"""The analytics' inline tables: every cell text, numbers rounded, missing values a dash."""

from __future__ import annotations

import pandas as pd

from faultsense_pipelines.assets.report import frame_table


def test_a_frame_becomes_an_inline_table_with_rounded_numbers_and_dashes_for_missing_values() -> None:
    df = pd.DataFrame(
        {
            "replica": ["sim-64", None],
            "max_slowdown": [2.745737962585161, float("nan")],  # the unrounded figure
            "gpu": pd.array([17, None], dtype="Int32"),
            "first_seen": ["2026-11-30-03:00", None],
        }
    )
    table = frame_table(df, limit=1)
    assert [c.name for c in table.schema.columns] == ["replica", "max_slowdown", "gpu", "first_seen"]
    assert [r.data for r in table.records] == [
        {"replica": "sim-64", "max_slowdown": "2.746", "gpu": "17", "first_seen": "2026-11-30-03:00"}
    ]  # one row: the limit
    assert [r.data for r in frame_table(df).records][1] == dict.fromkeys(df.columns, "-")
    assert frame_table(pd.DataFrame({"x": [1.5, 2.0]})).records[1].data == {"x": "2"}
