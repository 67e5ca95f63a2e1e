"""From localization results to ledger rows (and nothing else)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from faultsense_pipelines.ledger import FaultRow, ProbeRunRow, make_fault_id
from faultsense_pipelines.localize import Localization, ProbeRecord

from .partitions import SweepKey
from .report import component_of

__all__ = ["probe_rows", "error_rows", "fault_rows", "DETECTOR"]

DETECTOR = "faultsense"


def probe_rows(records: Sequence[ProbeRecord], *, sweep_id: str, replica: str, executor: str, scrub=lambda s: s) -> list[ProbeRunRow]:
    """One row per repeat of each measured probe, one error row per probe that failed."""
    rows: list[ProbeRunRow] = []
    for r in records:
        if r.error is not None or not r.latencies_ms:
            rows.append(ProbeRunRow(sweep_id, replica, r.phase, r.probe_index, r.gpus, None, None, executor, scrub(r.error or "no measurement")))
            continue
        rows.extend(
            ProbeRunRow(sweep_id, replica, r.phase, r.probe_index, r.gpus, float(v), i, executor) for i, v in enumerate(r.latencies_ms)
        )
    return rows


def error_rows(probes: Sequence[Sequence[int]], message: str, *, sweep_id: str, replica: str, executor: str) -> list[ProbeRunRow]:
    """One Phase 1 error row per probe of the cover (the executor never started)."""
    return [ProbeRunRow(sweep_id, replica, 1, i, tuple(p), None, None, executor, message) for i, p in enumerate(probes)]


def fault_rows(loc: Localization, *, key: SweepKey, sweep_id: str, detected_at: datetime) -> list[FaultRow]:
    """One ledger row per verdict; ``probes_used`` = Phase 1 probes + Phase 2 probes spent on it."""
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
            )
        )
    return rows
