"""Measuring a Phase 1 sweep as arrays: every probe ``count`` times, errors as NaN rows.

:func:`sweeper` is how :func:`~faultsense_pipelines.localize.driver.run_phase1` measures (its
first pass, a re-sweep, the re-measured probes): a ``(P, count)`` latency array in ms and the
errors by row, whatever the executor. The simulator measures a whole array of probes in one
call (:class:`~faultsense_pipelines.replica.executor.ArrayExecutor`); any other executor runs
through :func:`~faultsense_pipelines.measure.rounds.measure_rounds` or
:func:`~faultsense_pipelines.measure.batch.measure_all`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..replica.executor import ArrayExecutor, ProbeExecutor
from .batch import measure_all
from .rounds import measure_rounds

__all__ = ["Sweeper", "sweeper"]


#: How a sweep measures some of its probes (their indices; ``None``: all) ``count`` times
#: each: ``(len(rows), count)`` latencies in ms, a NaN row for a probe that errored,
#: and the errors by position in ``rows``.
Sweeper = Callable[[Sequence[int] | np.ndarray | None, int], tuple[np.ndarray, dict[int, str]]]


def sweeper(executor: ProbeExecutor, probes: Sequence[Sequence[int]], members: np.ndarray, *, in_rounds: bool) -> Sweeper:
    """The one way a Phase 1 sweep (:func:`~faultsense_pipelines.localize.driver.run_phase1`)
    measures its ``probes``: ``count`` measurements each, taken in rounds (every probe once,
    then every probe again) when ``in_rounds``, else back to back.

    Args:
        executor: runs the probes.
        probes: the sweep's probes (GPU ids), in order.
        members: the same probes as one ``(P, w)`` integer array, ascending within a row, a
            probe of fewer GPUs padded with ``-1``.
        in_rounds: take the measurements in rounds.

    An :class:`~faultsense_pipelines.replica.executor.ArrayExecutor` (the simulator) measures
    rows of ``members`` in one ``run_array`` call per round (equal-size probes only; the same
    draws as ``run_many``, never an error); any other executor goes through
    :func:`~faultsense_pipelines.measure.rounds.measure_rounds` or
    :func:`~faultsense_pipelines.measure.batch.measure_all`, and its errors become NaN rows.

    Raises (from the sweeper):
        ValueError: an executor that returned a number of latencies other than ``count``.
    """
    if isinstance(executor, ArrayExecutor) and len(members) and bool((np.diff(members, axis=1) > 0).all()):
        run_array = executor.run_array

        def by_array(rows: Sequence[int] | np.ndarray | None, count: int) -> tuple[np.ndarray, dict[int, str]]:
            sub = members if rows is None else members[rows]
            if not in_rounds:
                return np.asarray(run_array(sub, count), dtype=np.float64).reshape(len(sub), count), {}
            runs = [np.asarray(run_array(sub, 1), dtype=np.float64).reshape(len(sub), 1) for _ in range(count)]
            return np.concatenate(runs, axis=1), {}

        return by_array
    measure = measure_rounds if in_rounds else measure_all

    def by_probe(rows: Sequence[int] | np.ndarray | None, count: int) -> tuple[np.ndarray, dict[int, str]]:
        some = probes if rows is None else [probes[i] for i in rows]
        lat = np.full((len(some), count), np.nan)
        errors: dict[int, str] = {}
        for j, m in enumerate(measure(executor, some, count)):
            if not m.ok:
                errors[j] = m.error or ""  # not ok: the error is set
            elif len(m.latencies_ms) != count:
                raise ValueError(
                    f"executor {executor.name} returned {len(m.latencies_ms)} latencies for probe {list(m.gpus)}, asked for {count}"
                )
            else:
                lat[j] = m.latencies_ms
        return lat, errors

    return by_probe
