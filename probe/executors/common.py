"""Driver-side pieces shared by the ``local`` and ``ray`` executors.

Both executors send one probe to its member workers (:class:`~.moe_worker.ProbeWorker`)
and merge what they report into a :class:`ProbeTrace`: the probe's latency per repeat is
the slowest member's, and the routing the members saw is kept so that tests and operators
can check that a probe touched exactly its GPUs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from faultsense_pipelines.probes import ProbeMeasurement

__all__ = ["ProbeTrace", "check_probe", "merge_member_reports", "error_trace", "warm_up_probes"]


@dataclass(frozen=True)
class ProbeTrace:
    """A measured probe and what each member did for it.

    Attributes:
        measurement: the :class:`ProbeMeasurement` (latency per repeat, ms, or an error).
        routed_experts: the top-k expert ids of every probe token, ``(tokens, k)``, members'
            shards in GPU order; empty on error.
        experts_computed: GPU id -> ids of the experts on it that ran the FFN for the probe.
        checksum: sum of the layer output over all tokens (fp32), for cross-executor checks.
    """

    measurement: ProbeMeasurement
    routed_experts: tuple[tuple[int, ...], ...] = ()
    experts_computed: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    checksum: float | None = None


def check_probe(gpus: Sequence[int], n_gpus: int, repeats: int, tokens: int) -> tuple[int, ...]:
    """Validate a probe request and return its GPUs sorted.

    Raises:
        ValueError: naming the bad value: a non-integer or out-of-range GPU id, a duplicate,
            an empty probe, more GPUs than probe tokens, or ``repeats < 1``.
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    gpus = list(gpus)
    if not gpus:
        raise ValueError("a probe needs at least one GPU, got []")
    for g in gpus:
        if isinstance(g, bool) or not isinstance(g, int) or not 0 <= g < n_gpus:
            raise ValueError(f"GPU id must be an integer in 0..{n_gpus - 1}, got {g!r} in probe {gpus}")
    if len(set(gpus)) != len(gpus):
        dup = next(g for g in gpus if gpus.count(g) > 1)
        raise ValueError(f"duplicate GPU id {dup} in probe {gpus}")
    if len(gpus) > tokens:
        raise ValueError(f"probe {gpus} has more GPUs than probe tokens ({tokens}); raise tokens")
    return tuple(sorted(gpus))


def merge_member_reports(members: tuple[int, ...], reports: Mapping[int, Mapping[str, Any]]) -> ProbeTrace:
    """Merge the members' :meth:`~.moe_worker.ProbeWorker.run_probe` reports.

    The probe's latency in repeat ``r`` is the slowest member's: the probe is done when the
    last member has combined its tokens' expert outputs.
    """
    per_member = [reports[m]["latencies_ms"] for m in members]
    latencies = tuple(max(lat) for lat in zip(*per_member, strict=True))
    routed = tuple(tuple(row) for m in members for row in reports[m]["routed_experts"])
    computed = {m: tuple(reports[m]["experts_computed"]) for m in members}
    checksum = sum(reports[m]["checksum"] for m in members)
    return ProbeTrace(ProbeMeasurement(members, latencies), routed, computed, checksum)


def error_trace(members: tuple[int, ...], reason: str) -> ProbeTrace:
    """A trace for a probe that could not be measured."""
    return ProbeTrace(ProbeMeasurement(members, (), error=reason))


def warm_up_probes(n_gpus: int, probe_size: int) -> list[tuple[int, ...]]:
    """Disjoint probes of up to ``probe_size`` GPUs that together hold every GPU once.

    A new pool runs them before its first real probe, so that every worker has connected to
    its peers and knows its usual layer time (see ``ProbeWorker``'s injected slowdown).

    >>> warm_up_probes(5, 2)
    [(0, 1), (2, 3), (4,)]
    """
    return [tuple(range(i, min(i + probe_size, n_gpus))) for i in range(0, n_gpus, probe_size)]
