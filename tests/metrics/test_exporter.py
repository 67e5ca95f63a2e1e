"""The exporter over a real ledger: real sweeps (in-process Dagster runs), real Delta commits, a
real scrape through prometheus_client's exposition, parsed back."""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from faultsense_pipelines.assets.commit import commit_sweep
from faultsense_pipelines.assets.partitions import SweepKey
from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.ledger import LedgerStore, ProbeRunRow, SweepRow
from faultsense_pipelines.metrics import FleetCollector
from faultsense_pipelines.replica.topology import ReplicaTopology
from faultsense_pipelines.sweeps import run_sweep
from tests.pipeline_helpers import HOURS, write_fleet

NOON = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)  # the tests' "now": the day of HOURS
SECRET = "sk-test-DO-NOT-LEAK-metrics-77"

FLEET = """
ledger: {ledger}
replicas:
  - name: sim-16
    gpus: 16
    probe_size: 4
    executor: simulated
    topology: {{gpus_per_node: 8, node_names: [host-a, host-b]}}
    simulated: {{faults: [{{gpu: 9, slowdown: 2.0}}], noise_sigma: 0.01, seed: 4}}
  - name: sim-8
    gpus: 8
    probe_size: 4
    executor: simulated
    simulated: {{noise_sigma: 0.01, seed: 5}}
  - name: prod-dead
    gpus: 8
    probe_size: 4
    executor: vllm
    vllm: {{url: "http://127.0.0.1:PORT", api_key_env: FAULTSENSE_METRICS_TEST_KEY, timeout_s: 2, retries: 0}}
"""


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(collector: FleetCollector) -> tuple[str, dict[tuple[str, frozenset], float]]:
    """One scrape: its text, and every sample as {(name, labels): value}."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    text = generate_latest(registry).decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return text, samples


def value(samples: dict, name: str, **labels: str) -> float | None:
    """The sample of ``name`` whose labels include ``labels`` (exactly one), or None."""
    found = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= ls]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else None


def topology() -> dict:
    return {"sim-16": ReplicaTopology(16, 8, node_names=("host-a", "host-b")), "sim-8": ReplicaTopology(8), "prod-dead": None}


@pytest.mark.integration  # real in-process Dagster runs
def test_sweeps_show_up_as_the_fleet_s_state_and_a_scrape_reads_the_ledger_only_after_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAULTSENSE_METRICS_TEST_KEY", SECRET)
    fleet, ledger = write_fleet(tmp_path, FLEET.replace("PORT", str(closed_port())))
    with dg.DagsterInstance.ephemeral() as instance:
        for hour in HOURS[:2]:
            run_sweep(fleet, hour=hour, instance=instance)
        collector = FleetCollector(LedgerStore(str(ledger)), topology=topology(), intervals={"sim-16": 3600.0}, now=lambda: NOON)
        text, samples = scrape(collector)

        # the fleet file's injected fault: GPU 9 of sim-16, on node 9 // 8 = 1, named host-b
        labels = {"replica": "sim-16", "component": "gpu:9", "kind": "gpu", "node": "host-b", "gpu": "9"}
        assert value(samples, "faultsense_component_faulty", status="confirmed", **labels) == 1.0
        assert value(samples, "faultsense_component_confirmed_sweeps", **labels) == 2.0  # both hours
        assert value(samples, "faultsense_component_episodes", **labels) == 1.0
        slowdown = value(samples, "faultsense_component_slowdown", status="confirmed", **labels)
        assert slowdown is not None and 1.8 < slowdown < 2.2  # injected x2.0, noise sigma 0.01
        assert {ls for (n, ls) in samples if n == "faultsense_component_faulty"} == {
            frozenset({**labels, "rail": "", "status": "confirmed"}.items())
        }  # nothing else blamed
        assert value(samples, "faultsense_replica_status", replica="sim-16", status="faulty") == 1.0
        assert value(samples, "faultsense_replica_status", replica="sim-8", status="healthy") == 1.0
        assert value(samples, "faultsense_replica_status", replica="sim-8", status="faulty") == 0.0
        # the unreachable server: both hours failed, every Phase 1 probe unmeasured, no completed sweep
        cover = len(plan_cover(8, 4, "best").probes)
        assert value(samples, "faultsense_replica_status", replica="prod-dead", status="failed") == 1.0
        assert value(samples, "faultsense_last_sweep_failed_probes", replica="prod-dead") == cover
        assert value(samples, "faultsense_last_sweep_timestamp_seconds", replica="prod-dead") is None
        assert value(samples, "faultsense_failed_sweeps") == 2.0
        assert value(samples, "faultsense_last_sweep_probes", replica="sim-8", phase="1") == cover
        swept = datetime.strptime(HOURS[1], "%Y-%m-%d-%H:%M").replace(tzinfo=UTC).timestamp()
        assert value(samples, "faultsense_last_swept_hour_timestamp_seconds", replica="sim-8") == swept
        finished = value(samples, "faultsense_last_sweep_timestamp_seconds", replica="sim-8")
        assert finished is not None and finished <= datetime.now(UTC).timestamp()
        assert value(samples, "faultsense_replica_sweep_interval_seconds", replica="sim-16") == 3600.0
        assert SECRET not in text and "sweep_id" not in text  # no secret, no unbounded label
        assert collector.reads == 1

        scrape(collector)  # nothing committed since: the cached state, no ledger read
        assert collector.reads == 1
        run_sweep(fleet, ["sim-8"], hour=HOURS[2], instance=instance)
        _, samples = scrape(collector)
        assert collector.reads == 2
        swept = datetime.strptime(HOURS[2], "%Y-%m-%d-%H:%M").replace(tzinfo=UTC).timestamp()
        assert value(samples, "faultsense_last_swept_hour_timestamp_seconds", replica="sim-8") == swept
        collector.close()


def _commit(store: LedgerStore, hour: str, status: str = "healthy") -> None:
    key = SweepKey(hour, "sim-8")
    start = key.start
    row = SweepRow(sweep_id=f"run-{hour}", replica="sim-8", swept_hour=start, status=status, started_at=start,
                   finished_at=start, executor="simulated", probes_phase1=1)  # fmt: skip
    probes = [ProbeRunRow(row.sweep_id, "sim-8", 1, 0, (0, 1), 10.0, 0, "simulated")]
    commit_sweep(store, key, phase1=probes, phase2=None, faults=[], sweep_id=row.sweep_id, sweep=row)


def test_a_ledger_that_cannot_be_read_counts_a_scrape_error_and_serves_the_last_state(tmp_path: Path) -> None:
    store = LedgerStore(str(tmp_path / "ledger"))
    _commit(store, HOURS[0])
    collector = FleetCollector(LedgerStore(str(tmp_path / "ledger")), now=lambda: NOON)
    _, samples = scrape(collector)
    assert value(samples, "faultsense_replica_status", replica="sim-8", status="healthy") == 1.0
    version = store.version()
    assert version is not None
    log = tmp_path / "ledger" / "delta" / "_delta_log"
    (log / f"{version + 1:020d}.json").write_text("this is not a commit\n")
    _, samples = scrape(collector)
    assert value(samples, "faultsense_exporter_scrape_errors_total") == 1.0
    assert value(samples, "faultsense_replica_status", replica="sim-8", status="healthy") == 1.0  # the last state
    collector.close()


def test_the_window_reads_only_recent_days_and_an_empty_ledger_exports_no_replica(tmp_path: Path) -> None:
    collector = FleetCollector(LedgerStore(str(tmp_path / "none")), intervals={"sim-8": 3600.0}, now=lambda: NOON)
    _, samples = scrape(collector)
    assert value(samples, "faultsense_exporter_ledger_version") == -1.0
    assert not [n for (n, _) in samples if n == "faultsense_replica_status"]
    assert value(samples, "faultsense_replica_sweep_interval_seconds", replica="sim-8") == 3600.0
    collector.close()

    store = LedgerStore(str(tmp_path / "ledger"))
    _commit(store, "2026-11-20-08:00", "faulty")  # 10 days before NOON: outside a 7-day window
    _commit(store, HOURS[0])
    for days, expected in ((7, 1.0), (11, 2.0)):
        collector = FleetCollector(LedgerStore(str(tmp_path / "ledger")), window_days=days, now=lambda: NOON)
        _, samples = scrape(collector)
        assert value(samples, "faultsense_window_sweeps", replica="sim-8", result="completed") == expected
        collector.close()


def test_a_damaged_data_file_in_the_window_is_skipped_counted_and_the_rest_served(tmp_path: Path) -> None:
    store = LedgerStore(str(tmp_path / "ledger"))
    _commit(store, HOURS[0])
    key = SweepKey(HOURS[1], "sim-9")
    row = SweepRow(sweep_id="run-9", replica="sim-9", swept_hour=key.start, status="healthy", started_at=key.start,
                   finished_at=key.start, executor="simulated")  # fmt: skip
    written = commit_sweep(store, key, phase1=[], phase2=None, faults=[], sweep_id="run-9", sweep=row)
    version = int(written[0].rsplit("@v", 1)[1])
    (damaged,) = store.added_files(version, "sweeps")
    (tmp_path / "ledger" / "delta" / damaged).write_bytes(b"PAR1 cut short")
    collector = FleetCollector(LedgerStore(str(tmp_path / "ledger")), now=lambda: NOON)
    _, samples = scrape(collector)
    assert value(samples, "faultsense_exporter_scrape_errors_total") == 1.0
    assert value(samples, "faultsense_replica_status", replica="sim-8", status="healthy") == 1.0
    assert value(samples, "faultsense_replica_status", replica="sim-9", status="healthy") is None
    _, samples = scrape(collector)  # nothing changed: counted once, not at every scrape
    assert value(samples, "faultsense_exporter_scrape_errors_total") == 1.0
    collector.close()
