"""The executor sections of a fleet file: how each kind of replica is probed.

A replica of the fleet (:mod:`faultsense_pipelines.fleet`) names its executor and carries
the section of that name:

* ``simulated:`` (:class:`SimulatedOptions`) -- injected faults (:data:`~faultsense_pipelines.replica.faults.Fault`: a GPU
  or a GPU-to-GPU link ``slowdown`` times slower), lognormal noise sigma, seed, healthy latency
  ``base_ms`` (default :data:`~faultsense_pipelines.sim.simulator.DEFAULT_BASE_MS`, 20 ms: the simulator's and a
  scenario's default too);
* ``local:`` (:class:`LocalOptions`) -- real faults (:data:`~faultsense_pipelines.replica.faults.Injection`) injected into
  the local worker processes, the engine mode (``member_only`` or ``all_ranks``:
  :class:`~faultsense_pipelines.replica.vocabulary.Engine`), and the probe layer's sizes and timeouts;
* ``ray:`` (:class:`RayOptions`) -- the Ray cluster address, injected faults, the engine mode
  and tokens per probe;
* ``vllm:`` (:class:`VllmOptions`) -- the probe server's URL, the *name* of the
  environment variable holding its API key, and for a data-parallel deployment the engines
  behind the URL and which engine takes each probe.

Every model is frozen and rejects unknown keys; values are checked here (finite, in range,
no credentials in URLs: :func:`redact_url` keeps secrets out of every error message), faults
by their one model (:mod:`faultsense_pipelines.replica.faults`), and GPU ids against the replica's GPU
count in :mod:`faultsense_pipelines.fleet`.

>>> SimulatedOptions.model_validate({"faults": [{"gpu": 9, "slowdown": 1.8}]}).faults[0].gpu
9
>>> redact_url("https://user:secret@probe.example:8000")
'https://user:***@probe.example:8000'
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..replica.faults import FaultSpec, InjectionSpec
from ..replica.vocabulary import Engine
from ..sim.simulator import DEFAULT_BASE_MS, MAX_NOISE_SIGMA
from ..validation import MAX_MIN_SLOWDOWN, MIN_ERROR_BUDGET, USERINFO, redact_url, shown

__all__ = [
    "Float",
    "Int",
    "LocalOptions",
    "Phase2Options",
    "RayOptions",
    "ScheduleOptions",
    "SimulatedOptions",
    "StrictModel",
    "TopologyOptions",
    "VllmOptions",
    "redact_url",
]

_ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


#: An integer field that takes integers only: not ``true`` (pydantic's lax mode reads it as 1),
#: not ``8.0`` or ``"8"``.
Int = Annotated[int, Field(strict=True)]
#: A number field that takes ints and floats but not booleans (lax mode reads ``true`` as 1.0).
Float = Annotated[float, Field(strict=True)]


class StrictModel(BaseModel):
    """A frozen pydantic model that rejects unknown keys (a typo in a fleet file is an error)
    and NaN or infinite numbers (``.nan`` would otherwise fail a range check misleadingly)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


#: The largest healthy probe latency of a simulated replica, ms (one minute).
MAX_BASE_MS = 60_000.0


class TopologyOptions(StrictModel):
    """``topology:`` of a replica (:class:`~faultsense_pipelines.replica.topology.ReplicaTopology`):
    GPUs per node, consecutive nodes per leaf switch, rail-optimized or not, node names for
    the ledger. With it the ``sequential`` drill-down pairs probes of one shape and claims NICs,
    NVSwitches and switches, and ``simulated.faults`` / ``inject`` may name them."""

    gpus_per_node: Annotated[int, Field(strict=True, ge=1, le=4096)]
    nodes_per_switch: Annotated[int, Field(strict=True, ge=1, le=4096)] | None = None
    rails: Annotated[bool, Field(strict=True)] = False
    node_names: Annotated[list[Annotated[str, Field(min_length=1, max_length=64)]], Field(max_length=4096)] | None = None

    @field_validator("node_names")
    @classmethod
    def _names(cls, v: list[str] | None) -> list[str] | None:
        for name in v or ():
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
                raise ValueError(f"a node name is 1-64 of A-Z, a-z, 0-9, '_', '.' and '-', got {name[:80]!r}")
        return v


#: The largest ``phase2.budget`` (Phase 2 probes of one sweep).
MAX_PHASE2_BUDGET = 10_000_000


class Phase2Options(StrictModel):
    """``phase2:`` of a replica: the sequential drill-down's error budget and probe budget
    (``--drilldown sequential``; docs/verdicts.md). The others ignore it.

    * ``alpha`` in [1e-6, 0.5]: the expected number of healthy components a sweep of this replica
      confirms, at most, whatever the noise (default 0.01);
    * ``budget`` >= 0: Phase 2 probes a sweep spends, at most (default: as many as Phase 1,
      or the fewest that can settle one claim at ``alpha``, whichever is more);
    * ``min_slowdown`` in (1, 100]: the smallest slowdown a verdict claims (default: the
      replica's ``min_slowdown``, the suspect rule's floor, and at least 1.2). A downtrained
      NVLink lane slows its paths ~1.1x: claim it with ``min_slowdown: 1.05`` where the
      replica is quiet enough to measure it.

    Not to be confused with the replica's ``alpha`` and ``min_slowdown``, the suspect rules'.
    """

    alpha: Annotated[Float, Field(ge=MIN_ERROR_BUDGET, le=0.5)] | None = None
    budget: Annotated[Int, Field(ge=0, le=MAX_PHASE2_BUDGET)] | None = None
    min_slowdown: Annotated[Float, Field(gt=1.0, le=MAX_MIN_SLOWDOWN)] | None = None


class ScheduleOptions(StrictModel):
    """``schedules:`` of the fleet file: which sweep schedules start running when the code
    location loads (both off by default: a fleet is swept by ``faultsense sweep`` or from the
    UI until its operator turns them on here, or by hand in the UI).

    ``hourly``: ``hourly_sweep`` (minute 5 of every hour); ``nightly``: ``nightly_deep_sweep``
    (02:30 UTC, more repeats per probe).
    """

    hourly: Annotated[bool, Field(strict=True)] = False
    nightly: Annotated[bool, Field(strict=True)] = False


class SimulatedOptions(StrictModel):
    """``simulated:`` section: injected faults (slowdown 1..1000), lognormal noise sigma
    (0..1), seed, healthy latency (ms, at most a minute; default 20 ms, the simulator's)."""

    faults: list[FaultSpec] = []
    noise_sigma: Annotated[Float, Field(ge=0.0, le=MAX_NOISE_SIGMA)] = 0.02
    seed: Int = 0
    base_ms: Annotated[Float, Field(gt=0.0, le=MAX_BASE_MS)] = DEFAULT_BASE_MS


class LocalOptions(StrictModel):
    """``local:`` section: faults injected into the real local worker processes, the engine
    mode (``member_only``, the default: only a probe's GPUs run it; ``all_ranks``: every worker
    joins every probe's forward, as vLLM expert parallelism does), and optional probe-layer
    sizes and timeouts (defaults: OLMoE-1B-7B's first MoE layer)."""

    inject: list[InjectionSpec] = []
    engine: Engine | None = None
    tokens: Annotated[Int, Field(ge=1)] | None = None
    hidden: Annotated[Int, Field(ge=8)] | None = None
    intermediate: Annotated[Int, Field(ge=8)] | None = None
    dtype: Literal["bfloat16", "float16", "float32"] | None = None
    timeout_s: Annotated[Float, Field(gt=0.0)] | None = None
    start_timeout_s: Annotated[Float, Field(gt=0.0)] | None = None


class RayOptions(StrictModel):
    """``ray:`` section: the Ray cluster address (``auto``, ``ray://host:10001``, or none
    for a local Ray started on demand), optional injected faults, the engine mode (as for
    ``local:``) and tokens per probe."""

    address: str | None = None
    inject: list[InjectionSpec] = []
    engine: Engine | None = None
    tokens: Annotated[Int, Field(ge=1)] | None = None
    use_gpus: Annotated[bool, Field(strict=True)] | None = None


class VllmOptions(StrictModel):
    """``vllm:`` section: the probe server's URL and the *name* of the environment variable
    holding its API key (the key itself never appears in the fleet file).

    A replica served by vLLM data parallelism (``--data-parallel-size D``, one URL, vLLM's
    internal load balancer) sets ``data_parallel_size: D``; every probe request then carries
    ``X-data-parallel-rank`` (:mod:`faultsense_pipelines.probe.executors.vllm_http`), and
    ``dp_rank`` says which engine: ``member`` (default; the engine holding the probe's lowest
    GPU, engine ``d`` holding GPUs ``[d*gpus/D, (d+1)*gpus/D)``) or a fixed engine
    ``0..D-1``. ``D`` must divide the replica's ``gpus`` (checked in
    :mod:`faultsense_pipelines.fleet`). ``check_layout`` asks the server for its engine layout
    (vLLM's ``/server_info``, served with ``VLLM_SERVER_DEV_MODE=1``) and refuses one that does
    not put the probe's experts on ``gpus`` expert-parallel ranks. ``timeout_s`` (one request's
    deadline, s) and ``retries`` left out take the executor's defaults (30 s, 2), as every
    optional field of the executor sections does: one default per option, in the executor.
    """

    url: str
    api_key_env: str | None = None
    model: str | None = None
    timeout_s: Annotated[Float, Field(gt=0.0, le=600.0)] | None = None
    retries: Annotated[Int, Field(ge=0, le=10)] | None = None
    check_routing: Annotated[bool, Field(strict=True)] = False
    data_parallel_size: Annotated[Int, Field(ge=1, le=4096)] | None = None
    dp_rank: Literal["member"] | Annotated[Int, Field(ge=0)] | None = None
    check_layout: Annotated[bool, Field(strict=True)] | None = None

    @field_validator("dp_rank", mode="before")
    @classmethod
    def _engine(cls, v: object) -> object:
        # one message for the two shapes (pydantic's union error names each branch)
        if v is None or v == "member" or (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
            return v
        raise ValueError(f"must be 'member' or an engine number 0..data_parallel_size-1, got {redact_url(repr(v))[:40]}")

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if USERINFO.match(v):
            raise ValueError(
                "credentials in the URL are not allowed; put the key in the environment variable "
                f"named by api_key_env, got {shown(v)}"
            )
        if not re.match(r"^https?://[^\s/:@]+(:\d+)?(/\S*)?$", v):
            raise ValueError(f"must be an http:// or https:// URL, got {shown(v)}")
        return v

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(_ENV_NAME, v):
            # never echo it: a value that is not a variable name may well be the key itself
            raise ValueError(
                f"must be the name of an environment variable (not the key itself), got a {len(v)}-character value (not shown)"
            )
        return v
