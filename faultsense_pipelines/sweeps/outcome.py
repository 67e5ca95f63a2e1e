"""What one replica's sweep run did (:class:`ReplicaSweep`), read from its Dagster result."""

from __future__ import annotations

from dataclasses import dataclass, field

from faultsense_pipelines.replica.vocabulary import Status

__all__ = ["ReplicaSweep", "failure_message", "summarize", "unsettled_count"]


@dataclass
class ReplicaSweep:
    """What one replica's sweep run did."""

    replica: str
    executor: str
    run_id: str = ""
    success: bool = False
    probes_phase1: int = 0
    probes_phase2: int = 0
    suspects: int = 0
    drilldown: bool = False
    degraded: bool = False
    #: confirmed components, ``gpu:17``, with the node they sit on where the topology names it: ``gpu:17 (a18)``
    confirmed: list[str] = field(default_factory=list)
    unjudged_links: int = 0
    #: the sweep's ``inconclusive`` ledger rows: claims the drill-down did not settle, plus the
    #: ``replica:<name>`` row of a sweep that left links unjudged
    unsettled: int = 0
    error: str = ""
    seconds: float = 0.0
    #: how long it waited for another sweep's lock of the replica before its run (seconds)
    waited_s: float = 0.0
    #: the decisions of the fleet file's actions about this sweep (``fault_actions``'s value:
    #: one dict per decision with action, trigger, component, node, decision, reason, exit_code)
    actions: list[dict] = field(default_factory=list)


def _outputs(result) -> set[str]:
    """Names of the ops that yielded an output in ``result`` (none after a step that failed)."""
    return {e.node_name for e in result.all_events if e.is_successful_output}


def _innermost(error) -> str:
    """The last line of the innermost cause of a Dagster ``SerializableErrorInfo``: the
    exception that really stopped the step, not Dagster's "Error occurred while executing op"."""
    messages = []
    while error is not None:
        if error.message and error.message.strip():
            messages.append(error.message.strip().splitlines()[-1])
        error = error.cause or error.context
    return messages[-1] if messages else "step failed"


def failure_message(result) -> str:
    """Why a failed run failed, in one line: the first failed step's ``dagster.Failure``
    description, else its error (with the innermost cause when that differs)."""
    for event in result.all_events:
        if event.is_step_failure:
            data = event.step_failure_data
            if data.user_failure_data is not None and data.user_failure_data.description:
                return data.user_failure_data.description
            if data.error is None:
                return "step failed"
            outer, cause = data.error.message.strip().splitlines()[-1], _innermost(data.error)
            return outer if cause == outer else f"{outer}: {cause}"
    return "run failed"


def summarize(outcome: ReplicaSweep, result) -> ReplicaSweep:
    """``outcome`` filled in from the replica's finished run ``result`` (a Dagster
    ``ExecuteInProcessResult``): the error of a failed run, else both phases' counts, the
    confirmed components, the unsettled rows and the actions decided. A binary drill-down
    without a suspect (an empty one) counts as no drill-down (``drilldown`` False)."""
    outcome.run_id, outcome.success = result.run_id, result.success
    if not result.success:
        outcome.error = failure_message(result)
        return outcome
    phase1 = result.output_for_node("phase1_probe_run")
    outcome.probes_phase1, outcome.suspects = len(phase1.records), len(phase1.suspect_probes)
    outcome.degraded = phase1.replica_degraded
    from faultsense_pipelines.assets.sweep import drilldown_method_of, drills_down

    loc = result.output_for_node("phase2_drilldown") if "phase2_drilldown" in _outputs(result) else None
    # a binary drill-down without a suspect materializes an empty one: shown as skipped
    outcome.drilldown = loc is not None and drills_down(phase1, drilldown_method_of(result.dagster_run.run_config))
    if loc is not None and outcome.drilldown:
        from faultsense_pipelines.assets.report import component_of

        outcome.degraded = loc.replica_degraded
        outcome.probes_phase2 = loc.probes_phase2
        outcome.confirmed = [
            component_of(v) + (f" ({v.node})" if v.node else "") for v in loc.verdicts if v.status == Status.CONFIRMED
        ]
        outcome.unjudged_links = loc.unjudged_links or 0
        outcome.unsettled = unsettled_count(loc)
    if "fault_actions" in _outputs(result):
        outcome.actions = list(result.output_for_node("fault_actions"))
    return outcome


def unsettled_count(loc) -> int:
    """How many ``inconclusive`` rows a sweep's localization ``loc`` writes to the ledger
    (:func:`assets.rows.fault_rows`): one per inconclusive verdict, and one ``replica:<name>``
    row when it left links unjudged."""
    return sum(v.status == Status.INCONCLUSIVE for v in loc.verdicts) + (1 if loc.unjudged_links else 0)
