"""The sweep of one replica for one hour: Phase 1 over the cover, then Phase 2.

``phase1_probe_run`` runs every probe of the replica's cover through its executor.
With the default evidence drill-down (and ``sequential``) ``phase2_drilldown`` always runs (it
reads every Phase 1 sweep) and ``fault_ledger`` is the sweep's one commit. With ``adaptive`` or ``paper`` it
materializes only when Phase 1 found suspects (``output_required=False``);
otherwise it and ``fault_ledger`` are skipped, and Phase 1 itself commits the partition: its
probe rows and its fault batch -- empty, or the one ``replica:<name>`` suspect row of a sweep
judged replica-wide degraded -- so that re-running a formerly faulty hour clears its old rows.
With a drill-down, ``fault_ledger`` commits both phases' rows and the verdicts.

Nothing is written before the commit (:mod:`.commit`): a replica whose executor fails (cannot
start, unreachable server, crashed worker, timeout) keeps the partition's last completed
sweep, faults included, gets its attempt's rows (error rows included) committed as the
partition's ``-failed`` batch and a failed step naming the cause; an interrupted sweep writes nothing.
"""

import hashlib
import logging
from datetime import UTC, datetime
from typing import Any

import dagster as dg

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.fleet import MAX_REPEATS, FleetError, Replica
from faultsense_pipelines.ledger import LedgerStore, ProbeRunRow
from faultsense_pipelines.localize import Localization, Phase1Result, run_phase1, run_phase2
from faultsense_pipelines.localize.suspects import MedianRatioRule, RobustRule, SuspectRule, default_rule
from faultsense_pipelines.replica.topology import ReplicaTopology
from faultsense_pipelines.replica.vocabulary import DEFAULT_DRILLDOWN, DrilldownMethod, Outcome
from faultsense_pipelines.resources.executors import ProbeExecutorResource, redact_secrets
from faultsense_pipelines.resources.fleet import FleetResource
from faultsense_pipelines.resources.ledger import LedgerResource

from .commit import commit_sweep, failed_batch, fault_batch, record_failed_attempt, run_started_at
from .partitions import SWEEP_PARTITIONS, SweepKey, sweep_key
from .report import latency_plot, partition_metadata, suspects_markdown, verdicts_markdown
from .rows import degraded_row, error_rows, probe_counts, probe_rows, sweep_row

__all__ = ["DEFAULT_REPEATS", "SweepConfig", "fault_batch", "phase1_probe_run", "phase2_drilldown", "sweep_topology"]

#: Measurements per probe when neither the run config nor the fleet file says otherwise.
DEFAULT_REPEATS = 3


class SweepConfig(dg.Config):
    """Run config of a sweep (the nightly schedule raises ``repeats``).

    Attributes:
        repeats: measurements per probe; 0 takes the replica's ``repeats`` from the fleet
            file, else 3.
        cover_method: ``best`` or ``greedy`` (the paper's Algorithm 1).
        drilldown_method: ``evidence`` (default: paired, weighed tests with a posterior on
            every verdict), ``sequential`` (anytime-valid paired claims under one error budget
            a sweep, docs/verdicts.md), ``adaptive`` (halving; trusts each probe's pass or fail) or
            ``paper`` (Algorithm 2). Both ops must have the same value (``phase1_probe_run``
            commits a suspect-free sweep itself only for the binary ones); a run that gives
            them different values is refused before any probe runs.
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


def _check_same_drilldown(context: dg.AssetExecutionContext, config: SweepConfig) -> None:
    """Refuse a run whose two sweep ops name different drill-downs, before any probe runs.

    ``phase1_probe_run`` commits a suspect-free sweep itself only for the binary drill-downs,
    and ``phase2_drilldown`` skips only then; with different values a partition would be
    committed twice, or not at all (left with its previous sweep).

    Raises:
        dagster.Failure: naming both run-config fields and their values (cut to 40 characters).
    """
    selection = context.run.asset_selection  # empty or None: the whole job
    if selection and dg.AssetKey("phase2_drilldown") not in selection:
        return
    run_config: dict[str, Any] = dict(context.run.run_config or {})
    ops: dict[str, Any] = run_config.get("ops") or {}
    phase2: dict[str, Any] = (ops.get("phase2_drilldown") or {}).get("config") or {}
    other = phase2.get("drilldown_method", DEFAULT_DRILLDOWN.value)
    if other != config.drilldown_method:
        raise dg.Failure(
            description=f"ops.phase2_drilldown.config.drilldown_method {str(other)[:40]!r} differs from "
            f"ops.phase1_probe_run.config.drilldown_method {config.drilldown_method[:40]!r}: give both ops the same value"
        )


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
    _check_same_drilldown(context, config)
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

    written = None
    if not result.needs_drilldown and not DrilldownMethod.parse(config.drilldown_method, "drilldown_method").reads_every_sweep:
        # Final after Phase 1 (the binary drill-downs skip Phase 2 without a suspect; the
        # evidence one always reads Phase 1, and fault_ledger is then the sweep's one commit):
        # commit the probe rows and the partition's fault batch -- empty, or
        # one replica-wide row when the sweep is degraded -- and clear a stale Phase 2 file.
        faults = (
            [degraded_row(result, key=key, sweep_id=context.run.run_id, detected_at=datetime.now(UTC))]
            if result.replica_degraded
            else []
        )
        sweep = sweep_row(
            key=key, sweep_id=context.run.run_id, executor=replica.executor, started_at=run_started_at(context),
            finished_at=datetime.now(UTC), probes_phase1=len(result.records), probes_phase2=0, drilldown=None, faults=faults,
        )  # fmt: skip
        written, path = commit_sweep(
            store, key, phase1=rows, phase2=None, faults=faults, sweep_id=context.run.run_id, sweep=sweep
        )
        context.log_event(
            dg.AssetMaterialization(
                asset_key="fault_ledger",
                partition=context.partition_key,
                description="Replica-wide degradation: one replica row (Phase 2 skipped)."
                if faults
                else "Phase 1 found no suspect: no fault rows (Phase 2 skipped).",
                metadata={"rows": len(faults), "path": dg.MetadataValue.path(path), "replica_degraded": result.replica_degraded},
            )
        )
        if result.replica_degraded:
            context.log.warning(
                f"replica {replica.name}: most probes are slow (replica-wide degradation); one replica row, no component blamed"
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
            "probe_runs_file": dg.MetadataValue.path(written) if written else "written with the verdicts by fault_ledger",
            "ledger": store.display_uri,
        },
    )


@dg.asset(
    partitions_def=SWEEP_PARTITIONS,
    output_required=False,
    group_name="sweep",
    kinds={"python", "parquet"},
    description="Phase 2 drill-down: pins slow GPUs, links and shared components (evidence, the default, "
    "and sequential read every sweep; adaptive and paper run only when Phase 1 found suspects).",
)
def phase2_drilldown(
    context: dg.AssetExecutionContext,
    config: SweepConfig,
    phase1_probe_run: Phase1Result,
    fleet: FleetResource,
    probe_executors: ProbeExecutorResource,
    ledger: LedgerResource,
):
    phase1 = phase1_probe_run
    if not phase1.needs_drilldown and not DrilldownMethod.parse(config.drilldown_method, "drilldown_method").reads_every_sweep:
        context.log.info("Phase 1 found no suspect: no drill-down (Phase 2 and the ledger step are skipped)")
        return
    key = sweep_key(context)
    replica = _replica(fleet, key.replica)
    repeats = _repeats(config, replica)
    store = ledger.store()
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
        seed=_sweep_seed(key.replica, key.hour),
    ).placed(topology)
    errors = [r for r in loc.phase2_records if r.outcome == Outcome.ERROR]
    if errors:
        rows = probe_rows([*phase1.records, *loc.phase2_records], scrub=scrub, **common)
        raise _fail_with_errors(
            context, store, key, 2, rows, len(errors), len(loc.phase2_records), scrub(errors[0].error or ""),
            executor=replica.executor, drilldown=config.drilldown_method,
        )  # fmt: skip
    yield dg.Output(
        loc,
        metadata={
            **partition_metadata("phase2_drilldown", key.hour, replica.name, str(context.partition_key)),
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


def sweep_topology(replica: Replica, executor: object, log: logging.Logger) -> ReplicaTopology:
    """The replica's topology for a sweep's verdicts: the fleet file's, with its nodes named
    after the hosts the executor's workers run on (``executor.hosts``, one per GPU: the ``ray``
    executor reads them from its actors) where the file names none
    (:meth:`~faultsense_pipelines.replica.topology.ReplicaTopology.named_by_hosts`). Where
    those hosts do not fit ``gpus_per_node`` the nodes keep their ``node<v>`` names and ``log``
    gets one warning line saying why."""
    topology = replica.replica_topology
    hosts = getattr(executor, "hosts", None) or ()
    if not hosts:
        return topology
    named, why = topology.named_by_hosts(list(hosts))
    if why:
        log.warning(f"{replica.name}: the nodes keep their node<v> names, not the executor's hosts: {why}")
    return named


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 4)
