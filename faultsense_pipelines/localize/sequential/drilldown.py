"""The sequential drill-down: search proposes, an anytime-valid test disposes.

Phase 2 over a *round oracle* (:data:`~.pairing.RoundOracle`), pure: no executor, no I/O.

1. **Noise gate.** From Phase 1's own spread, estimate how many rounds a claim will need
   (:func:`rounds_needed`); when the budget cannot reach one verdict, stop before spending
   anything and say so.
2. **Proposals.** A shared component (NIC, NVSwitch, leaf switch) most of whose Phase 1
   probes are suspect is proposed first (:func:`shared_proposals`); where the budget cannot
   handle every suspect probe, each is read once more (the *screen*) and those that read
   healthy again are dropped; then a GPU most of whose Phase 1 probes are suspect and that
   no confirmed shared component explains. The suspect probes no confirmed GPU explains
   are searched for their minimal slow sets (a GPU or a link) by adaptive group testing
   (:func:`~..drilldown.adaptive.adaptive_drilldown`) over *quick reads* (a few rounds
   against a reference of the probe's shape, read by their Hodges-Lehmann estimate), or,
   where that is cheaper, read link by link; then, with the budget left, the paths a
   confirmed GPU hid, and once more each probe at least ``min_slowdown`` slow whose search
   proposed nothing. Reads that need not wait for each other share a reference
   (:meth:`_QuickReads.batch`). The search may err under noise; that costs probes or
   power, never validity, because:
3. **Claims.** Each proposal is opened as a claim with a level from the sweep's error
   budget (:class:`~.budget.ErrorBudget`) and decided on fresh rounds by its own test
   (:mod:`.claims`). Only a test that reaches ``1/level`` blames. On a rail-optimized
   replica a confirmed GPU claim shows "the GPU or its rail NIC"; a second claim at a fresh
   level, a reverse test inside the GPU's node (:func:`~.claims.test_rail_nic`), names the
   rail NIC when the GPU is not ``min_slowdown`` slow there (an error of at most the two
   levels' sum); a confirmed rail NIC explains the probes that cross nodes from its GPU.

Guarantee (proof sketch in :mod:`.eprocess` and :mod:`.budget`): if the two probes of every
round are exchangeable whenever their differing parts are healthy, the expected number of
healthy components confirmed in a sweep is at most ``alpha`` -- under any noise, at any
stopping time, whatever the search did.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Container, Sequence, Set
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from ...replica.topology import Component, ReplicaTopology
from ...replica.vocabulary import ComponentKind, Status
from ..drilldown.adaptive import adaptive_drilldown
from ..drilldown.recheck import plan_recheck
from .budget import ErrorBudget, ProbeBudget
from .claims import ClaimResult, _Context, _Rounds, rail_nic, shared_draws, test_gpu, test_link, test_rail_nic, test_shared
from .eprocess import PairedTest, rounds_lower_bound
from .pairing import Layout, RoundOracle, shape, shaped_reference

__all__ = [
    "MIN_CLAIM_ROUNDS",
    "SequentialResult",
    "default_budget",
    "read_rounds",
    "read_threshold",
    "rounds_needed",
    "sequential_drilldown",
    "shared_proposals",
    "shared_read_cost",
]


@dataclass(frozen=True)
class SequentialResult:
    """What the sequential drill-down found.

    Attributes:
        claims: one :class:`~.claims.ClaimResult` per claim opened, in opening order, plus
            ``masked`` links between two confirmed GPUs (status ``masked``, no test).
        probes: Phase 2 probes spent (two per round, quick reads included).
        gate: the noise gate's message when it stopped Phase 2 before it began, else ``None``.
        alpha: the sweep's error budget.
    """

    claims: tuple[ClaimResult, ...]
    probes: int
    gate: str | None
    alpha: float


#: Rounds a claim's sub-test is budgeted at the least, whatever its lower bound: with several
#: measurements a round the bound falls to one or two rounds, which no noisy replica meets.
MIN_CLAIM_ROUNDS = 8


def default_budget(phase1_probes: int, alpha: float, repeats: int) -> int:
    """Phase 2's default probe budget: as many probes as Phase 1, and never fewer than the
    sweep's first four claims of two sub-tests need at the least (each
    :func:`~.eprocess.rounds_lower_bound` at its own level ``alpha / (j (j + 1))``, at least
    :data:`MIN_CLAIM_ROUNDS`, two probes a round).

    >>> default_budget(6, 0.01, 1)  # 2 x 2 x (8 + 10 + 11 + 11) rounds: log2(200), log2(600), ...
    160
    """
    floor = sum(2 * 2 * max(MIN_CLAIM_ROUNDS, rounds_lower_bound(alpha / (j * (j + 1)), repeats)) for j in range(1, 5))
    return max(phase1_probes, floor)


def rounds_needed(sigma: float, slowdown: float, min_slowdown: float, level: float, repeats: int, *, trials: int = 9) -> int:
    """Median rounds one sub-test needs to confirm ``slowdown`` at ``level``, by simulation.

    Noise: each measurement ``exp(sigma * z)``, ``z`` standard normal (seeded; the same
    answer every call). Capped at 1,000.

    Args:
        sigma: per-measurement noise in log space, >= 0.
        slowdown: the slowdown assumed for the fault, > ``min_slowdown`` for a finite answer.
        min_slowdown: the claim's effect size.
        level: the claim's level.
        repeats: measurements per probe per round.
    """
    rng = np.random.default_rng(0)
    out = []
    for _ in range(trials):
        t = PairedTest(math.log(min_slowdown), level)
        n = 0
        while not t.rejected and n < 1000:
            z = rng.standard_normal(2 * repeats) * sigma
            t.add(slowdown * np.exp(z[:repeats]), np.exp(z[repeats:]))
            n += 1
        out.append(n)
    return int(statistics.median(out))


def sequential_drilldown(
    n: int,
    k: int,
    phase1: Sequence[tuple[Sequence[int], float | None]],
    suspects: Sequence[int],
    oracle: RoundOracle,
    *,
    sigma: float,
    alpha: float = 0.01,
    min_slowdown: float = 1.2,
    budget: int,
    repeats: int = 1,
    layout: Layout | None = None,
    seed: int = 0,
    claim_rounds: int = 64,
    quick_rounds: int | None = None,
    topology: ReplicaTopology | None = None,
    shared: Sequence[Component] = (),
) -> SequentialResult:
    """Localize the faults behind Phase 1's suspect probes with anytime-valid claims.

    Args:
        n: GPUs in the replica.
        k: probe size: every search probe has ``k`` GPUs, and so has every claim probe
            unless the replica is small (``n - 1 < 4 (k - 1)``), where claims pair probes of
            two GPUs.
        phase1: per Phase 1 probe, its GPUs and its excess ``log(latency / baseline)`` at
            its time (``None`` when it could not be measured).
        suspects: indices into ``phase1`` of the probes to explain.
        oracle: measures one round of a test probe and its reference.
        sigma: per-measurement noise of healthy probes in log space (from Phase 1).
        alpha: expected healthy components blamed per sweep, at most.
        min_slowdown: smallest slowdown that is a fault (> 1).
        budget: Phase 2 probes, at most (:func:`default_budget`).
        repeats: measurements of each probe in a round.
        layout: where the GPUs sit (shape-matched references); flat when ``None``.
        seed: seed of every draw (partners, references, halves).
        claim_rounds: rounds one claim may take, at most.
        quick_rounds: rounds of one search read (default :func:`read_rounds`).
        topology: where the GPUs sit (which probes a confirmed shared component explains);
            must agree with ``layout``. Needed with ``shared``.
        shared: the shared components to read and claim, in order (:func:`shared_proposals`
            of this Phase 1); none when empty.

    Returns:
        A :class:`SequentialResult`. On a rail-optimized ``layout`` a GPU whose slowdown the
        reverse test puts on its inter-node paths is ``inconclusive`` ("slow only across
        nodes") and its rail NIC a confirmed claim (kind ``nic``, ``shared`` the NIC).

    Raises:
        ValueError: ``k > n``, ``min_slowdown <= 1``, ``alpha`` outside (0, 1), a negative
            budget, a GPU id outside ``0..n-1``, or ``shared`` without ``topology``.
    """
    if shared and topology is None:
        raise ValueError("shared components to claim need the replica's topology")
    if not 1 <= k <= n:
        raise ValueError(f"probe size k must be in 1..{n}, got {k}")
    if not (math.isfinite(min_slowdown) and min_slowdown > 1):
        raise ValueError(f"min_slowdown must be a finite number > 1, got {min_slowdown!r}")
    wallet = ErrorBudget(alpha)
    probes = ProbeBudget(budget)
    layout = layout or Layout.flat(n)
    units = [tuple(phase1[i][0]) for i in sorted(set(suspects))]
    for gpus, _ in phase1:
        if gpus and (min(gpus) < 0 or max(gpus) >= n):
            raise ValueError(f"probe {list(gpus)} names a GPU outside 0..{n - 1}")
    if not units and not shared:
        return SequentialResult((), 0, None, alpha)
    theta0 = math.log(min_slowdown)
    rng = random.Random(seed)
    # claims pair probes of ``k`` GPUs where the replica is large enough that the partners
    # and pads of a claim vary from round to round; in a smaller one (n - 1 < 4 (k - 1)) the
    # same few pads would sit in every round, and a slow link to one of them would mute the
    # claim: there a claim pairs probes of two GPUs (both sides always one size)
    large = n - 1 >= 4 * (k - 1)
    ctx = _Context(k if large else min(k, 2), layout, oracle, probes, rng, theta0, alpha, claim_rounds)

    suspect_set = set(suspects)
    share, bad, suspected = _suspicion(n, phase1, suspect_set)
    held = np.zeros(n)
    for gpus, x in phase1:
        if x is not None:
            held[list(gpus)] += 1
    healthy = sorted(range(n), key=lambda g: (share[g], -held[g], g))  # most trusted first

    def unsuspected(pool: list[int]) -> list[int]:
        kept = [g for g in pool if g not in suspected]
        return kept if len(kept) >= 4 * k else pool

    # 1. noise gate
    excess = [x for i in suspect_set if (x := phase1[i][1]) is not None]
    assumed = max(math.exp(statistics.median(excess)) if excess else min_slowdown, min_slowdown * 1.25)
    need = rounds_needed(sigma, assumed, min_slowdown, wallet.peek(), repeats)
    per_claim = 2 * 2 * need
    if need >= claim_rounds or per_claim > probes.total:
        if need >= claim_rounds:
            gate = (
                f"too noisy at this load: ~{need} paired tests a candidate (noise {sigma:.3f}, {repeats} repeat(s)); "
                f"raise repeats or sweep at a quieter hour"
            )
        else:
            gate = (
                f"a Phase 2 budget of {probes.total} probe{'s' if probes.total != 1 else ''} cannot settle one claim "
                f"(~{per_claim} probes at noise "
                f"{sigma:.3f}, {repeats} repeat(s)); raise phase2.budget"
            )
        claims = tuple(_gated(g, gate) for g in dict.fromkeys(g for u in units for g in u))
        return SequentialResult(claims, 0, gate, alpha)

    results: list[ClaimResult] = []
    judged: set[tuple[int, int | None]] = set()
    faulty: set[int] = set()
    explained: list[Component] = []  # confirmed shared components

    rail_gpus: set[int] = set()  # GPUs under a confirmed rail NIC

    def covered(unit: Sequence[int]) -> bool:
        """A confirmed GPU, link or shared component on the probe's paths explains it (a
        confirmed rail NIC: the probe runs its GPU and spans nodes)."""
        links = [
            (c.gpu, c.peer_gpu) for c in results if c.status is Status.CONFIRMED and c.gpu is not None and c.peer_gpu is not None
        ]
        if faulty.intersection(unit) or any(_holds(tuple(unit), link) for link in links):
            return True
        if rail_gpus.intersection(unit) and len({layout.node[g] for g in unit}) > 1:
            return True
        return topology is not None and any(topology.holds(c, unit) for c in explained)

    # 2a. shared components that Phase 1 points at, before the GPUs under them: switches,
    # then NICs, then NVSwitches; each read quickly (both halves), claimed at once when the
    # read is slow; a confirmed one explains the candidates under it
    quick = quick_rounds if quick_rounds is not None else read_rounds(theta0, sigma, repeats)
    threshold = read_threshold(theta0, sigma, quick * repeats)
    if shared:
        # references and pads from the most trusted three quarters: a slow GPU among the pads
        # would slow both sides alike and hide the component (power only, never validity)
        pool = list(healthy[: max(2 * k, (3 * n) // 4)])
        for c in shared:
            if any(c.members <= e.members for e in explained):
                continue
            if probes.left < per_claim + shared_read_cost(quick):
                break
            est = _read_shared(ctx, c, pool, quick)
            if est is None or math.log(est) <= threshold:
                continue
            res = test_shared(ctx, c, wallet.open(), pool)
            results.append(res)
            if res.status is Status.CONFIRMED:
                explained.append(c)

    # Phase 1 probes that passed, and the GPU pairs they held (links Phase 1 found healthy)
    passed = [tuple(g) for i, (g, x) in enumerate(phase1) if x is not None and i not in suspect_set]
    cleared = ClearedPairs(phase1, suspect_set)

    def claim(kind: ComponentKind, a: int, b: int | None, linked: set[int] | None = None) -> None:
        key = (a, b)
        if key in judged or probes.left < 4:
            return
        judged.add(key)
        level = wallet.open()
        under = {g for c in explained for g in c.members}  # on a confirmed component's paths
        trusted = unsuspected([g for g in healthy if g not in faulty and g not in under])
        if kind is ComponentKind.GPU:
            res = test_gpu(ctx, a, level, trusted, linked or set())
        else:
            assert b is not None
            res = test_link(ctx, a, b, level, trusted, cleared)
        results.append(res)
        if res.status is Status.CONFIRMED and kind is ComponentKind.GPU and layout.rail:
            # on a rail replica the claim swapped ``a`` and its rail NIC: a reverse test inside
            # its node tells them apart (:func:`~.claims.test_rail_nic`)
            nic = topology.nic(layout.node[a], layout.rail[a]) if topology is not None and topology.rails else rail_nic(layout, a)
            name = topology.name(nic) if topology is not None and topology.rails else f"nic:node{nic.ids[0]}/rail{nic.ids[1]}"
            gpu_row, nic_row = test_rail_nic(ctx, res, wallet, trusted, name, nic)
            results[-1] = gpu_row
            if nic_row is not None:
                results.append(nic_row)
                explained.append(nic)
                rail_gpus.add(a)
                return
        if res.status is Status.CONFIRMED and kind is ComponentKind.GPU:
            faulty.add(a)

    def trusted_pool() -> list[int]:
        """The most trusted GPUs, less those confirmed slow or under a confirmed component."""
        avoid = faulty | {g for c in explained for g in c.members}
        return unsuspected([g for g in healthy if g not in avoid])

    # a screen, where the budget cannot handle every suspect probe Phase 1 left (a GPU it
    # points at costs a claim and one batched read of each of its probes; any other suspect
    # probe a search: a claim and a binary search's paired reads): the other suspect probes,
    # and two of each pointed-at GPU's (its slowest), are read once more, in batches sharing
    # a reference; then the rest of the probes of each pointed-at GPU whose two read healthy.
    # Under stalls and load bursts most suspects are noise that a fresh read does not repeat:
    # a probe that reads healthy again counts as passed for the GPUs' suspicion below and is
    # not searched (no verdict); the rest are searched, the slowest on the fresh read first.
    # The screen decides what is claimed, never a verdict
    # reads a binary search needs at the least to pin one of a probe's links or GPUs
    binary_reads = math.ceil(math.log2(math.comb(k, 2) + k))
    search_cost = per_claim + 2 * quick * binary_reads

    def reader(pools: Sequence[list[int]], rounds: int = quick, line: float = threshold, reserve: int = per_claim) -> _QuickReads:
        """Reads against references of the Phase 1 probes that passed, from ``pools``."""
        return _QuickReads(ctx, pools, rounds, line, reserve=reserve, passed=passed, cleared=cleared)

    pending = [tuple(phase1[i][0]) for i in sorted(suspect_set, key=lambda i: (-(phase1[i][1] or 0.0), i))]
    pending = [u for u in dict.fromkeys(pending) if not covered(u)]
    pointed = {g for g in suspected if g not in {m for c in explained for m in c.members}} if large else set()
    cost = len(pointed) * per_claim + sum((1 + 1 / _GROUP) if pointed.intersection(u) else search_cost for u in pending)
    fresh: dict[tuple[int, ...], float | None] = {}
    if cost > probes.left:
        sample = {g: [u for u in pending if g in u][:2] for g in sorted(pointed)}
        chosen = [u for u in pending if not pointed.intersection(u) or any(u in s for s in sample.values())]
        line = read_threshold(theta0, sigma, repeats)
        reads = reader([trusted_pool()], rounds=1, line=line)
        fresh = dict(zip(chosen, reads.estimates(chosen), strict=True))
        cleared_gpus = {g for g, mine in sample.items() if mine and all((x := fresh[u]) is not None and x <= line for u in mine)}
        others = [u for u in pending if cleared_gpus.intersection(u) and u not in fresh]
        fresh.update(zip(others, reads.estimates(others), strict=True))
        quiet = {u for u, x in fresh.items() if x is not None and x <= line}
        suspect_set -= {i for i in suspect_set if tuple(phase1[i][0]) in quiet}
        share, bad, suspected = _suspicion(n, phase1, suspect_set)
        healthy = sorted(range(n), key=lambda g: (share[g], -held[g], g))

    # 2b. GPUs that Phase 1 already points at -- where the replica is large enough that a
    # GPU claim's partner halves each hold several probes' worth of GPUs; in a smaller one
    # every probe of a half holds the same partners, a healthy GPU with slow links into both
    # halves would pass for a slow GPU, and the search below tells the two apart first
    if large:
        under = {g for c in explained for g in c.members}  # their suspicion is explained
        for g in sorted(range(n), key=lambda g: (-share[g], -bad[g], g)):
            if share[g] >= 0.5 and bad[g] >= 2 and g not in under:
                claim(ComponentKind.GPU, g, None)

    # 2c. search each suspect probe, the slowest first (on the screen's fresh read where there
    # was one, else in Phase 1), less the GPUs confirmed slow (nothing if a confirmed link or
    # shared component explains it), and claim what the search proposes before the next
    # probe's search spends the budget; read link by link where that is cheaper (below)
    def slowest(i: int) -> tuple[float, int]:
        x = fresh.get(tuple(phase1[i][0]))
        return (-(x if x is not None else phase1[i][1] or 0.0), i)

    order = sorted(suspect_set, key=slowest)
    unreached: list[tuple[int, ...]] = []

    def propose(proposals: Sequence[tuple[int, int | None]]) -> None:
        """Claim GPUs ``(g, None)``, then links ``(a, b)`` whose ends were not confirmed slow;
        a GPU's claim keeps the GPUs proposed as its link partners in one partner half."""
        for g, peer in sorted(proposals, key=lambda p: (p[1] is not None, p)):
            if peer is None:
                linked = {b if a == g else a for a, b in proposals if b is not None and g in (a, b)}
                claim(ComponentKind.GPU, g, None, {x for x in linked if x is not None})
            elif not (g in faulty or peer in faulty):
                claim(ComponentKind.LINK, g, peer)

    def search(unit: tuple[int, ...]) -> int:
        """Search ``unit`` with quick reads and claim what the search proposes; return how
        many components it proposed."""
        # references from trusted GPUs outside the probe under search where the replica has
        # room (two probes' worth): its other GPUs may hold the fault, and a shaped reference
        # first maps a node onto itself; from the whole trusted pool where that narrower one
        # holds no probe of a read's shape (a read that fills a node needs another whole node)
        wide = trusted_pool()
        narrow = [g for g in wide if g not in unit]
        reads = reader([narrow, wide] if len(narrow) >= 2 * k else [wide], reserve=0)
        found = adaptive_drilldown(n, k, passed, [unit], reads, recheck_explained=False)
        proposals = [(f.gpu, f.peer_gpu) for f in found.findings if f.status is Status.CONFIRMED]
        propose(proposals)
        if reads.missed and not proposals:
            unread.add(unit)
        else:
            unread.discard(unit)
        return len(proposals)

    unread: set[tuple[int, ...]] = set()  # examined, nothing proposed, and some reads not made

    def read_links(links: Sequence[tuple[int, int]]) -> list[tuple[int, int | None]]:
        """Read each link on its own (a probe of its two GPUs, padded to the claims' size with
        trusted GPUs whose pairs with both ends Phase 1 cleared, where it can), in batches
        sharing a reference, and those that read slow once more (as the search confirms what
        it finds with a second probe); propose each GPU whose every read link reads slow
        twice (two links at least), then each other link that reads slow twice."""
        pool = trusted_pool()
        tests = {}
        for a, b in links:
            pads = _pads((a, b), pool, cleared, ctx.k - 2)
            tests[a, b] = (a, b, *pads) if len(pads) == ctx.k - 2 else (a, b)
        reads = reader([pool])
        verdict = dict(zip(links, reads.batch([tests[e] for e in links]), strict=True))
        slow = [e for e in links if verdict[e]]
        verdict.update(zip(slow, reads.batch([tests[e] for e in slow]), strict=True))
        out: list[tuple[int, int | None]] = []
        for g in sorted({g for e in links for g in e}):
            mine = [v for e, v in verdict.items() if g in e]
            if len(mine) >= 2 and all(mine):
                out.append((g, None))
        gpus = {g for g, _ in out}
        out += [e for e, v in verdict.items() if v and not gpus.intersection(e)]
        missed.update(e for e, v in verdict.items() if v is None)
        return out

    # direct reads: a suspect probe whose open links (pairs no passed Phase 1 probe held) cost
    # no more to read one by one than a search would spend -- 1 + 1 / _GROUP probes a link
    # read on its own, against two a paired read and at least log2 of the probe's hypotheses
    # (each link or GPU) reads for a binary search -- has every open link read on its own,
    # the tiny replicas above all
    read_cost = 2 * binary_reads
    direct: dict[tuple[int, ...], list[tuple[int, int]]] = {}
    for i in order:
        unit = tuple(phase1[i][0])
        if covered(unit):
            continue
        open_links = [e for e in combinations(sorted(unit), 2) if e not in cleared]
        if open_links and len(open_links) * (1 + 1 / _GROUP) <= read_cost:
            direct[unit] = open_links
    # the slowest probes' links first, a batch at a time, each batch's proposals claimed
    # before the next is read (a confirmed GPU or link may explain later probes)
    proposed: list[tuple[int, int | None]] = []
    missed: set[tuple[int, int]] = set()  # links whose read could not be made
    done: set[tuple[int, int]] = set()
    batch: list[tuple[int, int]] = []
    waiting: list[tuple[int, ...]] = []  # units whose links are in the batch
    read_units: set[tuple[int, ...]] = set()  # units whose links were all read (or that are explained)
    direct_units = [u for u in dict.fromkeys(tuple(phase1[i][0]) for i in order) if u in direct]
    for j, unit in enumerate(direct_units):
        if covered(unit):
            read_units.add(unit)
            continue
        batch += [e for e in direct[unit] if e not in done and e not in batch]
        waiting.append(unit)
        if batch and (len(batch) >= _BATCH or j == len(direct_units) - 1):
            if probes.left < per_claim:
                break
            found = read_links(batch)
            propose(found)
            proposed += found
            done.update(batch)
            batch = []
        if not batch:
            read_units.update(waiting)
            unread.update(u for u in waiting if missed.intersection(direct[u]))
            waiting = []
    direct = {u: links for u, links in direct.items() if u in read_units}  # the rest: as any other

    hidden: list[tuple[int, ...]] = []
    again: list[tuple[int, ...]] = []  # at least min_slowdown slow, and its search proposed nothing
    for i in order:
        unit = tuple(phase1[i][0])
        if covered(unit):
            rest = tuple(g for g in unit if g not in faulty and g not in rail_gpus)
            if rest != unit and len(rest) >= 2:
                hidden.append(rest)  # explained by a confirmed GPU alone: see below
            continue
        if unit in direct:  # read link by link above; searched below if that proposed nothing
            if (phase1[i][1] or 0.0) >= theta0 and not any(set(e) - {None} <= set(unit) for e in proposed):
                again.append(unit)
            continue
        if probes.left < per_claim:
            if (phase1[i][1] or 0.0) >= theta0:  # slow by min_slowdown or more: a fault left unexamined
                unreached.append(unit)
            continue
        if search(unit) == 0 and (phase1[i][1] or 0.0) >= theta0:
            again.append(unit)

    # 2d. with the budget left, the paths of suspect probes that a confirmed GPU explains: they
    # were only ever probed beside it (its slowness told nothing about them), so their open
    # links are judged without it -- packed into as few probes of k GPUs as the re-check plan
    # finds (at most one a probe), read in batches sharing a reference; one that reads slow
    # is searched: a slow link hidden behind a slow GPU
    pieces = [rest for rest in hidden if not covered(rest)]
    if pieces and probes.left >= per_claim:
        links = {e for rest in pieces for e in combinations(sorted(rest), 2) if e not in cleared}
        pool = trusted_pool()
        planned: list[tuple[int, ...]] = []
        tests: list[tuple[int, ...]] = []
        for piece in map(tuple, map(sorted, plan_recheck(pieces, links, k))):
            pads = _pads(piece, pool, cleared, k - len(piece))
            if len(piece) + len(pads) == k:
                planned.append(piece)
                tests.append((*piece, *pads))
        slow = reader([pool]).batch(tests)
        for piece, read in zip(planned, slow, strict=True):
            if read and probes.left >= per_claim and not covered(piece):
                search(piece)

    # 2e. with the budget left, once more each probe at least min_slowdown slow whose search
    # proposed nothing: a search reads quickly and may miss under noise; its reads are fresh
    for j, unit in enumerate(again):
        if probes.left < per_claim:  # examined already: left without a verdict unless not fully read
            unreached += [u for u in again[j:] if u in unread and not covered(u)]
            break
        if not covered(unit):
            search(unit)

    # suspect probes at least min_slowdown slow that the budget did not reach, or that Phase 2
    # could not read in full and that proposed nothing: their GPUs are inconclusive, never
    # silently healthy (a probe read in full that proposed nothing read healthy again: noise;
    # slighter ones, often noise, count among the links the sweep left unjudged)
    claimed = {c.gpu for c in results if c.kind is ComponentKind.GPU}
    why = f"in a slow Phase 1 probe that the Phase 2 budget ({probes.total} probes) did not reach; raise phase2.budget"
    unreadable = "in a slow Phase 1 probe that Phase 2 could not read (no reference probe of its shape, or failed measurements)"
    blocked = [u for u in again if u in unread and not covered(u) and u not in unreached]
    for units_, reason in ((unreached, why), (blocked, unreadable)):
        for g in dict.fromkeys(g for u in units_ for g in u):
            if g not in claimed and g not in faulty:
                claimed.add(g)
                results.append(_gated(g, reason))

    # links between two confirmed GPUs cannot be judged: masked
    for u in units:
        for i, a in enumerate(u):
            for b in u[i + 1 :]:
                if a in faulty and b in faulty and (min(a, b), max(a, b)) not in judged:
                    judged.add((min(a, b), max(a, b)))
                    results.append(_masked(min(a, b), max(a, b)))
    return SequentialResult(tuple(results), probes.spent, None, alpha)


def shared_proposals(
    topology: ReplicaTopology,
    layout: Layout,
    phase1: Sequence[tuple[Sequence[int], float | None]],
    suspects: set[int],
    *,
    raw: Sequence[float | None] = (),
    contrast: float = math.inf,
) -> list[Component]:
    """The shared components worth a quick read, switches before NICs before NVSwitches (a
    larger component explains the smaller ones under it), each kind most suspect first.

    A component is proposed when it can be tested (:func:`~.claims.test_shared`: two halves
    of its GPUs, and references -- another node under a NIC's switch, a third switch for a
    leaf switch) and Phase 1 points at it: at least two suspect probes hold it (for an
    NVSwitch, or one through three or more of its GPUs: a cover may hold a node's every pair
    in one probe) and at least half of the measured probes that hold it are suspect; or the
    probes holding it are slower than those that do not by ``contrast`` or more (median of
    ``raw``, each probe's log latency before any shape correction: a slow NIC held by every
    cross-node probe moves the baseline, and only the few probes inside one node stand
    apart). Proposing decides only what is read, never a verdict. Rail-optimized replicas
    propose none (a rail NIC carries one GPU's paths: it is named after the GPU above it is
    confirmed, by :func:`~.claims.test_rail_nic`).

    >>> t = ReplicaTopology(16, gpus_per_node=4)
    >>> lay = Layout(tuple(t.node(g) for g in range(16)))
    >>> probes = [((0, 4), 0.5), ((1, 8), 0.5), ((2, 12), 0.4), ((5, 9), 0.0), ((6, 13), 0.0), ((0, 1), 0.0)]
    >>> [t.name(c) for c in shared_proposals(t, lay, probes, {0, 1, 2})]
    ['nic:node0']
    """
    if layout.rail or topology.rails:
        return []
    switches = len(set(layout.switch)) if layout.switch else 1
    testable = []
    for c in topology.shared_components():
        nodes = {layout.node[g] for g in c.members}
        home = layout.switch_of(min(c.members))
        if c.kind is ComponentKind.NVSWITCH and len(c.members) < 4:
            continue
        if c.kind is ComponentKind.NIC and (
            len(c.members) < 2
            or not any(layout.switch_of(g) == home for g in range(len(layout.node)) if layout.node[g] not in nodes)
        ):
            continue
        if c.kind is ComponentKind.SWITCH and (len(nodes) < 2 or switches < 3):
            continue
        testable.append(c)
    measured = [i for i, (_, x) in enumerate(phase1) if x is not None]
    if not testable or not measured:
        return []
    holds = topology.holds_matrix(testable, [phase1[i][0] for i in measured])  # (probes, components)
    suspect = np.array([i in suspects for i in measured])
    bad = (holds & suspect[:, None]).sum(axis=0)
    count = holds.sum(axis=0)
    x = np.array([np.nan if i >= len(raw) or raw[i] is None else raw[i] for i in measured], dtype=float)
    candidates = []
    for j, c in enumerate(testable):
        deep = c.kind is ComponentKind.NVSWITCH and any(
            suspect[p] and len(c.members.intersection(phase1[measured[p]][0])) >= 3 for p in np.flatnonzero(holds[:, j])
        )
        pointed = (bad[j] >= 2 or deep) and 2 * bad[j] >= count[j]
        inside, outside = x[holds[:, j]], x[~holds[:, j]]
        inside, outside = inside[~np.isnan(inside)], outside[~np.isnan(outside)]
        gap = float(np.median(inside) - np.median(outside)) if len(inside) and len(outside) else -math.inf
        if pointed or gap >= contrast:
            candidates.append((-float(bad[j]) / max(1, int(count[j])), -gap, c))
    rank = {ComponentKind.SWITCH: 0, ComponentKind.NIC: 1, ComponentKind.NVSWITCH: 2}
    candidates.sort(key=lambda t: (rank[t[2].kind], t[0], t[1], t[2].ids))
    return [c for _, _, c in candidates]


def _suspicion(
    n: int, phase1: Sequence[tuple[Sequence[int], float | None]], suspects: set[int]
) -> tuple[np.ndarray, np.ndarray, set[int]]:
    """Each GPU's suspicion: the share of its measured Phase 1 probes that are suspect, how
    many are, and the GPUs Phase 1 points at (a share of at least a half, two probes at least).

    A GPU Phase 1 points at is never a pad or a partner of another claim while a pool of four
    probes' worth remains without it: a slow GPU on both sides of a round hides the component
    under test (power only: pads are common to both sides)."""
    held = np.zeros(n)
    bad = np.zeros(n)
    for i, (gpus, x) in enumerate(phase1):
        if x is None:
            continue
        for g in gpus:
            held[g] += 1
            bad[g] += i in suspects
    share = np.divide(bad, held, out=np.zeros(n), where=held > 0)
    return share, bad, {g for g in range(n) if share[g] >= 0.5 and bad[g] >= 2}


def _holds(unit: tuple[int, ...], link: tuple[int, int | None]) -> bool:
    """The probe ``unit`` holds both ends of ``link`` (a link claim already explains it)."""
    return link[0] in unit and link[1] in unit


#: Standard errors of a quick read's estimate between a healthy probe and the read's
#: threshold: ``_READ_Z * sigma * sqrt(2 / m)`` for ``m`` measurements a side (about 3 standard
#: errors, times 1.1 for the Hodges-Lehmann estimate's efficiency against the mean).
_READ_Z = 3.5
#: Most measurements of each probe in one quick read.
_READ_MAX = 6


def read_threshold(theta0: float, sigma: float, measurements: int) -> float:
    """The log slowdown above which a quick read calls a probe slow.

    About three standard errors of the read's estimate (:data:`_READ_Z`), kept between a quarter and
    a half of the effect ``theta0``: on a quiet replica the search then finds faults below
    ``min_slowdown`` too (reported for what they are, :mod:`.claims`), and on a noisy one it
    does not chase noise. It decides only what the search proposes, never a verdict.

    >>> round(read_threshold(math.log(1.2), 0.005, 3), 4), round(read_threshold(math.log(1.2), 0.2, 3), 4)
    (0.0456, 0.0912)
    """
    return min(theta0 / 2, max(theta0 / 4, _READ_Z * sigma * math.sqrt(2.0 / max(1, measurements))))


def read_rounds(theta0: float, sigma: float, repeats: int) -> int:
    """Rounds of one quick read: the fewest whose threshold (:func:`read_threshold`) reaches
    half the effect, at most :data:`_READ_MAX` measurements a side.

    >>> read_rounds(math.log(1.2), 0.02, 1), read_rounds(math.log(1.05), 0.01, 1), read_rounds(math.log(1.2), 0.1, 3)
    (2, 5, 2)
    """
    need = math.ceil(2.0 * (2.0 * _READ_Z * sigma / theta0) ** 2)
    return max(1, math.ceil(min(need, _READ_MAX) / repeats))


#: Search reads that share one reference probe, at most (:meth:`_QuickReads.batch`).
_BATCH = 16
#: Search reads measured beside one measurement of their reference in one random order.
_GROUP = 4
#: Passing Phase 1 probes tried, at most, as a batch's reference.
_DRAWS = 64


class _QuickReads:
    """The search's oracle: ``rounds`` rounds of a probe against a reference of its shape,
    slow when their Hodges-Lehmann estimate exceeds ``threshold`` (:func:`read_threshold`).
    Spends the probe budget, never below ``reserve`` probes left; ``None`` when it would, or
    when no reference exists.

    :meth:`batch` reads up to :data:`_BATCH` probes of one shape against one reference: a
    round measures them in groups of up to :data:`_GROUP`, each group beside one measurement
    of the reference, all in one random order, and compares each probe with the reference
    measured in its own group. Each read then has the law of a paired read (its test and
    reference measured equally often, close in time: a load burst that lifts one lifts the
    other), at ``(g + 1) / (2 g)`` of its probes for groups of ``g``; the reads of a group
    share the reference's error. What a read says decides only what is claimed, never a
    claim's validity."""

    def __init__(
        self,
        ctx: _Context,
        pools: Sequence[list[int]],
        rounds: int,
        threshold: float,
        reserve: int = 0,
        passed: Sequence[tuple[int, ...]] = (),
        cleared: Container[tuple[int, int]] = frozenset(),
    ) -> None:
        self.ctx, self.pools, self.rounds, self.threshold, self.reserve = ctx, pools, rounds, threshold, reserve
        self.passed, self.cleared = passed, cleared  # Phase 1 probes that passed, and their pairs
        self.missed = 0  # single reads that could not be made (no reference, budget, errors)

    def __call__(self, gpus: Sequence[int]) -> bool | None:
        got = self.batch([gpus])[0]
        self.missed += got is None
        return got

    def batch(self, probes: Sequence[Sequence[int]]) -> list[bool | None]:
        """Read every probe of ``probes``: slow (``True``), not (``False``) or ``None``."""
        return [None if x is None else x > self.threshold for x in self.estimates(probes)]

    def estimates(self, probes: Sequence[Sequence[int]]) -> list[float | None]:
        """Each probe's log slowdown against its reference (Hodges-Lehmann over its rounds),
        or ``None`` where it was not read."""
        ctx = self.ctx
        tests = [tuple(sorted(p)) for p in probes]
        out: list[float | None] = [None] * len(tests)
        shapes: dict[object, list[int]] = {}
        for i, t in enumerate(tests):
            shapes.setdefault(shape(t, ctx.layout), []).append(i)
        for members in shapes.values():
            for chunk, ref in self._chunks(tests, members):
                diffs: dict[int, list[float]] = {i: [] for i in chunk}
                for _ in range(self.rounds):
                    for start in range(0, len(chunk), _GROUP):
                        group = chunk[start : start + _GROUP]
                        cost = len(group) + 1
                        if ctx.budget.left - cost < self.reserve or not ctx.budget.take(cost):
                            return _medians(diffs, out)
                        got = ctx.oracle((*(tests[i] for i in group), ref))
                        if got is None:
                            continue
                        base = np.log(got[-1])
                        for i, lat in zip(group, got[:-1], strict=True):
                            diffs[i].extend((np.log(lat)[:, None] - base[None, :]).ravel().tolist())
                _medians(diffs, out)
                # most reads of a batch (three at least) far below their reference: the
                # reference is the slow one (a slow path among its GPUs); the batch says nothing
                read = [x for i in chunk if (x := out[i]) is not None]
                if len(read) >= 3 and statistics.median(read) < -self.threshold:
                    for i in chunk:
                        out[i] = None
        return out

    def _chunks(self, tests: Sequence[tuple[int, ...]], members: Sequence[int]) -> list[tuple[list[int], tuple[int, ...]]]:
        """``members`` (indices into ``tests``, one shape) in batches of at most
        :data:`_BATCH`, each with a reference outside all of its tests: a test is added to
        the open batch while one remains. A test that has no reference alone is left out."""
        out: list[tuple[list[int], tuple[int, ...]]] = []
        chunk: list[int] = []
        ref: tuple[int, ...] | None = None
        for i in members:
            grown = self._reference([tests[j] for j in (*chunk, i)]) if len(chunk) < _BATCH else None
            if grown is not None:
                chunk, ref = [*chunk, i], grown
                continue
            if chunk and ref is not None:
                out.append((chunk, ref))
            alone = self._reference([tests[i]])
            chunk, ref = ([i], alone) if alone is not None else ([], None)
        if chunk and ref is not None:
            out.append((chunk, ref))
        return out

    def _reference(self, tests: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
        """A reference outside all of ``tests``, of their shape: a Phase 1 probe that passed,
        made of GPUs of the first pool, the first fit among :data:`_DRAWS` drawn at random;
        else a *clean* probe (every pair of its GPUs held by a passing Phase 1 probe)
        from the most trusted GPUs of the first pool that holds one; else, for one test alone,
        any such probe. A slow path inside a reference mutes the reads of its batch
        (:meth:`estimates` then reports none where it can tell)."""
        inside = set().union(*tests)
        lay = self.ctx.layout
        target = shape(tests[0], lay)
        allowed = set(self.pools[0]) if self.pools else set()
        for _ in range(_DRAWS if self.passed else 0):
            p = self.ctx.rng.choice(self.passed)
            if len(p) == len(tests[0]) and allowed.issuperset(p) and not inside.intersection(p) and shape(p, lay) == target:
                return tuple(sorted(p))
        for pool in self.pools:
            free = [g for g in pool if g not in inside]
            clique = _pads((), free, self.cleared, len(tests[0]))
            if self._clean(clique) and len(clique) == len(tests[0]) and shape(clique, lay) == target:
                return tuple(sorted(clique))
            ref = shaped_reference(tests[0], free, lay, self.ctx.rng)
            if ref is not None and (len(tests) == 1 or self._clean(ref)):
                return ref
        return None

    def _clean(self, gpus: Sequence[int]) -> bool:
        """Every pair of ``gpus`` was held by a Phase 1 probe that passed."""
        return all((min(a, b), max(a, b)) in self.cleared for a, b in combinations(gpus, 2))


def _medians(diffs: dict[int, list[float]], out: list[float | None]) -> list[float | None]:
    """Write each read's median difference into ``out`` (where it has any); return ``out``."""
    for i, d in diffs.items():
        if d:
            out[i] = float(np.median(d))
    return out


class ClearedPairs:
    """The GPU pairs a passing Phase 1 probe held, answered pair by pair (``(a, b) in
    cleared``, ``a < b``) without listing them: a replica of 8,192 GPUs holds ~33 million
    pairs in its probes. A Phase 1 cover holds every pair, so a pair is cleared unless every
    probe holding it is suspect or unmeasured: only the pairs of those probes are looked up,
    against the passing probes that hold their GPUs. Phase 1 probes that hold no pair at all
    answer "cleared" (they decide pads and references, never a verdict).

    Args:
        phase1: per Phase 1 probe, its GPUs and its excess (``None``: not measured).
        suspects: indices of the suspect probes.
    """

    def __init__(self, phase1: Sequence[tuple[Sequence[int], float | None]], suspects: Set[int]) -> None:
        failed = [i for i, (_, x) in enumerate(phase1) if x is None or i in suspects]
        pairs = {e for i in failed for e in combinations(sorted(phase1[i][0]), 2)}
        gpus = {g for e in pairs for g in e}
        held: dict[int, set[int]] = {g: set() for g in gpus}  # passing probes holding each GPU
        bad = set(failed)
        for i, (probe, _) in enumerate(phase1):
            if i not in bad:
                for g in probe:
                    if g in held:
                        held[g].add(i)
        self._open = {(a, b) for a, b in pairs if not held[a] & held[b]}

    def __contains__(self, pair: object) -> bool:
        return pair not in self._open


def _pads(gpus: tuple[int, ...], pool: Sequence[int], cleared: Container[tuple[int, int]], need: int) -> list[int]:
    """``need`` GPUs of ``pool`` (most trusted first) to pad ``gpus`` with: first, one by one,
    those whose pairs with every GPU of ``gpus`` and every pad chosen so far Phase 1 cleared,
    then any other (fewer when ``pool`` runs out). A pad with a slow path into the probe
    would make a read slow for nothing."""
    free = [g for g in pool if g not in gpus]
    chosen: list[int] = []
    for g in free:
        if len(chosen) >= need:
            break
        if all((min(g, x), max(g, x)) in cleared for x in (*gpus, *chosen)):
            chosen.append(g)
    return (chosen + [g for g in free if g not in chosen])[: max(0, need)]


def shared_read_cost(quick_rounds: int) -> int:
    """Probes one quick read of a shared component spends: ``quick_rounds // 2`` rounds (at
    least one) of each half, two probes a round."""
    return 2 * 2 * max(1, quick_rounds // 2)


def _read_shared(ctx: _Context, c: Component, pool: list[int], rounds: int) -> float | None:
    """A quick read of a shared component: ``rounds`` rounds of each half's draws (at least
    one); the smaller of the two halves' Hodges-Lehmann slowdowns (both must read slow), or
    ``None`` when it cannot be read (no draws, budget spent)."""
    draws = shared_draws(ctx, c, pool)
    if not draws:
        return None
    estimates = []
    for draw in draws:
        t = PairedTest(ctx.theta0, 0.5)
        played = _Rounds()
        for _ in range(max(1, rounds // 2)):
            step = played.play(ctx, draw, "no pair to draw")
            if played.why is not None:
                return None
            if step is not None:
                t.add(*step[1])
        est = t.estimate()
        if est is None:
            return None
        estimates.append(est)
    return min(estimates)


def _gated(g: int, gate: str) -> ClaimResult:
    """An inconclusive GPU that no claim tested (the noise gate stopped the sweep, or the
    budget ran out before its suspect probe was searched): no level spent, no round run."""
    return ClaimResult(ComponentKind.GPU, g, None, Status.INCONCLUSIVE, 0.0, 1.0, 0.0, None, None, 0, gate, ())


def _masked(a: int, b: int) -> ClaimResult:
    return ClaimResult(ComponentKind.LINK, a, b, Status.MASKED, 0.0, 1.0, 0.0, None, None, 0, None, ())
