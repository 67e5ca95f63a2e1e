"""The paper's Phase 2 drill-down (FaultSense, APSys '26, §4.3, Algorithm 2).

For each suspect group (a slow Phase 1 probe), every component not yet exonerated -- its k
GPUs, then its k(k-1)/2 links -- is tested alone in a size-k probe padded with known-healthy
GPUs; a failure pins that component, a pass exonerates everything in the probe.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from functools import partial
from itertools import combinations

from .common import DrilldownResult, Knowledge, Oracle, Unmeasurable

__all__ = ["paper_drilldown"]


def paper_drilldown(
    n: int, k: int, passed: Sequence[Sequence[int]], failed: Sequence[Sequence[int]], test: Oracle
) -> DrilldownResult:
    """Localize faults one component at a time, as in the paper's Algorithm 2.

    Args:
        n: GPUs in the replica.
        k: probe size.
        passed: GPU sets of the Phase 1 probes that passed.
        failed: GPU sets of the suspect Phase 1 probes (suspect groups).
        test: Phase 2 oracle, ``test(gpus) -> True`` when slow, ``False`` when it passed,
            ``None`` when unmeasured.

    Returns:
        A :class:`DrilldownResult`: confirmed GPUs and links; links between two faulty GPUs
        masked; components whose probe errored or could not be padded inconclusive.

    Examples:
        The paper's Figure 2d: n=8, k=4, greedy cover, path (3, 4) slow. Only probe
        (2, 3, 4, 5) is slow; its GPUs and links (2, 3), (4, 5) passed elsewhere, so four
        links remain and four probes find the path.

        >>> cover = [(0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 4, 5), (2, 3, 6, 7), (0, 1, 6, 7), (2, 3, 4, 5)]
        >>> slow = lambda gpus: 3 in gpus and 4 in gpus
        >>> r = paper_drilldown(8, 4, cover[:5], cover[5:], slow)
        >>> [(f.gpu, f.peer_gpu, str(f.status)) for f in r.findings], r.tests
        ([(3, 4, 'confirmed')], 4)

    Notes:
        At most k + k(k-1)/2 probes per suspect group, O(C_s k^2) for C_s groups.
        A GPU that fails with healthy padding is called faulty, as in the paper (a slow link
        from it to the padding would look the same). A suspect group that holds a GPU
        already found faulty is skipped: it is explained, and this is what keeps Phase 2
        proportional to the number of faults, not n (the paper's Figure 3b). The price: a
        slow link whose only Phase 1 probe held a slow GPU is never examined; the adaptive
        method re-tests such groups. When no clean padding exists, one widening probe
        exonerates links to fresh GPUs first; components still without a clean verdict are
        inconclusive. Under noise, an end of a link that failed more probes than it passed is
        re-tested alone first (not in the paper).

    References:
        Harish S A, Vignesh S, A. Kurella, R. Gandhi, P. Tammana, "FaultSense: Fault
        Localization in Large-Scale Mixture-of-Experts Model Serving Infrastructure",
        APSys '26, §4.3, Algorithm 2 and Figure 2d.
    """
    kn = Knowledge(n, k, passed, test, failed)
    for group in failed:
        gpus = sorted(set(group))
        if kn.bad_gpu.intersection(gpus):  # explained by a GPU already found (Figure 3b)
            continue
        for g in gpus:
            if kn.candidate_gpu(g):
                _judge(kn, {g}, group, partial(kn.confirm_gpu, g))
        for a, b in combinations(gpus, 2):
            for end in (a, b):  # noise guard: a slow GPU that once passed is not blamed on its links
                if kn.candidate_link(a, b) and kn.doubtful(end):
                    _try(kn.recheck_gpu, end, group)
            if kn.candidate_link(a, b):
                _try(kn.widen, (a, b), group)
                _judge(kn, {a, b}, group, partial(kn.confirm_link, (a, b)))
    return kn.result()


def _try(step: Callable[..., object], *args: object) -> None:
    with contextlib.suppress(Unmeasurable):
        step(*args)


def _judge(kn: Knowledge, component: set[int], group: Sequence[int], confirm: Callable[[int], object]) -> None:
    try:
        # padding from outside the group when possible; any exonerated GPU is "healthy" to the paper
        verdict = kn.test_alone(component, avoid=group, must_avoid=())
    except Unmeasurable:
        verdict = None
    if verdict is None:  # unmeasured, or every failure may come from a slow padding link
        kn.give_up(component)
    elif verdict:
        confirm(kn.tests - 1)
