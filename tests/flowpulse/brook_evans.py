"""The CUSUM's mean run length by Brook & Evans' Markov chain: the tests' independent yardstick.

Brook, D. and Evans, D. A. (1972), "An approach to the probability distribution of CUSUM run
length", Biometrika 59(3). The chain discretizes the CUSUM's state on [0, h) into ``bins``
cells plus the reflecting state 0; the mean run length from 0 solves (I - Q) L = 1.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm


def cusum_arl(mu: float, sd: float, h: float, bins: int = 200) -> float:
    """Mean run length (rows) to threshold ``h`` of the CUSUM S = max(0, S + X), X ~ N(mu, sd^2)."""
    width = h / bins
    points = np.concatenate([[0.0], (np.arange(bins) + 0.5) * width])
    cdf = norm.cdf((np.arange(bins + 1)[None, :] * width - points[:, None] - mu) / sd)
    q = np.zeros((bins + 1, bins + 1))
    q[:, 0] = cdf[:, 0]
    q[:, 1:] = np.diff(cdf, axis=1)
    return float(np.linalg.solve(np.eye(bins + 1) - q, np.ones(bins + 1))[0])
