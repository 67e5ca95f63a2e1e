"""Expected per-port shares of a switch's ingress traffic under packet spraying (temporal symmetry).

During a collective in a packet-spraying fabric, every packet between two leaves picks a spine
uniformly among those with a live link to both. So, iteration after iteration, each of a
switch's fabric ports receives a predictable *share* of what the switch receives from the
fabric: a leaf gets equal shares from its live spines, a spine gets from each leaf in
proportion to that leaf's cross-leaf traffic. A down link carries nothing and shifts the
shares to the others; that is expected, not a fault. A lossy link on port j lowers port j's
share from pi to pi(1-p)/(1-pi p), because the lost packets are re-sent and re-sprayed over
all ports. Shares come either from the analytic model (:func:`spray_shares`) or are learned
from the switch's own reference iterations (:func:`learned_shares`).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "growing_reference",
    "leaf_ring",
    "learned_dispersion",
    "learned_shares",
    "loss_from_shares",
    "share_under_loss",
    "spray_shares",
    "symmetric_spines",
]


def spray_shares(live: np.ndarray, traffic: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Analytic ingress shares of every leaf and spine of a sprayed two-level fat tree.

    Args:
        live: (L, S) bool, True where the leaf-spine link is up.
        traffic: (L, L) packets (any unit) from leaf a to leaf b per iteration; uniform
            all-to-all between distinct leaves when omitted.

    Returns:
        ``(leaf_in, spine_in)``: ``leaf_in[b, s]`` is leaf b's expected share of its fabric
        ingress that arrives from spine s, an (L, S) array whose rows sum to 1 (0 where
        nothing arrives); ``spine_in[s, a]`` spine s's share from leaf a, (S, L).

    Examples:
        >>> live = np.array([[True, True, True], [True, True, False]])
        >>> leaf_in, spine_in = spray_shares(live)
        >>> leaf_in.tolist()            # traffic between the leaves avoids spine 2
        [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]
        >>> spine_in[2].tolist()        # spine 2 carries no leaf-to-leaf traffic
        [0.0, 0.0]

    Notes:
        O(L^2 S) time and memory.
    """
    live = np.asarray(live, dtype=bool)
    n_leaves = live.shape[0]
    if traffic is None:
        traffic = np.ones((n_leaves, n_leaves)) - np.eye(n_leaves)
    traffic = np.asarray(traffic, dtype=float)
    if traffic.shape != (n_leaves, n_leaves) or (traffic < 0).any():
        raise ValueError(f"traffic must be a non-negative ({n_leaves}, {n_leaves}) matrix")
    paths = live[:, None, :] & live[None, :, :]  # (a, b, s): s reaches both a and b
    n_paths = paths.sum(axis=2, keepdims=True)
    flow = np.where(n_paths > 0, traffic[:, :, None] * paths / np.maximum(n_paths, 1), 0.0)
    return _normalize(flow.sum(axis=0)), _normalize(flow.sum(axis=1).T)


def symmetric_spines(live: np.ndarray) -> np.ndarray:
    """Classes of spines with identical live columns: every leaf gets equal shares from them, whatever the traffic.

    Under spraying a packet from leaf a to leaf b picks a spine uniformly among the n(a, b)
    spines live to both, so leaf b's ingress from spine s is sum_a T[a, b] live[a, s] live[b, s]
    / n(a, b) (:func:`spray_shares`). Two spines whose columns of ``live`` are equal enter every
    term alike, so leaf b's expected shares from them are equal for any traffic matrix T: the
    temporal symmetry FlowPulse (HotNets '25) builds on, here
    without a traffic model. A leaf's learned references of such ports can be pooled
    (:func:`faultsense_pipelines.flowpulse.detect.pooled_shares`). Spines have no such classes of
    ports: a spine's share from leaf a follows leaf a's traffic, which the topology does not give;
    but leaf a's packets at the spines of one class are equal for the same reason, a reference
    across spines (:func:`faultsense_pipelines.flowpulse.scan.fanout_faults`).

    Args:
        live: (L, S) bool, True where the leaf-spine link is up (and carries traffic).

    Returns:
        (S,) int64 class labels 0, 1, ..., numbered by each class's first spine.

    Examples:
        Spine 2 misses leaf 1, so it is in a class of its own; spines 0, 1 and 3 reach both leaves:

        >>> symmetric_spines(np.array([[True, True, True, True], [True, True, False, True]])).tolist()
        [0, 0, 1, 0]

    Notes:
        O(L S log S) time.
    """
    live = np.asarray(live, dtype=bool)
    if live.ndim != 2:
        raise ValueError(f"live must be (L, S), got {live.shape}")
    _, first, labels = np.unique(live.T, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))  # renumber the classes by their first spine
    return order[labels.ravel()].astype(np.int64)


def _normalize(volume: np.ndarray) -> np.ndarray:
    total = volume.sum(axis=-1, keepdims=True)
    return np.divide(volume, total, out=np.zeros_like(volume), where=total > 0)


def leaf_ring(leaves: int) -> np.ndarray:
    """Leaf-to-leaf traffic of ring all-reduce over leaves in order: leaf a sends to leaf a+1.

    Examples:
        >>> leaf_ring(3).tolist()
        [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    if leaves < 1:
        raise ValueError(f"leaves must be >= 1, got {leaves}")
    ring = np.zeros((leaves, leaves))
    if leaves > 1:
        ring[np.arange(leaves), (np.arange(leaves) + 1) % leaves] = 1.0
    return ring


def learned_shares(packets: np.ndarray) -> np.ndarray:
    """Shares learned from reference iterations: each port's pooled fraction of the switch's ingress.

    Args:
        packets: (W, P) packets received per reference iteration and port.

    Returns:
        (P,) shares summing to 1 (all zero if nothing arrived). Pooling is the maximum
        likelihood estimate under multinomial spraying.

    Examples:
        >>> learned_shares(np.array([[30, 10], [50, 10]])).tolist()
        [0.8, 0.2]
    """
    return _normalize(np.asarray(packets, dtype=float).sum(axis=0))


def share_under_loss(share: float | np.ndarray, loss: float | np.ndarray) -> float | np.ndarray:
    """Share of a port whose link drops ``loss`` of its packets (losses re-sprayed over all ports).

    Examples:
        >>> round(share_under_loss(0.25, 0.04), 6)    # 0.25 * 0.96 / 0.99
        0.242424
    """
    return share * (1 - loss) / (1 - share * loss)


def loss_from_shares(expected: float | np.ndarray, observed: float | np.ndarray) -> float | np.ndarray:
    """Invert :func:`share_under_loss`: the loss rate that turns ``expected`` into ``observed``.

    Clipped to [0, 1]; a port with a higher share than expected has loss 0.

    Examples:
        >>> round(float(loss_from_shares(0.25, share_under_loss(0.25, 0.04))), 6)
        0.04
    """
    expected = np.asarray(expected, dtype=float)
    observed = np.asarray(observed, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (expected - observed) / (expected * (1 - observed))
    return np.clip(np.nan_to_num(p, nan=0.0), 0.0, 1.0)


def learned_dispersion(packets: np.ndarray, shares: np.ndarray) -> float:
    """Variance of the reference counts over the binomial variance: 1 unless clearly larger.

    With shares pooled from the same W iterations, E[(x - N pi)^2] = (W-1)/W * N pi (1-pi)
    under spraying, so each port's mean squared standardized residual over the W rows, scaled by
    W/(W-1), estimates the dispersion. The estimate is the median of that over the ports, so one
    lossy port in the reference (its residuals swing by half its shift around the pooled share)
    does not make the counters look noisy: a 1% loss from the middle of 20 reference iterations of
    123k packets used to give 1.57 and cost the test a third of its power. Real counters noisier
    than per-packet spraying get a factor > 1, which widens the CUSUM's variance. Binomial
    counters give an estimate that scatters around 1 by about 1.25 sqrt(2/(W P)) (the median of P
    means of W chi-square(1) terms); taking it whenever it exceeded 1 would cost power on half the
    switches for nothing, so it is used only where it exceeds 1 by more than 4 such standard errors.

    Args:
        packets: (W, P) reference packets, W >= 2.
        shares: (P,) shares learned from them.

    Returns:
        The estimated dispersion if above 1 + 4 * 1.25 sqrt(2/(W P)), else 1.

    Examples:
        >>> x = np.array([[100, 100], [110, 90], [90, 110], [100, 100]])   # binomial-like
        >>> learned_dispersion(x, learned_shares(x))
        1.0
        >>> x = np.array([[100, 100], [150, 50], [50, 150], [100, 100]])   # 25x the variance
        >>> round(learned_dispersion(x, learned_shares(x)), 2)
        33.33
    """
    x = np.asarray(packets, dtype=float)
    if x.shape[0] < 2:
        return 1.0
    n = x.sum(axis=1, keepdims=True)
    var = n * shares * (1 - shares)
    z2 = np.divide((x - n * shares) ** 2, var, out=np.zeros_like(x), where=var > 0)
    judged = (var > 0).all(axis=0)
    if not judged.any():
        return 1.0
    w, k = x.shape[0], int(judged.sum())
    estimate = float(np.median(z2[:, judged].mean(axis=0))) * w / (w - 1)
    return estimate if estimate > 1.0 + 4.0 * 1.2533 * np.sqrt(2.0 / (w * k)) else 1.0


def growing_reference(packets: np.ndarray, reference: int, lag: int) -> tuple[np.ndarray, np.ndarray]:
    """Shares for each iteration learned from the switch's earlier iterations.

    Iteration t is compared with shares pooled over iterations ``[0, max(reference, t - lag))``:
    the first ``reference`` iterations at first, then everything older than ``lag`` iterations,
    so the estimate sharpens as the job runs while a new deviation is judged for ``lag``
    iterations before it can enter the reference.

    Args:
        packets: (T, P) packets per iteration and port, T > ``reference``.
        reference: iterations in the initial reference (>= 1).
        lag: iterations kept out of the reference behind the one judged (>= 0).

    Returns:
        ``(shares, reference_packets)`` for iterations ``reference..T-1``: (T - reference, P)
        shares and (T - reference,) packets each row was learned from.

    Examples:
        >>> x = np.array([[1, 3], [3, 1], [2, 2], [4, 0], [0, 4]])
        >>> s, n = growing_reference(x, reference=2, lag=1)
        >>> s.tolist(), n.tolist()
        ([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]], [8.0, 8.0, 12.0])
    """
    x = np.asarray(packets, dtype=float)
    if not 1 <= reference < x.shape[0]:
        raise ValueError(f"reference must be in [1, {x.shape[0] - 1}] iterations, got {reference}")
    if lag < 0:
        raise ValueError(f"lag must be >= 0, got {lag}")
    pooled = np.cumsum(x, axis=0)  # pooled[k] = sum of rows 0..k
    t = np.arange(reference, x.shape[0])
    rows = pooled[np.maximum(reference, t - lag) - 1]
    return _normalize(rows), rows.sum(axis=1)
