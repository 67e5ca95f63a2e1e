"""A two-level fat-tree fabric: leaf and spine switches, hosts, and the links between their ports.

A *fabric topology* names every switch (tier ``leaf`` or ``spine``), every host, and every link
with the port name at both ends and whether it is up. Hosts hang off leaves; every leaf has at
most one link to every spine. FlowPulse (HotNets '25) judges each switch from the counters of its
own fabric ports (ports whose peer is a switch); the topology says which peer each port faces and
which links are down, so a down link is expected to carry nothing.

Topology files are JSON or YAML::

    switches: [{name: leaf00, tier: leaf}, {name: spine00, tier: spine}]
    hosts: [leaf00-h0]
    links:
      - {a: leaf00, a_port: up00, b: spine00, b_port: down00}            # status defaults to up
      - {a: leaf00-h0, a_port: eth0, b: leaf00, b_port: host0, status: up}
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from ..textfile import TextFileError, load_json, load_yaml, read_text

__all__ = [
    "MAX_TOPOLOGY_BYTES",
    "FabricLink",
    "FabricTopology",
    "fat_tree",
    "load_topology",
    "parse_topology",
    "topology_to_dict",
]

#: The largest topology file read (bytes): a fat tree of 64 leaves and 32 spines is ~160 KiB.
MAX_TOPOLOGY_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class FabricLink:
    """One cable: ``a``/``a_port`` to ``b``/``b_port``; ``up=False`` means it carries nothing."""

    a: str
    a_port: str
    b: str
    b_port: str
    up: bool = True


@dataclass(frozen=True)
class FabricTopology:
    """A validated two-level fabric. Build with :func:`parse_topology` or :func:`fat_tree`.

    Attributes:
        tiers: switch name -> ``"leaf"`` or ``"spine"``.
        hosts: host names.
        links: every link, in file order.
    """

    tiers: dict[str, str]
    hosts: tuple[str, ...]
    links: tuple[FabricLink, ...]
    _ports: dict[tuple[str, str], tuple[str, bool]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ports: dict[tuple[str, str], tuple[str, bool]] = {}
        for ln in self.links:
            ports[(ln.a, ln.a_port)] = (ln.b, ln.up)
            ports[(ln.b, ln.b_port)] = (ln.a, ln.up)
        object.__setattr__(self, "_ports", ports)

    @cached_property
    def leaves(self) -> tuple[str, ...]:
        """Leaf switch names, sorted."""
        return tuple(sorted(s for s, t in self.tiers.items() if t == "leaf"))

    @cached_property
    def spines(self) -> tuple[str, ...]:
        """Spine switch names, sorted."""
        return tuple(sorted(s for s, t in self.tiers.items() if t == "spine"))

    def peer(self, switch: str, port: str) -> str | None:
        """The node at the other end of ``switch``/``port``, or None if no link uses that port."""
        hit = self._ports.get((switch, port))
        return None if hit is None else hit[0]

    def is_up(self, switch: str, port: str) -> bool:
        """Whether the link on ``switch``/``port`` is up (False for an unknown port)."""
        hit = self._ports.get((switch, port))
        return bool(hit and hit[1])

    @cached_property
    def _fabric(self) -> dict[str, list[tuple[str, str, bool]]]:
        """Switch -> its ports facing another switch, built once (O(links)) for :meth:`fabric_ports`."""
        out: dict[str, list[tuple[str, str, bool]]] = {}
        for (sw, port), (peer, up) in self._ports.items():
            if peer in self.tiers:
                out.setdefault(sw, []).append((port, peer, up))
        return {sw: sorted(ports) for sw, ports in out.items()}

    def fabric_ports(self, switch: str) -> list[tuple[str, str, bool]]:
        """``(port, peer switch, up)`` for every port of ``switch`` facing another switch, sorted by port.

        O(ports of the switch) after the first call (the index is built once per topology).
        """
        return list(self._fabric.get(switch, []))

    def live_matrix(self) -> np.ndarray:
        """Boolean (leaves x spines) matrix, True where the leaf-spine link exists and is up."""
        li = {name: i for i, name in enumerate(self.leaves)}
        si = {name: j for j, name in enumerate(self.spines)}
        live = np.zeros((len(li), len(si)), dtype=bool)
        for ln in self.links:
            if ln.a in li and ln.b in si:
                live[li[ln.a], si[ln.b]] = ln.up
            elif ln.b in li and ln.a in si:
                live[li[ln.b], si[ln.a]] = ln.up
        return live


class _Switch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    tier: Literal["leaf", "spine"]


class _Link(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: str
    a_port: str
    b: str
    b_port: str
    status: Literal["up", "down"] = "up"


class _Topology(BaseModel):
    model_config = ConfigDict(extra="forbid")
    switches: list[_Switch]
    hosts: list[str] = []
    links: list[_Link]


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"topology: {where}: {err['msg']} (got {err.get('input')!r})"


def _check_link(ln: _Link, tiers: dict[str, str], hosts: set[str], seen_ports: set, pairs: set) -> None:
    for node, port in ((ln.a, ln.a_port), (ln.b, ln.b_port)):
        if node not in tiers and node not in hosts:
            raise ValueError(f"topology: link {ln.a}/{ln.a_port}-{ln.b}/{ln.b_port} names unknown node {node!r}")
        if (node, port) in seen_ports:
            raise ValueError(f"topology: port {node}/{port} is used by two links")
        seen_ports.add((node, port))
    kinds = sorted((tiers.get(ln.a, "host"), tiers.get(ln.b, "host")))
    if kinds not in (["leaf", "spine"], ["host", "leaf"]):
        raise ValueError(
            f"topology: link {ln.a}-{ln.b} joins a {kinds[0]} and a {kinds[1]}; "
            "a two-level fat tree links hosts to leaves and leaves to spines"
        )
    if kinds == ["leaf", "spine"]:
        pair = frozenset((ln.a, ln.b))
        if pair in pairs:
            raise ValueError(f"topology: leaf-spine pair {ln.a}-{ln.b} has more than one link")
        pairs.add(pair)


def parse_topology(data: Any) -> FabricTopology:
    """Validate a topology mapping (the parsed JSON/YAML) and build a :class:`FabricTopology`.

    Args:
        data: mapping with ``switches`` (name, tier), ``hosts`` (names) and ``links``
            (a, a_port, b, b_port, optional status ``up``/``down``).

    Returns:
        The validated topology.

    Raises:
        ValueError: naming the first bad field or value: unknown node in a link, a port used
            twice, a duplicate name, a link that is not host-leaf or leaf-spine, no leaf or no spine.

    Examples:
        >>> t = parse_topology({"switches": [{"name": "l0", "tier": "leaf"}, {"name": "s0", "tier": "spine"}],
        ...                     "links": [{"a": "l0", "a_port": "up0", "b": "s0", "b_port": "down0"}]})
        >>> t.fabric_ports("l0")
        [('up0', 's0', True)]
    """
    try:
        spec = _Topology.model_validate(data)
    except ValidationError as exc:
        raise ValueError(_first_error(exc)) from None
    tiers: dict[str, str] = {}
    for sw in spec.switches:
        if sw.name in tiers:
            raise ValueError(f"topology: switch {sw.name!r} is listed twice")
        tiers[sw.name] = sw.tier
    hosts = set()
    for h in spec.hosts:
        if h in tiers or h in hosts:
            raise ValueError(f"topology: host name {h!r} is listed twice or clashes with a switch")
        hosts.add(h)
    if "leaf" not in tiers.values() or "spine" not in tiers.values():
        raise ValueError("topology: a two-level fat tree needs at least one leaf and one spine switch")
    seen_ports: set = set()
    pairs: set = set()
    for ln in spec.links:
        _check_link(ln, tiers, hosts, seen_ports, pairs)
    links = tuple(FabricLink(ln.a, ln.a_port, ln.b, ln.b_port, ln.status == "up") for ln in spec.links)
    return FabricTopology(tiers=tiers, hosts=tuple(spec.hosts), links=links)


def load_topology(path: str | Path) -> FabricTopology:
    """Read and validate a topology file (``.json``, ``.yaml`` or ``.yml``).

    Raises:
        ValueError: unreadable file (also not a regular file, over :data:`MAX_TOPOLOGY_BYTES`,
            not UTF-8), unknown suffix, bad syntax, a key given twice, a YAML alias
            (:func:`~faultsense_pipelines.textfile.load_yaml`), or any :func:`parse_topology` error.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml"):
        raise ValueError(f"topology file {path} must end in .json, .yaml or .yml")
    try:
        text = read_text(path, MAX_TOPOLOGY_BYTES)
    except TextFileError as exc:  # "cannot read (No such file or directory)", "not a regular file", ...
        why = str(exc).removeprefix("cannot read (").removesuffix(")") if str(exc).startswith("cannot read (") else str(exc)
        raise ValueError(f"cannot read topology file {path}: {why}") from None
    try:  # duplicate keys, YAML aliases and huge integers refused (textfile.load_json / load_yaml)
        data = load_json(text) if suffix == ".json" else load_yaml(text)
    except TextFileError as exc:
        raise ValueError(f"topology file {path} is not valid {suffix[1:].upper()}: {exc}") from None
    return parse_topology(data)


def _leaf(i: int) -> str:
    return f"leaf{i:02d}"


def _spine(j: int) -> str:
    return f"spine{j:02d}"


def fat_tree(leaves: int, spines: int, hosts_per_leaf: int, down: Iterable[tuple[int, int]] = ()) -> FabricTopology:
    """Build a full two-level fat tree: every leaf linked to every spine.

    Names: leaves ``leaf00..``, spines ``spine00..``, hosts ``leaf00-h0..``; a leaf's port to
    spine j is ``up{j:02d}``, a spine's port to leaf i is ``down{i:02d}``, a leaf's port to its
    host h is ``host{h}``.

    Args:
        leaves: leaf switches (>= 1).
        spines: spine switches (>= 1).
        hosts_per_leaf: hosts under each leaf (>= 1).
        down: ``(leaf index, spine index)`` pairs whose link is down.

    Raises:
        ValueError: on a count below 1 or a down link outside the fabric.

    Examples:
        >>> t = fat_tree(2, 3, 1, down=[(0, 2)])
        >>> t.fabric_ports("leaf00")
        [('up00', 'spine00', True), ('up01', 'spine01', True), ('up02', 'spine02', False)]
    """
    for name, value in (("leaves", leaves), ("spines", spines), ("hosts_per_leaf", hosts_per_leaf)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    dead = set()
    for i, j in down:
        if not (0 <= i < leaves and 0 <= j < spines):
            raise ValueError(f"down link ({i}, {j}) is outside a {leaves}-leaf, {spines}-spine fabric")
        dead.add((i, j))
    tiers = {_leaf(i): "leaf" for i in range(leaves)} | {_spine(j): "spine" for j in range(spines)}
    hosts = tuple(f"{_leaf(i)}-h{h}" for i in range(leaves) for h in range(hosts_per_leaf))
    links = [
        FabricLink(_leaf(i), f"up{j:02d}", _spine(j), f"down{i:02d}", (i, j) not in dead)
        for i in range(leaves)
        for j in range(spines)
    ]
    links += [FabricLink(f"{_leaf(i)}-h{h}", "eth0", _leaf(i), f"host{h}") for i in range(leaves) for h in range(hosts_per_leaf)]
    return FabricTopology(tiers=tiers, hosts=hosts, links=tuple(links))


def topology_to_dict(topology: FabricTopology) -> dict[str, Any]:
    """The file form of ``topology`` (what :func:`parse_topology` reads back)."""
    return {
        "switches": [{"name": s, "tier": t} for s, t in topology.tiers.items()],
        "hosts": list(topology.hosts),
        "links": [
            {"a": ln.a, "a_port": ln.a_port, "b": ln.b, "b_port": ln.b_port, "status": "up" if ln.up else "down"}
            for ln in topology.links
        ],
    }
