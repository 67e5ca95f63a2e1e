"""Anchoring a degraded sweep on its fast probes: a few slow components, or a slow replica?

When most Phase 1 probes are slow the median probe is slow, and a suspect rule reports the
replica ``replica_degraded`` rather than guess. At small n with several faults this is often
wrong: at n = 25, k = 8 (13 probes, each GPU in about 4 of them) four slow GPUs slow ~80% of
the probes. The three cases look alike to a median but not to a cover:

* a **uniform shift** (load, a slower model): every probe moves alike, one cluster, no
  suspect -- the rule never reports it degraded in the first place;
* **a few slow components**: the probes that avoid them form a tight *fast cluster*, well
  apart from the rest (:func:`~faultsense_pipelines.localize.suspects.fast_cluster_verdict`), and
  those probes hold most of the GPUs;
* **many slow components** (every GPU slowed by its own amount): no tight cluster stands
  apart, or the one that does holds too few GPUs to speak for the replica.

:func:`anchor_sweep` takes the fast cluster as healthy, exonerates every GPU and link in its
probes, and accepts it only when the candidates left can explain the slow probes
parsimoniously:

1. every slow probe holds a candidate (a GPU or link no fast probe holds) -- otherwise the
   fast cluster cannot be healthy and the slow probes explained;
2. the fast probes exonerate a strict majority of the GPUs, i.e. fewer than n/2 GPUs are
   left as candidates.

Why n/2. Latency alone cannot tell "the cluster's GPUs are healthy and a few others slow"
from "every GPU is slowed, the cluster's a little less": a uniform factor is invisible. The
paper's rule settles this by convention, taking what most *probes* show as healthy; we take
what most *GPUs* show. When the fast cluster vouches for a majority of the GPUs, a fault is
a component slower than most of the replica, the same meaning as with a healthy majority of
probes, and at most n/2 - 1 GPUs can be blamed. When it vouches for n/2 or fewer, most of
the replica may be as slow as the slow probes and that is what "degraded" means. A smaller
bound (n/8, say) would refuse the very cases at issue: at n = 25, k = 8 the 2-4 probes that
avoid four slow GPUs exonerate only 14-21 GPUs, leaving 4-11 candidates (n/8 = 3). The bound
costs nothing in precision: Phase 2 still confirms each candidate with probes padded by
exonerated GPUs, judged against the fast cluster's baseline (with repeats, against a fast
probe measured in alternation), so no candidate is blamed without its own failing probes.

Padding. A fast cluster of a few probes exonerates many GPUs but few links (only those
inside one fast probe), so the drill-down would find little *clean* padding (exonerated GPUs
whose links to each other are exonerated too) and give up on candidates. Before the
drill-down of an anchored sweep, :func:`healthy_cross_probes` plans probes made only of
exonerated GPUs that cover the links between them. Under the hypothesis they pass at the
fast cluster's baseline and exonerate those links; one that fails holds a slow link between
exonerated GPUs and becomes one more suspect group. They are also a fresh check of the
hypothesis (:func:`refutes_anchor`): if their slowness needs more slow links than half
their number, the fast cluster was a lucky draw of fast measurements (noise), not a
healthy baseline, and the replica is reported degraded after all.

References:
    FaultSense (APSys '26), §4.2 (suspect rule, healthy-majority assumption) and §4.3
    (exoneration by passing probes, padding with healthy GPUs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

from ..cover import plan_cover
from ..measure.threshold import probe_latency_ms, probe_zone
from ..replica.topology import Link
from .suspects import AnchoringRule, SuspectRule, SuspectVerdict

__all__ = ["anchor_sweep", "explains_slow_probes", "healthy_cross_probes", "refutes_anchor"]


def explains_slow_probes(gpus: int, probes: Sequence[Sequence[int]], slow: Sequence[int]) -> bool:
    """True when the fast probes may be healthy and the slow ones explained by few candidates.

    Everything in a probe not in ``slow`` is exonerated. The hypothesis holds when (1) every
    slow probe holds a GPU or link no fast probe holds, and (2) the fast probes hold more
    than ``gpus`` / 2 distinct GPUs (see the module docstring for the bound).

    Args:
        gpus: n, GPUs in the replica.
        probes: GPU ids of each judged probe.
        slow: indices into ``probes`` of the slow ones.

    Returns:
        Whether both conditions hold.

    Raises:
        ValueError: if an index in ``slow`` is outside ``probes``.

    Notes:
        O(P k^2) for P probes of k GPUs.

    >>> explains_slow_probes(8, [(0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 4, 5), (2, 3, 6, 7)], [1, 2, 3])
    False
    >>> explains_slow_probes(8, [(0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 4, 5), (2, 3, 6, 7)], [1, 3])
    True
    """
    bad = set(slow)
    if any(not 0 <= i < len(probes) for i in bad):
        raise ValueError(f"slow probe indices must lie in 0..{len(probes) - 1}, got {sorted(bad)}")
    ok_gpus: set[int] = set()
    ok_links: set[Link] = set()
    for i, p in enumerate(probes):
        if i not in bad:
            gs = sorted(set(p))
            ok_gpus.update(gs)
            ok_links.update(combinations(gs, 2))
    if 2 * len(ok_gpus) <= gpus:
        return False
    for i in bad:
        gs = sorted(set(probes[i]))
        if all(g in ok_gpus for g in gs) and all(e in ok_links for e in combinations(gs, 2)):
            return False
    return True


def anchor_sweep(
    rule: SuspectRule, latencies_ms: Sequence[Sequence[float]], probes: Sequence[Sequence[int]], gpus: int
) -> SuspectVerdict | None:
    """Re-judge a sweep a rule called degraded against its fast cluster, if that is sound.

    Args:
        rule: the suspect rule; one without an ``anchor`` method
            (:class:`~faultsense_pipelines.localize.suspects.AnchoringRule`) is never anchored.
        latencies_ms: per judged probe, its repeats, ms.
        probes: per judged probe, its GPU ids (same order and length as ``latencies_ms``).
        gpus: n, GPUs in the replica.

    Returns:
        The fast cluster's verdict (its baseline and threshold, the other probes suspect, not
        degraded) when the cluster exists and :func:`explains_slow_probes` holds, with the
        fast probes above the root of the threshold (which Phase 1 measures again) counted
        as slow; ``None`` when the replica should stay degraded.

    Raises:
        ValueError: if ``probes`` and ``latencies_ms`` differ in length.

    >>> from faultsense_pipelines.localize.suspects import MedianRatioRule
    >>> probes = [(0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 4, 5), (2, 3, 6, 7), (0, 1, 6, 7), (2, 3, 4, 5)]
    >>> slow_gpu_7 = [[20.0], [30.0], [20.0], [30.0], [30.0], [20.0]]  # the median (25 ms) is slow
    >>> MedianRatioRule().judge(slow_gpu_7).replica_degraded
    True
    >>> anchor_sweep(MedianRatioRule(), slow_gpu_7, probes, 8).suspects
    (1, 3, 4)
    """
    if len(probes) != len(latencies_ms):
        raise ValueError(f"{len(probes)} probes but {len(latencies_ms)} latency lists")
    if not isinstance(rule, AnchoringRule):
        return None
    verdict = rule.anchor(latencies_ms)
    if verdict is None:
        return None
    # a fast probe above the root of the threshold is measured again and may turn suspect:
    # it exonerates nothing until it has passed
    b, t = verdict.baseline_ms, math.log(verdict.threshold_ms / verdict.baseline_ms)
    undecided = [i for i, r in enumerate(latencies_ms) if probe_zone(math.log(probe_latency_ms(r) / b), t) != "pass"]
    return verdict if explains_slow_probes(gpus, probes, undecided) else None


def healthy_cross_probes(passed: Sequence[Sequence[int]], k: int) -> list[tuple[int, ...]]:
    """Probes of k exonerated GPUs covering every link between them not yet exonerated.

    Args:
        passed: GPU ids of the probes that passed (everything in them is exonerated).
        k: probe size.

    Returns:
        GPU tuples (each sorted) of exactly ``k`` GPUs, all from ``passed``, such that every pair of
        exonerated GPUs lies in a passed probe or in one of them; probes whose pairs are all
        exonerated already are left out. Empty when fewer than ``k`` GPUs are exonerated.

    Notes:
        The probes are the ``best`` cover of the E exonerated GPUs (relabelled), so there
        are about L(E, k) = ceil(E/k ceil((E-1)/(k-1))) of them: 4 for E = 15, k = 8.

    >>> probes = healthy_cross_probes([(0, 1, 2), (3, 4, 5)], 3)
    >>> all(any({a, b} <= set(p) for p in probes) for a in (0, 1, 2) for b in (3, 4, 5))
    True
    >>> sorted({len(p) for p in probes})
    [3]
    >>> healthy_cross_probes([(0, 1)], 3)
    []
    """
    exonerated = sorted({g for p in passed for g in p})
    if len(exonerated) < k or k < 2:
        return []
    ok_links = {e for p in passed for e in combinations(sorted(set(p)), 2)}
    probes = []
    for probe in plan_cover(len(exonerated), k, "best").probes:
        gpus = tuple(exonerated[i] for i in probe)
        if any(e not in ok_links for e in combinations(gpus, 2)):
            probes.append(gpus)
    return probes


def refutes_anchor(passed: Sequence[Sequence[int]], cross: Sequence[Sequence[int]], outcomes: Sequence[bool | None]) -> bool:
    """True when the cross probes of an anchored sweep refute its fast cluster.

    Under the hypothesis only a slow link between two exonerated GPUs can slow a cross probe,
    and one slow link slows every cross probe holding it. The fast cluster is refuted when
    a slow one has no candidate link at all (a pair of its GPUs in no passing probe, Phase 1
    or cross), or when more than half of the measured cross probes are slow and explaining
    them takes more candidate links than half their number (a greedy hitting set; for two
    or three slow probes: no single link in all of them). A baseline taken from the fast tail
    of noisy measurements makes most of them slow, each for its own reason; a few real slow
    links each slow several cross probes (the cross probes' cover repeats pairs).

    Args:
        passed: GPU ids of the fast (passing) Phase 1 probes.
        cross: the probes of :func:`healthy_cross_probes`.
        outcomes: per cross probe, True (slow), False (passed) or None (not measured).

    Returns:
        Whether the slow cross probes refute the fast cluster.

    >>> cross = [(0, 1, 3), (0, 2, 4), (1, 2, 5), (3, 4, 5)]
    >>> refutes_anchor([(0, 1, 2), (3, 4, 5)], cross, [True, True, True, False])  # 3 slow, no shared link
    True
    >>> refutes_anchor([(0, 1, 2), (3, 4, 5)], [(0, 3, 6), (0, 3, 7), (1, 4, 5)], [True, True, False])  # (0, 3)
    False
    >>> cross = [(0, 3, 6), (0, 3, 7), (1, 4, 8), (1, 4, 9), (2, 5, 6)]
    >>> refutes_anchor([(0, 1, 2), (3, 4, 5)], cross, [True, True, True, True, False])  # (0, 3) and (1, 4)
    False
    """
    if len(cross) != len(outcomes):
        raise ValueError(f"{len(cross)} cross probes but {len(outcomes)} outcomes")
    measured = sum(o is not None for o in outcomes)
    ok = {
        e
        for p, o in zip((*passed, *cross), (*[False] * len(passed), *outcomes))
        if o is False
        for e in combinations(sorted(set(p)), 2)
    }
    slow = [{e for e in combinations(sorted(set(p)), 2) if e not in ok} for p, o in zip(cross, outcomes) if o]
    if any(not pairs for pairs in slow):  # slow, with every link exonerated: not explainable
        return True
    return 2 * len(slow) > measured and 2 * _hitting_links(slow) > len(slow)


def _hitting_links(sets: list[set[tuple[int, int]]]) -> int:
    """Links a greedy hitting set needs to meet every set (each round: the link in most sets)."""
    left, count = list(sets), 0
    while left:
        best = max(sorted(set().union(*left)), key=lambda e: sum(e in s for s in left))
        left = [s for s in left if best not in s]
        count += 1
    return count
