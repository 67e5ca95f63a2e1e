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

* :class:`SharedFault` ``{nic: v, slowdown: f}`` (``{nic: [v, r], ...}``: node v, rail r),
  ``{nvswitch: v, ...}`` or ``{switch: s, ...}`` (built by :func:`NicFault`,
  :func:`NvSwitchFault`, :func:`SwitchFault`) -- a slow shared component (:class:`~faultsense_pipelines.replica.topology.ReplicaTopology`): every probe
  holding one of the paths it carries is ``f`` times slower (simulated), or, with ``delay_ms``
  instead of ``slowdown``, every transfer on those paths is posted ``d`` ms late (real workers).

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
from typing import Annotated, Any, cast

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, field_validator
from pydantic.dataclasses import dataclass
from pydantic_core import PydanticCustomError

from ..validation import first_error, shown
from .topology import Component, Link, ReplicaTopology, gpu_component, link_component

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
    "NicFault",
    "NvSwitchFault",
    "SharedFault",
    "SwitchFault",
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


def _duty(v: float) -> float:
    if not math.isfinite(v) or not 0.0 < v <= 1.0:
        raise ValueError(f"must be in (0, 1] (the share of measurements in which the fault is active), got {v!r}")
    return float(v)


def _with_duty(text: str, duty: float) -> str:
    """``text`` (a repr or file form ending in ``)``) with ``, duty=d`` when the fault is intermittent."""
    return text if duty == 1.0 else f"{text[:-1]}, duty={duty!r})"


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
        duty: share of measurements in which the fault is active, in (0, 1] (default 1: always
            on); below 1 it comes and goes in runs (:mod:`~faultsense_pipelines.sim.latency`).
            Simulated only: the real workers refuse it (:func:`check_faults`).

    Raises:
        pydantic.ValidationError: (a ``ValueError``) naming the bad field.
    """

    gpu: _GpuId
    slowdown: _Number
    duty: _Number = 1.0

    _check_slowdown = field_validator("slowdown")(_slowdown)
    _check_duty = field_validator("duty")(_duty)

    def __repr__(self) -> str:
        return _with_duty(f"GpuFault(gpu={self.gpu!r}, slowdown={self.slowdown!r})", self.duty)

    @property
    def gpus(self) -> tuple[int, ...]:
        """The GPU ids the fault names: ``(gpu,)``."""
        return (self.gpu,)

    def touches(self, gpus: frozenset[int] | set[int]) -> bool:
        """True when a probe over ``gpus`` runs this GPU."""
        return self.gpu in gpus

    def component(self, topology: ReplicaTopology | None = None) -> Component:
        """The :class:`~faultsense_pipelines.replica.topology.Component` it slows."""
        return gpu_component(self.gpu)

    def to_dict(self) -> dict[str, Any]:
        """The file form, ``{"gpu": g, "slowdown": f}`` (and ``"duty"`` when below 1)."""
        form = asdict(self)
        if self.duty == 1.0:
            del form["duty"]
        return form


@dataclass(frozen=True, config=_CONFIG)
class LinkFault:
    """A slow GPU-to-GPU path (degraded PCIe/NVLink, congestion), simulated.

    Attributes:
        link: the path as a pair of different GPU ids, stored sorted.
        slowdown: latency multiplier of every probe that holds both ends (1..:data:`MAX_SLOWDOWN`).
        duty: share of measurements in which the fault is active, in (0, 1] (default 1).

    Raises:
        pydantic.ValidationError: (a ``ValueError``) naming the bad field.
    """

    link: tuple[_GpuId, _GpuId]
    slowdown: _Number
    duty: _Number = 1.0

    _check_link = field_validator("link")(_sorted_link)
    _check_slowdown = field_validator("slowdown")(_slowdown)
    _check_duty = field_validator("duty")(_duty)

    def __repr__(self) -> str:
        return _with_duty(f"LinkFault(link={self.link!r}, slowdown={self.slowdown!r})", self.duty)

    @property
    def gpus(self) -> tuple[int, ...]:
        """The GPU ids the fault names: the link's two ends."""
        return self.link

    def touches(self, gpus: frozenset[int] | set[int]) -> bool:
        """True when a probe over ``gpus`` holds both ends of this path."""
        return self.link[0] in gpus and self.link[1] in gpus

    def component(self, topology: ReplicaTopology | None = None) -> Component:
        """The :class:`~faultsense_pipelines.replica.topology.Component` it slows."""
        return link_component(*self.link)

    def to_dict(self) -> dict[str, Any]:
        """The file form, ``{"link": [a, b], "slowdown": f}`` (and ``"duty"`` when below 1)."""
        form: dict[str, Any] = {"link": list(self.link), "slowdown": self.slowdown}
        return form if self.duty == 1.0 else {**form, "duty": self.duty}


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

    def component(self, topology: ReplicaTopology | None = None) -> Component:
        """The :class:`~faultsense_pipelines.replica.topology.Component` it slows."""
        return link_component(*self.link)

    def to_dict(self) -> dict[str, Any]:
        """The file form, ``{"link": [a, b], "delay_ms": d}``."""
        return {"link": list(self.link), "delay_ms": self.delay_ms}


def _delay_ms(v: float | None) -> float | None:
    if v is not None and (not math.isfinite(v) or v < 0):
        raise ValueError(f"must be a finite number >= 0, got {v!r}")
    return None if v is None else float(v)


def _optional_slowdown(v: float | None) -> float | None:
    return None if v is None else _slowdown(v)


def _need(topology: ReplicaTopology | None, what: str) -> ReplicaTopology:
    if topology is None or topology.gpus_per_node is None:
        raise ValueError(f"a {what} fault needs the replica's topology (topology.gpus_per_node)")
    return topology


def _node_or_rail(v: object) -> object:
    """A NIC's id: a node id >= 0, or ``[node, rail]`` (stored as a tuple)."""

    def node_id(x: object) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and x >= 0

    if node_id(v) or (isinstance(v, list | tuple) and len(v) == 2 and all(node_id(x) for x in v)):
        return tuple(v) if isinstance(v, list | tuple) else v
    raise ValueError(f"must be a node id >= 0 or [node, rail] of two, got {shown(v)}")


def _given(v: object) -> object:
    """An NVSwitch's or switch's id given as ``null`` is refused as the integer it is not
    (a key left out is no component)."""
    if v is None:
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return v


#: The shared-component kinds, in the order a :class:`SharedFault` names them, with the name
#: its repr shows (the constructors :func:`NicFault`, :func:`NvSwitchFault`, :func:`SwitchFault`).
_SHARED_NAMES = {"nic": "NicFault", "nvswitch": "NvSwitchFault", "switch": "SwitchFault"}


@dataclass(frozen=True, config=_CONFIG)
class SharedFault:
    """A slow shared component: a NIC, an NVSwitch (or a node's PCIe switch) or a leaf or rail
    switch. Exactly one of ``nic``, ``nvswitch`` and ``switch`` names it; build one with
    :func:`NicFault`, :func:`NvSwitchFault` or :func:`SwitchFault`.

    Attributes:
        nic: a NIC: the node, or ``(node, rail)`` on a rail-optimized topology (renegotiated
            to a lower speed, flapping, a bad cable); it carries the paths from its GPUs to
            another node.
        nvswitch: a node's NVSwitch (or PCIe switch): it carries the paths between two GPUs
            of the node.
        switch: a leaf or rail switch (``ReplicaTopology.switch``; a bad port, degraded): it
            carries the inter-node paths with an end under it.
        slowdown: latency multiplier of every probe holding a path it carries (simulated;
            1..:data:`MAX_SLOWDOWN`).
        delay_ms: extra wait per transfer on those paths, ms (real ``local`` / ``ray`` workers).
        duty: share of measurements in which the fault is active, in (0, 1] (default 1;
            simulated only).

    Raises:
        pydantic.ValidationError: (a ``ValueError``) naming the bad field; none or two of
            ``nic``, ``nvswitch``, ``switch``, or not exactly one of ``slowdown`` and ``delay_ms``.
    """

    nic: _GpuId | tuple[_GpuId, _GpuId] | None = None
    nvswitch: _GpuId | None = None
    switch: _GpuId | None = None
    slowdown: _Number | None = None
    delay_ms: _Number | None = None
    duty: _Number = 1.0

    _check_nic = field_validator("nic", mode="before")(_node_or_rail)
    _check_given = field_validator("nvswitch", "switch", mode="before")(_given)
    _check_slowdown = field_validator("slowdown")(_optional_slowdown)
    _check_delay = field_validator("delay_ms")(_delay_ms)
    _check_duty = field_validator("duty")(_duty)

    def __post_init__(self) -> None:
        if sum(getattr(self, key) is not None for key in _SHARED_NAMES) != 1:
            raise ValueError("give exactly one of nic, nvswitch or switch")
        if (self.slowdown is None) == (self.delay_ms is None):
            raise ValueError("give exactly one of slowdown (simulated) or delay_ms (real workers)")

    @property
    def kind(self) -> str:
        """``"nic"``, ``"nvswitch"`` or ``"switch"``: the key of its file form."""
        return next(key for key in _SHARED_NAMES if getattr(self, key) is not None)

    @property
    def at(self) -> int | tuple[int, int]:
        """The component's id: the node (NIC, NVSwitch), ``(node, rail)`` (a rail's NIC) or the switch."""
        at: int | tuple[int, int] = getattr(self, self.kind)
        return at

    def __repr__(self) -> str:
        kind = self.kind
        return _with_duty(
            f"{_SHARED_NAMES[kind]}({kind}={self.at!r}, slowdown={self.slowdown!r}, delay_ms={self.delay_ms!r})", self.duty
        )

    @property
    def gpus(self) -> tuple[int, ...]:
        """GPU ids the fault names: none (a shared component is checked against the topology)."""
        return ()

    def component(self, topology: ReplicaTopology | None = None) -> Component:
        """The :class:`~faultsense_pipelines.replica.topology.Component` it slows.

        Raises:
            ValueError: without a topology, or one that lacks the component.
        """
        kind, at = self.kind, self.at
        t = _need(topology, kind)
        if kind == "nvswitch":
            return t.nvswitch(cast(int, at))
        if kind == "switch":
            return t.switch(cast(int, at))
        return t.nic(at) if isinstance(at, int) else t.nic(*at)

    def to_dict(self) -> dict[str, Any]:
        """The file form, ``{"nic": v, "slowdown": f}`` (``[v, r]`` with rails), ``{"nvswitch":
        v, ...}`` or ``{"switch": s, ...}``; ``"delay_ms"`` instead of ``"slowdown"`` and
        ``"duty"`` when below 1 where so."""
        at = self.at
        effect: dict[str, Any] = {"slowdown": self.slowdown} if self.slowdown is not None else {"delay_ms": self.delay_ms}
        form = {self.kind: at if isinstance(at, int) else list(at), **effect}
        return form if self.duty == 1.0 else {**form, "duty": self.duty}


def NicFault(
    nic: int | tuple[int, int] | list[int], slowdown: float | None = None, delay_ms: float | None = None, duty: float = 1.0
) -> SharedFault:
    """A slow NIC (:class:`SharedFault` with ``nic``): the node, or ``[node, rail]``."""
    return SharedFault(nic=cast(Any, nic), slowdown=slowdown, delay_ms=delay_ms, duty=duty)


def NvSwitchFault(nvswitch: int, slowdown: float | None = None, delay_ms: float | None = None, duty: float = 1.0) -> SharedFault:
    """A degraded NVSwitch (or PCIe switch) inside node ``nvswitch`` (:class:`SharedFault`)."""
    return SharedFault(nvswitch=nvswitch, slowdown=slowdown, delay_ms=delay_ms, duty=duty)


def SwitchFault(switch: int, slowdown: float | None = None, delay_ms: float | None = None, duty: float = 1.0) -> SharedFault:
    """A bad port or a degraded leaf or rail switch ``switch`` (:class:`SharedFault`)."""
    return SharedFault(switch=switch, slowdown=slowdown, delay_ms=delay_ms, duty=duty)


#: The union tag of a shared-component fault (left out of error locations).
_SHARED_TAG = "<shared fault>"


#: A simulated fault (``simulated.faults``, a scenario's ``faults``).
Fault = GpuFault | LinkFault | SharedFault
#: A fault injected into real ``local`` / ``ray`` workers (``local.inject``, ``ray.inject``).
Injection = GpuFault | LinkDelay | SharedFault
AnyFault = GpuFault | LinkFault | LinkDelay | SharedFault


def _shared_tag(v: object) -> str | None:
    if isinstance(v, SharedFault):
        return _SHARED_TAG
    if isinstance(v, Mapping) and sum(key in v for key in _SHARED_NAMES) == 1 and not {"gpu", "link"} & set(v):
        return _SHARED_TAG
    return None


def _fault_tag(v: object) -> str | None:
    if (tag := _shared_tag(v)) is not None:
        return tag
    if isinstance(v, GpuFault | LinkFault):
        return "<gpu fault>" if isinstance(v, GpuFault) else "<link fault>"
    if isinstance(v, Mapping) and ("gpu" in v) != ("link" in v) and not _SHARED_NAMES.keys() & set(v):
        return "<gpu fault>" if "gpu" in v else "<link fault>"
    return None  # no component, or two (``{"gpu": 9, "nic": 1}``): the union's one-line error


def _injection_tag(v: object) -> str | None:
    if (tag := _shared_tag(v)) is not None:
        return tag
    if isinstance(v, GpuFault | LinkDelay):
        return "<gpu fault>" if isinstance(v, GpuFault) else "<link delay>"
    if isinstance(v, Mapping) and not (keys := set(v)) & _SHARED_NAMES.keys():
        if "gpu" in keys and not keys & {"link", "delay_ms"}:
            return "<gpu fault>"
        if "link" in keys and not keys & {"gpu", "slowdown"}:
            return "<link delay>"
    return None


#: Field type of one simulated fault: a :class:`GpuFault` or a :class:`LinkFault` (or a mapping
#: of one); the union tags in error locations are dropped by :func:`~faultsense_pipelines.validation.format_loc`.
_SHARED_SPECS = Annotated[SharedFault, Tag(_SHARED_TAG)]
FaultSpec = Annotated[
    Annotated[GpuFault, Tag("<gpu fault>")] | Annotated[LinkFault, Tag("<link fault>")] | _SHARED_SPECS,
    Discriminator(
        _fault_tag,
        custom_error_type="one_component",
        custom_error_message="give exactly one of gpu, link, nic, nvswitch or switch",
    ),
]
#: Field type of one real injection: a :class:`GpuFault` or a :class:`LinkDelay` (or a mapping of one).
InjectionSpec = Annotated[
    Annotated[GpuFault, Tag("<gpu fault>")] | Annotated[LinkDelay, Tag("<link delay>")] | _SHARED_SPECS,
    Discriminator(
        _injection_tag,
        custom_error_type="one_injection",
        custom_error_message="give {gpu, slowdown}, {link: [a, b], delay_ms} or {nic | nvswitch | switch: id, delay_ms}",
    ),
]


class _Faults(BaseModel):
    model_config = ConfigDict(frozen=True)
    faults: list[FaultSpec]


class _Injections(BaseModel):
    model_config = ConfigDict(frozen=True)
    inject: list[InjectionSpec]


def check_faults(
    faults: Iterable[AnyFault],
    n_gpus: int,
    field: str = "faults",
    topology: ReplicaTopology | None = None,
    *,
    simulated: bool | None = None,
) -> None:
    """Check validated faults against a replica of ``n_gpus`` GPUs (and its topology).

    Args:
        faults: the validated faults.
        n_gpus: GPUs in the replica.
        field: the field name errors start with.
        topology: where the GPUs sit; needed by NIC, NVSwitch and switch faults.
        simulated: ``True`` requires a ``slowdown`` of every shared fault, ``False`` a
            ``delay_ms``; ``None`` checks neither.

    Raises:
        ValueError: ``"<field>[i].duty: ..."`` for an intermittent fault given to real workers
            (``simulated=False``), ``"<field>[i].gpu: GPU id 8 is outside 0..7"`` (or ``.link``) for an
            unknown GPU, ``"<field>[i] repeats gpu 3"`` (``link (2, 5)``, ``nic:node3``) for a
            component named twice, ``"<field>[i].nic: node 9 is outside 0..7"`` (and the like)
            for a shared component the topology lacks or one given without a topology.
    """
    seen: set[tuple[str, object]] = set()
    for i, f in enumerate(faults):
        if isinstance(f, SharedFault):
            key = f.kind
            try:
                c = f.component(topology)
            except ValueError as exc:
                raise ValueError(f"{field}[{i}].{key}: {exc}") from None
            assert topology is not None  # component() refuses a shared fault without one
            if c not in topology.shared_components():
                why = "one node" if topology.nodes == 1 else "one GPU per node"
                raise ValueError(f"{field}[{i}].{key}: {topology.name(c)} carries no path in this topology ({why})")
            if simulated is True and f.slowdown is None:
                raise ValueError(
                    f"{field}[{i}].slowdown: a simulated {key} fault needs a slowdown (delay_ms is for real workers)"
                )
            if simulated is False and f.duty < 1.0:
                raise ValueError(f"{field}[{i}].duty: an intermittent fault (duty < 1) is simulated only")
            if simulated is False and f.delay_ms is None:
                raise ValueError(
                    f"{field}[{i}].delay_ms: a {key} injected into real workers needs delay_ms (slowdown is simulated)"
                )
            target: tuple[str, object] = (key, (topology.name(c) if topology else c.ids))
        else:
            key = "gpu" if isinstance(f, GpuFault) else "link"
            if simulated is False and getattr(f, "duty", 1.0) < 1.0:
                raise ValueError(f"{field}[{i}].duty: an intermittent fault (duty < 1) is simulated only")
            bad = [g for g in f.gpus if g >= n_gpus]
            if bad:
                raise ValueError(f"{field}[{i}].{key}: GPU id {bad[0]} is outside 0..{n_gpus - 1}")
            target = (key, f.gpu if isinstance(f, GpuFault) else f.link)
        if target in seen:
            raise ValueError(f"{field}[{i}] repeats {target[0]} {target[1]}")
        seen.add(target)


def parse_faults(items: object, n_gpus: int, topology: ReplicaTopology | None = None) -> tuple[Fault, ...]:
    """Validate a list of simulated faults (mappings or :data:`Fault` objects) for ``n_gpus`` GPUs.

    Raises:
        ValueError: ``"faults[i].<field>: <problem>"`` for the first bad entry (not an
            object, none or two of gpu/link/nic/nvswitch/switch, unknown key, unknown GPU id,
            link to itself, missing, NaN, below-1 or above-:data:`MAX_SLOWDOWN` slowdown, a
            shared component the topology lacks), or a component listed twice
            (:func:`check_faults`).

    >>> t = ReplicaTopology(64, gpus_per_node=8)
    >>> parse_faults([{"nic": 3, "slowdown": 1.5}], 64, t)
    (NicFault(nic=3, slowdown=1.5, delay_ms=None),)
    """
    try:
        faults = tuple(_Faults.model_validate({"faults": items}).faults)
    except ValidationError as exc:
        raise ValueError(first_error(exc)) from None
    check_faults(faults, n_gpus, topology=topology, simulated=True)
    return faults


def parse_fault(item: object, n_gpus: int, topology: ReplicaTopology | None = None) -> Fault:
    """One simulated fault: ``parse_faults([item], n_gpus)[0]`` (errors name ``faults[0]``).

    >>> parse_fault({"gpu": 9, "slowdown": 1.8}, 32)
    GpuFault(gpu=9, slowdown=1.8)
    """
    return parse_faults([item], n_gpus, topology)[0]


def parse_injections(items: object, n_gpus: int, topology: ReplicaTopology | None = None) -> tuple[Injection, ...]:
    """Validate faults to inject into real workers (mappings or :data:`Injection` objects).

    Raises:
        ValueError: ``"inject[i].<field>: <problem>"`` for the first bad entry, an unknown
            GPU, a shared component the topology lacks or a repeated target (:func:`check_faults`).
    """
    try:
        injections = tuple(_Injections.model_validate({"inject": items}).inject)
    except ValidationError as exc:
        raise ValueError(first_error(exc)) from None
    check_faults(injections, n_gpus, "inject", topology, simulated=False)
    return injections
