"""Scan a fabric's counters: judge every reporting switch locally, then name the lossy links.

Each switch that exported counters is judged on its own. The expected shares of its ports are
either analytic (the spraying model over the topology's live links and an assumed leaf-to-leaf
traffic pattern) or, by default, learned: the analytic shares of the one traffic pattern (uniform
or ring; one where they agree) that the switch's own counts fit (:func:`cross_checked_shares`,
:func:`analytic_fits`; an exact reference, so a loss present from the first iteration is found),
otherwise shares learned from the switch's past that never take in a deviation under test
(:func:`detect.detect_switch_learned`); a leaf pools the learned shares of its ports from spines
with identical live columns (:func:`model.symmetric_spines`, :func:`symmetric_classes`), which
the spraying model makes equal whatever the traffic. By the same symmetry a leaf's packets at the
spines of one class are equal, so a spine's port from a leaf is judged against that leaf's ports
at the class's other reporting spines in the same iteration (:func:`fanout_faults`): exact from
iteration 0, with no traffic model and no learned reference.
A port that never carried a packet is treated as down whatever the topology says. A flagged
ingress port names the link it sits on (the switch, the port, the peer at the other end).

A loss on a leaf-to-spine link also thins what that spine forwards on, so the next leaf's port
from that spine sees an *echo* of the deficit. When the spine's own counters are present and
the spine flagged a port (facing another switch) over an overlapping span of iterations with at
least half the loss, the leaf's alarm is an echo and is dropped. Without spine counters the echo
is reported at the leaf port where it was seen (the spine is right, the leaf side may not be).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd

from faultsense_pipelines.flowpulse.counters import (
    LinkPairs,
    SpineBalance,
    SwitchIngress,
    check_topology,
    ingress_packets,
    link_pairs,
    spine_balance,
)
from faultsense_pipelines.flowpulse.detect import (
    FALSE_ALARM_RATE,
    PAIR_FLOOR,
    PortAlarm,
    detect_link_pairs,
    detect_switch,
    detect_switch_learned,
)
from faultsense_pipelines.flowpulse.model import (
    leaf_ring,
    learned_dispersion,
    learned_shares,
    spray_shares,
    symmetric_spines,
)
from faultsense_pipelines.flowpulse.topology import FabricTopology

__all__ = [
    "LinkFault",
    "ScanConfig",
    "ScanReport",
    "TrafficChange",
    "analytic_fits",
    "conservation_faults",
    "cross_checked_shares",
    "cross_spine_origin",
    "drop_echoes",
    "explain_traffic",
    "fanout_faults",
    "judge_fabric",
    "live_links",
    "pair_faults",
    "scan",
    "scan_ingress",
    "scan_report",
    "silent_links",
    "symmetric_classes",
]

Model = Literal["learned", "analytic"]
CHECK_SIGMAS = 5.0  # pooled residual, in standard errors, at which the analytic shares are refused
MIN_REFERENCE = 2  # iterations a learned reference needs before any CUSUM may run
ECHO_SIGMAS = 4.0  # a spine port's deficit, in standard errors, that explains a leaf's alarm behind it
EXPLAIN_SLACK = 3  # iterations by which share alarms behind one spine (or a down link of it) count as the same moment
SILENT_ROWS = 3  # trailing iterations with nothing on a link, every reported counter of it, that make it down


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
        reference: iterations the counters' dispersion over binomial is estimated from (>= 2).
            The learned CUSUMs do not wait for them: each runs as soon as its own reference is
            good enough, and every iteration, the first ones included, is judged.
        lag: iterations a deviation that no CUSUM has flagged may hold a learned reference
            frozen; after that it joins the reference (a slow drift of the norm is learned).
        design_loss: smallest loss rate a CUSUM is tuned to, in (0, 1); each port runs
            ``designs`` CUSUMs tuned to design_loss, 2x, 4x, ... (default 0.25%, 0.5%, 1%, 2%).
        designs: parallel CUSUMs per port (>= 1).
        false_alarm_rate: expected false alarms per judged port and iteration, the budget the
            thresholds come from (1e-10: 0.004 in 10,000 iterations of 4,096 ports).
        threshold: a fixed CUSUM alarm level (log-likelihood ratio, > 0) instead of the budget's.
        cross_check: with ``model="learned"``, use exact references where they exist: a spine's
            ports from leaves judged by the leaf's fan-out at the spine's symmetric classmates
            (:func:`fanout_faults`), and a traffic pattern's analytic shares where the counts
            single them out (:func:`cross_checked_shares`); False: always learn.
        echo_slack: iterations by which the deviation spans ([first, detected]) of a spine alarm
            and of a leaf alarm behind it may miss each other and still be one loss.
        pool: a leaf's learned references pool its ports from spines with identical live
            columns (:func:`symmetric_classes`; a class whose counts do not fit equal shares is
            split); False: every port learns alone.
        pairs: judge every link direction whose two ends both report by its own two counters
            (sender's tx against receiver's rx, :func:`detect.detect_link_pairs`); the share
            models then judge only the ports of links with one reporting end. False: shares only.
        pair_floor: loss rate a healthy link may have in the two-ended test, in [0, design_loss).
    """

    model: Model = "learned"
    traffic: Literal["uniform", "ring"] = "uniform"
    reference: int = 20
    lag: int = 200
    design_loss: float = 0.0025
    designs: int = 4
    false_alarm_rate: float = FALSE_ALARM_RATE
    threshold: float | None = None
    echo_slack: int = 50
    cross_check: bool = True
    pool: bool = True
    pairs: bool = True
    pair_floor: float = PAIR_FLOOR

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
        if self.threshold is not None and not (math.isfinite(self.threshold) and self.threshold > 0):
            raise ValueError(f"threshold must be a finite number > 0, got {self.threshold}")
        if not 0 <= self.pair_floor < self.design_loss:
            raise ValueError(f"pair_floor must be in [0, design_loss), got {self.pair_floor}")

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


def _switch_shares(ing: SwitchIngress, analytic: dict[tuple[str, str], float], live: np.ndarray) -> np.ndarray:
    """(P,) analytic shares of one switch's ports, 0 where not live, normalized."""
    shares = np.array([analytic.get((ing.switch, p), 0.0) for p in ing.peers]) * live
    return shares / shares.sum() if shares.sum() > 0 else shares


def analytic_fits(
    packets: np.ndarray, shares: np.ndarray, dispersion: float = 1.0, sigmas: float = CHECK_SIGMAS, low: int = 0
) -> bool:
    """Cross-check of expected shares against a switch's own counts, pooled over all its iterations.

    With the common scale s (median over judged ports of observed over expected packets), port j's
    pooled standardized residual is z_j = (X_j - s E_j) / sqrt(dispersion * s E_j (1 - pi_j)).
    An analytic share model is a claim about every port, so it fits only when no port stands
    ``sigmas`` from its expectation either way (``low=0``, the default): a model that fits "all
    but one low port" would read a traffic effect on that port (a down link the topology does not
    mark moves every leaf's share from that spine) as a loss from iteration 0 (issue 31). A class
    of symmetric ports (:func:`symmetric_classes`) is a learned reference, not a model: it may keep
    ``low=1`` port below (a lossy one, which its pooled reference then finds). With T iterations
    the check sees a model error of ``sigmas / sqrt(T)`` standard deviations an iteration.

    Args:
        packets: (T, P) packets; shares: (P,) expected shares, 0 for a port not judged.
        dispersion: variance over binomial (>= 1). sigmas: the cut (> 0).
        low: ports allowed more than ``sigmas`` below (>= 0).

    Returns:
        True if the shares are consistent with the counts.

    Examples:
        >>> x = np.array([[1000, 1000, 1000, 1000], [1000, 1010, 990, 1000]])
        >>> analytic_fits(x, np.full(4, 0.25)), analytic_fits(x, np.array([0.3, 0.3, 0.2, 0.2]))
        (True, False)
        >>> y = np.array([[1000, 1000, 1000, 700]] * 2)      # one port low: not the model's
        >>> analytic_fits(y, np.full(4, 0.25)), analytic_fits(y, np.full(4, 0.25), low=1)
        (False, True)
    """
    x = np.asarray(packets, dtype=float)
    judged = shares > 0
    if judged.sum() < 2 or x.shape[0] == 0:
        return False
    observed = x.sum(axis=0)
    expected = x.sum() * shares
    scale = float(np.median(observed[judged] / expected[judged]))
    var = dispersion * scale * expected * (1 - shares)
    z = np.divide(observed - scale * expected, np.sqrt(var), out=np.zeros_like(var), where=judged & (var > 0))
    return bool((z <= sigmas).all() and (z < -sigmas).sum() <= low)


def cross_checked_shares(packets: np.ndarray, candidates: list[np.ndarray], dispersion: float = 1.0) -> np.ndarray | None:
    """The analytic shares a switch's counts single out among traffic patterns' candidates, or None.

    Candidates that agree (to 1e-9) count as one: their shares do not depend on the traffic
    pattern (a leaf in a fabric without down links). Otherwise (marked down links: a spine reaches
    fewer leaves, so who talks to whom moves the shares) the counts must fit exactly one of them
    (:func:`analytic_fits`); where none fits (traffic unlike every candidate, a down link the
    topology does not mark) or several do (the counts cannot tell them apart) the switch learns
    its shares instead. Under ring all-reduce with a marked down link the uniform and ring shares
    of a leaf differ by ~1/L of a port's share (3% at 32 leaves, ~11 standard deviations an
    iteration at 130k packets), so one iteration already tells them apart.

    Args:
        packets: (T, P) packets per iteration and port, 0 on ports not judged.
        candidates: (P,) analytic shares, one per traffic pattern (the configured one first).
        dispersion: variance over binomial (>= 1), for :func:`analytic_fits`.

    Returns:
        The (P,) shares of the single fitting candidate, or None.

    Examples:
        >>> x = np.array([[500, 500, 1000], [510, 490, 1000]])
        >>> cross_checked_shares(x, [np.full(3, 1 / 3), np.array([0.25, 0.25, 0.5])]).tolist()
        [0.25, 0.25, 0.5]
        >>> cross_checked_shares(x, [np.full(3, 1 / 3), np.full(3, 1 / 3)]) is None   # neither fits
        True
    """
    distinct: list[np.ndarray] = []
    for c in candidates:
        if not any(np.allclose(c, d, rtol=1e-9, atol=1e-12) for d in distinct):
            distinct.append(c)
    fits = [c for c in distinct if analytic_fits(packets, c, dispersion)]
    return fits[0] if len(fits) == 1 else None


def live_links(topology: FabricTopology, ingress: list[SwitchIngress]) -> np.ndarray:
    """(L, S) bool: the topology's live links less those whose receiving port, where reported, never carried a packet.

    A link the topology marks up but whose receiving end (either direction) counted no packet in
    any iteration is down in fact (:func:`scan_ingress` treats such a port as down too); a link
    neither end of which reports stays as the topology says.

    Examples:
        >>> from faultsense_pipelines.flowpulse.topology import fat_tree
        >>> topo = fat_tree(2, 2, 1)
        >>> leaf = SwitchIngress("leaf00", np.arange(2), ("up00", "up01"), ("spine00", "spine01"),
        ...                      np.array([True, True]), np.array([[10, 0], [12, 0]]))
        >>> live_links(topo, [leaf]).tolist()
        [[True, False], [True, True]]
    """
    live = topology.live_matrix().copy()
    leaf_index = {name: i for i, name in enumerate(topology.leaves)}
    spine_index = {name: j for j, name in enumerate(topology.spines)}
    for ing in ingress:
        silent = np.asarray(ing.packets).sum(axis=0) == 0
        for p in np.flatnonzero(silent | ~ing.up):
            pair = (ing.switch, ing.peers[p]) if ing.switch in leaf_index else (ing.peers[p], ing.switch)
            if pair[0] in leaf_index and pair[1] in spine_index:
                live[leaf_index[pair[0]], spine_index[pair[1]]] = False
    return live


def symmetric_classes(packets: np.ndarray, labels: np.ndarray, dispersion: float = 1.0) -> np.ndarray:
    """Port classes kept where the counts fit equal shares within the class; a class that does not is split.

    Each class of two or more ports is checked as :func:`analytic_fits` checks a model: given the
    class's packets, port j's count pooled over all iterations is binomial with share 1/|G| under
    the symmetry; no port may stand ``CHECK_SIGMAS`` standard errors above it and at most one (a
    lossy port) below. A class that fails (hashing that is not uniform, a down link that neither
    end reports) is split into single ports, which learn alone. As with the analytic cross-check
    (:func:`cross_checked_shares`), the check sees a share error of 5 / sqrt(T) standard deviations
    an iteration over T iterations; a smaller one would reach the CUSUMs.

    Args:
        packets: (T, P) packets per iteration and port.
        labels: (P,) int class labels (:func:`model.symmetric_spines` of each port's peer).
        dispersion: variance over binomial (>= 1).

    Returns:
        (P,) labels, the failing classes' ports given labels of their own.

    Examples:
        Ports 0-2 alike; port 3, in the same class, carries 20% more:

        >>> x = np.array([[1000, 1000, 1000, 1200], [1000, 1010, 990, 1200]])
        >>> symmetric_classes(x, np.array([0, 0, 0, 0])).tolist()
        [1, 2, 3, 4]
        >>> symmetric_classes(x, np.array([0, 0, 0, 1])).tolist()
        [0, 0, 0, 1]
    """
    x = np.asarray(packets, dtype=float)
    out = np.asarray(labels).astype(np.int64).copy()
    fresh = int(out.max(initial=0)) + 1
    for label in np.unique(out):
        cols = np.flatnonzero(out == label)
        if len(cols) < 2 or analytic_fits(x[:, cols], np.full(len(cols), 1.0 / len(cols)), dispersion, low=1):
            continue
        out[cols] = fresh + np.arange(len(cols))
        fresh += len(cols)
    return out


def _leaf_classes(ing: SwitchIngress, spine_class: dict[str, int]) -> np.ndarray | None:
    """(P,) class labels of a leaf's ports (its peers' spine classes), None for a spine."""
    if not ing.peers or not all(p in spine_class for p in ing.peers):
        return None
    return np.array([spine_class[p] for p in ing.peers], dtype=np.int64)


def _judge(
    ing: SwitchIngress,
    config: ScanConfig,
    analytic: dict[str, dict[tuple[str, str], float]],
    classes: np.ndarray | None = None,
    exclude: np.ndarray | None = None,
) -> list[LinkFault]:
    """One switch's share-model alarms; ports in ``exclude`` (P,) bool (judged by their two ends) are left out."""
    up = ing.up if exclude is None else ing.up & ~exclude
    if up.sum() < 2:
        return []
    packets = np.where(up, ing.packets, 0)  # a down link is expected to carry nothing
    live = up & (packets.sum(axis=0) > 0)  # nor does a link that never carried a packet
    packets = np.where(live, packets, 0)
    if packets.shape[0] < 2:
        return []
    window = packets[: max(2, config.reference)]
    disp = learned_dispersion(window, learned_shares(window))
    shares = _switch_shares(ing, analytic[config.traffic], live)
    if config.model == "analytic":
        return _faults(ing, detect_switch(packets, shares, **_test_settings(config), dispersion=1.0))
    other = _switch_shares(ing, analytic[_OTHER[config.traffic]], live)
    fitted = cross_checked_shares(packets, [shares, other], disp) if config.cross_check else None
    if fitted is not None:  # one traffic pattern's analytic shares agree with the counts: an exact reference
        alarms = detect_switch(packets, fitted, **_test_settings(config), dispersion=disp)
    else:
        groups = symmetric_classes(packets, classes, disp) if config.pool and classes is not None else None
        alarms = detect_switch_learned(
            packets,
            **_test_settings(config),
            dispersion=disp,
            min_reference=MIN_REFERENCE,
            max_freeze=config.lag,
            groups=groups,
        )
    return _faults(ing, alarms)


def _faults(ing: SwitchIngress, alarms: list[PortAlarm]) -> list[LinkFault]:
    """The links that a switch's port alarms name, with iterations in the counters' numbering."""
    its = ing.iterations
    return [
        LinkFault(
            ing.switch,
            ing.ports[a.port],
            ing.peers[a.port],
            int(its[a.start]),
            int(its[a.alarm]),
            round(a.loss_estimate, 6),
        )
        for a in alarms
    ]


_OTHER = {"uniform": "ring", "ring": "uniform"}


def _test_settings(config: ScanConfig) -> dict:
    return {"design_losses": config.design_losses, "false_alarm_rate": config.false_alarm_rate, "threshold": config.threshold}


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


def upstream_origin(echo: LinkFault, sender: SwitchIngress, sigmas: float = ECHO_SIGMAS) -> LinkFault | None:
    """The sender's ingress port whose deficit, from the echo's onset to its alarm, explains ``echo``; None if none does.

    A loss on leaf a -> spine s thins what s forwards to the next leaf b, and b's port from s
    flags it; when the spine's own CUSUMs did not (its references learned per port are slower
    than the leaf's pooled ones), the spine's counters are asked after the fact. For each of the
    sender's live ports j not facing the echo's switch, the share of rows before the onset k is
    compared with rows [k, alarm]: z_j = (s E_j - X_j) / sqrt(s E_j (1 - pi_j) (1 + N_post / N_pre)),
    pi_j = X_pre_j / N_pre, E_j = N_post pi_j, s the median of X_j / E_j over the ports (the common
    scale); the variance adds the reference's own (two-sample). The port with the largest z
    explains the echo when z >= ``sigmas`` and its loss is at least half the echo's (an echo
    carries at most the upstream loss). The test uses no row after the alarm; the loss estimate,
    as the detector's (:func:`detect.change_point`), pools every row from the onset on, relative
    to the median port. With no row before the onset (a loss from the first iteration) nothing
    can be said, and the leaf's alarm stands.

    Args:
        echo: a leaf's fault on a port from ``sender``.
        sender: the sending spine's ingress.
        sigmas: the cut (> 0); 4 keeps a healthy spine's 32 ports below ~1e-3 per echo.

    Returns:
        The fault on the sender's port (first and detected iteration as the echo's), or None.
    """
    its = np.asarray(sender.iterations)
    x = np.where(sender.up, np.asarray(sender.packets, dtype=float), 0.0)
    pre = x[its < echo.first_iteration].sum(axis=0)
    post = x[(its >= echo.first_iteration) & (its <= echo.detected_iteration)].sum(axis=0)
    n_pre, n_post = pre.sum(), post.sum()
    judged = (pre > 0) & np.array([p != echo.switch for p in sender.peers])
    if n_pre <= 0 or n_post <= 0 or judged.sum() < 2:
        return None
    pi = pre / n_pre
    expected = n_post * pi
    scale = float(np.median(post[judged] / expected[judged]))
    var = scale * expected * (1 - pi) * (1 + n_post / n_pre)
    z = np.where(judged, np.divide(scale * expected - post, np.sqrt(var), out=np.zeros_like(var), where=var > 0), -np.inf)
    j = int(np.argmax(z))
    after = x[its >= echo.first_iteration].sum(axis=0)  # the loss estimate pools every row from the onset on
    ratio = np.divide(after, after.sum() * pi, out=np.zeros_like(after), where=pi > 0)
    loss = 1 - ratio[j] / float(np.median(ratio[judged]))
    if z[j] < sigmas or loss < 0.5 * echo.loss_estimate:
        return None
    return LinkFault(
        sender.switch, sender.ports[j], sender.peers[j], echo.first_iteration, echo.detected_iteration, round(float(loss), 6)
    )


def cross_spine_origin(
    echo: LinkFault, sender: SwitchIngress, others: list[SwitchIngress], sigmas: float = ECHO_SIGMAS
) -> LinkFault | None:
    """The sender spine's port whose count falls short of the same leaf's counts at its symmetric spines; None if none.

    Under spraying, leaf a spreads what it sends over the spines live to both ends, so spines
    whose columns of the live matrix are identical (:func:`model.symmetric_spines`) receive equal
    shares of leaf a's traffic whatever the traffic matrix. Spine s's count from a, X_sa, is then
    Binomial(N_a, 1/G) given N_a, the packets from a at the G spines of s's class that report:
    a reference across spines that needs no healthy past, so a leaf-to-spine loss present from
    the first iteration (where :func:`upstream_origin` has no rows before the onset) is still
    placed. A loss p on a -> s leaves X_sa at (1 - p) of the others' mean (the losses are re-sent
    and re-sprayed over all the spines alike). Over the echo's rows [onset, alarm] (iterations
    every spine of the class reported), for each leaf a other than the echo's switch,
    z_a = (s M_a - X_sa) / sqrt(s M_a G / (G - 1)), M_a the mean count from a at the other G - 1
    spines (the variance of X_sa - M_a given N_a is N_a / (G - 1)), s the median over the leaves
    of X_sa / M_a (a spine that takes more or less of every leaf's traffic alike is not short of
    any). The leaf with the largest z takes the fault when z >= ``sigmas`` and its loss, pooled
    from the onset on (1 - (X_sa / M_a) / s), is at least half the echo's.

    Args:
        echo: a leaf's fault on a port from ``sender``.
        sender: the spine's ingress; ``others``: the ingress of the other reporting spines of its
            class (the same live column).
        sigmas: the cut (> 0); 4 keeps a healthy spine's ports below ~1e-3 per echo.

    Returns:
        The fault on the sender's port (first and detected iteration as the echo's), or None
        (no other spine in the class, no common iteration, nothing short enough).

    Examples:
        Three symmetric spines, leaves l0-l4, a million packets from each leaf at each spine an
        iteration; l1's link into s0 drops 2%, and l4's port from s0 shows the echo from iteration 0:

        >>> up, ports, leaves = np.ones(5, dtype=bool), ("d0", "d1", "d2", "d3", "d4"), ("l0", "l1", "l2", "l3", "l4")
        >>> def spine(name, counts):
        ...     return SwitchIngress(name, np.arange(4), ports, leaves, up, np.tile(counts, (4, 1)))
        >>> s0 = spine("s0", [10**6, 980_000, 10**6, 10**6, 10**6])
        >>> s1, s2 = spine("s1", [10**6] * 5), spine("s2", [10**6] * 5)
        >>> f = cross_spine_origin(LinkFault("l4", "u0", "s0", 0, 3, 0.02), s0, [s1, s2])
        >>> f.switch, f.port, f.peer, f.loss_estimate
        ('s0', 'd1', 'l1', 0.02)
    """
    others = [o for o in others if o.switch != sender.switch]
    if not others:
        return None
    spines = [sender, *others]
    common = np.asarray(sender.iterations)
    for o in others:
        common = np.intersect1d(common, o.iterations)
    leaves = [p for p, u in zip(sender.peers, sender.up, strict=True) if u and p != echo.switch]
    if common.size == 0 or len(leaves) < 2:
        return None

    def counts(lo: int, hi: int) -> np.ndarray:
        """(G, leaves) packets from each leaf at each spine of the class, iterations common to all in [lo, hi]."""
        keep = common[(common >= lo) & (common <= hi)]
        out = np.zeros((len(spines), len(leaves)))
        for g, ing in enumerate(spines):
            rows = np.isin(ing.iterations, keep)
            col = {p: c for c, p in enumerate(ing.peers)}
            out[g] = [np.asarray(ing.packets)[rows, col[a]].sum() if a in col else 0.0 for a in leaves]
        return out

    def short(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """Per leaf: the other spines' mean count, the sender's ratio to it, judged; and the common scale."""
        mean = x[1:].mean(axis=0)
        judged = np.asarray((x > 0).all(axis=0))
        ratio = np.divide(x[0], mean, out=np.zeros(x.shape[1]), where=mean > 0)
        return mean, ratio, judged, float(np.median(ratio[judged])) if judged.sum() >= 2 else float("nan")

    x = counts(echo.first_iteration, echo.detected_iteration)
    mean, _, judged, scale = short(x)
    if not np.isfinite(scale) or scale <= 0:
        return None
    g = x.shape[0]
    var = scale * mean * g / (g - 1)  # Var(X_sa - mean of the others) = N_a / (G - 1) given N_a
    z = np.where(judged, np.divide(scale * mean - x[0], np.sqrt(var), out=np.zeros_like(var), where=var > 0), -np.inf)
    j = int(np.argmax(z))
    _, after_ratio, after_judged, after_scale = short(counts(echo.first_iteration, int(common.max())))
    loss = 1 - after_ratio[j] / after_scale if after_judged[j] and after_scale > 0 else 0.0
    if z[j] < sigmas or loss < 0.5 * echo.loss_estimate:
        return None
    port = sender.ports[sender.peers.index(leaves[j])]
    return LinkFault(sender.switch, port, leaves[j], echo.first_iteration, echo.detected_iteration, round(float(loss), 6))


def _trace_echoes(
    faults: list[LinkFault], ingress: list[SwitchIngress], topology: FabricTopology, spine_class: dict[str, int]
) -> list[LinkFault]:
    """Each leaf fault on a port from a reporting spine that flagged nothing: its upstream origin where one explains it.

    The spine's own past first (:func:`upstream_origin`); where that says nothing (no rows before
    the onset: a loss from the first iteration), the same leaf's counts at the spine's symmetric
    spines (:func:`cross_spine_origin`, spines of the same class in ``spine_class``).
    """
    by_switch = {ing.switch: ing for ing in ingress}
    flagged = {f.switch for f in faults}
    spines = set(topology.spines)
    out = []
    for f in faults:
        sender = by_switch.get(f.peer)
        origin = None
        if f.peer in spines and sender is not None and f.peer not in flagged:
            origin = upstream_origin(f, sender)
            if origin is None:
                mates = [
                    by_switch[s] for s, c in spine_class.items() if c == spine_class[f.peer] and s != f.peer and s in by_switch
                ]
                origin = cross_spine_origin(f, sender, mates)
        out.append(origin if origin is not None and origin not in out else f)
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class TrafficChange:
    """Share alarms behind one spine at one moment, explained as traffic, not loss.

    Attributes:
        spine: the spine whose ports at the leaves fell.
        first_iteration: the iteration it began (the earliest onset among the alarms, or the
            first silent iteration of the down link).
        kind: ``"unmarked down link"`` (a link of the spine marked up carried nothing from
            ``first_iteration`` on, on every counter reported) or ``"traffic shift"`` (several
            leaves' ports from the spine fell at the same iteration, with no down link seen: a
            drained or down link neither of whose ends reports, or traffic moved off the spine).
        leaf: the down link's leaf (None for a traffic shift).
        explains: the leaves whose alarms on their port from ``spine`` it explains (may be empty).
    """

    spine: str
    first_iteration: int
    kind: Literal["unmarked down link", "traffic shift"]
    leaf: str | None = None
    explains: tuple[str, ...] = ()

    def to_json(self) -> dict:
        """All fields, ``explains`` as a list."""
        d = asdict(self)
        d["explains"] = list(self.explains)
        return d


@dataclass(frozen=True)
class ScanReport:
    """What a scan found: lossy links (``faults``) and traffic changes that explain other alarms (``explained``)."""

    faults: list[LinkFault]
    explained: list[TrafficChange]


def pair_faults(pairs: LinkPairs, config: ScanConfig = ScanConfig()) -> tuple[list[LinkFault], set[tuple[str, str]]]:
    """Judge every link direction with both ends reporting by its own two counters (:func:`detect.detect_link_pairs`).

    A column with a row in which the receiver counted more than the sender sent (counters that do
    not cover the same packets) is not judged here, and its receiving port is left to the share
    models.

    Returns:
        ``(faults, judged)``: a :class:`LinkFault` per lossy link direction (receiving switch and
        port, sending peer), and the (receiver, receiver port) of every column judged.
    """
    sent, received = np.asarray(pairs.sent), np.asarray(pairs.received)
    if sent.size == 0:
        return [], set()
    ok = np.flatnonzero(~(received > sent).any(axis=0))
    alarms = detect_link_pairs(
        sent[:, ok],
        received[:, ok],
        design_losses=config.design_losses,
        false_alarm_rate=config.false_alarm_rate,
        floor=config.pair_floor,
        threshold=config.threshold,
    )
    its = pairs.iterations
    faults = []
    for a in alarms:
        k = int(ok[a.port])
        faults.append(
            LinkFault(
                pairs.receivers[k],
                pairs.receiver_ports[k],
                pairs.senders[k],
                int(its[a.start]),
                int(its[a.alarm]),
                round(a.loss_estimate, 6),
            )
        )
    return faults, {(pairs.receivers[k], pairs.receiver_ports[k]) for k in map(int, ok)}


def fanout_faults(
    ingress: list[SwitchIngress],
    spine_class: dict[str, int],
    config: ScanConfig = ScanConfig(),
    skip: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset(),
) -> tuple[list[LinkFault], set[tuple[str, str]]]:
    """Judge spines' ports by their leaves' fan-out: leaf a's packets at the reporting spines of one class.

    Under per-packet spraying leaf a spreads each flow over the spines live to both ends, so the
    spines of one class (identical live columns, :func:`model.symmetric_spines`) receive equal
    shares of a's traffic whatever the traffic matrix (:func:`cross_spine_origin`). Given the G
    counts from a at those spines in one iteration, each is Binomial(their sum, 1/G): an exact
    reference from the same iteration, which needs neither a traffic model nor a healthy past.
    So each (leaf, class) is judged as one switch with G ports and equal shares
    (:func:`detect.detect_switch`, the jointly calibrated family and the same budget per port and
    iteration), and a loss on a -> s present from the first iteration is flagged there, as an
    exact analytic model would (a spine's own share model could only learn it). Only iterations
    every spine of the class reported are used; a class with fewer than 2 reporting spines, or a
    leaf with fewer than 2 live ports at them, is left to the spines' own share models.

    Args:
        ingress: per-switch ingress; the spines among them are judged.
        spine_class: spine -> class label (:func:`model.symmetric_spines` of :func:`live_links`).
        config: designs, budget, reference rows for the dispersion.
        skip: (spine, port) already judged (by both ends' counters).

    Returns:
        ``(faults, judged)``: a :class:`LinkFault` per flagged spine port (the leaf as peer), and
        every (spine, port) judged here.

    Examples:
        Three symmetric spines, 200,000 packets from each of two leaves at each an iteration;
        l1's link into s0 drops 2% from iteration 0:

        >>> def spine(name, l1):
        ...     x = np.tile([200_000, l1], (6, 1))
        ...     return SwitchIngress(name, np.arange(6), ("d0", "d1"), ("l0", "l1"), np.ones(2, bool), x)
        >>> faults, judged = fanout_faults([spine("s0", 196_000), spine("s1", 200_000), spine("s2", 200_000)], {"s0": 0, "s1": 0, "s2": 0})
        >>> [(f.switch, f.port, f.peer, f.first_iteration, f.detected_iteration) for f in faults], len(judged)
        ([('s0', 'd1', 'l1', 0, 0)], 6)
    """
    classes: dict[int, list[SwitchIngress]] = {}
    for ing in ingress:
        if ing.switch in spine_class:
            classes.setdefault(spine_class[ing.switch], []).append(ing)
    faults: list[LinkFault] = []
    judged: set[tuple[str, str]] = set()
    for members in classes.values():
        if len(members) < 2:
            continue
        common = members[0].iterations
        for m in members[1:]:
            common = np.intersect1d(common, m.iterations)
        if common.size < 2:
            continue
        rows = [np.searchsorted(m.iterations, common) for m in members]
        for leaf in sorted({p for m in members for p in m.peers}):
            cols = [
                (g, m.peers.index(leaf))
                for g, m in enumerate(members)
                if leaf in m.peers and m.up[m.peers.index(leaf)] and (m.switch, m.ports[m.peers.index(leaf)]) not in skip
            ]
            x = np.column_stack([np.asarray(members[g].packets)[rows[g], j] for g, j in cols]) if cols else np.zeros((0, 0))
            live = [c for c, total in zip(cols, x.sum(axis=0), strict=True) if total > 0]
            if len(live) < 2:
                continue
            x = x[:, x.sum(axis=0) > 0]
            window = x[: max(2, config.reference)]
            disp = learned_dispersion(window, learned_shares(window))
            for a in detect_switch(x, np.full(len(live), 1.0 / len(live)), **_test_settings(config), dispersion=disp):
                g, j = live[a.port]
                faults.append(
                    LinkFault(
                        members[g].switch,
                        members[g].ports[j],
                        leaf,
                        int(common[a.start]),
                        int(common[a.alarm]),
                        round(a.loss_estimate, 6),
                    )
                )
            judged.update((members[g].switch, members[g].ports[j]) for g, j in live)
    return sorted(faults, key=lambda f: (f.first_iteration, f.switch, f.port)), judged


def conservation_faults(
    balance: SpineBalance,
    ingress: list[SwitchIngress],
    spine_class: dict[str, int],
    config: ScanConfig = ScanConfig(),
    skip: set[str] | frozenset[str] = frozenset(),
    sigmas: float = ECHO_SIGMAS,
) -> list[LinkFault]:
    """Losses behind spines that do not report, from the leaves' own tx and rx (:func:`counters.spine_balance`).

    What the leaves sent into spine s and what they received out of it differ only by what s's
    links lost: the two-ended test (:func:`detect.detect_link_pairs`) applies to the spine as a
    whole, with the same floor and budget, and design losses divided by the spine's live links
    (a loss p on one link of L carrying its share is p / L of the spine's traffic). It dates the
    loss exactly and cannot be moved by traffic. The link is then named from the leaves: a
    spine-to-leaf loss on s -> b leaves leaf b's port from s short of b's ports from the spines of
    s's class (equal shares whatever the traffic, :func:`model.symmetric_spines`). Over rows
    [onset, t], t from the alarm on, leaf b's deficit D_b = c M_b - X_b (M_b the mean count from
    the classmates, c the median ratio X_b / M_b over the leaves, z_b = D_b / sqrt(c M_b G / (G - 1)))
    is compared with the spine's: the first t at which the largest z_b >= ``sigmas`` and D_b
    holds at least half the spine's deficit names (b, its port from s), detected at t. A
    leaf-to-spine loss spreads over every leaf that a's traffic reaches through s, so no single
    leaf holds it: the fault is then reported at the spine with port and peer ``"*"`` (a loss on
    a link into it, the leaf unknown; the spine's own counters would name it), its loss estimate
    relative to the spine's whole traffic. With ring traffic it falls on one leaf, the echo of the
    existing leaf-only path, hence ``peer_observed=False`` on every fault named here. Where the
    balance holds, no link of the spine loses packets, so the leaves' ports from a balanced spine
    are not asked of the share models at all (a traffic change moves shares, not the balance).

    Args:
        balance: the leaves' sums per spine.
        ingress: per-switch ingress (the leaves' rx per port).
        spine_class: spine -> class label (identical live columns).
        config: designs, budget, floor.
        skip: spines not to judge (their links are judged by both ends).
        sigmas: the naming cut (> 0).

    Returns:
        A :class:`LinkFault` per named spine-to-leaf loss.
    """
    if not balance.spines:
        return []
    cols = [k for k, sp in enumerate(balance.spines) if sp not in skip]
    leaves = {ing.switch: ing for ing in ingress}
    its = balance.iterations
    faults = []
    for k in cols:
        spine = balance.spines[k]
        designs = tuple(d / max(int(balance.links[k]), 1) for d in config.design_losses)
        if min(designs) <= config.pair_floor:
            continue
        into, out = balance.into[:, k : k + 1], balance.out[:, k : k + 1]
        if (out > into).any():
            continue  # the leaves' counters do not cover the same packets
        alarms = detect_link_pairs(
            into,
            out,
            design_losses=designs,
            false_alarm_rate=config.false_alarm_rate,
            floor=config.pair_floor,
            threshold=config.threshold,
        )
        mates = [sp for sp, c in spine_class.items() if c == spine_class.get(spine) and sp != spine]
        for a in alarms:
            named = _name_leaf(spine, mates, leaves, its, a.start, a.alarm, (into - out)[:, 0], sigmas)
            if named is None:  # a loss into the spine from a leaf its counters alone could name
                named = LinkFault(spine, "*", "*", int(its[a.start]), int(its[a.alarm]), round(a.loss_estimate, 6), False)
            faults.append(named)
    return faults


def _name_leaf(
    spine: str,
    mates: list[str],
    leaves: dict[str, SwitchIngress],
    its: np.ndarray,
    start: int,
    alarm: int,
    deficit: np.ndarray,
    sigmas: float,
) -> LinkFault | None:
    """The leaf whose port from ``spine`` holds the spine's deficit (see :func:`conservation_faults`), or None."""
    if not mates:
        return None
    rows_of = {name: np.searchsorted(ing.iterations, its) for name, ing in leaves.items()}
    cand = []
    for name, ing in leaves.items():
        if spine not in ing.peers or not np.isin(its, ing.iterations).all():
            continue
        cols = [ing.peers.index(m) for m in mates if m in ing.peers]
        if not cols:
            continue
        x = np.asarray(ing.packets, dtype=float)[rows_of[name]]
        cand.append(
            (name, ing.ports[ing.peers.index(spine)], x[:, ing.peers.index(spine)], x[:, cols].mean(axis=1), len(cols) + 1)
        )
    if len(cand) < 2:
        return None
    for t in range(alarm, len(its)):
        own = np.array([c[2][start : t + 1].sum() for c in cand])
        mean = np.array([c[3][start : t + 1].sum() for c in cand])
        g = np.array([c[4] for c in cand], dtype=float)
        ratio = np.divide(own, mean, out=np.zeros_like(own), where=mean > 0)
        scale = float(np.median(ratio))
        d = scale * mean - own
        z = d / np.sqrt(np.maximum(scale * mean * g / (g - 1), 1e-9))
        b = int(np.argmax(z))
        lost = float(deficit[start : t + 1].sum())
        if z[b] >= sigmas and d[b] >= 0.5 * lost:
            after = float(deficit[start:].sum())
            loss = after / (after + float(cand[b][2][start:].sum()))
            return LinkFault(cand[b][0], cand[b][1], spine, int(its[start]), int(its[t]), round(loss, 6), peer_observed=False)
    return None


def silent_links(
    topology: FabricTopology, ingress: list[SwitchIngress], pairs: LinkPairs | None = None, rows: int = SILENT_ROWS
) -> list[TrafficChange]:
    """Leaf-spine links marked up that carried nothing, on every counter of them reported, from some iteration to the end.

    A link's counters are the rx of its two ports (``ingress``) and the tx of its two ports
    (``pairs``' sent columns); the link is down from t when all of them are 0 from t to their
    last iteration, for at least ``rows`` iterations or the whole run. A drained or down link
    moves traffic: every leaf that received through it from that spine gets less from it, which
    is what the leaves' share models see; these are the explanations :func:`explain_traffic`
    matches those alarms with.

    Returns:
        One ``TrafficChange(kind="unmarked down link")`` per such link, by spine and leaf.
    """
    leaves, spines = set(topology.leaves), set(topology.spines)
    series: dict[tuple[str, str], list[tuple[np.ndarray, np.ndarray]]] = {}

    def add(a: str, b: str, its: np.ndarray, packets: np.ndarray) -> None:
        key = (a, b) if a in leaves else (b, a)
        if key[0] in leaves and key[1] in spines and topology.is_up(*_port_of(topology, key)):
            series.setdefault(key, []).append((np.asarray(its), np.asarray(packets)))

    for ing in ingress:
        for j, peer in enumerate(ing.peers):
            add(ing.switch, peer, ing.iterations, ing.packets[:, j])
    if pairs is not None:
        for k, (s, r) in enumerate(zip(pairs.senders, pairs.receivers, strict=True)):
            add(s, r, pairs.iterations, pairs.sent[:, k])
    out = []
    for (leaf, spine), parts in sorted(series.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        last_busy = max((int(its[np.flatnonzero(x > 0)[-1]]) if (x > 0).any() else -1) for its, x in parts)
        end = max(int(its[-1]) for its, _ in parts if its.size)
        first = min(int(its[0]) for its, _ in parts if its.size)
        quiet = [its[its > last_busy] for its, _ in parts]
        silent_rows = min(q.size for q in quiet)
        if last_busy < end and (silent_rows >= rows or last_busy < first):
            out.append(TrafficChange(spine, max(first, last_busy + 1), "unmarked down link", leaf))
    return out


def _port_of(topology: FabricTopology, key: tuple[str, str]) -> tuple[str, str]:
    """(leaf, its port to the spine) of a leaf-spine pair."""
    leaf, spine = key
    for port, peer, _ in topology.fabric_ports(leaf):
        if peer == spine:
            return leaf, port
    return leaf, ""


def explain_traffic(
    faults: list[LinkFault], downs: list[TrafficChange], spines: set[str], slack: int = EXPLAIN_SLACK
) -> tuple[list[LinkFault], list[TrafficChange]]:
    """Take out of ``faults`` (share-model alarms) those that one spine's traffic explains.

    A loss is one link's; a down or drained link, or traffic moving off a spine, lowers the port
    from that spine at *every* leaf that received through it, at the same iteration. So alarms of
    leaves on ports from spine s with onsets within ``slack`` iterations of each other are one
    traffic change, not several losses, when (a) a link of s went silent (``downs``,
    :func:`silent_links`) within ``slack`` of them (this also takes the down link's own port), or
    (b) two or more leaves alarm so. Where both ends of a link report, its loss is judged by its
    own counters (:func:`pair_faults`), which a traffic change cannot move, so only links with one
    reporting end reach here. The price: two independent losses starting at the same iteration on
    links from the same spine, each seen only from one end, are reported as one traffic shift.

    Returns:
        ``(faults left, explanations)``: each down link once (with the leaves it explains), and a
        ``"traffic shift"`` per group of (b).
    """
    share = [f for f in faults if f.peer in spines]
    keep = [f for f in faults if f.peer not in spines]
    explained: list[TrafficChange] = []
    used: set[int] = set()
    for d in downs:
        hit = [i for i, f in enumerate(share) if f.peer == d.spine and abs(f.first_iteration - d.first_iteration) <= slack]
        used.update(hit)
        explained.append(replace(d, explains=tuple(sorted({share[i].switch for i in hit}))))
    rest = [(i, f) for i, f in enumerate(share) if i not in used]
    for spine in sorted({f.peer for _, f in rest}):
        group = sorted(((i, f) for i, f in rest if f.peer == spine), key=lambda t: t[1].first_iteration)
        while group:
            lead = group[0][1].first_iteration
            near = [(i, f) for i, f in group if f.first_iteration - lead <= slack]
            if len({f.switch for _, f in near}) >= 2:
                used.update(i for i, _ in near)
                explained.append(TrafficChange(spine, lead, "traffic shift", None, tuple(sorted({f.switch for _, f in near}))))
                group = [g for g in group if g not in near]
            else:
                group = group[1:]
    keep += [f for i, f in enumerate(share) if i not in used]
    return keep, sorted(explained, key=lambda e: (e.first_iteration, e.spine, e.leaf or ""))


def judge_fabric(
    ingress: list[SwitchIngress],
    topology: FabricTopology,
    config: ScanConfig = ScanConfig(),
    pairs: LinkPairs | None = None,
    balance: SpineBalance | None = None,
) -> ScanReport:
    """Judge a fabric: links with two reporting ends by their own counters, the rest by share models.

    1. Every link direction whose sender's tx and receiver's rx are both present is judged by
       :func:`pair_faults` (a loss is what was sent and not received; no traffic model).
    2. With the default model (learned, cross-checked), every spine port whose leaf reaches at
       least two reporting spines of the spine's class is judged by that leaf's fan-out
       (:func:`fanout_faults`: equal shares at symmetric spines, exact whatever the traffic, so a
       loss is seen from the first iteration without a learned reference).
    3. Every reporting switch judges its remaining ingress ports by its share model (analytic
       where it fits every port, else learned; :func:`_judge`), echoes traced and dropped as before.
    4. Share alarms that one spine's traffic explains (:func:`silent_links`,
       :func:`explain_traffic`) are reported once as a :class:`TrafficChange`, not as losses.

    Args:
        ingress: per-switch ingress (:func:`counters.ingress_packets`).
        topology: the fabric.
        config: detector settings (``config.pairs=False`` skips step 1).
        pairs: both ends' counters (:func:`counters.link_pairs`); None: none.
        balance: the leaves' tx into and rx out of each spine (:func:`counters.spine_balance`),
            judged for spines without two-ended links (:func:`conservation_faults`); None: none.

    Returns:
        :class:`ScanReport`, faults sorted by first iteration, switch and port.
    """
    analytic = {t: _analytic_shares(topology, t) for t in ("uniform", "ring")}
    spine_class = dict(zip(topology.spines, map(int, symmetric_spines(live_links(topology, ingress))), strict=True))
    two_ended, judged = pair_faults(pairs, config) if pairs is not None and config.pairs else ([], set())
    share: list[LinkFault] = []
    two_ended_switches = {r for r, _ in judged} | {s for s, _ in judged}
    balanced: set[str] = set()  # spines whose every link the leaves' balance judges (conservation_faults)
    if balance is not None and config.pairs:
        balanced = {sp for sp in balance.spines if sp not in two_ended_switches}
    fanned: set[tuple[str, str]] = set()
    if config.model == "learned" and config.cross_check:  # spines' ports by their leaves' fan-out: exact from iteration 0
        share, fanned = fanout_faults(ingress, spine_class, config, skip=judged)
    for ing in ingress:
        exclude = np.array(
            [
                (ing.switch, p) in judged or (ing.switch, p) in fanned or q in balanced
                for p, q in zip(ing.ports, ing.peers, strict=True)
            ],
            dtype=bool,
        )
        share += _judge(ing, config, analytic, _leaf_classes(ing, spine_class), exclude)
    if config.pool:  # pooled leaves can be quicker than their spines: trace their alarms upstream
        share = _trace_echoes(share, ingress, topology, spine_class)
    if balanced and balance is not None:  # spines that do not report: the leaves' sums into and out of them
        share += conservation_faults(balance, ingress, spine_class, config, skip=two_ended_switches)
    share, explained = explain_traffic(share, silent_links(topology, ingress, pairs), set(topology.spines))
    reporting = {ing.switch for ing in ingress}
    faults = [
        f if f.peer in reporting else replace(f, peer_observed=False)
        for f in drop_echoes(two_ended + share, reporting, config.echo_slack)
    ]
    return ScanReport(sorted(faults, key=lambda f: (f.first_iteration, f.switch, f.port)), explained)


def scan_ingress(
    ingress: list[SwitchIngress],
    topology: FabricTopology,
    config: ScanConfig = ScanConfig(),
    pairs: LinkPairs | None = None,
) -> list[LinkFault]:
    """The lossy links of :func:`judge_fabric` (without the traffic explanations).

    Args:
        ingress: per-switch ingress matrices (:func:`counters.ingress_packets`).
        topology: the fabric they come from.
        config: detector settings.
        pairs: both ends' counters of the links (:func:`counters.link_pairs`); None: share models only.

    Returns:
        Lossy links, sorted by first iteration, switch and port.

    Notes:
        O(T * P) per switch for the CUSUM.
    """
    return judge_fabric(ingress, topology, config, pairs).faults


def scan_report(frame: pd.DataFrame, topology: FabricTopology, config: ScanConfig = ScanConfig()) -> ScanReport:
    """Lossy links and traffic explanations in validated counters (:func:`counters.validate_counters`).

    Raises:
        ValueError: counters naming a switch, port or peer the topology does not have.

    Notes:
        O(rows) to check and pivot, then :func:`judge_fabric`.
    """
    check_topology(frame, topology)
    pairs = link_pairs(frame, topology) if config.pairs else None
    balance = spine_balance(frame, topology) if config.pairs else None
    return judge_fabric(ingress_packets(frame, topology), topology, config, pairs, balance)


def scan(frame: pd.DataFrame, topology: FabricTopology, config: ScanConfig = ScanConfig()) -> list[LinkFault]:
    """Find the lossy links in validated counters (:func:`counters.validate_counters`).

    Args:
        frame: counters in the file contract.
        topology: the fabric the counters come from.
        config: detector settings.

    Returns:
        Lossy links, sorted by first iteration, switch and port (:func:`scan_report` also gives
        the traffic changes that explain other alarms).

    Raises:
        ValueError: counters naming a switch, port or peer the topology does not have.

    Notes:
        O(rows) to check and pivot, then :func:`judge_fabric`.
    """
    return scan_report(frame, topology, config).faults
