"""Localization: from measured probes to verdicts on GPUs, links and shared components.

Read in the order a sweep runs:

* :mod:`.suspects` -- the suspect rules: which Phase 1 probes are slow.
* :mod:`.anchor` -- a degraded sweep re-judged against its fast cluster of probes.
* :mod:`.drilldown` -- the oracle drill-downs ``adaptive`` and ``paper`` (pure functions).
* :mod:`.sequential` -- the default drill-down, ``sequential``: anytime-valid paired claims
  under one error budget a sweep (docs/verdicts.md).
* :mod:`.verdicts` -- the result types (:class:`Localization`, :class:`Phase1Result`,
  :class:`ProbeRecord`, :class:`Verdict`), frozen and picklable.
* :mod:`.driver` -- :func:`run_phase1`, :func:`run_phase2` and :func:`localize`, which drive
  one executor through both phases.
"""

from __future__ import annotations

from .driver import localize, run_phase1, run_phase2
from .verdicts import Localization, Phase1Records, Phase1Result, ProbeRecord, Verdict

__all__ = ["Localization", "Phase1Records", "Phase1Result", "ProbeRecord", "Verdict", "localize", "run_phase1", "run_phase2"]
