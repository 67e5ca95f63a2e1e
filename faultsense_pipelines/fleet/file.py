"""The fleet file: which serving replicas FaultSense sweeps, how, and where the ledger lives.

A *fleet* is a list of replicas, each with its GPU count n, probe size k and the executor
that runs its probes (``simulated``, ``local``, ``ray`` or ``vllm``), plus the URI of the
fault ledger. The file is YAML, validated once here (pydantic); every error names the field
and the bad value, e.g. ``replicas[1].probe_size: must be < gpus (got 9 > 8)`` or
``replicas[0].gpus: Input should be a valid integer, got True (a boolean)``, and nothing runs
on a bad file. Integers must be integers (not ``true`` or ``8.0``), numbers must be finite.

>>> fleet = parse_fleet({"ledger": "/tmp/l", "replicas": [
...     {"name": "sim-8", "gpus": 8, "probe_size": 4, "executor": "simulated"}]})
>>> fleet.replica("sim-8").shape
'n8-k4'
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field, ValidationError, ValidationInfo, field_validator

from ..cover.bounds import cover_too_large
from ..replica.faults import check_faults
from ..replica.topology import ReplicaTopology
from ..replica.vocabulary import ExecutorKind
from ..sim.scenario import MAX_SEED  # re-exported: seeds are 32-bit unsigned, as a scenario's
from ..textfile import TextFileError, load_yaml, read_text
from ..validation import MAX_MIN_SLOWDOWN, MAX_REPEATS, MAX_STRING_CHARS, first_error, first_long_string, path_problem, shown
from .actions import ActionSpec, check_actions
from .hours import check_hour_key
from .maintenance import MaintenanceOptions
from .sections import (  # the section models are re-exported from here
    Float,
    Int,
    LocalOptions,
    Phase2Options,
    RayOptions,
    ScheduleOptions,
    SimulatedOptions,
    StrictModel,
    TopologyOptions,
    VllmOptions,
)

__all__ = [
    "DEFAULT_FLEET_PATH",
    "EXECUTORS",
    "MAX_FLEET_BYTES",
    "MAX_REPEATS",
    "MAX_REPLICAS",
    "MAX_SEED",
    "ActionSpec",
    "Fleet",
    "FleetError",
    "LocalOptions",
    "Phase2Options",
    "RayOptions",
    "Replica",
    "SimulatedOptions",
    "VllmOptions",
    "fleet_path",
    "load_fleet",
    "parse_fleet",
    "shape_key",
]

#: The fleet used when none is given: ``faultsense_pipelines/data/fleet.yaml``, shipped inside
#: the package (so an installed wheel has it too). Its ledger path is relative to the current
#: directory, not to this file.
DEFAULT_FLEET_PATH = Path(__file__).resolve().parents[1] / "data" / "fleet.yaml"

#: Executor kinds a replica may name (the words of :class:`~faultsense_pipelines.replica.vocabulary.ExecutorKind`; how each
#: is built: :data:`faultsense_pipelines.probe.executors.EXECUTOR_BUILDERS`).
EXECUTORS: tuple[str, ...] = ExecutorKind.values()
NAME_PATTERN = r"[a-z0-9_-]+"
#: The largest fleet file read (bytes). A replica takes 60-300 bytes of YAML, so 1024 of them fit;
#: parsing takes about a second per MiB here, so a bigger file is refused before it is parsed.
MAX_FLEET_BYTES = 512 * 1024
#: Most replicas in one fleet (a sweep runs them one after another; split a bigger fleet into
#: several files and schedules).
MAX_REPLICAS = 1024
_URI_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")


class FleetError(ValueError):
    """A fleet file that cannot be used; the message names the file and the field."""


def shape_key(n_gpus: int, probe_size: int) -> str:
    """The ``probe_cover`` partition key of a replica shape, e.g. ``shape_key(64, 8) == "n64-k8"``."""
    return f"n{n_gpus}-k{probe_size}"


class Replica(StrictModel):
    """One serving replica to sweep (field order matters: later validators read earlier fields).

    Suspect rule: ``alpha`` selects the paper's rule T_i > alpha * median(T); otherwise the
    noise-aware robust rule is used, never calling a probe slow below ``min_slowdown`` times
    the healthy baseline (default 1.1; raise it for noisy hardware).
    """

    name: str
    gpus: Annotated[Int, Field(ge=2, le=4096)]
    probe_size: Annotated[Int, Field(ge=2)]
    executor: ExecutorKind
    alpha: Float | None = None
    min_slowdown: Float | None = None
    repeats: Annotated[Int, Field(ge=1, le=MAX_REPEATS)] | None = None
    gpus_per_node: Annotated[Int, Field(ge=1)] | None = None
    topology: TopologyOptions | None = None
    phase2: Phase2Options | None = None
    simulated: SimulatedOptions | None = Field(default=None, validate_default=True)
    local: LocalOptions | None = Field(default=None, validate_default=True)
    ray: RayOptions | None = Field(default=None, validate_default=True)
    vllm: VllmOptions | None = Field(default=None, validate_default=True)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(NAME_PATTERN, v) or len(v) > 64:
            raise ValueError(f"must be 1-64 of a-z, 0-9, '_' and '-', got {shown(v)}")
        return v

    @field_validator("probe_size")
    @classmethod
    def _probe_size_fits(cls, v: int, info: ValidationInfo) -> int:
        gpus = info.data.get("gpus")
        if gpus is not None and v > gpus:
            raise ValueError(f"must be < gpus (got {v} > {gpus})")
        if gpus is not None and v == gpus:  # one probe of every GPU: nothing to compare it with
            raise ValueError(
                f"must be < gpus (got {v} = gpus): a cover of one probe holding every GPU cannot be judged "
                "(a probe is slow only relative to the others)"
            )
        if gpus is not None and (problem := cover_too_large(gpus, v)):
            raise ValueError(problem)
        return v

    @field_validator("alpha", "min_slowdown")
    @classmethod
    def _ratio(cls, v: float | None, info: ValidationInfo) -> float | None:
        if v is not None and not (math.isfinite(v) and v > 1.0):
            raise ValueError(f"must be a finite number > 1, got {shown(v)}")
        if info.field_name == "min_slowdown" and v is not None and v > MAX_MIN_SLOWDOWN:  # as simulate's
            raise ValueError(f"must be a finite number in (1, {MAX_MIN_SLOWDOWN:g}], got {shown(v)}")
        return v

    @field_validator("gpus_per_node")
    @classmethod
    def _whole_nodes(cls, v: int | None, info: ValidationInfo) -> int | None:
        gpus = info.data.get("gpus")
        if v is not None and gpus is not None and gpus % v:
            raise ValueError(f"{v} does not divide the replica's {gpus} GPUs into whole nodes")
        return v

    @field_validator("topology")
    @classmethod
    def _topology_fits(cls, v: TopologyOptions | None, info: ValidationInfo) -> TopologyOptions | None:
        if v is not None and info.data.get("gpus_per_node") is not None:
            raise ValueError("give gpus_per_node inside topology, not beside it")
        gpus = info.data.get("gpus")
        if v is not None and gpus is not None:
            try:
                _build_topology(gpus, v)
            except ValueError as exc:
                raise ValueError(str(exc).removeprefix("topology.")) from None
        return v

    @field_validator("simulated", "local", "ray", "vllm")
    @classmethod
    def _section_matches_executor(cls, v: Any, info: ValidationInfo) -> Any:
        executor, section = info.data.get("executor"), info.field_name
        if executor is None:  # the executor field itself was invalid; that error is enough
            return v
        if section != executor:
            if v is not None:
                raise ValueError(f"given, but executor is {shown(str(executor))}")
            return v
        if isinstance(v, SimulatedOptions) and not 0 <= v.seed <= MAX_SEED:
            raise ValueError(f"@.seed: must be an integer in 0..{MAX_SEED} (32 bits), got {shown(v.seed)}")
        if v is None:
            if section == ExecutorKind.VLLM:
                raise ValueError("required when executor is 'vllm' (needs at least url)")
            defaults = {ExecutorKind.SIMULATED: SimulatedOptions, ExecutorKind.LOCAL: LocalOptions, ExecutorKind.RAY: RayOptions}
            v = defaults[ExecutorKind.parse(section, "section")]()
        gpus = info.data.get("gpus")
        topo = info.data.get("topology")
        per_node = info.data.get("gpus_per_node")
        topology = None
        options = topo if topo is not None else TopologyOptions(gpus_per_node=per_node) if isinstance(per_node, int) else None
        if gpus is not None and options is not None:
            try:
                topology = _build_topology(gpus, options)
            except ValueError:
                topology = None  # reported by the topology field itself
        _check_gpu_ids(v, gpus, topology)
        if isinstance(v, VllmOptions) and gpus is not None:
            from ..probe.serve import check_dp_pinning  # stdlib only: no HTTP client, no torch

            try:
                check_dp_pinning(gpus, v.data_parallel_size, "member" if v.dp_rank is None else v.dp_rank)
            except ValueError as exc:
                raise ValueError(f"@.{exc}") from None
        return v

    @property
    def replica_topology(self) -> ReplicaTopology:
        """Where the replica's GPUs sit (``topology``, or a bare ``gpus_per_node``; no shared
        components without either)."""
        if self.topology is not None:
            return _build_topology(self.gpus, self.topology)
        return ReplicaTopology(self.gpus, self.gpus_per_node)

    @property
    def shape(self) -> str:
        """``probe_cover`` partition key, e.g. ``"n64-k8"``."""
        return shape_key(self.gpus, self.probe_size)

    @property
    def options(self) -> BaseModel:
        """The section of the chosen executor (``simulated``, ``local``, ``ray`` or ``vllm``)."""
        return getattr(self, self.executor)


def _build_topology(gpus: int, t: TopologyOptions) -> ReplicaTopology:
    names = None if t.node_names is None else tuple(t.node_names)
    return ReplicaTopology(gpus, t.gpus_per_node, t.nodes_per_switch, t.rails, names)


def _check_gpu_ids(section: BaseModel, n_gpus: int | None, topology: ReplicaTopology | None = None) -> None:
    """The section's faults against the replica's GPUs (:func:`~faultsense_pipelines.replica.faults.check_faults`), in the
    words ``simulate`` uses: ``replicas[0].simulated.faults[0].gpu: GPU id 8 is outside 0..7``,
    ``replicas[0].simulated: faults[1] repeats gpu 3``."""
    if n_gpus is None:
        return
    field = "faults" if isinstance(section, SimulatedOptions) else "inject"
    try:
        check_faults(getattr(section, field, None) or (), n_gpus, field, topology, simulated=field == "faults")
    except ValueError as exc:
        where, colon, problem = str(exc).partition(": ")
        raise ValueError(f"@.{where}: {problem}" if colon else str(exc)) from None


class Fleet(StrictModel):
    """A validated fleet file: the ledger URI and the replicas, names unique.

    ``ledger`` is optional (``None``) when ``--ledger`` or ``$FAULTSENSE_LEDGER`` supplies it
    (:func:`faultsense_pipelines.ledger.location.choose_ledger_uri`).
    """

    ledger: Annotated[str, Field(min_length=1)] | None = None
    replicas: Annotated[list[Replica], Field(min_length=1, max_length=MAX_REPLICAS)]
    #: compaction and retention of the ledger (:mod:`.maintenance`); defaults when omitted
    maintenance: MaintenanceOptions = Field(default_factory=MaintenanceOptions)
    #: guarded actions on confirmed and resolved faults (:mod:`.actions`); none when omitted
    actions: Annotated[list[ActionSpec], Field(max_length=64)] = Field(default_factory=list)
    #: which sweep schedules run from the start (:class:`~.sections.ScheduleOptions`; both off by default)
    schedules: ScheduleOptions = Field(default_factory=ScheduleOptions)
    #: the first sweep hour (``YYYY-MM-DD-HH:00`` or ``YYYY-MM-DD``, UTC): where the sweep
    #: partitions start in the UI; default: the first hour the ledger holds a sweep of
    since: str | None = None

    @field_validator("since")
    @classmethod
    def _since(cls, v: str | None) -> str | None:
        if v is None:
            return v
        hour = f"{v}-00:00" if isinstance(v, str) and len(v) == 10 else v
        try:
            return check_hour_key(hour)
        except ValueError as exc:
            if "must look like" not in str(exc):  # well formed, but outside the sweep partitions
                raise ValueError(str(exc)) from None
            raise ValueError(f"must be a UTC day YYYY-MM-DD or hour YYYY-MM-DD-HH:00 (e.g. 2026-12-01), got {shown(v)}") from None

    @field_validator("ledger")
    @classmethod
    def _ledger_uri(cls, v: str | None) -> str | None:
        if v is None:  # none in the file: --ledger or $FAULTSENSE_LEDGER must give it
            return v
        if problem := path_problem(v):  # whitespace, control characters, length
            raise ValueError(problem)
        m = _URI_SCHEME.match(v)
        if m:
            import fsspec

            if m.group(1).lower() not in fsspec.available_protocols():
                raise ValueError(f"unknown filesystem scheme {shown(m.group(1))} in {shown(v)}")
        return v

    @field_validator("replicas")
    @classmethod
    def _unique_names(cls, v: list[Replica]) -> list[Replica]:
        seen: dict[str, int] = {}
        for i, r in enumerate(v):
            if r.name in seen:
                raise ValueError(
                    f"@[{i}].name: {shown(r.name)} is already the name of replicas[{seen[r.name]}]; names must be unique"
                )
            seen[r.name] = i
        return v

    @field_validator("actions")
    @classmethod
    def _actions(cls, v: list[ActionSpec], info: ValidationInfo) -> list[ActionSpec]:
        replicas = info.data.get("replicas")
        if replicas is not None:
            try:
                check_actions(v, [r.name for r in replicas])
            except ValueError as exc:
                raise ValueError(f"@{exc}") from None
        return v

    @property
    def names(self) -> list[str]:
        """Replica names in file order."""
        return [r.name for r in self.replicas]

    @property
    def shapes(self) -> list[str]:
        """Distinct ``n<gpus>-k<probe_size>`` keys in file order (one ``probe_cover`` partition each)."""
        return list(dict.fromkeys(r.shape for r in self.replicas))

    def replica(self, name: str) -> Replica:
        """The replica called ``name``.

        Raises:
            KeyError: naming the unknown replica and the known ones.
        """
        for r in self.replicas:
            if r.name == name:
                return r
        raise KeyError(f"unknown replica {shown(name)}; the fleet has {', '.join(self.names)}")

    def with_ledger(self, uri: str) -> Fleet:
        """A copy whose ledger URI is ``uri`` (validated like the file's)."""
        return Fleet.model_validate({**self.model_dump(), "ledger": uri})


def parse_fleet(data: Any, source: str = "fleet") -> Fleet:
    """Validate a fleet already read into Python objects.

    Args:
        data: the parsed YAML (a mapping with ``ledger`` and ``replicas``).
        source: how to name the file in errors.

    Raises:
        FleetError: ``"<source>: <field>: <problem>"`` for the first problem found; more than
            :data:`MAX_REPLICAS` replicas or a string over 4096 characters
            (:data:`~faultsense_pipelines.validation.MAX_STRING_CHARS`) is refused before any field is validated.
    """
    if data is None:  # an empty file, or one of comments only
        raise FleetError(f"{source}: the fleet file is empty; it needs 'ledger' and 'replicas' (README: The fleet file)")
    if not isinstance(data, Mapping):
        kind = {list: "a list", str: "a string", int: "a number", float: "a number", bool: "true/false"}.get(
            type(data), type(data).__name__
        )
        raise FleetError(f"{source}: the fleet must be a mapping with 'ledger' and 'replicas', got {kind}")
    replicas = data.get("replicas")
    if isinstance(replicas, list) and len(replicas) > MAX_REPLICAS:  # before validating each of them
        raise FleetError(f"{source}: replicas: at most {MAX_REPLICAS} replicas in one fleet, got {len(replicas)}")
    if long := first_long_string(dict(data)):
        raise FleetError(f"{source}: {long[0]}: at most {MAX_STRING_CHARS} characters, got {long[1]:,}")
    try:
        return Fleet.model_validate(dict(data))
    except ValidationError as exc:
        raise FleetError(f"{source}: {first_error(exc)}") from None


def fleet_path(path: str | Path | None = None) -> Path:
    """The fleet file to read: ``path``, else ``$FAULTSENSE_FLEET``, else the embedded
    ``faultsense_pipelines/data/fleet.yaml`` (``~`` expanded, not resolved)."""
    return Path(path or os.environ.get("FAULTSENSE_FLEET") or DEFAULT_FLEET_PATH).expanduser()


def load_fleet(path: str | Path | None = None) -> Fleet:
    """Read and validate a fleet YAML file.

    With ``path`` None the file is ``$FAULTSENSE_FLEET`` when set, else the embedded
    ``faultsense_pipelines/data/fleet.yaml`` (the same default for the CLI, the Dagster
    definitions and the ledger commands).

    Raises:
        FleetError: the file is missing, not a regular file, over :data:`MAX_FLEET_BYTES`
            (512 KiB), not UTF-8, not YAML, uses YAML aliases or a key twice
            (:func:`faultsense_pipelines.textfile.load_yaml`), holds more than :data:`MAX_REPLICAS` replicas, or a
            field is invalid; the message names the file and the field.
    """
    p = fleet_path(path)
    try:
        text = read_text(p, MAX_FLEET_BYTES)
    except TextFileError as exc:
        why = str(exc).replace("cannot read (", "cannot read fleet file (", 1)
        raise FleetError(f"{p}: {why}") from None
    try:
        data = load_yaml(text)
    except TextFileError as exc:
        raise FleetError(f"{p}: {exc}") from None
    return parse_fleet(data, source=str(p))
