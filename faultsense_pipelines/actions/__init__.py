"""Guarded actions: what a sweep runs about its verdicts (the fleet file's ``actions:``).

* :mod:`.history` -- a replica's recent sweeps and their verdicts, read from the ledger (bounded
  to recent days): the one place that knows where sweep history comes from.
* :mod:`.decide` -- the guards, pure: filters, persistence (M of the last N sweeps), blast
  radius per replica and per fleet, cooldown, the attempt cap, ``resolved`` after K healthy sweeps.
* :mod:`.run` -- running one decision: a command (argv, minimal environment, timeout that kills
  its process group) or a webhook (httpx, one deadline).
* :mod:`.engine` -- one sweep's actions: decide, record the intent, run, record the outcome, in
  the ledger's ``actions`` dataset, idempotent on the decision's key.
"""

from __future__ import annotations

from .decide import Decision, Verdict, decide
from .engine import ACTIONS_BATCH_PREFIX, ActionError, actions_batch, apply_actions
from .history import FaultInfo, SweepRecord, replica_history
from .run import Outcome, run_command, run_webhook, verdict_env, verdict_payload

__all__ = [
    "ACTIONS_BATCH_PREFIX",
    "ActionError",
    "Decision",
    "FaultInfo",
    "Outcome",
    "SweepRecord",
    "Verdict",
    "actions_batch",
    "apply_actions",
    "decide",
    "replica_history",
    "run_command",
    "run_webhook",
    "verdict_env",
    "verdict_payload",
]
