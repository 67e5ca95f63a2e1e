"""Switch-port counters: load, validate, and cut into per-switch ingress matrices.

The file contract (Parquet or CSV) is one row per iteration (one collective step), switch, port
and direction, with columns ``iteration`` (int >= 0), ``switch``, ``port``, ``peer`` (strings),
``direction`` (``"rx"`` or ``"tx"``), ``bytes`` and ``packets`` (ints >= 0); every integer is
below 2^53 (:data:`MAX_COUNTER`). Switches may be absent (e.g. only leaves export). FlowPulse
judges a switch by what *arrives* on its fabric ports, so :func:`ingress_packets` keeps the
``rx`` rows of ports whose peer is a switch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from faultsense_pipelines.flowpulse.topology import FabricTopology

__all__ = [
    "COLUMNS",
    "MAX_COUNTER",
    "LinkPairs",
    "SpineBalance",
    "SwitchIngress",
    "check_topology",
    "ingress_packets",
    "link_pairs",
    "load_counters",
    "spine_balance",
    "validate_counters",
]

COLUMNS = ("iteration", "switch", "port", "peer", "direction", "bytes", "packets")
_INT_COLUMNS = ("iteration", "bytes", "packets")
#: Counters, byte counts and iteration numbers must be below 2^53: float64 (the detector's
#: arithmetic) is exact up to there, and 2^63 would wrap to a negative int64.
MAX_COUNTER = 2**53
_STR_COLUMNS = ("switch", "port", "peer")


@dataclass(frozen=True)
class SwitchIngress:
    """Packets that arrived on one switch's fabric ports.

    Attributes:
        switch: switch name.
        iterations: (T,) int64 iteration numbers, increasing, every port reported.
        ports: P port names; ``peers`` the switch each faces; ``up`` (P,) bool link state.
        packets: (T, P) int64 packets received.
    """

    switch: str
    iterations: np.ndarray
    ports: tuple[str, ...]
    peers: tuple[str, ...]
    up: np.ndarray
    packets: np.ndarray


@dataclass(frozen=True)
class LinkPairs:
    """Both ends' counters of fabric links, one column per link direction (sender -> receiver).

    Attributes:
        iterations: (T,) int64 iteration numbers, increasing, in which every column's two ends reported.
        senders, sender_ports: the switch that transmits on each column's link and its port.
        receivers, receiver_ports: the switch at the other end and its port.
        sent: (T, K) int64 packets the sender's port transmitted (tx), per iteration.
        received: (T, K) int64 packets the receiver's port counted (rx) in the same iterations.
    """

    iterations: np.ndarray
    senders: tuple[str, ...]
    sender_ports: tuple[str, ...]
    receivers: tuple[str, ...]
    receiver_ports: tuple[str, ...]
    sent: np.ndarray
    received: np.ndarray


@dataclass(frozen=True)
class SpineBalance:
    """What the leaves sent into each spine and received out of it, from the leaves' own counters.

    Attributes:
        iterations: (T,) int64 iteration numbers in which every leaf with a live link to every
            listed spine reported tx and rx on its port to it.
        spines: S spine names; ``links``: (S,) int, live leaf links of each.
        into: (T, S) int64 packets the leaves transmitted towards each spine (sum of their tx).
        out: (T, S) int64 packets the leaves received from each spine (sum of their rx).
    """

    iterations: np.ndarray
    spines: tuple[str, ...]
    links: np.ndarray
    into: np.ndarray
    out: np.ndarray


def _check_int(frame: pd.DataFrame, col: str) -> None:
    values = frame[col]
    nulls = values.isna().to_numpy()
    if nulls.any():
        raise ValueError(f"counters: column {col!r} has a missing value (row {int(np.argmax(nulls))})")
    if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
        numeric = pd.to_numeric(values, errors="coerce")
        bad = (numeric.isna() | values.map(lambda v: isinstance(v, bool))).to_numpy()
        if bad.any():
            row = int(np.argmax(bad))
            raise ValueError(f"counters: column {col!r} must hold integers, got {values.iloc[row]!r} (row {row})")
        values = numeric
    if not pd.api.types.is_integer_dtype(values):
        arr = values.to_numpy(dtype=float)
        frac = arr != np.floor(arr)
        if frac.any():
            row = int(np.argmax(frac))
            raise ValueError(f"counters: column {col!r} must hold integers, got {float(arr[row])!r} (row {row})")
    neg = (values < 0).to_numpy()
    if neg.any():
        row = int(np.argmax(neg))
        raise ValueError(f"counters: column {col!r} must be >= 0, got {values.iloc[row]} (row {row})")
    big = (values >= MAX_COUNTER).to_numpy()
    if big.any():  # 2^63 and above would wrap to negative in int64; 2^53 is where float64 stops being exact
        row = int(np.argmax(big))
        raise ValueError(f"counters: column {col!r} must be < 2^53, got {values.iloc[row]} (row {row})")
    frame[col] = values


def _check_str(frame: pd.DataFrame, col: str) -> None:
    values = frame[col]
    if pd.api.types.infer_dtype(values, skipna=False) == "string":
        bad = (values.str.len() == 0).to_numpy()  # all strings: only empty ones are bad
    else:
        bad = ~values.map(lambda v: isinstance(v, str) and v != "").to_numpy()
    if bad.any():
        row = int(np.argmax(bad))
        raise ValueError(f"counters: column {col!r} must hold non-empty strings, got {values.iloc[row]!r} (row {row})")


def validate_counters(frame: pd.DataFrame) -> pd.DataFrame:
    """Check a counters frame against the contract; return it with the contract's columns and dtypes.

    Args:
        frame: one row per (iteration, switch, port, direction); extra columns are dropped.

    Returns:
        A new frame with exactly :data:`COLUMNS`, integers as int64.

    Raises:
        ValueError: naming the first problem: a missing column, a null, a non-integer, negative
            or >= 2^53 iteration/bytes/packets, an empty name, a direction other than rx/tx, a duplicate row.

    Examples:
        >>> validate_counters(pd.DataFrame({"iteration": [0], "switch": ["l0"], "port": ["up0"],
        ...     "peer": ["s0"], "direction": ["in"], "bytes": [1], "packets": [1]}))
        Traceback (most recent call last):
        ...
        ValueError: counters: column 'direction' must be 'rx' or 'tx', got 'in' (row 0)
    """
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"counters: missing column {missing[0]!r} (need {', '.join(COLUMNS)})")
    frame = frame.loc[:, list(COLUMNS)].reset_index(drop=True)
    for col in _INT_COLUMNS:
        _check_int(frame, col)
    for col in _STR_COLUMNS:
        _check_str(frame, col)
    bad = ~frame["direction"].isin(("rx", "tx")).to_numpy()
    if bad.any():
        row = int(np.argmax(bad))
        raise ValueError(f"counters: column 'direction' must be 'rx' or 'tx', got {frame['direction'].iloc[row]!r} (row {row})")
    dup = frame.duplicated(["iteration", "switch", "port", "direction"]).to_numpy()
    if dup.any():
        r = frame.iloc[int(np.argmax(dup))]
        raise ValueError(f"counters: duplicate row for iteration {r.iteration}, {r.switch}/{r.port} {r.direction}")
    out = frame.astype({c: "int64" for c in _INT_COLUMNS})
    return out.astype({c: object for c in (*_STR_COLUMNS, "direction")})


def load_counters(path: str | Path) -> pd.DataFrame:
    """Read a ``.parquet`` or ``.csv`` counters file and validate it (:func:`validate_counters`).

    Raises:
        ValueError: unknown suffix, unreadable file, a file without rows, or any contract violation.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".csv"):
        raise ValueError(f"counters file {path} must end in .parquet or .csv")
    if not path.is_file():
        raise ValueError(f"counters file {path} does not exist")
    try:
        if suffix == ".parquet":
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, dtype={"switch": str, "port": str, "peer": str, "direction": str})
    except Exception as exc:  # pyarrow / parser errors have many types; report the message
        raise ValueError(f"cannot read counters file {path}: {str(exc).splitlines()[0]}") from None
    if frame.empty:  # a header alone: nothing to judge, which must not read as "no loss"
        raise ValueError(f"counters file {path} has no rows")
    return validate_counters(frame)


def check_topology(frame: pd.DataFrame, topology: FabricTopology) -> None:
    """Check every (switch, port, peer) of validated counters against the topology.

    Raises:
        ValueError: a switch not in the topology, a port no link uses, or a peer that differs.
    """
    keys = frame.drop_duplicates(["switch", "port", "peer"])
    for sw, port, peer in zip(keys["switch"], keys["port"], keys["peer"], strict=True):
        if sw not in topology.tiers:
            raise ValueError(f"counters: switch {sw!r} is not in the topology")
        actual = topology.peer(sw, port)
        if actual is None:
            raise ValueError(f"counters: port {sw}/{port} is not on any link of the topology")
        if actual != peer:
            raise ValueError(f"counters: {sw}/{port} faces {actual} in the topology, counters say {peer}")


def ingress_packets(frame: pd.DataFrame, topology: FabricTopology) -> list[SwitchIngress]:
    """Per-switch matrices of packets received on fabric ports, from validated counters.

    Iterations in which a switch did not report every one of its fabric ports are left out
    for that switch (a gap in export, not a zero).

    Returns:
        One :class:`SwitchIngress` per switch that reported rx counters on a fabric port,
        sorted by switch name.
    """
    rx = frame[(frame["direction"] == "rx") & frame["peer"].isin(list(topology.tiers))]
    rx = rx.sort_values(["switch", "iteration", "port"], kind="stable")
    out: list[SwitchIngress] = []
    for switch_key, rows in rx.groupby("switch", sort=True):
        switch = str(switch_key)
        wide = _wide(rows)
        if wide.empty:
            continue
        ports = tuple(str(p) for p in wide.columns)
        peers = tuple(str(topology.peer(switch, p)) for p in ports)
        up = np.array([topology.is_up(switch, p) for p in ports], dtype=np.bool_)
        out.append(
            SwitchIngress(
                str(switch),
                wide.index.to_numpy(dtype=np.int64),
                ports,
                peers,
                up,
                wide.to_numpy(dtype=np.int64),
            )
        )
    return out


def _wide(rows: pd.DataFrame) -> pd.DataFrame:
    """(iteration x port) packets of one switch's rows sorted by iteration and port; complete iterations only."""
    ports = np.array(sorted(pd.unique(rows["port"])), dtype=object)
    iterations = rows["iteration"].to_numpy()
    if len(rows) % len(ports) == 0:  # fast path: every iteration reports every port
        shaped = rows["port"].to_numpy().reshape(-1, len(ports))
        its = iterations.reshape(-1, len(ports))
        if (shaped == ports).all() and (its == its[:, :1]).all():
            packets = rows["packets"].to_numpy().reshape(-1, len(ports))
            return pd.DataFrame(packets, index=its[:, 0], columns=ports)
    return rows.pivot(index="iteration", columns="port", values="packets").sort_index().dropna()


def link_pairs(frame: pd.DataFrame, topology: FabricTopology) -> LinkPairs:
    """The fabric link directions whose two ends both report, from validated counters.

    For every leaf-spine link and direction, the sender's ``tx`` row on its port and the
    receiver's ``rx`` row on its own; a column is kept where both ends reported in at least one
    common iteration, and the iterations kept are those in which every kept column's two ends
    reported (a column that reported in fewer iterations than the others is dropped, so that one
    exporter's gap does not blank the rest).

    Returns:
        :class:`LinkPairs` (K may be 0).

    Examples:
        >>> from faultsense_pipelines.flowpulse.topology import fat_tree
        >>> rows = [(0, "leaf00", "up00", "spine00", "tx", 8, 2), (0, "spine00", "down00", "leaf00", "rx", 4, 1)]
        >>> f = validate_counters(pd.DataFrame(rows, columns=list(COLUMNS)))
        >>> p = link_pairs(f, fat_tree(1, 1, 1))
        >>> p.senders, p.receivers, p.sent.tolist(), p.received.tolist()
        (('leaf00',), ('spine00',), [[2]], [[1]])
    """
    fabric = frame[frame["peer"].isin(list(topology.tiers)) & frame["switch"].isin(list(topology.tiers))]
    empty = LinkPairs(np.zeros(0, dtype=np.int64), (), (), (), (), np.zeros((0, 0), np.int64), np.zeros((0, 0), np.int64))
    if fabric.empty:
        return empty
    wide = fabric.pivot(index="iteration", columns=["switch", "port", "direction"], values="packets").sort_index()
    have = set(wide.columns)
    cols: list[tuple[tuple[str, str, str], tuple[str, str, str]]] = []
    for ln in topology.links:
        if ln.a not in topology.tiers or ln.b not in topology.tiers:
            continue
        for (s, sp), (r, rp) in (((ln.a, ln.a_port), (ln.b, ln.b_port)), ((ln.b, ln.b_port), (ln.a, ln.a_port))):
            tx, rx = (s, sp, "tx"), (r, rp, "rx")
            if tx in have and rx in have:
                cols.append((tx, rx))
    if not cols:
        return empty
    both = np.column_stack([wide[tx].notna().to_numpy() & wide[rx].notna().to_numpy() for tx, rx in cols])
    counts = both.sum(axis=0)
    keep = [i for i in range(len(cols)) if counts[i] == counts.max() and counts[i] > 0]
    rows = both[:, keep].all(axis=1)
    cols = [cols[i] for i in keep]
    sent = np.column_stack([wide[tx].to_numpy()[rows] for tx, _ in cols]).astype(np.int64)
    received = np.column_stack([wide[rx].to_numpy()[rows] for _, rx in cols]).astype(np.int64)
    return LinkPairs(
        wide.index.to_numpy(dtype=np.int64)[rows],
        tuple(str(tx[0]) for tx, _ in cols),
        tuple(str(tx[1]) for tx, _ in cols),
        tuple(str(rx[0]) for _, rx in cols),
        tuple(str(rx[1]) for _, rx in cols),
        sent,
        received,
    )


def spine_balance(frame: pd.DataFrame, topology: FabricTopology) -> SpineBalance:
    """Per spine, the leaves' tx towards it and rx from it, where every live leaf link of it reports both.

    A spine forwards what it receives within the iteration, so, with no loss on any of its links,
    ``into == out`` exactly: a conservation law that needs neither the spine's counters nor a
    traffic model (FlowPulse's leaf-only setting). Spines with a live link whose leaf end does
    not report both directions are left out.

    Examples:
        >>> from faultsense_pipelines.flowpulse.topology import fat_tree
        >>> rows = [(0, "leaf00", "up00", "spine00", "tx", 8, 2), (0, "leaf00", "up00", "spine00", "rx", 8, 2),
        ...         (0, "leaf01", "up00", "spine00", "tx", 8, 2), (0, "leaf01", "up00", "spine00", "rx", 4, 1)]
        >>> b = spine_balance(validate_counters(pd.DataFrame(rows, columns=list(COLUMNS))), fat_tree(2, 1, 1))
        >>> b.spines, b.into.tolist(), b.out.tolist()
        (('spine00',), [[4]], [[3]])
    """
    leaves = set(topology.leaves)
    rows = frame[frame["switch"].isin(list(leaves)) & frame["peer"].isin(list(topology.spines))]
    empty = SpineBalance(np.zeros(0, np.int64), (), np.zeros(0, np.int64), np.zeros((0, 0), np.int64), np.zeros((0, 0), np.int64))
    if rows.empty:
        return empty
    wide = rows.pivot(index="iteration", columns=["switch", "port", "direction"], values="packets").sort_index()
    have = set(wide.columns)
    spines, links, into, out, masks = [], [], [], [], []
    for spine in topology.spines:
        ends = [
            (leaf, port) for leaf in topology.leaves for port, peer, up in topology.fabric_ports(leaf) if peer == spine and up
        ]
        cols = [(leaf, port, d) for leaf, port in ends for d in ("tx", "rx")]
        if not ends or not all(c in have for c in cols):
            continue
        block = wide[cols]
        spines.append(spine)
        links.append(len(ends))
        masks.append(block.notna().all(axis=1).to_numpy())
        into.append(block[[c for c in cols if c[2] == "tx"]].fillna(0).to_numpy().sum(axis=1))
        out.append(block[[c for c in cols if c[2] == "rx"]].fillna(0).to_numpy().sum(axis=1))
    if not spines:
        return empty
    keep = np.logical_and.reduce(masks)
    return SpineBalance(
        wide.index.to_numpy(dtype=np.int64)[keep],
        tuple(spines),
        np.array(links, dtype=np.int64),
        np.column_stack(into)[keep].astype(np.int64),
        np.column_stack(out)[keep].astype(np.int64),
    )
