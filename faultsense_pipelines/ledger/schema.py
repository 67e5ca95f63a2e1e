"""The datasets of the fault ledger, their columns, and how fault rows are named.

The *fault ledger* is FaultSense's output: one row per localized fault (or suspect), written by
the active sweep (``detector="faultsense"``) and by the passive detectors (``"minder"``,
``"flowpulse"``). ``probe_runs`` holds every probe measurement behind those rows; since schema
version 3, ``sweeps`` one row per sweep attempt of a (replica, hour) and ``actions`` every
decision of the fleet file's guarded actions. All are
hive-partitioned by ``date=YYYY-MM-DD`` under the ledger URI and read as-is by pandas,
polars, DuckDB and Spark.

Column types are fixed here, once; :data:`SCHEMA_VERSION` is stored in every fault row and in
the Parquet metadata of both datasets, and increases on any incompatible change.

>>> gpu_component(17), link_component(40, 3), replica_component("sim-64")
('gpu:17', 'link:3-40', 'replica:sim-64')
>>> make_fault_id("faultsense", "sim-64", "2026-11-30-08:00", "gpu:17")
'ed1a60654deeeeec2497'
"""

from __future__ import annotations

import hashlib

import pyarrow as pa

from ..replica.vocabulary import ComponentKind, Status

__all__ = [
    "ACTIONS",
    "ACTION_DECISIONS",
    "ACTION_SCHEMA",
    "ADDED_IN_VERSION_2",
    "ADDED_IN_VERSION_3",
    "COMPONENT_KINDS",
    "FAULT_LEDGER",
    "FAULT_SCHEMA",
    "PROBE_RUNS",
    "PROBE_RUN_SCHEMA",
    "SCHEMA_VERSION",
    "STATUSES",
    "SWEEPS",
    "SWEEP_SCHEMA",
    "SWEEP_STATUSES",
    "gpu_component",
    "link_component",
    "make_action_key",
    "make_fault_id",
    "replica_component",
]

#: Version of both schemas; stored in ``fault_ledger.schema_version`` and in file metadata.
#: 2 added the nullable ``fault_ledger.confidence``; rows of version 1 read with it null.
#: 3 added the ``sweeps`` dataset (one row per sweep attempt), the ``actions`` dataset (one
#: row per action decision) and the nullable ``fault_ledger.node``, and their columns; a
#: version-2 table gains them on its next commit (Delta schema evolution) and reads them null
#: before.
SCHEMA_VERSION = 3
#: Columns a version-1 ledger lacks (read as null).
ADDED_IN_VERSION_2 = ("confidence",)
#: Table columns a version-2 ledger lacks: ``fault_ledger.node`` and those of ``sweeps`` and
#: ``actions`` that no older dataset has (read as null).
ADDED_IN_VERSION_3 = (
    "node",
    "drilldown", "swept_hour", "started_at", "finished_at", "probes_phase1", "probes_phase2", "failed_probes",
    "confirmed", "inconclusive",
    "action_key", "decided_at", "action", "trigger", "hour", "decision", "reason", "exit_code", "stderr", "dry_run",
)  # fmt: skip

#: Dataset folder names under the ledger URI.
FAULT_LEDGER = "fault_ledger"
PROBE_RUNS = "probe_runs"
ACTIONS = "actions"

#: What an action decided for one verdict (the ``actions`` dataset's ``decision``): ``acted``
#: (the command ran and exited 0, the webhook answered 2xx), ``dry_run`` (decided, nothing run),
#: ``skipped`` (a guard or filter said no: ``reason`` names it), ``failed`` (a non-zero exit
#: code, an HTTP error, a command that cannot start), ``timed_out`` (killed at ``timeout_s``),
#: and ``started``: the intent recorded before the command runs, replaced by its outcome.
ACTION_DECISIONS: tuple[str, ...] = ("acted", "dry_run", "skipped", "failed", "timed_out", "started")
SWEEPS = "sweeps"

#: A sweep attempt's outcome (``sweeps.status``): ``faulty`` (it confirmed a component),
#: ``degraded`` (replica-wide degradation, no component blamed), ``inconclusive`` (it left
#: components or links unsettled), ``healthy``, or ``failed`` (it did not complete: the
#: executor could not start, probes could not be measured).
SWEEP_STATUSES: tuple[str, ...] = ("healthy", "faulty", "degraded", "inconclusive", "failed")

#: ``gpu`` / ``link``: FaultSense's components; ``replica``: a FaultSense sweep judged
#: replica-wide degradation (most probes slow, so no single component can be blamed);
#: ``machine`` (Minder) and ``fabric_link`` (FlowPulse): the passive detectors'.
#: (The words of :class:`~faultsense_pipelines.replica.vocabulary.ComponentKind`.)
COMPONENT_KINDS: tuple[str, ...] = ComponentKind.values()

#: suspect: a Phase 1 suspect not (yet) pinned; confirmed: localized; masked: a link of a
#: confirmed faulty GPU, which cannot be judged; inconclusive: the drill-down could not decide.
#: (The words of :class:`~faultsense_pipelines.replica.vocabulary.Status`.)
STATUSES: tuple[str, ...] = Status.values()

_META = {b"faultsense.schema_version": str(SCHEMA_VERSION).encode()}

FAULT_SCHEMA = pa.schema(
    [
        pa.field("fault_id", pa.string(), nullable=False),
        pa.field("detected_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("sweep_id", pa.string(), nullable=False),
        pa.field("replica", pa.string(), nullable=False),
        pa.field("detector", pa.string(), nullable=False),
        pa.field("component_kind", pa.string(), nullable=False),
        pa.field("component", pa.string(), nullable=False),
        pa.field("gpu", pa.int32()),
        pa.field("peer_gpu", pa.int32()),
        pa.field("slowdown", pa.float64()),
        pa.field("status", pa.string(), nullable=False),
        pa.field("phase", pa.int32()),
        pa.field("probes_used", pa.int32()),
        pa.field("confidence", pa.float64()),
        pa.field("node", pa.string()),
        pa.field("schema_version", pa.int32(), nullable=False),
    ],
    metadata={**_META, b"faultsense.dataset": FAULT_LEDGER.encode()},
)
"""``fault_ledger/``: one row per fault. ``gpu``/``peer_gpu`` are null for components that
are not GPUs (passive detectors); ``slowdown`` = observed / healthy median latency (null when
not measured); ``phase`` (1 or 2) and ``probes_used`` are null for passive detectors;
``confidence`` (version 2) is what the drill-down's test guarantees for the verdict (the
sequential drill-down: over the verdicts stated at ``>= 1 - a``, at most ``a`` healthy ones
expected; older rows of the retired ``evidence`` drill-down hold a posterior), null where the
detector states none; ``node`` (version 3) is the host a
component sits on, from the replica's ``topology`` (``node_names``, else ``node<v>``): a GPU's
node, a link's (``a17`` or ``a17,a18`` when its ends sit on two nodes), a NIC's or an
NVSwitch's; null for a switch, a whole replica, a replica without a topology and the passive
detectors' rows."""

PROBE_RUN_SCHEMA = pa.schema(
    [
        pa.field("sweep_id", pa.string(), nullable=False),
        pa.field("replica", pa.string(), nullable=False),
        pa.field("phase", pa.int32(), nullable=False),
        pa.field("probe_index", pa.int32(), nullable=False),
        pa.field("gpus", pa.list_(pa.int32()), nullable=False),
        pa.field("latency_ms", pa.float64()),
        pa.field("repeat", pa.int32()),
        pa.field("executor", pa.string(), nullable=False),
        pa.field("error", pa.string()),
    ],
    metadata={**_META, b"faultsense.dataset": PROBE_RUNS.encode()},
)
"""``probe_runs/``: one row per repeat of every probe (``latency_ms`` in ms, ``repeat``
0-based), or one error row per probe that could not be measured (``latency_ms`` and
``repeat`` null, ``error`` set)."""


ACTION_SCHEMA = pa.schema(
    [
        pa.field("action_key", pa.string(), nullable=False),
        pa.field("decided_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("sweep_id", pa.string(), nullable=False),
        pa.field("replica", pa.string(), nullable=False),
        pa.field("action", pa.string(), nullable=False),
        pa.field("trigger", pa.string(), nullable=False),
        pa.field("component", pa.string(), nullable=False),
        pa.field("component_kind", pa.string(), nullable=False),
        pa.field("node", pa.string()),
        pa.field("gpu", pa.int32()),
        pa.field("hour", pa.string(), nullable=False),
        pa.field("status", pa.string()),
        pa.field("confidence", pa.float64()),
        pa.field("slowdown", pa.float64()),
        pa.field("decision", pa.string(), nullable=False),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("exit_code", pa.int32()),
        pa.field("stderr", pa.string()),
        pa.field("dry_run", pa.bool_(), nullable=False),
        pa.field("schema_version", pa.int32(), nullable=False),
    ],
    metadata={**_META, b"faultsense.dataset": ACTIONS.encode()},
)
"""``actions/`` (schema version 3): one row per decision of a fleet-file action about one
verdict. ``action_key`` = :func:`make_action_key` of (action, replica, component, hour,
trigger); ``trigger`` is the action's ``on`` (``confirmed`` or ``resolved``); ``hour`` the sweep
partition ``YYYY-MM-DD-HH:00`` whose verdict it is; ``status``, ``confidence``, ``slowdown`` the
verdict's (null for ``resolved``, whose verdict is the component's absence); ``node`` the
node name where the replica's topology knows it; ``decision`` one of
:data:`ACTION_DECISIONS`; ``reason`` one line (the guard that tripped, the HTTP status, ...);
``exit_code`` the command's, null where none; ``stderr`` its last 300 characters, secrets
scrubbed; ``dry_run`` whether the action was a dry run."""


def make_action_key(action: str, replica: str, component: str, hour: str, trigger: str) -> str:
    """The idempotence key of one action decision: the same action about the same verdict
    (component, sweep hour, trigger) always gets the same key, however often the hour is
    re-run or backfilled.

    Returns:
        20 lowercase hex digits (the first 80 bits of a SHA-256 of the five fields).
    """
    key = "\x1f".join((action, replica, component, hour, trigger))
    return hashlib.sha256(key.encode()).hexdigest()[:20]


SWEEP_SCHEMA = pa.schema(
    [
        pa.field("sweep_id", pa.string(), nullable=False),
        pa.field("replica", pa.string(), nullable=False),
        pa.field("swept_hour", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("status", pa.string(), nullable=False),
        pa.field("started_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("finished_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("executor", pa.string(), nullable=False),
        pa.field("drilldown", pa.string()),
        pa.field("probes_phase1", pa.int32(), nullable=False),
        pa.field("probes_phase2", pa.int32(), nullable=False),
        pa.field("failed_probes", pa.int32(), nullable=False),
        pa.field("confirmed", pa.int32(), nullable=False),
        pa.field("inconclusive", pa.int32(), nullable=False),
        pa.field("schema_version", pa.int32(), nullable=False),
    ],
    metadata={**_META, b"faultsense.dataset": SWEEPS.encode()},
)
"""``sweeps/`` (version 3): one row per sweep attempt of a (replica, hour), in the same commit
as the attempt's probe and fault rows and in the same batch (``faultsense-<replica>-hHH``, or
``...-failed`` for a failed attempt). ``swept_hour`` is the hour partition swept (UTC),
``started_at`` / ``finished_at`` the run's wall-clock start and the commit's time (UTC);
``status`` one of :data:`SWEEP_STATUSES`; ``drilldown`` the Phase 2 method (null when Phase 2
did not run); ``probes_phase1`` / ``probes_phase2`` the probes measured (or attempted) per
phase, ``failed_probes`` those that could not be measured; ``confirmed`` / ``inconclusive``
the sweep's fault rows of those statuses."""


def gpu_component(gpu: int) -> str:
    """The ``component`` string of a GPU: ``"gpu:17"``."""
    return f"gpu:{int(gpu)}"


def link_component(a: int, b: int) -> str:
    """The ``component`` string of the path between two GPUs, smaller id first: ``"link:3-40"``.

    Raises:
        ValueError: if ``a == b``.
    """
    if a == b:
        raise ValueError(f"a link joins two different GPUs, got ({a}, {b})")
    lo, hi = sorted((int(a), int(b)))
    return f"link:{lo}-{hi}"


def replica_component(replica: str) -> str:
    """The ``component`` string of a whole replica (replica-wide degradation): ``"replica:sim-64"``."""
    return f"replica:{replica}"


def make_fault_id(detector: str, replica: str, window: str, component: str) -> str:
    """A deterministic fault id: the same fault found again in the same window gets the same id.

    Args:
        detector: ``"faultsense"``, ``"minder"``, ``"flowpulse"``, ...
        replica: replica (or cluster) name.
        window: the detection window, e.g. the sweep's hour partition ``"2026-11-30-08:00"``
            or a passive scan's window start in ISO 8601.
        component: ``"gpu:17"``, ``"link:3-40"``, ``"machine:node-07"``, ...

    Returns:
        20 lowercase hex digits (the first 80 bits of a SHA-256 of the four fields).
    """
    key = "\x1f".join((detector, replica, window, component))
    return hashlib.sha256(key.encode()).hexdigest()[:20]
