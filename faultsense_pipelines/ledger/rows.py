"""Rows of the ledger datasets, validated before anything is written.

A :class:`FaultRow` is one localized fault (or suspect); a :class:`ProbeRunRow` one repeat of
one probe, or the error that stopped it; a :class:`SweepRow` one sweep attempt; an
:class:`ActionRow` one decision of a guarded action. Each turns into an Arrow table with
exactly its schema of :mod:`.schema`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime

import pyarrow as pa

from ..replica.vocabulary import ComponentKind, Status
from .schema import (
    ACTION_DECISIONS,
    ACTION_SCHEMA,
    FAULT_SCHEMA,
    PROBE_RUN_SCHEMA,
    SCHEMA_VERSION,
    SWEEP_SCHEMA,
    SWEEP_STATUSES,
)

__all__ = [
    "NAME_RE",
    "ActionRow",
    "FaultRow",
    "ProbeRunRow",
    "SweepRow",
    "action_table",
    "fault_table",
    "probe_run_table",
    "sweep_table",
]

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
        confidence: what the drill-down's test guarantees for the verdict (the sequential
            drill-down: docs/verdicts.md), or None where the detector states none (schema
            version 2).
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


#: The longest ``reason`` and ``stderr`` an action row keeps (characters).
MAX_ACTION_TEXT = 300


@dataclass(frozen=True)
class ActionRow:
    """One row of ``actions/``: what one action decided about one verdict (see
    :data:`.schema.ACTION_SCHEMA` for the columns' meaning).

    Attributes:
        action_key: :func:`.schema.make_action_key` of (action, replica, component, hour, trigger).
        decided_at: when it was decided (timezone-aware).
        sweep_id: the run that decided it.
        replica, action: names (``[a-z0-9_-]``).
        trigger: ``"confirmed"`` or ``"resolved"``.
        component, component_kind: the verdict's component (``gpu:2``) and kind (``gpu``).
        hour: the sweep partition ``YYYY-MM-DD-HH:00``.
        decision: one of :data:`.schema.ACTION_DECISIONS`.
        reason: one line, at most :data:`MAX_ACTION_TEXT` characters.
        dry_run: whether the action was a dry run.
        node, gpu, status, confidence, slowdown, exit_code, stderr: where known, else None.
    """

    action_key: str
    decided_at: datetime
    sweep_id: str
    replica: str
    action: str
    trigger: str
    component: str
    component_kind: str
    hour: str
    decision: str
    reason: str
    dry_run: bool
    node: str | None = None
    gpu: int | None = None
    status: str | None = None
    confidence: float | None = None
    slowdown: float | None = None
    exit_code: int | None = None
    stderr: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.decided_at, datetime) or self.decided_at.tzinfo is None:
            raise ValueError(f"decided_at must be a timezone-aware datetime, got {self.decided_at!r}")
        _name("replica", self.replica)
        _name("action", self.action)
        if self.trigger not in ("confirmed", "resolved"):
            raise ValueError(f"trigger must be 'confirmed' or 'resolved', got {self.trigger!r}")
        if self.decision not in ACTION_DECISIONS:
            raise ValueError(f"decision must be one of {', '.join(ACTION_DECISIONS)}, got {self.decision!r}")
        for name in ("action_key", "sweep_id", "component", "component_kind", "hour"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"{name} must be a non-empty string, got {getattr(self, name)!r}")
        for name in ("reason", "stderr"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or len(value) > MAX_ACTION_TEXT):
                raise ValueError(f"{name} must be a string of at most {MAX_ACTION_TEXT} characters")
        _opt_int("gpu", self.gpu)
        if self.exit_code is not None and (isinstance(self.exit_code, bool) or not isinstance(self.exit_code, int)):
            raise ValueError(f"exit_code must be an integer or None, got {self.exit_code!r}")


@dataclass(frozen=True)
class SweepRow:
    """One row of ``sweeps/``: one sweep attempt of a (replica, hour) (schema version 3).

    Attributes:
        sweep_id: the run that swept (the Dagster run id).
        replica: replica name, ``[a-z0-9_-]+``.
        swept_hour: start of the hour partition swept; timezone-aware, stored in UTC.
        status: one of :data:`.schema.SWEEP_STATUSES`.
        started_at, finished_at: the attempt's wall-clock start and end (timezone-aware, UTC);
            ``finished_at >= started_at``.
        executor: the replica's executor word (``simulated``, ``local``, ``ray``, ``vllm``).
        drilldown: the Phase 2 method, or None when Phase 2 did not run.
        probes_phase1, probes_phase2: probes measured or attempted per phase (>= 0).
        failed_probes: probes that could not be measured (>= 0; > 0 only in a ``failed`` row).
        confirmed, inconclusive: the attempt's fault rows of those statuses (>= 0).
    """

    sweep_id: str
    replica: str
    swept_hour: datetime
    status: str
    started_at: datetime
    finished_at: datetime
    executor: str
    drilldown: str | None = None
    probes_phase1: int = 0
    probes_phase2: int = 0
    failed_probes: int = 0
    confirmed: int = 0
    inconclusive: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.sweep_id, str) or not self.sweep_id:
            raise ValueError(f"sweep_id must be a non-empty string, got {self.sweep_id!r}")
        _name("replica", self.replica)
        for name in ("swept_hour", "started_at", "finished_at"):
            value = getattr(self, name)
            if not isinstance(value, datetime) or value.tzinfo is None:
                raise ValueError(f"{name} must be a timezone-aware datetime, got {value!r}")
        if self.finished_at < self.started_at:
            raise ValueError(f"finished_at {self.finished_at} is before started_at {self.started_at}")
        if self.status not in SWEEP_STATUSES:
            raise ValueError(f"status must be one of {', '.join(SWEEP_STATUSES)}, got {str(self.status)[:40]!r}")
        if not isinstance(self.executor, str) or not self.executor:
            raise ValueError(f"executor must be a non-empty string, got {self.executor!r}")
        for name in ("probes_phase1", "probes_phase2", "failed_probes", "confirmed", "inconclusive"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")


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


def action_table(rows: Sequence[ActionRow]) -> pa.Table:
    """``rows`` as an Arrow table with exactly :data:`.schema.ACTION_SCHEMA`."""
    data = {f.name: _column(rows, f.name) for f in fields(ActionRow)}
    data["decided_at"] = [r.decided_at.astimezone(UTC) for r in rows]
    data["schema_version"] = [SCHEMA_VERSION] * len(rows)
    return pa.table({f.name: data[f.name] for f in ACTION_SCHEMA}, schema=ACTION_SCHEMA)


def sweep_table(rows: Sequence[SweepRow]) -> pa.Table:
    """``rows`` as an Arrow table with exactly :data:`.schema.SWEEP_SCHEMA`."""
    data = {f.name: _column(rows, f.name) for f in fields(SweepRow)}
    for name in ("swept_hour", "started_at", "finished_at"):
        data[name] = [getattr(r, name).astimezone(UTC) for r in rows]
    data["executor"] = [str(r.executor) for r in rows]
    data["drilldown"] = [None if r.drilldown is None else str(r.drilldown) for r in rows]
    data["schema_version"] = [SCHEMA_VERSION] * len(rows)
    return pa.table({f.name: data[f.name] for f in SWEEP_SCHEMA}, schema=SWEEP_SCHEMA)
