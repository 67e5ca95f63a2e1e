"""One sweep's actions: decide, record the intent, run, record the outcome.

:func:`apply_actions` runs after the sweep's commit (the Dagster asset ``fault_actions``,
downstream of ``fault_ledger``). Under a fleet-wide lock of the ledger (so two replicas' sweeps
never decide a fleet-wide limit at once) it reads the replica's recent sweeps and every
``actions`` row of the days its guards need, decides (:func:`~.decide.decide`), and writes the
decisions as the batch ``actions-<replica>-hHH`` of the hour's ``date`` partition.

**At most once, recorded exactly once.** Each decision has a key derived from the verdict
(action, replica, component, hour, trigger; :func:`~faultsense_pipelines.ledger.make_action_key`).
Before a command or webhook starts, its ``started`` row is committed (one Delta commit);
after it ends, the outcome replaces that row (one more commit). A key that has a ``started``,
``acted``, ``failed`` or ``timed_out`` row is never run again -- not by a re-run of the hour,
not by a backfill, not after a crash. So:

* a command runs **at most once** per key: if the intent commit fails, nothing runs;
* a sweep killed (``kill -9``) while its command runs leaves the ``started`` row; the command
  itself, in its own session, runs on to its end (or its timeout is lost with the sweep: a
  command that never ends must be bounded by itself). The next sweep of that hour turns the
  row into ``acted`` with the reason ``outcome unknown`` and does **not** run it again. (In
  the instant between the intent commit and the command's start a kill leaves the same row
  though nothing ran: "at most once" is the guarantee, "exactly once" holds whenever the
  process lives until the command has started.)
* ``skipped`` and ``dry_run`` rows ran nothing; a re-run decides them afresh (with the fleet
  file as it is then), replacing them.

Commits per sweep: none when no action concerns a verdict, one when nothing runs, one per
command or webhook run plus one otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

from ..fleet import Fleet, Replica
from ..fleet.actions import ActionSpec
from ..ledger import ACTIONS, ActionRow, LedgerStore
from ..ledger.lock import fleet_lock
from ..redaction import clip
from .decide import ATTEMPTED, Decision, PriorRow, decide
from .history import FaultInfo, hour_start, replica_history
from .run import Outcome, run_command, run_webhook, verdict_payload

__all__ = ["ACTIONS_BATCH_PREFIX", "ActionError", "actions_batch", "apply_actions", "node_resolver"]

ACTIONS_BATCH_PREFIX = "actions"
#: How long a sweep waits for another replica's sweep to finish its actions (seconds).
DEFAULT_LOCK_WAIT_S = 900.0


class ActionError(RuntimeError):
    """The actions could not be decided or recorded (the fleet-wide lock stayed held)."""


def actions_batch(replica: str, hour: str) -> str:
    """The ledger batch of one sweep's action decisions, e.g. ``actions-sim-64-h08``."""
    return f"{ACTIONS_BATCH_PREFIX}-{replica}-h{hour_start(hour).hour:02d}"


def node_resolver(replica: Replica) -> Callable[[str, FaultInfo], str | None]:
    """The one node an action on a component of ``replica`` targets: a GPU's node, a link's
    when both ends share one, a NIC's or NVSwitch's own (``nic:node3/rail5`` -> ``node3``): the
    row's ``node`` (what the sweep's verdict named, e.g. a ``ray`` replica's actor host), else
    the same from the fleet file's topology
    (:meth:`~faultsense_pipelines.replica.topology.ReplicaTopology.row_node`); None without
    either, for a link across nodes, or for a switch."""
    topology = replica.replica_topology

    def node_of(component: str, info: FaultInfo) -> str | None:
        node = info.node or topology.row_node(str(info.kind), component, info.gpu, info.peer_gpu)
        return None if node is None or "," in node else node  # "a17,a18": a path between two hosts

    return node_of


def _days_needed(actions: list[ActionSpec]) -> int:
    hours = max(max(a.window_hours, a.cooldown_hours) for a in actions)
    return max(max(a.history_days for a in actions), math.ceil(hours / 24) + 1)


def _row(d: Decision, sweep_id: str, decision: str, reason: str, outcome: Outcome | None = None) -> ActionRow:
    v = d.verdict
    return ActionRow(
        action_key=d.key, decided_at=datetime.now(UTC), sweep_id=sweep_id, replica=v.replica, action=d.action.name,
        trigger=v.trigger, component=v.component, component_kind=v.kind, hour=v.hour, decision=decision,
        reason=clip(reason, 300), dry_run=d.action.dry_run, node=v.node, gpu=v.gpu, status=v.status,
        confidence=v.confidence, slowdown=v.slowdown,
        exit_code=outcome.exit_code if outcome else None, stderr=outcome.stderr if outcome else None,
    )  # fmt: skip


def _stored(record: Mapping[str, Any]) -> ActionRow:
    """An ``actions`` row read back from the ledger as an :class:`ActionRow`."""

    def opt(name: str) -> Any:
        value = record.get(name)
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else value

    decided = record["decided_at"]
    return ActionRow(
        action_key=str(record["action_key"]), decided_at=decided.to_pydatetime() if hasattr(decided, "to_pydatetime") else decided,
        sweep_id=str(record["sweep_id"]), replica=str(record["replica"]), action=str(record["action"]),
        trigger=str(record["trigger"]), component=str(record["component"]), component_kind=str(record["component_kind"]),
        hour=str(record["hour"]), decision=str(record["decision"]), reason=str(record["reason"]),
        dry_run=bool(record["dry_run"]), node=opt("node"), gpu=None if opt("gpu") is None else int(opt("gpu")),
        status=opt("status"), confidence=opt("confidence"), slowdown=opt("slowdown"),
        exit_code=None if opt("exit_code") is None else int(opt("exit_code")), stderr=opt("stderr"),
    )  # fmt: skip


def _prior(r: Mapping[str, Any]) -> PriorRow:
    return PriorRow(
        action=str(r["action"]), replica=str(r["replica"]), component=str(r["component"]),
        node=r["node"] if isinstance(r["node"], str) else None, hour=str(r["hour"]),
        decision=str(r["decision"]), action_key=str(r["action_key"]),
    )  # fmt: skip


def _unknown(row: ActionRow, sweep_id: str) -> ActionRow:
    """A ``started`` row a killed sweep left, as the next sweep of the hour records it."""
    reason = (
        f"outcome unknown: the sweep that started it (run {row.sweep_id[:12]}) stopped before recording its end; not run again"
    )
    fields = {**row.__dict__, "decision": "acted", "reason": reason, "decided_at": datetime.now(UTC), "sweep_id": sweep_id}
    return ActionRow(**fields)


def apply_actions(
    store: LedgerStore,
    fleet: Fleet,
    replica: str,
    hour: str,
    sweep_id: str,
    *,
    environ: Mapping[str, str] | None = None,
    lock_wait_s: float = DEFAULT_LOCK_WAIT_S,
    log: Callable[[str], None] | None = None,
) -> list[ActionRow]:
    """Decide, run and record the fleet's actions about ``replica``'s sweep of ``hour``.

    Args:
        store: the ledger (the sweep of ``hour`` is already committed to it).
        fleet: the fleet file (its ``actions:``).
        replica: the swept replica.
        hour: the sweep partition, ``YYYY-MM-DD-HH:00``.
        sweep_id: the run deciding (the Dagster run id), stored in every row it writes.
        environ: where commands' ``env`` variables come from (default ``os.environ``).
        lock_wait_s: how long to wait for another sweep's actions (the fleet-wide lock).
        log: called with one line per decision (no secrets in it).

    Returns:
        The rows of this sweep's decisions (a kept row as it is in the ledger), in decision
        order; empty when no action concerns the replica or the hour has no completed sweep.

    Raises:
        ActionError: the fleet-wide lock stayed held for ``lock_wait_s``.
        LedgerError: the ledger cannot be read or written (an intent that cannot be recorded
            is never run).
    """
    actions = [a for a in fleet.actions if a.replicas is None or replica in a.replicas]
    if not actions:
        return []
    days = _days_needed(actions)
    day = hour_start(hour).date()
    batch = actions_batch(replica, hour)
    try:
        with fleet_lock(store.uri, "actions", lock_wait_s):
            history = replica_history(store, replica, hour, days)
            if not history or history[-1].hour != hour:
                return []
            since = (day - timedelta(days=days)).isoformat()
            stored: list[dict[str, Any]] = [
                {str(k): v for k, v in r.items()} for r in store.read_actions(since=since).to_dict("records")
            ]
            prior = [_prior(r) for r in stored]
            decisions = [d for a in actions for d in decide(a, replica, history, prior, node_resolver(fleet.replica(replica)))]
            rows = _kept_rows(stored, day, batch, sweep_id)
            had_rows = any(r["batch"] == batch and r["date"] == day.isoformat() for r in stored)
            return _act(store, day, batch, sweep_id, decisions, rows, had_rows, environ, log)
    except TimeoutError as exc:
        raise ActionError(f"actions of {replica} at {hour}: {exc}; nothing decided") from None


def _kept_rows(stored: list[dict[str, Any]], day: date, batch: str, sweep_id: str) -> dict[str, ActionRow]:
    """The batch's rows that stay whatever is decided now: every attempted one (a ``started``
    row a killed sweep left becomes ``acted``, outcome unknown)."""
    rows: dict[str, ActionRow] = {}
    for r in stored:
        if r["batch"] != batch or r["date"] != day.isoformat() or r["decision"] not in ATTEMPTED:
            continue
        row = _stored(r)
        rows[row.action_key] = _unknown(row, sweep_id) if row.decision == "started" else row
    return rows


def _act(
    store: LedgerStore,
    day: date,
    batch: str,
    sweep_id: str,
    decisions: list[Decision],
    rows: dict[str, ActionRow],
    had_rows: bool,
    environ: Mapping[str, str] | None,
    log: Callable[[str], None] | None,
) -> list[ActionRow]:
    def commit() -> None:
        store.commit(
            day, replace=[batch], actions={batch: list(rows.values())}, datasets=[ACTIONS],
            note={"faultsense.sweep_id": sweep_id, "faultsense.operation": "actions"},
        )  # fmt: skip

    to_run = []
    for d in decisions:
        if d.what == "keep":
            continue
        if d.what in ("skipped", "dry_run"):
            rows[d.key] = _row(d, sweep_id, d.what, d.reason)
        else:
            to_run.append(d)
    if not to_run and (rows or had_rows):
        commit()
    for d in to_run:
        rows[d.key] = _row(d, sweep_id, "started", "intent recorded; running")
        commit()  # the intent is durable before anything runs
        payload = verdict_payload(d.action.name, d.verdict, d.key)
        if d.action.command is not None:
            outcome = run_command(d.action.command, payload, timeout_s=d.action.timeout_s, pass_env=d.action.env, environ=environ)
        else:
            assert d.action.webhook is not None
            outcome = run_webhook(d.action.webhook, payload, timeout_s=d.action.timeout_s)
        rows[d.key] = _row(d, sweep_id, outcome.decision, f"{d.action.target}: {outcome.reason}", outcome)
    if to_run:
        commit()
    out = [rows[d.key] for d in decisions if d.key in rows]
    if log is not None:
        for r in out:
            log(f"action {r.action} ({r.trigger}) on {r.replica} {r.component}: {r.decision} -- {r.reason}")
    return out
