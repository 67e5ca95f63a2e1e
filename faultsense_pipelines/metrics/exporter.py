"""A Prometheus exporter of the fleet's current state, read from the ledger (``faultsense metrics``).

Each scrape costs a bounded amount of work, whatever the ledger's age:

* the ledger's Delta table is kept loaded by one worker thread and brought up to date with
  the log entries since the last scrape (``update_incremental``); when its version did not
  change, the scrape answers from the state computed last time and reads no data file;
* when it changed, the exporter reads only the last ``window_days`` days of ``date``
  partitions (partition pruning): their ``sweeps`` rows (one per sweep attempt) and their
  ``faultsense`` fault rows of status ``confirmed`` / ``inconclusive``, and computes the state
  (:func:`.state.build_state`): per replica its latest attempt and latest completed sweep by
  swept hour, per component what that sweep says.

A ledger that cannot be read counts one scrape error (``faultsense_exporter_scrape_errors_total``)
and the scrape serves the last state read; the error's first line is logged. A damaged data
file in the window (cut short, not Parquet) is left out and named in the log, its read counts
one scrape error, and the other files' rows are served.

Series (``status``, ``phase``, ``kind``, ``node``, ``gpu``, ``rail`` take the few values of
the fleet file and the ledger; no sweep id, no timestamp is ever a label):

==========================================================  =========================================
``faultsense_component_faulty{replica,component,kind,node,gpu,rail,status}``  1: the replica's latest
                                                            completed sweep has the component
                                                            ``confirmed`` (or ``inconclusive``)
``faultsense_component_confidence{...,status}``             that row's posterior (0..1), where stated
``faultsense_component_slowdown{...,status}``               that row's slowdown (ratio), where measured
``faultsense_component_confirmed_sweeps{...}``              of the last N completed sweeps, how many
                                                            confirmed it (N: ``persistence_sweeps``)
``faultsense_component_episodes{...}``                      separate runs of confirming sweeps in the window
``faultsense_replica_status{replica,status}``               1 for the latest attempt's status, 0 for
                                                            the other four
``faultsense_last_sweep_timestamp_seconds{replica}``        when the latest completed sweep finished
``faultsense_last_swept_hour_timestamp_seconds{replica}``   the hour it swept
``faultsense_last_sweep_duration_seconds{replica}``         its duration
``faultsense_last_sweep_probes{replica,phase}``             its probes per phase
``faultsense_last_sweep_failed_probes{replica}``            the latest attempt's unmeasured probes
``faultsense_window_sweeps{replica,result}``                attempts in the window, ``completed`` / ``failed``
``faultsense_replica_sweep_interval_seconds{replica}``      the schedule of each fleet-file replica
``faultsense_failed_sweeps``                                failed attempts in the window, fleet-wide
``faultsense_exporter_scrape_errors_total``                 scrapes whose ledger read failed
``faultsense_exporter_ledger_version``                      the table version the state was read at
``faultsense_exporter_persistence_sweeps``                  N of the confirmed-sweeps window
``faultsense_exporter_window_days``                         days of partitions read
==========================================================  =========================================
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..ledger import FAULT_LEDGER, LedgerStore
from ..ledger.schema import SWEEP_STATUSES, SWEEPS
from .labels import COMPONENT_LABELS
from .state import FleetState, Topology, build_state

__all__ = ["DEFAULT_PERSISTENCE_SWEEPS", "DEFAULT_WINDOW_DAYS", "SWEEP_INTERVAL_S", "FleetCollector"]

_log = logging.getLogger(__name__)

#: How often each replica is swept (s): the ``hourly_sweep`` schedule.
SWEEP_INTERVAL_S = 3600.0
#: Days of ledger partitions (by swept hour, today included) read on a version change.
DEFAULT_WINDOW_DAYS = 7
#: N of "confirmed in M of the last N sweeps" (``faultsense_component_confirmed_sweeps``).
DEFAULT_PERSISTENCE_SWEEPS = 3

_SWEEP_COLUMNS = [
    "replica", "date", "batch", "status", "swept_hour", "started_at", "finished_at",
    "probes_phase1", "probes_phase2", "failed_probes",
]  # fmt: skip
_FAULT_COLUMNS = [
    "replica",
    "date",
    "batch",
    "status",
    "component_kind",
    "component",
    "gpu",
    "peer_gpu",
    "node",
    "slowdown",
    "confidence",
]
_FAULT_FILTER = (ds.field("detector") == "faultsense") & ds.field("status").isin(["confirmed", "inconclusive"])


class FleetCollector(Collector):
    """The exporter's one collector: reads the ledger when its version changed, then yields the series.

    Args:
        store: the ledger.
        topology: per fleet-file replica, its ``ReplicaTopology`` for the ``node`` label.
        intervals: per fleet-file replica, its sweep interval (s).
        window_days: days of partitions read on a version change (>= 1).
        persistence_sweeps: N of the confirmed-sweeps window (>= 1).
        now: the clock (UTC datetime), for tests.

    Raises:
        ValueError: ``window_days`` or ``persistence_sweeps`` below 1.
    """

    def __init__(
        self,
        store: LedgerStore,
        *,
        topology: Mapping[str, Topology] | None = None,
        intervals: Mapping[str, float] | None = None,
        window_days: int = DEFAULT_WINDOW_DAYS,
        persistence_sweeps: int = DEFAULT_PERSISTENCE_SWEEPS,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        if window_days < 1 or persistence_sweeps < 1:
            raise ValueError(f"window_days and persistence_sweeps must be >= 1, got {window_days}, {persistence_sweeps}")
        self.store = store
        self.topology = dict(topology or {})
        self.intervals = dict(intervals or {})
        self.window_days = window_days
        self.persistence_sweeps = persistence_sweeps
        self._now = now or (lambda: datetime.now(UTC))
        self._state = FleetState()
        self._first_day: str | None = None
        self._lock = threading.Lock()
        # one thread keeps the loaded Delta table (LedgerStore caches it per thread)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="faultsense-metrics")
        #: Scrapes whose ledger read failed, and ledger reads done (the version had changed).
        self.scrape_errors = 0
        self.reads = 0

    def describe(self) -> list[Metric]:
        """Nothing: registering the collector must not read the ledger (the first scrape does)."""
        return []

    def close(self) -> None:
        """Stop the worker thread (the collector answers no scrape after this)."""
        self._worker.shutdown(wait=True)

    def refresh(self) -> FleetState:
        """The state at the ledger's current version: the cached one when neither the version
        nor the window's first day changed, else read afresh. A read that fails counts a scrape
        error, is logged in one line, and leaves the last state in place."""
        with self._lock:
            try:
                self._state = self._worker.submit(self._refresh).result()
            except Exception as exc:  # any ledger failure: keep serving the last state
                self.scrape_errors += 1
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
                _log.warning("faultsense metrics: ledger %s not read: %s", self.store.display_uri, first)
            return self._state

    def _refresh(self) -> FleetState:
        version = self.store.version()
        first_day = (self._now().date() - timedelta(days=self.window_days - 1)).isoformat()
        if version == self._state.version and first_day == self._first_day:
            return self._state
        if version is None:
            self._first_day = first_day
            return FleetState()
        skipped: list[str] = []
        sweeps = self.store.read_table(SWEEPS, since=first_day, columns=_SWEEP_COLUMNS, skipped=skipped)
        faults = self.store.read_table(
            FAULT_LEDGER, since=first_day, columns=_FAULT_COLUMNS, filter=_FAULT_FILTER, skipped=skipped
        )
        if skipped:  # a damaged data file: the others' rows are served, the damage counted and named once
            self.scrape_errors += 1
            more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
            _log.warning("faultsense metrics: skipped unreadable ledger file %s%s", skipped[0][:300], more)
        state = build_state(
            _unix_seconds(sweeps, ("swept_hour", "started_at", "finished_at")).to_pylist(),
            faults.to_pylist(),
            topology=self.topology,
            persistence_sweeps=self.persistence_sweeps,
            version=version,
        )
        self.reads += 1
        self._first_day = first_day
        return state

    def collect(self) -> Iterator[Metric]:
        """Every series of the module docstring, from :meth:`refresh`."""
        state = self.refresh()
        yield from _component_metrics(state)
        yield from _replica_metrics(state, self.intervals)
        failed = GaugeMetricFamily("faultsense_failed_sweeps", "Failed sweep attempts in the window, fleet-wide.")
        failed.add_metric([], float(sum(r.failed_sweeps for r in state.replicas)))
        yield failed
        errors = CounterMetricFamily(
            "faultsense_exporter_scrape_errors", "Scrapes whose ledger read failed (the last state was served)."
        )
        errors.add_metric([], float(self.scrape_errors))
        yield errors
        for name, text, value in (
            ("faultsense_exporter_ledger_version", "Ledger table version the state was read at (-1: no table).", state.version),
            ("faultsense_exporter_persistence_sweeps", "N of faultsense_component_confirmed_sweeps.", self.persistence_sweeps),
            ("faultsense_exporter_window_days", "Days of ledger partitions read.", self.window_days),
        ):
            gauge = GaugeMetricFamily(name, text)
            gauge.add_metric([], float(-1 if value is None else value))
            yield gauge


def _unix_seconds(table: pa.Table, columns: tuple[str, ...]) -> pa.Table:
    """``table`` with its timestamp ``columns`` as float Unix seconds: Python rows of floats are
    made about ten times faster than rows of timezone-aware datetimes."""
    for name in columns:
        micros = pc.cast(pc.cast(table.column(name), pa.timestamp("us")), pa.int64())
        table = table.set_column(table.schema.get_field_index(name), name, pc.divide(pc.cast(micros, pa.float64()), 1e6))
    return table


def _component_metrics(state: FleetState) -> Iterator[Metric]:
    with_status = [*COMPONENT_LABELS, "status"]
    faulty = GaugeMetricFamily(
        "faultsense_component_faulty",
        "1: the replica's latest completed sweep has this component confirmed (status=confirmed) or unsettled (status=inconclusive).",
        labels=with_status,
    )
    confidence = GaugeMetricFamily(
        "faultsense_component_confidence",
        "Posterior that the component is faulty (0..1), latest completed sweep.",
        labels=with_status,
    )
    slowdown = GaugeMetricFamily(
        "faultsense_component_slowdown", "Observed / healthy median latency, latest completed sweep.", labels=with_status
    )
    confirmed = GaugeMetricFamily(
        "faultsense_component_confirmed_sweeps",
        "Of the replica's last N completed sweeps (faultsense_exporter_persistence_sweeps), those that confirmed it.",
        labels=list(COMPONENT_LABELS),
    )
    episodes = GaugeMetricFamily(
        "faultsense_component_episodes",
        "Separate runs of consecutive confirming sweeps within the window (confirmed, cleared, confirmed again: 2).",
        labels=list(COMPONENT_LABELS),
    )
    for c in state.components:
        values = [c.labels[k] for k in COMPONENT_LABELS]
        if c.status:
            faulty.add_metric([*values, c.status], 1.0)
            if c.confidence is not None:
                confidence.add_metric([*values, c.status], c.confidence)
            if c.slowdown is not None:
                slowdown.add_metric([*values, c.status], c.slowdown)
        if c.confirmed_sweeps:
            confirmed.add_metric(values, float(c.confirmed_sweeps))
        if c.episodes:
            episodes.add_metric(values, float(c.episodes))
    yield from (faulty, confidence, slowdown, confirmed, episodes)


def _replica_metrics(state: FleetState, intervals: Mapping[str, float]) -> Iterator[Metric]:
    status = GaugeMetricFamily(
        "faultsense_replica_status",
        "1 for the status of the replica's latest sweep attempt, 0 for the others.",
        labels=["replica", "status"],
    )
    stamp = GaugeMetricFamily(
        "faultsense_last_sweep_timestamp_seconds", "When the latest completed sweep finished (Unix time).", labels=["replica"]
    )
    hour = GaugeMetricFamily(
        "faultsense_last_swept_hour_timestamp_seconds",
        "The hour the latest completed sweep swept (Unix time).",
        labels=["replica"],
    )
    duration = GaugeMetricFamily(
        "faultsense_last_sweep_duration_seconds", "The latest completed sweep's duration.", labels=["replica"]
    )
    probes = GaugeMetricFamily(
        "faultsense_last_sweep_probes", "The latest completed sweep's probes per phase.", labels=["replica", "phase"]
    )
    failed_probes = GaugeMetricFamily(
        "faultsense_last_sweep_failed_probes", "Probes the latest sweep attempt could not measure.", labels=["replica"]
    )
    window = GaugeMetricFamily(
        "faultsense_window_sweeps", "Sweep attempts in the window, by result (completed, failed).", labels=["replica", "result"]
    )
    interval = GaugeMetricFamily(
        "faultsense_replica_sweep_interval_seconds", "How often the fleet file's replica is swept.", labels=["replica"]
    )
    for r in state.replicas:
        for word in SWEEP_STATUSES:
            status.add_metric([r.replica, word], 1.0 if word == r.status else 0.0)
        failed_probes.add_metric([r.replica], float(r.last_failed_probes))
        window.add_metric([r.replica, "completed"], float(r.completed_sweeps))
        window.add_metric([r.replica, "failed"], float(r.failed_sweeps))
        last = r.last_completed
        if last is not None:
            stamp.add_metric([r.replica], last["finished_at"])
            hour.add_metric([r.replica], last["swept_hour"])
            duration.add_metric([r.replica], max(0.0, last["finished_at"] - last["started_at"]))
            probes.add_metric([r.replica, "1"], float(last["probes_phase1"]))
            probes.add_metric([r.replica, "2"], float(last["probes_phase2"]))
    for name in sorted(intervals):
        interval.add_metric([name], float(intervals[name]))
    yield from (status, stamp, hour, duration, probes, failed_probes, window, interval)
