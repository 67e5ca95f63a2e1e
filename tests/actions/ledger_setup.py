"""Test set-up for the actions tests: a real Delta ledger holding completed sweeps of a replica,
written through :meth:`LedgerStore.commit` with the batch names a sweep uses."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path

from faultsense_pipelines.fleet import Fleet, parse_fleet
from faultsense_pipelines.ledger import FaultRow, LedgerStore, ProbeRunRow, make_fault_id


def commit_sweep(store: LedgerStore, replica: str, hour: str, gpus: list[int], confidence: float = 0.9999) -> None:
    """A completed sweep of ``replica`` at ``hour`` that confirmed ``gpus`` (one probe row, one
    fault row per GPU), committed as a sweep commits it (batch ``faultsense-<replica>-hHH``)."""
    batch = f"faultsense-{replica}-h{hour[11:13]}"
    sweep_id = f"run-{replica}-{hour}"
    faults = [_fault(replica, hour, sweep_id, g, confidence) for g in gpus]
    probes = [ProbeRunRow(sweep_id, replica, 1, 0, (0, 1), 20.0, 0, "simulated")]
    store.commit(hour[:10], replace=[batch], faults={batch: faults}, probe_runs={batch: probes})


def _fault(replica: str, hour: str, sweep_id: str, g: int, confidence: float) -> FaultRow:
    return FaultRow(
        fault_id=make_fault_id("faultsense", replica, hour, f"gpu:{g}"), detected_at=datetime.now(UTC), sweep_id=sweep_id,
        replica=replica, detector="faultsense", component_kind="gpu", component=f"gpu:{g}", status="confirmed",
        gpu=g, slowdown=2.0, confidence=confidence, phase=2, probes_used=10,
    )  # fmt: skip


def recorder(folder: Path, body: str = "") -> tuple[Path, Path]:
    """A real shell script that appends one line per call (its argv's component, node and the
    stdin JSON) to ``calls.txt`` beside it, then runs ``body``; returns (script, calls file)."""
    calls = folder / "calls.txt"
    script = folder / "record.sh"
    script.write_text(
        f'#!/bin/sh\nprintf "%s %s %s\\n" "$FAULTSENSE_COMPONENT" "$FAULTSENSE_NODE" "$(cat)" >> "{calls}"\n{body}\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, calls


def calls_of(calls: Path) -> list[str]:
    """The lines the recorder wrote (none when it never ran)."""
    return calls.read_text().splitlines() if calls.exists() else []


def fleet_with(ledger: Path, actions: list[dict], gpus: int = 32, gpus_per_node: int | None = 1) -> Fleet:
    """A fleet of one simulated replica ``r`` (``gpus_per_node`` GPUs per node) with ``actions``."""
    replica = {"name": "r", "gpus": gpus, "probe_size": 4, "executor": "simulated"}
    if gpus_per_node:
        replica["gpus_per_node"] = gpus_per_node
    return parse_fleet({"ledger": str(ledger), "replicas": [replica], "actions": actions})


def environ(**extra: str) -> dict[str, str]:
    """The test process's environment plus ``extra``."""
    return {**os.environ, **extra}
