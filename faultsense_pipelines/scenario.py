"""A simulation scenario: replica size, probe size, injected faults, noise and seed.

The JSON form read by ``faultsense simulate --scenario FILE``::

    {"gpus": 32, "probe_size": 4,
     "faults": [{"gpu": 9, "slowdown": 1.8}, {"link": [3, 21], "slowdown": 1.56}],
     "noise": {"sigma": 0.02}, "seed": 7}

``noise`` and ``seed`` are optional (noise-free, seed 0). Faults are validated by their one
model (:func:`~faultsense_pipelines.faults.parse_faults`, the fleet file's too), and the healthy
probe latency is the simulator's default, :data:`~faultsense_pipelines.simulator.DEFAULT_BASE_MS`
(20 ms, as a fleet file's ``simulated.base_ms``). Bounds: ``0 <= noise.sigma <= 1``
(:data:`~faultsense_pipelines.simulator.MAX_NOISE_SIGMA`, the fleet file's cap) and
``1 <= slowdown <= 1000`` (:data:`~faultsense_pipelines.faults.MAX_SLOWDOWN`), so that no
simulated latency can overflow, and ``0 <= seed <= 2^32 - 1`` (:data:`MAX_SEED`, the fleet
file's ``simulated.seed`` bound). Errors show a bad value cut to 80 characters
(:func:`~faultsense_pipelines.validation.shown`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from .cover import validate_cover_args
from .faults import Fault, parse_faults
from .simulator import DEFAULT_BASE_MS, MAX_NOISE_SIGMA, SimulatedReplica
from .validation import shown

__all__ = ["MAX_SCENARIO_BYTES", "MAX_SEED", "Scenario", "parse_scenario"]

#: The largest scenario file read (bytes): a scenario with thousands of faults is well under it.
MAX_SCENARIO_BYTES = 1024 * 1024

#: The largest seed (32 bits unsigned), as the fleet file's ``simulated.seed``.
MAX_SEED = 2**32 - 1

_FIELDS = {"gpus", "probe_size", "faults", "noise", "seed"}


@dataclass(frozen=True)
class Scenario:
    """A validated scenario (see the module docstring for the JSON form).

    Attributes:
        n_gpus: GPUs in the replica (the JSON's ``gpus``).
        probe_size: k.
        faults: the injected faults, validated.
        noise_sigma: lognormal noise sigma per repeat.
        seed: seed of the noise.
        base_ms: healthy probe latency, ms (not in the JSON: the simulator's default).
    """

    n_gpus: int
    probe_size: int
    faults: tuple[Fault, ...]
    noise_sigma: float = 0.0
    seed: int = 0
    base_ms: float = DEFAULT_BASE_MS

    def replica(self) -> SimulatedReplica:
        """The simulated replica (``simulated`` executor) of this scenario."""
        return SimulatedReplica(self.n_gpus, self.faults, self.noise_sigma, self.seed, self.base_ms)


def parse_scenario(obj: object) -> Scenario:
    """Validate a decoded JSON scenario.

    Raises:
        ValueError: naming the bad field (missing, unknown, wrong type, k > n, unknown GPU
            id, slowdown outside [1, 1000], sigma outside [0, 1], seed outside 0..2^32-1, ...).

    >>> parse_scenario({"gpus": 8, "probe_size": 4, "faults": [{"link": [4, 3], "slowdown": 2.0}]}).faults
    (LinkFault(link=(3, 4), slowdown=2.0),)
    """
    if not isinstance(obj, Mapping):
        raise ValueError(f"scenario must be a JSON object, got {type(obj).__name__}")
    unknown = set(obj) - _FIELDS
    if unknown:
        raise ValueError(f"scenario has unknown field(s) {shown(sorted(map(str, unknown)))}")
    for name in ("gpus", "probe_size", "faults"):
        if name not in obj:
            raise ValueError(f"scenario field {name!r} is missing")
    n, k = _int(obj["gpus"], "gpus", 2), _int(obj["probe_size"], "probe_size", 2)
    validate_cover_args(n, k, "best")
    faults = parse_faults(obj["faults"], n)
    sigma = 0.0
    if "noise" in obj:
        noise = obj["noise"]
        if not isinstance(noise, Mapping) or set(noise) - {"sigma"}:
            raise ValueError(f'noise must be an object like {{"sigma": 0.02}}, got {shown(noise)}')
        sigma = noise.get("sigma", 0.0)
        if (
            isinstance(sigma, bool)
            or not isinstance(sigma, int | float)
            or not math.isfinite(sigma)
            or not 0 <= sigma <= MAX_NOISE_SIGMA
        ):
            raise ValueError(f"noise.sigma must be a finite number in [0, {MAX_NOISE_SIGMA:g}], got {shown(sigma)}")
    seed = _int(obj.get("seed", 0), "seed", 0, MAX_SEED)
    return Scenario(n, k, faults, float(sigma), seed)


def _int(v: object, name: str, minimum: int, maximum: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum or (maximum is not None and v > maximum):
        bounds = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        raise ValueError(f"{name} must be an integer {bounds}, got {shown(v)}")
    return v
