"""Sweep hour keys: format, range and the error line (hand-worked cases)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from faultsense_pipelines.fleet.hours import check_hour_key, display_hour

NOW = datetime(2026, 12, 3, 7, 30, tzinfo=UTC)


def test_a_valid_hour_is_returned() -> None:
    assert check_hour_key("2026-12-03-07:00", NOW) == "2026-12-03-07:00"


def test_a_well_formed_hour_before_the_partitions_is_out_of_range_not_malformed() -> None:
    # strftime("%Y") writes year 1 as "1", so this well-formed key was called malformed
    with pytest.raises(ValueError, match=r"hour 0001-01-01-00:00 is outside the sweep partitions"):
        check_hour_key("0001-01-01-00:00", NOW)


@pytest.mark.parametrize("bad", ["2026-12-03-07:30", "2026-12-3-07:00", "tomorrow"])
def test_a_malformed_hour_names_the_format(bad: str) -> None:
    with pytest.raises(ValueError, match=r"hour must look like YYYY-MM-DD-HH:00"):
        check_hour_key(bad, NOW)


def test_a_huge_value_is_cut_to_80_characters() -> None:
    with pytest.raises(ValueError) as err:
        check_hour_key("x" * 100_000, NOW)
    shown = str(err.value).split("got ", 1)[1]
    assert len(shown) == 80 and shown.endswith("…")


@pytest.mark.parametrize(
    ("value", "shown"),
    [("2026-12-05-11:00", "2026-12-05 11:00"), ("2026-12-05-24:00", "2026-12-05-24:00"), ("2026-12-05", "2026-12-05")],
)
def test_an_hour_key_is_shown_with_a_space_and_anything_else_as_it_is(value: str, shown: str) -> None:
    assert display_hour(value) == shown
