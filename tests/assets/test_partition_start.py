"""Where the sweep partitions start: the fleet file's ``since:``, else the ledger's first hour
swept, never before the hour a sweep asks for; and ``since:``'s one-line errors."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from faultsense_pipelines.assets.analytics import gpu_fault_counts
from faultsense_pipelines.assets.commit import commit_sweep
from faultsense_pipelines.assets.fleet_view import first_swept_hour
from faultsense_pipelines.assets.partitions import SweepKey, first_sweep_hour, with_start
from faultsense_pipelines.assets.sweep import phase1_probe_run
from faultsense_pipelines.definitions import ANALYTICS_JOB, build_definitions
from faultsense_pipelines.fleet import FleetError, parse_fleet
from faultsense_pipelines.ledger import LedgerStore, ProbeRunRow, SweepRow
from tests.pipeline_helpers import SMALL_FLEET, add_replicas, sweep, write_fleet

_REPLICA = {"name": "sim-8", "gpus": 8, "probe_size": 4, "executor": "simulated"}


def _starts(defs: dg.Definitions) -> tuple[str, str]:
    """(first hour of the sweep assets' hour dimension, first day of the analytics)."""
    hours = {}
    for key in ("phase1_probe_run", "phase2_drilldown", "fault_ledger"):
        multi = defs.resolve_assets_def(key).partitions_def
        assert isinstance(multi, dg.MultiPartitionsDefinition)
        dim = next(d.partitions_def for d in multi.partitions_defs if d.name == "hour")
        hours[key] = dim.get_first_partition_key()
    days = {defs.resolve_assets_def(k).partitions_def.get_first_partition_key() for k in ("gpu_fault_counts", "repeat_offenders")}
    assert len(set(hours.values())) == 1 and len(days) == 1, (hours, days)
    return next(iter(hours.values())), days.pop()


def _commit(store: LedgerStore, hour: str, replica: str = "sim-8", sweep: bool = True) -> None:
    """One sweep of ``replica`` at ``hour``: a probe row, and its ``sweeps`` row unless ``sweep`` is
    False (a day written before schema version 3 has none)."""
    key = SweepKey(hour, replica)
    row = SweepRow(sweep_id=f"run-{hour}", replica=replica, swept_hour=key.start, status="healthy",
                   started_at=key.start, finished_at=key.start, executor="simulated", probes_phase1=1)  # fmt: skip
    probes = [ProbeRunRow(row.sweep_id, replica, 1, 0, (0, 1), 10.0, 0, "simulated")]
    commit_sweep(store, key, phase1=probes, phase2=None, faults=[], sweep_id=row.sweep_id, sweep=row if sweep else None)


def test_partitions_start_at_the_first_hour_swept_not_at_its_day(tmp_path: Path) -> None:
    store = LedgerStore(str(tmp_path / "ledger"))
    assert first_swept_hour(store) is None  # not swept yet
    _commit(store, "2026-12-05-09:00")
    _commit(store, "2026-12-05-06:00", replica="sim-16")  # a later sweep of an earlier hour
    _commit(store, "2026-12-06-02:00")
    assert first_swept_hour(store) == "2026-12-05-06:00"
    start = first_sweep_hour(None, first_swept_hour(store))
    assert start == "2026-12-05-06:00"
    hourly = with_start(phase1_probe_run, start).partitions_def
    assert isinstance(hourly, dg.MultiPartitionsDefinition)
    hours = next(d.partitions_def for d in hourly.partitions_defs if d.name == "hour")
    now = datetime(2026, 12, 5, 8, 30, tzinfo=UTC)
    # no "missing" hour before the first sweep: 06:00, 07:00 and the current hour 08:00
    assert hours.get_partition_keys(current_time=now) == ["2026-12-05-06:00", "2026-12-05-07:00", "2026-12-05-08:00"]
    daily = with_start(gpu_fault_counts, start).partitions_def
    assert daily is not None and daily.get_partition_keys(current_time=now) == ["2026-12-05"]
    # a first day without sweeps rows (written before the sweeps dataset) starts at its 00:00
    older = LedgerStore(str(tmp_path / "older"))
    _commit(older, "2026-12-04-13:00", sweep=False)
    _commit(older, "2026-12-05-06:00")
    assert first_swept_hour(older) == "2026-12-04-00:00"


def test_since_takes_a_day_or_an_hour_and_names_itself_when_wrong() -> None:
    base = {"ledger": "/tmp/l", "replicas": [_REPLICA]}
    assert parse_fleet(base | {"since": "2026-11-30"}).since == "2026-11-30-00:00"
    assert parse_fleet(base | {"since": "2026-11-30-06:00"}).since == "2026-11-30-06:00"
    assert parse_fleet(base).since is None
    for bad in ("2026-11-31", "2026-13-01", "yesterday", "2026-12-01T08:00"):
        with pytest.raises(
            FleetError,
            match=rf"^fleet: since: must be a UTC day YYYY-MM-DD or hour YYYY-MM-DD-HH:00 \(e\.g\. 2026-12-01\), got '{bad}'$",
        ):
            parse_fleet(base | {"since": bad})
    with pytest.raises(
        FleetError, match=r"^fleet: since: hour 2026-10-01-00:00 is outside the sweep partitions 2026-11-01-00:00 \.\. "
    ):
        parse_fleet(base | {"since": "2026-10-01-00:00"})
    future = f"{datetime.now(UTC).year + 1}-01-01-00:00"
    with pytest.raises(FleetError, match=f"^fleet: since: hour {future} is outside the sweep partitions"):
        parse_fleet(base | {"since": future})


@pytest.mark.integration  # real in-process Dagster runs on a real ledger
def test_partitions_start_at_the_first_hour_swept_or_at_since(tmp_path: Path, instance) -> None:
    path, _ = write_fleet(tmp_path)
    # a ledger not swept yet: every hour since the earliest a sweep may have
    assert _starts(build_definitions(path)) == ("2026-11-01-00:00", "2026-11-01")
    defs = build_definitions(path, earliest_hour="2026-11-30-06:00")  # what `faultsense sweep --hour` builds
    add_replicas(instance, defs)
    assert sweep(defs, instance, "sim-healthy", "2026-11-30-06:00").success
    # the next code load starts where the ledger's sweeps do, and a later hour still runs
    later = build_definitions(path)
    assert _starts(later) == ("2026-11-30-06:00", "2026-11-30")
    assert sweep(later, instance, "sim-faulty", "2026-11-30-07:00").success
    assert later.resolve_job_def(ANALYTICS_JOB).execute_in_process(instance=instance, partition_key="2026-11-30").success
    # an hour before it: the CLI widens the partitions to hold it
    assert _starts(build_definitions(path, earliest_hour="2026-11-29-23:00"))[0] == "2026-11-29-23:00"
    # the fleet file's since wins over the ledger
    (tmp_path / "fleet.yaml").write_text("since: 2026-11-30-05:00\n" + SMALL_FLEET.format(ledger=tmp_path / "ledger"))
    assert _starts(build_definitions(path)) == ("2026-11-30-05:00", "2026-11-30")
