"""Localization: Phase 1 sweep, suspect rule and Phase 2 drill-down over one executor.

This is the one place where the pure algorithms (:mod:`.cover`, :mod:`.suspects`,
:mod:`.drilldown`) meet a :class:`~faultsense_pipelines.probes.ProbeExecutor`. Its results
are frozen, picklable dataclasses that map one-to-one onto the ledger: a :class:`ProbeRecord`
per measured probe (``probe_runs``) and a :class:`Verdict` per judged component (the fault
ledger).

Executor failures: a probe whose measurement carries ``error`` has outcome ``"error"``; it
exonerates nothing and blames nothing, and components seen only in errored probes get no
verdict. :attr:`Phase1Result.errors` counts them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cover import Cover
from .probes import ProbeExecutor, ProbeMeasurement
from .suspects import SuspectRule, default_rule, probe_fails, probe_latency_ms
from .topology import Link

__all__ = [
    "ProbeRecord",
    "Verdict",
    "Phase1Result",
    "Localization",
    "run_phase1",
    "run_phase2",
    "localize",
]

OUTCOMES = ("pass", "fail", "error")
STATUSES = ("suspect", "confirmed", "masked", "inconclusive")


@dataclass(frozen=True)
class ProbeRecord:
    """One measured probe (a row of the ledger's ``probe_runs``).

    Attributes:
        phase: 1 or 2.
        probe_index: index within its phase (Phase 1: index into the cover's probes).
        gpus: the probe's GPU ids, sorted.
        latencies_ms: one latency per repeat, ms; empty on error.
        error: why the probe could not be measured, or ``None``.
        outcome: ``"pass"``, ``"fail"`` (slow) or ``"error"``.
    """

    phase: int
    probe_index: int
    gpus: tuple[int, ...]
    latencies_ms: tuple[float, ...]
    error: str | None
    outcome: str

    @property
    def latency_ms(self) -> float | None:
        """Median of the repeats, ms; ``None`` on error."""
        return probe_latency_ms(self.latencies_ms) if self.latencies_ms else None


@dataclass(frozen=True)
class Verdict:
    """One judged component (a row of the fault ledger).

    Attributes:
        component_kind: ``"gpu"`` or ``"link"``.
        gpu: the GPU, or a link's smaller GPU id.
        peer_gpu: a link's larger GPU id; ``None`` for a GPU.
        status: ``"suspect"``, ``"confirmed"``, ``"masked"`` or ``"inconclusive"``.
        slowdown: observed latency of the probe that pinned it / healthy baseline; ``None``
            when unknown.
        phase: the phase that produced the verdict.
        probes_used: Phase 2 probes spent to reach it.
    """

    component_kind: str
    gpu: int
    peer_gpu: int | None
    status: str
    slowdown: float | None
    phase: int
    probes_used: int

    @property
    def link(self) -> Link | None:
        """The link as a sorted pair, or ``None`` for a GPU."""
        return None if self.peer_gpu is None else (self.gpu, self.peer_gpu)


@dataclass(frozen=True)
class Phase1Result:
    """The Phase 1 sweep of one replica and its suspects.

    Attributes:
        gpus: n.
        probe_size: k.
        cover_method: the cover's method.
        records: one :class:`ProbeRecord` per cover probe, in cover order.
        baseline_ms: healthy probe latency inferred by the rule, ms (``None`` if nothing
            was measured).
        threshold_ms: slow-probe threshold, ms (``None`` if nothing was measured).
        suspect_probes: indices of the suspect probes.
        replica_degraded: the healthy-majority assumption failed; no suspect is reported.
        errors: probes that could not be measured.
    """

    gpus: int
    probe_size: int
    cover_method: str
    records: tuple[ProbeRecord, ...]
    baseline_ms: float | None
    threshold_ms: float | None
    suspect_probes: tuple[int, ...]
    replica_degraded: bool
    errors: int

    @property
    def needs_drilldown(self) -> bool:
        """True when there is a suspect probe to drill into."""
        return bool(self.suspect_probes) and not self.replica_degraded


@dataclass(frozen=True)
class Localization:
    """Phase 1, Phase 2 and the verdicts for one replica."""

    phase1: Phase1Result
    phase2_records: tuple[ProbeRecord, ...]
    verdicts: tuple[Verdict, ...]

    def _links(self, status: str) -> list[list[int]]:
        return sorted([v.gpu, v.peer_gpu] for v in self.verdicts if v.peer_gpu is not None and v.status == status)

    @property
    def faulty_gpus(self) -> list[int]:
        """Confirmed faulty GPUs, ascending."""
        return sorted(v.gpu for v in self.verdicts if v.component_kind == "gpu" and v.status == "confirmed")

    @property
    def faulty_links(self) -> list[list[int]]:
        """Confirmed faulty links as sorted ``[a, b]`` pairs, ascending."""
        return self._links("confirmed")

    @property
    def masked_links(self) -> list[list[int]]:
        """Links that cannot be judged because a GPU on them is faulty, as sorted pairs."""
        return self._links("masked")

    @property
    def probes_phase1(self) -> int:
        return len(self.phase1.records)

    @property
    def probes_phase2(self) -> int:
        return len(self.phase2_records)

    @property
    def replica_degraded(self) -> bool:
        return self.phase1.replica_degraded

    def to_dict(self) -> dict:
        """The ``faultsense simulate --json`` contract (plain JSON types)."""
        inconclusive = [
            {"gpu": v.gpu} if v.peer_gpu is None else {"link": [v.gpu, v.peer_gpu]}
            for v in self.verdicts
            if v.status == "inconclusive"
        ]
        return {
            "gpus": self.phase1.gpus,
            "probe_size": self.phase1.probe_size,
            "cover_method": self.phase1.cover_method,
            "faulty_gpus": self.faulty_gpus,
            "faulty_links": self.faulty_links,
            "masked_links": self.masked_links,
            "inconclusive": inconclusive,
            "probes": {"phase1": self.probes_phase1, "phase2": self.probes_phase2},
            "suspect_probes": list(self.phase1.suspect_probes),
            "baseline_ms": self.phase1.baseline_ms,
            "threshold_ms": self.phase1.threshold_ms,
            "replica_degraded": self.replica_degraded,
            "errors": self.phase1.errors + sum(r.outcome == "error" for r in self.phase2_records),
        }


def run_phase1(
    executor: ProbeExecutor, cover: Cover, *, repeats: int = 1, rule: SuspectRule | None = None
) -> Phase1Result:
    """Run every cover probe ``repeats`` times and judge the sweep with ``rule``."""
    raise NotImplementedError  # implementation lands in the next commit


def run_phase2(
    executor: ProbeExecutor,
    phase1: Phase1Result,
    *,
    method: str = "adaptive",
    repeats: int = 1,
    rule: SuspectRule | None = None,
) -> Localization:
    """Drill into the suspects of ``phase1`` and return the verdicts."""
    raise NotImplementedError  # implementation lands in the next commit


def localize(
    executor: ProbeExecutor,
    cover: Cover,
    *,
    repeats: int = 1,
    rule: SuspectRule | None = None,
    method: str = "adaptive",
) -> Localization:
    """Phase 1 then, if needed, Phase 2 on one replica."""
    phase1 = run_phase1(executor, cover, repeats=repeats, rule=rule)
    return run_phase2(executor, phase1, method=method, repeats=repeats, rule=rule)
