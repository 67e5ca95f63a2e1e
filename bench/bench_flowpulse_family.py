"""Joint calibration of FlowPulse's four CUSUMs per port: the effective number of tests.

Each port runs CUSUMs tuned to 0.25%, 0.5%, 1% and 2% loss (:mod:`faultsense_pipelines.flowpulse.detect`).
Their per-row standardized deficit z is the same, and a design's shift is proportional to its
loss, so with base shift d (the 0.25% design's, standard deviations an iteration) the family is
d, 2d, 4d, 8d and design k's log-likelihood ratio is d_k (z - d_k / 2). The thresholds share the
false-alarm budget r (1e-10 per port and iteration): h_k = ln(m I_k nu_k^2 / r)
(:func:`detect.cusum_threshold`), Bonferroni with m = 4. The four are strongly correlated, so the
rate of "any of them alarms" is below 4 x r / 4. This script computes, for every base shift, the
m_eff at which that union rate equals r, by importance sampling of the four correlated CUSUMs
under H0 (z standard normal):

- *regenerative*: a cycle starts with all four statistics at 0 and ends when they are all at 0
  again; the union's mean run length to a false alarm is E[cycle length] / P(alarm in a cycle)
  (the alarm is rare, so E[min(cycle, alarm)] is the cycle length's mean, by plain Monte Carlo);
- *P(alarm in a cycle)* at 1e-8 to 1e-12 by importance sampling from the defensive mixture of the
  four designs' alternatives (z ~ N(d_k, 1), k uniform): the likelihood ratio of a path is
  1 / mean_k exp(L_k), L_k design k's log-likelihood ratio summed over the cycle (Siegmund 1976's
  tilting for one CUSUM, mixed over the four). Raising every threshold by ln m is one level of
  the union statistic max_k (S_k - h_k(1)), so one set of paths gives P for every m.

Designs whose shift is below the detector's MIN_SHIFT (0.5) are not run and are left out.
The detector takes m_eff from :data:`detect.FAMILY_TESTS` (this script's table, each entry the
upper 97.5% confidence bound's solution rounded up to 0.01, capped at 4).

    .venv/bin/python -m bench.bench_flowpulse_family            # ~2 min; writes bench/results/flowpulse_family.{csv,md}
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from faultsense_pipelines.flowpulse.detect import FALSE_ALARM_RATE, MIN_SHIFT, cusum_threshold

RESULTS = Path(__file__).resolve().parent / "results"
RATIOS = (1.0, 2.0, 4.0, 8.0)  # design losses 0.25%, 0.5%, 1%, 2%: shifts proportional to the loss
LEVELS = np.round(np.arange(1.0, 4.0001, 0.05), 4)  # candidate m (tests sharing the budget)


def family(base: float) -> np.ndarray:
    """Shifts of the designs that run at base shift ``base`` (the 0.25% design's)."""
    d = base * np.asarray(RATIOS)
    return d[d >= MIN_SHIFT]


def cycle_length(deltas: np.ndarray, cycles: int, rng: np.random.Generator, max_rows: int = 100_000) -> tuple[float, float]:
    """Mean and standard error of the regeneration cycle's length under H0 (all statistics back at 0)."""
    s = np.zeros((cycles, deltas.size))
    length = np.zeros(cycles)
    alive = np.ones(cycles, dtype=bool)
    for _ in range(max_rows):
        idx = np.flatnonzero(alive)
        if idx.size == 0:
            break
        z = rng.standard_normal(idx.size)
        s[idx] = np.maximum(0.0, s[idx] + deltas * (z[:, None] - deltas / 2))
        length[idx] += 1
        alive[idx[(s[idx] <= 0).all(axis=1)]] = False
    return float(length.mean()), float(length.std() / math.sqrt(cycles))


def alarm_probability(
    deltas: np.ndarray, offsets: np.ndarray, levels: np.ndarray, paths: int, rng: np.random.Generator, max_rows: int = 20_000
) -> tuple[np.ndarray, np.ndarray]:
    """P(the union of the CUSUMs reaches thresholds offsets + ln m within a cycle), for each m in ``levels``.

    Importance sampling from the uniform mixture of the designs' alternatives; returns the
    estimates and their standard errors, each (len(levels),).
    """
    k = deltas.size
    log_levels = np.log(levels)
    s = np.zeros((paths, k))
    cum = np.zeros((paths, k))
    mu = deltas[rng.integers(k, size=paths)]
    weight = np.zeros((paths, levels.size))
    crossed = np.zeros((paths, levels.size), dtype=bool)
    alive = np.ones(paths, dtype=bool)
    for _ in range(max_rows):
        idx = np.flatnonzero(alive)
        if idx.size == 0:
            break
        z = rng.standard_normal(idx.size) + mu[idx]
        llr = deltas * (z[:, None] - deltas / 2)
        cum[idx] += llr
        s[idx] = np.maximum(0.0, s[idx] + llr)
        top = (s[idx] - offsets).max(axis=1)
        c = cum[idx]
        peak = c.max(axis=1, keepdims=True)
        log_w = -(peak[:, 0] + np.log(np.exp(c - peak).mean(axis=1)))  # dP/dQ = 1 / mean_k exp(L_k)
        new = (top[:, None] >= log_levels) & ~crossed[idx]
        weight[idx] = np.where(new, np.exp(log_w)[:, None], weight[idx])
        crossed[idx] |= new
        alive[idx[(s[idx] <= 0).all(axis=1) | crossed[idx, -1]]] = False
    return weight.mean(axis=0), weight.std(axis=0) / math.sqrt(paths)


def union_rates(
    base: float, rate: float, paths: int, cycles: int, seed: int, levels: np.ndarray = LEVELS
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Union false-alarm rate per row (and its standard error) with thresholds h_k = cusum_threshold(d_k, rate, m).

    Returns ``(deltas, rates, standard errors)``, the last two (len(levels),).
    """
    deltas = family(base)
    rng = np.random.default_rng(seed)
    offsets = np.array([float(cusum_threshold(d, rate, 1)) for d in deltas])
    mean_len, se_len = cycle_length(deltas, cycles, rng)
    p, se = alarm_probability(deltas, offsets, levels, paths, rng)
    r = p / mean_len
    return deltas, r, r * np.sqrt((se / np.maximum(p, 1e-300)) ** 2 + (se_len / mean_len) ** 2)


def solve_m(levels: np.ndarray, rates: np.ndarray, budget: float) -> float:
    """The m at which the union rate falls to ``budget`` (log-linear interpolation; levels[-1] if never)."""
    below = np.flatnonzero(rates <= budget)
    if below.size == 0:
        return float(levels[-1])
    i = int(below[0])
    if i == 0:
        return float(levels[0])
    x0, x1 = math.log(levels[i - 1]), math.log(levels[i])
    y0, y1 = math.log(rates[i - 1]), math.log(rates[i])
    return float(math.exp(x0 + (math.log(budget) - y0) * (x1 - x0) / (y1 - y0)))


BASES = tuple(float(round(2 ** (i / 4), 4)) for i in range(-16, 21))  # 0.0625 .. 32 standard deviations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=40_000, help="importance-sampling paths per base shift")
    parser.add_argument("--cycles", type=int, default=200_000, help="H0 cycles per base shift (cycle length)")
    parser.add_argument("--rate", type=float, default=FALSE_ALARM_RATE)
    args = parser.parse_args()
    t0 = time.perf_counter()
    rows = []
    for i, base in enumerate(BASES):
        deltas, r, se = union_rates(base, args.rate, args.paths, args.cycles, seed=1000 + i)
        bonf = int(np.argmin(np.abs(LEVELS - deltas.size)))
        m_eff = solve_m(LEVELS, r, args.rate)
        m_safe = min(float(deltas.size), math.ceil(solve_m(LEVELS, r + 2 * se, args.rate) * 100) / 100)
        rows.append(
            {
                "base_shift": base,
                "designs_run": deltas.size,
                "shifts": " ".join(f"{d:.3g}" for d in deltas),
                "union_rate_bonferroni": r[bonf],
                "union_rate_bonferroni_se": se[bonf],
                "union_over_budget_bonferroni": r[bonf] / args.rate,
                "m_eff": m_eff,
                "m_eff_safe": m_safe,
                "threshold_saving": math.log(deltas.size / m_safe),
            }
        )
        print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    wall = time.perf_counter() - t0
    RESULTS.mkdir(parents=True, exist_ok=True)
    table.to_csv(RESULTS / "flowpulse_family.csv", index=False)
    md = [
        "# FlowPulse: effective number of tests of the four-CUSUM family",
        "",
        f"`.venv/bin/python -m bench.bench_flowpulse_family --paths {args.paths} --cycles {args.cycles} --rate {args.rate:g}` "
        f"({wall:.0f} s wall on the shared 2-core machine). For each base shift d (the 0.25% design's, standard "
        "deviations an iteration; the family is d, 2d, 4d, 8d, designs below 0.5 not run): the rate of 'any of the "
        "CUSUMs alarms' per row under H0 with the Bonferroni thresholds (m = designs run), over the budget; "
        "`m_eff`: the m at which that union rate equals the budget; `m_eff_safe`: the same for the upper 97.5% "
        "confidence bound, rounded up to 0.01 and capped at the designs run (what `detect.FAMILY_TESTS` holds); "
        "`threshold_saving`: ln(designs / m_eff_safe), what every threshold is lowered by.",
        "",
        table.to_markdown(index=False, floatfmt=".4g"),
        "",
    ]
    (RESULTS / "flowpulse_family.md").write_text("\n".join(md))
    print(f"wrote {RESULTS / 'flowpulse_family.csv'} ({wall:.0f} s)")


if __name__ == "__main__":
    main()
