"""The sweep of one replica for one hour: Phase 1 over the cover, then Phase 2.

``phase1_probe_run`` measures: it runs every probe of the replica's cover through its
executor and names the suspects; it writes nothing to the ledger. ``phase2_drilldown`` always
materializes: the sequential drill-down (the default) reads every Phase 1 sweep; ``adaptive`` and
``paper`` drill down only when Phase 1 found suspects, and otherwise give an empty drill-down
(0 probes, no verdict; its metadata says "no suspect: no drill-down"). ``fault_ledger``
(:mod:`.ledger`) is the one asset that writes the ledger: it commits every completed sweep --
both phases' probe rows, the fault rows and the ``sweeps`` row -- in one commit. A sweep
without a drill-down commits an empty fault batch, or the one ``replica:<name>`` suspect row of
a sweep judged replica-wide degraded, so that re-running a formerly faulty hour clears its old rows.

Nothing is written before the commit (:mod:`.commit`): a replica whose executor fails (cannot
start, unreachable server, crashed worker, timeout) keeps the partition's last completed
sweep, faults included, gets its attempt's rows (error rows included) committed as the
partition's ``-failed`` batch and a failed step naming the cause; an interrupted sweep writes nothing.
"""

import hashlib
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import dagster as dg

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.fleet import MAX_REPEATS, FleetError, Replica
from faultsense_pipelines.ledger import LedgerStore, ProbeRunRow
from faultsense_pipelines.localize import Localization, Phase1Result, run_phase1, run_phase2
from faultsense_pipelines.localize.suspects import MedianRatioRule, RobustRule, SuspectRule, default_rule
from faultsense_pipelines.replica.executor import HostedExecutor, ProbeExecutor
from faultsense_pipelines.replica.topology import ReplicaTopology
from faultsense_pipelines.replica.vocabulary import DEFAULT_DRILLDOWN, DrilldownMethod, Outcome
from faultsense_pipelines.resources.executors import ProbeExecutorResource, redact_secrets
from faultsense_pipelines.resources.fleet import FleetResource
from faultsense_pipelines.resources.ledger import LedgerResource

from .commit import failed_batch, fault_batch, record_failed_attempt, run_started_at
from .partitions import SWEEP_PARTITIONS, SweepKey, sweep_key
from .report import latency_plot, partition_metadata, suspects_markdown, verdicts_markdown
from .rows import error_rows, probe_counts, probe_rows, sweep_row

__all__ = [
    "DEFAULT_REPEATS",
    "NO_DRILLDOWN",
    "SweepConfig",
    "drilldown_method_of",
    "drills_down",
    "fault_batch",
    "phase1_probe_run",
    "phase2_drilldown",
    "sweep_topology",
]

#: Measurements per probe when neither the run config nor the fleet file says otherwise.
DEFAULT_REPEATS = 3


class SweepConfig(dg.Config):
    """Run config of a sweep (the nightly schedule raises ``repeats``).

    Attributes:
        repeats: measurements per probe; 0 takes the replica's ``repeats`` from the fleet
            file, else 3.
        cover_method: ``best`` or ``greedy`` (the paper's Algorithm 1).
        drilldown_method: ``sequential`` (default: anytime-valid paired claims under one
            error budget a sweep, docs/verdicts.md), ``adaptive`` (halving; trusts each probe's pass or fail) or
            ``paper`` (Algorithm 2). Read from ``phase2_drilldown``'s config only
            (:func:`drilldown_method_of`); ``phase1_probe_run`` shares this config class, so one
            run config serves both ops, and ignores it.
        recheck: adaptive drill-down only: re-check the links hidden behind a slow GPU or
            link (exact, the default). False spends about (n-1)/(k-1) fewer Phase 2 probes
            per slow GPU but can miss a slow link hidden there; the Phase 2 metadata counts
            what was left as ``unjudged_links``.
    """

    repeats: int = 0
    cover_method: str = "best"
    drilldown_method: str = DEFAULT_DRILLDOWN.value  # a DrilldownMethod word (Dagster config is plain text)
    recheck: bool = True


def _replica(fleet: FleetResource, name: str) -> Replica:
    try:
        return fleet.replica(name)
    except (KeyError, FleetError) as exc:
        raise dg.Failure(description=str(exc).strip("'\"")) from None


#: ``phase2_drilldown``'s metadata ``drilldown`` when a binary drill-down had no suspect to read.
NO_DRILLDOWN = "no suspect: no drill-down"


def drilldown_method_of(run_config: Mapping[str, Any] | None) -> str:
    """A sweep run's Phase 2 method: ``ops.phase2_drilldown.config.drilldown_method`` of its
    run config, else the default (``sequential``). The one place the method is read from."""
    ops: dict[str, Any] = dict(run_config or {}).get("ops") or {}
    config: dict[str, Any] = (ops.get("phase2_drilldown") or {}).get("config") or {}
    return str(config.get("drilldown_method", DEFAULT_DRILLDOWN.value))


def drills_down(phase1: Phase1Result, method: str) -> bool:
    """Whether a sweep's Phase 2 reads its Phase 1 with ``method``: always with ``sequential``
    (:attr:`~faultsense_pipelines.replica.vocabulary.DrilldownMethod.reads_every_sweep`);
    with the binary ones (``adaptive``, ``paper``) only when Phase 1 found suspects."""
    return phase1.needs_drilldown or DrilldownMethod.parse(method, "drilldown_method").reads_every_sweep


def _repeats(config: SweepConfig, replica: Replica) -> int:
    if not 0 <= config.repeats <= MAX_REPEATS:
        raise dg.Failure(description=f"repeats must be in 0..{MAX_REPEATS} (0: the fleet's), got {config.repeats}")
    return config.repeats or replica.repeats or DEFAULT_REPEATS


def _rule(replica: Replica) -> SuspectRule:
    if replica.alpha is not None:
        return MedianRatioRule(replica.alpha)
    return RobustRule(min_slowdown=replica.min_slowdown) if replica.min_slowdown is not None else default_rule()


def _sweep_seed(replica: str, hour: str) -> int:
    """The sequential drill-down's seed for one sweep partition: fixed per (replica, hour), so
    a re-run of the hour draws the same measurement orders, and unrelated to the noise."""
    return int.from_bytes(hashlib.sha256(f"{replica}\x1f{hour}".encode()).digest()[:4], "big")


def _fail_with_errors(
    context: dg.AssetExecutionContext,
    store: LedgerStore,
    key: SweepKey,
    phase: int,
    rows: list[ProbeRunRow],
    errors: int,
    total: int,
    first: str,
    *,
    executor: str,
    drilldown: str | None = None,
) -> dg.Failure:
    phase1, phase2, failed = probe_counts(rows)
    sweep = sweep_row(
        key=key, sweep_id=context.run.run_id, executor=executor, started_at=run_started_at(context),
        finished_at=datetime.now(UTC), probes_phase1=phase1, probes_phase2=phase2, drilldown=drilldown,
        failed_probes=failed,
    )  # fmt: skip
    path = record_failed_attempt(store, key, rows, sweep)
    return dg.Failure(
        description=f"replica {key.replica}: {errors} of {total} Phase {phase} probes could not be measured "
        f"({first}); error rows committed to the ledger as batch {failed_batch(key)} ({path.rsplit('/', 1)[-1]}); no fault rows written, the partition's last completed sweep kept",
        metadata={"error_probes": errors, "probe_runs_file": dg.MetadataValue.path(path), "ledger": store.display_uri},
    )


@dg.asset(
    partitions_def=SWEEP_PARTITIONS,
    deps=[dg.AssetDep("probe_cover", partition_mapping=dg.AllPartitionMapping())],
    group_name="sweep",
    kinds={"python", "parquet"},
    description="Phase 1: every probe of the replica's cover, measured `repeats` times; suspects by the fleet's rule. Rows in probe_runs/.",
)
def phase1_probe_run(
    context: dg.AssetExecutionContext,
    config: SweepConfig,
    fleet: FleetResource,
    probe_executors: ProbeExecutorResource,
    ledger: LedgerResource,
) -> dg.Output[Phase1Result]:
    key = sweep_key(context)
    replica = _replica(fleet, key.replica)
    repeats = _repeats(config, replica)
    cover = plan_cover(replica.gpus, replica.probe_size, config.cover_method)
    store = ledger.store()
    common = {"sweep_id": context.run.run_id, "replica": replica.name, "executor": replica.executor}
    try:
        executor = probe_executors.executor_for(replica)
    except Exception as exc:
        message = redact_secrets(f"{replica.executor} executor could not start: {exc}", replica)
        rows = error_rows(cover.probes, message, **common)
        raise _fail_with_errors(
            context, store, key, 1, rows, len(cover.probes), len(cover.probes), message, executor=replica.executor
        ) from None

    context.log.info(f"Phase 1 on {replica.name}: {len(cover.probes)} probes x {repeats} repeats ({replica.executor})")
    result = run_phase1(executor, cover, repeats=repeats, rule=_rule(replica))
    scrub = lambda text: redact_secrets(text, replica)  # noqa: E731
    rows = probe_rows(result.records, scrub=scrub, **common)
    if result.errors:
        first = next(r.error for r in result.records if r.error)
        raise _fail_with_errors(
            context, store, key, 1, rows, result.errors, len(result.records), scrub(first or ""), executor=replica.executor
        )

    return dg.Output(
        result,
        metadata={
            **partition_metadata("phase1_probe_run", key.hour, replica.name, str(context.partition_key)),
            "executor": replica.executor.value,  # Dagster metadata takes plain strings, not enums
            "probes_used": len(result.records),
            "repeats": repeats,
            "cover_method": result.cover_method,
            "baseline_ms": _round(result.baseline_ms),
            "threshold_ms": _round(result.threshold_ms),
            "suspect_probes": len(result.suspect_probes),
            "replica_degraded": result.replica_degraded,
            "needs_drilldown": result.needs_drilldown,
            "suspects": dg.MetadataValue.md(suspects_markdown(result)),
            "latency_plot": latency_plot(
                result.records, result.baseline_ms, result.threshold_ms, f"{replica.name} Phase 1, {key.hour}"
            ),
            "probe_runs_file": "written with the verdicts by fault_ledger",
            "ledger": store.display_uri,
        },
    )


@dg.asset(
    partitions_def=SWEEP_PARTITIONS,
    group_name="sweep",
    kinds={"python", "parquet"},
    description="Phase 2 drill-down: pins slow GPUs, links and shared components (sequential, the default, "
    "reads every sweep; adaptive and paper drill down only when Phase 1 found suspects, else an empty drill-down).",
)
def phase2_drilldown(
    context: dg.AssetExecutionContext,
    config: SweepConfig,
    phase1_probe_run: Phase1Result,
    fleet: FleetResource,
    probe_executors: ProbeExecutorResource,
    ledger: LedgerResource,
) -> dg.Output[Localization]:
    phase1 = phase1_probe_run
    key = sweep_key(context)
    store = ledger.store()
    if not drills_down(phase1, config.drilldown_method):
        return _no_drilldown(context, key, phase1, store.display_uri)
    replica = _replica(fleet, key.replica)
    repeats = _repeats(config, replica)
    common = {"sweep_id": context.run.run_id, "replica": replica.name, "executor": replica.executor}
    scrub = lambda text: redact_secrets(text, replica)  # noqa: E731
    executor = probe_executors.executor_for(replica)
    topology = sweep_topology(replica, executor, context.log)
    loc: Localization = run_phase2(
        executor,
        phase1,
        method=config.drilldown_method,
        repeats=repeats,
        rule=_rule(replica),
        recheck_explained=config.recheck,
        topology=topology,
        alpha=replica.phase2.alpha if replica.phase2 else None,
        phase2_budget=replica.phase2.budget if replica.phase2 else None,
        min_slowdown=replica.phase2.min_slowdown if replica.phase2 else None,
        seed=_sweep_seed(key.replica, key.hour),
    ).placed(topology)
    errors = [r for r in loc.phase2_records if r.outcome == Outcome.ERROR]
    if errors:
        rows = probe_rows([*phase1.records, *loc.phase2_records], scrub=scrub, **common)
        raise _fail_with_errors(
            context, store, key, 2, rows, len(errors), len(loc.phase2_records), scrub(errors[0].error or ""),
            executor=replica.executor, drilldown=config.drilldown_method,
        )  # fmt: skip
    return dg.Output(
        loc,
        metadata={
            **partition_metadata("phase2_drilldown", key.hour, replica.name, str(context.partition_key)),
            "drilldown": config.drilldown_method,
            "probes_used": loc.probes_phase1 + loc.probes_phase2,
            "probes_phase1": loc.probes_phase1,
            "probes_phase2": loc.probes_phase2,
            "confirmed_gpus": dg.MetadataValue.json(loc.faulty_gpus),
            "confirmed_links": dg.MetadataValue.json(loc.faulty_links),
            "unjudged_links": loc.unjudged_links,
            "verdicts": dg.MetadataValue.md(verdicts_markdown(loc.verdicts, loc.probes_phase1)),
            "latency_plot": latency_plot(
                loc.phase2_records, phase1.baseline_ms, phase1.threshold_ms, f"{replica.name} Phase 2, {key.hour}"
            ),
            "ledger": store.display_uri,
        },
    )


def _no_drilldown(context: dg.AssetExecutionContext, key: SweepKey, phase1: Phase1Result, ledger: str) -> dg.Output[Localization]:
    """The empty drill-down of a binary drill-down without a suspect: no probe, no verdict;
    ``fault_ledger`` commits the sweep's Phase 1 rows and its fault batch (empty, or the
    ``replica:<name>`` row of a degraded sweep)."""
    context.log.info(f"Phase 1 found no suspect: {NO_DRILLDOWN}")
    if phase1.replica_degraded:
        context.log.warning(
            f"replica {key.replica}: most probes are slow (replica-wide degradation); one replica row, no component blamed"
        )
    loc = Localization(phase1, (), ())
    return dg.Output(
        loc,
        metadata={
            **partition_metadata("phase2_drilldown", key.hour, key.replica, str(context.partition_key)),
            "drilldown": NO_DRILLDOWN,
            "probes_used": loc.probes_phase1,
            "probes_phase1": loc.probes_phase1,
            "probes_phase2": 0,
            "replica_degraded": phase1.replica_degraded,
            "ledger": ledger,
        },
    )


def sweep_topology(replica: Replica, executor: ProbeExecutor, log: logging.Logger) -> ReplicaTopology:
    """The replica's topology for a sweep's verdicts: the fleet file's, with its nodes named
    after the hosts the executor's workers run on where it is a
    :class:`~faultsense_pipelines.replica.executor.HostedExecutor` (``executor.hosts``, one per
    GPU: the ``ray`` executor reads them from its actors) and the file names none
    (:meth:`~faultsense_pipelines.replica.topology.ReplicaTopology.named_by_hosts`). Where
    those hosts do not fit ``gpus_per_node`` the nodes keep their ``node<v>`` names and ``log``
    gets one warning line saying why."""
    topology = replica.replica_topology
    hosts = executor.hosts if isinstance(executor, HostedExecutor) else ()
    if not hosts:
        return topology
    named, why = topology.named_by_hosts(list(hosts))
    if why:
        log.warning(f"{replica.name}: the nodes keep their node<v> names, not the executor's hosts: {why}")
    return named


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 4)
