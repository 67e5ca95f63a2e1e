"""The core vocabulary: the closed sets of words that FaultSense writes and reads.

Each set is a :class:`enum.StrEnum`, so a member *is* its string: it compares equal to it,
hashes like it, formats as it, and is written as that plain string to JSON, Parquet, Dagster
metadata and CLI output. The words on disk, in JSON and in CLI options are therefore exactly
those of the tables below; code compares against the members instead of bare literals.

* :class:`Outcome` -- a measured probe: ``pass``, ``fail`` (slow), ``error`` (not measured).
* :class:`Status` -- a ledger verdict: ``suspect``, ``confirmed``, ``masked``, ``inconclusive``.
* :class:`ComponentKind` -- what a ledger row names: ``gpu``, ``link``, ``nvswitch``, ``nic``,
  ``switch``, ``replica`` (FaultSense),
  ``machine`` (Minder), ``fabric_link`` (FlowPulse).
* :class:`DrilldownMethod` -- Phase 2: ``sequential`` (default, :data:`DEFAULT_DRILLDOWN`),
  ``adaptive``, ``paper`` (Algorithm 2).
* :class:`ExecutorKind` -- how a replica's probes run: ``simulated``, ``local``, ``ray``, ``vllm``
  (how each is built: :data:`faultsense_pipelines.probe.executors.EXECUTOR_BUILDERS`).
* :class:`Engine` -- which ranks of a ``local`` or ``ray`` pool join a probe's forward:
  ``member_only`` (the paper's model) or ``all_ranks`` (as a real expert-parallel engine).

This module imports nothing of the package, so the algorithms, the fleet file, the ledger
and the executors can all use it.

>>> Status.CONFIRMED == "confirmed" and f"{Status.CONFIRMED}" == "confirmed"
True
>>> import json; json.dumps({"status": Status.MASKED, "kinds": list(ExecutorKind)})
'{"status": "masked", "kinds": ["simulated", "local", "ray", "vllm"]}'
>>> DrilldownMethod.parse("paper", "--drilldown") is DrilldownMethod.PAPER
True
>>> Outcome.parse("slow", "outcome")
Traceback (most recent call last):
    ...
ValueError: outcome must be one of pass, fail, error, got 'slow'
"""

from __future__ import annotations

from enum import StrEnum
from typing import Self

__all__ = ["DEFAULT_DRILLDOWN", "ComponentKind", "DrilldownMethod", "Engine", "ExecutorKind", "Outcome", "Status", "Vocabulary"]


class Vocabulary(StrEnum):
    """A closed set of words (base of the enums below); members are plain ``str`` values."""

    @classmethod
    def values(cls) -> tuple[str, ...]:
        """The words in definition order, as plain strings (e.g. for ``--help`` and error text)."""
        return tuple(m.value for m in cls)

    @classmethod
    def parse(cls, value: object, what: str) -> Self:
        """The member whose word is ``value``.

        Args:
            value: a word (or a member) read from a file, an option or a caller.
            what: how to name the value in the error, e.g. ``"--drilldown"``.

        Raises:
            ValueError: ``"<what> must be one of a, b, got 'x'"`` for any other value.
        """
        if type(value) is cls:  # already a member: the common case, one type check
            return value
        if isinstance(value, str) and value in cls._value2member_map_:
            return cls(value)
        raise ValueError(f"{what} must be one of {', '.join(cls.values())}, got {value!r}")


class Outcome(Vocabulary):
    """The outcome of one measured probe (``ProbeRecord.outcome``)."""

    PASS = "pass"
    FAIL = "fail"  # slow
    ERROR = "error"  # could not be measured: evidence about nothing


class Status(Vocabulary):
    """The status of one judged component (a verdict; the ledger's ``status`` column)."""

    SUSPECT = "suspect"  # a Phase 1 finding not drilled into (e.g. a degraded replica)
    CONFIRMED = "confirmed"
    MASKED = "masked"  # a link between two faulty GPUs: no probe can judge it
    INCONCLUSIVE = "inconclusive"


class ComponentKind(Vocabulary):
    """What a verdict or ledger row names (the ledger's ``component_kind`` column)."""

    GPU = "gpu"
    LINK = "link"
    NVSWITCH = "nvswitch"  # every path between two GPUs of one node
    NIC = "nic"  # every path from one node's GPUs (or one rail's GPU) to other nodes
    SWITCH = "switch"  # every inter-node path with an end under one leaf or rail switch
    REPLICA = "replica"
    MACHINE = "machine"
    FABRIC_LINK = "fabric_link"


class DrilldownMethod(Vocabulary):
    """The Phase 2 drill-down algorithm."""

    ADAPTIVE = "adaptive"
    PAPER = "paper"
    SEQUENTIAL = "sequential"  # anytime-valid paired claims, one error budget a sweep (localize.sequential)

    @property
    def reads_every_sweep(self) -> bool:
        """True for the drill-down that reads every Phase 1 sweep against its own time-local
        baseline (``sequential``), suspects or not; the binary ones (``adaptive``, ``paper``)
        drill only into the suspect rule's suspects."""
        return self is DrilldownMethod.SEQUENTIAL


#: The drill-down of ``simulate``, ``sweep`` and the Dagster sweep unless told otherwise: the
#: sequential one, whose expected healthy blames per sweep are at most its error budget under
#: any noise that treats the two sides of a paired test alike (docs/verdicts.md).
DEFAULT_DRILLDOWN = DrilldownMethod.SEQUENTIAL


class ExecutorKind(Vocabulary):
    """How a replica's probes are run (the fleet file's ``executor``, the ledger's ``executor``)."""

    SIMULATED = "simulated"
    LOCAL = "local"
    RAY = "ray"
    VLLM = "vllm"


class Engine(Vocabulary):
    """Which ranks of a ``local`` or ``ray`` worker pool take part in a probe's forward."""

    MEMBER_ONLY = "member_only"  # only the probe's GPUs run it (FaultSense §4.1's model)
    ALL_RANKS = "all_ranks"  # every rank joins every forward, as vLLM expert parallelism does
