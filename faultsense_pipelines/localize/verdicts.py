"""The result of localizing one replica: measured probes, Phase 1 and the verdicts.

Frozen, picklable dataclasses that map one-to-one onto the ledger:

* :class:`ProbeRecord` -- one measured probe (a row of ``probe_runs``): its GPUs, the
  latency of every repeat (ms) and its outcome, ``"pass"``, ``"fail"`` (slow) or ``"error"``;
* :class:`Verdict` -- one judged GPU or GPU-to-GPU link (a row of the fault ledger):
  ``"suspect"``, ``"confirmed"``, ``"masked"`` or ``"inconclusive"``, with its slowdown;
* :class:`Phase1Result` -- the Phase 1 sweep and what the suspect rule made of it;
* :class:`Localization` -- Phase 1, the Phase 2 drill-down probes and the verdicts, with the
  ``faultsense simulate --json`` contract (:meth:`Localization.to_dict`).

:mod:`faultsense_pipelines.localize` produces them (and re-exports them).

>>> v = Verdict(ComponentKind.LINK, 3, 21, Status.CONFIRMED, 1.56, 2, 4)
>>> v.link
(3, 21)
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from ..measure.threshold import probe_latency_ms
from ..replica.topology import Component, Link, ReplicaTopology, gpu_component, link_component
from ..replica.vocabulary import ComponentKind, Outcome, Status

__all__ = [
    "STATUSES",
    "Localization",
    "Phase1Records",
    "Phase1Result",
    "ProbeRecord",
    "Verdict",
    "measured_rows",
    "padded_members",
]

#: Verdict statuses' words (:class:`~faultsense_pipelines.replica.vocabulary.Status`); ``localize`` produces the last three
#: ("suspect" is for reports of a Phase 1 sweep that was not drilled into).
STATUSES: tuple[str, ...] = Status.values()


@dataclass(frozen=True)
class ProbeRecord:
    """One measured probe (a row of the ledger's ``probe_runs``).

    Attributes:
        phase: 1 or 2.
        probe_index: index within its phase (Phase 1: index into the cover's probes).
        gpus: the probe's GPU ids, sorted.
        latencies_ms: one latency per repeat, ms; empty on error.
        error: why the probe could not be measured, or ``None``.
        outcome: :class:`~faultsense_pipelines.replica.vocabulary.Outcome`: ``"pass"``, ``"fail"`` (slow) or ``"error"``
            (a plain word given is stored as its member).

    Raises:
        ValueError: for an outcome that is not an :class:`~faultsense_pipelines.replica.vocabulary.Outcome` word.
    """

    phase: int
    probe_index: int
    gpus: tuple[int, ...]
    latencies_ms: tuple[float, ...]
    error: str | None
    outcome: Outcome

    def __post_init__(self) -> None:
        if type(self.outcome) is not Outcome:  # a plain word: stored as its member
            object.__setattr__(self, "outcome", Outcome.parse(self.outcome, "outcome"))

    @property
    def latency_ms(self) -> float | None:
        """Median of the repeats, ms; ``None`` on error."""
        return probe_latency_ms(self.latencies_ms) if self.latencies_ms else None


def padded_members(probes: Sequence[Sequence[int]]) -> np.ndarray:
    """Probes (GPU ids) as one ``(P, w)`` integer array, ascending within a row, a probe of
    fewer than ``w`` GPUs padded with ``-1`` (the ``members`` of :class:`Phase1Records`).

    >>> padded_members([(3, 1), (0, 2, 4)]).tolist()
    [[1, 3, -1], [0, 2, 4]]
    """
    width = max((len(p) for p in probes), default=0)
    out = np.full((len(probes), width), -1, dtype=np.int64)
    for i, p in enumerate(probes):
        out[i, : len(p)] = sorted(p)
    return out


def measured_rows(count: int, errors: Mapping[int, str]) -> np.ndarray:
    """Per probe of ``count``, ``True`` unless ``errors`` holds it; shape ``(count,)``."""
    ok = np.ones(count, dtype=bool)
    ok[list(errors)] = False
    return ok


class Phase1Records(Sequence[ProbeRecord]):
    """The records of a Phase 1 sweep, held as arrays: every probe, measured or errored.

    A read-only sequence of :class:`ProbeRecord` (phase 1, ``probe_index`` = position) that
    builds each record when it is read, so a sweep of millions of probes costs a few numeric
    arrays instead of millions of Python objects. Equal to any sequence of the same records.
    An errored probe is a row like any other: its latencies are NaN and its message is in
    ``errors`` (its record: no latency, the message, outcome ``"error"``).

    Args:
        members: GPU ids of each probe, ascending within a row; shape ``(P, w)``, integer; a
            probe of fewer than ``w`` GPUs ends in ``-1`` padding.
        latencies_ms: the first measurements of each probe, ms; shape ``(P, r)``, float; NaN
            after the last measurement of a row (an errored probe: all NaN).
        outcomes: per probe, ``True`` when it failed (slow), else it passed (or errored);
            shape ``(P,)``.
        extra_ms: latencies (ms) measured later, appended after row ``i``'s, for the few
            probes re-measured (index -> latencies).
        errors: why a probe could not be measured (index -> message), for the errored probes.

    Raises:
        ValueError: arrays of mismatched lengths.
    """

    __slots__ = ("errors", "extra", "failed", "latencies", "members")

    def __init__(
        self,
        members: np.ndarray,
        latencies_ms: np.ndarray,
        outcomes: np.ndarray,
        extra_ms: Mapping[int, tuple[float, ...]] | None = None,
        errors: Mapping[int, str] | None = None,
    ) -> None:
        if not (len(members) == len(latencies_ms) == len(outcomes)) or members.ndim != 2 or latencies_ms.ndim != 2:
            raise ValueError("members (P, k), latencies_ms (P, r) and outcomes (P,) must have the same P")
        self.members = members
        self.latencies = latencies_ms
        self.failed = np.asarray(outcomes, dtype=bool)
        self.extra = dict(extra_ms or {})
        self.errors = dict(errors or {})

    @classmethod
    def of(cls, records: Sequence[ProbeRecord]) -> Phase1Records:
        """The records of a Phase 1 sweep given one object per probe (a tuple of an older
        pickle, a hand-made sweep), as arrays; ``records`` itself when it is one already.

        Raises:
            ValueError: naming ``records[i]`` when a record is not of a Phase 1 sweep: not
                phase 1, ``probe_index`` not its position, an error without outcome
                ``"error"`` (or the reverse) or with a latency, or a NaN latency.
        """
        if isinstance(records, Phase1Records):
            return records
        rounds = max((len(r.latencies_ms) for r in records), default=0)
        members = padded_members([r.gpus for r in records])
        latencies = np.full((len(records), rounds), np.nan)
        errors: dict[int, str] = {}
        for i, r in enumerate(records):
            bad = (
                "is not of phase 1"
                if r.phase != 1
                else f"has probe_index {r.probe_index}"
                if r.probe_index != i
                else "has an error but not outcome 'error' (or the reverse)"
                if (r.error is None) == (r.outcome == Outcome.ERROR)
                else "is an error with a latency"
                if r.error is not None and r.latencies_ms
                else "has a NaN latency"
                if any(math.isnan(v) for v in r.latencies_ms)
                else None
            )
            if bad:
                raise ValueError(f"records[{i}] {bad}: not a Phase 1 sweep's record")
            latencies[i, : len(r.latencies_ms)] = r.latencies_ms
            if r.error is not None:
                errors[i] = r.error
        failed = np.asarray([r.outcome == Outcome.FAIL for r in records], dtype=bool)
        return cls(members, latencies, failed, None, errors)

    def __len__(self) -> int:
        return len(self.members)

    def _make(self, i: int, gpus: list[int], lat: list[float], failed: bool) -> ProbeRecord:
        if i in self.errors:
            return ProbeRecord(1, i, tuple(g for g in gpus if g >= 0), (), self.errors[i], Outcome.ERROR)
        if gpus and gpus[-1] < 0:  # a probe of fewer GPUs than the widest
            gpus = [g for g in gpus if g >= 0]
        if lat and math.isnan(lat[-1]):  # fewer measurements than the longest row
            lat = [v for v in lat if not math.isnan(v)]
        more = self.extra.get(i)
        return ProbeRecord(
            1, i, tuple(gpus), tuple(lat) + more if more else tuple(lat), None, Outcome.FAIL if failed else Outcome.PASS
        )

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        j = range(len(self))[i]  # negative indices; IndexError out of range
        return self._make(j, self.members[j].tolist(), self.latencies[j].tolist(), bool(self.failed[j]))

    def __iter__(self) -> Iterator[ProbeRecord]:
        block = 1 << 16  # rows converted per batch: O(block) Python objects alive at a time
        for start in range(0, len(self), block):
            stop = start + block
            rows = zip(self.members[start:stop].tolist(), self.latencies[start:stop].tolist(), self.failed[start:stop].tolist())
            for i, (gpus, lat, failed) in enumerate(rows, start):
                yield self._make(i, gpus, lat, failed)

    @property
    def measured(self) -> np.ndarray:
        """Per probe, ``True`` when it was measured (no error); shape ``(P,)``."""
        return measured_rows(len(self), self.errors)

    def first_latencies(self, repeats: int) -> list[list[float]]:
        """Per probe, its first ``repeats`` latencies (ms); ``[]`` for an errored probe."""
        head = self.latencies[:, :repeats]
        if head.shape[1] == repeats and not np.isnan(head[self.measured]).any():  # every measured row holds them
            rows: list[list[float]] = head.tolist()
            for i in self.errors:
                rows[i] = []
            return rows
        return [list(r.latencies_ms[:repeats]) for r in self]

    def passed(self) -> Phase1Records:
        """These records with every failed probe passing (errored ones unchanged)."""
        return Phase1Records(self.members, self.latencies, np.zeros(len(self), dtype=bool), self.extra, self.errors)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or len(other) != len(self):
            return False
        return all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Phase1Records({len(self)} probes, {len(self.errors)} errors)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Phase1Records, (self.members, self.latencies, self.failed, self.extra, self.errors))


@dataclass(frozen=True)
class Verdict:
    """One judged component (a row of the fault ledger).

    Attributes:
        component_kind: :attr:`ComponentKind.GPU`, :attr:`ComponentKind.LINK` or a shared
            kind (``nic``, ``nvswitch``, ``switch``).
        gpu: the GPU, or a link's smaller GPU id; ``None`` for a shared component.
        peer_gpu: a link's larger GPU id; ``None`` for a GPU.
        status: a :class:`~faultsense_pipelines.replica.vocabulary.Status`.
        slowdown: observed latency of the probe that pinned it / healthy baseline; ``None``
            when unknown.
        phase: the phase that produced the verdict.
        probes_used: Phase 2 probes spent on it: with ``adaptive`` and ``paper`` those since
            the previous verdict (so they sum to the Phase 2 total), with ``sequential`` two
            per paired round of this component's claim.
        confidence: what the sequential drill-down's test guarantees for a confirmed verdict
            (``1 - min(1, alpha / (level x e-value))``: over the verdicts stated at
            ``>= 1 - a``, at most ``a`` healthy ones expected; docs/verdicts.md); ``None``
            where the drill-down treats probes as binary tests (``adaptive``, ``paper``), the
            component is masked, or no claim tested it.
        reason: why an ``"inconclusive"`` verdict was not settled, where known.
        shared: the NIC, NVSwitch or switch (``None`` for a GPU or a link).
        name: the shared component's ledger name (``nic:node3``; node names from the topology).
        evidence: the Phase 2 test probes (GPU ids) of its claim (``sequential`` drill-down).
        node: the node (host) it sits on, from the replica's topology
            (:meth:`~faultsense_pipelines.replica.topology.ReplicaTopology.component_node`);
            set by :meth:`Localization.placed`, ``None`` where unknown.

    Plain words given for ``component_kind`` and ``status`` are stored as their members.

    Raises:
        ValueError: for a kind or status outside the vocabulary.
    """

    component_kind: ComponentKind
    gpu: int | None
    peer_gpu: int | None
    status: Status
    slowdown: float | None
    phase: int
    probes_used: int
    confidence: float | None = None
    reason: str | None = None
    shared: Component | None = None
    name: str | None = None
    evidence: tuple[tuple[int, ...], ...] = ()
    node: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "component_kind", ComponentKind.parse(self.component_kind, "component_kind"))
        object.__setattr__(self, "status", Status.parse(self.status, "status"))

    @property
    def hardware(self) -> Component | None:
        """The judged component as a :class:`~faultsense_pipelines.replica.topology.Component`
        (None for a verdict on no GPU, link or shared component)."""
        if self.shared is not None:
            return self.shared
        if self.gpu is None:
            return None
        return gpu_component(self.gpu) if self.peer_gpu is None else link_component(self.gpu, self.peer_gpu)

    @property
    def link(self) -> Link | None:
        """The link as a sorted pair, or ``None`` for a GPU or a shared component."""
        return None if self.peer_gpu is None or self.gpu is None else (self.gpu, self.peer_gpu)

    @property
    def component(self) -> str:
        """The ledger's component string: ``gpu:17``, ``link:3-40``, ``nic:node3``, ``switch:1``."""
        if self.shared is not None:
            return self.name or f"{self.shared.kind}:{'/'.join(str(i) for i in self.shared.ids)}"
        return f"gpu:{self.gpu}" if self.peer_gpu is None else f"link:{self.gpu}-{self.peer_gpu}"

    def describe(self) -> dict[str, object]:
        """The ``faulty_components`` entry: ``{"kind": "nic", "node": 3}`` (and ``rail``),
        ``{"kind": "switch", "switch": 1}``, ``{"kind": "gpu", "gpu": 9}``, ``{"kind": "link", "gpus": [3, 21]}``."""
        if self.shared is not None:
            return self.shared.describe()
        if self.peer_gpu is None:
            return {"kind": "gpu", "gpu": self.gpu}
        return {"kind": "link", "gpus": [self.gpu, self.peer_gpu]}


@dataclass(frozen=True)
class Phase1Result:
    """The Phase 1 sweep of one replica and its suspects.

    Attributes:
        gpus: n.
        probe_size: k.
        cover_method: the cover's method.
        records: one :class:`ProbeRecord` per cover probe, in cover order, errored ones
            included, as :class:`Phase1Records` (a sequence of records given, or unpickled
            from an older output, is converted by :meth:`Phase1Records.of`).
        baseline_ms: healthy probe latency inferred by the rule, ms (``None`` if nothing
            was measured).
        threshold_ms: slow-probe threshold, ms (``None`` if nothing was measured).
        suspect_probes: indices of the suspect probes.
        replica_degraded: the healthy-majority assumption failed; no suspect is reported.
        errors: probes that could not be measured.
        remeasured: probes measured a second time (2 x repeats more) because their first
            latency fell between the two thresholds (see :func:`judge_probe`), plus, when
            the first judgement was ``replica_degraded`` with ``interleave`` and repeats >= 2,
            every probe once more (``repeats`` more rounds, judged with the first ones).
        repeats: measurements per probe in the first pass.
        anchored: the rule found most probes slow, and the baseline and threshold are those
            of the fast cluster of probes (:func:`~faultsense_pipelines.localize.anchor.anchor_sweep`):
            a few slow components, not a degraded replica.
    """

    gpus: int
    probe_size: int
    cover_method: str
    records: Phase1Records
    baseline_ms: float | None
    threshold_ms: float | None
    suspect_probes: tuple[int, ...]
    replica_degraded: bool
    errors: int
    remeasured: int = 0
    repeats: int = 1
    anchored: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "records", Phase1Records.of(self.records))

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickle, converting the tuple of records that outputs pickled before
        :class:`Phase1Records` held errors carry."""
        self.__dict__.update(state, records=Phase1Records.of(state["records"]))

    @property
    def needs_drilldown(self) -> bool:
        """True when there is a suspect probe to drill into."""
        return bool(self.suspect_probes) and not self.replica_degraded


@dataclass(frozen=True)
class Localization:
    """Phase 1, Phase 2 and the verdicts for one replica (``topology``: where its GPUs sit,
    when the drill-down weighed shared components)."""

    phase1: Phase1Result
    phase2_records: tuple[ProbeRecord, ...]
    verdicts: tuple[Verdict, ...]
    topology: ReplicaTopology | None = None

    def placed(self, topology: ReplicaTopology | None) -> Localization:
        """This localization with every verdict's ``node`` named from ``topology`` (the
        replica's; unchanged without one, or when it does not say where GPUs sit)."""
        if topology is None or topology.gpus_per_node is None:
            return self
        verdicts = tuple(
            replace(v, node=topology.component_node(v.hardware)) if v.hardware is not None else v for v in self.verdicts
        )
        return replace(self, verdicts=verdicts)

    def _links(self, status: Status) -> list[list[int]]:
        return sorted(list(v.link) for v in self.verdicts if v.link is not None and v.status == status)

    @property
    def faulty_gpus(self) -> list[int]:
        """Confirmed faulty GPUs, ascending."""
        return sorted(
            v.gpu
            for v in self.verdicts
            if v.gpu is not None and v.component_kind == ComponentKind.GPU and v.status == Status.CONFIRMED
        )

    @property
    def faulty_components(self) -> list[dict[str, object]]:
        """Every confirmed component, shared ones first (NVSwitch, NIC, switch), then GPUs and
        links, each described as in :meth:`Verdict.describe` with its ``confidence``."""
        confirmed = [v for v in self.verdicts if v.status == Status.CONFIRMED]
        confirmed.sort(key=lambda v: (v.shared is None, v.shared.ids if v.shared else (), v.gpu or 0, v.peer_gpu or -1))
        return [{**v.describe(), "confidence": v.confidence} for v in confirmed]

    @property
    def faulty_links(self) -> list[list[int]]:
        """Confirmed faulty links as sorted ``[a, b]`` pairs, ascending."""
        return self._links(Status.CONFIRMED)

    @property
    def masked_links(self) -> list[list[int]]:
        """Links between two GPUs found faulty, as sorted pairs.

        No probe can judge them. Links from a faulty GPU to a healthy one cannot be judged
        either; they are never called faulty and, being all n-1 of them, not listed.
        """
        return self._links(Status.MASKED)

    @property
    def probes_phase1(self) -> int:
        """Phase 1 probes (one per cover probe; re-measurements counted in ``phase1.remeasured``)."""
        return len(self.phase1.records)

    @property
    def probes_phase2(self) -> int:
        """Phase 2 probes (one per record; re-measurements counted in :attr:`remeasured_phase2`)."""
        return len(self.phase2_records)

    @property
    def remeasured_phase2(self) -> int:
        """Phase 2 probes measured a second time (their records hold 3 x repeats latencies)."""
        return sum(len(r.latencies_ms) > self.phase1.repeats for r in self.phase2_records)

    @property
    def replica_degraded(self) -> bool:
        return self.phase1.replica_degraded

    @cached_property
    def unjudged_links(self) -> int | None:
        """Links the sweep left unjudged: in no passing probe, not found faulty, and between
        two GPUs not found faulty. ``None`` for a degraded replica (nothing was localized).

        Links of a faulty GPU cannot be judged (they are masked), so they are not counted.
        Every other link is judged healthy only by a passing probe (Phase 1 or 2) that holds
        both ends; the rest -- links hidden behind a slow GPU or link that the drill-down did
        not re-check (adaptive with ``recheck_explained=False``, or the paper's Algorithm 2),
        links of probes that errored, inconclusive ones -- are counted here. With the default
        adaptive re-check a noise-free sweep leaves none. A Phase 1 of fewer than two measured
        probes (k = n) vouches for nothing: a probe passes by comparison with the others, and
        there are none. Memory: one n x n boolean array (16 MiB at n=4096) and blocks of rows. Computed once
        per object (cached; the cache travels with the pickled result between Dagster steps).
        """
        if self.replica_degraded:
            return None
        n = self.phase1.gpus
        cleared = np.zeros((n, n), dtype=bool)
        p1 = self.phase1.records
        measured = p1.measured
        if int(measured.sum()) >= 2:
            by_size: dict[int, list[np.ndarray]] = defaultdict(list)
            passing = p1.members[measured & ~p1.failed]
            sizes = (passing >= 0).sum(axis=1)  # GPUs per probe: a row ends in -1 padding
            for size in np.unique(sizes).tolist():
                if size >= 2:
                    by_size[size].append(passing[sizes == size, :size])
            rows: dict[int, list[tuple[int, ...]]] = defaultdict(list)
            for r in self.phase2_records:
                if r.outcome == Outcome.PASS and len(r.gpus) >= 2:
                    rows[len(r.gpus)].append(r.gpus)
            for size, listed in rows.items():
                by_size[size].append(np.asarray(listed, dtype=np.int32))
            for size, parts in by_size.items():
                for gpus in parts:
                    for i, j in zip(*np.triu_indices(size, 1)):  # one column pair at a time: O(probes) memory
                        cleared[gpus[:, i], gpus[:, j]] = True
                        cleared[gpus[:, j], gpus[:, i]] = True  # both halves: no n x n transpose copy
        for a, b in self.faulty_links:
            cleared[a, b] = cleared[b, a] = True
        if self.topology is not None:  # a confirmed NIC, NVSwitch or switch masks the paths it carries
            node = np.asarray([self.topology.node(g) for g in range(n)])
            for v in self.verdicts:
                if v.shared is not None and v.status == Status.CONFIRMED:
                    m = np.zeros(n, dtype=bool)
                    m[list(v.shared.members)] = True
                    if v.shared.kind == ComponentKind.NVSWITCH:
                        cleared |= np.outer(m, m)
                    else:
                        cleared |= (m[:, None] | m[None, :]) & (node[:, None] != node[None, :])
        healthy = np.ones(n, dtype=bool)
        healthy[self.faulty_gpus] = False
        # pairs i < j of healthy GPUs not cleared, a block of rows at a time (no n x n copy)
        count, block, cols = 0, 1024, np.arange(n)
        for start in range(0, n, block):
            rows_ = slice(start, min(n, start + block))
            upper = cols[None, :] > cols[rows_, None]
            count += int((~cleared[rows_] & upper & healthy[None, :] & healthy[rows_, None]).sum())
        return count

    def to_dict(self) -> dict[str, Any]:
        """The ``faultsense simulate --json`` contract (plain JSON types)."""
        inconclusive = [
            {**_named(v), **({"reason": v.reason} if v.reason else {})} for v in self.verdicts if v.status == Status.INCONCLUSIVE
        ]
        return {
            "gpus": self.phase1.gpus,
            "probe_size": self.phase1.probe_size,
            "cover_method": self.phase1.cover_method,
            "faulty_gpus": self.faulty_gpus,
            "faulty_links": self.faulty_links,
            "faulty_components": self.faulty_components,
            "masked_links": self.masked_links,
            "inconclusive": inconclusive,
            "probes": {"phase1": self.probes_phase1, "phase2": self.probes_phase2},
            "remeasured": {"phase1": self.phase1.remeasured, "phase2": self.remeasured_phase2},
            "suspect_probes": list(self.phase1.suspect_probes),
            "baseline_ms": self.phase1.baseline_ms,
            "threshold_ms": self.phase1.threshold_ms,
            "replica_degraded": self.replica_degraded,
            "unjudged_links": self.unjudged_links,
            "anchored": self.phase1.anchored,
            "errors": self.phase1.errors + sum(r.outcome == Outcome.ERROR for r in self.phase2_records),
            "verdicts": [
                {
                    "component": v.component,
                    "status": str(v.status),
                    "reason": v.reason,
                    "confidence": v.confidence,
                    "slowdown": v.slowdown,
                    "node": v.node,
                }
                for v in self.verdicts
            ],
        }


def _named(v: Verdict) -> dict[str, Any]:
    """An ``inconclusive`` entry's name: ``{"component": "nic:node3"}``, ``{"gpu": 9}`` or ``{"link": [3, 21]}``."""
    if v.shared is not None:
        return {"component": v.component}
    return {"gpu": v.gpu} if v.peer_gpu is None else {"link": [v.gpu, v.peer_gpu]}
