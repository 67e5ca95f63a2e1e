"""Anytime-valid paired tests: a test martingale over randomized rounds of two probes.

A *round* measures a test probe ``T`` and its reference ``R`` ``r`` times each, the ``2r``
measurements run in a uniformly random order drawn before the round. Its datum is the strict
Mann-Whitney count on log latencies shifted by ``theta`` (the log of a slowdown)::

    S(theta) = #{(i, j) : log T_i - theta > log R_j}        in 0..r**2

**Null.** ``H0(theta)``: "``T`` is at most ``exp(theta)`` times slower than ``R``", read as:
the ``2r`` measurements of the round, with ``T``'s divided by ``exp(theta)``, are
exchangeable given everything measured before, or ``T``'s are stochastically smaller than
that. Because the order is a uniform random permutation drawn independently of the
machine's state, this holds for *any* noise that treats the two probes alike -- drift, load
bursts, stalls, heavy tails, correlation in time -- when the probes differ only in healthy
parts (``theta = 0``), or when the part under test slows ``T`` by a factor of at most
``exp(theta)``.

**Test martingale.** Under ``H0(theta)``, breaking ties at random would give ``S`` the exact
Mann-Whitney null law ``M_r`` (symmetric about ``r**2 / 2``), and the strict count is
never larger. So for any nondecreasing payoff ``g`` with ``E_{M_r}[g] = 0`` and ``g >= -1``,
each round's factor ``1 + lam * g(S)`` (``0 <= lam < 1``) has conditional mean at most 1,
and their running product is a nonnegative supermartingale starting at 1. A uniform mixture
of a few such products (:data:`STRATEGIES`: a shift bet on ``S`` and a bet on its extreme
value, each at two stakes) is one too. Ville's inequality then gives, at whatever moment the
test stops (an optional stopping time),

    P_H0( sup_t K_t >= 1 / a ) <= a.

The bound needs no noise model: its one assumption is the exchangeability above.

**Largest growth.** A round can multiply ``K`` by at most ``1 + lam * (1 / P_{M_r}(S = r**2)
- 1) < C(2r, r)``: 2 for one measurement per probe, 20 for three. A blame at level ``a``
therefore needs at least ``log(1 / a) / log C(2r, r)`` rounds (:func:`rounds_lower_bound`)
however clean the signal; the mixture pays ``log(len(STRATEGIES))`` on top.

**Confidence sequence.** Running the test for every ``theta`` on a grid, and a mirror test
(``R`` slower than ``T / exp(theta)``) for the upper side, the ``theta`` never rejected at level
``a`` form an anytime-valid interval for the log slowdown (inverting a family of test
martingales; Waudby-Smith and Ramdas 2023). A claim of slowdown ``>= s0`` is exactly the
rejection of ``theta = log s0``, so a confirmed claim's interval never lies below ``s0``.

References:
    Ramdas, Grunwald, Vovk, Shafer, "Game-theoretic statistics and safe anytime-valid
    inference", Statistical Science 38(4), 2023. Waudby-Smith, Ramdas, "Estimating means of
    bounded random variables by betting", JRSS-B 86(1), 2024. Ville, "Etude critique de la
    notion de collectif", 1939. Mann, Whitney, Ann. Math. Stat. 18(1), 1947.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np

__all__ = [
    "STRATEGIES",
    "PairedTest",
    "mann_whitney_null",
    "round_factors",
    "rounds_lower_bound",
    "strict_count",
]

#: The bets of the mixture: ``(payoff, stake)``. ``"shift"`` bets on ``S`` above its null
#: mean, ``"extreme"`` on ``S = r**2`` (every test measurement above every reference one).
STRATEGIES: tuple[tuple[str, float], ...] = (("shift", 0.5), ("shift", 0.9), ("extreme", 0.5), ("extreme", 0.95))

#: Grid of log slowdowns for the confidence sequence: slowdowns 1/4 .. 16, 1% apart near 1.
_THETA_GRID = np.log(
    np.concatenate(
        [np.geomspace(0.25, 0.8, 60, endpoint=False), np.geomspace(0.8, 2.0, 93, endpoint=False), np.geomspace(2.0, 16.0, 60)]
    )
)


@cache
def mann_whitney_null(r: int) -> np.ndarray:
    """Null law of the Mann-Whitney count for two samples of ``r``: ``P(U = u)``, ``u = 0..r*r``.

    Exact, by the classic recursion on the largest of the ``2r`` values (Mann and Whitney
    1947). Shape ``(r*r + 1,)``.

    >>> mann_whitney_null(1).tolist()
    [0.5, 0.5]
    >>> [round(p * 20) for p in mann_whitney_null(3)]   # C(6, 3) = 20 orders
    [1, 1, 2, 3, 3, 3, 3, 2, 1, 1]

    Raises:
        ValueError: ``r < 1``.
    """
    if r < 1:
        raise ValueError(f"r must be >= 1, got {r}")
    # f[m][n][u]: number of orderings of m test and n reference values with count u
    f: dict[tuple[int, int], np.ndarray] = {}
    for m in range(r + 1):
        for n in range(r + 1):
            size = m * n + 1
            if m == 0 or n == 0:
                f[m, n] = np.ones(1)
                continue
            out = np.zeros(size)
            a = f[m - 1, n]  # the largest value is a test value: it beats all n references
            out[n : n + len(a)] += a
            b = f[m, n - 1]  # the largest value is a reference value
            out[: len(b)] += b
            f[m, n] = out
    counts = f[r, r]
    law: np.ndarray = counts / counts.sum()
    return law


def strict_count(test_log: np.ndarray, ref_log: np.ndarray, theta: np.ndarray | float) -> np.ndarray:
    """``S(theta) = #{(i, j): test_log[i] - theta > ref_log[j]}`` for each theta.

    Args:
        test_log: log latencies of the test probe in one round, shape ``(r,)``.
        ref_log: log latencies of its reference, shape ``(r,)``.
        theta: log slowdowns, scalar or shape ``(G,)``.

    Returns:
        Integer counts, shape ``()`` or ``(G,)``.
    """
    th = np.asarray(theta, dtype=float)
    diff = test_log[:, None] - ref_log[None, :]  # (r, r)
    counts: np.ndarray = (diff[None, :, :] - th.reshape(-1, 1, 1) > 0).sum(axis=(1, 2)).reshape(th.shape)
    return counts


@cache
def _payoffs(r: int) -> np.ndarray:
    """Each strategy's payoff ``g(u)`` for ``u = 0..r*r``: nondecreasing, null mean 0, ``>= -1``.

    Shape ``(len(STRATEGIES), r*r + 1)``.
    """
    p0 = mann_whitney_null(r)
    top = r * r
    u = np.arange(top + 1, dtype=float)
    rows = []
    for kind, _ in STRATEGIES:
        if kind == "shift":
            g = (u - top / 2) / (top / 2)
        else:  # extreme: 1{u = top} / P0(top) - 1
            g = np.full(top + 1, -1.0)
            g[top] = 1.0 / p0[top] - 1.0
        rows.append(g)
    return np.array(rows)


_STAKES = np.array([stake for _, stake in STRATEGIES])


def round_factors(counts: np.ndarray, r: int) -> np.ndarray:
    """Each strategy's factor ``1 + stake * g(S)`` for the counts of one round.

    Args:
        counts: strict counts, shape ``(G,)`` (one per theta), values in ``0..r*r``.
        r: measurements per probe in the round.

    Returns:
        Factors, shape ``(len(STRATEGIES), G)``, each >= ``1 - stake`` > 0.
    """
    g = _payoffs(r)[:, counts]  # (J, G)
    out: np.ndarray = 1.0 + _STAKES[:, None] * g
    return out


def rounds_lower_bound(level: float, r: int) -> int:
    """Fewest rounds any test of this family needs to reject at ``level``.

    Under exchangeability a round's e-value is at most ``C(2r, r)`` (the inverse probability
    of the most extreme order), so ``ceil(log(1/level) / log C(2r, r))`` rounds are needed
    whatever the statistic.

    >>> rounds_lower_bound(1e-4, 1), rounds_lower_bound(1e-4, 3)
    (14, 4)
    """
    return math.ceil(math.log(1.0 / level) / math.log(math.comb(2 * r, r)) - 1e-12)


@dataclass
class PairedTest:
    """A sequential paired test of "``T`` is at least ``exp(theta0)`` times slower than ``R``".

    Feed it rounds (:meth:`add`); it keeps, for every theta of a grid, the lower-side test
    martingale (``T`` slower than ``exp(theta)`` times ``R``) and the upper-side one, as
    uniform mixtures over :data:`STRATEGIES`, and their running maxima.

    ``theta0`` may be negative: the datum divides ``T``'s latencies by ``exp(theta0)``
    whatever its sign, so with ``theta0 = -log(s)`` the null ``H0(theta0)`` reads "``T`` is at
    least ``s`` times *faster* than ``R``" (``T * s`` no larger than ``R`` in law), and the
    test rejects it once ``T`` is shown less than ``s`` times faster. The proof above never
    uses the sign of ``theta``; :attr:`detected` (``theta = 0``) then asks more than the
    rejection does.

    Args:
        theta0: the log slowdown under test: ``log(min_slowdown)`` (> 0) for a claim that a
            part is slow; ``-log(min_slowdown)`` for the reverse test of a part already shown
            slow (:func:`~.claims.test_rail_nic`). Finite and non-zero.
        level: the test's level ``a`` in (0, 1): it rejects when the mixture reaches ``1/a``.

    Raises:
        ValueError: ``theta0`` not finite or zero; ``level`` outside (0, 1).

    Attributes:
        rounds: rounds added (rounds with a missing measurement are not added).
        diffs: every within-round ``log T_i - log R_j`` seen (for the point estimate).
    """

    theta0: float
    level: float
    rounds: int = 0
    diffs: list[float] = field(default_factory=list)
    _grid: np.ndarray = field(init=False, repr=False)
    _lo: np.ndarray = field(init=False, repr=False)  # (J, G) products, lower side
    _hi: np.ndarray = field(init=False, repr=False)  # (J, G) products, upper side
    _lo_max: np.ndarray = field(init=False, repr=False)  # (G,) running max of the mixture
    _hi_max: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.theta0) and self.theta0 != 0):
            raise ValueError(f"theta0 must be a finite non-zero log slowdown, got {self.theta0!r}")
        if not 0 < self.level < 1:
            raise ValueError(f"level must be in (0, 1), got {self.level!r}")
        self._grid = np.unique(np.concatenate([_THETA_GRID, [0.0, self.theta0]]))
        shape = (len(STRATEGIES), len(self._grid))
        self._lo = np.ones(shape)
        self._hi = np.ones(shape)
        self._lo_max = np.ones(len(self._grid))
        self._hi_max = np.ones(len(self._grid))

    def add(self, test_ms: Sequence[float] | np.ndarray, ref_ms: Sequence[float] | np.ndarray) -> None:
        """Add one round: ``r`` latencies (ms, > 0) of each probe, measured in random order.

        Raises:
            ValueError: unequal or empty samples, or a latency that is not finite and > 0.
        """
        t = np.asarray(test_ms, dtype=float)
        q = np.asarray(ref_ms, dtype=float)
        if t.shape != q.shape or t.ndim != 1 or not len(t):
            raise ValueError(f"a round needs r >= 1 latencies of each probe, got {len(t)} and {len(q)}")
        if not (np.isfinite(t).all() and np.isfinite(q).all() and (t > 0).all() and (q > 0).all()):
            raise ValueError("latencies must be finite and > 0 ms")
        r = len(t)
        lt, lq = np.log(t), np.log(q)
        lo = strict_count(lt, lq, self._grid)  # T / e^theta above R
        hi = strict_count(lq, lt, -self._grid)  # R above T / e^theta
        self._lo *= round_factors(lo, r)
        self._hi *= round_factors(hi, r)
        np.maximum(self._lo_max, self._lo.mean(axis=0), out=self._lo_max)
        np.maximum(self._hi_max, self._hi.mean(axis=0), out=self._hi_max)
        self.rounds += 1
        self.diffs.extend((lt[:, None] - lq[None, :]).ravel().tolist())

    def evalue(self, theta: float | None = None) -> float:
        """Running maximum of the lower-side mixture at ``theta`` (default ``theta0``)."""
        return float(self._lo_max[self._index(self.theta0 if theta is None else theta)])

    def evalue_now(self, theta: float | None = None) -> float:
        """Current (not maximal) lower-side mixture at ``theta`` (default ``theta0``)."""
        return float(self._lo[:, self._index(self.theta0 if theta is None else theta)].mean())

    @property
    def rejected(self) -> bool:
        """True once the test of ``theta0`` reached ``1 / level``: the claim is confirmed."""
        return self.evalue() >= 1.0 / self.level

    @property
    def detected(self) -> bool:
        """True once ``T`` is shown slower than ``R`` at all (``theta = 0``) at ``level``."""
        return self.evalue(0.0) >= 1.0 / self.level

    @property
    def cleared(self) -> bool:
        """True once the upper side rejects ``theta0``: ``T`` is shown less than ``exp(theta0)``
        times slower than ``R``, at ``level``."""
        return float(self._hi_max[self._index(self.theta0)]) >= 1.0 / self.level

    def interval(self) -> tuple[float, float]:
        """The slowdowns not rejected at ``level`` on either side so far: ``(low, high)``.

        Each end is a grid point (1% apart between 0.8x and 2x); ``low`` is the largest
        slowdown rejected below (or the grid's smallest), ``high`` the smallest rejected
        above (or the grid's largest).
        """
        bar = 1.0 / self.level
        lo_rej = np.flatnonzero(self._lo_max >= bar)
        hi_rej = np.flatnonzero(self._hi_max >= bar)
        low = float(np.exp(self._grid[lo_rej.max()])) if len(lo_rej) else float(np.exp(self._grid[0]))
        high = float(np.exp(self._grid[hi_rej.min()])) if len(hi_rej) else float(np.exp(self._grid[-1]))
        return low, max(low, high)

    def estimate(self) -> float | None:
        """Hodges-Lehmann estimate of the slowdown: ``exp(median of log T_i - log R_j)``."""
        return float(math.exp(float(np.median(self.diffs)))) if self.diffs else None

    def _index(self, theta: float) -> int:
        i = int(np.searchsorted(self._grid, theta))
        if i < len(self._grid) and math.isclose(self._grid[i], theta, abs_tol=1e-12):
            return i
        raise ValueError(f"theta {theta!r} is not on the test's grid")
