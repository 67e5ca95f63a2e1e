"""Driver-side pieces shared by the ``local`` and ``ray`` executors.

Both executors send one probe to its member workers (:class:`~.moe_worker.ProbeWorker`),
or to every worker in ``all_ranks`` mode (:class:`~faultsense_pipelines.replica.vocabulary.Engine`),
and merge what the members report into a :class:`ProbeTrace`: the probe's latency per repeat
is the slowest member's (the members hold the probe's tokens; in ``all_ranks`` mode their
time includes waiting for every rank in the collectives), and the routing the members saw is
kept so that tests and operators can check that a probe touched exactly its GPUs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

from faultsense_pipelines.replica.executor import ExecutorError, ProbeMeasurement
from faultsense_pipelines.replica.topology import ReplicaTopology
from faultsense_pipelines.replica.vocabulary import Engine

from .injection import Injection, parse_injections, worker_injections
from .moe_worker import LayerShape

__all__ = [
    "DEFAULT_INTERMEDIATE",
    "DEFAULT_TOKENS",
    "LayerOptions",
    "ProbeTrace",
    "WorkerPoolExecutor",
    "check_probe",
    "error_trace",
    "merge_member_reports",
    "warm_up_probes",
]


#: Tokens per probe by engine when the caller gives none. ``member_only``: 64, the paper's
#: probe. ``all_ranks``: 128, where a throttled rank's own expert work stood out most against
#: the work every rank does per forward in ``bench/results/ep_contrast.md``.
DEFAULT_TOKENS: Mapping[Engine, int] = {Engine.MEMBER_ONLY: 64, Engine.ALL_RANKS: 128}

#: Expert FFN width ``I`` by engine when the caller gives none. ``member_only``: 1024,
#: OLMoE-1B-7B's. ``all_ranks``: 8192. Every rank's shared step (attention share, all-reduce,
#: the all-rank split-size exchanges) does not grow with ``I`` while a member's expert FFN does,
#: so a wider expert raises the member-only share of a forward, and with it how far a slow
#: rank's own probes stand out from the others; 8192 is the width where that contrast reached
#: the goal of 0.8 of the rank's own slowdown (``bench/results/ep_contrast.md``). One expert at
#: 8192 is 96 MiB of bf16 weights per GPU.
DEFAULT_INTERMEDIATE: Mapping[Engine, int] = {Engine.MEMBER_ONLY: 1024, Engine.ALL_RANKS: 8192}


@dataclass(frozen=True)
class ProbeTrace:
    """A measured probe and what each member did for it.

    Attributes:
        measurement: the :class:`ProbeMeasurement` (latency per repeat, ms, or an error).
        routed_experts: the top-k expert ids of every probe token, ``(tokens, k)``, members'
            shards in GPU order; empty on error.
        experts_computed: GPU id -> ids of the experts on it that ran the FFN for the probe.
        checksum: sum of the layer output over all tokens (fp32), for cross-executor checks.
        ffn_ms: GPU id -> its expert FFN stage per repeat, ms (injected slowdown included),
            for benchmarks that compare a rank's own slowdown with the probe's.
        ffn_cpu_ms: GPU id -> the CPU time its worker thread spent in that stage, ms (wall
            over CPU time is how much the rank's own work was stretched).
        attention_ms: GPU id -> its shared attention step per repeat (all-reduce included),
            ms; zeros in ``member_only`` mode.
    """

    measurement: ProbeMeasurement
    routed_experts: tuple[tuple[int, ...], ...] = ()
    experts_computed: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    checksum: float | None = None
    ffn_ms: Mapping[int, tuple[float, ...]] = field(default_factory=dict)
    ffn_cpu_ms: Mapping[int, tuple[float, ...]] = field(default_factory=dict)
    attention_ms: Mapping[int, tuple[float, ...]] = field(default_factory=dict)


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
        if isinstance(g, bool) or not isinstance(g, Integral) or not 0 <= g < n_gpus:
            raise ValueError(f"GPU id must be an integer in 0..{n_gpus - 1}, got {g!r} in probe {gpus}")
    gpus = [int(g) for g in gpus]
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
    ffn = {m: tuple(reports[m]["ffn_ms"]) for m in members}
    ffn_cpu = {m: tuple(reports[m].get("ffn_cpu_ms", ())) for m in members}
    attention = {m: tuple(reports[m].get("attention_ms", ())) for m in members}
    return ProbeTrace(ProbeMeasurement(members, latencies), routed, computed, checksum, ffn, ffn_cpu, attention)


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


@dataclass(frozen=True)
class LayerOptions:
    """The probe layer's options a ``local`` or ``ray`` executor takes (its keyword arguments
    of the same names), before the engine's defaults fill ``tokens`` and ``intermediate``
    (``None``: :data:`DEFAULT_TOKENS`, :data:`DEFAULT_INTERMEDIATE`); the rest as
    :class:`~faultsense_pipelines.probe.executors.moe_worker.LayerShape`."""

    tokens: int | None
    hidden: int
    intermediate: int | None
    experts_per_gpu: int
    dtype: str
    seed: int

    def shape(self, gpus: int, engine: Engine) -> LayerShape:
        """The :class:`LayerShape` of a pool of ``gpus`` workers under ``engine``.

        Raises:
            ValueError: a bad option, naming it (:class:`LayerShape`).
        """
        tokens = DEFAULT_TOKENS[engine] if self.tokens is None else self.tokens
        intermediate = DEFAULT_INTERMEDIATE[engine] if self.intermediate is None else self.intermediate
        return LayerShape(
            gpus,
            experts_per_gpu=self.experts_per_gpu,
            hidden=self.hidden,
            intermediate=intermediate,
            tokens=tokens,
            dtype=self.dtype,
            seed=self.seed,
        )


class WorkerPoolExecutor:
    """What the ``local`` and ``ray`` executors share: argument checks, the
    :class:`~faultsense_pipelines.replica.executor.ProbeExecutor` methods on top of two hooks
    (:meth:`_probe`, :meth:`_inject`) and context management."""

    name = ""

    def _configure(
        self,
        gpus: int,
        probe_size: int,
        inject: Iterable[Mapping[str, Any] | Injection],
        layer: LayerOptions,
        timeout_s: float,
        start_timeout_s: float,
        engine: Engine | str = Engine.MEMBER_ONLY,
        topology: ReplicaTopology | None = None,
    ) -> None:
        """Validate the arguments every pool takes (``ValueError`` naming the bad one); the
        layer's shape is :meth:`LayerOptions.shape` (the engine's defaults where ``None``)."""
        if topology is not None and topology.gpus != gpus:
            raise ValueError(f"topology is of {topology.gpus} GPUs, the pool of {gpus}")
        self.topology = topology
        self.engine = Engine.parse(engine, "engine")
        if isinstance(probe_size, bool) or not isinstance(probe_size, int) or not probe_size >= 1:
            raise ValueError(f"probe_size must be an integer >= 1, got {probe_size!r}")
        self.shape = layer.shape(gpus, self.engine)
        if probe_size > gpus:
            raise ValueError(f"probe_size must be <= gpus, got probe_size={probe_size} > gpus={gpus}")
        if self.shape.tokens < probe_size:
            raise ValueError(f"tokens must be >= probe_size={probe_size}, got {self.shape.tokens}")
        for name, value in (("timeout_s", timeout_s), ("start_timeout_s", start_timeout_s)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        self.gpus, self.probe_size = gpus, probe_size
        self.timeout_s = float(timeout_s)
        self.injections = worker_injections(parse_injections(inject, gpus, topology), topology)
        self._failure: str | None = None

    def _probe(self, members: tuple[int, ...], repeats: int) -> Mapping[int, Mapping[str, Any]] | str:
        """Run the probe on :meth:`_ranks_of` it: their reports by GPU, or why that failed."""
        raise NotImplementedError

    def _ranks_of(self, members: tuple[int, ...]) -> tuple[int, ...]:
        """The workers that run a probe over ``members``: its members, or every rank in
        ``all_ranks`` mode."""
        return tuple(range(self.gpus)) if self.engine is Engine.ALL_RANKS else members

    def _inject(self, injections: tuple[Injection, ...]) -> str | None:
        """Send the faults to every worker: ``None``, or why that failed."""
        raise NotImplementedError

    def run_traced(self, gpus: Sequence[int], repeats: int = 1) -> ProbeTrace:
        """Like :meth:`run`, also returning the routing each member saw (see :class:`ProbeTrace`)."""
        members = check_probe(gpus, self.gpus, repeats, self.shape.tokens)
        replies = self._probe(members, repeats)
        if isinstance(replies, str):
            return error_trace(members, replies)
        return merge_member_reports(members, replies)

    def run(self, gpus: Sequence[int], repeats: int = 1) -> ProbeMeasurement:
        """Measure the probe over ``gpus`` ``repeats`` times (latency per repeat, ms).

        Returns:
            A :class:`ProbeMeasurement`; a dead, failing or hung worker gives one with
            ``error`` set (within ``timeout_s``), never a latency.

        Raises:
            ValueError: for a bad GPU id, a duplicate, an empty probe or ``repeats < 1``.
        """
        return self.run_traced(gpus, repeats).measurement

    def set_injections(self, inject: Iterable[Mapping[str, Any] | Injection]) -> None:
        """Replace the injected faults on the running workers (``[]`` heals every GPU and link).

        Args:
            inject: :data:`~faultsense_pipelines.replica.faults.Injection` objects (as a fleet file's
                ``inject`` holds them) or mappings of them, validated here once.

        Raises:
            ValueError: for a bad spec or a GPU outside the replica.
            ExecutorError: if the workers could not be reached.
        """
        injections = worker_injections(parse_injections(inject, self.gpus, self.topology), self.topology)
        failure = self._inject(injections)
        if failure is not None:
            raise ExecutorError(failure)
        self.injections = injections

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
