"""A replica's recent sweeps and what each one found, read from the ledger.

This module is the one place that knows where sweep history comes from: today the sweep
batches of ``probe_runs`` (a completed sweep of hour ``HH`` committed its probe rows as batch
``faultsense-<replica>-hHH``; a failed attempt's ``...-failed`` batch is not a sweep) and the
fault rows of the same batches. Reads are bounded: only the ``date`` partitions of the last
``days`` days up to the swept hour, and only the files whose statistics can hold the replica.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pyarrow.compute as pc

from ..ledger import FAULT_LEDGER, PROBE_RUNS, LedgerStore
from ..validation import shown

__all__ = ["FaultInfo", "SweepRecord", "hour_start", "replica_history"]


@dataclass(frozen=True)
class FaultInfo:
    """One fault row of a sweep: the component's ``kind`` and ``status``, and where known its
    ``confidence`` (0..1), ``slowdown`` (x), ``gpu``, ``peer_gpu`` and ``node`` (the row's: the
    host the sweep's verdict named)."""

    kind: str
    status: str
    confidence: float | None = None
    slowdown: float | None = None
    gpu: int | None = None
    peer_gpu: int | None = None
    node: str | None = None


@dataclass(frozen=True)
class SweepRecord:
    """One completed sweep of a replica: its ``hour`` (``YYYY-MM-DD-HH:00``), ``sweep_id`` and
    its fault rows by component (a component without a row was judged healthy)."""

    hour: str
    sweep_id: str
    faults: dict[str, FaultInfo] = field(default_factory=dict)


def hour_start(hour: str) -> datetime:
    """The start of a sweep hour ``YYYY-MM-DD-HH:00`` (naive, UTC).

    Raises:
        ValueError: ``hour`` does not have that form.
    """
    try:
        return datetime.strptime(hour, "%Y-%m-%d-%H:%M")
    except (TypeError, ValueError):
        raise ValueError(f"hour must look like YYYY-MM-DD-HH:00, got {shown(hour)}") from None


def replica_history(store: LedgerStore, replica: str, hour: str, days: int) -> list[SweepRecord]:
    """The completed sweeps of ``replica`` from ``days`` days before ``hour`` up to ``hour``
    itself, oldest first.

    Args:
        store: the ledger.
        replica: the replica's name.
        hour: the latest sweep hour wanted, ``YYYY-MM-DD-HH:00``.
        days: how many days back to read (>= 1): the partitions of ``hour``'s day and the
            ``days`` days before it.

    Returns:
        One :class:`SweepRecord` per completed sweep (a sweep partition whose probe rows are in
        the ledger), with its fault rows of ``detector="faultsense"``.

    Raises:
        LedgerError: the ledger cannot be read.
        ValueError: ``hour`` is malformed.
    """
    end = hour_start(hour)
    wanted = [(end.date() - timedelta(days=d)).isoformat() for d in range(days, -1, -1)]
    prefix = f"faultsense-{replica}-h"
    batch_re = re.compile(re.escape(prefix) + r"(\d\d)")
    probes = store.read_table(PROBE_RUNS, files={"date": wanted, "replica": replica}, columns=["date", "batch", "sweep_id"])
    sweeps: dict[tuple[str, str], str] = {}
    if probes.num_rows:
        probes = probes.filter(pc.starts_with(probes.column("batch"), prefix))
        seen = probes.group_by(["date", "batch"]).aggregate([("sweep_id", "max")])
        for day, batch, sweep_id in zip(
            seen.column("date").to_pylist(),
            seen.column("batch").to_pylist(),
            seen.column("sweep_id_max").to_pylist(),
            strict=True,
        ):
            m = batch_re.fullmatch(batch)
            if m:
                sweeps[(day, batch)] = sweep_id
    columns = [
        "date",
        "batch",
        "detector",
        "component",
        "component_kind",
        "status",
        "confidence",
        "slowdown",
        "gpu",
        "peer_gpu",
        "node",
    ]
    faults = store.read_table(FAULT_LEDGER, files={"date": wanted, "replica": replica}, columns=columns)
    by_batch: dict[tuple[str, str], dict[str, FaultInfo]] = {}
    for row in faults.to_pylist():
        if row["detector"] != "faultsense" or (row["date"], row["batch"]) not in sweeps:
            continue
        by_batch.setdefault((row["date"], row["batch"]), {})[row["component"]] = FaultInfo(
            kind=row["component_kind"], status=row["status"], confidence=row["confidence"], slowdown=row["slowdown"],
            gpu=row["gpu"], peer_gpu=row["peer_gpu"], node=row["node"],
        )  # fmt: skip
    out = []
    for (day, batch), sweep_id in sweeps.items():
        m = batch_re.fullmatch(batch)
        assert m is not None
        key = f"{day}-{m.group(1)}:00"
        if hour_start(key) <= end:
            out.append(SweepRecord(hour=key, sweep_id=sweep_id, faults=by_batch.get((day, batch), {})))
    return sorted(out, key=lambda s: s.hour)
