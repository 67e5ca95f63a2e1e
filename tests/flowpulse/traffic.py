"""An independent traffic generator for FlowPulse tests: random collectives on a sprayed fat tree.

Written apart from :mod:`faultsense_pipelines.flowpulse.simulate` (which runs exactly-ring
all-reduce over the leaves in name order) so that the detector is not tested against the traffic
its own simulator assumes. Traffic patterns, as leaf-to-leaf packet matrices per iteration:

- ``multiring``: ``rings`` rings, each over an independent random permutation of all hosts; every
  ring edge is one flow of ``flow_packets`` packets (NCCL-like multi-ring all-reduce whose rings
  ignore the leaf order);
- ``alltoall``: every host sends ``flow_packets // hosts`` packets to every other host;
- ``hotspot``: random multi-ring plus every leaf sending an extra flow to leaf 0 (uneven traffic).

Flows inside a leaf never reach the fabric. Each packet between leaves a and b picks a spine
uniformly among the spines with a live link to both (per-packet spraying), drawn as a chain of
binomials (not a multinomial call); a link dropping ``p`` loses each packet that crosses it
independently; losses are re-sent by the source leaf and re-sprayed until delivered. A *phase*
(iteration, pattern seed, actual live links) changes the traffic or the live links mid-run.

Counters come out in the file contract of :mod:`faultsense_pipelines.flowpulse.counters`, for
the naming of :func:`faultsense_pipelines.flowpulse.topology.fat_tree` (``leafNN``/``upNN``,
``spineNN``/``downNN``), rx and tx at both ends of every leaf-spine link.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

LEAVES, SPINES, HOSTS = 16, 8, 8
FLOW_PACKETS = 16_384
MTU = 4096


@dataclass(frozen=True)
class Phase:
    """From iteration ``start`` on: traffic ``pattern`` drawn with ``seed``, links in ``down`` carrying nothing."""

    start: int
    pattern: str = "multiring"
    seed: int = 0
    down: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class Loss:
    """Link (leaf, spine) drops ``rate`` of its packets in ``direction`` ("up": leaf to spine) from ``start`` on."""

    leaf: int
    spine: int
    rate: float
    direction: str = "down"
    start: int = 0


@dataclass
class Counters:
    """(T, L, S) packets: up_tx (leaf sends to spine), up_rx (spine gets), down_tx (spine sends), down_rx (leaf gets)."""

    up_tx: np.ndarray
    up_rx: np.ndarray
    down_tx: np.ndarray
    down_rx: np.ndarray
    extra: dict = field(default_factory=dict)


def leaf_traffic(
    pattern: str, seed: int, leaves: int = LEAVES, hosts: int = HOSTS, flow_packets: int = FLOW_PACKETS, rings: int = 8
) -> np.ndarray:
    """(L, L) packets per iteration from leaf a to leaf b (diagonal 0) for a traffic pattern."""
    rng = np.random.default_rng(seed)
    n = leaves * hosts
    leaf_of = np.arange(n) // hosts
    t = np.zeros((leaves, leaves), dtype=np.int64)
    if pattern in ("multiring", "hotspot"):
        for _ in range(rings):
            order = rng.permutation(n)
            np.add.at(t, (leaf_of[order], leaf_of[np.roll(order, -1)]), flow_packets)
        if pattern == "hotspot":
            t[1:, 0] += 4 * flow_packets
    elif pattern == "alltoall":
        per_pair = flow_packets // n
        t += hosts * hosts * per_pair
    else:
        raise ValueError(f"unknown pattern {pattern!r}")
    np.fill_diagonal(t, 0)
    return t


def _spray(rng: np.random.Generator, n: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """(..., S) counts: ``n`` (...) packets spread over S spines with probabilities (..., S), a chain of binomials."""
    out = np.zeros(probs.shape, dtype=np.int64)
    left = n.astype(np.int64).copy()
    mass = np.ones(n.shape)
    for s in range(probs.shape[-1]):
        p = np.divide(probs[..., s], mass, out=np.zeros(n.shape), where=mass > 1e-12)
        draw = rng.binomial(left, np.clip(p, 0.0, 1.0))
        out[..., s] = draw
        left -= draw
        mass = mass - probs[..., s]
    return out


def generate(
    iterations: int,
    phases: list[Phase] | tuple[Phase, ...] = (Phase(0),),
    losses: tuple[Loss, ...] = (),
    *,
    seed: int = 0,
    leaves: int = LEAVES,
    spines: int = SPINES,
    hosts: int = HOSTS,
    flow_packets: int = FLOW_PACKETS,
) -> Counters:
    """Counters of ``iterations`` iterations of the phases' traffic with ``losses``.

    Raises:
        ValueError: an unknown pattern, or a leaf pair that exchanges traffic with no live spine.
    """
    rng = np.random.default_rng(seed)
    shape = (iterations, leaves, spines)
    up_tx, up_rx, down_tx, down_rx = (np.zeros(shape, dtype=np.int64) for _ in range(4))
    p_up, p_down = np.zeros(shape), np.zeros(shape)
    for f in losses:
        target = p_up if f.direction in ("up", "both") else p_down
        target[f.start :, f.leaf, f.spine] = f.rate
        if f.direction == "both":
            p_down[f.start :, f.leaf, f.spine] = f.rate
    starts = [p.start for p in phases] + [iterations]
    for phase, lo, hi in zip(phases, starts[:-1], starts[1:], strict=True):
        if hi <= lo:
            continue
        live = np.ones((leaves, spines), dtype=bool)
        for a, s in phase.down:
            live[a, s] = False
        t = leaf_traffic(phase.pattern, phase.seed, leaves, hosts, flow_packets)
        src, dst = np.nonzero(t)
        paths = live[src] & live[dst]
        if (paths.sum(axis=1) == 0).any():
            raise ValueError("a leaf pair with traffic has no live spine")
        probs = paths / paths.sum(axis=1, keepdims=True)  # (flows, S)
        pending = np.broadcast_to(t[src, dst], (hi - lo, src.size)).copy()
        for _ in range(64):
            if not pending.any():
                break
            sent = _spray(rng, pending, np.broadcast_to(probs, (hi - lo, *probs.shape)))  # (T, F, S)
            at_spine = sent - rng.binomial(sent, p_up[lo:hi][:, src, :])
            at_leaf = at_spine - rng.binomial(at_spine, p_down[lo:hi][:, dst, :])
            for arr, rows, val in ((up_tx, src, sent), (up_rx, src, at_spine), (down_tx, dst, at_spine), (down_rx, dst, at_leaf)):
                view = arr[lo:hi]
                np.add.at(view, (slice(None), rows), val)
            pending = pending - at_leaf.sum(axis=-1)
    return Counters(up_tx, up_rx, down_tx, down_rx)


def frame(counters: Counters, switches: set[str] | None = None) -> pd.DataFrame:
    """Counters in the file contract (rx and tx of every fabric port of the switches kept; all when None)."""
    iters, leaves, spines = counters.up_tx.shape
    parts = []
    its = np.arange(iters)

    def add(switch: str, ports: list[str], peers: list[str], direction: str, packets: np.ndarray) -> None:
        k = len(ports)
        parts.append(
            pd.DataFrame(
                {
                    "iteration": np.repeat(its, k),
                    "switch": switch,
                    "port": np.tile(ports, iters),
                    "peer": np.tile(peers, iters),
                    "direction": direction,
                    "bytes": packets.reshape(-1) * MTU,
                    "packets": packets.reshape(-1),
                }
            )
        )

    spine_names = [f"spine{j:02d}" for j in range(spines)]
    leaf_names = [f"leaf{i:02d}" for i in range(leaves)]
    for i, leaf in enumerate(leaf_names):
        if switches is None or leaf in switches:
            ports = [f"up{j:02d}" for j in range(spines)]
            add(leaf, ports, spine_names, "tx", counters.up_tx[:, i, :])
            add(leaf, ports, spine_names, "rx", counters.down_rx[:, i, :])
    for j, spine in enumerate(spine_names):
        if switches is None or spine in switches:
            ports = [f"down{i:02d}" for i in range(leaves)]
            add(spine, ports, leaf_names, "rx", counters.up_rx[:, :, j])
            add(spine, ports, leaf_names, "tx", counters.down_tx[:, :, j])
    return pd.concat(parts, ignore_index=True)
