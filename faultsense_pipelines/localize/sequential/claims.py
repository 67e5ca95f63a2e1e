"""Claims and their tests: "this GPU (or link) slows probes by at least ``min_slowdown``".

A claim is decided by one or two *sub-tests*, each a :class:`~.eprocess.PairedTest` over
rounds of swap pairs (:mod:`.pairing`), and is confirmed only when **every** sub-test rejects
at the claim's level (an intersection-union test: the claim's false-blame probability is at
most the level, since under any configuration that makes the claim false at least one
sub-test is a valid test of a true null).

* **GPU** ``g``: ``T = {g} | Q`` against ``R = {h} | Q``, with the partners ``Q`` drawn each
  round from one of two disjoint halves of the other GPUs (the sub-tests). A slow link from
  ``g`` to a partner slows ``T`` too, but only in the half that holds that partner; the other
  half's sub-test stays a test of a true null. GPUs that the search linked to ``g`` all go
  into one half.
* **Link** ``(a, b)``: ``{a, b} | P`` against ``{a, c} | P`` (``b`` swapped out) and against
  ``{d, b} | P`` (``a`` swapped out). A slow ``b`` alone rejects only the first; a slow ``a``
  alone only the second.
* **Shared component** (:func:`test_shared`): its GPUs (a NIC's or an NVSwitch's node, a
  leaf switch's nodes) are split into two disjoint halves, one sub-test each. A round puts a
  GPU of the half (two, for an NVSwitch) where the component is on its path, and the
  reference a GPU (two) where another component of the same kind is, everything else common
  and the shapes equal: NIC ``v``: ``{a} | Q`` against ``{a'} | Q``, ``a`` on ``v``, ``a'`` on
  another node under ``v``'s switch, ``Q`` on neither node (so the switches and every other
  NIC are common); NVSwitch ``v``: two GPUs of ``v`` against two GPUs of one other node, alone
  (a two-GPU probe inside a node crosses no NIC); leaf switch ``s``: ``{a} | Q`` against
  ``{a'} | Q``, ``a`` under ``s``, ``a'`` under another switch, ``Q`` under neither. A slow GPU
  or link sits in one half only, so the other half's sub-test stays a test of a true null.

* **Rail NIC** (:func:`test_rail_nic`): on a rail-optimized replica a GPU claim's two sides
  differ in ``g`` *and* ``g``'s rail NIC, so a confirmed GPU claim there proves "``g`` or its
  rail NIC is slow". A second, reverse test inside ``g``'s node, where no probe crosses a
  NIC, tells them apart.

What breaks attribution (not the noise guarantee): a healthy GPU with slow links into both
halves of its partners, a healthy link whose two ends are both slow GPUs (such a link is
reported ``masked`` once both GPUs are confirmed), or a healthy shared component with a slow
GPU in each half.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Container, Sequence
from dataclasses import dataclass, replace

from ...replica.topology import Component
from ...replica.vocabulary import ComponentKind, Status
from .budget import ErrorBudget, ProbeBudget
from .eprocess import PairedTest
from .pairing import Layout, RoundOracle, shape, swap_partner

__all__ = [
    "ClaimResult",
    "inside_pool",
    "rail_nic",
    "shared_draws",
    "shared_halves",
    "test_gpu",
    "test_link",
    "test_rail_nic",
    "test_shared",
]


@dataclass(frozen=True)
class ClaimResult:
    """How one claim's test ended.

    Attributes:
        kind: GPU, link, or a shared component's kind.
        gpu: the GPU, or the link's smaller end; ``None`` for a shared component.
        peer_gpu: the link's larger end, ``None`` for a GPU or a shared component.
        status: ``confirmed``; ``inconclusive`` (budget or rounds ran out, no shape-matched
            reference, or slow but by less than ``min_slowdown``); ``None`` when the test
            showed it less than ``min_slowdown`` slow (healthy enough: no verdict).
        level: the claim's level from the sweep's error budget.
        evalue: the smallest of its sub-tests' e-values for ``theta0`` (running maxima).
        confidence: ``1 - min(1, alpha / (level * evalue))``: the adjusted anytime p-value's
            complement (see :mod:`.budget`).
        slowdown: Hodges-Lehmann estimate over every round, or ``None``.
        interval: anytime-valid interval of the slowdown at ``level`` (each end a grid point).
        rounds: rounds measured (each two probes).
        reason: why it is inconclusive, with the evidence reached.
        evidence: the test probes of its rounds (GPU ids).
        shared: the NIC, NVSwitch or switch, ``None`` for a GPU or a link.
    """

    kind: ComponentKind
    gpu: int | None
    peer_gpu: int | None
    status: Status | None
    level: float
    evalue: float
    confidence: float
    slowdown: float | None
    interval: tuple[float, float] | None
    rounds: int
    reason: str | None
    evidence: tuple[tuple[int, ...], ...]
    shared: Component | None = None


@dataclass
class _Context:
    k: int
    layout: Layout
    oracle: RoundOracle
    budget: ProbeBudget
    rng: random.Random
    theta0: float
    alpha: float
    max_rounds: int
    max_errors: int = 4


@dataclass
class _Rounds:
    """A test's rounds so far: measured, failed, and why the test must stop (``None`` while
    it may go on)."""

    done: int = 0
    errors: int = 0
    why: str | None = None

    def play(
        self, ctx: _Context, draw: _Draw, missing: str
    ) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], tuple[tuple[float, ...], ...]] | None:
        """Draw and measure one round: its pair and latencies, or ``None`` (a failed
        measurement; or a stop, with :attr:`why` set: no pair to draw (``missing``), the
        probe budget spent, or more than ``ctx.max_errors`` failed rounds)."""
        pair = draw(ctx)
        if pair is None:
            self.why = missing
            return None
        if not ctx.budget.take(2):
            self.why = f"Phase 2 budget spent after {self.done} rounds"
            return None
        got = ctx.oracle(pair)
        self.done += 1
        if got is None:
            self.errors += 1
            if self.errors > ctx.max_errors:
                self.why = f"{self.errors} rounds could not be measured"
            return None
        return pair, got


def _run(
    ctx: _Context,
    kind: ComponentKind,
    ids: tuple[int | None, int | None],
    level: float,
    draw: Sequence[_Draw],
    shared: Component | None = None,
) -> ClaimResult:
    """Round-robin over the sub-tests until all reject, one clears, or a budget runs out.

    A cleared claim whose tests still read a slowdown (Hodges-Lehmann estimate above 1) gets
    as many rounds again, at most, to show it slow at all (``theta = 0``): it is then reported
    ``inconclusive``, "slow, but below ``min_slowdown``", never silently healthy. This only
    decides how a claim that is not confirmed is reported; it spends no error budget.
    """
    tests = [PairedTest(ctx.theta0, level) for _ in draw]
    evidence: list[tuple[int, ...]] = []
    rounds = _Rounds()
    reason: str | None = None
    turn = 0
    cleared_at: int | None = None
    while True:
        if all(t.rejected for t in tests):
            break
        if cleared_at is None and any(t.cleared for t in tests):
            cleared_at = rounds.done
        if cleared_at is not None and (all(t.detected for t in tests) or rounds.done >= 2 * cleared_at or not _reads_slow(tests)):
            break
        if rounds.done >= ctx.max_rounds:
            reason = f"undecided after {rounds.done} rounds (claim cap)"
            break
        open_tests = [i for i, t in enumerate(tests) if not (t.detected if cleared_at is not None else t.rejected)]
        i = open_tests[turn % len(open_tests)]
        turn += 1
        step = rounds.play(ctx, draw[i], "no reference probe of the same shape")
        if rounds.why is not None:
            reason = rounds.why
            break
        if step is not None:
            tests[i].add(*step[1])
            evidence.append(step[0][0])
    return _result(ctx, kind, ids, level, tests, rounds.done, reason, tuple(evidence), shared)


def _result(
    ctx: _Context,
    kind: ComponentKind,
    ids: tuple[int | None, int | None],
    level: float,
    tests: Sequence[PairedTest],
    rounds: int,
    reason: str | None,
    evidence: tuple[tuple[int, ...], ...],
    shared: Component | None = None,
) -> ClaimResult:
    e = min(t.evalue() for t in tests)
    confidence = 1.0 - min(1.0, ctx.alpha / (level * e))
    diffs = [d for t in tests for d in t.diffs]
    slowdown = float(math.exp(statistics.median(diffs))) if diffs else None
    ivals = [t.interval() for t in tests if t.rounds]
    interval = None
    if ivals:
        low, high = max(i[0] for i in ivals), min(i[1] for i in ivals)
        interval = (low, max(low, high))
    s0 = math.exp(ctx.theta0)
    status: Status | None
    if all(t.rejected for t in tests):
        status, reason = Status.CONFIRMED, None
    elif any(t.cleared for t in tests) and not all(t.detected for t in tests):
        status, reason = None, None
    else:
        status = Status.INCONCLUSIVE
        if all(t.detected for t in tests) and interval is not None:
            below = f", below min_slowdown {s0:g}" if any(t.cleared for t in tests) else ""
            reason = f"slow by {interval[0]:.2f}-{interval[1]:.2f}x{below}" + (f"; {reason}" if reason else "")
        reason = f"{reason or 'undecided'} (e-value {e:.3g} of {1 / level:.3g} needed)"
    a, b = ids
    return ClaimResult(kind, a, b, status, level, e, confidence, slowdown, interval, rounds, reason, evidence, shared)


def _reads_slow(tests: Sequence[PairedTest]) -> bool:
    """Every sub-test's point estimate of the slowdown is above 1."""
    return all((est := t.estimate()) is not None and est > 1.0 for t in tests)


class _Draw:
    """Draws one round's ``(test, reference)`` probe pair for a sub-test."""

    def __call__(self, ctx: _Context) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        raise NotImplementedError


@dataclass
class _GpuSwap(_Draw):
    g: int
    partners: list[int]
    references: list[int]

    def __call__(self, ctx: _Context) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        for _ in range(8):
            q = ctx.rng.sample(self.partners, ctx.k - 1)
            h = swap_partner(self.g, q, [x for x in self.references if x not in q], ctx.layout, ctx.rng)
            if h is not None:
                return tuple(sorted([self.g, *q])), tuple(sorted([h, *q]))
        return None


@dataclass
class _EndSwap(_Draw):
    keep: int
    swap: int
    pads: list[int]
    references: list[int]

    def __call__(self, ctx: _Context) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        pool = [x for x in self.pads if x not in (self.keep, self.swap)]
        for _ in range(8):
            p = ctx.rng.sample(pool, ctx.k - 2) if ctx.k > 2 else []
            rest = [self.keep, *p]
            h = swap_partner(self.swap, rest, [x for x in self.references if x not in rest], ctx.layout, ctx.rng)
            if h is not None:
                return tuple(sorted([self.swap, *rest])), tuple(sorted([h, *rest]))
        return None


def test_gpu(ctx: _Context, g: int, level: float, healthy: Sequence[int], linked: set[int]) -> ClaimResult:
    """Test the claim "GPU ``g`` slows probes by at least ``min_slowdown``".

    Args:
        ctx: the drill-down's context (oracle, budgets, layout, seeded draws).
        g: the GPU.
        level: the claim's level (from :class:`~.budget.ErrorBudget`).
        healthy: GPUs believed healthy, most trusted first (partners and references).
        linked: GPUs the search tied to ``g`` by a slow link: kept in one partner half.
    """
    others = [x for x in healthy if x != g]
    rest = [x for x in others if x not in linked]
    ctx.rng.shuffle(rest)
    side = [x for x in others if x in linked]
    half = max(0, len(others) // 2 - len(side))
    a, b = side + rest[:half], rest[half:]
    draws: list[_Draw]
    if min(len(a), len(b)) >= ctx.k - 1 and len(others) >= ctx.k:
        draws = [_GpuSwap(g, a, others), _GpuSwap(g, b, others)]
    else:  # too few GPUs for two disjoint halves: one test over all partners
        draws = [_GpuSwap(g, others, others)]
    return _run(ctx, ComponentKind.GPU, (g, None), level, draws)


def test_link(
    ctx: _Context, a: int, b: int, level: float, healthy: Sequence[int], cleared: Container[tuple[int, int]] = frozenset()
) -> ClaimResult:
    """Test the claim "the path between GPUs ``a`` and ``b`` slows probes by at least
    ``min_slowdown``" by swapping out each end in turn (two sub-tests).

    The GPU swapped in for one end is drawn, where two or more are left, from those whose
    pair with the kept end is in ``cleared`` (sorted pairs Phase 1 found healthy): a
    reference with a slow path to the kept end -- the other slow link of a GPU with two --
    would read as slow as the test and mute it (power only: it can never make the test
    side look slower)."""
    pads = [x for x in healthy if x not in (a, b)]

    def references(keep: int) -> list[int]:
        ok = [x for x in pads if (min(keep, x), max(keep, x)) in cleared]
        return ok if len(ok) >= 2 else pads

    draws: list[_Draw] = [_EndSwap(a, b, pads, references(a)), _EndSwap(b, a, pads, references(b))]
    lo, hi = min(a, b), max(a, b)
    return _run(ctx, ComponentKind.LINK, (lo, hi), level, draws)


@dataclass
class _SharedSwap(_Draw):
    """One sub-test of a shared component: ``width`` GPUs of ``half`` against as many of one
    node (NVSwitch: two GPUs of one node, alone) or of a ``references`` GPU, with ``k - width``
    common pads from ``pads`` on nodes (or, for a switch, under switches) that neither side
    touches."""

    half: list[int]
    references: list[int]
    pads: list[int]
    width: int
    apart: str  # "node" or "switch": what the pads must not share with either side

    def __call__(self, ctx: _Context) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        where = ctx.layout.node if self.apart == "node" else [ctx.layout.switch_of(g) for g in range(len(ctx.layout.node))]
        if len(self.half) < self.width or not self.references:
            return None
        for _ in range(8):
            test = ctx.rng.sample(self.half, self.width)
            if self.width == 1:
                ref = [ctx.rng.choice(self.references)]
            else:  # two GPUs of one node
                by_node: dict[int, list[int]] = {}
                for h in self.references:
                    by_node.setdefault(ctx.layout.node[h], []).append(h)
                nodes = [v for v, gs in by_node.items() if len(gs) >= self.width]
                if not nodes:
                    return None
                ref = ctx.rng.sample(by_node[ctx.rng.choice(nodes)], self.width)
            taken = {where[g] for g in (*test, *ref)}
            pool = [x for x in self.pads if where[x] not in taken]
            need = ctx.k - self.width if self.width == 1 else 0
            if len(pool) < need:
                return None
            q = ctx.rng.sample(pool, need)
            t, r = tuple(sorted([*test, *q])), tuple(sorted([*ref, *q]))
            if shape(t, ctx.layout) == shape(r, ctx.layout):
                return t, r
        return None


def shared_halves(c: Component, layout: Layout, rng: random.Random) -> tuple[list[int], list[int]] | None:
    """The two disjoint halves of a shared component's GPUs that its sub-tests draw from: a
    NIC's node split in two (at least one GPU each), an NVSwitch's (two each), a leaf switch's
    nodes split in two (whole nodes); ``None`` where the component has too few for two."""
    members = sorted(c.members)
    if c.kind is ComponentKind.SWITCH:
        nodes = sorted({layout.node[g] for g in members})
        rng.shuffle(nodes)
        if len(nodes) < 2:
            return None
        first = set(nodes[: len(nodes) // 2])
        return [g for g in members if layout.node[g] in first], [g for g in members if layout.node[g] not in first]
    rng.shuffle(members)
    least = 2 if c.kind is ComponentKind.NVSWITCH else 1
    if len(members) < 2 * least:
        return None
    return sorted(members[: len(members) // 2]), sorted(members[len(members) // 2 :])


def shared_draws(ctx: _Context, c: Component, healthy: Sequence[int]) -> list[_Draw]:
    """The two sub-tests' draws of the shared component ``c`` (see :func:`test_shared`);
    empty when ``c`` cannot be tested (too few GPUs for two halves).

    Raises:
        ValueError: for a rail NIC or a rail switch (``c.ids`` of two, or a rail layout).
    """
    lay = ctx.layout
    if lay.rail or len(c.ids) != 1 or c.kind not in (ComponentKind.NIC, ComponentKind.NVSWITCH, ComponentKind.SWITCH):
        raise ValueError(f"{c.kind} {list(c.ids)}: only non-rail NICs, NVSwitches and leaf switches are claims")
    halves = shared_halves(c, lay, ctx.rng)
    if halves is None:
        return []
    pool = [g for g in healthy if g not in c.members]
    if c.kind is ComponentKind.NVSWITCH:
        return [_SharedSwap(h, pool, [], 2, "node") for h in halves]
    if c.kind is ComponentKind.NIC:
        home = lay.switch_of(min(c.members))
        refs = [g for g in pool if lay.switch_of(g) == home]
        return [_SharedSwap(h, refs, pool, 1, "node") for h in halves]
    return [_SharedSwap(h, pool, pool, 1, "switch") for h in halves]


def test_shared(ctx: _Context, c: Component, level: float, healthy: Sequence[int]) -> ClaimResult:
    """Test the claim "the NIC, NVSwitch or leaf switch ``c`` slows the probes on its paths by
    at least ``min_slowdown``": two sub-tests, one per half of its GPUs (:func:`shared_halves`).

    A NIC's references are GPUs of other nodes under its node's switch; an NVSwitch's, pairs
    of GPUs of one other node; a leaf switch's, GPUs under other switches. References and
    pads come from ``healthy`` (GPUs believed healthy). Rail NICs and rail switches are not
    claims here (a rail NIC carries one GPU's paths: no halves; it is told from the GPU above
    it by :func:`test_rail_nic`).

    Raises:
        ValueError: as :func:`shared_draws`.
    """
    draws = shared_draws(ctx, c, healthy)
    if not draws:
        return _result(
            ctx, c.kind, (None, None), level, [PairedTest(ctx.theta0, level)], 0, "too few GPUs under it for two halves", (), c
        )
    return _run(ctx, c.kind, (None, None), level, draws, c)


def rail_nic(layout: Layout, g: int) -> Component:
    """The rail NIC above GPU ``g`` of a rail-optimized layout: ``nic`` ``(node, rail)``, whose
    one member is ``g`` (as :meth:`~faultsense_pipelines.replica.topology.ReplicaTopology.nic`).

    Raises:
        ValueError: the layout has no rails.
    """
    if not layout.rail:
        raise ValueError("a rail NIC needs a rail-optimized layout")
    return Component(ComponentKind.NIC, (layout.node[g], layout.rail[g]), frozenset((g,)))


def inside_pool(layout: Layout, g: int, healthy: Sequence[int]) -> list[int]:
    """The GPUs of ``g``'s node, other than ``g``, among ``healthy`` (in its order): the
    partners of :func:`test_rail_nic`'s inside-the-node probes."""
    return [h for h in healthy if h != g and layout.node[h] == layout.node[g]]


@dataclass
class _InsideSwap(_Draw):
    """One round of the reverse test: ``T = {h} | Q`` against ``R = {g} | Q``, ``h`` and ``Q``
    drawn afresh each round from ``pool`` (other GPUs of ``g``'s node), ``size`` GPUs a side."""

    g: int
    pool: list[int]
    size: int

    def __call__(self, ctx: _Context) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        if self.size < 2 or len(self.pool) < self.size:
            return None
        h = ctx.rng.choice(self.pool)
        q = ctx.rng.sample([x for x in self.pool if x != h], self.size - 1)
        return tuple(sorted([h, *q])), tuple(sorted([self.g, *q]))


def test_rail_nic(
    ctx: _Context,
    gpu: ClaimResult,
    wallet: ErrorBudget,
    healthy: Sequence[int],
    name: str,
    nic: Component | None = None,
) -> tuple[ClaimResult, ClaimResult | None]:
    """Tell a confirmed GPU claim on a rail-optimized replica from its rail NIC, by a test.

    On a rail replica GPU ``g``'s inter-node paths all cross its rail NIC, and nothing else's
    do; a GPU claim (:func:`test_gpu`) swaps ``g`` for a partner of another node on its rail,
    so its two sides differ in ``g`` and in ``g``'s NIC: its rejection shows "``g`` or its rail
    NIC slows probes by at least ``s = min_slowdown``". This opens a second claim, at a fresh
    level ``a2`` from ``wallet``, whose rounds lie inside ``g``'s node (no probe crosses a NIC):
    ``T = {h} | Q`` against ``R = {g} | Q``, ``h`` and ``Q`` other GPUs of the node from
    ``healthy`` (``h`` drawn afresh each round), ``min(k, GPUs available)`` GPUs a side, at
    least two; a :class:`~.eprocess.PairedTest` at ``theta0 = -log s``. Its null is "inside
    its node, ``g`` is at least ``s`` times slower than ``h``" (``T`` no larger than
    ``R / s`` in law).

    * It **rejects**: ``g`` is not ``s`` slow inside its node, so the slowdown the GPU claim
      confirmed lies on its inter-node paths: the rail NIC is confirmed, and the GPU's row
      becomes ``inconclusive``, "slow only across nodes".
    * Its upper side rejects (``g`` shown at least ``s`` slow inside its node): the GPU stays
      confirmed, no ambiguity.
    * Neither within the claim cap or the probe budget, or the node has too few GPUs in
      ``healthy`` for a probe of two (then no level is opened): the GPU stays confirmed, its
      reason "``gpu:g`` or its rail NIC ``name``".

    Proof sketch (the NIC verdict's error). Assume a slow GPU is slow alike in every probe
    that runs it, inside its node as across nodes (:mod:`.eprocess`'s exchangeability for both
    tests). Let the NIC be healthy. If ``g`` is not ``s`` slow, neither ``g`` nor its NIC is:
    the GPU claim's null is true, and it rejected with probability at most its level ``a1``.
    If ``g`` is ``s`` slow, it is ``s`` slow inside its node too: the reverse test's null is
    true, and it rejected with probability at most ``a2``. So a healthy rail NIC is confirmed
    with probability at most ``a1 + a2``; both levels come from the sweep's one wallet, and
    the GPU is then not confirmed, so the sweep's expected number of healthy components
    confirmed stays at most ``alpha``. The NIC's ``level`` is ``a1 + a2`` and its
    ``confidence`` the smaller of the two tests' (``1 - min(1, alpha / (a_i e_i))``): stated
    at ``1 - b``, both tests reject at ``a_i b / alpha``, an error of at most
    ``(a1 + a2) b / alpha``.

    What breaks attribution (not the bound on the tests): a second slow GPU, or a slow
    intra-node link, among ``h`` and ``Q`` (it hides ``g``'s slowness inside the node); a GPU
    fault that only shows on its inter-node traffic (its PCIe path to the NIC: that is its
    NIC's path too, and is reported as the NIC).

    Args:
        ctx: the drill-down's context (oracle, probe budget, layout with rails, seeded draws).
        gpu: the GPU claim, confirmed, on a rail-optimized layout.
        wallet: the sweep's error budget (a level is opened only when the test can run).
        healthy: GPUs believed healthy, most trusted first (the inside-node partners).
        name: the NIC's name for the reasons (``nic:node3/rail5``).
        nic: the rail NIC (default :func:`rail_nic` of the layout).

    Returns:
        ``(gpu_row, nic_row)``: the GPU claim as it stands now, and the rail NIC's confirmed
        claim (kind ``nic``, ``shared`` the NIC) or ``None``.

    Raises:
        ValueError: ``gpu`` is not a confirmed GPU claim, or the layout has no rails.
    """
    if gpu.kind != ComponentKind.GPU or gpu.gpu is None or gpu.status != Status.CONFIRMED:
        raise ValueError("the rail NIC test follows a confirmed GPU claim")
    g = gpu.gpu
    nic = nic or rail_nic(ctx.layout, g)
    ambiguous = f"gpu:{g} or its rail NIC {name}"
    pool = inside_pool(ctx.layout, g, healthy)
    size = min(ctx.k, len(pool))
    if size < 2:
        return replace(gpu, reason=f"{ambiguous} (too few GPUs on its node for a probe inside it)"), None
    if ctx.budget.left < 4:
        return replace(gpu, reason=f"{ambiguous} (Phase 2 budget spent before a probe inside its node)"), None
    level = wallet.open()
    test = PairedTest(-ctx.theta0, level)
    draw = _InsideSwap(g, pool, size)
    played = _Rounds()
    why: str | None = None
    evidence: list[tuple[int, ...]] = []
    while not (test.rejected or test.cleared):
        if played.done >= ctx.max_rounds:
            why = f"undecided after {played.done} rounds (claim cap)"
            break
        step = played.play(ctx, draw, "no probe inside its node")
        if played.why is not None:
            why = played.why
            break
        if step is not None:
            test.add(*step[1])
            evidence.append(step[0][1])
    rounds = played.done
    lo, hi = test.interval()  # of h's probe / g's probe: g's inside slowdown is (1 / hi, 1 / lo)
    if test.cleared and not test.rejected:
        return gpu, None
    if not test.rejected:
        e = test.evalue()
        inside = f"inside its node slow by {1 / hi:.2f}-{1 / lo:.2f}x"
        return replace(gpu, reason=f"{ambiguous} ({inside}; {why or 'undecided'}, e-value {e:.3g} of {1 / level:.3g})"), None
    inside = f"inside its node at most {1 / lo:.2f}x slower"
    e2 = test.evalue()
    confidence = min(gpu.confidence, 1.0 - min(1.0, ctx.alpha / (level * e2)))
    nic_row = ClaimResult(
        ComponentKind.NIC,
        None,
        None,
        Status.CONFIRMED,
        gpu.level + level,
        min(gpu.evalue, e2),
        confidence,
        gpu.slowdown,
        gpu.interval,
        gpu.rounds + rounds,
        None,
        gpu.evidence,
        nic,
    )
    gpu_row = replace(
        gpu, status=Status.INCONCLUSIVE, reason=f"slow only across nodes: its rail NIC {name} is confirmed ({inside})"
    )
    return gpu_row, nic_row
