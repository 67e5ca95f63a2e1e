"""``flowpulse_faults``: lossy fabric links found by FlowPulse, appended to the fault ledger.

The asset scans one counters file against one topology file (run config; defaults to the
example fabric shipped in the package, ``faultsense_pipelines/data/flowpulse/``) and writes
one ledger row per lossy link: ``detector="flowpulse"``, ``component_kind="fabric_link"``,
``component="fabric_link:<switch>/<port>-<peer>"`` (the receiving switch and port, then the
switch sending on it), ``replica`` = the fabric's name, ``status="confirmed"`` (``"suspect"``
when the sending switch exported no counters, so an upstream loss cannot be ruled out). The batch
name is derived from the fabric and the counters' iteration range, so re-scanning the same
counters replaces its rows instead of adding them.
"""

from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

import faultsense_pipelines
from faultsense_pipelines.flowpulse.counters import load_counters
from faultsense_pipelines.flowpulse.scan import LinkFault, ScanConfig, scan
from faultsense_pipelines.flowpulse.topology import load_topology
from faultsense_pipelines.ledger import append_passive_faults
from faultsense_pipelines.resources.ledger import LedgerResource

__all__ = ["FlowPulseScanConfig", "fabric_link_component", "flowpulse_faults"]

# in the package, so a non-editable install has it; written by
# `faultsense flowpulse simulate --out <dir> --iterations 80 --start 40` (a 1% loss on leaf01-spine02)
_EXAMPLES = Path(faultsense_pipelines.__file__).resolve().parent / "data" / "flowpulse"


class FlowPulseScanConfig(dg.Config):
    """Which counters to scan and how (see :class:`faultsense_pipelines.flowpulse.scan.ScanConfig`)."""

    counters: str = str(_EXAMPLES / "counters.parquet")
    topology: str = str(_EXAMPLES / "topology.json")
    fabric: str = "example-fabric"
    model: str = ScanConfig.model  # the detector's defaults (a test pins them)
    traffic: str = ScanConfig.traffic
    reference: int = ScanConfig.reference
    lag: int = ScanConfig.lag
    design_loss: float = ScanConfig.design_loss
    false_alarm_rate: float = ScanConfig.false_alarm_rate
    threshold: float | None = ScanConfig.threshold


def fabric_link_component(fault: LinkFault) -> str:
    """The ledger ``component`` of a lossy link: ``"fabric_link:leaf01/up02-spine02"``."""
    return f"fabric_link:{fault.switch}/{fault.port}-{fault.peer}"


def _faults_markdown(faults: list[LinkFault]) -> str:
    lines = ["| switch | port | peer | first iteration | detected | loss estimate |", "|---|---|---|---|---|---|"]
    lines += [
        f"| {f.switch} | {f.port} | {f.peer} | {f.first_iteration} | {f.detected_iteration} | {100 * f.loss_estimate:.2f}% |"
        for f in faults
    ]
    return "\n".join(lines) if faults else "no lossy link"


@dg.asset(
    group_name="flowpulse",
    kinds={"parquet"},
    description="Lossy fabric links found by FlowPulse in switch-port counters, as fault ledger rows "
    "(detector=flowpulse, component_kind=fabric_link).",
)
def flowpulse_faults(
    context: dg.AssetExecutionContext, config: FlowPulseScanConfig, ledger: LedgerResource
) -> dg.MaterializeResult:
    settings = ScanConfig(
        model=config.model,  # type: ignore[arg-type]  # ScanConfig validates it
        traffic=config.traffic,  # type: ignore[arg-type]
        reference=config.reference,
        lag=config.lag,
        design_loss=config.design_loss,
        false_alarm_rate=config.false_alarm_rate,
        threshold=config.threshold,
    )
    frame = load_counters(config.counters)
    faults = scan(frame, load_topology(config.topology), settings)
    first, last = int(frame["iteration"].min()), int(frame["iteration"].max())
    window = f"{Path(config.counters).name}:{first}-{last}"
    now = datetime.now(UTC)
    written = append_passive_faults(
        ledger.uri, [(fabric_link_component(f), now) for f in faults], detector="flowpulse", source=config.fabric,
        component_kind="fabric_link", window=window, batch_key=window, sweep_id=context.run.run_id, day=now.date(),
        suspects={fabric_link_component(f) for f in faults if not f.peer_observed},
    )  # fmt: skip
    return dg.MaterializeResult(
        metadata={
            "rows": written.rows,
            "lossy_links": dg.MetadataValue.json([fabric_link_component(f) for f in faults]),
            "faults": dg.MetadataValue.md(_faults_markdown(faults)),
            "iterations": f"{first}-{last}",
            "path": dg.MetadataValue.path(written.path),
            "ledger": ledger.store().display_uri,
        }
    )
