"""What both drill-down methods share: the state of knowledge and padded probes.

A probe over GPU set S tests every GPU of S and every link inside S, and fails iff one of
them is faulty. Everything in a passing probe is *exonerated*; a *candidate* is a component
that is neither exonerated nor already judged. A GPU confirmed faulty masks its links: no
probe can judge a link without running its endpoints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

from ..topology import Link, link

__all__ = ["Oracle", "Finding", "DrilldownResult", "Knowledge", "Unmeasurable"]

#: Runs one Phase 2 probe: True = slow (failed), False = passed, None = not measured.
Oracle = Callable[[tuple[int, ...]], "bool | None"]


class Unmeasurable(Exception):
    """A Phase 2 probe could not be measured, or could not be built (no clean padding)."""


@dataclass(frozen=True)
class Finding:
    """One component judged by a drill-down.

    Attributes:
        kind: ``"gpu"`` or ``"link"``.
        gpu: the GPU, or the link's smaller id.
        peer_gpu: the link's larger id, ``None`` for a GPU.
        status: ``"confirmed"``, ``"masked"`` or ``"inconclusive"``.
        evidence: index (in oracle call order) of the failing probe that pinned it, or ``None``.
        tests_used: Phase 2 probes spent since the previous finding.
    """

    kind: str
    gpu: int
    peer_gpu: int | None
    status: str
    evidence: int | None
    tests_used: int


@dataclass(frozen=True)
class DrilldownResult:
    """Findings of one drill-down and the Phase 2 probes it ran."""

    findings: tuple[Finding, ...]
    tests: int


class Knowledge:
    """Mutable state of one drill-down run (internal to the algorithms; never returned)."""

    def __init__(self, n: int, k: int, passed: Sequence[Sequence[int]], oracle: Oracle) -> None:
        self.n, self.k, self._oracle = n, min(k, n), oracle
        self.ok_gpu: set[int] = set()
        self.ok_link: set[Link] = set()
        self.bad_gpu: set[int] = set()
        self.bad_link: set[Link] = set()
        self.unsure_gpu: set[int] = set()
        self.unsure_link: set[Link] = set()
        self.findings: list[Finding] = []
        self.probes: list[tuple[int, ...]] = []  # every Phase 2 probe run, in order
        self.tests = 0
        self._since_last = 0
        self.last_fail: tuple[frozenset[int], bool, int] | None = None  # (test set, clean pad, index)
        for p in passed:
            self.exonerate(p)

    # -- knowledge ---------------------------------------------------------------------
    def exonerate(self, gpus: Iterable[int]) -> None:
        gs = sorted(set(gpus))
        self.ok_gpu.update(gs)
        self.ok_link.update(combinations(gs, 2))

    def candidate_gpu(self, g: int) -> bool:
        return g not in self.ok_gpu and g not in self.bad_gpu and g not in self.unsure_gpu

    def candidate_link(self, a: int, b: int) -> bool:
        e = link(a, b)
        judged = self.bad_gpu | self.unsure_gpu
        return e not in self.ok_link and e not in self.bad_link and e not in self.unsure_link and not {a, b} & judged

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
        """A confirmed faulty link with both ends in ``gpus``, if any."""
        gs = set(gpus)
        return next((e for e in sorted(self.bad_link) if e[0] in gs and e[1] in gs), None)

    # -- probes ------------------------------------------------------------------------
    def padding(self, test: set[int], avoid: Iterable[int] = ()) -> tuple[list[int], bool] | None:
        """Exonerated GPUs that fill ``test`` up to k GPUs.

        The padding's links among themselves and to every exonerated GPU of ``test`` must be
        exonerated, so a failure can only come from the test's candidates (links from a
        candidate GPU to the padding are themselves candidates: they cannot be avoided).
        Returns (padding, clean) where clean says no padding link is a candidate, or
        ``None`` when no such padding exists.
        """
        need = self.k - len(test)
        if need <= 0:
            return [], not any(self.candidate_gpu(g) for g in test)
        avoid = set(avoid) | test
        fixed = [g for g in test if g in self.ok_gpu]
        chosen: list[int] = []
        for p in sorted(self.ok_gpu - avoid - self.bad_gpu):
            if all(link(p, q) in self.ok_link for q in (*fixed, *chosen)):
                chosen.append(p)
                if len(chosen) == need:
                    return chosen, len(fixed) == len(test)
        return None

    def test(self, gpus: Iterable[int], avoid: Iterable[int] = ()) -> bool:
        """Run the padded probe over ``gpus``; True when it failed.

        Raises:
            Unmeasurable: when no clean padding exists or the probe errored.
        """
        core = set(gpus)
        pad = self.padding(core, avoid)
        if pad is None:
            raise Unmeasurable(f"no clean padding for {sorted(core)}")
        probe = tuple(sorted(core | set(pad[0])))
        index = self.tests
        self.probes.append(probe)
        self.tests += 1
        self._since_last += 1
        result = self._oracle(probe)
        if result is None:
            raise Unmeasurable(f"probe {list(probe)} could not be measured")
        if result:
            self.last_fail = (frozenset(core), pad[1], index)
            return True
        self.exonerate(probe)
        return False

    # -- verdicts ----------------------------------------------------------------------
    def _record(self, kind: str, a: int, b: int | None, status: str, evidence: int | None) -> None:
        self.findings.append(Finding(kind, a, b, status, evidence, self._since_last))
        self._since_last = 0

    def confirm_gpu(self, g: int, evidence: int | None) -> None:
        self.bad_gpu.add(g)
        self._record("gpu", g, None, "confirmed", evidence)

    def confirm_link(self, e: Link, evidence: int | None) -> None:
        self.bad_link.add(e)
        self._record("link", e[0], e[1], "confirmed", evidence)

    def give_up(self, gpus: Iterable[int]) -> None:
        """Mark the candidates left among ``gpus`` inconclusive (judged no further)."""
        gs = set(gpus)
        for g in sorted(gs):
            if self.candidate_gpu(g):
                self.unsure_gpu.add(g)
                self._record("gpu", g, None, "inconclusive", None)
        for e in self.candidate_links(gs):
            self.unsure_link.add(e)
            self._record("link", e[0], e[1], "inconclusive", None)

    def result(self) -> DrilldownResult:
        """Findings, plus the links between two faulty GPUs as masked."""
        findings = list(self.findings)
        for a, b in combinations(sorted(self.bad_gpu), 2):
            findings.append(Finding("link", a, b, "masked", None, 0))
        return DrilldownResult(tuple(findings), self.tests)
