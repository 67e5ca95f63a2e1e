"""The fleet's current state, from a window of ``sweeps`` rows and their fault rows: pure functions.

Input is what the exporter reads from the ledger for the last few days (by swept hour): the
``sweeps`` rows (one per sweep attempt) and the ``confirmed`` / ``inconclusive`` fault rows of
the ``faultsense`` detector. Output is a :class:`FleetState`: per replica its latest attempt,
its latest *completed* sweep, and per component what the latest completed sweep says, how many
of the last ``persistence_sweeps`` completed sweeps confirmed it, and in how many separate
episodes it was confirmed within the window.

"Latest" is by swept hour, not by write time: a backfill of an older hour never makes the
replica's state older. Two attempts of the same hour (a failed retry after a completed sweep)
are ordered by ``finished_at``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from faultsense_pipelines.replica.topology import ReplicaTopology

from .labels import component_labels

__all__ = ["ComponentState", "FleetState", "ReplicaState", "Topology", "build_state", "episodes"]

#: A replica's topology as the labels need it (the fleet file's), None without one.
Topology = ReplicaTopology | None


@dataclass(frozen=True)
class ComponentState:
    """One component of one replica.

    Attributes:
        labels: ``replica``, ``component``, ``kind``, ``node``, ``gpu``, ``rail``.
        status: its status in the replica's latest completed sweep (``confirmed`` or
            ``inconclusive``), or ``""`` when that sweep does not name it.
        slowdown: that row's slowdown (observed / healthy median), or None.
        confidence: that row's posterior (0..1), or None.
        confirmed_sweeps: how many of the replica's last ``persistence_sweeps`` completed sweeps
            confirmed it.
        episodes: separate runs of consecutive completed sweeps confirming it within the window
            (confirmed, cleared by a sweep, confirmed again: 2).
    """

    labels: Mapping[str, str]
    status: str = ""
    slowdown: float | None = None
    confidence: float | None = None
    confirmed_sweeps: int = 0
    episodes: int = 0


@dataclass(frozen=True)
class ReplicaState:
    """One replica's sweeps within the window.

    Attributes:
        replica: its name.
        status: its latest attempt's ``sweeps.status`` (``healthy``, ``faulty``, ``degraded``,
            ``inconclusive``, ``failed``).
        last_completed: the latest completed sweep's row (``swept_hour``, ``started_at``,
            ``finished_at`` as epoch seconds; ``probes_phase1``, ``probes_phase2``), or None.
        last_failed_probes: the latest attempt's ``failed_probes``.
        completed_sweeps, failed_sweeps: attempts of each kind in the window.
    """

    replica: str
    status: str
    last_completed: Mapping[str, Any] | None
    last_failed_probes: int
    completed_sweeps: int
    failed_sweeps: int


@dataclass(frozen=True)
class FleetState:
    """Everything one scrape exports: the replicas and their components."""

    replicas: tuple[ReplicaState, ...] = ()
    components: tuple[ComponentState, ...] = ()
    version: int | None = None


def episodes(flags: Sequence[bool]) -> int:
    """Maximal runs of ``True`` in ``flags`` (one component over a replica's sweeps, oldest first).

    >>> episodes([True, True, False, True, False, False, True])
    3
    """
    return sum(1 for i, f in enumerate(flags) if f and (i == 0 or not flags[i - 1]))


def _seconds(value: datetime | float | None) -> float | None:
    """Unix seconds of a timezone-aware datetime, or the number itself (already Unix seconds)."""
    if value is None:
        return None
    return value.timestamp() if isinstance(value, datetime) else float(value)


def _order(row: Mapping[str, Any]) -> tuple[float, float]:
    return (_seconds(row["swept_hour"]) or 0.0, _seconds(row["finished_at"]) or 0.0)


def build_state(
    sweeps: Iterable[Mapping[str, Any]],
    faults: Iterable[Mapping[str, Any]],
    *,
    topology: Mapping[str, Topology] | None = None,
    persistence_sweeps: int = 3,
    version: int | None = None,
) -> FleetState:
    """The fleet state of a window of ledger rows.

    Args:
        sweeps: ``sweeps`` rows with ``replica``, ``date``, ``batch``, ``status``, ``swept_hour``,
            ``started_at``, ``finished_at`` (timezone-aware datetimes or Unix seconds),
            ``probes_phase1``, ``probes_phase2``, ``failed_probes``.
        faults: the window's ``faultsense`` fault rows with ``replica``, ``date``, ``batch``,
            ``status``, ``component_kind``, ``component``, ``gpu``, ``peer_gpu``, ``slowdown``,
            ``confidence`` and, where the row has one, ``node`` (the ``node`` label); rows of other statuses are ignored. A row belongs to the completed
            sweep of its (date, batch).
        topology: per replica name, its :class:`ReplicaTopology` from the fleet file (a
            replica not in it gets empty ``node`` labels).
        persistence_sweeps: N of "confirmed in M of the last N sweeps" (>= 1).
        version: the ledger table version read (carried through for the exporter).

    Raises:
        ValueError: ``persistence_sweeps`` below 1.
    """
    if persistence_sweeps < 1:
        raise ValueError(f"persistence_sweeps must be >= 1, got {persistence_sweeps}")
    topology = topology or {}
    by_replica: dict[str, list[Mapping[str, Any]]] = {}
    for row in sweeps:
        by_replica.setdefault(row["replica"], []).append(row)

    rows_of: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in faults:
        if row["status"] in ("confirmed", "inconclusive"):
            rows_of.setdefault((row["date"], row["batch"]), []).append(row)

    replicas: list[ReplicaState] = []
    components: list[ComponentState] = []
    for name in sorted(by_replica):
        attempts = sorted(by_replica[name], key=_order)
        completed = [r for r in attempts if r["status"] != "failed"]
        latest = attempts[-1]
        last = completed[-1] if completed else None
        replicas.append(
            ReplicaState(
                replica=name,
                status=str(latest["status"]),
                last_completed=None
                if last is None
                else {
                    "swept_hour": _seconds(last["swept_hour"]),
                    "started_at": _seconds(last["started_at"]),
                    "finished_at": _seconds(last["finished_at"]),
                    "probes_phase1": int(last["probes_phase1"] or 0),
                    "probes_phase2": int(last["probes_phase2"] or 0),
                },
                last_failed_probes=int(latest["failed_probes"] or 0),
                completed_sweeps=len(completed),
                failed_sweeps=len(attempts) - len(completed),
            )
        )
        components += _components(name, completed, rows_of, topology.get(name), persistence_sweeps)
    return FleetState(replicas=tuple(replicas), components=tuple(components), version=version)


def _components(
    replica: str,
    completed: Sequence[Mapping[str, Any]],
    rows_of: Mapping[tuple[str, str], Sequence[Mapping[str, Any]]],
    topo: Topology,
    persistence_sweeps: int,
) -> list[ComponentState]:
    """The components one replica's completed sweeps (oldest first) name."""
    per_sweep = [rows_of.get((s["date"], s["batch"]), ()) for s in completed]
    confirmed = [{r["component"] for r in rows if r["status"] == "confirmed"} for rows in per_sweep]
    latest = {r["component"]: r for r in per_sweep[-1]} if per_sweep else {}
    first_row: dict[str, Mapping[str, Any]] = {}
    for rows in per_sweep:
        for r in rows:
            if r["status"] == "confirmed" or r["component"] in latest:
                first_row.setdefault(r["component"], r)
    out = []
    recent = confirmed[-persistence_sweeps:]
    for component in sorted(first_row):
        r = latest.get(component, first_row[component])
        labels = {"replica": replica, "component": component}
        labels |= component_labels(r["component_kind"], component, r["gpu"], r["peer_gpu"], topo, r.get("node"))
        now = latest.get(component)
        out.append(
            ComponentState(
                labels=labels,
                status="" if now is None else str(now["status"]),
                slowdown=None if now is None or now["slowdown"] is None else float(now["slowdown"]),
                confidence=None if now is None or now["confidence"] is None else float(now["confidence"]),
                confirmed_sweeps=sum(component in c for c in recent),
                episodes=episodes([component in c for c in confirmed]),
            )
        )
    return out
