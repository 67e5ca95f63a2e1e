"""``minder_faults``: faulty machines found by Minder in monitoring metrics, appended to the fault ledger.

The asset scans the latest ``window_s`` seconds of one metrics source (run config: a path or
fsspec URI of long-format Parquet/CSV; defaults to the example shipped in the package,
``faultsense_pipelines/data/minder/``) with a trained model (``model``: a directory from
``faultsense minder train``; empty = train on the scanned file itself) and writes one ledger
row per faulty machine:
``detector="minder"``, ``component_kind="machine"``, ``component="machine:<name>"``,
``replica`` = the cluster's name, ``status="confirmed"``, ``detected_at`` = when the fault
was confirmed. The ledger has no onset column: each fault's estimated onset is in the
materialization metadata. The batch name and fault ids derive from the cluster and the
scanned window, so re-scanning the same window replaces its rows instead of adding them.
"""

from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

import faultsense_pipelines
from faultsense_pipelines.ledger import append_passive_faults
from faultsense_pipelines.resources.ledger import LedgerResource

if TYPE_CHECKING:  # Minder is imported when the asset runs: it loads torch, which a sweep need not
    from faultsense_pipelines.minder import Fault

__all__ = ["MinderScanConfig", "machine_component", "minder_faults"]

# in the package, so a non-editable install has it (scripts/make_minder_example.py writes it)
_EXAMPLE = Path(faultsense_pipelines.__file__).resolve().parent / "data" / "minder"


class MinderScanConfig(dg.Config):
    """Which metrics to scan, with which model, and how much of the latest data."""

    metrics: str = str(_EXAMPLE / "metrics.parquet")
    model: str = str(_EXAMPLE / "model")
    cluster: str = "example-cluster"
    window_s: float = 900.0
    threshold: float | None = None
    continuity_s: float | None = None


def machine_component(fault: "Fault") -> str:
    """The ledger ``component`` of a faulty machine: ``"machine:node-0005"``."""
    return f"machine:{fault.machine}"


def _faults_markdown(faults: "tuple[Fault, ...]") -> str:
    lines = ["| machine | onset (UTC) | confirmed (UTC) | metric | score |", "|---|---|---|---|---|"]
    lines += [f"| {f.machine} | {f.start.isoformat()} | {f.confirmed_at.isoformat()} | {f.metric} | {f.score:.1f} |"
              for f in faults]  # fmt: skip
    return "\n".join(lines) if faults else "no faulty machine"


@dg.asset(
    group_name="minder",
    kinds={"parquet", "pytorch"},
    description="Faulty machines found by Minder in the latest window of monitoring metrics, as fault ledger "
    "rows (detector=minder, component_kind=machine).",
)
def minder_faults(context: dg.AssetExecutionContext, config: MinderScanConfig, ledger: LedgerResource) -> dg.MaterializeResult:
    from faultsense_pipelines.minder import MinderSettings, load_metrics, load_model, scan, train_minder

    model = load_model(config.model) if config.model else None
    array = load_metrics(config.metrics, model.interval_s if model else None)
    if model is None:
        context.log.info("no model configured: training one on the scanned metrics themselves")
        model = train_minder(array, MinderSettings())
    window = array.tail(config.window_s)
    settings = model.settings.updated(threshold=config.threshold, continuity_s=config.continuity_s)
    faults = scan(window, model, settings)

    first, end = window.start, window.time_at(window.n_times)
    span = f"{first.isoformat()}/{end.isoformat()}"
    written = append_passive_faults(
        ledger.uri, [(machine_component(f), f.confirmed_at.to_pydatetime()) for f in faults], detector="minder",
        source=config.cluster, component_kind="machine", window=span, batch_key=f"{config.metrics}|{span}",
        sweep_id=context.run.run_id, day=end.date(),
    )  # fmt: skip
    return dg.MaterializeResult(
        metadata={
            "rows": written.rows,
            "faulty_machines": dg.MetadataValue.json([f.machine for f in faults]),
            "faults": dg.MetadataValue.md(_faults_markdown(faults)),
            "window": span,
            "machines": len(window.machines),
            "path": dg.MetadataValue.path(written.path),
            "ledger": ledger.store().display_uri,
        }
    )
