"""Adaptive Phase 2 drill-down: exonerate, then group testing by halving.

A probe fails iff it holds a faulty GPU or both ends of a faulty link, so a *minimal* failing
GPU set has one GPU (a faulty GPU) or two (a faulty link). Starting from a suspect group, we
keep the half that still fails (delta debugging), and when both halves pass the fault is a
link across them, found by halving each side in turn. Each fault costs O(log k) probes
instead of the paper's O(k^2). After a fault is found, the rest of the group is re-tested
without it (for a link (a, b): the group minus a and the group minus b), so several faults
in one group are all found, and no component is ever blamed for an unrelated fault.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ...replica.vocabulary import ComponentKind, Status
from .common import DrilldownResult, Knowledge, Oracle, Unmeasurable
from .recheck import plan_recheck

__all__ = ["adaptive_drilldown"]

#: A GPU in no passing probe is tested alone first (two probes) only when it is in at
#: least this many suspect groups sharing nothing but it: more than the d <= 4 faults of
#: one sweep can explain without it. Elsewhere two slow links at one healthy GPU could
#: fail both of its padded probes, and group testing inside its groups pins them.
_DIRECT_MIN_GROUPS = 5


def adaptive_drilldown(
    n: int,
    k: int,
    passed: Sequence[Sequence[int]],
    failed: Sequence[Sequence[int]],
    test: Oracle,
    *,
    recheck_explained: bool = True,
) -> DrilldownResult:
    """Localize every fault behind the suspect groups with adaptive group testing.

    Args:
        n: GPUs in the replica.
        k: probe size.
        passed: GPU sets of the Phase 1 probes that passed; everything in them is exonerated.
        failed: GPU sets of the suspect Phase 1 probes (suspect groups).
        test: Phase 2 oracle, ``test(gpus) -> True`` when slow, ``False`` when it passed,
            ``None`` when unmeasured.
        recheck_explained: judge every candidate left in the suspect groups once the
            faults that explain them are found (default): the links hidden behind a slow
            GPU or link were only ever probed next to it. They are packed into as few
            probes of k GPUs as :func:`~.recheck.plan_recheck` finds (at most one per
            suspect group, about (n-1)/(k-1) per slow GPU; fewer where the cover has
            lambda > 1). Without it a slow link hidden there is missed (the paper's
            accounting).

    Returns:
        A :class:`DrilldownResult`: confirmed GPUs and links; links between two faulty GPUs
        masked; candidates that could not be probed (error, no clean padding) inconclusive.

    Examples:
        The paper's Figure 2d (n=8, k=4, path (3, 4) slow): halves (2, 3) and (4, 5) pass,
        (2, 4, 5) passes, (3, 4) fails and pins the path, a second probe of (3, 4) with
        other padding confirms it, and a sixth clears (3, 5), the one link of the group
        still untested:

        >>> cover = [(0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 4, 5), (2, 3, 6, 7), (0, 1, 6, 7), (2, 3, 4, 5)]
        >>> r = adaptive_drilldown(8, 4, cover[:5], cover[5:], lambda gpus: 3 in gpus and 4 in gpus)
        >>> [(f.gpu, f.peer_gpu, str(f.status)) for f in r.findings], r.tests
        ([(3, 4, 'confirmed')], 6)

    Notes:
        Order: a GPU in no passing probe (every slow GPU is one) is tested alone first,
        two probes to confirm it; then each suspect group not explained by a confirmed
        fault is split until one fault is found; then the packed re-check.
        Every Phase 2 probe is padded to k GPUs with exonerated GPUs whose links among
        themselves and to the test's exonerated GPUs are exonerated, so a failure can only
        come from candidates. A GPU is confirmed only when it fails with three disjoint
        paddings (two where too few GPUs are exonerated; slow links to one padding GPU each
        cannot explain all three), a link with two
        cleanly padded probes (one noisy probe cannot explain both). Probes per fault:
        about 2 log2 k + 3; a suspect group with nothing left to find costs one probe.

    References:
        FaultSense (APSys '26), §4.3 (drill-down and the intersection pitfall);
        A. Zeller and R. Hildebrandt, "Simplifying and isolating failure-inducing input",
        IEEE TSE 28(2), 2002 (delta debugging); D.-Z. Du and F. K. Hwang, "Combinatorial
        Group Testing and Its Applications", 2nd ed., 2000 (adaptive group testing).
    """
    kn = Knowledge(n, k, passed, test, failed)
    for g in sorted(_never_passed(kn, failed), key=lambda g: (-kn.fails[g], g)):
        if not kn.candidate_gpu(g) or _disjoint_groups(failed, g) < _DIRECT_MIN_GROUPS:
            continue
        try:  # in no passing probe: test it alone before halving groups
            _confirm_gpu(kn, g, set())
        except Unmeasurable:
            continue  # too few exonerated GPUs yet: the group testing below pins it
    for group in failed:
        if not (kn.bad_gpu.intersection(group) or kn.known_fault_inside(group)):
            _resolve_group(kn, set(group), retest=not recheck_explained)
    if recheck_explained:
        _packed_recheck(kn, failed)
        left = len(kn.unsure_gpu) + len(kn.unsure_link)
        while left and _retry_inconclusive(kn):  # each pass exonerates more to pad with
            _packed_recheck(kn, failed)
            left, before = len(kn.unsure_gpu) + len(kn.unsure_link), left
            if left >= before:
                break
        _recheck_stars(kn)
    return kn.result()


def _recheck_stars(kn: Knowledge) -> None:
    """Re-test alone each exonerated GPU at two or more confirmed links.

    Under noise a slightly slow GPU can pass a probe, be exonerated, and have its slowness
    blamed on the links of every later probe it fails: a star of "slow links". The GPU is
    tested alone twice with disjoint paddings away from the star's other ends
    (:func:`_star_center_fails`); two failures make it the fault and its links unjudged
    (their verdicts are withdrawn). Real slow links at a healthy GPU pass the first probe:
    one probe each.
    """
    ends = Counter(g for e in kn.bad_link for g in e)
    for x in sorted(g for g, c in ends.items() if c >= 2 and g not in kn.bad_gpu):
        partners = {g for e in kn.bad_link if x in e for g in e} - {x}
        try:
            evidence = _star_center_fails(kn, x, partners)
        except Unmeasurable:
            continue
        if evidence is None:
            continue
        star = {e for e in kn.bad_link if x in e}
        kn.bad_link -= star
        kn.findings = [f for f in kn.findings if not (f.kind == ComponentKind.LINK and (f.gpu, f.peer_gpu) in star)]
        kn.ok_gpu.discard(x)
        kn.confirm_gpu(x, evidence)


def _star_center_fails(kn: Knowledge, x: int, partners: set[int]) -> int | None:
    """Index of the first of two failing probes of ``x`` alone with disjoint paddings, or None.

    Paddings avoid ``partners`` (the star's other ends), strictly and cleanly while the
    star is small enough to be real slow links. A star of ``_DIRECT_MIN_GROUPS`` links or
    more, more than one sweep's faults, is taken for one slow GPU (parsimony): its
    paddings may hold partners and need not be clean, as every link of ``x`` may be in it.
    """
    if len(partners) < _DIRECT_MIN_GROUPS:
        if not kn.test_alone({x}, avoid=partners, must_avoid=partners):
            return None
        evidence = kn.tests - 1
        return evidence if kn.second_opinion(x, evidence, avoid=partners) else None
    if not kn.test({x}, avoid=partners):
        return None
    evidence = kn.tests - 1
    return evidence if kn.test({x}, avoid=partners, must_avoid=set(kn.probes[-1]) - {x}) else None


def _retry_inconclusive(kn: Knowledge) -> bool:
    """Judge again what the group testing left inconclusive, now that more is exonerated.

    A link given up for want of clean padding (its ends' links to every padding GPU still
    candidates, e.g. behind a second slow link at one end) usually has clean padding once
    the re-check has exonerated the links around it. Returns True when something was retried.
    """
    retry = [f for f in kn.findings if f.status == Status.INCONCLUSIVE]
    if not retry:
        return False
    kn.findings = [f for f in kn.findings if f.status != Status.INCONCLUSIVE]
    kn.unsure_gpu.clear()
    kn.unsure_link.clear()
    for f in retry:
        try:
            if f.peer_gpu is None:
                _confirm_gpu(kn, f.gpu, set())
            elif kn.candidate_link(f.gpu, f.peer_gpu):
                _confirm_link(kn, (f.gpu, f.peer_gpu), set())
        except Unmeasurable:
            kn.give_up({f.gpu} if f.peer_gpu is None else {f.gpu, f.peer_gpu})
    return True


def _never_passed(kn: Knowledge, failed: Sequence[Sequence[int]]) -> set[int]:
    """GPUs of the suspect groups that are in no passing probe (every slow GPU is one)."""
    return {g for group in failed for g in group if kn.candidate_gpu(g)}


def _disjoint_groups(failed: Sequence[Sequence[int]], g: int) -> int:
    """Suspect groups of ``g`` that share no GPU but ``g`` (a greedy packing).

    Each fault other than ``g`` itself (a slow GPU, a slow link, one at ``g`` included)
    slows at most one of them, so more of them than faults means ``g`` is slow.
    """
    seen: set[int] = set()
    count = 0
    for group in sorted((set(p) - {g} for p in failed if g in p), key=len):
        if not group & seen:
            seen |= group
            count += 1
    return count


def _packed_recheck(kn: Knowledge, failed: Sequence[Sequence[int]]) -> None:
    """Judge every candidate left in the suspect groups with packed probes.

    The candidates are the links hidden behind a confirmed fault (see :mod:`.recheck`).
    Each planned probe that passes exonerates all it holds; one that fails holds a fault
    among its candidates (its padding is clean, it holds no faulty GPU and no known faulty
    link) and is split by :func:`_isolate`. Planning repeats until no candidate is left.
    """
    for _ in range(4 * kn.k * kn.k):  # rounds; each judges a candidate unless probes are noisy
        pieces = [w for w in (kn.core(group) for group in failed) if w]
        if not pieces:
            return
        links = {e for w in pieces for e in kn.candidate_links(w)}
        before = (len(kn.findings), len(links), sum(map(len, pieces)))
        for planned in plan_recheck(pieces, links, kn.k, kn.bad_link | kn.unsure_link):
            w = kn.core(planned)
            if not w or kn.known_fault_inside(w):
                continue  # judged meanwhile, or a fault found this round: plan again
            try:
                if kn.test(w):
                    _isolate(kn, w if kn.last_clean else kn.core(kn.probes[-1]))
            except Unmeasurable:
                kn.give_up(w)
        pieces = [w for w in (kn.core(group) for group in failed) if w]
        links = {e for w in pieces for e in kn.candidate_links(w)}
        if before == (len(kn.findings), len(links), sum(map(len, pieces))):
            break  # a round judged nothing: failures the group testing cannot pin
    kn.give_up(set().union(*(kn.core(group) for group in failed)))


def _resolve_group(kn: Knowledge, group: set[int], retest: bool = True) -> None:
    """Find every fault among the candidates of one suspect group.

    With ``retest`` the rest of the group is re-tested after each fault found, until it
    passes; without, only the first fault is found (the packed re-check judges the rest).
    """
    stack: list[tuple[set[int], bool]] = [(group, True)]  # (GPU set, known to fail)
    budget = 4 * kn.k * kn.k  # guard against noise-driven loops; ample for d <= k faults
    while stack and budget > 0:
        gpus, known_fail = stack.pop()
        # a failure already explained by a confirmed fault says nothing about the rest
        known_fail = known_fail and not (gpus & kn.bad_gpu or kn.known_fault_inside(gpus))
        w = kn.core(gpus)
        if not w:
            continue
        bad = kn.known_fault_inside(w)
        if bad is not None:  # re-test the rest without the known faulty link
            stack += [(w - {bad[0]}, False), (w - {bad[1]}, False)]
            continue
        start = kn.tests
        try:
            if not known_fail and not kn.test(w, avoid=gpus):
                continue
            _isolate(kn, w)
        except Unmeasurable:
            kn.give_up(w)
            continue
        budget -= max(1, kn.tests - start)
        if retest:
            stack.append((w, False))  # re-test the rest of the group without what was found
    if stack:
        kn.give_up(set().union(*(g for g, _ in stack)))


def _isolate(kn: Knowledge, w: set[int]) -> None:
    """``w`` fails: find one minimal failing set inside it and confirm it."""
    context = set(w)
    while True:
        w = kn.core(w)
        if len(w) <= 1:
            break
        a, b = _halves(w)
        if kn.test(a, avoid=w):  # pad from outside w, or the test would not be of a alone
            w = a
            continue
        if kn.test(b, avoid=w):
            w = b
            continue
        a, b = a & kn.core(w), b & kn.core(w)  # both halves passed: a link across them
        if not a or not b:
            return
        w = _isolate_cross(kn, a, b)
        break
    if len(w) == 1:
        _confirm_gpu(kn, next(iter(w)), context)
    elif len(w) == 2:
        lo, hi = sorted(w)
        _confirm_link(kn, (lo, hi), context)


def _isolate_cross(kn: Knowledge, a: set[int], b: set[int]) -> set[int]:
    """A fault lies on a link between ``a`` and ``b`` (each side healthy inside): find its ends."""
    while len(a) > 1:
        a1, a2 = _halves(a)
        a = a1 if kn.test(a1 | b, avoid=a) else a2 & kn.core(a2 | b)
        a = a or a1  # nothing left on that side: the failure was noise; confirm will tell
    while len(b) > 1:
        b1, b2 = _halves(b)
        b = b1 if kn.test(a | b1, avoid=b) else b2 & kn.core(a | b2)
        b = b or b1
    return a | b


def _confirm_gpu(kn: Knowledge, g: int, context: set[int]) -> None:
    """Confirm GPU ``g`` with three cleanly padded probes over disjoint paddings.

    A slow link from ``g`` to one padding GPU cannot fail two of them, nor two slow links
    all three (two slow links at a healthy GPU, one in each of two paddings, would fail
    two); if one passes, ``g`` is exonerated and its slow links are found when the group is
    re-tested. Where too few exonerated GPUs leave no third disjoint padding (small
    replicas), two failures confirm ``g``.
    """
    last = kn.last_fail
    if last is not None and last[0] == {g} and last[1]:
        evidence = last[2]
    else:
        if not kn.test({g}, avoid=context):
            return
        if not kn.last_clean:
            kn.give_up({g})
            return
        evidence = kn.tests - 1
    verdict = kn.second_opinion(g, evidence, avoid=context)
    if verdict:
        used = (set(kn.probes[evidence]) | set(kn.probes[-1])) - {g}
        try:
            third = kn.test({g}, avoid=context, must_avoid=used)
        except Unmeasurable:  # no third disjoint padding: two failures decide
            third = True
        if third:
            kn.confirm_gpu(g, evidence)
    elif verdict is None:
        kn.give_up({g})


def _confirm_link(kn: Knowledge, e: tuple[int, int], context: set[int]) -> None:
    """Confirm link ``e`` between two exonerated GPUs with two cleanly padded probes.

    The second probe is an independent measurement (padding away from the first), so one
    noisy slow probe cannot blame a healthy link. An end that failed more probes than it
    passed is re-tested alone first: under noise a slow GPU can pass once, and its slowness
    must not be blamed on its links.
    """
    if any(kn.recheck_gpu(g, context) for g in e if kn.doubtful(g)):
        return
    if e in kn.confirming:  # widening led back to this link: no clean verdict is to be had
        kn.give_up(set(e))
        return
    kn.confirming.add(e)
    try:
        _confirm_link_once(kn, e, context)
    finally:
        kn.confirming.discard(e)


def _confirm_link_once(kn: Knowledge, e: tuple[int, int], context: set[int]) -> None:
    last = kn.last_fail
    if last is not None and last[1] and _only_candidate(kn, last[0], e):
        evidence = last[2]
    else:
        probe = kn.widen(e, context)
        if probe is not None:  # a slow link from e[0] to a widening GPU: find it first
            _isolate(kn, probe)
        verdict = kn.test_alone(set(e), avoid=context)
        if not verdict:
            if verdict is None:
                kn.give_up(set(e))
            return
        evidence = kn.tests - 1
    verdict = kn.test_alone(set(e), avoid=context | set(kn.probes[evidence]))
    if verdict:
        kn.confirm_link(e, evidence)
    elif verdict is None:
        kn.give_up(set(e))


def _only_candidate(kn: Knowledge, gpus: frozenset[int], e: tuple[int, int]) -> bool:
    """Link ``e`` is all a cleanly padded failure over ``gpus`` can still blame.

    Probes that passed after it (the last halving steps) may have exonerated the rest of
    ``gpus``: then that failure already pins ``e`` and needs no repeat.
    """
    if not set(e) <= gpus or any(kn.candidate_gpu(g) for g in gpus):
        return False
    return kn.candidate_links(gpus) == [e]


def _halves(w: set[int]) -> tuple[set[int], set[int]]:
    s = sorted(w)
    mid = (len(s) + 1) // 2
    return set(s[:mid]), set(s[mid:])
