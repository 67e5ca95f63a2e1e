"""Local judgement of one switch: CUSUM tests for a port whose ingress share stays too low.

Given the packets a switch received on each fabric port per iteration and the expected share
of each port (:mod:`faultsense_pipelines.flowpulse.model`), port j's count in an iteration that
brought N packets is, under spraying, binomial with mean N*pi_j (given N, the multinomial over
ports reduces to this binomial, because a loss on port j scales the other shares alike). A link
dropping p of its packets lowers the share to pi_j(1-p)/(1-pi_j p), a shift of about
p*sqrt(N pi_j) standard deviations per iteration.

For every port and each of a few *design losses* (default 0.25%, 0.5%, 1%, 2%) the detector runs a
one-sided CUSUM (Page 1954) of the exact binomial log-likelihood ratio "loss = design loss" vs
"no loss". A port is flagged when any of its CUSUMs reaches its threshold. The threshold comes
from a false-alarm budget, not by hand: with per-iteration shift delta (in standard deviations)
the CUSUM's mean time to a false alarm is ARL0 ~ exp(h) / (delta^2/2 * nu(delta)^2) (Siegmund
1985, with nu the overshoot correction), and each of the m CUSUMs of a port gets ARL0 = m /
false_alarm_rate. Against an exact reference (analytic shares) the four default designs are one
jointly calibrated family: they judge the same standardized deficit, so m is their effective
number of tests (:func:`family_tests`, computed by bench/bench_flowpulse_family.py), at which the rate
of "any of them alarms" meets the budget; elsewhere m = 4 (Bonferroni). Shares learned from a reference of M packets (the switch gets N an
iteration) carry an error b ~ N(0, N/M) standard deviations that is the same in every iteration
of an excursion; averaged over b it multiplies the false-alarm rate by exp(a h), a = 2 h (N/M) /
delta^2 (:func:`reference_load`). The log-likelihood ratio is divided by c(a) = (1 - sqrt(1 -
4a)) / (2a), which restores the budget (:func:`reference_inflation`), and a CUSUM runs only once
a <= 1/4, where such a c exists: k >= 8 h / delta^2 reference rows, 4 at 7.2 standard deviations an
iteration, 16 at 3.6, 61 at 1.8, 241 at 0.9. A leaf's ports from spines with identical live
columns have equal shares whatever the traffic, so their learned references can be pooled
(:func:`pooled_shares`): |G| ports pooled count as |G| times the packets, and the 241 rows at
0.9 become 4 in a class of 62. Expected counts are scaled by the median, over the
switch's ports, of observed over expected (:func:`common_scale`), so that one sender's surplus,
which lowers every other port alike, is not taken for losses. The onset is the likelihood-ratio
change point (:func:`change_point`), and the pooled counts from there on give the loss estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DESIGN_LOSSES",
    "FALSE_ALARM_RATE",
    "FAMILY_BASES",
    "FAMILY_TESTS",
    "PAIR_FLOOR",
    "PortAlarm",
    "binomial_llr",
    "change_point",
    "common_scale",
    "cusum_statistic",
    "cusum_threshold",
    "detect_link_pairs",
    "detect_switch",
    "detect_switch_learned",
    "excursion_starts",
    "family_tests",
    "first_alarms",
    "is_calibrated_family",
    "overshoot_nu",
    "pooled_shares",
    "reference_inflation",
    "reference_load",
]

DESIGN_LOSSES = (0.0025, 0.005, 0.01, 0.02)
FALSE_ALARM_RATE = 1e-10  # expected false alarms per judged port and iteration
MIN_SHIFT = 0.5  # a CUSUM whose per-iteration shift is below this (sigmas) is not run: > ~100 iterations
SCALE_WINDOW = 8  # iterations pooled for the common scale of a switch's expected counts
PAIR_FLOOR = 1e-5  # loss rate a link may have and still be healthy, for the two-ended test (detect_link_pairs)
REFERENCE_A_MAX = 0.25  # largest reference load a (reference_load) at which a CUSUM can keep its budget
FAMILY_RATIOS = (1.0, 2.0, 4.0, 8.0)  # design losses over the smallest: the jointly calibrated family
#: Base shifts (the smallest design's shift, standard deviations an iteration) of :data:`FAMILY_TESTS`: 2^(i/4), i = -16..20.
FAMILY_BASES = tuple(2.0 ** (i / 4) for i in range(-16, 21))
#: Effective number of tests of the four designs d, 2d, 4d, 8d at base shift d (:data:`FAMILY_BASES`) and the
#: default budget: thresholds h_k = cusum_threshold(d_k, FALSE_ALARM_RATE, m) with this m keep the rate of "any
#: of the port's CUSUMs alarms" within the budget, where Bonferroni takes m = 4 (designs below MIN_SHIFT are not
#: run and not counted). From bench/bench_flowpulse_family.py (its table: bench/results/flowpulse_family.md):
#: importance sampling of the four correlated Gaussian CUSUMs under H0, regenerative (cycles between the rows
#: where all four statistics are 0), 200,000 paths from the defensive mixture of the designs' alternatives per
#: base, seeds 1000 + i; each entry is the m at which the union rate's upper 97.5% confidence bound meets the
#: budget, rounded up to 0.01 and capped at the designs run. Checked by an independent smaller computation in
#: tests/flowpulse/test_flowpulse_family.py.
# fmt: off
FAMILY_TESTS = (
    1.00, 1.00, 1.00, 1.00, 2.00, 2.00, 2.00, 2.00, 2.97, 3.00, 3.00, 2.99,
    3.60, 3.65, 4.00, 4.00, 3.81, 3.58, 2.84, 3.44, 2.89, 2.04, 2.01, 2.34,
    1.67, 1.00, 1.09, 1.38, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00,
    1.00,
)
# fmt: on


@dataclass(frozen=True)
class PortAlarm:
    """A port whose share deficit persisted.

    Attributes:
        port: column index of the port in the packets matrix.
        start: row where the deviation began (CUSUM change-point estimate).
        alarm: row where the statistic reached the threshold.
        loss_estimate: estimated fraction of the link's packets lost, rows ``start..`` pooled.
        statistic: the alarming CUSUM's statistic at ``alarm`` (log-likelihood ratio).
        design_loss: the design loss of the CUSUM that raised the alarm.
    """

    port: int
    start: int
    alarm: int
    loss_estimate: float
    statistic: float
    design_loss: float


def _phi(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.vectorize(math.erf)(np.asarray(x, dtype=float) / math.sqrt(2.0)))


def overshoot_nu(delta: float | np.ndarray) -> np.ndarray:
    """Siegmund's overshoot correction nu(delta) for a Gaussian random walk with drift delta/2.

    Closed-form approximation nu(x) ~ (2/x)(Phi(x/2) - 1/2) / ((x/2) Phi(x/2) + phi(x/2))
    (Siegmund & Yakir 2007, eq. 4.38); nu -> 1 as x -> 0 and nu ~ exp(-0.583 x) for small x.

    Examples:
        >>> round(float(overshoot_nu(3.6)), 4)
        0.1421
    """
    a = np.asarray(delta, dtype=float) / 2.0
    dens = np.exp(-a * a / 2.0) / math.sqrt(2.0 * math.pi)
    cdf = _phi(a)
    with np.errstate(divide="ignore", invalid="ignore"):
        nu = (cdf - 0.5) / (a * (a * cdf + dens))
    return np.where(a > 1e-9, nu, 1.0)


def cusum_threshold(
    delta: float | np.ndarray, false_alarm_rate: float = FALSE_ALARM_RATE, tests: float | np.ndarray = 1
) -> np.ndarray:
    """CUSUM threshold h (log-likelihood ratio) whose false alarms stay within a budget.

    Solves ARL0 = tests / false_alarm_rate with ARL0 ~ exp(h) / (delta^2/2 * nu(delta)^2), the
    mean run length to a false alarm of a CUSUM of Gaussian log-likelihood ratios whose mean
    shifts by delta standard deviations under the alternative (Siegmund 1985, Section II.2).
    ``tests`` CUSUMs share the budget (Bonferroni; a jointly calibrated family passes its
    effective number of tests, :func:`family_tests`).

    Args:
        delta: per-iteration shift in standard deviations (> 0).
        false_alarm_rate: expected false alarms per judged port and iteration, in (0, 1).
        tests: CUSUMs run on the same port (>= 1), scalar or broadcastable to ``delta``.

    Returns:
        h with the shape of ``delta``.

    Raises:
        ValueError: for a rate outside (0, 1), tests < 1 or delta <= 0.

    Examples:
        delta = 3.6, one test, rate 1e-10: nu = 0.1421, delta^2/2 = 6.48, so
        h = ln(6.48 * 0.1421^2 / 1e-10) = ln(1.309e9) = 20.99. (A Markov-chain evaluation of
        that CUSUM gives ARL0 within 2% of 1e10.)

        >>> round(float(cusum_threshold(3.6, 1e-10)), 2)
        20.99

    Notes:
        Accurate to a few percent in ARL0 for delta <= 7; conservative (higher h) above 8,
        where the CUSUM acts on single iterations.

    References:
        D. Siegmund, "Sequential Analysis: Tests and Confidence Intervals", Springer 1985.
        D. Siegmund, B. Yakir, "The Statistics of Gene Mapping", Springer 2007, Section 4.
    """
    if not 0.0 < false_alarm_rate < 1.0:
        raise ValueError(f"false_alarm_rate must be in (0, 1), got {false_alarm_rate}")
    if (np.asarray(tests) < 1).any():
        raise ValueError(f"tests must be >= 1, got {tests}")
    delta = np.asarray(delta, dtype=float)
    if (delta <= 0).any():
        raise ValueError(f"delta must be > 0, got {delta.min()}")
    return np.log(tests * delta**2 / 2.0 * overshoot_nu(delta) ** 2 / false_alarm_rate)


def family_tests(base: float | np.ndarray) -> np.ndarray:
    """Effective number of tests sharing the budget in the jointly calibrated four-design family.

    The port's four CUSUMs (design losses in the ratios 1:2:4:8, shifts d, 2d, 4d, 8d) judge the
    same standardized deficit, so their false alarms overlap, and Siegmund's ARL0 formula
    (:func:`cusum_threshold`) is conservative above ~5 standard deviations an iteration: Bonferroni's
    m = 4 leaves part of the budget unspent. :data:`FAMILY_TESTS` holds, on a grid of base shifts d, the m
    whose thresholds h_k = ln(m I_k nu_k^2 / r) keep the union's false-alarm rate within r
    (bench/bench_flowpulse_family.py). Between grid points the larger neighbour is taken (a design
    drops out below MIN_SHIFT between some of them, so the entries are not monotone); below the
    grid 4, above it the last entry (every design alarms on single rows there, the smallest
    threshold decides).

    Args:
        base: base shift(s) d, standard deviations an iteration (the smallest design's).

    Returns:
        m_eff in [1, 4], the shape of ``base``.

    Examples:
        >>> float(family_tests(0.01)), float(family_tests(FAMILY_BASES[0])) == FAMILY_TESTS[0]
        (4.0, True)
    """
    d = np.asarray(base, dtype=float)
    grid, table = np.asarray(FAMILY_BASES), np.asarray(FAMILY_TESTS)
    i = np.clip(np.searchsorted(grid, d, side="right") - 1, 0, grid.size - 1)  # grid[i] <= d < grid[i + 1]
    on_grid = np.isclose(d, grid[i], rtol=1e-9, atol=0.0)
    upper = np.where(on_grid, table[i], np.maximum(table[i], table[np.minimum(i + 1, grid.size - 1)]))
    return np.where(d < grid[0] * (1 - 1e-9), 4.0, upper)


def is_calibrated_family(design_losses: tuple[float, ...], false_alarm_rate: float) -> bool:
    """Whether :func:`family_tests` applies: four design losses in the ratios 1:2:4:8 at the default budget.

    Examples:
        >>> is_calibrated_family(DESIGN_LOSSES, FALSE_ALARM_RATE), is_calibrated_family((0.01,), FALSE_ALARM_RATE)
        (True, False)
    """
    if len(design_losses) != len(FAMILY_RATIOS) or not math.isclose(false_alarm_rate, FALSE_ALARM_RATE, rel_tol=1e-9):
        return False
    return all(math.isclose(d / design_losses[0], r, rel_tol=1e-9) for d, r in zip(design_losses, FAMILY_RATIOS, strict=True))


def binomial_llr(x: np.ndarray, n: np.ndarray, share0: np.ndarray, share1: np.ndarray) -> np.ndarray:
    """Log-likelihood ratio of Binomial(n, share1) against Binomial(n, share0) for a count x.

    Examples:
        Two equal ports, 10,000 packets, 2% loss: share 0.5 -> 0.49/0.99; a count of 4950
        gives 4950 ln(0.98/0.99) + 5050 ln(1.0/0.99) = 0.5 (as the Gaussian approximation).

        >>> round(float(binomial_llr(4950, 10000, 0.5, 0.49 / 0.99)), 4)
        0.5
    """
    pi = np.asarray(share0, dtype=float)
    p1 = np.asarray(share1, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = x * np.log(p1 / pi) + (n - x) * np.log((1 - p1) / (1 - pi))
    return np.nan_to_num(out, nan=0.0, posinf=0.0, neginf=0.0)


def cusum_statistic(llr: np.ndarray) -> np.ndarray:
    """One-sided CUSUM S_t = max(0, S_{t-1} + llr_t), S_{-1} = 0, along axis 0.

    Examples:
        >>> cusum_statistic(np.array([[1.0], [-3.0], [2.0], [2.0]]))[:, 0].tolist()
        [1.0, 0.0, 2.0, 4.0]

    Notes:
        O(T * P), vectorized: the cumulative sum minus its running minimum (floored at 0).

    References:
        E. S. Page, "Continuous inspection schemes", Biometrika 41, 1954.
    """
    c = np.cumsum(np.asarray(llr, dtype=float), axis=0)
    return c - np.minimum.accumulate(np.minimum(c, 0.0), axis=0)


def first_alarms(statistic: np.ndarray, threshold: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each port's statistic first reaches ``threshold``, and where that run began.

    Args:
        statistic: (T, ..., P) from :func:`cusum_statistic`.
        threshold: alarm level (> 0), scalar or broadcastable to (..., P).

    Returns:
        ``(alarm, start)``, each (..., P) int64: first row with statistic >= threshold (-1 if
        none), and the row after the statistic last stood at 0 before it (-1 if no alarm).

    Examples:
        >>> s = np.array([[0.0], [1.0], [0.0], [2.0], [5.0]])
        >>> [a.tolist() for a in first_alarms(s, 4.0)]
        [[4], [3]]
    """
    if (np.asarray(threshold) <= 0).any():
        raise ValueError(f"threshold must be > 0, got {threshold}")
    hit = statistic >= threshold
    alarm = np.where(hit.any(axis=0), hit.argmax(axis=0), -1)
    rows = np.arange(statistic.shape[0]).reshape((-1,) + (1,) * (statistic.ndim - 1))
    at_zero = (statistic <= 0) & (rows < alarm)
    last_zero = np.where(at_zero, rows, -1).max(axis=0)
    return alarm, np.where(alarm >= 0, last_zero + 1, -1)


def common_scale(packets: np.ndarray, expected: np.ndarray, window: int = SCALE_WINDOW) -> np.ndarray:
    """Per-iteration median, over judged ports, of observed over expected packets in the last ``window`` rows.

    A lossy link lowers one port; its lost packets, re-sent, raise all the others alike, and
    extra traffic from one sender (retransmissions re-sprayed) raises that port and lowers all
    the others alike. Expected counts scaled by this median follow the first and ignore the
    second: the lossy port stands out by (1 - p), a sender's surplus leaves the others at 1.

    Args:
        packets: (T, P) packets per iteration and port.
        expected: (T, P) expected shares (0 where a port is not judged).
        window: rows pooled (the current one and the window - 1 before it).

    Returns:
        (T, 1) scale, 1 where no port is judged.

    Examples:
        >>> x = np.array([[100, 100, 100, 100], [90, 100, 100, 100]])   # port 0 drops 10%
        >>> common_scale(x, np.full((2, 4), 0.25), window=1).ravel().round(4).tolist()
        [1.0, 1.0256]
    """
    counts = np.asarray(packets, dtype=float)
    x = np.cumsum(np.where(expected > 0, counts, 0.0), axis=0)  # a row counts where it is judged
    mu = np.cumsum(counts.sum(axis=1, keepdims=True) * expected, axis=0)
    if window < x.shape[0]:
        x[window:] = x[window:] - x[:-window]
        mu[window:] = mu[window:] - mu[:-window]
    ratio = np.where(expected > 0, np.divide(x, mu, out=np.zeros_like(x), where=mu > 0), np.nan)
    scale = _row_nanmedian(ratio)
    return np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)


def _row_nanmedian(values: np.ndarray) -> np.ndarray:
    """(T, 1) median of each row of ``values`` (T, P) over its non-NaN entries; NaN for a row with none.

    Same as ``np.nanmedian(values, axis=1, keepdims=True)``, an order of magnitude faster for
    small P: one sort (NaN sort last) and the middle one or two entries of each row.
    """
    ordered = np.sort(values, axis=1)
    count = np.isfinite(values).sum(axis=1, keepdims=True)
    lo = np.take_along_axis(ordered, np.maximum(count - 1, 0) // 2, axis=1)
    hi = np.take_along_axis(ordered, count // 2 - (count == 0), axis=1)
    return np.where(count > 0, (lo + hi) / 2, np.nan)


def reference_load(delta: np.ndarray | float, rows_ratio: np.ndarray | float, h: float, dispersion: float = 1.0) -> np.ndarray:
    """Load a = 2 h (N/M) d / delta^2 that a learned reference puts on a CUSUM's false-alarm budget.

    A CUSUM of log-likelihood ratios delta (z - delta/2), z standard normal, reaches h after about
    exp(theta h) rows, theta = 1 (Siegmund 1985). Judged against shares learned from M packets
    (the switch gets N an iteration), z carries an error b ~ N(0, N/M) that stays the same while
    the reference is frozen: then theta = 1 - 2 b / delta (exponential tilting of the Gaussian
    walk), and the rate averaged over b is exp(-h + a h), a = 2 h (N/M) / delta^2 in units where
    a row's variance is d (``dispersion``) times binomial. A one-row error of b = 0.65 standard
    deviations, 3.6 standard errors of a 31-row reference, turned a healthy 0.25% CUSUM at
    522k packets into a false alarm (the benchmark's down-link case); that CUSUM had a = 0.48.

    Args:
        delta: per-iteration shift of the design loss, binomial standard deviations (> 0 to count).
        rows_ratio: N / M, packets an iteration over packets in the reference (0 for an exact one).
        h: the CUSUM's threshold (log-likelihood ratio), e.g. ln(tests / rate).
        dispersion: variance over binomial (>= 1).

    Returns:
        a, broadcast over ``delta`` and ``rows_ratio``; inf where delta <= 0.

    Examples:
        0.25% at 522k packets on a spine (delta = 1.79), h = ln(4e10) = 24.41, 31 rows learned:

        >>> round(float(reference_load(1.79, 1 / 31, math.log(4e10))), 3)
        0.492
    """
    d2 = np.asarray(delta, dtype=float) ** 2
    load = np.divide(
        2.0 * h * dispersion * np.asarray(rows_ratio, dtype=float),
        d2,
        out=np.full(np.broadcast(d2, rows_ratio).shape, np.inf),
        where=d2 > 0,
    )
    return load


def reference_inflation(a: np.ndarray | float) -> np.ndarray:
    """Factor c(a) = (1 - sqrt(1 - 4a)) / (2a) dividing the log-likelihood ratio so the budget holds.

    Dividing the log-likelihood ratio by c multiplies theta by c; averaged over the reference's
    error the false-alarm exponent becomes c h - a c^2 h (:func:`reference_load`), and c(a) is
    the smallest c with c - a c^2 >= 1: the rate stays within the budget of an exact reference.
    It exists for a <= 1/4 only (c(1/4) = 2); above that no threshold keeps the budget, and the
    CUSUM waits for more reference rows. c = 1 + a + 2a^2 + ..., so for a small reference error
    it is the window inflation 1 + k N/M with k = 2 h / delta^2 rows to decide.

    Args:
        a: reference load(s), >= 0.

    Returns:
        c(a) >= 1 where a <= 1/4, inf above.

    Examples:
        >>> reference_inflation(np.array([0.0, 0.1875, 0.25, 0.3])).tolist()
        [1.0, 1.3333333333333333, 2.0, inf]
    """
    a = np.asarray(a, dtype=float)
    root = np.sqrt(np.clip(1.0 - 4.0 * a, 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(a > 1e-12, (1.0 - root) / (2.0 * np.maximum(a, 1e-12)), 1.0 + a)
    return np.where(a <= 0.25, c, np.inf)


def _design_cusum(x, n, pi, loss, h0, reference_packets, dispersion, rate, tests, threshold, family_ratio=None):
    """Statistic (T, P) and threshold (P,) of the CUSUM tuned to ``loss``; threshold inf where not run.

    ``pi`` are the scaled expected shares (:func:`common_scale`); the lossy port's is pi (1 - loss).
    ``family_ratio``: the smallest design loss over ``loss`` where the designs form the jointly
    calibrated family (:func:`family_tests` of the base shift delta * ratio gives the tests
    sharing the budget); None: ``tests`` (Bonferroni).
    """
    mu0, mu1 = n * pi, n * pi * (1 - loss)
    var = n * pi * (1 - pi)
    judged = (pi > 0) & (pi < 1) & (var > 0)
    delta = np.divide(mu0 - mu1, np.sqrt(var), out=np.zeros_like(var), where=judged)
    # the learned shares' error b is the same in every row of an excursion: it multiplies the
    # false-alarm rate by E exp(2 h b / delta), which the inflation c(a) of the log-likelihood
    # ratio pays for while a <= REFERENCE_A_MAX (reference_inflation); the scale's median over
    # P ports pooled over SCALE_WINDOW rows adds pi/2 / (P * window) to the variance
    a = reference_load(delta, n / reference_packets, h0, dispersion)
    ports = np.maximum(judged.sum(axis=1, keepdims=True), 1)
    inflation = dispersion * (reference_inflation(a) + math.pi / 2 / (ports * SCALE_WINDOW))
    delta_eff = delta / np.sqrt(inflation)
    run = judged & (delta_eff >= MIN_SHIFT) & (a <= REFERENCE_A_MAX)
    llr = np.where(run, binomial_llr(x, n, pi, pi * (1 - loss)) / inflation, 0.0)
    if threshold is not None:
        h = np.where(run.any(axis=0), threshold, np.inf)
        return cusum_statistic(llr), h
    # h(delta) is largest near delta ~ 1.7: take the largest over the port's range of shifts
    ran = run.any(axis=0)
    lo = np.where(ran, np.where(run, delta_eff, np.inf).min(axis=0), 1.0)
    hi = np.where(ran, np.where(run, delta_eff, 0.0).max(axis=0), 1.0)
    points = np.stack([lo, hi, np.clip(1.7, lo, hi)])
    m = tests if family_ratio is None else family_tests(points * family_ratio)
    h = cusum_threshold(points, rate, m).max(axis=0)
    return cusum_statistic(llr), np.where(ran, h, np.inf)


def detect_switch(
    packets: np.ndarray,
    shares: np.ndarray,
    *,
    design_losses: tuple[float, ...] = DESIGN_LOSSES,
    false_alarm_rate: float = FALSE_ALARM_RATE,
    threshold: float | None = None,
    reference_packets: np.ndarray | float = np.inf,
    dispersion: float = 1.0,
) -> list[PortAlarm]:
    """Judge one switch from its own ingress counters: the ports whose share deficit persisted.

    Args:
        packets: (T, P) packets received per iteration and fabric port.
        shares: (P,) or (T, P) expected shares (analytic or learned); 0 for a down link.
        design_losses: loss rates the parallel CUSUMs are tuned to, each in (0, 1).
        false_alarm_rate: expected false alarms per port and iteration; sets the thresholds.
        threshold: a fixed CUSUM threshold for every test instead of the budget's (> 0).
        reference_packets: packets the shares were learned from, scalar or (T,) (inf if analytic).
        dispersion: variance multiplier over the binomial variance (>= 1).

    Returns:
        One :class:`PortAlarm` per flagged port (the earliest of its CUSUMs), by port index.

    Raises:
        ValueError: for mismatched shapes, a design loss outside (0, 1) or a bad budget.

    Examples:
        Four equal ports, 10,000 packets an iteration; from row 10 port 3 loses 2% (its share
        0.25 * 0.98 / 0.995, the others' 0.25 / 0.995). Each lossy row adds about 0.5 to the
        CUSUM tuned to 2%, so a threshold of 4.4 is reached on the ninth:

        >>> x = np.tile([[2500, 2500, 2500, 2500]], (40, 1)); x[10:] = [2513, 2513, 2512, 2462]
        >>> [(a.port, a.start, a.alarm, round(a.loss_estimate, 3)) for a in
        ...  detect_switch(x, np.full(4, 0.25), design_losses=(0.02,), threshold=4.4)]
        [(3, 10, 18, 0.02)]

    Notes:
        O(m * T * P) time for m design losses.

        With an exact reference (``reference_packets`` inf), the default four designs (any
        smallest loss, ratios 1:2:4:8, :func:`is_calibrated_family`) and the default budget, the
        CUSUMs share the budget as a jointly calibrated family: each threshold is
        ``cusum_threshold(delta, rate, family_tests(base))``, base the smallest design's shift,
        so that the rate of "any of the port's CUSUMs alarms" meets the budget; otherwise each of
        the m designs gets rate / m (Bonferroni). Learned references keep Bonferroni: their
        inflation c(a) differs by design, which the family's table does not model.
    """
    packets = np.asarray(packets)
    shares = np.asarray(shares, dtype=float)
    if packets.ndim != 2 or shares.shape not in (packets.shape, packets.shape[1:]):
        raise ValueError(f"packets must be (T, P) and shares (P,) or (T, P), got {packets.shape} and {shares.shape}")
    if not design_losses or not all(0.0 < d < 1.0 for d in design_losses):
        raise ValueError(f"design losses must be in (0, 1), got {design_losses}")
    if threshold is not None and threshold <= 0:
        raise ValueError(f"threshold must be > 0, got {threshold}")
    if not 0.0 < false_alarm_rate < 1.0:
        raise ValueError(f"false_alarm_rate must be in (0, 1), got {false_alarm_rate}")
    x = packets.astype(float)
    n = x.sum(axis=1, keepdims=True)
    expected = np.broadcast_to(shares, packets.shape)
    scaled = np.minimum(expected * common_scale(x, expected), 1.0)
    ref = np.asarray(reference_packets, dtype=float).reshape(-1, 1)
    m = len(design_losses)
    h0 = math.log(m / false_alarm_rate)
    joint = np.isinf(ref).all() and is_calibrated_family(design_losses, false_alarm_rate)
    best: dict[int, PortAlarm] = {}
    for loss in design_losses:
        ratio = design_losses[0] / loss if joint else None
        stat, h = _design_cusum(x, n, scaled, loss, h0, ref, dispersion, false_alarm_rate, m, threshold, ratio)
        alarm, _ = first_alarms(stat, h)
        for j in map(int, np.flatnonzero(alarm >= 0)):
            if j in best and best[j].alarm <= alarm[j]:
                continue
            best[int(j)] = _port_alarm(x, expected, int(j), int(alarm[j]), stat, loss)
    return [best[j] for j in sorted(best)]


def _port_alarm(x: np.ndarray, shares: np.ndarray, j: int, alarm: int, stat: np.ndarray, loss: float) -> PortAlarm:
    """The alarm of port ``j`` with its change point (:func:`change_point`) and the loss after it.

    ``x`` (T, P) counts, ``shares`` (T, P) expected shares. The loss estimate is port j's
    observed over expected packets from the change point on, relative to the median of that
    ratio over the switch's judged ports in the same rows (the common scale, pooled).
    """
    n = x.sum(axis=1, keepdims=True)
    mu = n[:, 0] * np.minimum(shares[:, j] * common_scale(x, shares)[:, 0], 1.0)
    start = change_point(x[:, j], mu, alarm)
    observed, expected = x[start:].sum(axis=0), (n[start:] * shares[start:]).sum(axis=0)
    judged = (expected > 0) & (shares[start:] > 0).all(axis=0)
    if expected[j] <= 0 or not judged.any():
        return PortAlarm(j, start, alarm, 0.0, float(stat[alarm, j]), loss)
    scale = float(np.median(observed[judged] / expected[judged]))
    estimate = float(np.clip(1 - observed[j] / expected[j] / scale, 0.0, 1.0))
    return PortAlarm(j, start, alarm, estimate, float(stat[alarm, j]), loss)


def change_point(x: np.ndarray, mu: np.ndarray, alarm: int) -> int:
    """Maximum-likelihood onset of a lasting deficit: the k <= ``alarm`` that best splits "as expected" from "short".

    The counts x_i are compared with their expected values mu_i (no loss); from the change point k
    on, to the end of the data, they fall short by a common fraction. Profiling that fraction out
    of the Gaussian likelihood gives the statistic D(k)^2 / V(k), D(k) = sum_{i>=k} (mu_i - x_i),
    V(k) = sum_{i>=k} mu_i, and k is its argmax over deficits D(k) > 0 (Hinkley 1970's
    likelihood-ratio change point for a shift in mean, one-sided). Unlike the CUSUM's last zero,
    it uses every count after the alarm, so at a shift of 1 standard deviation an iteration the
    estimate is within an iteration or two of the truth rather than several.

    Args:
        x: (T,) packets of one port.
        mu: (T,) expected packets without loss (0 where not judged).
        alarm: row of the alarm (0 <= alarm < T); the change point is at or before it.

    Returns:
        The row k in [0, alarm] (``alarm`` if no row before it shows a deficit).

    Examples:
        Expected 1,000 a row; from row 3 on 2% short:

        >>> change_point(np.array([1000, 1003, 998, 980, 981, 979, 980.0]), np.full(7, 1000.0), 5)
        3

    References:
        D. V. Hinkley, "Inference about the change-point in a sequence of random variables",
        Biometrika 57, 1970.
    """
    x = np.asarray(x, dtype=float)
    mu = np.asarray(mu, dtype=float)
    d = np.cumsum((mu - np.where(mu > 0, x, 0.0))[::-1])[::-1][: alarm + 1]
    v = np.cumsum(mu[::-1])[::-1][: alarm + 1]
    score = np.where((d > 0) & (v > 0), d * d / np.maximum(v, 1e-300), -1.0)
    return int(np.argmax(score)) if score.max() > 0 else alarm


def excursion_starts(statistic: np.ndarray) -> np.ndarray:
    """Row at which each row's current CUSUM excursion began: 1 + the last row before it at 0.

    Row t's excursion began at t when the statistic stood at 0 in row t - 1 (or t = 0).

    Examples:
        >>> excursion_starts(np.array([[0.0], [2.0], [1.0], [0.0], [3.0]]))[:, 0].tolist()
        [0, 1, 1, 1, 4]
    """
    rows = np.arange(statistic.shape[0]).reshape((-1,) + (1,) * (statistic.ndim - 1))
    last_zero = np.maximum.accumulate(np.where(statistic <= 0, rows, -1), axis=0)
    out = np.empty(statistic.shape, dtype=np.int64)
    out[0] = 0
    out[1:] = last_zero[:-1] + 1
    return out


def pooled_shares(packets: np.ndarray, starts: np.ndarray, groups: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Shares learned from rows [0, starts[t, j]) of each port, pooled over its class of symmetric ports.

    Port j's reference share at row t is the packets that the ports of j's class G(j) received in
    rows [0, k), k = starts[t, j], over |G(j)| times the switch's packets in those rows: the
    maximum-likelihood share when every port of the class has the same share (a leaf's ports from
    spines with identical live columns, :func:`faultsense_pipelines.flowpulse.model.symmetric_spines`).
    The class's count over M packets is binomial with mean M |G| pi, so the pooled share's
    variance is pi (1 - |G| pi) / (|G| M), at most pi (1 - pi) / (|G| M): it is as good as a
    single port's share learned from |G| M packets, and that is the reference size returned (the
    bound, conservative by (1 - pi) / (1 - |G| pi)) for :func:`reference_load`. A lossy port of the
    class weighs 1/|G| in its classmates' references: it lowers them by p/|G|, which makes the
    classmates look no shorter, and a loss present from the first row still stands out of its
    own pooled reference by p (1 - 1/|G|).

    Args:
        packets: (T, P) packets per iteration and port.
        starts: (T, P) int, the row where each port's reference ends (exclusive), 0 <= k <= T.
        groups: (P,) int class labels (None: every port alone, the plain learned shares). A
            port that never carried a packet pools with no other.

    Returns:
        ``(shares, reference_packets)``, both (T, P): the pooled shares (0 where nothing was
        learned yet) and the packets |G(j)| M they count as.

    Examples:
        Ports 0 and 1 form a class, port 2 is alone; references of rows [0, 2) for row 2:

        >>> x = np.array([[30, 10, 60], [50, 30, 20], [40, 40, 20]])
        >>> s, m = pooled_shares(x, np.full((3, 3), 2), np.array([0, 0, 1]))
        >>> s[2].tolist(), m[2].tolist()
        ([0.3, 0.3, 0.4], [400.0, 400.0, 200.0])
    """
    x = np.asarray(packets, dtype=float)
    starts = np.asarray(starts)
    if x.ndim != 2 or starts.shape != x.shape:
        raise ValueError(f"packets and starts must be (T, P) alike, got {x.shape} and {starts.shape}")
    return _pooled_at(_class_cumulative(x, groups), starts)


def _class_cumulative(x: np.ndarray, groups: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(T+1, P) packets of each port's class in rows [0, k), (T+1,) the switch's, (P,) class sizes."""
    ports = x.shape[1]
    pooled = np.vstack([np.zeros((1, ports)), np.cumsum(x, axis=0)])  # pooled[k] = rows 0..k-1
    if groups is None:
        return pooled, pooled.sum(axis=1), np.ones(ports)
    labels = np.asarray(groups).astype(np.int64)
    if labels.shape != (ports,):
        raise ValueError(f"groups must be ({ports},), got {labels.shape}")
    silent = x.sum(axis=0) == 0  # a port that never carried a packet pools with no other
    labels = np.where(silent, labels.max(initial=0) + 1 + np.arange(ports), labels)
    same = (labels[:, None] == labels[None, :]).astype(float)  # (P, P): j pools the ports of its class
    return pooled @ same, pooled.sum(axis=1), same.sum(axis=0)


def _pooled_at(cumulative: tuple[np.ndarray, np.ndarray, np.ndarray], starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pooled shares and reference packets (:func:`pooled_shares`) at ``starts`` (T, P)."""
    class_pooled, pooled_n, size = cumulative
    ref = pooled_n[starts]
    cols = np.arange(class_pooled.shape[1])[None, :]
    shares = np.divide(class_pooled[starts, cols], ref * size, out=np.zeros(starts.shape), where=ref > 0)
    return shares, ref * size


def detect_switch_learned(
    packets: np.ndarray,
    *,
    design_losses: tuple[float, ...] = DESIGN_LOSSES,
    false_alarm_rate: float = FALSE_ALARM_RATE,
    threshold: float | None = None,
    dispersion: float = 1.0,
    min_reference: int = 2,
    max_freeze: int | None = None,
    passes: int = 4,
    groups: np.ndarray | None = None,
) -> list[PortAlarm]:
    """Judge one switch against shares learned from its own past that never take in a deviation under test.

    Row t of each CUSUM is judged against shares pooled over rows [0, k_t), k_t the row at
    which that CUSUM's current excursion began (:func:`excursion_starts`): while the statistic
    is 0 every past row is in the reference (it grows with the job), and once it starts to climb
    the reference is frozen until it returns to 0. A loss is thus always compared with the
    counts before it, however early it starts; a healthy excursion that dies out joins the
    reference at once. Each reference's error enters through its load on the false-alarm budget
    (:func:`reference_load`, :func:`reference_inflation`): a CUSUM starts as soon as its reference
    is large enough to keep the budget (k >= 8 h / delta^2 rows).
    This is the window-unlimited generalized likelihood ratio with the pre-change share
    estimated from the pre-change data (Lai 1995, Section 3), run as a CUSUM.

    The recursion (reference depends on the statistic, the statistic on the reference) is
    solved by fixed-point passes: the first judges every row against all rows before it,
    each next one freezes the references at the previous pass's excursion starts. Every pass is
    causal (row t uses rows <= t only); the passes stop when the starts no longer change.

    Args:
        packets: (T, P) packets per iteration and port; 0 throughout for a port not judged.
        design_losses, false_alarm_rate, threshold, dispersion: as in :func:`detect_switch`.
        min_reference: rows a reference needs before any CUSUM runs (>= 1).
        max_freeze: rows an excursion may hold the reference frozen (None: no limit); after that
            its rows join the reference (a slow drift of the norm is eventually learned).
        passes: fixed-point passes (>= 1).
        groups: (P,) class labels of ports whose shares are equal (a leaf's ports from spines
            with identical live columns); each port's reference pools its class
            (:func:`pooled_shares`), so it counts |G| times the packets and a CUSUM runs from
            8 h / (|G| delta^2) rows instead of 8 h / delta^2. None: every port learns alone.

    Returns:
        One :class:`PortAlarm` per flagged port, by port index; ``start`` is the change point
        (:func:`change_point`) and the loss estimate pools the rows from it against the
        reference frozen at the alarm.

    Raises:
        ValueError: bad shapes, design losses or budget, as :func:`detect_switch`.

    Examples:
        Four equal ports, a million packets a row; port 3 loses 2% from row 6, inside what a
        fixed 20-row reference would have learned from (its share 0.25 * 0.98 / 0.995). The
        reference is frozen at rows 0-5, the alarm comes in the first lossy row:

        >>> x = np.tile([[250_000] * 4], (40, 1)); x[6:] = [251_256, 251_256, 251_256, 246_232]
        >>> [(a.port, a.start, a.alarm, round(a.loss_estimate, 3)) for a in detect_switch_learned(x)]
        [(3, 6, 6, 0.02)]

        The same loss from row 0: each port's own past holds nothing else, so alone it is
        "normal"; pooled over the four symmetric ports the reference is 1/4, and the loss is
        flagged at row 2, the first with a reference (``min_reference``), dated 0:

        >>> x[:] = [251_256, 251_256, 251_256, 246_232]
        >>> detect_switch_learned(x)
        []
        >>> [(a.port, a.start, a.alarm, round(a.loss_estimate, 3)) for a in detect_switch_learned(x, groups=np.zeros(4))]
        [(3, 0, 2, 0.02)]

    References:
        T. L. Lai, "Sequential changepoint detection in quality control and dynamical
        systems", J. R. Stat. Soc. B 57, 1995.
    """
    x = np.asarray(packets, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"packets must be (T, P), got {x.shape}")
    if not design_losses or not all(0.0 < d < 1.0 for d in design_losses):
        raise ValueError(f"design losses must be in (0, 1), got {design_losses}")
    if threshold is not None and threshold <= 0:
        raise ValueError(f"threshold must be > 0, got {threshold}")
    if not 0.0 < false_alarm_rate < 1.0:
        raise ValueError(f"false_alarm_rate must be in (0, 1), got {false_alarm_rate}")
    if min_reference < 1 or passes < 1:
        raise ValueError(f"min_reference and passes must be >= 1, got {min_reference}, {passes}")
    t_rows = x.shape[0]
    n = x.sum(axis=1, keepdims=True)
    rows = np.arange(t_rows)[:, None]
    cumulative = _class_cumulative(x, groups)
    m = len(design_losses)
    h0 = math.log(m / false_alarm_rate)
    best: dict[int, PortAlarm] = {}
    for loss in design_losses:
        starts = np.broadcast_to(rows, x.shape).copy()
        for _ in range(passes):
            if max_freeze is not None:
                starts = np.maximum(starts, rows - max_freeze)
            shares, ref = _pooled_at(cumulative, starts)
            shares = np.where(starts >= min_reference, shares, 0.0)
            scaled = np.minimum(shares * common_scale(x, shares), 1.0)
            stat, h = _design_cusum(x, n, scaled, loss, h0, np.maximum(ref, 1.0), dispersion, false_alarm_rate, m, threshold)
            new = excursion_starts(stat)
            if np.array_equal(np.maximum(new, rows - max_freeze) if max_freeze is not None else new, starts):
                break
            starts = new
        alarm, _ = first_alarms(stat, h)
        for j in map(int, np.flatnonzero(alarm >= 0)):
            if j in best and best[j].alarm <= alarm[j]:
                continue
            a = int(alarm[j])
            frozen = np.broadcast_to(shares[a], x.shape)  # the reference frozen at the alarm, for every row
            best[int(j)] = _port_alarm(x, frozen, int(j), a, stat, loss)
    return [best[j] for j in sorted(best)]


def detect_link_pairs(
    sent: np.ndarray,
    received: np.ndarray,
    *,
    design_losses: tuple[float, ...] = DESIGN_LOSSES,
    false_alarm_rate: float = FALSE_ALARM_RATE,
    floor: float = PAIR_FLOOR,
    threshold: float | None = None,
) -> list[PortAlarm]:
    """Judge links whose two ends both report: packets sent at one end that the other did not receive.

    A loss is what it is by definition: column k's deficit d_t = sent_t - received_t, per
    iteration, is Binomial(sent_t, p) when the link loses a fraction p. No traffic model, no
    learned reference and no other port enters, so a change of traffic (another collective, a
    job restart, a link elsewhere going down) cannot move it, and a loss present from iteration 0
    is seen, and dated, there. Each link runs one one-sided CUSUM (Page 1954) per design loss
    p1 of the exact binomial log-likelihood ratio

        llr_t = d_t ln(p1 / p0) + (sent_t - d_t) ln((1 - p1) / (1 - p0)),   p0 = ``floor``,

    "the link loses p1" against "it loses at most p0" (the floor: corruption at a bit error
    rate no fabric notices; 1e-5, 250 times below the smallest design loss). The onset is the
    alarming CUSUM's excursion start, which for a CUSUM is the maximum-likelihood change point
    with p0 and p1 known (the k maximizing the log-likelihood ratio of rows k..alarm); the loss
    estimate pools the deficits from it to the end of the data.

    False-alarm guarantee (a property of the test, not of the data's traffic): for a healthy
    link, loss rate p <= p0 in every iteration, exp(llr_t) has conditional mean
    (p p1 / p0 + (1 - p)(1 - p1) / (1 - p0))^sent_t <= 1 given the past (the base is increasing
    in p and equals 1 at p = p0), so the likelihood ratio of rows k..t is a nonnegative
    supermartingale in t for every start k. The CUSUM exceeds h at row t only if one of these,
    started at the row after its last zero, exceeds e^h; by Ville's inequality each does with
    probability <= e^-h, and Lorden (1971) turns this into ARL0 >= e^h: the mean time between
    false alarms of the restarted CUSUM is at least e^h iterations, so its long-run false-alarm
    rate (renewal-reward) is at most e^-h per link and iteration, whatever the traffic, whatever
    the volume, with no asymptotics (no Siegmund approximation). With h = ln(m / rate) for the m
    designs (Bonferroni) the link's rate of any alarm is at most ``false_alarm_rate``. The only
    assumption is that both counters of a row cover the same packets (read at the iteration's
    boundary with the link drained, as the counters' contract has it); a row with
    received > sent shows they do not, and is refused.

    Power: at 120k packets a 1% loss gives d ~ 1,200 against p0 sent = 1.2, llr ~ 1,200 ln(1000)
    - 1,200 ~ 7,000 in the first lossy row, against h = ln(4e10) = 24.4: every loss at or above
    a design loss with a few thousand packets on the link is flagged in its first lossy row.

    Args:
        sent: (T, K) packets put on each of K links (the sending port's tx) per iteration.
        received: (T, K) packets the receiving port counted (its rx) in the same iterations.
        design_losses: loss rates p1 of the parallel CUSUMs, each in (floor, 1).
        false_alarm_rate: expected false alarms per link and iteration, in (0, 1).
        floor: largest loss rate p0 of a healthy link, in [0, min(design_losses)); 0 makes any
            lost packet an alarm.
        threshold: a fixed CUSUM threshold (> 0) instead of ln(m / false_alarm_rate).

    Returns:
        One :class:`PortAlarm` per flagged link (``port`` = column k), by column; ``statistic``
        and ``design_loss`` of the earliest-alarming CUSUM.

    Raises:
        ValueError: shapes that differ or are not 2-D, negative counts, a row with received >
            sent (the two counters do not cover the same packets), or bad design losses, floor,
            budget or threshold.

    Examples:
        Two links, 100,000 packets an iteration; link 1 loses 0.5% from row 3, link 0 nothing:

        >>> sent = np.full((8, 2), 100_000)
        >>> received = sent.copy(); received[3:, 1] -= 500
        >>> [(a.port, a.start, a.alarm, round(a.loss_estimate, 4)) for a in detect_link_pairs(sent, received)]
        [(1, 3, 3, 0.005)]

    References:
        E. S. Page, "Continuous inspection schemes", Biometrika 41, 1954. G. Lorden,
        "Procedures for reacting to a change in distribution", Ann. Math. Stat. 42, 1971.
        FlowPulse (Krebs et al., HotNets '25), Section 3: what a switch's counters can tell;
        here the two ends of a link are compared before any share model is asked.
    """
    n = np.asarray(sent, dtype=float)
    r = np.asarray(received, dtype=float)
    if n.ndim != 2 or n.shape != r.shape:
        raise ValueError(f"sent and received must be (T, K) alike, got {n.shape} and {r.shape}")
    if (n < 0).any() or (r < 0).any():
        raise ValueError("sent and received packets must be >= 0")
    if (r > n).any():
        t, k = np.argwhere(r > n)[0]
        raise ValueError(
            f"link column {k} received more than was sent in row {t}: the two counters do not cover the same packets"
        )
    if not 0.0 <= floor < 1.0:
        raise ValueError(f"floor must be in [0, 1), got {floor}")
    if not design_losses or not all(floor < d < 1.0 for d in design_losses):
        raise ValueError(f"design losses must be in (floor, 1) = ({floor}, 1), got {design_losses}")
    if threshold is not None and threshold <= 0:
        raise ValueError(f"threshold must be > 0, got {threshold}")
    if not 0.0 < false_alarm_rate < 1.0:
        raise ValueError(f"false_alarm_rate must be in (0, 1), got {false_alarm_rate}")
    d = n - r
    h = threshold if threshold is not None else math.log(len(design_losses) / false_alarm_rate)
    best: dict[int, PortAlarm] = {}
    for p1 in design_losses:
        hit_weight = math.log(p1 / floor) if floor > 0 else math.inf
        with np.errstate(invalid="ignore"):
            llr = np.where(d > 0, d * hit_weight, 0.0) + (n - d) * math.log((1 - p1) / (1 - floor))
        stat = cusum_statistic(np.nan_to_num(llr, posinf=1e300))
        alarm, start = first_alarms(stat, h)
        for k in map(int, np.flatnonzero(alarm >= 0)):
            if k in best and best[k].alarm <= alarm[k]:
                continue
            s = int(start[k])
            total = float(n[s:, k].sum())
            estimate = float(d[s:, k].sum()) / total if total > 0 else 0.0
            best[k] = PortAlarm(k, s, int(alarm[k]), estimate, float(stat[alarm[k], k]), p1)
    return [best[k] for k in sorted(best)]
