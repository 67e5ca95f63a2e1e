"""Scan a fabric's counters: judge every reporting switch locally, then name the lossy links.

Each switch that exported counters is judged on its own (:func:`detect.detect_switch`) against
expected shares that are either analytic (the spraying model over the topology's live links
and an assumed leaf-to-leaf traffic pattern) or learned from the switch's earlier
iterations (the first ``reference``, then all but the last ``lag``). A flagged ingress port
names the link it sits on (the switch, the port, the peer at the other end).

A loss on a leaf-to-spine link also thins what that spine forwards on, so the next leaf's port
from that spine sees an *echo* of the deficit. When the spine's own counters are present and
the spine flagged a port (facing another switch) over an overlapping span of iterations with at
least half the loss, the leaf's alarm is an echo and is dropped. Without spine counters the echo
is reported at the leaf port where it was seen (the spine is right, the leaf side may not be).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd

from faultsense_pipelines.flowpulse.counters import SwitchIngress, check_topology, ingress_packets
from faultsense_pipelines.flowpulse.detect import FALSE_ALARM_RATE, detect_switch
from faultsense_pipelines.flowpulse.model import (
    growing_reference,
    leaf_ring,
    learned_dispersion,
    learned_shares,
    spray_shares,
)
from faultsense_pipelines.flowpulse.topology import FabricTopology

__all__ = ["LinkFault", "ScanConfig", "drop_echoes", "scan", "scan_ingress"]

Model = Literal["learned", "analytic"]


@dataclass(frozen=True)
class ScanConfig:
    """Detector settings.

    Attributes:
        model: ``"learned"`` (shares from each switch's earlier iterations) or
            ``"analytic"`` (spraying model over the topology's live links and ``traffic``;
            catches a loss present from the first iteration, but only as right as ``traffic``).
        traffic: the analytic model's leaf-to-leaf traffic: ``"uniform"`` (every leaf pair
            alike) or ``"ring"`` (ring all-reduce over the leaves in name order: each leaf
            sends to the next, as NCCL's rings over nodes do).
        reference: iterations the learned shares first come from (>= 2); not judged themselves.
            Later iterations join the reference once they are ``lag`` iterations old.
        lag: iterations a new deviation is judged before it can enter the learned reference.
        design_loss: smallest loss rate a CUSUM is tuned to, in (0, 1); each port runs
            ``designs`` CUSUMs tuned to design_loss, 2x, 4x, ... (default 0.25%, 0.5%, 1%, 2%).
        designs: parallel CUSUMs per port (>= 1).
        false_alarm_rate: expected false alarms per judged port and iteration, the budget the
            thresholds come from (1e-10: 0.004 in 10,000 iterations of 4,096 ports).
        threshold: a fixed CUSUM alarm level (log-likelihood ratio, > 0) instead of the budget's.
        echo_slack: iterations by which the deviation spans ([first, detected]) of a spine alarm
            and of a leaf alarm behind it may miss each other and still be one loss.
    """

    model: Model = "learned"
    traffic: Literal["uniform", "ring"] = "uniform"
    reference: int = 20
    lag: int = 50
    design_loss: float = 0.0025
    designs: int = 4
    false_alarm_rate: float = FALSE_ALARM_RATE
    threshold: float | None = None
    echo_slack: int = 50

    def __post_init__(self) -> None:
        if self.model not in ("learned", "analytic"):
            raise ValueError(f"model must be 'learned' or 'analytic', got {self.model!r}")
        if self.traffic not in ("uniform", "ring"):
            raise ValueError(f"traffic must be 'uniform' or 'ring', got {self.traffic!r}")
        if self.reference < 2:
            raise ValueError(f"reference must be >= 2 iterations, got {self.reference}")
        if self.lag < 0:
            raise ValueError(f"lag must be >= 0, got {self.lag}")
        if not 0 < self.design_loss < 1:
            raise ValueError(f"design_loss must be in (0, 1), got {self.design_loss}")
        if self.designs < 1 or self.design_loss * 2 ** (self.designs - 1) >= 1:
            raise ValueError(f"designs must be >= 1 with every design loss below 1, got {self.designs}")
        if not 0 < self.false_alarm_rate < 1:
            raise ValueError(f"false_alarm_rate must be in (0, 1), got {self.false_alarm_rate}")
        if self.threshold is not None and self.threshold <= 0:
            raise ValueError(f"threshold must be > 0, got {self.threshold}")

    @property
    def design_losses(self) -> tuple[float, ...]:
        """Loss rates of the parallel CUSUMs: design_loss * 2^i, i < designs."""
        return tuple(self.design_loss * 2**i for i in range(self.designs))


@dataclass(frozen=True)
class LinkFault:
    """A link that loses packets, as seen by the switch at its receiving end.

    Attributes:
        switch, port: the receiving switch and its port; ``peer`` the switch that sends on it.
        first_iteration: iteration where the deviation began.
        detected_iteration: iteration at which the alarm was raised.
        loss_estimate: estimated fraction of the link's packets lost (0..1).
        peer_observed: False when the sending switch exported no counters: the deficit may
            then be an echo of a loss on a link into the sender (it forwards less), which
            only the sender's own counters could tell apart, so the link is a suspect, not
            a confirmed fault.
    """

    switch: str
    port: str
    peer: str
    first_iteration: int
    detected_iteration: int
    loss_estimate: float
    peer_observed: bool = True

    def to_json(self) -> dict:
        """The CLI contract's fields (switch, port, peer, first_iteration, loss_estimate), and peer_observed."""
        d = asdict(self)
        d.pop("detected_iteration")
        return d


def _analytic_shares(topology: FabricTopology, traffic: str) -> dict[tuple[str, str], float]:
    """Expected share of every (switch, peer) fabric port under the analytic spraying model."""
    live = topology.live_matrix()
    matrix = leaf_ring(live.shape[0]) if traffic == "ring" else None
    leaf_in, spine_in = spray_shares(live, matrix)
    shares = {}
    for i, leaf in enumerate(topology.leaves):
        for j, spine in enumerate(topology.spines):
            shares[(leaf, spine)] = float(leaf_in[i, j])
            shares[(spine, leaf)] = float(spine_in[j, i])
    return shares


def _judge(ing: SwitchIngress, config: ScanConfig, analytic: dict[tuple[str, str], float]) -> list[LinkFault]:
    packets = np.where(ing.up, ing.packets, 0)  # a down link is expected to carry nothing
    first = 0
    if config.model == "analytic":
        shares = np.array([analytic.get((ing.switch, p), 0.0) for p in ing.peers]) * ing.up
        shares = shares / shares.sum() if shares.sum() > 0 else shares
        ref, disp = np.inf, 1.0
    else:
        if packets.shape[0] <= config.reference:
            return []
        reference = packets[: config.reference]
        disp = learned_dispersion(reference, learned_shares(reference))
        shares, ref = growing_reference(packets, config.reference, config.lag)
        packets, first = packets[config.reference :], config.reference
    alarms = detect_switch(
        packets,
        shares,
        design_losses=config.design_losses,
        false_alarm_rate=config.false_alarm_rate,
        threshold=config.threshold,
        reference_packets=ref,
        dispersion=disp,
    )
    its = ing.iterations
    return [
        LinkFault(
            ing.switch,
            ing.ports[a.port],
            ing.peers[a.port],
            int(its[first + a.start]),
            int(its[first + a.alarm]),
            round(a.loss_estimate, 6),
        )
        for a in alarms
    ]


def _explains(upstream: LinkFault, echo: LinkFault, slack: int) -> bool:
    """Whether a spine's alarm on a port facing another switch explains ``echo`` behind it.

    The two deviation spans must overlap within ``slack`` iterations (at low loss rates the
    change-point estimates of the two CUSUMs scatter by tens of iterations), and the spine's
    loss estimate must be at least half the echo's (an echo carries at most the upstream loss).
    """
    return (
        upstream.peer != echo.switch
        and upstream.first_iteration <= echo.detected_iteration + slack
        and echo.first_iteration <= upstream.detected_iteration + slack
        and upstream.loss_estimate >= 0.5 * echo.loss_estimate
    )


def drop_echoes(faults: list[LinkFault], reporting: set[str], slack: int = 50) -> list[LinkFault]:
    """Drop the alarms that an alarm of the sending switch explains (see :func:`_explains`).

    Args:
        faults: alarms of every judged switch.
        reporting: switches whose counters were judged (an absent switch explains nothing).
        slack: iterations the two deviation spans may miss each other by.

    Returns:
        ``faults`` without the echoes, order kept.
    """
    by_switch: dict[str, list[LinkFault]] = {}
    for f in faults:
        by_switch.setdefault(f.switch, []).append(f)
    return [f for f in faults if f.peer not in reporting or not any(_explains(u, f, slack) for u in by_switch.get(f.peer, []))]


def scan_ingress(ingress: list[SwitchIngress], topology: FabricTopology, config: ScanConfig = ScanConfig()) -> list[LinkFault]:
    """Judge every switch of ``ingress`` locally, drop echoes, and name the lossy links.

    Args:
        ingress: per-switch ingress matrices (:func:`counters.ingress_packets`).
        topology: the fabric they come from.
        config: detector settings.

    Returns:
        Lossy links, sorted by first iteration, switch and port.

    Notes:
        O(T * P) per switch for the CUSUM.
    """
    analytic = _analytic_shares(topology, config.traffic) if config.model == "analytic" else {}
    faults = [f for ing in ingress for f in _judge(ing, config, analytic)]
    reporting = {ing.switch for ing in ingress}
    faults = [
        f if f.peer in reporting else replace(f, peer_observed=False) for f in drop_echoes(faults, reporting, config.echo_slack)
    ]
    return sorted(faults, key=lambda f: (f.first_iteration, f.switch, f.port))


def scan(frame: pd.DataFrame, topology: FabricTopology, config: ScanConfig = ScanConfig()) -> list[LinkFault]:
    """Find the lossy links in validated counters (:func:`counters.validate_counters`).

    Args:
        frame: counters in the file contract.
        topology: the fabric the counters come from.
        config: detector settings.

    Returns:
        Lossy links, sorted by first iteration, switch and port.

    Raises:
        ValueError: counters naming a switch, port or peer the topology does not have.

    Notes:
        O(rows) to check and pivot, then :func:`scan_ingress`.
    """
    check_topology(frame, topology)
    return scan_ingress(ingress_packets(frame, topology), topology, config)
