"""Rows of the two ledger datasets, validated before anything is written.

A :class:`FaultRow` is one localized fault (or suspect); a :class:`ProbeRunRow` one repeat of
one probe, or the error that stopped it. Both turn into Arrow tables with exactly the
schemas of :mod:`.schema`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime

import pyarrow as pa

from ..replica.vocabulary import ComponentKind, Status
from .schema import FAULT_SCHEMA, PROBE_RUN_SCHEMA, SCHEMA_VERSION

__all__ = ["NAME_RE", "FaultRow", "ProbeRunRow", "fault_table", "probe_run_table"]

#: Replica and detector names: what may appear in a ledger file name.
NAME_RE = re.compile(r"[a-z0-9_-]{1,64}")
#: A fault row's ``node``: one or two topology node names, comma-joined.
_NODE_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}(,[A-Za-z0-9_.-]{1,64})?")


def _name(kind: str, value: str) -> None:
    if not isinstance(value, str) or not NAME_RE.fullmatch(value):
        raise ValueError(f"{kind} must be 1-64 of a-z, 0-9, '_' and '-', got {value!r}")


def _opt_int(kind: str, value: int | None, minimum: int = 0) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < minimum):
        raise ValueError(f"{kind} must be an integer >= {minimum} or None, got {value!r}")


@dataclass(frozen=True)
class FaultRow:
    """One row of ``fault_ledger/``.

    Attributes:
        fault_id: deterministic id, see :func:`.schema.make_fault_id`.
        detected_at: when it was found; timezone-aware, stored in UTC.
        sweep_id: the run that found it (the Dagster run id for ``faultsense``).
        replica: replica (or cluster) name, ``[a-z0-9_-]+``.
        detector: ``"faultsense"``, ``"minder"``, ``"flowpulse"``, ...
        component_kind: a :class:`~faultsense_pipelines.replica.vocabulary.ComponentKind` or its word
            (:data:`.schema.COMPONENT_KINDS`); written as the plain word.
        component: ``"gpu:17"``, ``"link:3-40"``, ``"machine:node-07"``, ...
        status: a :class:`~faultsense_pipelines.replica.vocabulary.Status` or its word
            (:data:`.schema.STATUSES`); written as the plain word.
        slowdown: observed / healthy median latency (> 0), or None when not measured.
        gpu, peer_gpu: the GPU ids (``peer_gpu`` for links, smaller id in ``gpu``), or None.
        phase: 1 or 2 for FaultSense, None for passive detectors.
        probes_used: the sweep's Phase 1 probes plus the Phase 2 probes spent on this
            component (:attr:`~faultsense_pipelines.localize.verdicts.Verdict.probes_used`), or None.
        confidence: posterior probability that the component is faulty (the evidence
            drill-down), or None where the detector states none (schema version 2).
        node: the host the component sits on (``a17``; ``a17,a18`` for a link across two
            nodes), or None where unknown (schema version 3; see :data:`.schema.FAULT_SCHEMA`).
    """

    fault_id: str
    detected_at: datetime
    sweep_id: str
    replica: str
    detector: str
    component_kind: str
    component: str
    status: str
    slowdown: float | None = None
    gpu: int | None = None
    peer_gpu: int | None = None
    phase: int | None = None
    probes_used: int | None = None
    confidence: float | None = None
    node: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.fault_id, str) or not self.fault_id:
            raise ValueError(f"fault_id must be a non-empty string, got {self.fault_id!r}")
        if not isinstance(self.detected_at, datetime) or self.detected_at.tzinfo is None:
            raise ValueError(f"detected_at must be a timezone-aware datetime, got {self.detected_at!r}")
        if not isinstance(self.sweep_id, str) or not self.sweep_id:
            raise ValueError(f"sweep_id must be a non-empty string, got {self.sweep_id!r}")
        _name("replica", self.replica)
        _name("detector", self.detector)
        ComponentKind.parse(self.component_kind, "component_kind")
        if not isinstance(self.component, str) or not self.component:
            raise ValueError(f"component must be a non-empty string, got {self.component!r}")
        Status.parse(self.status, "status")
        if self.slowdown is not None and not (math.isfinite(self.slowdown) and self.slowdown > 0):
            raise ValueError(f"slowdown must be finite and > 0 or None, got {self.slowdown!r}")
        _opt_int("gpu", self.gpu)
        _opt_int("peer_gpu", self.peer_gpu)
        _opt_int("phase", self.phase, 1)
        _opt_int("probes_used", self.probes_used)
        if self.confidence is not None and not (math.isfinite(self.confidence) and 0.0 <= self.confidence <= 1.0):
            raise ValueError(f"confidence must be in [0, 1] or None, got {self.confidence!r}")
        if self.node is not None and not (isinstance(self.node, str) and _NODE_RE.fullmatch(self.node)):
            raise ValueError(f"node must be node names joined by ',' or None, got {str(self.node)[:80]!r}")


@dataclass(frozen=True)
class ProbeRunRow:
    """One row of ``probe_runs/``: one repeat of one probe, or one probe's error.

    Attributes:
        sweep_id: the run that measured it.
        replica: replica name.
        phase: 1 (cover) or 2 (drill-down).
        probe_index: index of the probe within its phase.
        gpus: the probe's GPU ids.
        latency_ms: end-to-end latency of this repeat, ms (finite, >= 0); None on error.
        repeat: 0-based repeat number; None on error.
        executor: an :class:`~faultsense_pipelines.replica.vocabulary.ExecutorKind` or its word
            (``simulated``, ``local``, ``ray``, ``vllm``); written as the plain word.
        error: why the probe could not be measured, or None.
    """

    sweep_id: str
    replica: str
    phase: int
    probe_index: int
    gpus: tuple[int, ...]
    latency_ms: float | None
    repeat: int | None
    executor: str
    error: str | None = None

    def __post_init__(self) -> None:
        _name("replica", self.replica)
        _opt_int("phase", self.phase, 1)
        _opt_int("probe_index", self.probe_index)
        _opt_int("repeat", self.repeat)
        if self.error is None:
            if self.latency_ms is None or not math.isfinite(self.latency_ms) or self.latency_ms < 0:
                raise ValueError(f"latency_ms must be finite and >= 0 when there is no error, got {self.latency_ms!r}")
        elif self.latency_ms is not None:
            raise ValueError("an error row carries no latency_ms")


def _column(rows: Sequence[object], name: str) -> list[object]:
    return [getattr(r, name) for r in rows]


def fault_table(rows: Sequence[FaultRow]) -> pa.Table:
    """``rows`` as an Arrow table with exactly :data:`.schema.FAULT_SCHEMA`."""
    data = {f.name: _column(rows, f.name) for f in fields(FaultRow)}
    data["detected_at"] = [r.detected_at.astimezone(UTC) for r in rows]
    data["schema_version"] = [SCHEMA_VERSION] * len(rows)
    return pa.table({f.name: data[f.name] for f in FAULT_SCHEMA}, schema=FAULT_SCHEMA)


def probe_run_table(rows: Sequence[ProbeRunRow]) -> pa.Table:
    """``rows`` as an Arrow table with exactly :data:`.schema.PROBE_RUN_SCHEMA`."""
    data = {f.name: _column(rows, f.name) for f in fields(ProbeRunRow)}
    data["gpus"] = [list(r.gpus) for r in rows]
    return pa.table({f.name: data[f.name] for f in PROBE_RUN_SCHEMA}, schema=PROBE_RUN_SCHEMA)
