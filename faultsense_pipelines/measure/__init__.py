"""Measuring probes: a probe's latency from its repeats, taken in rounds, judged against a
slow threshold.

* :mod:`.batch` -- running probes: one probe with its errors as rows, a batch in one call
  (any executor, through :func:`.batch.batched`).
* :mod:`.threshold` -- a probe's latency (the median of its repeats) and the three-zone
  judgement against a threshold (fail, pass, measure again).
* :mod:`.noise` -- the noise scale of a sweep's latencies (repeat spread, robust location).
* :mod:`.rounds` -- repeats taken in rounds, round detrending, and a probe judged against a
  healthy reference measured alongside it.
* :mod:`.repeats` -- one probe measured ``repeats`` times and judged.
* :mod:`.sweep` -- a Phase 1 sweep measured as arrays, errors as NaN rows.

Nothing here knows the suspect rules or the drill-downs (:mod:`faultsense_pipelines.localize`).
"""
