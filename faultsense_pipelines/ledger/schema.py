"""The two Parquet datasets of the fault ledger, their columns, and how fault rows are named.

The *fault ledger* is FaultSense's output: one row per localized fault (or suspect), written by
the active sweep (``detector="faultsense"``) and by the passive detectors (``"minder"``,
``"flowpulse"``). ``probe_runs`` holds every probe measurement behind those rows. Both are
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
    "ADDED_IN_VERSION_2",
    "ADDED_IN_VERSION_3",
    "COMPONENT_KINDS",
    "FAULT_LEDGER",
    "FAULT_SCHEMA",
    "PROBE_RUNS",
    "PROBE_RUN_SCHEMA",
    "SCHEMA_VERSION",
    "STATUSES",
    "gpu_component",
    "link_component",
    "make_fault_id",
    "replica_component",
]

#: Version of both schemas; stored in ``fault_ledger.schema_version`` and in file metadata.
#: 2 added the nullable ``fault_ledger.confidence``; rows of version 1 read with it null.
#: 3 added the nullable ``fault_ledger.node``; rows of versions 1 and 2 read with it null.
SCHEMA_VERSION = 3
#: Columns a version-1 ledger lacks (read as null).
ADDED_IN_VERSION_2 = ("confidence",)
#: Columns a version-2 ledger lacks (read as null; the table gains them with its first
#: version-3 write, Delta schema evolution).
ADDED_IN_VERSION_3 = ("node",)

#: Dataset folder names under the ledger URI.
FAULT_LEDGER = "fault_ledger"
PROBE_RUNS = "probe_runs"

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
``confidence`` (version 2) is the posterior probability that the component is faulty, from the
evidence drill-down, null where the detector states none; ``node`` (version 3) is the host a
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
