"""The executor sections of a fleet file: how each kind of replica is probed.

A replica of the fleet (:mod:`faultsense_pipelines.fleet`) names its executor and carries
the section of that name:

* ``simulated:`` (:class:`SimulatedOptions`) -- injected :class:`SimulatedFault` s (a GPU or
  a GPU-to-GPU link ``slowdown`` times slower), lognormal noise sigma, seed, healthy latency;
* ``local:`` (:class:`LocalOptions`) -- real faults (:class:`Injection`) injected into the
  local worker processes, and the probe layer's sizes and timeouts;
* ``ray:`` (:class:`RayOptions`) -- the Ray cluster address and injected faults;
* ``vllm:`` (:class:`VllmOptions`) -- the probe server's URL and the *name* of the
  environment variable holding its API key.

Every model is frozen and rejects unknown keys; values are checked here (finite, in range,
no credentials in URLs: :func:`redact_url` keeps secrets out of every error message), GPU
ids against the replica's GPU count in :mod:`faultsense_pipelines.fleet`.

>>> SimulatedOptions.model_validate({"faults": [{"gpu": 9, "slowdown": 1.8}]}).faults[0].gpu
9
>>> redact_url("https://user:secret@probe.example:8000")
'https://user:***@probe.example:8000'
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .faults import MAX_SLOWDOWN
from .simulator import MAX_NOISE_SIGMA

__all__ = [
    "Float",
    "Injection",
    "Int",
    "LocalOptions",
    "RayOptions",
    "SimulatedFault",
    "SimulatedOptions",
    "StrictModel",
    "VllmOptions",
    "redact_url",
]

_ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
#: ``scheme://user:password@`` (or ``user@``) at the start of a URL: what :func:`redact_url` hides.
_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)([^/@\s]*)@")


def redact_url(v: str) -> str:
    """``v`` with the password of a ``scheme://user:password@host`` URL replaced by ``***`` (a
    lone ``scheme://token@host`` user part too: it is often a token), so that no fleet error
    message can echo a secret."""
    m = _USERINFO.match(v)
    if not m:
        return v
    user, colon, _ = m.group(2).partition(":")
    return f"{m.group(1)}{user + ':***' if colon else '***'}@{v[m.end() :]}"


#: An integer field that takes integers only: not ``true`` (pydantic's lax mode reads it as 1),
#: not ``8.0`` or ``"8"``.
Int = Annotated[int, Field(strict=True)]
#: A number field that takes ints and floats but not booleans (lax mode reads ``true`` as 1.0).
Float = Annotated[float, Field(strict=True)]


class StrictModel(BaseModel):
    """A frozen pydantic model that rejects unknown keys (a typo in a fleet file is an error)
    and NaN or infinite numbers (``.nan`` would otherwise fail a range check misleadingly)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _finite(v: float, minimum: float, inclusive: bool = True) -> float:
    ok = math.isfinite(v) and (v >= minimum if inclusive else v > minimum)
    if not ok:
        raise ValueError(f"must be a finite number {'>=' if inclusive else '>'} {minimum}, got {v!r}")
    return v


def _link(v: tuple[int, int] | None) -> tuple[int, int] | None:
    if v is not None and v[0] == v[1]:
        raise ValueError(f"a link joins two different GPUs, got {list(v)}")
    return v


class SimulatedFault(StrictModel):
    """A simulated fault: GPU ``gpu`` or path ``link`` is ``slowdown`` times slower (>= 1; 1 is a
    no-op, below 1 would be a faster component, not a gray failure)."""

    gpu: Annotated[Int, Field(ge=0)] | None = None
    link: tuple[Annotated[Int, Field(ge=0)], Annotated[Int, Field(ge=0)]] | None = None
    slowdown: Float

    _check_link = field_validator("link")(_link)

    @field_validator("slowdown")
    @classmethod
    def _slowdown(cls, v: float) -> float:
        if _finite(v, 1) > MAX_SLOWDOWN:
            raise ValueError(f"must be <= {MAX_SLOWDOWN:g} (slower is a fail-stop, not a gray failure), got {v!r}")
        return v

    @model_validator(mode="after")
    def _one_component(self) -> SimulatedFault:
        if (self.gpu is None) == (self.link is None):
            raise ValueError("give exactly one of gpu or link")
        return self


class Injection(StrictModel):
    """A real fault injected into ``local`` / ``ray`` workers: ``{gpu, slowdown >= 1}`` (extra
    compute on that GPU's worker) or ``{link: [a, b], delay_ms >= 0}`` (delay on that path)."""

    gpu: Annotated[Int, Field(ge=0)] | None = None
    slowdown: Float | None = None
    link: tuple[Annotated[Int, Field(ge=0)], Annotated[Int, Field(ge=0)]] | None = None
    delay_ms: Float | None = None

    _check_link = field_validator("link")(_link)

    @field_validator("slowdown")
    @classmethod
    def _slowdown(cls, v: float | None) -> float | None:
        return None if v is None else _finite(v, 1.0)

    @field_validator("delay_ms")
    @classmethod
    def _delay(cls, v: float | None) -> float | None:
        return None if v is None else _finite(v, 0.0)

    @model_validator(mode="after")
    def _one_kind(self) -> Injection:
        if self.gpu is not None and self.slowdown is not None and self.link is None and self.delay_ms is None:
            return self
        if self.link is not None and self.delay_ms is not None and self.gpu is None and self.slowdown is None:
            return self
        raise ValueError("give either {gpu, slowdown} or {link: [a, b], delay_ms}")

    def to_dict(self) -> dict[str, Any]:
        """The executor's injection spec, e.g. ``{"gpu": 2, "slowdown": 3.0}``."""
        return self.model_dump(exclude_none=True, mode="json")


#: The largest healthy probe latency of a simulated replica, ms (one minute).
MAX_BASE_MS = 60_000.0


class SimulatedOptions(StrictModel):
    """``simulated:`` section: injected faults (slowdown 1..1000), lognormal noise sigma
    (0..1), seed, healthy latency (ms, at most a minute)."""

    faults: list[SimulatedFault] = []
    noise_sigma: Annotated[Float, Field(ge=0.0, le=MAX_NOISE_SIGMA)] = 0.02
    seed: Int = 0
    base_ms: Annotated[Float, Field(gt=0.0, le=MAX_BASE_MS)] = 10.0


class LocalOptions(StrictModel):
    """``local:`` section: faults injected into the real local worker processes, and
    optional probe-layer sizes and timeouts (defaults: OLMoE-1B-7B's first MoE layer)."""

    inject: list[Injection] = []
    tokens: Annotated[Int, Field(ge=1)] | None = None
    hidden: Annotated[Int, Field(ge=8)] | None = None
    intermediate: Annotated[Int, Field(ge=8)] | None = None
    dtype: Literal["bfloat16", "float16", "float32"] | None = None
    timeout_s: Annotated[Float, Field(gt=0.0)] | None = None
    start_timeout_s: Annotated[Float, Field(gt=0.0)] | None = None


class RayOptions(StrictModel):
    """``ray:`` section: the Ray cluster address (``auto``, ``ray://host:10001``, or none
    for a local Ray started on demand) and optional injected faults."""

    address: str | None = None
    inject: list[Injection] = []
    use_gpus: Annotated[bool, Field(strict=True)] | None = None


class VllmOptions(StrictModel):
    """``vllm:`` section: the probe server's URL and the *name* of the environment variable
    holding its API key (the key itself never appears in the fleet file)."""

    url: str
    api_key_env: str | None = None
    model: str | None = None
    timeout_s: Annotated[Float, Field(gt=0.0, le=600.0)] = 10.0
    retries: Annotated[Int, Field(ge=0, le=10)] = 2
    check_routing: Annotated[bool, Field(strict=True)] = False

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if _USERINFO.match(v):
            raise ValueError(
                "credentials in the URL are not allowed; put the key in the environment variable "
                f"named by api_key_env, got {redact_url(v)!r}"
            )
        if not re.match(r"^https?://[^\s/:@]+(:\d+)?(/\S*)?$", v):
            raise ValueError(f"must be an http:// or https:// URL, got {redact_url(v)!r}")
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
