"""FlowPulse input contract: counters and topology files, and the errors bad ones get."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from faultsense_pipelines.flowpulse.counters import check_topology, ingress_packets, load_counters, validate_counters
from faultsense_pipelines.flowpulse.simulate import RingAllReduce, counters_frame, simulate
from faultsense_pipelines.flowpulse.topology import fat_tree, load_topology, parse_topology, topology_to_dict

TOPO = fat_tree(2, 2, 1)


def _good() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "iteration": [0, 0, 1, 1],
            "switch": ["leaf00"] * 4,
            "port": ["up00", "up01", "up00", "up01"],
            "peer": ["spine00", "spine01", "spine00", "spine01"],
            "direction": ["rx"] * 4,
            "bytes": [4096, 8192, 4096, 4096],
            "packets": [1, 2, 1, 1],
        }
    )


def test_good_counters_give_a_per_switch_ingress_matrix():
    (ing,) = ingress_packets(validate_counters(_good()), TOPO)
    assert ing.switch == "leaf00" and ing.ports == ("up00", "up01") and ing.peers == ("spine00", "spine01")
    assert ing.packets.tolist() == [[1, 2], [1, 1]] and ing.iterations.tolist() == [0, 1]


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("bytes", -5, "column 'bytes' must be >= 0, got -5 (row 2)"),
        ("direction", "in", "column 'direction' must be 'rx' or 'tx', got 'in' (row 2)"),
        ("iteration", 1.5, "column 'iteration' must hold integers, got 1.5 (row 2)"),
        ("iteration", "one", "column 'iteration' must hold integers, got 'one' (row 2)"),
        ("packets", None, "column 'packets' has a missing value (row 2)"),
        ("port", "", "column 'port' must hold non-empty strings, got '' (row 2)"),
    ],
)
def test_malformed_counters_get_an_error_naming_the_column_and_value(column, value, message):
    frame = _good()
    frame[column] = frame[column].astype(object)
    frame.loc[2, column] = value
    if column == "iteration" and value == 1.5:
        frame[column] = frame[column].astype(float)
    with pytest.raises(ValueError) as err:
        validate_counters(frame)
    assert str(err.value) == f"counters: {message}"


def test_missing_column_is_named():
    with pytest.raises(ValueError, match="missing column 'peer'"):
        validate_counters(_good().drop(columns="peer"))


def test_duplicate_row_is_rejected():
    frame = pd.concat([_good(), _good().iloc[[3]]], ignore_index=True)
    with pytest.raises(ValueError, match="duplicate row for iteration 1, leaf00/up01 rx"):
        validate_counters(frame)


def test_counters_that_disagree_with_the_topology_are_rejected():
    frame = _good()
    frame.loc[1, "peer"] = "spine00"
    with pytest.raises(ValueError, match="leaf00/up01 faces spine01 in the topology, counters say spine00"):
        check_topology(validate_counters(frame), TOPO)
    frame = _good()
    frame.loc[0, "switch"] = "leaf09"
    with pytest.raises(ValueError, match="switch 'leaf09' is not in the topology"):
        check_topology(validate_counters(frame), TOPO)


def test_csv_with_a_fractional_iteration_is_rejected(tmp_path):
    path = tmp_path / "c.csv"
    frame = _good()
    frame["iteration"] = frame["iteration"].astype(float)
    frame.loc[3, "iteration"] = 1.25
    frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"column 'iteration' must hold integers, got 1.25 \(row 3\)"):
        load_counters(path)


def test_counters_round_trip_through_parquet_and_csv(tmp_path):
    counters = simulate(TOPO, 3, collective=RingAllReduce(buffer_bytes=2**24), seed=0)
    frame = validate_counters(counters_frame(counters))
    frame.to_parquet(tmp_path / "c.parquet", index=False)
    frame.to_csv(tmp_path / "c.csv", index=False)
    pd.testing.assert_frame_equal(load_counters(tmp_path / "c.parquet"), frame)
    pd.testing.assert_frame_equal(load_counters(tmp_path / "c.csv"), frame)
    # 2 leaves x (2 uplinks + 1 host port) + 2 spines x 2 downlinks, rx and tx, 3 iterations
    assert len(frame) == 3 * 2 * (2 * 3 + 2 * 2)


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_topology_files_round_trip(tmp_path, suffix):
    topo = fat_tree(3, 2, 2, down=[(2, 1)])
    data = topology_to_dict(topo)
    path = tmp_path / f"t{suffix}"
    path.write_text(json.dumps(data) if suffix == ".json" else yaml.safe_dump(data))
    loaded = load_topology(path)
    assert loaded.leaves == ("leaf00", "leaf01", "leaf02") and loaded.spines == ("spine00", "spine01")
    assert loaded.live_matrix().tolist() == [[True, True], [True, True], [True, False]]
    assert loaded.peer("spine01", "down02") == "leaf02" and not loaded.is_up("leaf02", "up01")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["links"].append({"a": "leaf00", "a_port": "up00", "b": "spine01", "b_port": "x"}),
            "port leaf00/up00 is used by two links",
        ),
        (
            lambda d: d["links"].append({"a": "leaf00", "a_port": "p9", "b": "spineX", "b_port": "x"}),
            "names unknown node 'spineX'",
        ),
        (
            lambda d: d["links"].append({"a": "leaf00-h0", "a_port": "eth1", "b": "spine00", "b_port": "x"}),
            "joins a host and a spine",
        ),
        (lambda d: d["switches"].append({"name": "core0", "tier": "core"}), "switches.3.tier"),
        (lambda d: d["links"][0].update(status="flaky"), "links.0.status"),
    ],
)
def test_bad_topology_gets_an_error_naming_the_problem(change, message):
    data = topology_to_dict(fat_tree(1, 2, 1))
    change(data)
    with pytest.raises(ValueError, match=message):
        parse_topology(data)


def test_topology_file_with_an_unknown_suffix_is_rejected(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("{}")
    with pytest.raises(ValueError, match=r"must end in \.json, \.yaml or \.yml"):
        load_topology(path)
