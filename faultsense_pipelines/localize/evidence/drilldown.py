"""Evidence-weighted drill-down: paired, sequential tests with a confidence on every verdict.

Phase 2 of FaultSense (APSys '26, §4.3) treats a probe as a noise-free binary test: one pass
exonerates, one slow probe blames. Real probe latencies have load drift and bursts shared by
every probe, transient stalls, heavy tails and faults that come and go, so this drill-down
weighs every measurement instead:

* **Paired measurements.** Each Phase 2 test measures a *test* probe and, right beside it in
  time, a *reference* probe of GPUs believed healthy. Its datum is
  ``d = log(latency(test) / latency(reference))``: a load burst or drift lifts both and
  cancels (the reference is the shared time-varying baseline).
* **A robust likelihood.** Under "the test probe holds no fault", ``d`` is Student-t (3 degrees
  of freedom) around 0 with the pair's noise scale, mixed with a broad stall component; under
  "it holds a fault", ``d`` is at least ``effect`` (the log of the smallest slowdown Phase 1
  flags; a one-sided, generalized likelihood). An intermittent GPU (a thermal throttling
  cycle) is slow in a share ``gpu_duty`` of its measurements, so a GPU hypothesis predicts a
  mixture. Each pair's log-likelihood ratio is clipped to ``±clip``: no single measurement can
  blame or clear, and nothing is blamed that fewer than ``min_accusing`` pairs accused.
* **Sequential tests** (Wald's SPRT, 1945). A candidate GPU (Phase 1 evidence for it exceeds
  the evidence against) is tested with fresh healthy padding each pair until its
  log-likelihood ratio crosses ``log(c / (1 - c))`` (confirmed, confidence c) or
  ``-log(c_h / (1 - c_h))`` (healthy), or the pair budget runs out (inconclusive).
* **Hypotheses over a catalog.** Each suspect Phase 1 probe not explained by a confirmed GPU
  is a *unit*: its hypotheses are each of its GPUs, each of its links, and "none" (a false
  alarm). The next test probe is chosen to split the remaining probability mass in half
  (generalized binary search; noisy adaptive group testing), measured paired, and every
  hypothesis' posterior updated; a unit stops at the confidence target, or at its budget with
  the reason. A unit that a confirmed GPU explains is re-checked for a second fault hidden
  behind it (links of its other GPUs), with "none" a priori likely.

The algorithm is pure: it sees a *pair oracle*, never an executor. The shared components of
a topology (NICs, NVSwitches, switches) are more hypotheses of the same kind: a component is
the set of GPU-to-GPU paths it carries, and a test probe holds it when it holds one of them.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import chain
from typing import Any, cast

import numpy as np

from ...replica.topology import Component, ReplicaTopology
from ...replica.vocabulary import ComponentKind, Status
from ..drilldown.common import confidence_text
from .shared import shared_stage

__all__ = [
    "EvidenceFinding",
    "EvidenceModel",
    "EvidenceResult",
    "PairOracle",
    "Phase1Probes",
    "ProbeIndex",
    "detrended_excess",
    "detrended_excess_array",
    "estimate_sigma",
    "evidence_drilldown",
    "measurement_order",
    "phase1_timeline",
    "runs_shared_stage",
    "time_detrended",
    "time_detrended_array",
    "time_detrended_excess",
]

#: ``pair(test_gpus, reference_gpus) -> d = log(latency(test) / latency(reference))``, or
#: ``None`` when either probe could not be measured.
PairOracle = Callable[[tuple[int, ...], tuple[int, ...]], float | None]

_T_DF = 3.0
_T_NORM = math.gamma((_T_DF + 1) / 2) / (math.sqrt(_T_DF * math.pi) * math.gamma(_T_DF / 2))
#: Spread of a stalled pair's d in log space: a stall of up to 4x on either probe.
_STALL_WIDTH = 2.0 * math.log(4.0)


def _t_pdf(z: float) -> float:
    return float(_T_NORM * (1.0 + z * z / _T_DF) ** (-(_T_DF + 1) / 2))


def _t_pdf_array(z: np.ndarray) -> np.ndarray:
    return np.asarray(_T_NORM * (1.0 + z * z / _T_DF) ** (-(_T_DF + 1) / 2))


@dataclass(frozen=True)
class EvidenceModel:
    """The likelihood and the stopping rules of :func:`evidence_drilldown`.

    Attributes:
        sigma: noise scale of one measurement's log-latency (Phase 1 estimate); floored at
            ``min_sigma`` so a noise-free replica keeps a finite likelihood.
        effect: log of the smallest slowdown that is a fault (Phase 1's threshold ratio), > 0.
        repeats: measurements per probe; each probe's latency is their median.
        stall_share: share of pairs hit by a stall or burst edge (the broad component).
        gpu_duty: share of measurements in which a faulty GPU is assumed slow (intermittent).
        confidence: posterior a blame needs.
        clear_confidence: posterior a "healthy" call needs.
        min_accusing: pairs with ``d > effect / 2`` a blame needs.
        clip: bound on one pair's log-likelihood ratio.
        max_pairs: paired tests per candidate GPU or per unit before it is inconclusive.
        min_sigma: floor of ``sigma``.

    Raises:
        ValueError: naming the first field out of range.
    """

    sigma: float
    effect: float
    repeats: int = 1
    stall_share: float = 0.05
    gpu_duty: float = 0.5
    confidence: float = 0.999
    clear_confidence: float = 0.99
    min_accusing: int = 3
    clip: float = 2.75
    max_pairs: int = 24
    min_sigma: float = 0.01

    def __post_init__(self) -> None:
        if not (math.isfinite(self.sigma) and self.sigma >= 0):
            raise ValueError(f"sigma must be a finite number >= 0, got {self.sigma!r}")
        if not (math.isfinite(self.effect) and self.effect > 0):
            raise ValueError(f"effect must be a finite number > 0, got {self.effect!r}")
        if self.repeats < 1 or self.min_accusing < 1 or self.max_pairs < self.min_accusing:
            raise ValueError("repeats and min_accusing must be >= 1 and max_pairs >= min_accusing")
        for name in ("stall_share", "gpu_duty", "confidence", "clear_confidence"):
            if not 0.0 < getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in (0, 1), got {getattr(self, name)!r}")

    @property
    def pair_scale(self) -> float:
        """Scale of ``d``: two independent medians of ``repeats`` measurements (log space)."""
        median_efficiency = 1.0 if self.repeats == 1 else 1.2533 / math.sqrt(self.repeats)
        return math.sqrt(2.0) * max(self.sigma, self.min_sigma) * median_efficiency

    @property
    def blame_llr(self) -> float:
        """Log-likelihood ratio at which a blame reaches :attr:`confidence` (prior odds 1)."""
        return math.log(self.confidence / (1.0 - self.confidence))

    @property
    def clear_llr(self) -> float:
        """Log-likelihood ratio (negated) at which a "healthy" call reaches :attr:`clear_confidence`."""
        return math.log(self.clear_confidence / (1.0 - self.clear_confidence))

    def llr(self, d: float, duty: float = 1.0, scale: float | None = None) -> float:
        """Clipped log-likelihood ratio of "the test probe holds a fault" for one datum ``d``.

        Args:
            d: log latency ratio (test over reference, or a probe over the baseline).
            duty: share of measurements in which the fault is slow (1 = always).
            scale: scale of ``d``; :attr:`pair_scale` when ``None``.

        >>> m = EvidenceModel(sigma=0.02, effect=math.log(1.2))
        >>> round(m.llr(0.0), 2), round(m.llr(math.log(2.0)), 2), round(m.llr(0.0, duty=0.5), 2)
        (-2.75, 2.75, -0.69)
        """
        s = self.pair_scale if scale is None else scale
        u = self.stall_share / _STALL_WIDTH
        p0 = (1.0 - self.stall_share) * _t_pdf(d / s) / s + u
        p_slow = (1.0 - self.stall_share) * _t_pdf(max(0.0, self.effect - d) / s) / s + u
        p1 = duty * p_slow + (1.0 - duty) * p0
        return max(-self.clip, min(self.clip, math.log(p1 / p0)))

    def llr_array(self, d: np.ndarray, duty: float = 1.0, scale: float | None = None) -> np.ndarray:
        """:meth:`llr` of every datum of ``d`` (shape ``(m,)``, log latency ratios) at once;
        shape ``(m,)``, equal to :meth:`llr` element by element up to rounding.

        >>> m = EvidenceModel(sigma=0.02, effect=math.log(1.2))
        >>> [round(float(v), 2) for v in m.llr_array(np.array([0.0, math.log(2.0)]))]
        [-2.75, 2.75]
        """
        s = self.pair_scale if scale is None else scale
        u = self.stall_share / _STALL_WIDTH
        d = np.asarray(d, dtype=float)
        p0 = (1.0 - self.stall_share) * _t_pdf_array(d / s) / s + u
        p_slow = (1.0 - self.stall_share) * _t_pdf_array(np.maximum(0.0, self.effect - d) / s) / s + u
        p1 = duty * p_slow + (1.0 - duty) * p0
        return np.clip(np.log(p1 / p0), -self.clip, self.clip)


@dataclass(frozen=True)
class EvidenceFinding:
    """One component judged by :func:`evidence_drilldown`.

    Attributes:
        kind: ``"gpu"``, ``"link"`` or a shared kind (``"nic"``, ``"nvswitch"``, ``"switch"``).
        gpu: the GPU, or the link's smaller id; ``None`` for a shared component.
        peer_gpu: the link's larger id; ``None`` for a GPU.
        status: ``"confirmed"``, ``"masked"`` (a link between two confirmed GPUs) or ``"inconclusive"``.
        confidence: posterior probability that the component is faulty (``None`` for masked).
        slowdown: median latency ratio of the pairs that accused it (``None`` if none did).
        tests_used: paired tests (two probes each) spent on it.
        reason: for ``"inconclusive"``, why the evidence did not settle it.
        shared: the shared component (``None`` for a GPU or a link).
        evidence: the test probes (GPU ids) of the pairs that accused it, in order.
    """

    kind: ComponentKind
    gpu: int | None
    peer_gpu: int | None
    status: Status
    confidence: float | None
    slowdown: float | None
    tests_used: int
    reason: str | None = None
    shared: Component | None = None
    evidence: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class EvidenceResult:
    """Findings and the count of paired tests; every pair is two Phase 2 probes."""

    findings: tuple[EvidenceFinding, ...]
    pairs: int
    cleared_units: int = 0


_Hyp = tuple[int, ...]  # (g,) a GPU, (a, b) a link, () "none"


class Phase1Probes(Sequence[tuple[tuple[int, ...], "float | None"]]):
    """Phase 1 probes with their data, ``(GPUs, x)`` each, held as two arrays: what
    :func:`evidence_drilldown` reads, without a Python tuple per probe.

    Args:
        members: GPU ids of each probe, distinct within a row; shape ``(P, k)``, integer.
        x: per probe, ``log(latency / baseline)``, NaN where it could not be measured (read
            as ``None``); shape ``(P,)``, float.

    Raises:
        ValueError: shapes that do not match.
    """

    __slots__ = ("members", "x")

    def __init__(self, members: np.ndarray, x: np.ndarray) -> None:
        if members.ndim != 2 or x.shape != (len(members),):
            raise ValueError(f"members must be (P, k) and x (P,), got {members.shape} and {x.shape}")
        self.members = members
        self.x = np.asarray(x, dtype=np.float64)

    def __len__(self) -> int:
        return len(self.members)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        j = range(len(self))[i]
        v = float(self.x[j])
        return tuple(self.members[j].tolist()), (None if math.isnan(v) else v)

    def __iter__(self) -> Iterator[tuple[tuple[int, ...], float | None]]:
        block = 1 << 16  # rows converted per batch
        for start in range(0, len(self), block):
            for row, v in zip(self.members[start : start + block].tolist(), self.x[start : start + block].tolist(), strict=True):
                yield tuple(row), (None if math.isnan(v) else v)

    def measured(self) -> Phase1Probes:
        """The probes with a datum (all of them: ``self``), in order."""
        keep = ~np.isnan(self.x)
        return self if keep.all() else Phase1Probes(self.members[keep], self.x[keep])


@dataclass(frozen=True)
class ProbeIndex:
    """The measured Phase 1 probes as arrays: which GPUs each holds and which probes hold
    each GPU (compressed sparse rows), so per-GPU sums are one ``bincount`` and the probes
    holding a link one intersection of two sorted arrays.

    Attributes:
        n: GPUs in the replica.
        flat: every probe's GPUs, probe after probe; shape ``(m,)``, ``m`` = summed probe sizes.
        owner: beside each entry of ``flat``, its probe's index; shape ``(m,)``, ascending.
        x: per probe, its datum (log latency over the baseline); shape ``(P,)``.
        by_gpu: probe indices grouped by GPU, ascending within a GPU; shape ``(m,)``.
        starts: GPU ``g``'s probes are ``by_gpu[starts[g]:starts[g + 1]]``; shape ``(n + 1,)``.
    """

    n: int
    flat: np.ndarray
    owner: np.ndarray
    x: np.ndarray
    by_gpu: np.ndarray
    starts: np.ndarray

    @classmethod
    def build(cls, n: int, probes: Sequence[tuple[Sequence[int], float]] | Phase1Probes) -> ProbeIndex:
        """Index ``probes`` (``(GPUs, datum)`` each) of a replica of ``n`` GPUs.

        Raises:
            ValueError: a GPU id outside ``0..n-1`` (naming the first probe holding one).
        """
        if isinstance(probes, Phase1Probes):  # the arrays themselves: no Python object per probe
            return cls._build_arrays(n, probes.members, probes.x)
        sizes = np.fromiter((len(p) for p, _ in probes), dtype=np.int64, count=len(probes))
        flat = np.fromiter(chain.from_iterable(p for p, _ in probes), dtype=np.int64, count=int(sizes.sum()))
        owner = np.repeat(np.arange(len(probes), dtype=np.int64), sizes)
        outside = np.flatnonzero((flat < 0) | (flat >= n))
        if len(outside):
            raise ValueError(f"probe {list(probes[int(owner[outside[0]])][0])} names a GPU outside 0..{n - 1}")
        order = np.argsort(flat, kind="stable")  # stable: a GPU's probes stay ascending
        starts = np.searchsorted(flat[order], np.arange(n + 1))
        x = np.fromiter((v for _, v in probes), dtype=float, count=len(probes))
        return cls(n, flat, owner, x, owner[order], starts)

    @classmethod
    def _build_arrays(cls, n: int, members: np.ndarray, x: np.ndarray) -> ProbeIndex:
        """:meth:`build` of ``(P, k)`` GPU ids and ``(P,)`` data; int32 indices (P k < 2^31)."""
        p, k = members.shape
        flat = np.ascontiguousarray(members, dtype=np.int32).ravel()
        bad = np.flatnonzero((flat < 0) | (flat >= n))
        if len(bad):
            raise ValueError(f"probe {members[int(bad[0]) // k].tolist()} names a GPU outside 0..{n - 1}")
        owner = np.repeat(np.arange(p, dtype=np.int32), k)
        order = np.argsort(flat, kind="stable")  # stable: a GPU's probes stay ascending
        starts = np.searchsorted(flat[order], np.arange(n + 1))
        return cls(n, flat, owner, np.asarray(x, dtype=float), owner[order], starts)

    def holding(self, gpus: Sequence[int]) -> np.ndarray:
        """Indices of the probes holding every GPU of ``gpus`` (one or more), ascending."""
        out = self.by_gpu[self.starts[gpus[0]] : self.starts[gpus[0] + 1]]
        for g in gpus[1:]:
            out = np.intersect1d(out, self.by_gpu[self.starts[g] : self.starts[g + 1]], assume_unique=True)
        return out

    def summed(self, m: EvidenceModel, bad: np.ndarray | None = None) -> np.ndarray:
        """Per GPU (shape ``(n,)``), the summed intermittent-GPU log-likelihood ratio
        (:meth:`EvidenceModel.llr`, duty ``gpu_duty``, one probe's scale) of the probes
        holding it, leaving out those marked ``bad`` (shape ``(P,)``)."""
        llr = m.llr_array(self.x, duty=m.gpu_duty, scale=m.pair_scale / math.sqrt(2.0))
        if bad is not None:
            llr = np.where(bad, 0.0, llr)
        return np.bincount(self.flat, weights=llr[self.owner], minlength=self.n)


@dataclass
class _State:
    n: int
    k: int
    model: EvidenceModel
    pair: PairOracle
    rng: random.Random
    gpu_evidence: list[float]
    suspect_pairs: set[tuple[int, int]]
    index: ProbeIndex  # the measured Phase 1 probes
    confirmed_gpus: set[int] = field(default_factory=set)
    confirmed_links: set[tuple[int, int]] = field(default_factory=set)
    healthy_gpus: set[int] = field(default_factory=set)
    gpu_llr: dict[int, float] = field(default_factory=dict)  # paired-test evidence of the GPU stage
    inconclusive_gpus: set[int] = field(default_factory=set)
    # per GPU the GPU stage left open, the known faults (:meth:`known_key`) and noise scale when it did
    opened_at: dict[int, object] = field(default_factory=dict)
    findings: list[EvidenceFinding] = field(default_factory=list)
    pairs: int = 0
    topology: ReplicaTopology | None = None
    confirmed_shared: list[Component] = field(default_factory=list)
    # GPUs under a confirmed or unresolved shared component: masked (never blamed alone), never pads
    shared_gpus: set[int] = field(default_factory=set)
    failure: str = ""  # why the last paired test could not be measured
    pair_ds: list[float] = field(default_factory=list)  # every measured pair's d, in order
    deferred: list[tuple[int, ...]] = field(default_factory=list)  # units an open GPU closed
    phase1_sigma: float = field(init=False)  # the model's noise scale as given (Phase 1's; :func:`_recalibrate`)
    # the suspect Phase 1 probes; their pairs are :attr:`suspect_pairs` (empty: every suspect
    # pair stays open, :meth:`open_pairs`)
    suspect_probes: tuple[frozenset[int], ...] = ()
    # the suspect pairs no known fault explains, their adjacency, and the known faults they were built for
    _open: tuple[object, set[tuple[int, int]], dict[int, set[int]]] | None = None
    # the healthiest-first padding order and the key of the state it was sorted for (:meth:`pool`)
    _pool_order: tuple[object, list[int]] | None = None
    # per GPU, its single-GPU Phase 1 evidence and the known faults it was summed for (:func:`_phase1_evidence`)
    _phase1_sums: tuple[object, np.ndarray] | None = None

    def __post_init__(self) -> None:
        self.phase1_sigma = self.model.sigma

    def known_key(self) -> tuple[frozenset[int], frozenset[tuple[int, int]], int]:
        """What :meth:`known_bad` depends on: the confirmed GPUs, links and shared components."""
        return frozenset(self.confirmed_gpus), frozenset(self.confirmed_links), len(self.confirmed_shared)

    def known_bad(self, gpus: set[int] | frozenset[int]) -> bool:
        """True when a probe over ``gpus`` holds a fault already found (it is slow regardless)."""
        if bool(gpus & self.confirmed_gpus) or any(a in gpus and b in gpus for a, b in self.confirmed_links):
            return True
        t = self.topology
        return t is not None and any(t.holds(c, gpus) for c in self.confirmed_shared)

    def pool(self, exclude: set[int]) -> list[int]:
        """GPUs to pad with, healthiest first: exonerated, then by Phase 1 evidence.

        The order is sorted once per state of the evidence (the GPUs left out, the paired
        evidence, the Phase 1 evidence) and filtered per call: O(n) instead of O(n log n).
        """
        bad = self.confirmed_gpus | self.inconclusive_gpus | self.shared_gpus
        key = (frozenset(bad), frozenset(self.gpu_llr.items()), id(self.gpu_evidence))
        if self._pool_order is None or self._pool_order[0] != key:
            ok = [g for g in range(self.n) if g not in bad]
            self._pool_order = (key, sorted(ok, key=lambda g: (self.gpu_evidence[g] + self.gpu_llr.get(g, 0.0), g)))
        return [g for g in self._pool_order[1] if g not in exclude]

    def suspect_link(self, a: int, b: int) -> bool:
        """Whether GPUs ``a`` and ``b`` share a suspect Phase 1 probe."""
        return (min(a, b), max(a, b)) in self.suspect_pairs

    def open_pairs(self) -> tuple[set[tuple[int, int]], dict[int, set[int]]]:
        """The suspect pairs still unexplained, ``(a, b)`` with ``a < b``, and their adjacency
        (GPU -> the GPUs it shares such a pair with).

        A pair is open while some suspect Phase 1 probe holding it holds no fault found so far
        (:meth:`known_bad`): a probe a confirmed fault explains no longer hints at a slow link
        among its other GPUs, so they may pad and join references together again. Without
        :attr:`suspect_probes` every suspect pair stays open. Rebuilt when the known faults
        change (:meth:`known_key`).
        """
        key = self.known_key()
        if self._open is None or self._open[0] != key:
            if self.suspect_probes:
                pairs = {(a, b) for p in self.suspect_probes if not self.known_bad(p) for a in p for b in p if a < b}
            else:
                pairs = set(self.suspect_pairs)
            adjacency: dict[int, set[int]] = {}
            for a, b in pairs:
                adjacency.setdefault(a, set()).add(b)
                adjacency.setdefault(b, set()).add(a)
            self._open = (key, pairs, adjacency)
        return self._open[1], self._open[2]

    def _kept_apart(self, a: int, b: int) -> bool:
        """Whether ``a`` and ``b`` must not pad or join a reference together: an open suspect
        pair (:meth:`open_pairs`) or a confirmed slow link."""
        return (min(a, b), max(a, b)) in self.open_pairs()[0] or self._closes(a, b)

    def measure(self, test_set: set[int], avoid: frozenset[int] = frozenset()) -> tuple[frozenset[int], float] | None:
        """One paired test: ``test_set`` padded to k with healthy GPUs, against a healthy reference.

        Pads come first from GPUs that share no open suspect pair with the tested GPUs
        (:meth:`open_pairs`: a pair held by a suspect Phase 1 probe that no known fault
        explains; a slow link to the padding would accuse the tested GPU), then, where too few do (a slow GPU's probes hold all its links; tiny replicas), from the
        others at random; never from ``avoid`` or next to a known slow link. Pads and
        references rotate among the healthiest GPUs, so an unknown fault among them cannot
        accuse the same component every time. Returns ``None`` when too few GPUs remain or the
        oracle could not measure.
        """
        size = min(self.k, self.n)
        pool = self.pool(test_set)
        closing = self._closing(test_set)
        usable = [g for g in pool if g not in avoid and g not in closing]
        # GPUs without a suspect link to the test set first, then the healthiest (a stable partition)
        linked = self.linked(test_set)
        usable = [g for g in usable if g not in linked] + [g for g in usable if g in linked]
        need = size - len(test_set)
        if len(usable) < need:
            self.failure = f"too few healthy GPUs to pad {sorted(test_set)} to {size}"
            return None
        pads = self._spread(usable[: max(2 * size, need + 4)], usable, need)
        test = tuple(sorted(test_set | set(pads)))
        d = self._against_reference(test, pool)
        return None if d is None else (frozenset(test), d)

    def _against_reference(self, probe: tuple[int, ...], pool: Sequence[int]) -> float | None:
        """``d`` of ``probe`` against a reference drawn from ``pool``; ``None`` (and
        :attr:`failure` says why) when no reference fits or the oracle could not measure."""
        reference = self._reference(len(probe), pool)
        if reference is None:
            self.failure = f"too few healthy GPUs for a reference probe of {len(probe)}"
            return None
        self.pairs += 1
        d = self.pair(probe, reference)
        if d is None:
            self.failure = f"probe {list(probe)} or its reference {list(reference)} could not be measured"
        else:
            self.pair_ds.append(d)
        return d

    def control(self, test: frozenset[int], g: int, avoid: frozenset[int] = frozenset()) -> tuple[bool, float | None]:
        """The *control* of an accusing test of ``g``: the same pads with ``g`` swapped for a
        healthy GPU, against a fresh reference.

        A slow ``g`` slows its test, not the control; a fault the pads carry between them (a
        NIC, a switch or a slow GPU among them that the search has not found) slows both.

        Returns:
            ``(formed, d)``: ``formed`` is False where the replica has too few healthy GPUs
            left for a swap and a disjoint reference (tiny replicas: n = 8, k = 4); ``d`` is
            ``None`` when the control was formed but could not be measured.
        """
        pads = test - {g}
        closing = self._closing(set(pads))
        options = [q for q in self.pool(set(test)) if q not in avoid and q not in closing]
        if not options:
            return False, None
        swap = self.rng.choice(options[: max(4, len(options) // 4)])
        probe = tuple(sorted(pads | {swap}))
        pool = self.pool(set(probe) | {g})
        if len(pool) < len(probe):
            return False, None
        return True, self._against_reference(probe, pool)

    def _spread(self, preferred: Sequence[int], pool: Sequence[int], count: int) -> list[int]:
        """``count`` GPUs drawn at random from ``preferred`` (then the rest of ``pool``) with no
        open suspect pair among them (:meth:`open_pairs`); where too few exist (small replicas,
        where every GPU shares an unexplained suspect probe with the others), the rest from
        ``preferred``, each opening the fewest such pairs with those chosen. Never two GPUs of
        a confirmed slow link."""
        order = list(preferred)
        self.rng.shuffle(order)
        chosen: list[int] = []
        first = set(order)
        for g in chain(order, (g for g in pool if g not in first)):
            if len(chosen) == count:
                break
            if not any(self._kept_apart(g, c) for c in chosen):
                chosen.append(g)
        if len(chosen) < count:
            # too few: fill greedily with the GPUs that open the fewest suspect pairs with the
            # chosen (an unknown slow link among them would slow every probe they join), in
            # random order among equals; never closing a confirmed slow link
            left = [g for g in order if g not in chosen]
            self.rng.shuffle(left)
            adjacency = self.open_pairs()[1]
            while len(chosen) < count:
                options = [g for g in left if g not in chosen and not any(self._closes(g, c) for c in chosen)]
                if not options:
                    break
                chosen.append(min(options, key=lambda g: len(adjacency.get(g, set()).intersection(chosen))))
        return chosen

    def _closes(self, a: int, b: int) -> bool:
        """Whether ``a`` and ``b`` are the two GPUs of a confirmed slow link."""
        return (a, b) in self.confirmed_links or (b, a) in self.confirmed_links

    def _reference(self, size: int, pool: Sequence[int]) -> tuple[int, ...] | None:
        """``size`` GPUs with no open suspect pair among them, drawn from the healthiest of ``pool``."""
        chosen = self._spread(pool[: max(3 * size, size + 6)], pool, size)
        return tuple(sorted(chosen)) if len(chosen) == size else None

    def linked(self, gpus: set[int] | frozenset[int]) -> set[int]:
        """The GPUs ``g`` that share an open suspect pair (:meth:`open_pairs`) with some GPU of
        ``gpus``: one set union over the pairs' adjacency instead of a pair look-up per GPU."""
        adjacency = self.open_pairs()[1]
        return set().union(*(adjacency.get(s, ()) for s in gpus))

    def _closing(self, test_set: set[int]) -> set[int]:
        """The GPUs that would close a confirmed slow link with one of ``test_set``."""
        return {b for a, b in self.confirmed_links if a in test_set} | {a for a, b in self.confirmed_links if b in test_set}


def _shared(
    state: _State,
    probes: Sequence[frozenset[int]],
    timeline: Sequence[tuple[int, float]],
    measured: Sequence[tuple[Sequence[int], float]],
    suspects: Sequence[int],
) -> None:
    """The shared stage; then each GPU's Phase 1 evidence is recounted without the probes a
    confirmed shared component explains."""
    m, t = state.model, state.topology
    assert t is not None
    out = shared_stage(
        t,
        state.k,
        probes,
        timeline,
        state.gpu_evidence,
        state.pair,
        lambda d, duty: m.llr(d, duty=duty),
        effect=m.effect,
        confidence=m.confidence,
        clear_confidence=m.clear_confidence,
        min_accusing=m.min_accusing,
        max_pairs=m.max_pairs,
        duty=m.gpu_duty,
        rng=state.rng,
        suspects=suspects,
    )
    state.pairs += out.pairs
    state.confirmed_shared = list(out.confirmed)
    state.shared_gpus = {g for c in out.confirmed for g in c.members} | out.unresolved_gpus
    for f in out.findings:
        state.findings.append(
            EvidenceFinding(
                f.component.kind, None, None, f.status, f.confidence, f.slowdown, f.tests_used, f.reason, f.component, f.evidence
            )
        )
    if out.confirmed:
        explained = np.fromiter((state.known_bad(frozenset(p)) for p, _ in measured), dtype=bool, count=len(measured))
        state.gpu_evidence = _gpu_evidence(m, state.index, explained)


def _gpu_evidence(model: EvidenceModel, index: ProbeIndex, explained: np.ndarray | None = None) -> list[float]:
    """Per GPU, the summed Phase 1 log-likelihood ratio (intermittent-GPU mixture) of the
    measured probes holding it, less those ``explained`` (shape ``(P,)``) by a known fault."""
    return [float(v) for v in index.summed(model, explained)]


def _accusing(ds: Sequence[float], effect: float) -> list[float]:
    return [d for d in ds if d > effect / 2]


#: A blame needs its accusing pairs' median ``d`` at :data:`SHOWN` x ``effect`` or more: a
#: component steadily slower than the midpoint but short of the smallest slowdown that is a
#: fault (a busier rank 0 on a loaded host) piles up positive log-likelihood ratios without
#: showing a fault's size.
SHOWN = 0.75


def _shows_effect(accused: Sequence[float], effect: float) -> bool:
    """Whether the accusing pairs' median ``d`` reaches :data:`SHOWN` of ``effect``."""
    return bool(accused) and statistics.median(accused) >= SHOWN * effect


def _slowdown(ds: Sequence[float], effect: float) -> float | None:
    accused = _accusing(ds, effect)
    return math.exp(statistics.median(accused)) if accused else None


#: Paired tests needed before their own spread can overrule Phase 1's noise scale
#: (:func:`_recalibrate`), and how many times smaller than Phase 1's that spread must be.
CALIBRATION_PAIRS, CALIBRATION_RATIO = 12, 4.0
#: The 20% quantile of ``|T|`` for Student-t with :data:`_T_DF` degrees of freedom (t_3's
#: 60th percentile): a pair's scale is the 20% quantile of ``|d|`` over it.
_T_Q20 = 0.2767


def _deferred_units(state: _State, phase1: Sequence[tuple[Sequence[int], float]]) -> int:
    """Search the units that a GPU left open leaning faulty closed, once faults the unit
    stage found let that GPU be tested again; the count of them found to be false alarms.

    A GPU tested while other faults were unknown can stay open leaning faulty (its controls
    were slow because its pads held them, and set aside, the pads ran out); it then closes its
    units, so a slow link in one of them is never searched. Once the unit stage confirms
    those other faults, :func:`_retest_open_gpus` tests the GPU again, and each unit it no
    longer closes is searched (up to :data:`RETEST_ROUNDS` passes).
    """
    cleared = 0
    for _ in range(RETEST_ROUNDS):
        if not state.deferred:
            break
        _retest_open_gpus(state, phase1)
        units, state.deferred = list(dict.fromkeys(state.deferred)), []
        closed = len(units)
        for probe in units:
            cleared += _unit(state, probe, phase1)
        if len(state.deferred) >= closed:  # no unit was opened: nothing more to learn
            break
    return cleared


def _recalibrate(state: _State) -> None:
    """Set the model's noise scale from the paired tests when they overrule Phase 1's.

    Phase 1 estimates the noise from the spread of its probes around a moving baseline. Where
    most probes hold a fault (dense faults in a small replica), that baseline moves between
    slow and healthy probes, and the spread it reports is the faults', not the noise's (0.32
    in a noise-free replica of 25 GPUs with four slow ones). Every pair measured so far
    bounds the noise directly: its ``d`` is zero plus noise unless a fault sits in its test
    or its reference, so the 20% quantile of ``|d|`` estimates the pair scale even with most
    pairs contaminated (as long as a fifth are clean), and contamination only raises it.
    After :data:`CALIBRATION_PAIRS` pairs, a scale :data:`CALIBRATION_RATIO` times below
    Phase 1's replaces it; otherwise Phase 1's stays (so production-like noise, where the two
    agree, keeps it). Called between candidates and units: one test is weighed with one model.
    """
    if len(state.pair_ds) < CALIBRATION_PAIRS:
        return
    m = state.model
    per_sigma = m.pair_scale / max(m.sigma, m.min_sigma)  # pair scale per unit of sigma
    sigma = float(np.quantile(np.abs(state.pair_ds), 0.2)) / _T_Q20 / per_sigma
    # compared as the likelihood sees them: neither below the floor ``min_sigma``
    overruled = max(sigma, m.min_sigma) * CALIBRATION_RATIO < max(state.phase1_sigma, m.min_sigma)
    chosen = sigma if overruled else state.phase1_sigma
    if chosen != m.sigma:
        state.model = replace(m, sigma=chosen)


def _gpu_stage(state: _State, candidates: Sequence[int]) -> None:
    """Sequential paired test of each candidate GPU (SPRT with a mixture alternative)."""
    for g in candidates:
        if g in state.confirmed_gpus or g in state.healthy_gpus:
            continue
        _recalibrate(state)
        m = state.model
        llr, errors, controls = 0.0, 0, 0
        ds: list[float] = []  # the pairs' d, of the tests without an avoided pad
        tests: list[tuple[frozenset[int], float]] = []
        avoid: set[int] = set()  # pads no further test of g holds
        explained: set[int] = set()  # pads whose pairs a slow link (g, pad) explains better
        while True:
            test = state.measure({g}, frozenset(avoid))
            if test is None:
                errors += 1
                if errors >= 3:
                    # the padding ran out: first let slow links to pads explain what they can
                    judged = [t for t in tests if not t[0] & explained]
                    widened = _rivals_explain(m, g, judged, tests, explained, partial(state.suspect_link, g)) if llr > 0 else None
                    if widened is not None:
                        explained, llr = widened
                        ds = [d for gpus, d in tests if not gpus & explained]
                    if llr <= -m.clear_llr:
                        state.healthy_gpus.add(g)
                        state.gpu_llr[g] = llr
                    else:
                        _open_gpu(state, g, llr, _slowdown(ds, m.effect), len(tests) + errors, f"probes failed: {state.failure}")
                    break
                continue
            if test[1] > m.effect / 2 and len(test[0]) > 1:
                # an accusing test counts once its control (the same pads, g swapped for a
                # healthy GPU) is not slow too: otherwise the pads carry the fault between them
                formed, control = state.control(test[0], g, frozenset(avoid))
                controls += formed
                if formed and (control is None or control > m.effect / 2):
                    avoid |= test[0] - {g}
                    errors += control is None
                    if errors >= 3 or len(tests) + controls >= 2 * m.max_pairs:
                        reason = (
                            f"probes failed: {state.failure}"
                            if errors >= 3
                            else f"its pads' controls were slow too in {controls} paired tests"
                        )
                        _open_gpu(state, g, llr, _slowdown(ds, m.effect), len(tests) + controls, reason)
                        break
                    continue
            tests.append(test)
            # pairs padded with a pad that explains the accusations (a slow link (g, pad) would
            # accuse g in each of them) tell "g slow" from "link (g, pad) slow" not at all
            clean = [t for t in tests if not t[0] & explained]
            ds = [d for _, d in clean]
            llr = sum(m.llr(d, duty=m.gpu_duty) for d in ds)
            if llr >= m.blame_llr:
                shared_pads, link_pads = _shared_pads(m, g, clean)
                explained |= link_pads
                avoid |= shared_pads
                if shared_pads:  # measure without them before blaming g
                    continue
                pad = _pad_carries(m, g, clean)
                if pad is not None:  # most of the accusation rides on one pad: measure without it
                    avoid.add(pad)
                    continue
                two = _two_pads_explain(m, g, clean, partial(state.suspect_link, g))
                if two:  # slow links to two pads explain the accusations: their pairs stop counting
                    explained |= set(two)
                    continue
            accused = _accusing(ds, m.effect)
            if llr >= m.blame_llr and len(accused) >= m.min_accusing and _shows_effect(accused, m.effect):
                state.confirmed_gpus.add(g)
                conf = _logistic(llr)
                accusing = tuple(tuple(sorted(gpus)) for gpus, d in clean if d > m.effect / 2)
                state.findings.append(
                    EvidenceFinding(
                        ComponentKind.GPU,
                        g,
                        None,
                        Status.CONFIRMED,
                        conf,
                        _slowdown(ds, m.effect),
                        len(tests) + controls,
                        evidence=accusing,
                    )
                )
                break
            if llr <= -m.clear_llr:
                state.healthy_gpus.add(g)
                state.gpu_llr[g] = llr
                break
            if len(tests) >= m.max_pairs and not (llr >= m.blame_llr / 2 and len(tests) < 2 * m.max_pairs):
                # halfway to a blame at the budget (an intermittent GPU slow in a quarter of its
                # tests): measure on, up to twice the budget; a sequential test's error bounds
                # hold for any horizon, so the extension adds no false blames beyond them
                # slow links to one or two pads explain the accusations at least as well as an
                # intermittent g (a far end the padding kept drawing): their pairs stop
                # counting, and the rest judge g (the unit stage then weighs the links)
                widened = _rivals_explain(m, g, clean, tests, explained, partial(state.suspect_link, g)) if llr > 0 else None
                if widened is not None:
                    explained, llr = widened
                    ds = [d for gpus, d in tests if not gpus & explained]
                    if llr <= -m.clear_llr:
                        state.healthy_gpus.add(g)
                        state.gpu_llr[g] = llr
                        break
                    accused = _accusing(ds, m.effect)
                seen = _slowdown(ds, m.effect)
                reason = (
                    f"slow {seen:.2f}x in {len(accused)} of {len(tests)} paired tests, short of the "
                    f"{math.exp(m.effect):.2f}x a fault needs"
                    if llr >= m.blame_llr and seen is not None and not _shows_effect(accused, m.effect)
                    else f"{len(tests)} paired tests left the evidence at confidence {confidence_text(_logistic(llr))}"
                )
                _open_gpu(state, g, llr, seen, len(tests), reason)
                break


def _rivals_explain(
    m: EvidenceModel,
    g: int,
    judged: Sequence[tuple[frozenset[int], float]],
    tests: Sequence[tuple[frozenset[int], float]],
    explained: set[int],
    linked: Callable[[int], bool],
) -> tuple[set[int], float] | None:
    """The pads ``explained`` widened by the :func:`_link_rival` of ``g`` over the tests
    ``judged`` (those the GPU's evidence was summed over), and ``g``'s log-likelihood ratio
    over the ``tests`` holding none of the widened set; ``None`` where no new rival scores as
    well as ``g``."""
    rival = set(_link_rival(m, g, judged, linked)) - explained
    if not rival:
        return None
    widened = explained | rival
    return widened, sum(m.llr(d, duty=m.gpu_duty) for gpus, d in tests if not gpus & widened)


def _logistic(llr: float) -> float:
    """Posterior of a hypothesis at prior odds 1 from its log-likelihood ratio."""
    return 1.0 / (1.0 + math.exp(-llr))


def _leave_open(state: _State, h: _Hyp, conf: float, seen: float | None, used: int, reason: str) -> None:
    """Record GPU or link hypothesis ``h`` as ``inconclusive``: its posterior ``conf``, the
    accusing pairs' slowdown ``seen``, the paired tests ``used`` and why it stays open. A
    component two units leave open gets one verdict: the one at the higher confidence."""
    kind = ComponentKind.GPU if len(h) == 1 else ComponentKind.LINK
    peer = None if len(h) == 1 else h[1]
    finding = EvidenceFinding(kind, h[0], peer, Status.INCONCLUSIVE, conf, seen, used, reason)
    for i, f in enumerate(state.findings):
        if (f.kind, f.gpu, f.peer_gpu, f.status) == (kind, h[0], peer, Status.INCONCLUSIVE):
            if conf > (f.confidence or 0.0):
                state.findings[i] = finding
            return
    state.findings.append(finding)


def _open_gpu(state: _State, g: int, llr: float, seen: float | None, used: int, reason: str) -> None:
    """End the GPU stage's test of ``g`` unsettled: it keeps its evidence ``llr`` (its units
    read it) and is left :func:`_leave_open` at the posterior that evidence gives."""
    state.inconclusive_gpus.add(g)
    state.gpu_llr[g] = llr
    state.opened_at[g] = (state.known_key(), state.model.sigma)
    _leave_open(state, (g,), _logistic(llr), seen, used, reason)


#: Passes of :func:`_retest_open_gpus` at most (each needs a fault found in the one before).
RETEST_ROUNDS = 3


def _retest_open_gpus(state: _State, phase1: Sequence[tuple[Sequence[int], float]]) -> None:
    """Test again each GPU the GPU stage left open while faults found later were unknown.

    Where faults are dense (n = 25, k = 8, four of them), a GPU tested early is padded and
    referenced with GPUs that are faulty but not yet found: its pairs say little, it stays
    open, and every GPU left open leaves the padding pool, which starves the GPUs after it.
    Once a later test confirms a fault, the pool no longer holds it; so the GPUs left open
    before that are tested afresh (their earlier pairs are dropped: a fault now known may
    sit in their pads or references), strongest Phase 1 evidence (less the probes known
    faults explain) first. A pass that finds no new fault ends the retests.
    """
    for _ in range(RETEST_ROUNDS):
        _recalibrate(state)
        now = (state.known_key(), state.model.sigma)
        retest = [g for g, seen in state.opened_at.items() if g in state.inconclusive_gpus and seen != now]
        if not retest:
            return
        for g in retest:
            state.inconclusive_gpus.discard(g)
            state.gpu_llr.pop(g, None)
            del state.opened_at[g]
        dropped = set(retest)
        state.findings = [
            f
            for f in state.findings
            if not (f.kind == ComponentKind.GPU and f.status == Status.INCONCLUSIVE and f.gpu in dropped)
        ]
        order = sorted(retest, key=lambda g: (-_phase1_evidence(state, (g,), phase1), g))
        _gpu_stage(state, order)


def _pad_carries(m: EvidenceModel, g: int, tests: Sequence[tuple[frozenset[int], float]]) -> int | None:
    """A pad without whose pairs too little evidence against ``g`` is left (below half the
    blame threshold, or fewer than ``min_accusing`` accusing pairs), or ``None``:
    leave-one-pad-out. Noise can add an accusing pair without the pad, so a pad need not sit
    in every accusing pair (:func:`_shared_pads`) to carry the accusation."""
    pads = {p for gpus, d in tests if d > m.effect / 2 for p in gpus if p != g}
    for p in sorted(pads):
        rest = [d for gpus, d in tests if p not in gpus]
        if sum(m.llr(d, duty=m.gpu_duty) for d in rest) < m.blame_llr / 2 or len(_accusing(rest, m.effect)) < m.min_accusing:
            return p
    return None


def _link_rival(
    m: EvidenceModel, g: int, tests: Sequence[tuple[frozenset[int], float]], linked: Callable[[int], bool]
) -> tuple[int, ...]:
    """The one or two GPUs ``p, q`` (both ``linked`` to ``g``) whose slow links ``(g, p)``,
    ``(g, q)`` explain the paired ``tests`` of ``g`` at least as well as a slow ``g``; ``()``
    if none do.

    Each hypothesis scores the tests it predicts slow (log-likelihood ratio against "no
    fault", :meth:`EvidenceModel.llr`): a slow ``g`` predicts every test of ``g`` slow in a
    share ``gpu_duty`` (an intermittent GPU), the links predict slow exactly the tests holding
    ``g`` and ``p`` or ``q``. Where two slow links meet at ``g`` (a hub) and the padding keeps
    drawing their far ends, every accusation holds one of them and the intermittent-GPU
    hypothesis, which forgives the few fast tests without them, would win; the links win as
    soon as the scores are compared. A blame of ``g`` therefore waits until ``g`` beats every
    such pair: a test without them that accuses (a slow ``g`` slows it too).

    Args:
        m: the likelihood.
        g: the GPU hypothesis.
        tests: ``(GPUs, d)`` of the unit's paired tests holding ``g``.
        linked: whether a GPU shares a suspect Phase 1 probe with ``g`` (a slow link to it
            would have made such a probe slow).

    Returns:
        ``(p,)`` or ``(p, q)`` with ``p < q``, the best-scoring rival; ``()`` when ``g`` scores
        higher than every one.

    Hand-worked: three accusing tests, each holding 5 or 7, and one fast test holding
    neither: the GPU scores ``3 x 2.75 - 0.69``, the links ``3 x 2.75``:

    >>> m = EvidenceModel(sigma=0.02, effect=math.log(1.2))
    >>> tests = [(frozenset({1, 5}), 0.5), (frozenset({1, 7}), 0.5), (frozenset({1, 5, 7}), 0.5), (frozenset({1, 2}), 0.0)]
    >>> _link_rival(m, 1, tests, lambda p: True)
    (5, 7)
    >>> _link_rival(m, 1, tests + [(frozenset({1, 3}), 0.5)], lambda p: True)
    ()
    """
    if not tests:
        return ()
    slow = [m.llr(d) for _, d in tests]  # a link: slow in every test holding it
    gpu_score = sum(m.llr(d, duty=m.gpu_duty) for _, d in tests)
    near = sorted({p for gpus, d in tests if d > m.effect / 2 for p in gpus if p != g and linked(p)})
    best: tuple[float, tuple[int, ...]] | None = None
    for i, p in enumerate(near):
        for q in near[i:]:
            score = sum(v for (gpus, _), v in zip(tests, slow, strict=True) if p in gpus or q in gpus)
            rival = (p,) if p == q else (p, q)
            if score >= gpu_score and (best is None or score > best[0]):
                best = (score, rival)
    return () if best is None else best[1]


def _two_pads_explain(
    m: EvidenceModel, g: int, tests: Sequence[tuple[frozenset[int], float]], linked: Callable[[int], bool]
) -> tuple[int, ...]:
    """Two pads, both ``linked`` to ``g`` (sharing a suspect Phase 1 probe with it), such that
    every accusing pair of ``g`` holds one of them and two or more pairs holding neither accuse
    nothing; ``()`` if there are none.

    Slow links from ``g`` to two GPUs accuse ``g`` in every pair holding either, which looks
    like a GPU slow in part of its pairs (tiny replicas pad with such GPUs); a slow ``g`` would
    have slowed the pairs without them too.
    """
    accusing = [gpus for gpus, d in tests if d > m.effect / 2]
    near = sorted({p for gpus in accusing for p in gpus if p != g and linked(p)})
    for i, p in enumerate(near):
        for q in near[i + 1 :]:
            if all(p in gpus or q in gpus for gpus in accusing):
                rest = [d for gpus, d in tests if p not in gpus and q not in gpus]
                if len(rest) >= 2 and not _accusing(rest, m.effect):
                    return (p, q)
    return ()


def _shared_pads(m: EvidenceModel, g: int, tests: Sequence[tuple[frozenset[int], float]]) -> tuple[set[int], set[int]]:
    """The pads in every accusing pair of ``g``, and those of them a slow link explains.

    A slow ``g`` slows its pairs whatever the padding; a slow link ``(g, pad)`` slows just the
    pairs that pad padded. So while one pad sits in every accusing pair, the pairs cannot tell
    the two apart: the first set (measure ``g`` without them). A pad explains the accusations
    (the second set) once two or more pairs without it accuse nothing: a slow ``g`` would
    have slowed those too.

    Returns:
        ``(shared, explaining)``, GPU ids; ``explaining`` is a subset of ``shared``.
    """
    accusing = [gpus for gpus, d in tests if d > m.effect / 2]
    if not accusing:
        return set(), set()
    shared = set(frozenset.intersection(*accusing)) - {g}
    explaining = set()
    for p in shared:
        rest = [d for gpus, d in tests if p not in gpus]
        if len(rest) >= 2 and not _accusing(rest, m.effect):
            explaining.add(p)
    return shared, explaining


def _phase1_evidence(state: _State, h: _Hyp, phase1: Sequence[tuple[Sequence[int], float]]) -> float:
    """Summed Phase 1 log-likelihood ratio for hypothesis ``h`` over the probes holding it
    (probes a known fault explains carry none).

    A GPU's sum reads every probe holding it (about ``(n - 1) / (k - 1)``), and a sweep's
    units ask for nearly every GPU, so the single-GPU sums of all GPUs are computed at once
    (:meth:`ProbeIndex.summed` over the probes no known fault explains, :func:`_explained`)
    and kept until a fault is found; a link's probes are few.
    """
    if len(h) == 1:
        key = state.known_key()
        if state._phase1_sums is None or state._phase1_sums[0] != key:
            state._phase1_sums = (key, state.index.summed(state.model, _explained(state, phase1)))
        return state.gpu_llr.get(h[0], 0.0) + float(state._phase1_sums[1][h[0]])
    m = state.model
    scale = m.pair_scale / math.sqrt(2.0)
    holding = state.index.holding(h).tolist()
    return sum(m.llr(phase1[i][1], scale=scale) for i in holding if not state.known_bad(frozenset(phase1[i][0])))


def _explained(state: _State, phase1: Sequence[tuple[Sequence[int], float]]) -> np.ndarray:
    """Per measured Phase 1 probe (shape ``(P,)``), whether a known fault explains it
    (:meth:`_State.known_bad`), from the probe index rather than probe by probe."""
    index = state.index
    bad = np.zeros(len(index.x), dtype=bool)
    if state.confirmed_gpus:
        bad[index.owner[np.isin(index.flat, list(state.confirmed_gpus))]] = True
    for link in state.confirmed_links:
        bad[index.holding(link)] = True
    t = state.topology
    if t is not None and state.confirmed_shared:  # a path through the component: probe by probe
        held = (any(t.holds(c, frozenset(p)) for c in state.confirmed_shared) for p, _ in phase1)
        bad |= np.fromiter(held, dtype=bool, count=len(bad))
    return bad


#: Prior share of the two-fault hypotheses of a unit once its single ones stall (:func:`_unit`).
TWO_FAULT_PRIOR = 0.1
#: A unit's hypotheses at most for its two-fault pairs to be formed (k = 8: 8 GPUs + 28 links).
_MAX_PAIRED_HYPS = 45
_Pair = tuple[_Hyp, _Hyp]  # two faults in one unit: two single hypotheses, both slow


def _pair_llr(m: EvidenceModel, pair: _Pair, tests: Sequence[tuple[frozenset[int], float]]) -> float:
    """Summed log-likelihood ratio of "both faults of ``pair``" over the unit's ``tests``: a
    test is predicted slow when it holds either; always slow if a link it holds is one of
    them, else in a share ``gpu_duty`` (a GPU)."""
    total = 0.0
    for gpus, d in tests:
        slow = [h for h in pair if _predicts_slow(h, gpus)]
        if slow:
            total += m.llr(d, duty=1.0 if any(len(h) == 2 for h in slow) else m.gpu_duty)
    return total


def _two_fault_pairs(hyps: Sequence[_Hyp]) -> list[_Pair]:
    """Every two of the unit's hypotheses where neither holds the other (a GPU and one of its
    links are one fault, the GPU, as far as any probe can tell)."""
    return [(a, b) for i, a in enumerate(hyps) for b in hyps[i + 1 :] if not (set(a) <= set(b) or set(b) <= set(a))]


def _predicts_slow(h: _Hyp, gpus: frozenset[int]) -> bool:
    return bool(h) and all(g in gpus for g in h)


def _unit(state: _State, probe: Sequence[int], phase1: Sequence[tuple[Sequence[int], float]]) -> bool:
    """Localize the fault(s) of one suspect Phase 1 probe; True when it was a false alarm."""
    _recalibrate(state)
    m = state.model
    members = [g for g in probe if g not in state.confirmed_gpus and g not in state.shared_gpus]
    if any(g in state.inconclusive_gpus and state.gpu_llr.get(g, 0.0) > 0.0 for g in probe):
        # a GPU left inconclusive but leaning faulty explains the probe as well as anything;
        # searched again should a retest settle that GPU (:func:`_deferred_units`)
        state.deferred.append(tuple(probe))
        return False
    t = state.topology
    if t is not None and any(t.holds(c, probe) for c in state.confirmed_shared):
        return False  # a NIC, NVSwitch or switch explains it; its other GPUs have probes of their own
    explained = len(members) < len(probe) or state.known_bad(frozenset(probe))
    # a GPU the GPU stage cleared stays a hypothesis with that evidence: an intermittent GPU
    # can pass a run of pairs, and its links must not take the blame
    hyps: list[_Hyp] = [(g,) for g in members]
    hyps += [
        (a, b)
        for i, a in enumerate(members)
        for b in members[i + 1 :]
        if (a, b) not in state.confirmed_links and (b, a) not in state.confirmed_links
    ]
    if not hyps:
        return True
    none_prior = 0.9 if explained else 0.5
    tests: list[tuple[frozenset[int], float]] = []
    errors = 0
    found = False
    prior_evidence: dict[_Hyp, float] = {}
    # two faults in one unit (dense faults): formed once the single hypotheses stall at the
    # budget, with a fresh budget counted from ``start``
    pairs: list[_Pair] = []
    paired, start = False, 0
    while True:
        if not prior_evidence:  # Phase 1 evidence per hypothesis; redone when a fault is found
            prior_evidence = {h: _phase1_evidence(state, h, phase1) for h in hyps}
        # posterior over the unit's hypotheses from Phase 1 and this unit's paired tests;
        # data that a known fault explains carry no evidence about the others
        single = (1.0 - none_prior) * (1.0 - (TWO_FAULT_PRIOR if pairs else 0.0)) / len(hyps)
        logw: dict[Any, float] = {(): math.log(none_prior)}
        for h in hyps:
            w = math.log(single) + prior_evidence[h]
            duty = m.gpu_duty if len(h) == 1 else 1.0
            for gpus, d in tests:
                if _predicts_slow(h, gpus):
                    w += m.llr(d, duty=duty)
            logw[h] = w
        pair_prior = math.log((1.0 - none_prior) * TWO_FAULT_PRIOR / len(pairs)) if pairs else 0.0
        for two in pairs:
            logw[two] = pair_prior + prior_evidence[two[0]] + prior_evidence[two[1]] + _pair_llr(m, two, tests)
        top = max(logw.values())
        total = sum(math.exp(v - top) for v in logw.values())
        post = {h: math.exp(v - top) / total for h, v in logw.items()}
        best = max(hyps, key=lambda h: post[h])
        if pairs and _confirm_pair(state, max(pairs, key=lambda p: post[p]), post, tests):
            found = True
            members = [g for g in members if g not in state.confirmed_gpus]
            hyps = [h for h in hyps if not set(h) & state.confirmed_gpus and h not in state.confirmed_links]
            tests = [(gpus, d) for gpus, d in tests if not state.known_bad(gpus)]
            prior_evidence, pairs, none_prior, start = {}, [], 0.9, len(tests)
            if not hyps:
                return False
            continue
        accused = [d for gpus, d in tests if _predicts_slow(best, gpus) and d > m.effect / 2]
        # a GPU whose tests slow links to one or two GPUs linked to it explain as well as the
        # GPU does (_link_rival) is not confirmed: the tests go on, without those GPUs
        carrying = (
            _link_rival(m, best[0], [t for t in tests if best[0] in t[0]], partial(state.suspect_link, best[0]))
            if len(best) == 1
            else ()
        )
        if post[best] >= m.confidence and len(accused) >= m.min_accusing and _shows_effect(accused, m.effect) and not carrying:
            accusing = tuple(tuple(sorted(gpus)) for gpus, d in tests if _predicts_slow(best, gpus) and d > m.effect / 2)
            _confirm(state, best, post[best], accused, len(tests), accusing)
            found = True
            if len(best) == 1:
                members = [g for g in members if g != best[0]]
                hyps = [h for h in hyps if best[0] not in h]
            else:
                hyps = [h for h in hyps if h != best]
            kept = set(hyps)
            pairs = [two for two in pairs if two[0] in kept and two[1] in kept]
            tests = [(gpus, d) for gpus, d in tests if not state.known_bad(gpus)]
            prior_evidence = {}
            none_prior = 0.9
            if not hyps:
                return False
            continue
        if post[()] >= m.clear_confidence:
            return not explained and not found
        used = len(tests) - start
        if used >= m.max_pairs and not (post[best] >= 0.9 and used < 2 * m.max_pairs):
            if not paired and 2 <= len(hyps) <= _MAX_PAIRED_HYPS and post[()] < 0.5:
                # the single hypotheses stalled with a fault likely: weigh two at once
                paired, pairs, start = True, _two_fault_pairs(hyps), len(tests)
                continue
            conf = post[best]
            if conf < 0.5 and post[()] < 0.5 and not found:
                # a fault is likely (no false alarm) but no one component stands out: never
                # end a slow probe without a verdict
                reason = (
                    f"{len(tests)} paired tests left this slow probe's fault unsettled among its GPUs and "
                    f"links (the likeliest at confidence {confidence_text(conf)}; a false alarm at "
                    f"{confidence_text(post[()])})"
                )
                _leave_open(state, best, conf, _slowdown(accused, m.effect), len(tests), reason)
            elif conf >= 0.5:
                reason = f"{len(tests)} paired tests left the evidence at confidence {confidence_text(conf)}"
                if carrying:
                    reason = (
                        f"accused mostly in tests that also held GPU {' or '.join(map(str, carrying))}: "
                        f"slow links to {'them' if len(carrying) > 1 else 'it'} explain the tests as well"
                    )
                _leave_open(state, best, conf, _slowdown(accused, m.effect), len(tests), reason)
            return False
        subset = _split(state, members, hyps, post, pairs)
        # while slow links to one or two GPUs explain a GPU's accusations as well as the GPU
        # does, its next test goes without them: the one datum that tells the two apart
        test = state.measure(set(subset), frozenset(carrying) if carrying and best[0] in subset else frozenset())
        if test is None:
            errors += 1
            if errors >= 3:
                kind = ComponentKind.GPU if len(best) == 1 else ComponentKind.LINK
                peer = None if len(best) == 1 else best[1]
                if not any(f.kind == kind and f.gpu == best[0] and f.peer_gpu == peer for f in state.findings):
                    # else already open with its own reason (the GPU stage's)
                    _leave_open(
                        state,
                        best,
                        post[best],
                        _slowdown(accused, m.effect),
                        len(tests) + errors,
                        f"probes failed: {state.failure}",
                    )
                return False
            continue
        tests.append(test)


def _split(
    state: _State, members: Sequence[int], hyps: Sequence[_Hyp], post: dict[Any, float], pairs: Sequence[_Pair] = ()
) -> list[int]:
    """GPUs of the unit whose probe is predicted slow with probability nearest 1/2 (a pair of
    faults predicts it slow when it holds either)."""
    chosen: set[int] = set()
    allowed = [g for g in members if not state.known_bad(frozenset({g}))]

    def slow_mass(gpus: set[int]) -> float:
        mass = sum(post[h] for h in hyps if gpus.issuperset(h))
        return mass + sum(post[p] for p in pairs if gpus.issuperset(p[0]) or gpus.issuperset(p[1]))

    while len(chosen) < min(state.k, len(allowed)):
        options = [g for g in allowed if g not in chosen and not state.known_bad(frozenset(chosen | {g}))]
        if not options:
            break
        here = abs(slow_mass(chosen) - 0.5)
        g = min(options, key=lambda x: (abs(slow_mass(chosen | {x}) - 0.5), x))
        if abs(slow_mass(chosen | {g}) - 0.5) > here and slow_mass(chosen) > 0:
            break
        chosen.add(g)
    if slow_mass(chosen) == 0.0:  # nothing informative: test the likeliest hypothesis alone
        likeliest: _Hyp = max(hyps, key=lambda h: post[h])
        chosen = set(likeliest)
    return sorted(chosen)


def _confirm_pair(state: _State, two: _Pair, post: dict[Any, float], tests: Sequence[tuple[frozenset[int], float]]) -> bool:
    """Confirm both faults of ``two`` if its posterior reaches the confidence and each of them,
    on its own, has :attr:`~EvidenceModel.min_accusing` accusing pairs showing the effect; True
    when it did."""
    m = state.model
    if post[two] < m.confidence:
        return False
    accused = [[d for gpus, d in tests if _predicts_slow(h, gpus) and d > m.effect / 2] for h in two]
    if not all(len(a) >= m.min_accusing and _shows_effect(a, m.effect) for a in accused):
        return False
    for h, a in zip(two, accused, strict=True):
        evidence = tuple(tuple(sorted(gpus)) for gpus, d in tests if _predicts_slow(h, gpus) and d > m.effect / 2)
        _confirm(state, h, post[two], a, len(tests), evidence)
    return True


def _confirm(
    state: _State, h: _Hyp, conf: float, accused: Sequence[float], used: int, evidence: tuple[tuple[int, ...], ...] = ()
) -> None:
    slowdown = _slowdown(accused, state.model.effect)
    if len(h) == 1:
        if h[0] in state.inconclusive_gpus:  # the GPU stage left it open; the unit's tests settled it
            state.inconclusive_gpus.discard(h[0])
            state.findings = [f for f in state.findings if not (f.kind == ComponentKind.GPU and f.gpu == h[0])]
        state.confirmed_gpus.add(h[0])
        state.findings.append(
            EvidenceFinding(ComponentKind.GPU, h[0], None, Status.CONFIRMED, conf, slowdown, used, evidence=evidence)
        )
    else:
        a, b = h
        state.confirmed_links.add((a, b))
        state.findings.append(
            EvidenceFinding(ComponentKind.LINK, a, b, Status.CONFIRMED, conf, slowdown, used, evidence=evidence)
        )


#: Quantile of the moving window taken as the baseline: faults only add latency, so a low
#: quantile stays on the healthy probes where several faults make half a window slow.
BASELINE_QUANTILE = 0.3


def _low_quantile(values: Sequence[float]) -> float:
    ordered = sorted(values)
    pos = BASELINE_QUANTILE * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def measurement_order(latencies: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """``(probe, repeat)`` of every measurement in the order Phase 1 took them: every probe
    once per round, round after round (``latencies[i][j]`` is probe i's j-th repeat)."""
    return [
        (i, j)
        for j in range(max((len(lat) for lat in latencies), default=0))
        for i in range(len(latencies))
        if j < len(latencies[i])
    ]


def phase1_timeline(latencies: Sequence[Sequence[float]]) -> list[tuple[int, float]]:
    """Every measurement as ``(probe, log latency)`` in the order taken (:func:`measurement_order`).

    >>> phase1_timeline([[10.0, 20.0], [10.0]])
    [(0, 2.302585092994046), (1, 2.302585092994046), (0, 2.995732273553991)]
    """
    return [(i, math.log(latencies[i][j])) for i, j in measurement_order(latencies) if latencies[i][j] > 0]


def time_detrended(latencies: Sequence[Sequence[float]], baseline_ms: float, window: int = 9) -> list[list[float]]:
    """Every measurement over the baseline at the time it was taken: ``latency / baseline``.

    Phase 1 measures every probe once per round, round after round (``latencies[i][j]`` is
    probe i's j-th repeat; :func:`measurement_order`). The baseline at a measurement is a low
    quantile (:data:`BASELINE_QUANTILE`) of the ``window`` measurements around it in that
    order, so a load burst or drift lifts the baseline, not the probes it hit; a slow probe
    among healthy neighbours stays slow, even where slow probes fill half the window.

    Args:
        latencies: per probe, its latencies in ms (empty on error), all > 0.
        baseline_ms: fallback baseline (ms) when too few neighbours were measured.
        window: measurements in the moving window (odd, >= 3).

    Returns:
        Per probe, one ratio (dimensionless, > 0) per latency, in repeat order.

    Three probes, the second 2x slow, in two rounds with the load 1.3x higher in the second:
    the slow probe reads 2x in both; where the window straddles the step it mixes the two
    levels (probe 2's first and probe 0's second ratio):

    >>> [[round(r, 2) for r in row] for row in time_detrended([[10.0, 13.0], [20.0, 26.0], [10.0, 13.0]], 10.0, 3)]
    [[1.0, 1.1], [2.0, 2.0], [0.85, 1.0]]
    """
    counts = [len(lat) for lat in latencies]
    repeats = max(counts, default=0)
    uniform = all(c == repeats for c in counts)
    if uniform:  # every probe measured as often: round j is row j of a (repeats, P) array
        values = np.array(latencies, dtype=float).reshape(len(latencies), repeats).T.ravel()
    else:
        order = measurement_order(latencies)
        values = np.array([latencies[i][j] for i, j in order], dtype=float)
    local = _moving_low_quantile(values, window, baseline_ms)
    ratios = (values / local).tolist()
    if uniform:
        return [ratios[i :: len(latencies)] for i in range(len(latencies))] if repeats else [[] for _ in latencies]
    per_probe: list[list[float]] = [[] for _ in latencies]
    for (i, _), r in zip(order, ratios, strict=True):
        per_probe[i].append(r)
    return per_probe


def time_detrended_array(latencies: np.ndarray, baseline_ms: float, window: int = 9) -> np.ndarray:
    """:func:`time_detrended` of a sweep whose probes were all measured ``r`` times: latencies
    as a ``(P, r)`` array (ms, all > 0), the ratios as a ``(P, r)`` array (the same floats)."""
    p, repeats = latencies.shape
    values = np.asarray(latencies, dtype=float).T.ravel()  # round j is row j of a (repeats, P) array
    out: np.ndarray = (values / _moving_low_quantile(values, window, baseline_ms)).reshape(repeats, p).T
    return out


def _moving_low_quantile(values: np.ndarray, window: int, fallback: float) -> np.ndarray:
    """At each of ``values`` (shape ``(N,)``), the :data:`BASELINE_QUANTILE` of the
    ``window`` values around it (shifted inward at the ends; all of them where fewer exist),
    or ``fallback`` where fewer than 3 exist; shape ``(N,)``. Linear interpolation between
    order statistics, as :func:`_low_quantile`; sorted in blocks so memory stays
    O(block x window)."""
    count = len(values)
    if count < 3:
        return np.full(count, fallback)
    if count <= window:
        return np.full(count, _low_quantile(values.tolist()))
    rows = np.lib.stride_tricks.sliding_window_view(values, window)  # (count - window + 1, window)
    pos = BASELINE_QUANTILE * (window - 1)
    lo, frac = int(pos), pos - int(pos)
    hi = min(lo + 1, window - 1)
    q = np.empty(len(rows))
    block = 1 << 16
    for start in range(0, len(rows), block):
        part = np.sort(rows[start : start + block], axis=1)
        q[start : start + block] = part[:, lo] + (part[:, hi] - part[:, lo]) * frac
    first = np.clip(np.arange(count) - window // 2, 0, count - window)
    return q[first]


def time_detrended_excess(latencies: Sequence[Sequence[float]], baseline_ms: float, window: int = 9) -> list[float | None]:
    """Per probe, ``x = log(latency / baseline at the time it was measured)``: the median over
    its repeats of :func:`time_detrended`'s ratios, in log space; ``None`` for a probe with no
    latency. Arguments as :func:`time_detrended`.

    A slow probe among healthy ones stays slow (0.693 = log 2); a burst that lifts the last
    eight measurements by 30% lifts the baseline instead, but for its first measurement, at
    the window's edge:

    >>> lat = [[10.0]] * 6 + [[20.0]] + [[10.0]] * 2 + [[13.0]] * 8
    >>> [round(x, 3) + 0.0 for x in time_detrended_excess(lat, 10.0, 5)]
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.693, 0.0, -0.058, 0.204, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    """
    return detrended_excess(time_detrended(latencies, baseline_ms, window))


def detrended_excess(detrended: Sequence[Sequence[float]]) -> list[float | None]:
    """Per probe, the median log of its :func:`time_detrended` ratios; ``None`` where it has none.

    >>> [None if x is None else round(x, 3) for x in detrended_excess([[1.0, 2.0, 2.0], []])]
    [0.693, None]
    """
    out: list[float | None] = [None] * len(detrended)
    by_count: dict[int, list[int]] = {}
    for i, rs in enumerate(detrended):
        if rs:
            by_count.setdefault(len(rs), []).append(i)
    for count, rows in by_count.items():  # one median per row of a (probes, count) array
        medians = np.median(np.log(np.array([detrended[i] for i in rows], dtype=float).reshape(len(rows), count)), axis=1)
        for i, v in zip(rows, medians.tolist(), strict=True):
            out[i] = v
    return out


def detrended_excess_array(detrended: np.ndarray) -> np.ndarray:
    """:func:`detrended_excess` of a ``(P, r)`` ratio array (:func:`time_detrended_array`,
    r >= 1): the median log per row, shape ``(P,)`` (the same floats)."""
    out: np.ndarray = np.median(np.log(detrended), axis=1)
    return out


def _median(values: np.ndarray) -> float:
    """:func:`statistics.median` of a 1-D float array, computed as it does (the middle value,
    or the mean of the two middle ones): the same float."""
    s = np.sort(values)
    m = len(s)
    return float(s[m // 2]) if m % 2 else float((s[m // 2 - 1] + s[m // 2]) / 2)


def estimate_sigma(latencies: Sequence[Sequence[float]], excess: Sequence[float | None], suspects: Sequence[int]) -> float:
    """Noise scale of one measurement's log-latency, from Phase 1 (robust: MAD x 1.4826).

    The larger of two estimates: the spread of the repeats of each probe around their median
    (corrected for the median's own closeness to its sample), and the spread of the
    time-detrended excess of the probes that are not suspect (divided back to one
    measurement). Either alone can be too small: a replica of a few probes, or a sweep of one
    repeat.

    Pass the repeats as :func:`time_detrended` ratios: a probe's repeats are taken rounds
    apart, so raw latencies would count the load's drift and bursts between rounds as noise,
    while a paired Phase 2 test (its two probes measured side by side) cancels them.

    Args:
        latencies: per probe, its repeats (ms, or ratios to the baseline; all > 0 count).
        excess: per probe, the time-detrended excess (:func:`time_detrended_excess`).
        suspects: indices of the probes left out of the second estimate.

    Returns:
        The noise scale in log space (>= 0).

    >>> round(estimate_sigma([[10.0, 10.5, 9.5]] * 8, [0.0] * 8, []), 3)
    0.089
    """
    if isinstance(latencies, np.ndarray) and isinstance(excess, np.ndarray):  # (P, r) and (P,), NaN: None
        return _estimate_sigma_arrays(latencies, excess, suspects)
    within = [abs(math.log(v / statistics.median(lat))) for lat in latencies if len(lat) >= 2 for v in lat if v > 0]
    repeats = max((len(lat) for lat in latencies), default=1)
    est = 0.0
    if within:
        est = 1.4826 * statistics.median(within) * math.sqrt(repeats / max(1, repeats - 1))
    left_out = set(suspects)  # built once: a set per probe costs O(probes x suspects)
    between = [x for i, x in enumerate(excess) if x is not None and i not in left_out]
    if len(between) >= 5:
        center = statistics.median(between)
        spread = 1.4826 * statistics.median(abs(x - center) for x in between)
        est = max(est, spread * (math.sqrt(repeats) / 1.2533 if repeats > 1 else 1.0))
    return est


def _estimate_sigma_arrays(latencies: np.ndarray, excess: np.ndarray, suspects: Sequence[int]) -> float:
    """:func:`estimate_sigma` of a ``(P, r)`` ratio array and a ``(P,)`` excess array (NaN
    where none): the same float, without a Python float per probe where r = 1."""
    repeats = latencies.shape[1] if len(latencies) else 1
    est = 0.0
    if repeats >= 2:  # the spread of the repeats around their medians, probe by probe as estimate_sigma
        rows = latencies.tolist()
        within = [abs(math.log(v / statistics.median(lat))) for lat in rows for v in lat if v > 0]
        if within:
            est = 1.4826 * statistics.median(within) * math.sqrt(repeats / max(1, repeats - 1))
    keep = ~np.isnan(excess)
    keep[np.asarray(sorted(set(suspects)), dtype=np.int64)] = False
    between = excess[keep]
    if len(between) >= 5:
        center = _median(between)
        spread = 1.4826 * _median(np.abs(between - center))
        est = max(est, spread * (math.sqrt(repeats) / 1.2533 if repeats > 1 else 1.0))
    return est


def runs_shared_stage(topology: ReplicaTopology | None) -> bool:
    """Whether :func:`evidence_drilldown` runs the shared stage for ``topology`` (several nodes),
    and so reads the Phase 1 ``timeline``."""
    return topology is not None and topology.nodes > 1


def evidence_drilldown(
    n: int,
    k: int,
    phase1: Sequence[tuple[Sequence[int], float | None]],
    suspects: Sequence[int],
    pair: PairOracle,
    model: EvidenceModel,
    *,
    seed: int = 0,
    topology: ReplicaTopology | None = None,
    timeline: Sequence[tuple[int, float]] = (),
) -> EvidenceResult:
    """Localize the faults behind the suspect Phase 1 probes from paired, weighed measurements.

    With a ``topology`` of several nodes, the shared stage
    (:func:`~faultsense_pipelines.localize.evidence.shared.shared_stage`) runs first: NICs, NVSwitches
    and switches whose Phase 1 contrast stands out are told apart from the GPUs under them by
    isolating probes; a confirmed one explains the probes holding it, and its GPUs are neither
    blamed one by one nor used as pads.

    Args:
        n: GPUs in the replica.
        k: probe size; every Phase 2 probe (test or reference) has ``min(k, n)`` GPUs.
        phase1: per Phase 1 probe, its GPUs (distinct) and ``x = log(latency / baseline)`` (``None`` if
            it could not be measured).
        suspects: indices into ``phase1`` of the suspect probes.
        pair: the pair oracle (see :data:`PairOracle`).
        model: likelihood and stopping rules.
        seed: seed of the padding and reference draws.
        topology: where the GPUs sit; ``None``: GPUs and links only.
        timeline: every Phase 1 measurement in the order taken, ``(index into phase1, log
            latency)`` (:func:`phase1_timeline`); the shared stage reads it.

    Returns:
        An :class:`EvidenceResult`: confirmed GPUs, links and shared components with their
        confidence, masked links between confirmed GPUs, inconclusive components with the reason.

    Raises:
        ValueError: a GPU id outside ``0..n-1`` or a suspect index outside ``phase1``.
    """
    measured: Sequence[tuple[Sequence[int], float]]
    if isinstance(phase1, Phase1Probes):  # arrays: the unmeasured probes' GPUs checked as arrays too
        ProbeIndex.build(n, Phase1Probes(phase1.members[np.isnan(phase1.x)], np.zeros(int(np.isnan(phase1.x).sum()))))
        measured = cast(Sequence[tuple[Sequence[int], float]], phase1.measured())  # no NaN left: no None
    else:
        ProbeIndex.build(n, [(p, 0.0) for p, x in phase1 if x is None])  # raises on a GPU outside 0..n-1
        measured = [(p, x) for p, x in phase1 if x is not None]
    if any(not 0 <= i < len(phase1) for i in suspects):
        raise ValueError(f"suspect probe index outside 0..{len(phase1) - 1}")
    index = ProbeIndex.build(n, measured)
    evidence = _gpu_evidence(model, index)
    suspect_probes = tuple(frozenset(phase1[i][0]) for i in suspects)
    suspect_pairs = {(a, b) for p in suspect_probes for a in p for b in p if a < b}
    state = _State(
        n, k, model, pair, random.Random(seed), evidence, suspect_pairs, index, topology=topology, suspect_probes=suspect_probes
    )
    if runs_shared_stage(topology) and timeline:
        _shared(state, [frozenset(p) for p, _ in phase1], timeline, measured, suspects)
    in_suspects = sorted({g for i in suspects for g in phase1[i][0]}, key=lambda g: (-evidence[g], g))
    _gpu_stage(state, [g for g in in_suspects if state.gpu_evidence[g] > 0 and g not in state.shared_gpus])
    _retest_open_gpus(state, measured)
    cleared = 0
    for i in suspects:
        cleared += _unit(state, phase1[i][0], measured)
    cleared += _deferred_units(state, measured)
    confirmed = sorted(state.confirmed_gpus)
    masked = [
        EvidenceFinding(ComponentKind.LINK, a, b, Status.MASKED, None, None, 0)
        for i, a in enumerate(confirmed)
        for b in confirmed[i + 1 :]
    ]
    return EvidenceResult(tuple(state.findings) + tuple(masked), state.pairs, cleared)
