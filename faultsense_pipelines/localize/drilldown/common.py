"""What both drill-down methods share: the state of knowledge and padded probes.

A probe over GPU set S tests every GPU of S and every link inside S, and fails iff one of
them is faulty. Everything in a passing probe is *exonerated*; a *candidate* is a component
that is neither exonerated nor already judged. A GPU confirmed faulty masks its links: no
probe can judge a link without running its endpoints.

References:
    FaultSense (APSys '26), §4.3: padding with known-healthy GPUs.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from ...replica.topology import Link, link
from ...replica.vocabulary import ComponentKind, Status

__all__ = ["DrilldownResult", "Finding", "Knowledge", "Oracle", "Unmeasurable", "confidence_text"]


def confidence_text(confidence: float) -> str:
    """A posterior probability as text, with enough digits that one short of a target never
    reads as ``1.00``: two decimals below 0.99, else cut (not rounded) after the first digit
    that is not 9.

    >>> confidence_text(0.5073), confidence_text(0.99501), confidence_text(0.9999876)
    ('0.51', '0.995', '0.99998')
    """
    if confidence < 0.99 or confidence >= 1.0:
        return f"{confidence:.2f}"
    text = f"{confidence:.12f}"
    first = next((i for i, ch in enumerate(text[2:], start=2) if ch != "9"), len(text) - 1)
    return text[: first + 1].rstrip("0")


_PADDING_ATTEMPTS = 16  # greedy fills in a few shuffled orders before declaring no padding

#: Runs one Phase 2 probe: True = slow (failed), False = passed, None = not measured.
Oracle = Callable[[tuple[int, ...]], "bool | None"]


class Unmeasurable(Exception):
    """A Phase 2 probe could not be measured, or could not be built (no clean padding)."""


@dataclass(frozen=True)
class Finding:
    """One component judged by a drill-down.

    Attributes:
        kind: :attr:`ComponentKind.GPU` or :attr:`ComponentKind.LINK`.
        gpu: the GPU, or the link's smaller id.
        peer_gpu: the link's larger id, ``None`` for a GPU.
        status: :attr:`Status.CONFIRMED`, :attr:`Status.MASKED` or :attr:`Status.INCONCLUSIVE`.
        evidence: index (in oracle call order) of the failing probe that pinned it, or ``None``.
        tests_used: Phase 2 probes spent since the previous finding.
    """

    kind: ComponentKind
    gpu: int
    peer_gpu: int | None
    status: Status
    evidence: int | None
    tests_used: int


@dataclass(frozen=True)
class DrilldownResult:
    """Findings of one drill-down and the Phase 2 probes it ran."""

    findings: tuple[Finding, ...]
    tests: int


class Knowledge:
    """Mutable state of one drill-down run (internal to the algorithms; never returned).

    Exonerated links are an (n, n) boolean matrix (``ok_link[a, b]``, both orders; n^2 bytes,
    16 MiB at n = 4096) filled from Phase 1's passing probes a probe size at a time, and the
    probes each GPU passed and failed in are (n,) int arrays, so a sweep of hundreds of
    thousands of probes builds no Python set of link tuples.
    """

    def __init__(
        self, n: int, k: int, passed: Sequence[Sequence[int]], oracle: Oracle, failed: Sequence[Sequence[int]] = ()
    ) -> None:
        self.n, self.k, self._oracle = n, min(k, n), oracle
        self.ok_gpu: set[int] = set()
        self.ok_link = np.zeros((n, n), dtype=bool)  # ok_link[a, b] (both orders): link a-b exonerated
        self.bad_gpu: set[int] = set()
        self.bad_link: set[Link] = set()
        self.unsure_gpu: set[int] = set()
        self.unsure_link: set[Link] = set()
        self.findings: list[Finding] = []
        self.confirming: set[Link] = set()  # links whose confirmation is in progress (no re-entry)
        self.probes: list[tuple[int, ...]] = []  # every Phase 2 probe run, in order
        self.tests = 0
        self._since_last = 0
        self.last_clean = True
        self.last_fail: tuple[frozenset[int], bool, int] | None = None  # (test set, clean pad, index)
        # probes each GPU passed / failed in, both phases: (n,) int arrays
        self.passes = _gpu_counts(passed, n)
        self.fails = _gpu_counts(failed, n)
        for rows in _rows_by_size(passed).values():  # Phase 1's passing probes, a probe size at a time
            self.ok_gpu.update(np.unique(rows).tolist())
            for i in range(rows.shape[1]):
                for j in range(rows.shape[1]):
                    self.ok_link[rows[:, i], rows[:, j]] = True
        np.fill_diagonal(self.ok_link, False)

    # -- knowledge ---------------------------------------------------------------------
    def exonerate(self, gpus: Iterable[int]) -> None:
        gs = sorted(set(gpus))
        self.ok_gpu.update(gs)
        idx = np.asarray(gs, dtype=np.int64)
        self.ok_link[idx[:, None], idx[None, :]] = True
        self.ok_link[idx, idx] = False

    def candidate_gpu(self, g: int) -> bool:
        return g not in self.ok_gpu and g not in self.bad_gpu and g not in self.unsure_gpu

    def candidate_link(self, a: int, b: int) -> bool:
        e = link(a, b)
        judged = self.bad_gpu | self.unsure_gpu
        return not self.ok_link[a, b] and e not in self.bad_link and e not in self.unsure_link and not {a, b} & judged

    def candidate_links(self, gpus: Iterable[int]) -> list[Link]:
        return [e for e in combinations(sorted(set(gpus)), 2) if self.candidate_link(*e)]

    def core(self, gpus: Iterable[int]) -> set[int]:
        """The GPUs of ``gpus`` that carry a candidate (a candidate GPU or a candidate link's end)."""
        gs = set(gpus) - self.bad_gpu - self.unsure_gpu
        core = {g for g in gs if self.candidate_gpu(g)}
        for a, b in self.candidate_links(gs):
            core.update((a, b))
        return core

    def known_fault_inside(self, gpus: Iterable[int]) -> Link | None:
        """A confirmed faulty (or inconclusive) link with both ends in ``gpus``, if any."""
        gs = set(gpus)
        return next((e for e in sorted(self.bad_link | self.unsure_link) if e[0] in gs and e[1] in gs), None)

    # -- probes ------------------------------------------------------------------------
    def padding(
        self, test: set[int], avoid: Iterable[int] = (), must_avoid: Iterable[int] | None = None
    ) -> tuple[list[int], bool] | None:
        """Exonerated GPUs that fill ``test`` up to k GPUs.

        *Clean* padding has every link among its GPUs, and to every exonerated GPU of
        ``test``, exonerated, so a failure can only come from the test's candidates (links
        from a candidate GPU to the padding are themselves candidates of that GPU: they
        cannot be avoided). When no clean padding exists, the padding that adds the fewest
        candidate links is returned with ``clean=False``: its pass still exonerates
        everything, its failure proves nothing about the test alone.

        The padding is taken outside ``avoid`` when possible, and always outside
        ``must_avoid``; by default ``must_avoid`` is ``avoid`` when ``test`` holds a candidate
        GPU (its links to ``avoid`` would make the probe test more than ``test``). Returns
        (padding, clean), or ``None`` when there are not enough exonerated GPUs.
        """
        need = self.k - len(test)
        if need <= 0:
            return [], True
        if must_avoid is None:
            must_avoid = avoid if any(self.candidate_gpu(g) for g in test) else ()
        must = set(must_avoid)
        pool = sorted(self.ok_gpu - test - self.bad_gpu - must)
        if len(pool) < need:
            return None
        avoided = set(avoid)
        preferred = [p for p in pool if p not in avoided]
        for candidates in (preferred, pool):
            found = self._clean_padding(test, candidates, need)
            if found is not None:
                return found, True
        return self._fewest_candidate_links(test, preferred if len(preferred) >= need else pool, need), False

    def _clean_padding(self, test: set[int], pool: list[int], need: int) -> list[int] | None:
        fixed = [g for g in test if g in self.ok_gpu]
        ok = self.ok_link
        order = list(pool)
        rng = random.Random(len(self.probes))  # deterministic restarts
        for _ in range(_PADDING_ATTEMPTS):
            chosen: list[int] = []
            for p in order:  # first fit; usually done after a few GPUs
                if all(ok[p, q] for q in (*fixed, *chosen)):
                    chosen.append(p)
                    if len(chosen) == need:
                        return sorted(chosen)
            rng.shuffle(order)
        return None

    def _fewest_candidate_links(self, test: set[int], pool: list[int], need: int) -> list[int]:
        fixed = [g for g in test if g in self.ok_gpu]
        chosen: list[int] = []
        for _ in range(need):  # greedily, the GPU adding the fewest candidate links
            p = min(
                (p for p in pool if p not in chosen),
                key=lambda p: sum(not self.ok_link[p, q] for q in (*fixed, *chosen)),
            )
            chosen.append(p)
        return sorted(chosen)

    def test(self, gpus: Iterable[int], avoid: Iterable[int] = (), must_avoid: Iterable[int] | None = None) -> bool:
        """Run the padded probe over ``gpus``; True when it failed.

        ``self.last_clean`` tells whether the padding was clean (see :meth:`padding`).

        Raises:
            Unmeasurable: when there are too few exonerated GPUs to pad, or the probe errored.
        """
        core = set(gpus)
        pad = self.padding(core, avoid, must_avoid)
        if pad is None:
            raise Unmeasurable(f"too few exonerated GPUs to pad {sorted(core)}")
        self.last_clean = pad[1]
        probe = tuple(sorted(core | set(pad[0])))
        index = self.tests
        self.probes.append(probe)
        self.tests += 1
        self._since_last += 1
        result = self._oracle(probe)
        if result is None:
            raise Unmeasurable(f"probe {list(probe)} could not be measured")
        if result:
            self.fails[list(probe)] += 1
            self.last_fail = (frozenset(core), pad[1], index)
            return True
        self.passes[list(probe)] += 1
        self.exonerate(probe)
        return False

    def test_alone(
        self, gpus: Iterable[int], avoid: Iterable[int] = (), attempts: int = 3, must_avoid: Iterable[int] | None = None
    ) -> bool | None:
        """Test ``gpus`` until a verdict: False on any pass, True on a cleanly padded failure.

        Padding that is not clean is retried (up to ``attempts`` probes) away from the
        earlier paddings; ``None`` when every attempt failed with unclean padding.
        """
        core, avoid = set(gpus), set(avoid)
        must = None if must_avoid is None else set(must_avoid)
        for _ in range(attempts):
            if not self.test(core, avoid, must):
                return False
            if self.last_clean:
                return True
            avoid |= set(self.probes[-1]) - core
            must = None if must is None else must | avoid
        return None

    def widen(self, e: Link, avoid: Iterable[int] = ()) -> set[int] | None:
        """Make clean padding for link ``e`` exist, if it does not, with one probe.

        The probe is ``a`` plus k-1 GPUs whose links to ``b`` and among themselves are
        exonerated; its pass exonerates their links to ``a`` too. Returns the probe's GPU set
        when it failed with clean padding (a slow link from ``a`` to one of them), else ``None``.
        """
        a, b = e
        padding = self.padding({a, b}, avoid)
        if padding is None or padding[1]:
            return None
        # never next to a known slow link of a: the probe would fail for that known reason
        partners = {x for f in self.bad_link | self.unsure_link if a in f for x in f}
        around_b = self.padding({b}, set(avoid) | {a}, must_avoid=partners | {a})
        if around_b is None or not around_b[1]:
            return None
        probe = {a, *around_b[0]}  # clean padding and no partner of a: no known fault inside
        return probe if self.test(probe) and self.last_clean else None

    def doubtful(self, g: int) -> bool:
        """An exonerated GPU that failed in more probes than it passed: a pass may have been noise."""
        return bool(self.fails[g] > self.passes[g])

    def second_opinion(self, g: int, first: int, avoid: Iterable[int] = ()) -> bool | None:
        """Test GPU ``g`` again with clean padding disjoint from that of probe ``first``.

        A slow link from ``g`` to one padding GPU cannot fail both probes. Unclean paddings
        are retried away from each other. True: a clean failure; False: a pass; None: no
        clean verdict.
        """
        disjoint = set(self.probes[first]) - {g}
        for _ in range(3):
            if not self.test({g}, avoid, must_avoid=disjoint):
                return False
            if self.last_clean:
                return True
            disjoint |= set(self.probes[-1]) - {g}
        return None

    def recheck_gpu(self, g: int, avoid: Iterable[int] = ()) -> bool:
        """Re-test a doubtful exonerated GPU alone, twice with disjoint clean paddings.

        Returns True (and confirms ``g`` faulty) when both probes fail: then a slow link
        of ``g`` would have been blamed for ``g`` itself.
        """
        if not self.test_alone({g}, avoid):
            return False
        evidence = self.tests - 1
        if not self.second_opinion(g, evidence, avoid):
            return False
        self.ok_gpu.discard(g)
        self.confirm_gpu(g, evidence)
        return True

    # -- verdicts ----------------------------------------------------------------------
    def _record(self, kind: ComponentKind, a: int, b: int | None, status: Status, evidence: int | None) -> None:
        self.findings.append(Finding(kind, a, b, status, evidence, self._since_last))
        self._since_last = 0

    def confirm_gpu(self, g: int, evidence: int | None) -> None:
        self.bad_gpu.add(g)
        self._record(ComponentKind.GPU, g, None, Status.CONFIRMED, evidence)

    def confirm_link(self, e: Link, evidence: int | None) -> None:
        self.bad_link.add(e)
        self._record(ComponentKind.LINK, e[0], e[1], Status.CONFIRMED, evidence)

    def give_up(self, gpus: Iterable[int]) -> None:
        """Mark the candidates left among ``gpus`` inconclusive (judged no further)."""
        gs = set(gpus)
        for g in sorted(gs):
            if self.candidate_gpu(g):
                self.unsure_gpu.add(g)
                self._record(ComponentKind.GPU, g, None, Status.INCONCLUSIVE, None)
        for e in self.candidate_links(gs):
            self.unsure_link.add(e)
            self._record(ComponentKind.LINK, e[0], e[1], Status.INCONCLUSIVE, None)

    def result(self) -> DrilldownResult:
        """Findings, plus the links between two faulty GPUs as masked."""
        findings = list(self.findings)
        for a, b in combinations(sorted(self.bad_gpu), 2):
            findings.append(Finding(ComponentKind.LINK, a, b, Status.MASKED, None, 0))
        return DrilldownResult(tuple(findings), self.tests)


def _rows_by_size(probes: Sequence[Sequence[int]]) -> dict[int, np.ndarray]:
    """Probes as (probes, size) int64 arrays of their distinct GPU ids, one per probe size."""
    grouped: dict[int, list[Sequence[int]]] = {}
    for p in probes:
        grouped.setdefault(len(p), []).append(p)
    out: dict[int, list[np.ndarray]] = {}
    for size, listed in grouped.items():
        rows = np.asarray(listed, dtype=np.int64).reshape(len(listed), size)
        ordered = np.sort(rows, axis=1)
        twice = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)  # a GPU named twice: keep it once
        out.setdefault(size, []).append(rows[~twice])
        for row in ordered[twice]:
            distinct = np.unique(row)
            out.setdefault(len(distinct), []).append(distinct[None, :])
    return {size: np.concatenate(parts) for size, parts in out.items() if size and sum(map(len, parts))}


def _gpu_counts(probes: Sequence[Sequence[int]], n: int) -> np.ndarray:
    """(n,) int64: how many of ``probes`` hold each GPU (a GPU named twice in a probe counts once)."""
    counts = np.zeros(n, dtype=np.int64)
    for rows in _rows_by_size(probes).values():
        counts += np.bincount(rows.ravel(), minlength=n)
    return counts
