"""A simulation scenario: replica size, probe size, injected faults, noise and seed.

The JSON form read by ``faultsense simulate --scenario FILE``::

    {"gpus": 32, "probe_size": 4,
     "faults": [{"gpu": 9, "slowdown": 1.8}, {"link": [3, 21], "slowdown": 1.56}],
     "noise": {"sigma": 0.02}, "seed": 7}

``noise``, ``seed`` and ``repeats`` are optional (noise-free, seed 0, one measurement per
probe; ``repeats`` is what ``faultsense simulate`` uses unless ``--repeats`` is given, so a
scenario that needs several measurements per probe to settle says so itself). ``noise`` is ``{"sigma": s}``, any
fields of :class:`~faultsense_pipelines.sim.latency.NoiseModel` (heavy tails, stalls, drift,
load bursts, spillover) or ``"production"``. An optional ``topology``
(``{"gpus_per_node": 8, "nodes_per_switch": 4, "rails": false, "node_names": [...]}``, the
fleet file's) places the GPUs on nodes, so that faults may name shared components:
``{"nic": 3, "slowdown": 1.5}``, ``{"nic": [3, 5], ...}`` (node 3, rail 5), ``{"nvswitch": 3,
...}``, ``{"switch": 1, ...}``. Faults are validated by their one
model (:func:`~faultsense_pipelines.replica.faults.parse_faults`, the fleet file's too), and the healthy
probe latency is the simulator's default, :data:`~faultsense_pipelines.sim.simulator.DEFAULT_BASE_MS`
(20 ms, as a fleet file's ``simulated.base_ms``). Bounds: ``0 <= noise.sigma <= 1``
(:data:`~faultsense_pipelines.sim.simulator.MAX_NOISE_SIGMA`, the fleet file's cap) and
``1 <= slowdown <= 1000`` (:data:`~faultsense_pipelines.replica.faults.MAX_SLOWDOWN`), so that no
simulated latency can overflow, and ``0 <= seed <= 2^32 - 1`` (:data:`MAX_SEED`, the fleet
file's ``simulated.seed`` bound). Errors show a bad value cut to 80 characters
(:func:`~faultsense_pipelines.validation.shown`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..cover import validate_cover_args
from ..replica.faults import Fault, parse_faults
from ..replica.topology import ReplicaTopology
from ..validation import MAX_MIN_SLOWDOWN, MAX_REPEATS, MIN_ERROR_BUDGET, shown
from ..validation import MAX_SEED as _MAX_SEED
from .latency import NoiseModel, parse_noise
from .simulator import DEFAULT_BASE_MS, MAX_NOISE_SIGMA, SimulatedReplica

__all__ = ["MAX_SCENARIO_BYTES", "MAX_SEED", "Scenario", "parse_scenario"]

#: The largest scenario file read (bytes): a scenario with thousands of faults is well under it.
MAX_SCENARIO_BYTES = 1024 * 1024

#: The largest seed (32 bits unsigned), as the fleet file's ``simulated.seed``
#: (:data:`faultsense_pipelines.validation.MAX_SEED`, re-exported).
MAX_SEED = _MAX_SEED

_FIELDS = {"gpus", "probe_size", "faults", "noise", "seed", "topology", "repeats", "alpha", "min_slowdown", "phase2_budget"}
_TOPOLOGY_FIELDS = {"gpus_per_node", "nodes_per_switch", "rails", "node_names"}


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
        noise: the production-like effects, where the JSON gives more than ``sigma``.
        topology: where the GPUs sit (``None``: GPUs and links only).
        repeats: measurements per probe (the median is used), 1..100.
        alpha: ``--drilldown sequential``: expected healthy components confirmed per sweep,
            at most, in [1e-6, 0.5]; ``None``: the default (docs/verdicts.md).
        min_slowdown: ``--drilldown sequential``: smallest slowdown a verdict claims, in
            (1, 100]; ``None``: the default.
        phase2_budget: ``--drilldown sequential``: Phase 2 probes, at most (>= 0); ``None``:
            the default.
    """

    n_gpus: int
    probe_size: int
    faults: tuple[Fault, ...]
    noise_sigma: float = 0.0
    seed: int = 0
    base_ms: float = DEFAULT_BASE_MS
    noise: NoiseModel | None = None
    topology: ReplicaTopology | None = None
    repeats: int = 1
    alpha: float | None = None
    min_slowdown: float | None = None
    phase2_budget: int | None = None

    def replica(self) -> SimulatedReplica:
        """The simulated replica (``simulated`` executor) of this scenario."""
        return SimulatedReplica(
            self.n_gpus, self.faults, self.noise_sigma, self.seed, self.base_ms, topology=self.topology, noise=self.noise
        )


def parse_scenario(obj: object) -> Scenario:
    """Validate a decoded JSON scenario.

    Raises:
        ValueError: naming the bad field (missing, unknown, wrong type, k > n, unknown GPU
            id, slowdown outside [1, 1000], sigma outside [0, 1], seed outside 0..2^32-1,
            repeats outside 1..100, ...).

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
    if k == n:  # as the fleet file: one probe of every GPU has nothing to be compared with
        raise ValueError(
            f"probe_size must be < gpus (got {k} = gpus): a cover of one probe holding every GPU cannot be judged "
            "(a probe is slow only relative to the others)"
        )
    topology = _topology(obj["topology"], n) if "topology" in obj else None
    faults = parse_faults(obj["faults"], n, topology)
    sigma, noise = 0.0, None
    if "noise" in obj:
        if isinstance(obj["noise"], Mapping) and set(obj["noise"]) <= {"sigma"}:
            sigma = obj["noise"].get("sigma", 0.0)
            if (
                isinstance(sigma, bool)
                or not isinstance(sigma, int | float)
                or not math.isfinite(sigma)
                or not 0 <= sigma <= MAX_NOISE_SIGMA
            ):
                raise ValueError(f"noise.sigma must be a finite number in [0, {MAX_NOISE_SIGMA:g}], got {shown(sigma)}")
        else:
            noise = parse_noise(obj["noise"])
            sigma = noise.sigma
    seed = _int(obj.get("seed", 0), "seed", 0, MAX_SEED)
    repeats = _int(obj.get("repeats", 1), "repeats", 1, MAX_REPEATS)
    if noise is not None and noise.node_gap and (topology is None or topology.gpus_per_node is None):
        raise ValueError("noise.node_gap needs a topology with gpus_per_node (the nodes a probe spans)")
    alpha = None
    if "alpha" in obj:
        v = obj["alpha"]
        if isinstance(v, bool) or not isinstance(v, int | float) or not (math.isfinite(v) and MIN_ERROR_BUDGET <= v <= 0.5):
            raise ValueError(f"alpha must be a finite number in [{MIN_ERROR_BUDGET:g}, 0.5], got {shown(v)}")
        alpha = float(v)
    min_slowdown = _number(obj["min_slowdown"], "min_slowdown", 1.0, MAX_MIN_SLOWDOWN) if "min_slowdown" in obj else None
    budget = _int(obj["phase2_budget"], "phase2_budget", 0, 10_000_000) if "phase2_budget" in obj else None
    return Scenario(
        n,
        k,
        faults,
        float(sigma),
        seed,
        noise=noise,
        topology=topology,
        repeats=repeats,
        alpha=alpha,
        min_slowdown=min_slowdown,
        phase2_budget=budget,
    )


def _number(v: object, name: str, above: float, most: float) -> float:
    """A finite number in ``(above, most]``, else one line naming the field."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or not above < v <= most:
        raise ValueError(f"{name} must be a finite number in ({above:g}, {most:g}], got {shown(v)}")
    return float(v)


def _topology(obj: object, n: int) -> ReplicaTopology:
    """The scenario's ``topology`` object (the fleet file's fields).

    Raises:
        ValueError: ``topology.<field>: ...`` for an unknown field, a wrong type or a layout
            that does not fit the replica.
    """
    if not isinstance(obj, Mapping):
        raise ValueError(f'topology must be an object like {{"gpus_per_node": 8}}, got {shown(obj)}')
    unknown = sorted(str(key) for key in obj if key not in _TOPOLOGY_FIELDS)
    if unknown:
        raise ValueError(f"topology has unknown field(s) {shown(unknown)}; known: {', '.join(sorted(_TOPOLOGY_FIELDS))}")
    if "gpus_per_node" not in obj:
        raise ValueError("topology.gpus_per_node is missing")
    per_node = _int(obj["gpus_per_node"], "topology.gpus_per_node", 1, n)
    per_switch = None if obj.get("nodes_per_switch") is None else _int(obj["nodes_per_switch"], "topology.nodes_per_switch", 1, n)
    rails = obj.get("rails", False)
    if not isinstance(rails, bool):
        raise ValueError(f"topology.rails must be true or false, got {shown(rails)}")
    names = obj.get("node_names")
    if names is not None and (not isinstance(names, list) or not all(isinstance(x, str) and 0 < len(x) <= 64 for x in names)):
        raise ValueError(f"topology.node_names must be a list of names (1-64 characters), got {shown(names)}")
    return ReplicaTopology(n, per_node, per_switch, rails, None if names is None else tuple(names))


def _int(v: object, name: str, minimum: int, maximum: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum or (maximum is not None and v > maximum):
        bounds = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        raise ValueError(f"{name} must be an integer {bounds}, got {shown(v)}")
    return v
