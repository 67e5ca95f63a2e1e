"""Local judgement of one switch: a CUSUM test for a port whose ingress share stays too low.

Given the packets a switch received on each fabric port per iteration and the expected share
of each port (:mod:`faultsense_pipelines.flowpulse.model`), port j's count in an iteration
that brought N packets is, under spraying, binomial with mean N*pi_j. A link dropping p of its
packets lowers the mean to N*pi_j(1-p)/(1-pi_j p). For every port the detector accumulates
the Gaussian log-likelihood ratio of "loss = design_loss" against "no loss" in a one-sided
CUSUM (Page 1954); a port is flagged when the statistic reaches ``threshold``. The iteration
after the statistic last stood at zero estimates where the deviation began, and the pooled
share from there on gives the loss-rate estimate. Only the switch's own counters are used.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from faultsense_pipelines.flowpulse.model import loss_from_shares, share_under_loss

__all__ = ["PortAlarm", "cusum_statistic", "first_alarms", "detect_switch"]


@dataclass(frozen=True)
class PortAlarm:
    """A port whose share deficit persisted.

    Attributes:
        port: column index of the port in the packets matrix.
        start: row where the deviation began (CUSUM change-point estimate).
        alarm: row where the statistic reached the threshold.
        loss_estimate: estimated fraction of the link's packets lost, rows ``start..`` pooled.
        statistic: the CUSUM statistic at ``alarm`` (log-likelihood ratio).
    """

    port: int
    start: int
    alarm: int
    loss_estimate: float
    statistic: float


def cusum_statistic(
    packets: np.ndarray,
    shares: np.ndarray,
    design_loss: float,
    *,
    reference_packets: np.ndarray | float = np.inf,
    bias_sigmas: float = 4.5,
    dispersion: np.ndarray | float = 1.0,
) -> np.ndarray:
    """One-sided CUSUM of the log-likelihood ratio "port loses design_loss" vs "no loss".

    With z = (N pi - x) / sigma the standardized deficit and d = (N pi - N pi') / sigma the
    deficit a ``design_loss`` would cause, each iteration adds d (z - d/2 - a). The allowance
    a = bias_sigmas * sqrt(N / reference_packets) covers the error of shares learned from
    ``reference_packets`` packets: that error is the same in every iteration, so it would
    otherwise add up (a is 0 for analytic shares).

    Args:
        packets: (T, ..., P) packets received per iteration (axis 0) and port (last axis);
            the middle axes (e.g. switches) are independent.
        shares: (..., P) or (T, ..., P) expected share per port; ports with share 0 or 1 are
            not judged.
        design_loss: loss rate the test is tuned to (0 < design_loss < 1).
        reference_packets: packets the shares were learned from, broadcastable to (T, ...);
            inf (the default) for analytic shares.
        bias_sigmas: how many standard errors of the learned shares the allowance covers.
        dispersion: variance multiplier over the binomial variance (>= 1), broadcastable to (...).

    Returns:
        (T, ..., P) statistic S_t = max(0, S_{t-1} + llr_t), S_{-1} = 0.

    Raises:
        ValueError: if ``design_loss`` is not in (0, 1).

    Examples:
        Two equal ports, 10,000 packets an iteration, tuned to a 2% loss: mu0 = 5000,
        mu1 = 10000 * 0.49 / 0.99 = 4949.5, variance 2500; a count of 4950 adds
        (5000 - 4949.5) * (4974.7 - 4950) / 2500 = 0.5, a count of 5050 pulls toward 0:

        >>> x = np.array([[5000, 5000], [5050, 4950], [5050, 4950]])
        >>> cusum_statistic(x, np.array([0.5, 0.5]), 0.02).round(2).tolist()
        [[0.0, 0.0], [0.0, 0.5], [0.0, 1.0]]

    Notes:
        O(T * P) time, vectorized (CUSUM as cumulative sum minus its running minimum).

    References:
        E. S. Page, "Continuous inspection schemes", Biometrika 41, 1954.
        J. Krebs et al., "FlowPulse: Catching Network Failures in ML Clusters", HotNets '25.
    """
    if not 0.0 < design_loss < 1.0:
        raise ValueError(f"design_loss must be in (0, 1), got {design_loss}")
    x = np.asarray(packets, dtype=float)
    pi = np.asarray(shares, dtype=float)
    n = x.sum(axis=-1, keepdims=True)  # (T, ..., 1) packets into the switch
    mu0 = n * pi
    mu1 = n * share_under_loss(pi, design_loss)
    sigma = np.sqrt(np.asarray(dispersion, dtype=float)[..., None] * mu0 * (1 - pi))
    judged = (pi > 0) & (pi < 1) & (n > 0) & (sigma > 0)
    d = np.divide(mu0 - mu1, sigma, out=np.zeros_like(x), where=judged)
    z = np.divide(mu0 - x, sigma, out=np.zeros_like(x), where=judged)
    allowance = bias_sigmas * np.sqrt(n / np.asarray(reference_packets, dtype=float)[..., None])
    llr = np.where(judged, d * (z - d / 2 - allowance), 0.0)
    c = np.cumsum(llr, axis=0)
    return c - np.minimum.accumulate(np.minimum(c, 0.0), axis=0)


def first_alarms(statistic: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Where each port's statistic first reaches ``threshold``, and where that run began.

    Args:
        statistic: (T, ..., P) from :func:`cusum_statistic`.
        threshold: alarm level (> 0), in log-likelihood-ratio units.

    Returns:
        ``(alarm, start)``, each (..., P) int64: first row with statistic >= threshold (-1 if
        none), and the row after the statistic last stood at 0 before it (-1 if no alarm).

    Examples:
        >>> s = np.array([[0.0], [1.0], [0.0], [2.0], [5.0]])
        >>> [a.tolist() for a in first_alarms(s, 4.0)]
        [[4], [3]]
    """
    if threshold <= 0:
        raise ValueError(f"threshold must be > 0, got {threshold}")
    hit = statistic >= threshold
    alarm = np.where(hit.any(axis=0), hit.argmax(axis=0), -1)
    rows = np.arange(statistic.shape[0]).reshape((-1,) + (1,) * (statistic.ndim - 1))
    at_zero = (statistic <= 0) & (rows < alarm)
    last_zero = np.where(at_zero, rows, -1).max(axis=0)
    return alarm, np.where(alarm >= 0, last_zero + 1, -1)


def detect_switch(
    packets: np.ndarray,
    shares: np.ndarray,
    *,
    design_loss: float = 0.005,
    threshold: float = 24.0,
    reference_packets: np.ndarray | float = np.inf,
    dispersion: float = 1.0,
) -> list[PortAlarm]:
    """Judge one switch from its own ingress counters: the ports whose share deficit persisted.

    Args:
        packets: (T, P) packets received per iteration and fabric port.
        shares: (P,) or (T, P) expected shares (analytic or learned); 0 for a down link.
        design_loss: loss rate the CUSUM is tuned to.
        threshold: CUSUM alarm level (log-likelihood ratio).
        reference_packets: packets the shares were learned from, scalar or (T,) (inf if analytic).
        dispersion: variance multiplier (>= 1).

    Returns:
        One :class:`PortAlarm` per flagged port, by port index.

    Examples:
        >>> x = np.tile([[5000, 5000]], (40, 1)); x[10:] = [5050, 4950]
        >>> [(a.port, a.start, a.alarm, round(a.loss_estimate, 3)) for a in
        ...  detect_switch(x, np.array([0.5, 0.5]), design_loss=0.02, threshold=4.4)]
        [(1, 10, 18, 0.02)]
    """
    packets = np.asarray(packets)
    shares = np.asarray(shares, dtype=float)
    if packets.ndim != 2 or shares.shape not in (packets.shape, packets.shape[1:]):
        raise ValueError(f"packets must be (T, P) and shares (P,) or (T, P), got {packets.shape} and {shares.shape}")
    expected = shares if shares.ndim == 2 else np.broadcast_to(shares, packets.shape)
    stat = cusum_statistic(packets, shares, design_loss, reference_packets=reference_packets, dispersion=dispersion)
    alarm, start = first_alarms(stat, threshold)
    out = []
    for j in np.flatnonzero(alarm >= 0):
        tail = packets[start[j]:]
        observed = tail[:, j].sum() / max(tail.sum(), 1)
        share = expected[start[j], j]
        out.append(PortAlarm(int(j), int(start[j]), int(alarm[j]),
                             float(loss_from_shares(share, observed)), float(stat[alarm[j], j])))
    return out
