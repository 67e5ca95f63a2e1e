"""From localization results to ledger rows (and nothing else)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import datetime

from faultsense_pipelines.ledger import FaultRow, ProbeRunRow, SweepRow, make_fault_id, replica_component
from faultsense_pipelines.localize import Localization, Phase1Result, ProbeRecord
from faultsense_pipelines.replica.vocabulary import ComponentKind, Status

from .partitions import SweepKey
from .report import component_of

__all__ = [
    "DETECTOR",
    "degraded_row",
    "degraded_slowdown",
    "error_rows",
    "fault_rows",
    "probe_counts",
    "probe_rows",
    "sweep_row",
    "sweep_status",
]

DETECTOR = "faultsense"


def probe_rows(
    records: Sequence[ProbeRecord], *, sweep_id: str, replica: str, executor: str, scrub=lambda s: s
) -> list[ProbeRunRow]:
    """One row per repeat of each measured probe, one error row per probe that failed."""
    rows: list[ProbeRunRow] = []
    for r in records:
        if r.error is not None or not r.latencies_ms:
            rows.append(
                ProbeRunRow(
                    sweep_id, replica, r.phase, r.probe_index, r.gpus, None, None, executor, scrub(r.error or "no measurement")
                )
            )
            continue
        rows.extend(
            ProbeRunRow(sweep_id, replica, r.phase, r.probe_index, r.gpus, float(v), i, executor)
            for i, v in enumerate(r.latencies_ms)
        )
    return rows


def error_rows(probes: Sequence[Sequence[int]], message: str, *, sweep_id: str, replica: str, executor: str) -> list[ProbeRunRow]:
    """One Phase 1 error row per probe of the cover (the executor never started)."""
    return [ProbeRunRow(sweep_id, replica, 1, i, tuple(p), None, None, executor, message) for i, p in enumerate(probes)]


def fault_rows(loc: Localization, *, key: SweepKey, sweep_id: str, detected_at: datetime) -> list[FaultRow]:
    """One ledger row per verdict; ``probes_used`` = Phase 1 probes + Phase 2 probes spent on it;
    ``node`` = the verdict's node (:meth:`~faultsense_pipelines.localize.Localization.placed`).

    A sweep that left links unjudged (``loc.unjudged_links``: no re-check, Algorithm 2,
    inconclusive components) adds one row ``replica:<name>``, status ``inconclusive``, Phase 2,
    ``probes_used`` = all its probes: the ledger then shows that the sweep did not vouch for
    every link (the count is in the ``phase2_drilldown`` metadata). A sweep still
    ``replica_degraded`` after Phase 2 (the sequential drill-down read it and confirmed nothing)
    adds the :func:`degraded_row`, as Phase 1 alone would have.
    """
    rows = []
    for v in loc.verdicts:
        component = component_of(v)
        rows.append(
            FaultRow(
                fault_id=make_fault_id(DETECTOR, key.replica, key.hour, component),
                detected_at=detected_at,
                sweep_id=sweep_id,
                replica=key.replica,
                detector=DETECTOR,
                component_kind=v.component_kind,
                component=component,
                status=v.status,
                slowdown=v.slowdown,
                gpu=v.gpu,
                peer_gpu=v.peer_gpu,
                phase=v.phase,
                probes_used=loc.probes_phase1 + v.probes_used,
                confidence=v.confidence,
                node=v.node,
            )
        )
    if loc.unjudged_links:
        probes = loc.probes_phase1 + loc.probes_phase2
        rows.append(
            _replica_row(key, sweep_id, detected_at, status=Status.INCONCLUSIVE, slowdown=None, phase=2, probes_used=probes)
        )
    if loc.replica_degraded:  # a drill-down that read a degraded sweep and found no cause keeps it degraded
        rows.append(degraded_row(loc.phase1, key=key, sweep_id=sweep_id, detected_at=detected_at))
    return rows


def degraded_slowdown(records: Sequence[ProbeRecord]) -> float | None:
    """How much slower a degraded replica's probes are: the median probe latency / the fastest
    probe's latency (each probe's latency = the median of its repeats, ms).

    With most probes slow (what makes a sweep degraded) the median probe is a slow one, and
    the fastest probe is the best baseline left. None with fewer than two measured probes.

    >>> from faultsense_pipelines.localize import ProbeRecord
    >>> rec = lambda i, ms: ProbeRecord(1, i, (i,), (ms,), None, "pass")
    >>> degraded_slowdown([rec(0, 20.0), rec(1, 40.0), rec(2, 41.0), rec(3, 39.0)])
    1.975
    """
    latencies = [r.latency_ms for r in records if r.latency_ms is not None]
    if len(latencies) < 2 or min(latencies) <= 0:
        return None
    return statistics.median(latencies) / min(latencies)


def degraded_row(result: Phase1Result, *, key: SweepKey, sweep_id: str, detected_at: datetime) -> FaultRow:
    """The one ledger row of a sweep judged replica-wide degraded (``result.replica_degraded``):
    component ``replica:<name>``, status ``suspect``, Phase 1, no GPU; see :func:`degraded_slowdown`."""
    slowdown = degraded_slowdown(result.records)
    return _replica_row(
        key, sweep_id, detected_at, status=Status.SUSPECT, slowdown=slowdown, phase=1, probes_used=len(result.records)
    )


def _replica_row(key: SweepKey, sweep_id: str, detected_at: datetime, **verdict) -> FaultRow:
    """A row about the whole replica (``replica:<name>``); one per sweep at most, so its
    ``fault_id`` (detector, replica, hour, component) is unique in the partition."""
    component = replica_component(key.replica)
    return FaultRow(
        fault_id=make_fault_id(DETECTOR, key.replica, key.hour, component),
        detected_at=detected_at,
        sweep_id=sweep_id,
        replica=key.replica,
        detector=DETECTOR,
        component_kind=ComponentKind.REPLICA,
        component=component,
        **verdict,
    )


def sweep_status(faults: Sequence[FaultRow]) -> str:
    """A completed sweep's ``sweeps.status`` from its fault rows: ``faulty`` (a component
    confirmed), else ``degraded`` (the ``replica:<name>`` suspect row of replica-wide
    degradation), else ``inconclusive`` (a row left unsettled), else ``healthy``."""
    statuses = {(r.component_kind, r.status) for r in faults}
    if any(status == Status.CONFIRMED for _, status in statuses):
        return "faulty"
    if (ComponentKind.REPLICA, Status.SUSPECT) in statuses:
        return "degraded"
    if any(status == Status.INCONCLUSIVE for _, status in statuses):
        return "inconclusive"
    return "healthy"


def probe_counts(rows: Sequence[ProbeRunRow]) -> tuple[int, int, int]:
    """``(phase 1 probes, phase 2 probes, probes with an error)`` among a sweep's probe rows
    (each probe counted once, however many repeats it has)."""
    probes = {(r.phase, r.probe_index) for r in rows}
    failed = {(r.phase, r.probe_index) for r in rows if r.error is not None}
    return sum(1 for p, _ in probes if p == 1), sum(1 for p, _ in probes if p != 1), len(failed)


def sweep_row(
    *,
    key: SweepKey,
    sweep_id: str,
    executor: str,
    started_at: datetime,
    finished_at: datetime,
    probes_phase1: int,
    probes_phase2: int,
    drilldown: str | None,
    faults: Sequence[FaultRow] = (),
    failed_probes: int | None = None,
) -> SweepRow:
    """The ``sweeps`` row of one attempt: ``failed`` when ``failed_probes`` is given (the
    attempt did not complete), else the :func:`sweep_status` of its ``faults``. A clock that
    stepped back between start and end gives ``finished_at = started_at``."""
    return SweepRow(
        sweep_id=sweep_id,
        replica=key.replica,
        swept_hour=key.start,
        status="failed" if failed_probes is not None else sweep_status(faults),
        started_at=started_at,
        finished_at=max(started_at, finished_at),
        executor=str(executor),
        drilldown=None if drilldown is None else str(drilldown),
        probes_phase1=probes_phase1,
        probes_phase2=probes_phase2,
        failed_probes=failed_probes or 0,
        confirmed=sum(1 for r in faults if r.status == Status.CONFIRMED),
        inconclusive=sum(1 for r in faults if r.status == Status.INCONCLUSIVE),
    )
