"""The oracle drill-downs of Phase 2: from suspect probes to the faulty GPUs and GPU-to-GPU paths.

Both methods are pure functions over a *test oracle*: ``test(gpus) -> True`` (the probe over
``gpus`` is slow), ``False`` (it passed) or ``None`` (it could not be measured). They know
nothing of executors, latencies or ledgers; :mod:`faultsense_pipelines.localize.driver` wires
them to a real executor and a suspect rule. Both trust each probe's pass or fail, which is
exact on noise-free probes only; the default drill-down, ``"sequential"``, decides each
blame by a paired test whose error rate holds under any noise
(:mod:`faultsense_pipelines.localize.sequential`).

* ``"paper"`` -- the paper's Algorithm 2, one padded probe per suspect component (:mod:`.paper`).
* ``"adaptive"`` -- exonerate, then adaptive group testing by halving (:mod:`.adaptive`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from ...replica.vocabulary import DrilldownMethod
from .adaptive import adaptive_drilldown
from .common import DrilldownResult, Finding, Oracle
from .paper import paper_drilldown

__all__ = ["DrilldownResult", "Finding", "Oracle", "drilldown"]


def drilldown(
    n: int,
    k: int,
    passed: Sequence[Sequence[int]],
    failed: Sequence[Sequence[int]],
    test: Oracle,
    method: DrilldownMethod | str = DrilldownMethod.ADAPTIVE,
    *,
    recheck_explained: bool = True,
) -> DrilldownResult:
    """Localize the faults behind the ``failed`` Phase 1 probes.

    Args:
        n: GPUs in the replica.
        k: probe size; every Phase 2 probe has exactly ``min(k, n)`` GPUs.
        passed: GPU sets of the Phase 1 probes that passed (everything in them is healthy).
        failed: GPU sets of the suspect Phase 1 probes (the suspect groups).
        test: the oracle that runs one Phase 2 probe.
        method: a :class:`~faultsense_pipelines.replica.vocabulary.DrilldownMethod` or its word
            (``"adaptive"``, ``"paper"``).
        recheck_explained: adaptive only; see :func:`.adaptive.adaptive_drilldown`.

    Returns:
        A :class:`DrilldownResult`.

    Raises:
        ValueError: on an unknown method or a GPU id outside ``0..n-1``.
    """
    methods: dict[DrilldownMethod, Callable[..., DrilldownResult]] = {
        DrilldownMethod.ADAPTIVE: partial(adaptive_drilldown, recheck_explained=recheck_explained),
        DrilldownMethod.PAPER: paper_drilldown,
    }
    chosen = DrilldownMethod.parse(method, "drilldown method")
    if chosen not in methods:  # the sequential drill-down measures rounds: it needs a round oracle
        raise ValueError(f"drilldown method {chosen} needs measured latencies: use localize.run_phase2")
    for gpus in (*passed, *failed):
        if gpus and (min(gpus) < 0 or max(gpus) >= n):
            raise ValueError(f"probe {list(gpus)} names a GPU outside 0..{n - 1}")
    return methods[chosen](n, k, passed, failed, test)
