"""The guards: what one action decides about one sweep's verdicts (pure; no I/O).

For ``on: confirmed`` each ``confirmed`` component of the sweep that passes the filters
(``kinds``; ``replicas`` is applied by the caller) is judged by these guards, in this order;
the first that trips makes the decision ``skipped`` with the guard's name in ``reason``:

1. ``min_confidence`` -- the verdict's confidence is below it, or the verdict states none;
2. ``persist`` [M, N] -- confirmed in fewer than M of the replica's last N completed sweeps
   (this one included);
3. ``max_attempts`` -- this action already attempted the component that often within the
   history read (``history_days``);
4. ``cooldown_hours`` -- an attempt on the component at this sweep's hour or less than that
   many hours (of sweep partitions) before it; an attempt at a later hour does not hold back a
   backfill of an earlier one;
5. ``max_per_replica`` / ``max_per_fleet`` -- acting would make more distinct targets (the
   component's node where known, else the component) acted on by this action within
   ``window_hours`` (either side) than allowed; a target already acted on in the window does
   not count again.

What counts as an attempt: ``started``, ``acted``, ``failed`` and ``timed_out`` rows; for a
dry-run action ``dry_run`` rows too, so a dry run shows what the real action would decide (and
a real action is not held back by the dry runs before it).

For ``on: resolved`` a component fires once per episode: at the first sweep (that runs the
actions) after which the replica's latest ``resolve_after`` (K) or more completed sweeps have no
row for it, where the latest sweep that had a row had it ``confirmed``, and no row of this action
about it is newer than that confirmed sweep. ``kinds`` and ``min_confidence`` apply to that
confirmed verdict; no other guard holds a ``resolved`` action back (none ever blocks it).

A decision whose key (:func:`~faultsense_pipelines.ledger.make_action_key`) was already
attempted is ``keep``: never decided or run again. A ``reason`` names an hour as the
``ledger actions`` table prints it (:func:`~faultsense_pipelines.fleet.hours.display_hour`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..fleet.actions import ActionSpec
from ..fleet.hours import display_hour
from ..ledger import make_action_key
from .history import FaultInfo, SweepRecord, hour_start

__all__ = ["ATTEMPTED", "Decision", "PriorRow", "Verdict", "decide"]

#: Decisions that mean the action was (or may have been) run.
ATTEMPTED = frozenset({"started", "acted", "failed", "timed_out"})


@dataclass(frozen=True)
class Verdict:
    """What an action is about: one component of one replica's sweep.

    ``status`` is the verdict's (``confirmed``), or ``healthy`` for ``on: resolved``;
    ``confidence`` (0..1) and ``slowdown`` (x) are the confirmed verdict's; ``node`` the node
    name where the topology knows it.
    """

    replica: str
    component: str
    kind: str
    status: str
    hour: str
    sweep_id: str
    trigger: str
    confidence: float | None = None
    slowdown: float | None = None
    gpu: int | None = None
    peer_gpu: int | None = None
    node: str | None = None


@dataclass(frozen=True)
class PriorRow:
    """An ``actions`` row already in the ledger (the fields the guards read)."""

    action: str
    replica: str
    component: str
    node: str | None
    hour: str
    decision: str
    action_key: str


@dataclass(frozen=True)
class Decision:
    """One decision: ``what`` is ``run`` (run it now), ``dry_run``, ``skipped`` or ``keep``
    (already attempted: leave its row alone); ``reason`` one line."""

    action: ActionSpec
    verdict: Verdict
    key: str
    what: str
    reason: str


def _hours_apart(a: str, b: str) -> float:
    return abs(_hours_before(a, b))


def _hours_before(a: str, b: str) -> float:
    """How many hours hour key ``a`` is before hour key ``b`` (negative: after it)."""
    return (hour_start(b) - hour_start(a)).total_seconds() / 3600.0


def _target(replica: str, component: str, node: str | None) -> tuple[str, str]:
    return (replica, f"node {node}" if node else component)


def decide(
    action: ActionSpec,
    replica: str,
    history: Sequence[SweepRecord],
    prior: Iterable[PriorRow],
    node_of: Callable[[str, FaultInfo], str | None] = lambda component, info: None,
) -> list[Decision]:
    """What ``action`` decides about the latest sweep of ``history``.

    Args:
        action: the fleet file's action.
        replica: the swept replica.
        history: its completed sweeps, oldest first, the swept hour last
            (:func:`~faultsense_pipelines.actions.history.replica_history`).
        prior: ``actions`` rows already in the ledger, every replica's, from the days the
            guards read (rows of other actions are ignored).
        node_of: the node name of a component, or None where unknown.

    Returns:
        One :class:`Decision` per verdict the action is about, most confident first (then the
        slowest, then by name); empty when ``history`` is empty.
    """
    if not history:
        return []
    current = history[-1]
    rows = [r for r in prior if r.action == action.name]
    done = {r.action_key for r in rows if r.decision in ATTEMPTED}
    if action.on == "resolved":
        return _resolved(action, replica, history, rows, done, node_of)
    counted = ATTEMPTED | ({"dry_run"} if action.dry_run else set())
    attempts = [r for r in rows if r.decision in counted]
    in_window = [r for r in attempts if _hours_apart(r.hour, current.hour) < action.window_hours]
    fleet_targets = {_target(r.replica, r.component, r.node) for r in in_window}
    replica_targets = {t for t in fleet_targets if t[0] == replica}
    candidates = [
        (component, info)
        for component, info in current.faults.items()
        if info.status == "confirmed" and (action.kinds is None or info.kind in action.kinds)
    ]
    candidates.sort(
        key=lambda ci: (-(ci[1].confidence if ci[1].confidence is not None else -1.0), -(ci[1].slowdown or 0.0), ci[0])
    )
    out = []
    m, n = action.persist
    for component, info in candidates:
        node = node_of(component, info)
        verdict = Verdict(
            replica=replica, component=component, kind=info.kind, status=info.status, hour=current.hour,
            sweep_id=current.sweep_id, trigger="confirmed", confidence=info.confidence, slowdown=info.slowdown,
            gpu=info.gpu, peer_gpu=info.peer_gpu, node=node,
        )  # fmt: skip
        key = make_action_key(action.name, replica, component, current.hour, "confirmed")
        if key in done:
            out.append(Decision(action, verdict, key, "keep", "already attempted for this verdict"))
            continue
        mine = [r for r in attempts if r.replica == replica and r.component == component and r.action_key != key]
        target = _target(replica, component, node)
        reason = ""
        if action.min_confidence is not None and (info.confidence is None or not info.confidence >= action.min_confidence):
            shown = "none stated" if info.confidence is None else f"{info.confidence:.6g}"
            reason = f"min_confidence: confidence {shown} < {action.min_confidence:g}"
        elif (seen := sum(1 for s in history[-n:] if (f := s.faults.get(component)) and f.status == "confirmed")) < m:
            reason = f"persist: confirmed in {seen} of the last {min(n, len(history))} sweeps, needs {m} of {n}"
        elif len(mine) >= action.max_attempts:
            reason = f"max_attempts: {len(mine)} attempts on {component} within {action.history_days} days"
        elif action.cooldown_hours and (
            near := sorted(r.hour for r in mine if 0 <= _hours_before(r.hour, current.hour) < action.cooldown_hours)
        ):
            reason = f"cooldown_hours: attempted at {display_hour(near[-1])}, within {action.cooldown_hours} h"
        elif (
            action.max_per_replica is not None
            and target not in replica_targets
            and len(replica_targets) >= action.max_per_replica
        ):
            reason = f"max_per_replica: {len(replica_targets)} already acted on in {replica} within {action.window_hours} h"
        elif action.max_per_fleet is not None and target not in fleet_targets and len(fleet_targets) >= action.max_per_fleet:
            reason = f"max_per_fleet: {len(fleet_targets)} already acted on in the fleet within {action.window_hours} h"
        if reason:
            out.append(Decision(action, verdict, key, "skipped", reason))
            continue
        replica_targets.add(target)
        fleet_targets.add(target)
        if action.dry_run:
            out.append(Decision(action, verdict, key, "dry_run", f"dry_run: guards passed; would run {action.target}"))
        else:
            out.append(Decision(action, verdict, key, "run", "guards passed"))
    return out


def _resolved(
    action: ActionSpec,
    replica: str,
    history: Sequence[SweepRecord],
    rows: list[PriorRow],
    done: set[str],
    node_of: Callable[[str, FaultInfo], str | None],
) -> list[Decision]:
    k = action.resolve_after
    current = history[-1]
    counted = ATTEMPTED | ({"dry_run"} if action.dry_run else set())
    last: dict[str, int] = {}  # component -> index of the latest sweep with a row for it
    for i, sweep in enumerate(history):
        for component in sweep.faults:
            last[component] = i
    out = []
    for component, i in sorted(last.items()):
        info = history[i].faults[component]
        clean = len(history) - 1 - i
        if info.status != "confirmed" or clean < k:
            continue
        if action.kinds is not None and info.kind not in action.kinds:
            continue
        if action.min_confidence is not None and (info.confidence is None or not info.confidence >= action.min_confidence):
            continue  # the confirmed verdict was below the action's bar: nothing to resolve
        key = make_action_key(action.name, replica, component, current.hour, "resolved")
        since = history[i].hour
        fired = [
            r for r in rows
            if r.replica == replica and r.component == component and r.decision in counted and r.action_key != key
            and hour_start(r.hour) > hour_start(since)
        ]  # fmt: skip
        if fired and key not in done:
            continue  # this episode was resolved at an earlier sweep
        verdict = Verdict(
            replica=replica, component=component, kind=info.kind, status="healthy", hour=current.hour,
            sweep_id=current.sweep_id, trigger="resolved", confidence=info.confidence, slowdown=info.slowdown,
            gpu=info.gpu, peer_gpu=info.peer_gpu, node=node_of(component, info),
        )  # fmt: skip
        why = f"healthy in {clean} sweeps since it was confirmed at {display_hour(since)}"
        if key in done:
            out.append(Decision(action, verdict, key, "keep", "already attempted for this verdict"))
        elif action.dry_run:
            out.append(Decision(action, verdict, key, "dry_run", f"dry_run: {why}; would run {action.target}"))
        else:
            out.append(Decision(action, verdict, key, "run", why))
    return out
