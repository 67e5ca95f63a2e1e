"""Shared components in the evidence drill-down: NIC, NVSwitch and switch faults, by probing.

A NIC that renegotiated to a lower speed, a bad switch port or a degraded NVSwitch slows a
whole family of GPU-to-GPU paths at once (:class:`~faultsense_pipelines.replica.topology.ReplicaTopology`).
Phase 1 sees it as many slow probes, and the GPU-by-GPU drill-down would blame every GPU
behind it. This stage runs first and tells a shared component from the GPUs under it, and
from the other shared components it overlaps, by probing:

1. **Contrast.** For each shared component, Phase 1 probes that hold it against those that do
   not: the difference of the medians of their time-detrended excess, with a robust z. A
   load burst or a lifted baseline shifts both groups alike; a component carrying most of the
   replica's paths still shows against the probes it does not carry. Components whose
   contrast reaches half the effect at z >= :data:`MIN_Z` are candidates, strongest first.
2. **Hypotheses.** A candidate, the other candidates that share a GPU with it (a NIC and its
   switch, a node's NIC and NVSwitch), the GPUs under it with the most Phase 1 evidence, and
   "none" (prior 1/2), each predicting a paired test slow when the test probe holds it.
3. **Isolating tests** (generalized binary search, as the unit stage). For each hypothesis, a
   probe that holds it and as little posterior mass of the others as padding allows: a GPU
   with the other GPUs of its node (an intra-node probe: no NIC, no switch), a NIC through its
   least-suspect GPU and one GPU of a clean node, an NVSwitch through two of its GPUs. The
   test whose predicted-slow mass is nearest 1/2 is measured beside a reference probe that
   holds none of the hypotheses. A single slow GPU explains the slow intra-node probe but not
   its node-mates' slow inter-node probes; a NIC the reverse.
4. **Decision** as in the unit stage: confirm a shared component at the confidence target with
   ``min_accusing`` accusing pairs; a GPU winning leaves it to the GPU stage (its own
   sequential test); "none" rejects; a budget run out leaves it inconclusive and its GPUs
   unblamed.

Pure: it sees a pair oracle, never an executor.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...replica.topology import Component, ReplicaTopology, gpu_component
from ...replica.vocabulary import ComponentKind, Status
from ..drilldown.common import confidence_text

__all__ = ["MIN_Z", "SharedFinding", "SharedOutcome", "component_contrast", "shared_stage"]

#: Robust z a component's Phase 1 contrast needs to be drilled into.
MIN_Z = 4.0
#: GPUs under a candidate kept as rival hypotheses (those with the most Phase 1 evidence).
MAX_GPU_RIVALS = 8
#: Share of measurements a faulty NIC, NVSwitch or switch is assumed slow in (a flapping NIC
#: is slow part of the time); a fast pair then weighs against it twice as much as against an
#: intermittent GPU (duty 0.5), so a search settles which of two nested components is slow.
SHARED_DUTY = 0.75
#: Hypotheses (the likeliest) an isolating test is built for, each step.
MENU = 6
#: Posterior mass a reference of the test's shape may hold more than one of another shape
#: before the other shape is used (an intra-node reference for a cross-node test).
SHAPE_PENALTY = 0.05
#: Weight, in a reference, of a hypothesis the test holds too (its slowdown would cancel).
CANCEL_WEIGHT = 10.0
#: Candidates tested per sweep at most (each costs up to ``max_pairs`` paired tests).
MAX_CANDIDATES = 6

#: How :meth:`_Search._masses` tells the kinds apart: GPU 0, link 1, NVSwitch 2, NIC or switch 3.
_KIND_CODE = {
    ComponentKind.GPU: 0,
    ComponentKind.LINK: 1,
    ComponentKind.NVSWITCH: 2,
    ComponentKind.NIC: 3,
    ComponentKind.SWITCH: 3,
}

#: ``pair(test_gpus, reference_gpus) -> log(latency(test) / latency(reference))`` or ``None``.
PairOracle = Callable[[tuple[int, ...], tuple[int, ...]], float | None]
#: ``llr(d, duty) -> `` clipped log-likelihood ratio of one paired datum (EvidenceModel.llr).
Llr = Callable[[float, float], float]


@dataclass(frozen=True)
class SharedFinding:
    """One shared component judged by :func:`shared_stage`.

    Attributes:
        component: the NVSwitch, NIC or switch.
        status: ``confirmed`` or ``inconclusive``.
        confidence: posterior probability that it is faulty.
        slowdown: median latency ratio of the pairs that accused it (``None`` if none did).
        tests_used: paired tests (two probes each) spent on it.
        reason: for ``inconclusive``, why the evidence did not settle it.
        evidence: the test probes (GPU ids) of the pairs that came out as it predicts.
    """

    component: Component
    status: Status
    confidence: float
    slowdown: float | None
    tests_used: int
    reason: str | None = None
    evidence: tuple[tuple[int, ...], ...] = ()


@dataclass
class SharedOutcome:
    """What the shared stage found: findings, the components confirmed (their probes are
    explained), the GPUs under inconclusive ones (not to be blamed one by one) and pairs spent."""

    findings: list[SharedFinding] = field(default_factory=list)
    confirmed: list[Component] = field(default_factory=list)
    unresolved_gpus: set[int] = field(default_factory=set)
    pairs: int = 0


def component_contrast(
    topology: ReplicaTopology,
    components: Sequence[Component],
    probes: Sequence[frozenset[int]],
    timeline: Sequence[tuple[int, float]],
    *,
    explained: Sequence[Component] = (),
) -> list[tuple[Component, float, float]]:
    """Phase 1 contrast of each component: its probes against the probes measured next to them
    in time that do not hold it.

    Each measurement of a probe holding the component is compared with the mean of the
    nearest measurement before and after it of a probe that does not (a load burst or drift
    lifts both); a probe's datum is the median over its repeats. A moving baseline over all
    probes would not do: a cover measures whole parallel classes in a row, so a NIC's slow
    probes can fill every window around each other.

    Args:
        topology: where the GPUs sit.
        components: the components to score.
        probes: the Phase 1 probes' GPUs.
        timeline: every measurement in the order taken, ``(probe index, log latency)``.
        explained: components already found faulty; probes holding one are left out.

    Returns:
        ``(component, diff, z)`` per component held by three probes or more and not by one at least:
        ``diff`` = median log-latency excess of its probes over their neighbours in time,
        ``z`` = ``diff`` over its robust standard error (MAD x 1.4826 of the per-probe data, x
        1.2533 for a median, over the square root of the probes).

    >>> t = ReplicaTopology(16, gpus_per_node=4)
    >>> probes = [frozenset({a, b}) for a in range(16) for b in range(a + 1, 16)]
    >>> nic2 = t.nic(2)
    >>> timeline = [(i, 0.4 if t.holds(nic2, p) else 0.0) for i, p in enumerate(probes)]
    >>> [(t.name(c), round(d, 2)) for c, d, z in component_contrast(t, [nic2, t.nic(0)], probes, timeline)]
    [('nic:node2', 0.4), ('nic:node0', 0.0)]
    """
    if not components or not probes or not timeline:
        return []
    index = np.asarray([i for i, _ in timeline], dtype=np.int64)
    values = np.asarray([v for _, v in timeline], dtype=float)
    keep: np.ndarray = np.ones(len(probes), dtype=bool)
    if explained:
        keep = np.logical_not(topology.holds_matrix(explained, probes).any(axis=1))
    held = topology.holds_matrix(components, probes)
    out = []
    for j, c in enumerate(components):
        on = held[:, j] & keep
        off = ~held[:, j] & keep
        if on.sum() < 3 or off.sum() < 1:  # one probe it does not hold is a reference already
            continue
        t_on = np.flatnonzero(on[index])
        t_off = np.flatnonzero(off[index])
        pos = np.searchsorted(t_off, t_on)
        before = t_off[np.clip(pos - 1, 0, len(t_off) - 1)]
        after = t_off[np.clip(pos, 0, len(t_off) - 1)]
        ref = (values[before] + values[after]) / 2.0
        excess = values[t_on] - ref
        per_probe: dict[int, list[float]] = {}
        for t_i, e in zip(index[t_on].tolist(), excess.tolist()):
            per_probe.setdefault(t_i, []).append(e)
        data = np.asarray([statistics.median(v) for v in per_probe.values()])
        diff = float(np.median(data))
        spread = max(1.4826 * float(np.median(np.abs(data - diff))), 0.005)
        z = diff / (1.2533 * spread / math.sqrt(len(data)))
        out.append((c, diff, z))
    return out


@dataclass
class _Search:
    topology: ReplicaTopology
    k: int
    llr: Llr
    duty: float
    pair: PairOracle
    rng: random.Random
    healthy: list[int]  # pad and reference pool, healthiest first
    hyps: list[Component]
    banned: frozenset[int] = frozenset()  # GPUs of confirmed components: in no test, no reference
    tests: list[tuple[frozenset[int], frozenset[int], float]] = field(default_factory=list)
    _members: np.ndarray | None = None  # hypothesis x GPU membership, built on first use
    _kinds: np.ndarray | None = None
    _node_of: np.ndarray | None = None

    def duty_of(self, h: Component) -> float:
        """Share of measurements ``h`` is assumed slow in: a GPU's ``duty`` (it may throttle on
        and off), a link always, a shared component :data:`SHARED_DUTY` (it may flap)."""
        if h.kind == ComponentKind.GPU:
            return self.duty
        return 1.0 if h.kind == ComponentKind.LINK else max(self.duty, SHARED_DUTY)

    def sign(self, h: Component, test: frozenset[int], reference: frozenset[int]) -> int:
        """What ``h`` predicts of a pair: +1 the test is slower, -1 the reference, 0 neither."""
        return int(self.topology.holds(h, test)) - int(self.topology.holds(h, reference))

    def posterior(self) -> dict[Component | None, float]:
        logw: dict[Component | None, float] = {None: math.log(0.5)}
        for h in self.hyps:
            w = math.log(0.5 / len(self.hyps))
            duty = self.duty_of(h)
            for test, ref, d in self.tests:
                sign = self.sign(h, test, ref)
                if sign:
                    w += self.llr(sign * d, duty)
            logw[h] = w
        top = max(logw.values())
        total = sum(math.exp(v - top) for v in logw.values())
        return {h: math.exp(v - top) / total for h, v in logw.items()}

    def accusing(self, h: Component, effect: float) -> list[float]:
        """Pairs that came out as ``h`` predicts (``sign x d > effect / 2``), as ``sign x d``."""
        out = []
        for test, ref, d in self.tests:
            sign = self.sign(h, test, ref)
            if sign and sign * d > effect / 2:
                out.append(sign * d)
        return out

    def accusing_tests(self, h: Component, effect: float) -> tuple[tuple[int, ...], ...]:
        """The test probes of the pairs that came out as ``h`` predicts."""
        return tuple(
            tuple(sorted(test)) for test, ref, d in self.tests if (sign := self.sign(h, test, ref)) and sign * d > effect / 2
        )

    def mass(self, gpus: frozenset[int], post: dict[Component | None, float], skip: Component | None = None) -> float:
        """Posterior mass of the hypotheses (but ``skip``) that a probe over ``gpus`` holds."""
        return float(self._masses(sorted(gpus), [], self._weights(post, skip))[0])

    def _weights(self, post: dict[Component | None, float], skip: Component | None = None) -> np.ndarray:
        return np.asarray([0.0 if h is skip else post.get(h, 0.0) for h in self.hyps])

    def _masses(self, chosen: Sequence[int], options: Sequence[int], weights: np.ndarray) -> np.ndarray:
        """Weighed hypotheses held by ``chosen`` plus each of ``options`` (by ``chosen`` alone
        when there are none), vectorized over the hypotheses: shape ``(max(1, len(options)),)``."""
        if self._members is None:
            n = self.topology.gpus
            self._members = np.zeros((len(self.hyps), n), dtype=np.int64)
            for i, h in enumerate(self.hyps):
                self._members[i, list(h.members)] = 1
            self._kinds = np.asarray([_KIND_CODE[h.kind] for h in self.hyps])
            self._node_of = np.asarray([self.topology.node(g) for g in range(n)])
        members, kinds, node_of = self._members, self._kinds, self._node_of
        assert kinds is not None and node_of is not None
        base = members[:, list(chosen)].sum(axis=1) if chosen else np.zeros(len(self.hyps), dtype=np.int64)
        nodes = set(node_of[list(chosen)].tolist()) if chosen else set()
        opts = list(options)
        if opts:
            count = base[:, None] + members[:, opts]  # (hyps, options)
            other = np.asarray([len(nodes | {int(node_of[g])}) >= 2 for g in opts])[None, :]
        else:
            count = base[:, None]
            other = np.asarray([[len(nodes) >= 2]])
        kinds2 = kinds[:, None]
        held = np.where(
            kinds2 == 0,
            count >= 1,
            np.where(kinds2 == 1, count >= 2, np.where(kinds2 == 2, count >= 2, (count >= 1) & other)),
        )
        return np.asarray(weights @ held, dtype=float)

    def _fill(
        self,
        seed: set[int],
        pool: Sequence[int],
        post: dict[Component | None, float],
        skip: Component | None,
        weights: np.ndarray | None = None,
    ) -> set[int]:
        """``seed`` padded to k from ``pool`` greedily, each pad adding the least posterior mass
        (or the least of ``weights``, one per hypothesis)."""
        chosen = set(seed)
        options = [g for g in pool if g not in chosen and g not in self.banned]
        w = self._weights(post, skip) if weights is None else weights
        while len(chosen) < self.k and options:
            masses = self._masses(sorted(chosen), options, w)
            best = options[int(np.argmin(masses))]  # the first of the least: the pool's order breaks ties
            chosen.add(best)
            options.remove(best)
        return chosen

    def _pool(self, extra: Sequence[int]) -> list[int]:
        head = self.healthy[: max(3 * self.k, self.k + 8)]
        self.rng.shuffle(head)
        return [*head, *(g for g in extra if g not in head)]

    def isolating(self, h: Component, post: dict[Component | None, float]) -> frozenset[int] | None:
        """A probe of k GPUs that holds ``h`` and as little of the other hypotheses as it can."""
        t = self.topology
        if h.kind == ComponentKind.GPU:
            g = h.ids[0]
            seeds: list[set[int]] = [{g}]
            extra = list(t.node_gpus(t.node(g)))
        elif h.kind == ComponentKind.NVSWITCH:
            ranked = sorted(h.members - self.banned, key=lambda g: (post.get(gpu_component(g), 0.0), self.rng.random()))
            seeds = [set(ranked[:2])] if len(ranked) >= 2 else []
            extra = ranked
        else:  # NIC or switch: a GPU under it and one of another node
            ranked = sorted(h.members - self.banned, key=lambda g: (self.mass(frozenset({g}), post, h), self.rng.random()))
            seeds = []
            extra = []
            for m in ranked[:3]:
                outside = [g for g in self.healthy if t.node(g) != t.node(m)]
                if outside:
                    o = min(outside[: 3 * self.k], key=lambda g: self.mass(frozenset({m, g}), post, h))
                    seeds.append({m, o})
                    extra += [*t.node_gpus(t.node(m)), *t.node_gpus(t.node(o))]
        best: frozenset[int] | None = None
        for seed in seeds:
            filled = frozenset(self._fill(seed, self._pool(extra), post, h))
            fits = len(filled) == min(self.k, t.gpus) and t.holds(h, filled)
            if fits and (best is None or self.mass(filled, post, h) < self.mass(best, post, h)):
                best = filled
        return best

    def reference(self, post: dict[Component | None, float], test: frozenset[int]) -> frozenset[int] | None:
        """k GPUs holding as little posterior mass as padding allows (mass the test holds too
        weighs :data:`CANCEL_WEIGHT` times: in the pair it would cancel), spanning as many nodes as the test does (one, or
        several): a reference of the test's shape. One of another shape
        (a single node for a test across nodes) only where every reference of the test's shape
        holds markedly more mass (a two-node replica, where every cross-node probe holds both NICs)."""
        t = self.topology
        spans = len({t.node(g) for g in test})
        # what the reference holds of what the test holds cancels in the pair: it weighs CANCEL_WEIGHT
        weights = self._weights(post) * np.asarray([CANCEL_WEIGHT if t.holds(h, test) else 1.0 for h in self.hyps])
        best: frozenset[int] | None = None
        best_cost = math.inf
        nodes = sorted({t.node(g) for g in range(t.gpus)}, key=lambda v: self.rng.random())
        for width in dict.fromkeys((spans, 1)):
            per = max(1, self.k // max(1, width))
            for _ in range(12):
                chosen: set[int] = set()
                for v in self.rng.sample(nodes, min(len(nodes), width)):
                    gpus = [g for g in t.node_gpus(v) if g not in test and g not in self.banned]
                    self.rng.shuffle(gpus)
                    chosen |= set(gpus[:per])
                if len(chosen) < self.k:
                    near = {t.node(x) for x in chosen}
                    chosen = self._fill(chosen, [g for g in self._pool([]) if t.node(g) in near], post, None, weights)
                if len(chosen) != min(self.k, t.gpus) or (width == 1 and len({t.node(g) for g in chosen}) != 1):
                    continue
                cost = float(self._masses(sorted(chosen), [], weights)[0]) + (0.0 if width == spans else SHAPE_PENALTY)
                if cost < best_cost:
                    best, best_cost = frozenset(chosen), cost
        return best


def shared_stage(
    topology: ReplicaTopology,
    k: int,
    probes: Sequence[frozenset[int]],
    timeline: Sequence[tuple[int, float]],
    gpu_evidence: Sequence[float],
    pair: PairOracle,
    llr: Llr,
    *,
    effect: float,
    confidence: float,
    clear_confidence: float,
    min_accusing: int,
    max_pairs: int,
    duty: float,
    rng: random.Random,
    suspects: Sequence[int] = (),
    exclude: frozenset[int] = frozenset(),
) -> SharedOutcome:
    """Find the faulty NVSwitches, NICs and switches behind a Phase 1 sweep.

    Args:
        topology: where the GPUs sit (no shared component without ``gpus_per_node``).
        k: probe size of every test and reference probe.
        probes: the Phase 1 probes' GPUs.
        timeline: every Phase 1 measurement in the order taken, ``(probe index, log latency)``.
        gpu_evidence: per GPU, its Phase 1 log-likelihood ratio (orders pads, healthiest first).
        pair: the pair oracle.
        llr: ``EvidenceModel.llr`` (datum, duty) of the paired tests.
        effect: log of the smallest slowdown that is a fault.
        confidence: posterior a blame needs; ``clear_confidence`` the posterior of "none"
            that rejects the candidates.
        min_accusing: pairs that came out as the blamed component predicts, at least.
        max_pairs: twice this many paired tests per search before it is inconclusive (a
            search weighs many components at once).
        duty: share of measurements in which a faulty component is assumed slow.
        rng: the padding and reference draws.
        suspects: indices of the suspect Phase 1 probes: an NVSwitch that one of them holds
            through three or more GPUs is a candidate even where too few probes hold it for
            a contrast (a cover may hold a node's every pair in one probe).
        exclude: GPUs never used as pads or references.

    Returns:
        A :class:`SharedOutcome`.
    """
    out = SharedOutcome()
    components = topology.shared_components()
    if not components or not timeline:
        return out
    rejected: set[Component] = set()
    elsewhere: list[Component] = []  # GPUs and links a search found slow, left to the later stages
    for _ in range(MAX_CANDIDATES):
        scores = component_contrast(topology, components, probes, timeline, explained=[*out.confirmed, *elsewhere])
        known = set(out.confirmed) | rejected
        ranked = sorted(((c, d, z) for c, d, z in scores if c not in known), key=lambda s: (-s[2], -s[1]))
        live = [c for c, d, z in ranked if d >= effect / 2 and z >= MIN_Z]
        has_nvswitch = topology.gpus_per_node is not None and topology.gpus_per_node > 1
        for i in suspects if has_nvswitch else ():
            p = probes[i]
            if any(topology.holds(x, p) for x in [*out.confirmed, *elsewhere]):
                continue
            for v in sorted({topology.node(g) for g in p}):
                c = topology.nvswitch(v)
                if c not in known and c not in live and len(c.members & p) >= 3:
                    live.append(c)
        if not live:
            break
        live = live[:16]
        rivals = [c for c, d, z in ranked if c not in live and d > 0 and z >= MIN_Z / 2][: 24 - len(live)]
        under = {g for c in live for g in c.members} - exclude - {g for c in elsewhere for g in c.members}
        gpus = sorted(under, key=lambda g: (-gpu_evidence[g], g))
        # every GPU of a node-sized candidate (an NVSwitch, a NIC) is a rival, whatever its Phase 1
        # evidence (a switch fault beside it can hide a slow GPU's); of larger ones, the likeliest
        whole = {g for c in live if len(c.members) <= MAX_GPU_RIVALS for g in c.members} & under
        picked = [g for g in gpus if g in whole] + [g for g in gpus[:MAX_GPU_RIVALS] if g not in whole and gpu_evidence[g] > 0]
        hyps = [*live, *rivals, *(gpu_component(g) for g in picked[: 2 * MAX_GPU_RIVALS])]
        for c in live:  # a node's links are what its NVSwitch carries: each is a rival
            if c.kind == ComponentKind.NVSWITCH:
                members = sorted(c.members)
                hyps += [
                    Component(ComponentKind.LINK, (a, b), frozenset((a, b)))
                    for i, a in enumerate(members)
                    for b in members[i + 1 :]
                ]
        banned = set(exclude) | {g for c in [*out.confirmed, *elsewhere] for g in c.members}
        healthy = sorted((g for g in range(topology.gpus) if g not in banned), key=lambda g: (gpu_evidence[g], g))
        search = _Search(topology, min(k, topology.gpus), llr, duty, pair, rng, healthy, hyps, frozenset(banned))
        verdict = _decide(search, out, effect, confidence, clear_confidence, min_accusing, max_pairs)
        if isinstance(verdict, Component):  # a GPU or link: the later stages judge it; the rest go on without it
            elsewhere.append(verdict)
        elif verdict is None:
            rejected |= {h for h in hyps if h.shared}
        elif verdict == "inconclusive":
            break
    return out


def _aliases(search: _Search, best: Component) -> list[Component]:
    """The shared hypotheses that carry exactly the paths ``best`` carries (``best`` first)."""
    t = search.topology
    pairs = [(a, b) for a in range(t.gpus) for b in range(a + 1, t.gpus)]
    shared = [best, *(h for h in search.hyps if h.shared and h is not best)]
    held = t.holds_matrix(shared, pairs)
    return [h for j, h in enumerate(shared) if (held[:, j] == held[:, 0]).all()]


def _decide(
    search: _Search,
    out: SharedOutcome,
    effect: float,
    confidence: float,
    clear_confidence: float,
    min_accusing: int,
    max_pairs: int,
) -> str | Component | None:
    """Run one search to its end: ``"confirmed"``, ``"inconclusive"``, the GPU or link that
    won (a fault the later stages judge on their own), or ``None`` (nothing explains it)."""
    errors = 0
    while True:
        post = search.posterior()
        best = max(search.hyps, key=lambda h: post[h])
        accused = search.accusing(best, effect)
        if post[best] >= confidence and len(accused) >= min_accusing:
            if best.shared:
                slowdown = math.exp(statistics.median(accused))
                evidence = search.accusing_tests(best, effect)
                out.findings.append(
                    SharedFinding(best, Status.CONFIRMED, post[best], slowdown, len(search.tests), None, evidence)
                )
                out.confirmed.append(best)
                return "confirmed"
            return best  # a GPU or a link: the later stages test it on its own
        if post[None] >= clear_confidence:
            return None
        shared_mass = sum(post[h] for h in search.hyps if h.shared)
        could_alias = best.shared and post[best] < confidence <= shared_mass  # else no need to look
        aliases = _aliases(search, best) if could_alias else [best]
        if len(aliases) > 1 and sum(post[h] for h in aliases) >= confidence and len(accused) >= min_accusing:
            # components that carry the same paths (the two NICs of a two-node replica): no
            # probe tells them apart; the fault is in one of them, each is reported so
            names = ", ".join(search.topology.name(h) for h in aliases)
            observed = math.exp(statistics.median(accused))
            for h in aliases:
                reason = f"{names} carry the same paths: no probe can tell them apart"
                evidence = search.accusing_tests(h, effect)
                out.findings.append(SharedFinding(h, Status.INCONCLUSIVE, post[h], observed, len(search.tests), reason, evidence))
                out.unresolved_gpus |= set(h.members)
            return "inconclusive"
        if len(search.tests) >= 2 * max_pairs or errors >= 3:
            if best.shared and post[best] >= 0.5:
                reason = (
                    "probes failed"
                    if errors >= 3
                    else f"{len(search.tests)} paired tests left the evidence at confidence {confidence_text(post[best])}"
                )
                seen = math.exp(statistics.median(accused)) if accused else None
                out.findings.append(SharedFinding(best, Status.INCONCLUSIVE, post[best], seen, len(search.tests), reason))
                out.unresolved_gpus |= set(best.members)
                return "inconclusive"
            return None
        # a leading hypothesis is put to its own test (as the GPU stage's SPRT); before one
        # leads, the test splits the posterior mass nearest in half
        ranked = sorted(search.hyps, key=lambda h: -post[h])
        if post[best] >= 0.5:  # tell the leader from the runner-up: a test holding one of them only
            runner_up = ranked[1] if len(ranked) > 1 and post[ranked[1]] > post[None] else None
            pair_up = [best] if runner_up is None else [best, runner_up]
            menu = [t for h in pair_up if (t := search.isolating(h, post)) is not None]
            apart = [
                t
                for t in menu
                if len(pair_up) > 1 and search.topology.holds(pair_up[0], t) != search.topology.holds(pair_up[1], t)
            ]
            menu = apart or menu[:1]
        else:
            menu = [t for h in ranked[:MENU] if (t := search.isolating(h, post)) is not None]
        if not menu:
            errors = 3
            continue
        test = min(menu, key=lambda t: abs(search.mass(t, post) - 0.5))
        reference = search.reference(post, test)
        if reference is None:
            errors = 3
            continue
        out.pairs += 1
        d = search.pair(tuple(sorted(test)), tuple(sorted(reference)))
        if d is None:
            errors += 1
            continue
        search.tests.append((test, reference, d))
