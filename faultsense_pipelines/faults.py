"""Injected gray failures: a slow GPU or a slow GPU-to-GPU path, and how scenarios name them.

A fault multiplies the latency of every probe that runs its component by ``slowdown``; a
probe touches a GPU when the GPU is in it, and a link when both of its ends are.

A gray failure only slows things down, so ``slowdown >= 1``: a value below 1 (a *faster*
component) is rejected, and ``slowdown == 1`` is accepted as a no-op (a healthy component,
the same convention as the real injections of ``probe.executors.injection``). A slowdown
above :data:`MAX_SLOWDOWN` (1000x) is rejected too: a component that slow has failed outright,
which is not the gray failure FaultSense localizes, and a huge value (``1e307``) would only
overflow the simulated latency.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .topology import Link, link

__all__ = ["MAX_SLOWDOWN", "Fault", "GpuFault", "LinkFault", "parse_fault", "parse_faults"]

#: The largest slowdown a fault may have (a latency multiplier; 1000x is a fail-stop, not gray).
MAX_SLOWDOWN = 1000.0


@dataclass(frozen=True)
class GpuFault:
    """A slow GPU (thermal throttling, memory errors, a straggler).

    Attributes:
        gpu: 0-based GPU id.
        slowdown: latency multiplier of every probe that runs the GPU (>= 1; 1 is a no-op).
    """

    gpu: int
    slowdown: float

    def __post_init__(self) -> None:
        _check_slowdown(self.slowdown, f"gpu {self.gpu}")

    def touches(self, gpus: frozenset[int] | set[int]) -> bool:
        """True when a probe over ``gpus`` runs this GPU."""
        return self.gpu in gpus


@dataclass(frozen=True)
class LinkFault:
    """A slow GPU-to-GPU path (degraded PCIe/NVLink, congestion).

    Attributes:
        link: the path as a sorted pair of GPU ids.
        slowdown: latency multiplier of every probe that holds both ends (>= 1).
    """

    link: Link
    slowdown: float

    def __post_init__(self) -> None:
        a, b = self.link
        if a >= b:
            raise ValueError(f"link must be a sorted pair of two different GPUs, got {list(self.link)}")
        _check_slowdown(self.slowdown, f"link {list(self.link)}")

    def touches(self, gpus: frozenset[int] | set[int]) -> bool:
        """True when a probe over ``gpus`` holds both ends of this path."""
        return self.link[0] in gpus and self.link[1] in gpus


Fault = GpuFault | LinkFault


def parse_fault(item: Mapping, n: int, where: str = "faults[0]") -> Fault:
    """Build one fault from ``{"gpu": 9, "slowdown": 1.8}`` or ``{"link": [3, 21], "slowdown": 1.56}``.

    Args:
        item: the scenario's entry.
        n: GPUs in the replica (ids ``0..n-1``).
        where: the entry's position, used in error messages.

    Raises:
        ValueError: naming the bad field (not an object, neither or both of gpu/link, unknown
            GPU id, link to itself, missing, NaN, below-1 or above-MAX_SLOWDOWN slowdown).

    >>> parse_fault({"link": [21, 3], "slowdown": 1.56}, 32)
    LinkFault(link=(3, 21), slowdown=1.56)
    """
    if not isinstance(item, Mapping):
        raise ValueError(f"{where} must be an object with 'gpu' or 'link' and 'slowdown', got {item!r}")
    unknown = set(item) - {"gpu", "link", "slowdown"}
    if unknown:
        raise ValueError(f"{where} has unknown field(s) {sorted(unknown)}")
    if ("gpu" in item) == ("link" in item):
        raise ValueError(f"{where} must have exactly one of 'gpu' or 'link'")
    if "slowdown" not in item:
        raise ValueError(f"{where}.slowdown is missing")
    slowdown = item["slowdown"]
    if isinstance(slowdown, bool) or not isinstance(slowdown, int | float):
        raise ValueError(f"{where}.slowdown must be a number, got {slowdown!r}")
    _check_slowdown(float(slowdown), where)
    if "gpu" in item:
        return GpuFault(_gpu_id(item["gpu"], n, f"{where}.gpu"), float(slowdown))
    ends = item["link"]
    if not isinstance(ends, list | tuple) or len(ends) != 2:
        raise ValueError(f"{where}.link must be a pair of GPU ids, got {ends!r}")
    a, b = (_gpu_id(v, n, f"{where}.link") for v in ends)
    if a == b:
        raise ValueError(f"{where}.link joins GPU {a} to itself")
    return LinkFault(link(a, b), float(slowdown))


def parse_faults(items: Iterable[Mapping], n: int) -> tuple[Fault, ...]:
    """Parse a scenario's ``faults`` list; see :func:`parse_fault`.

    Raises:
        ValueError: naming the bad entry, including a GPU or link listed twice.
    """
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise ValueError(f"faults must be a list, got {items!r}")
    faults: list[Fault] = []
    seen: set[object] = set()
    for i, item in enumerate(items):
        fault = parse_fault(item, n, f"faults[{i}]")
        key = ("gpu", fault.gpu) if isinstance(fault, GpuFault) else ("link", fault.link)
        if key in seen:
            raise ValueError(f"faults[{i}] repeats {key[0]} {key[1]}")
        seen.add(key)
        faults.append(fault)
    return tuple(faults)


def _gpu_id(v: object, n: int, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{where} must be an integer GPU id, got {v!r}")
    if not 0 <= v < n:
        raise ValueError(f"{where} names unknown GPU {v} (the replica has GPUs 0..{n - 1})")
    return v


def _check_slowdown(slowdown: float, where: str) -> None:
    if not math.isfinite(slowdown) or slowdown < 1:
        raise ValueError(f"{where}.slowdown must be a finite number >= 1 (a gray failure slows down), got {slowdown!r}")
    if slowdown > MAX_SLOWDOWN:
        raise ValueError(
            f"{where}.slowdown must be <= {MAX_SLOWDOWN:g} (slower is a fail-stop, not a gray failure), got {slowdown!r}"
        )
