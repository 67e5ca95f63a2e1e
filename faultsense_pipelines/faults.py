"""Injected gray failures: the one fault model of the simulator, the real executors and the files.

Three kinds, frozen pydantic dataclasses validated once, where they enter (a fleet file, a
scenario file, a caller of an executor), and passed on as objects:

* :class:`GpuFault` ``{gpu: g, slowdown: f}`` -- a slow GPU. The simulator multiplies the
  latency of every probe that runs ``g`` by ``f``; a real ``local`` / ``ray`` worker does
  ``f - 1`` times its usual layer's work more.
* :class:`LinkFault` ``{link: [a, b], slowdown: f}`` -- a slow GPU-to-GPU path, simulated
  only: every probe holding both ends is ``f`` times slower.
* :class:`LinkDelay` ``{link: [a, b], delay_ms: d}`` -- a slow path on the real workers: every
  transfer between ``a`` and ``b`` is posted ``d`` ms late (a probe is slowed by about 2d).

So a simulated replica takes :data:`Fault` s (``simulated.faults``, a scenario's ``faults``)
and the real workers take :data:`Injection` s (``local.inject``, ``ray.inject``);
:data:`FaultSpec` and :data:`InjectionSpec` are the field types that validate them from
plain mappings. GPU ids are checked against the replica by :func:`check_faults`.

A gray failure only slows things down, so ``slowdown >= 1``: a value below 1 (a *faster*
component) is rejected, and ``slowdown == 1`` is accepted as a no-op (a healthy component).
A slowdown above :data:`MAX_SLOWDOWN` (1000x) is rejected too: a component that slow has
failed outright, which is not the gray failure FaultSense localizes, and a huge value
(``1e307``) would only overflow the simulated latency.

>>> parse_faults([{"link": [21, 3], "slowdown": 1.56}], 32)
(LinkFault(link=(3, 21), slowdown=1.56),)
>>> parse_injections([{"gpu": 2, "slowdown": 3.0}, {"link": [5, 0], "delay_ms": 2.0}], 8)
(GpuFault(gpu=2, slowdown=3.0), LinkDelay(link=(0, 5), delay_ms=2.0))
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, field_validator
from pydantic.dataclasses import dataclass

from .topology import Link
from .validation import first_error

__all__ = [
    "MAX_SLOWDOWN",
    "AnyFault",
    "Fault",
    "FaultSpec",
    "GpuFault",
    "Injection",
    "InjectionSpec",
    "LinkDelay",
    "LinkFault",
    "check_faults",
    "parse_fault",
    "parse_faults",
    "parse_injections",
]

#: The largest slowdown a fault may have (a latency multiplier; 1000x is a fail-stop, not gray).
MAX_SLOWDOWN = 1000.0

#: Frozen, no unknown keys, no NaN or infinity (``.nan`` would fail a range check misleadingly).
_CONFIG = ConfigDict(extra="forbid", allow_inf_nan=False)
#: A GPU id: an integer (not ``true``, ``8.0`` or ``"8"``) >= 0; the replica bounds it above.
_GpuId = Annotated[int, Field(strict=True, ge=0)]
#: A number, not a boolean (lax mode would read ``true`` as 1.0).
_Number = Annotated[float, Field(strict=True)]


def _slowdown(v: float) -> float:
    if not math.isfinite(v) or v < 1:
        raise ValueError(f"must be a finite number >= 1 (a gray failure slows down), got {v!r}")
    if v > MAX_SLOWDOWN:
        raise ValueError(f"must be <= {MAX_SLOWDOWN:g} (slower is a fail-stop, not a gray failure), got {v!r}")
    return float(v)


def _sorted_link(v: tuple[int, int]) -> Link:
    a, b = v
    if a == b:
        raise ValueError(f"a link joins two different GPUs, got {list(v)}")
    return (a, b) if a < b else (b, a)


@dataclass(frozen=True, config=_CONFIG)
class GpuFault:
    """A slow GPU (thermal throttling, memory errors, a straggler).

    Attributes:
        gpu: 0-based GPU id.
        slowdown: latency multiplier of every probe that runs the GPU (1..:data:`MAX_SLOWDOWN`;
            1 is a no-op).

    Raises:
        pydantic.ValidationError: (a ``ValueError``) naming the bad field.
    """

    gpu: _GpuId
    slowdown: _Number

    _check_slowdown = field_validator("slowdown")(_slowdown)

    @property
    def gpus(self) -> tuple[int, ...]:
        """The GPU ids the fault names: ``(gpu,)``."""
        return (self.gpu,)

    def touches(self, gpus: frozenset[int] | set[int]) -> bool:
        """True when a probe over ``gpus`` runs this GPU."""
        return self.gpu in gpus

    def to_dict(self) -> dict[str, Any]:
        """The file form, ``{"gpu": g, "slowdown": f}``."""
        return asdict(self)


@dataclass(frozen=True, config=_CONFIG)
class LinkFault:
    """A slow GPU-to-GPU path (degraded PCIe/NVLink, congestion), simulated.

    Attributes:
        link: the path as a pair of different GPU ids, stored sorted.
        slowdown: latency multiplier of every probe that holds both ends (1..:data:`MAX_SLOWDOWN`).

    Raises:
        pydantic.ValidationError: (a ``ValueError``) naming the bad field.
    """

    link: tuple[_GpuId, _GpuId]
    slowdown: _Number

    _check_link = field_validator("link")(_sorted_link)
    _check_slowdown = field_validator("slowdown")(_slowdown)

    @property
    def gpus(self) -> tuple[int, ...]:
        """The GPU ids the fault names: the link's two ends."""
        return self.link

    def touches(self, gpus: frozenset[int] | set[int]) -> bool:
        """True when a probe over ``gpus`` holds both ends of this path."""
        return self.link[0] in gpus and self.link[1] in gpus

    def to_dict(self) -> dict[str, Any]:
        """The file form, ``{"link": [a, b], "slowdown": f}``."""
        return {"link": list(self.link), "slowdown": self.slowdown}


@dataclass(frozen=True, config=_CONFIG)
class LinkDelay:
    """A slow GPU-to-GPU path on the real workers: transfers between the ends wait ``delay_ms`` more.

    Attributes:
        link: the path as a pair of different GPU ids, stored sorted.
        delay_ms: extra wait per transfer, each direction and phase, ms (finite, >= 0).

    Raises:
        pydantic.ValidationError: (a ``ValueError``) naming the bad field.
    """

    link: tuple[_GpuId, _GpuId]
    delay_ms: _Number

    _check_link = field_validator("link")(_sorted_link)

    @field_validator("delay_ms")
    @classmethod
    def _delay(cls, v: float) -> float:
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"must be a finite number >= 0, got {v!r}")
        return float(v)

    @property
    def gpus(self) -> tuple[int, ...]:
        """The GPU ids the fault names: the link's two ends."""
        return self.link

    def to_dict(self) -> dict[str, Any]:
        """The file form, ``{"link": [a, b], "delay_ms": d}``."""
        return {"link": list(self.link), "delay_ms": self.delay_ms}


#: A simulated fault (``simulated.faults``, a scenario's ``faults``).
Fault = GpuFault | LinkFault
#: A fault injected into real ``local`` / ``ray`` workers (``local.inject``, ``ray.inject``).
Injection = GpuFault | LinkDelay
AnyFault = GpuFault | LinkFault | LinkDelay


def _fault_tag(v: object) -> str | None:
    if isinstance(v, GpuFault | LinkFault):
        return "<gpu fault>" if isinstance(v, GpuFault) else "<link fault>"
    if isinstance(v, Mapping) and ("gpu" in v) != ("link" in v):
        return "<gpu fault>" if "gpu" in v else "<link fault>"
    return None


def _injection_tag(v: object) -> str | None:
    if isinstance(v, GpuFault | LinkDelay):
        return "<gpu fault>" if isinstance(v, GpuFault) else "<link delay>"
    if isinstance(v, Mapping):
        keys = set(v)
        if "gpu" in keys and not keys & {"link", "delay_ms"}:
            return "<gpu fault>"
        if "link" in keys and not keys & {"gpu", "slowdown"}:
            return "<link delay>"
    return None


#: Field type of one simulated fault: a :class:`GpuFault` or a :class:`LinkFault` (or a mapping
#: of one); the union tags in error locations are dropped by :func:`~.validation.format_loc`.
FaultSpec = Annotated[
    Annotated[GpuFault, Tag("<gpu fault>")] | Annotated[LinkFault, Tag("<link fault>")],
    Discriminator(_fault_tag, custom_error_type="one_component", custom_error_message="give exactly one of gpu or link"),
]
#: Field type of one real injection: a :class:`GpuFault` or a :class:`LinkDelay` (or a mapping of one).
InjectionSpec = Annotated[
    Annotated[GpuFault, Tag("<gpu fault>")] | Annotated[LinkDelay, Tag("<link delay>")],
    Discriminator(
        _injection_tag,
        custom_error_type="one_injection",
        custom_error_message="give either {gpu, slowdown} or {link: [a, b], delay_ms}",
    ),
]


class _Faults(BaseModel):
    model_config = ConfigDict(frozen=True)
    faults: list[FaultSpec]


class _Injections(BaseModel):
    model_config = ConfigDict(frozen=True)
    inject: list[InjectionSpec]


def check_faults(faults: Iterable[AnyFault], n_gpus: int, field: str = "faults") -> None:
    """Check validated faults against a replica of ``n_gpus`` GPUs.

    Raises:
        ValueError: ``"<field>[i].gpu: GPU id 8 is outside 0..7"`` (or ``.link``) for an
            unknown GPU, ``"<field>[i] repeats gpu 3"`` (``link (2, 5)``) for a GPU or link
            named twice.
    """
    seen: set[tuple[str, object]] = set()
    for i, f in enumerate(faults):
        key = "gpu" if isinstance(f, GpuFault) else "link"
        bad = [g for g in f.gpus if g >= n_gpus]
        if bad:
            raise ValueError(f"{field}[{i}].{key}: GPU id {bad[0]} is outside 0..{n_gpus - 1}")
        target = (key, f.gpu if isinstance(f, GpuFault) else f.link)
        if target in seen:
            raise ValueError(f"{field}[{i}] repeats {target[0]} {target[1]}")
        seen.add(target)


def parse_faults(items: object, n_gpus: int) -> tuple[Fault, ...]:
    """Validate a list of simulated faults (mappings or :data:`Fault` objects) for ``n_gpus`` GPUs.

    Raises:
        ValueError: ``"faults[i].<field>: <problem>"`` for the first bad entry (not an
            object, neither or both of gpu/link, unknown key, unknown GPU id, link to itself,
            missing, NaN, below-1 or above-:data:`MAX_SLOWDOWN` slowdown), or a GPU or link
            listed twice (:func:`check_faults`).
    """
    try:
        faults = tuple(_Faults.model_validate({"faults": items}).faults)
    except ValidationError as exc:
        raise ValueError(first_error(exc)) from None
    check_faults(faults, n_gpus)
    return faults


def parse_fault(item: object, n_gpus: int) -> Fault:
    """One simulated fault: ``parse_faults([item], n_gpus)[0]`` (errors name ``faults[0]``).

    >>> parse_fault({"gpu": 9, "slowdown": 1.8}, 32)
    GpuFault(gpu=9, slowdown=1.8)
    """
    return parse_faults([item], n_gpus)[0]


def parse_injections(items: object, n_gpus: int) -> tuple[Injection, ...]:
    """Validate faults to inject into real workers (mappings or :data:`Injection` objects).

    Raises:
        ValueError: ``"inject[i].<field>: <problem>"`` for the first bad entry, an unknown
            GPU or a repeated target (:func:`check_faults`).
    """
    try:
        injections = tuple(_Injections.model_validate({"inject": items}).inject)
    except ValidationError as exc:
        raise ValueError(first_error(exc)) from None
    check_faults(injections, n_gpus, "inject")
    return injections
