"""``fault_actions``: the fleet file's guarded actions about the sweep's verdicts.

An asset of the sweep job, downstream of ``fault_ledger``: it runs in the same run, right
after the sweep's commit, for the same (hour, replica) partition -- so it sees exactly the
committed verdicts, runs under the same one-run-per-replica rule (the CLI's replica lock, the
run queue's tag limit), and ``faultsense sweep`` prints its decisions with the sweep's. (A
sensor would act only while a Dagster daemon runs -- never for a CLI sweep without the UI --
and later than the sweep, in another run.) The decisions are rows of the ledger's ``actions``
dataset (:func:`~faultsense_pipelines.actions.apply_actions`), and this asset's metadata shows
them as a table. A command that fails or times out is a row, not a failed step: the sweep goes on.
"""

from collections import Counter
from typing import Any

import dagster as dg

from faultsense_pipelines.actions import apply_actions
from faultsense_pipelines.resources.fleet import FleetResource
from faultsense_pipelines.resources.ledger import LedgerResource

from .ledger import fault_ledger
from .partitions import SWEEP_PARTITIONS, sweep_key
from .report import _table

__all__ = ["ACTION_COLUMNS", "actions_markdown", "fault_actions"]

#: The fields of each decision in the asset's value and metadata.
ACTION_COLUMNS = ("action", "trigger", "component", "node", "decision", "reason", "exit_code")


def actions_markdown(rows: list[dict[str, Any]]) -> str:
    """The decisions as a Markdown table (one row each: action, trigger, component, node, decision, reason)."""
    cells = [tuple("-" if r.get(c) is None else str(r[c]).replace("|", "/") for c in ACTION_COLUMNS) for r in rows]
    return _table(ACTION_COLUMNS, cells, "No action concerned this sweep.")


@dg.asset(
    partitions_def=SWEEP_PARTITIONS,
    deps=[fault_ledger],
    group_name="ledger",
    kinds={"python", "parquet"},
    description="The fleet file's guarded actions about this sweep's verdicts: decided, run (unless dry_run) and "
    "recorded as rows of the ledger's actions dataset (idempotent per verdict).",
)
def fault_actions(context: dg.AssetExecutionContext, fleet: FleetResource, ledger: LedgerResource) -> dg.Output[list[dict]]:
    key = sweep_key(context)
    store = ledger.store()
    rows = apply_actions(store, fleet.load(), key.replica, key.hour, context.run.run_id, log=context.log.info)
    value = [{c: getattr(r, c) for c in ACTION_COLUMNS} for r in rows]
    counts = Counter(r.decision for r in rows)
    return dg.Output(
        value,
        metadata={
            "decisions": len(rows),
            **{d: counts.get(d, 0) for d in ("acted", "dry_run", "skipped", "failed", "timed_out")},
            "actions": dg.MetadataValue.md(actions_markdown(value)),
            "ledger": store.display_uri,
        },
    )
