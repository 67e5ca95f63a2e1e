"""Hypothesis profiles of the test suite: deterministic by default, fresh seeds on demand.

* ``default`` -- every run draws the same examples (``derandomize=True``: the seed is a hash
  of the test), with no example database (nothing replayed from an earlier run or another
  machine), no deadline and no too-slow health check (both measure wall-clock time, which
  a busy 2-core machine does not keep): a red default tier is a real failure, reproducible
  anywhere.
* ``quick`` -- the default profile with a quarter of each test's examples (at least one):
  deterministic, for ``make test-fast``.
* ``fuzz`` -- fresh random seeds (``derandomize=False``) and :data:`FUZZ_FACTOR` times the
  examples; a failure prints its reproduction blob and is saved in ``.hypothesis/``. Run by
  ``make fuzz``.

Select one with ``HYPOTHESIS_PROFILE=fuzz`` or pytest's ``--hypothesis-profile fuzz``
(Hypothesis's own option; it wins over the variable). ``tests/conftest.py`` imports this
module before any test module, so every ``@settings(...)`` decorator is built on the loaded
profile: it inherits ``derandomize`` and the database unless it overrides them (none does).
Tests that set their own example count wrap it in :func:`examples`.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ["FUZZ_FACTOR", "PROFILE_ENV", "QUICK_DIVISOR", "examples"]

#: The environment variable that selects the profile (``default`` when unset).
PROFILE_ENV = "HYPOTHESIS_PROFILE"
#: How many times more examples the ``fuzz`` profile draws than the default tier.
FUZZ_FACTOR = 5
#: How many times fewer examples the ``quick`` profile draws than the default tier.
QUICK_DIVISOR = 4

_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow], "print_blob": True}
settings.register_profile("default", derandomize=True, database=None, **_COMMON)
settings.register_profile("quick", derandomize=True, database=None, max_examples=100 // QUICK_DIVISOR, **_COMMON)
settings.register_profile("fuzz", derandomize=False, max_examples=100 * FUZZ_FACTOR, **_COMMON)
settings.load_profile(os.environ.get(PROFILE_ENV) or "default")


def examples(n: int) -> int:
    """A test's example count under the loaded profile.

    Args:
        n: the test's example count in the default tier.

    Returns:
        ``n``; ``n`` x :data:`FUZZ_FACTOR` under the ``fuzz`` profile; ``n`` //
        :data:`QUICK_DIVISOR` (at least 1) under the ``quick`` profile.
    """
    profile = settings.get_current_profile_name()
    if profile == "fuzz":
        return n * FUZZ_FACTOR
    if profile == "quick":
        return max(1, n // QUICK_DIVISOR)
    return n
