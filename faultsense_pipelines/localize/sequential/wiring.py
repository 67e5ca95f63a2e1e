"""The sequential drill-down over one executor (``--drilldown sequential``).

Reads the Phase 1 sweep against a time-local baseline, estimates the per-measurement noise,
measures every round of a test probe and its reference as ``2r`` single measurements in a
uniformly random order (seeded: the order, not the machine, is the randomness the
guarantee rests on), and turns the claims into :class:`~..verdicts.Verdict` rows whose
``confidence`` is what the test guarantees (:mod:`.drilldown`).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from itertools import chain

import numpy as np

from ...measure.baseline import detrended_excess, estimate_sigma, time_detrended
from ...measure.batch import measure
from ...replica.executor import ProbeExecutor
from ...replica.topology import ReplicaTopology
from ...replica.vocabulary import Outcome, Status
from ..verdicts import Phase1Result, ProbeRecord, Verdict
from .drilldown import default_budget, read_rounds, sequential_drilldown, shared_proposals, shared_read_cost
from .pairing import Layout, shape

__all__ = ["DEFAULT_ALPHA", "DEFAULT_MIN_SLOWDOWN", "drill_units", "layout_of", "run_sequential_phase2", "shape_corrected"]

#: Expected healthy components blamed per sweep, at most, by default.
DEFAULT_ALPHA = 0.01

#: Smallest slowdown a verdict claims, by default (a fleet's ``min_slowdown`` raises it).
DEFAULT_MIN_SLOWDOWN = 1.2


def drill_units(
    probes: Sequence[Sequence[int]], suspects: Sequence[int], excess: Sequence[float | None], effect: float
) -> list[int]:
    """Phase 1 probes to drill into: the rule's suspects and every probe whose time-detrended
    excess reaches ``effect``, less those a moving baseline shows were lifted by a load burst
    (excess below ``effect / 2``).

    On a tiny replica, where some GPU sits in half the cover's probes or more (n = 8, k = 4:
    every GPU in 3 of 6), a slow GPU's probes are half of every baseline window and lift it, so
    Phase 1 cannot judge that GPU alone: there every probe with excess from ``effect / 2`` is
    drilled into, and the paired claims decide. Which probes are drilled into decides what is
    searched, never a claim's validity.

    Args:
        probes: the Phase 1 probes (GPU ids), in cover order.
        suspects: the suspect rule's suspect probes (indices into ``probes``).
        excess: per probe, ``log(latency / baseline at its time)``
            (:func:`~faultsense_pipelines.measure.baseline.detrended_excess`; ``None`` on error).
        effect: log of the smallest slowdown that is a fault.

    Returns:
        Indices into ``probes``, ascending.

    Six probes of two GPUs, each GPU in at most a third of them: a probe is drilled into
    from ``effect`` (log 1.2 = 0.18); in the first four alone every GPU sits in half the
    probes, and from ``effect / 2``:

    >>> pairs = [(0, 1), (2, 3), (0, 2), (1, 3), (4, 5), (6, 7)]
    >>> drill_units(pairs, (), [0.5, 0.0, 0.12, None, 0.0, 0.0], math.log(1.2))
    [0]
    >>> drill_units(pairs[:4], (), [0.5, 0.0, 0.12, None], math.log(1.2))
    [0, 2]
    """
    counts = np.bincount(np.fromiter(chain.from_iterable(probes), dtype=np.int64), minlength=1)
    share = int(counts.max()) / max(1, len(probes))
    flag = effect / 2 if share >= 0.5 else effect
    flagged = set(suspects) | {i for i, x in enumerate(excess) if x is not None and x >= flag}
    return sorted(i for i in flagged if (x := excess[i]) is not None and x >= effect / 2)


def layout_of(n: int, topology: ReplicaTopology | None) -> Layout:
    """The :class:`~.pairing.Layout` of a replica: its nodes and their leaf switches."""
    if topology is None:
        return Layout.flat(n)
    node = tuple(topology.node(g) for g in range(n))
    per_switch = topology.nodes_per_switch
    switch = tuple(v // per_switch for v in range(topology.nodes)) if per_switch else ()
    rail = tuple(g % topology.gpus_per_node for g in range(n)) if topology.rails and topology.gpus_per_node else ()
    return Layout(node, switch, rail)


def shape_corrected(latencies: Sequence[Sequence[float]], probes: Sequence[Sequence[int]], layout: Layout) -> list[list[float]]:
    """Phase 1 latencies with each common probe shape scaled to the sweep's typical level.

    A probe spanning more nodes crosses more inter-node paths and is slower with nothing
    faulty, so one baseline for every probe makes the widest probes look slow. Probes are
    grouped by :func:`~.pairing.shape`; in a group of at least three measured probes every
    latency is divided by the group's median and multiplied by the median of all groups'
    medians, so the shapes line up before the time-local baseline
    (:func:`~faultsense_pipelines.measure.baseline.time_detrended`) reads them. Smaller groups are kept as
    they are. Only the search's proposals and the noise estimate read this; no claim's
    validity depends on it (claims pair probes of one shape).

    Args:
        latencies: per probe, its latencies in ms (empty when not measured).
        probes: per probe, its GPUs.
        layout: where the GPUs sit (one node: one shape per probe size, nothing changes).

    Returns:
        The corrected latencies (ms), one list per probe.

    >>> lay = Layout((0, 0, 1, 1))
    >>> shape_corrected([[10.0], [10.0], [10.0], [12.0], [12.0], [13.2]], [(0, 1), (0, 1), (2, 3), (0, 2), (1, 3), (0, 3)], lay)
    [[11.0], [11.0], [11.0], [11.0], [11.0], [12.1]]
    """
    groups: dict[object, list[int]] = {}
    for i, gpus in enumerate(probes):
        if latencies[i]:
            groups.setdefault(shape(gpus, layout), []).append(i)
    medians = {
        key: statistics.median(x for i in members for x in latencies[i]) for key, members in groups.items() if len(members) >= 3
    }
    out = [list(lat) for lat in latencies]
    if len(medians) < 2:
        return out
    level = statistics.median(medians.values())
    for key, middle in medians.items():
        for i in groups[key]:
            out[i] = [x * level / middle for x in latencies[i]]
    return out


def run_sequential_phase2(
    executor: ProbeExecutor,
    phase1: Phase1Result,
    *,
    repeats: int,
    seed: int = 0,
    alpha: float = DEFAULT_ALPHA,
    min_slowdown: float = 1.2,
    budget: int | None = None,
    topology: ReplicaTopology | None = None,
) -> tuple[tuple[ProbeRecord, ...], tuple[Verdict, ...]]:
    """Drill into a Phase 1 sweep with anytime-valid paired claims.

    Args:
        executor: runs the Phase 2 probes.
        phase1: the Phase 1 sweep (read against a time-local baseline, so a sweep the rule
            called degraded during a load burst is still read).
        repeats: measurements of each probe in a round (>= 1).
        seed: seed of the measurement orders and of every draw.
        alpha: expected healthy components blamed in this sweep, at most.
        min_slowdown: smallest slowdown that is a fault (> 1).
        budget: Phase 2 probes, at most; :func:`~.drilldown.default_budget` when ``None``.
        topology: where the GPUs sit (references of the same shape); flat when ``None``.

    Returns:
        The Phase 2 records (each round: its test probes, then its reference; a test's
        outcome ``"fail"`` when the round alone reads it ``min_slowdown`` slow: the median of
        its measurements above ``min_slowdown`` times its reference's) and the verdicts:
        confirmed and inconclusive GPUs and links, masked links.

    Raises:
        ValueError: ``repeats < 1``, ``alpha`` outside (0, 1), ``min_slowdown <= 1``, or a
            Phase 1 with no measured probe.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    p1 = phase1.records
    latencies = p1.first_latencies(phase1.repeats)
    measured = [x for lat in latencies for x in lat]
    if not measured:
        raise ValueError("the sequential drill-down needs a Phase 1 sweep with at least one measured probe")
    layout = layout_of(phase1.gpus, topology)
    typical = statistics.median(measured)
    raw = [math.log(statistics.median(lat) / typical) if lat else None for lat in latencies]
    gpus = [r.gpus for r in p1]  # each record is built once
    latencies = shape_corrected(latencies, gpus, layout)
    detrended = time_detrended(latencies, phase1.baseline_ms or statistics.median(measured))
    excess = detrended_excess(detrended)
    effect = math.log(min_slowdown)
    units = drill_units(gpus, phase1.suspect_probes, excess, effect)
    sigma = estimate_sigma(detrended, excess, units)  # of one measurement's log-latency
    # on a quiet replica also drill into probes slow by less than half the effect (three
    # standard errors of a probe's median, at least a quarter of the effect): a fault below
    # min_slowdown is then reported for what it is instead of passing for healthy. One such
    # fault slows at most one GPU's probes, about (n - 1) / (k - 1); when more probes than
    # that read slow, the noise has heavier tails than its scale says and the replica is not
    # quiet: no extra probe is drilled into
    flag = max(effect / 4, 3.75 * sigma / math.sqrt(max(1, phase1.repeats)))
    if flag < effect / 2:
        extra = {i for i, x in enumerate(excess) if x is not None and x >= flag} - set(units)
        one_gpu = math.ceil((phase1.gpus - 1) / max(1, phase1.probe_size - 1)) + 2
        if len(extra) <= one_gpu:
            units = sorted(set(units) | extra)
    records: list[ProbeRecord] = []
    rng = random.Random(seed)

    def round_oracle(probes: Sequence[tuple[int, ...]]) -> tuple[tuple[float, ...], ...] | None:
        slots = [i for i in range(len(probes)) for _ in range(repeats)]
        rng.shuffle(slots)
        got: list[list[float]] = [[] for _ in probes]
        error: str | None = None
        for i in slots:
            m = measure(executor, probes[i], 1)  # an executor error: a row
            if not m.ok:
                error = m.error
                break
            got[i].append(m.latencies_ms[0])
        ok = error is None
        ref = statistics.median(got[-1]) if ok else math.nan
        for i, (gpus, lat) in enumerate(zip(probes, got, strict=True)):
            slow = ok and i < len(probes) - 1 and statistics.median(lat) > min_slowdown * ref
            outcome = Outcome.ERROR if not ok else (Outcome.FAIL if slow else Outcome.PASS)
            records.append(
                ProbeRecord(2, len(records), tuple(sorted(gpus)), tuple(lat) if ok else (), None if ok else error, outcome)
            )
        return tuple(tuple(lat) for lat in got) if ok else None

    phase1_probes: Sequence[tuple[Sequence[int], float | None]] = list(zip(gpus, excess, strict=True))
    # the shared components Phase 1 points at (its suspects and the rule's, and the probes
    # holding one slower than the rest before shape correction): a slow NIC held by every
    # cross-node probe moves Phase 1's baseline, and only Phase 2 reads tell the NICs apart
    placed = topology if topology is not None and topology.gpus_per_node is not None else None
    flagged = set(units) | set(phase1.suspect_probes)
    shared = shared_proposals(placed, layout, phase1_probes, flagged, raw=raw, contrast=effect / 2) if placed else []
    if budget is None:
        # as many probes as Phase 1 (at least four minimal claims), plus one quick read of each
        budget = default_budget(len(p1), alpha, repeats) + len(shared) * shared_read_cost(read_rounds(effect, sigma, repeats))
    result = sequential_drilldown(
        phase1.gpus,
        phase1.probe_size,
        phase1_probes,
        units,
        round_oracle,
        sigma=sigma,
        alpha=alpha,
        min_slowdown=min_slowdown,
        budget=budget,
        repeats=repeats,
        layout=layout,
        seed=seed,
        topology=placed,
        shared=shared,
    )
    verdicts = tuple(
        Verdict(
            c.kind,
            c.gpu,
            c.peer_gpu,
            c.status,
            c.slowdown,
            2,
            2 * c.rounds,
            None if c.status is Status.MASKED or c.level == 0.0 else c.confidence,  # untested: no confidence
            c.reason,
            shared=c.shared,
            name=topology.name(c.shared) if c.shared is not None and topology is not None else None,
            evidence=tuple(dict.fromkeys(c.evidence))[:8],
        )
        for c in result.claims
        if c.status is not None
    )
    return tuple(records), verdicts
