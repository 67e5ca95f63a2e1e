"""Fault injection for the real executors: a slow GPU and a slow GPU-to-GPU path.

A *gray failure* (FaultSense §1) makes a GPU or a path slower without any error. The
``local`` and ``ray`` executors reproduce the two kinds for demos and tests:

* :class:`GpuSlowdown` — the worker of ``gpu`` does extra real compute (more expert FFN
  work) after its FFN, for ``slowdown - 1`` times its usual time per layer, so its part of
  every probe takes ``slowdown`` times as long (a thermally throttled GPU; the core's fault
  model, where a slow GPU multiplies the latency of the probes that run it).
* :class:`LinkDelay` — every data transfer between GPUs ``a`` and ``b``, in both
  directions, is held back by ``delay_ms`` (a degraded NVLink/PCIe path). A probe's
  all-to-all has two phases (dispatch, combine), so a probe over the link is slowed by
  about ``2 * delay_ms``.

Specs come from fleet files as plain dicts and are validated here, once:

>>> parse_injections([{"gpu": 2, "slowdown": 3.0}, {"link": [5, 0], "delay_ms": 2.0}])
(GpuSlowdown(gpu=2, slowdown=3.0), LinkDelay(link=(0, 5), delay_ms=2.0))
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["GpuSlowdown", "Injection", "LinkDelay", "check_injections", "parse_injection", "parse_injections"]


def _positive_float(name: str, value: Any, minimum: float, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r} in {where}")
    v = float(value)
    if not math.isfinite(v) or v < minimum:
        raise ValueError(f"{name} must be finite and >= {minimum}, got {value!r} in {where}")
    return v


def _gpu_id(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"GPU id must be an integer >= 0, got {value!r} in {where}")
    return value


@dataclass(frozen=True)
class GpuSlowdown:
    """GPU ``gpu`` computes ``slowdown`` times slower (``slowdown >= 1``; 1 means healthy)."""

    gpu: int
    slowdown: float

    def __post_init__(self) -> None:
        _gpu_id(self.gpu, repr(self))
        _positive_float("slowdown", self.slowdown, 1.0, repr(self))

    def to_dict(self) -> dict[str, Any]:
        """The fleet-file form, ``{"gpu": g, "slowdown": f}``."""
        return {"gpu": self.gpu, "slowdown": self.slowdown}


@dataclass(frozen=True)
class LinkDelay:
    """Transfers between ``link[0]`` and ``link[1]`` wait ``delay_ms`` more (each phase)."""

    link: tuple[int, int]
    delay_ms: float

    def __post_init__(self) -> None:
        a, b = self.link
        _gpu_id(a, repr(self))
        _gpu_id(b, repr(self))
        if a >= b:
            raise ValueError(f"link must be two different GPU ids, smaller first, got {self.link!r}")
        _positive_float("delay_ms", self.delay_ms, 0.0, repr(self))

    def to_dict(self) -> dict[str, Any]:
        """The fleet-file form, ``{"link": [a, b], "delay_ms": d}``."""
        return {"link": list(self.link), "delay_ms": self.delay_ms}


Injection = GpuSlowdown | LinkDelay


def parse_injection(spec: Injection | Mapping[str, Any]) -> Injection:
    """Turn one fleet-file spec into an :data:`Injection`.

    Args:
        spec: ``{"gpu": g, "slowdown": f}`` or ``{"link": [a, b], "delay_ms": d}``
            (either order of ``a, b``), or an already-parsed injection.

    Returns:
        A :class:`GpuSlowdown` or :class:`LinkDelay`.

    Raises:
        ValueError: for unknown keys, a missing key, a non-numeric or out-of-range value,
            or a link that joins a GPU to itself.
    """
    if isinstance(spec, (GpuSlowdown, LinkDelay)):
        return spec
    if not isinstance(spec, Mapping):
        raise ValueError(f"an injection must be a mapping, got {spec!r}")
    keys = set(spec)
    if keys == {"gpu", "slowdown"}:
        where = str(dict(spec))
        return GpuSlowdown(_gpu_id(spec["gpu"], where), _positive_float("slowdown", spec["slowdown"], 1.0, where))
    if keys == {"link", "delay_ms"}:
        pair = spec["link"]
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Iterable) or len(list(pair)) != 2:
            raise ValueError(f"link must be a pair of GPU ids, got {pair!r} in {dict(spec)}")
        a, b = (_gpu_id(g, str(dict(spec))) for g in pair)
        if a == b:
            raise ValueError(f"link must join two different GPUs, got {pair!r} in {dict(spec)}")
        delay = _positive_float("delay_ms", spec["delay_ms"], 0.0, str(dict(spec)))
        return LinkDelay((min(a, b), max(a, b)), delay)
    raise ValueError(f"unknown injection {dict(spec)}: expected keys {{'gpu', 'slowdown'}} or {{'link', 'delay_ms'}}")


def parse_injections(specs: Iterable[Injection | Mapping[str, Any]]) -> tuple[Injection, ...]:
    """Parse a list of specs (see :func:`parse_injection`), keeping their order."""
    if isinstance(specs, Mapping):
        raise ValueError(f"injections must be a list of specs, got one mapping {dict(specs)}")
    return tuple(parse_injection(s) for s in specs)


def check_injections(injections: Iterable[Injection], n_gpus: int) -> None:
    """Raise ``ValueError`` if an injection names a GPU outside ``0..n_gpus-1`` or repeats a target."""
    seen: set[object] = set()
    for inj in injections:
        gpus = (inj.gpu,) if isinstance(inj, GpuSlowdown) else inj.link
        for g in gpus:
            if g >= n_gpus:
                raise ValueError(f"injection {inj.to_dict()} names GPU {g}, outside 0..{n_gpus - 1}")
        target = ("gpu", inj.gpu) if isinstance(inj, GpuSlowdown) else ("link", inj.link)
        if target in seen:
            raise ValueError(f"two injections target the same {target[0]} {target[1]}")
        seen.add(target)
