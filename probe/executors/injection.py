"""Fault injection for the real executors: a slow GPU and a slow GPU-to-GPU path.

A *gray failure* (FaultSense §1) makes a GPU or a path slower without any error. The
``local`` and ``ray`` executors reproduce the two kinds for demos and tests, from the one
fault model of :mod:`faultsense_pipelines.replica.faults` (an :data:`Injection`):

* :class:`~faultsense_pipelines.replica.faults.GpuFault` — the worker of ``gpu`` does extra real
  compute (more expert FFN work) after its FFN, for ``slowdown - 1`` times its usual time per
  layer, so its part of every probe takes ``slowdown`` times as long (a thermally throttled
  GPU; the core's fault model, where a slow GPU multiplies the latency of the probes that run
  it).
* :class:`~faultsense_pipelines.replica.faults.LinkDelay` — every data transfer between GPUs ``a`` and
  ``b``, in both directions, is held back by ``delay_ms`` (a degraded NVLink/PCIe path). A
  probe's all-to-all has two phases (dispatch, combine), so a probe over the link is slowed by
  about ``2 * delay_ms``.

* A shared component (a :class:`~faultsense_pipelines.replica.faults.SharedFault`: NIC,
  NVSwitch or switch, with ``delay_ms``) -- a delay on every transfer of every path the component
  carries (:func:`worker_injections` turns it into one ``LinkDelay`` per path, given the
  replica's :class:`~faultsense_pipelines.replica.topology.ReplicaTopology`): a NIC that renegotiated
  to a lower speed slows every transfer between its node and the others.

A fleet file's ``inject:`` list is validated into these objects when the file loads; an
executor's caller may also pass plain mappings, validated once by :func:`parse_injections`:

>>> parse_injections([{"gpu": 2, "slowdown": 3.0}, {"link": [5, 0], "delay_ms": 2.0}], 8)
(GpuFault(gpu=2, slowdown=3.0), LinkDelay(link=(0, 5), delay_ms=2.0))
"""

from __future__ import annotations

from itertools import combinations

from faultsense_pipelines.replica.faults import (
    GpuFault,
    Injection,
    LinkDelay,
    SharedFault,
    parse_injections,
)
from faultsense_pipelines.replica.topology import ReplicaTopology

__all__ = ["GpuFault", "Injection", "LinkDelay", "parse_injections", "worker_injections"]


def worker_injections(injections: tuple[Injection, ...], topology: ReplicaTopology | None) -> tuple[GpuFault | LinkDelay, ...]:
    """What the workers apply: GPU faults and link delays as given, each shared component's
    delay as one :class:`LinkDelay` per path it carries (the largest delay where two give one path).

    Raises:
        ValueError: a shared component without a topology (validation refuses it first).

    >>> from faultsense_pipelines.replica.faults import NicFault
    >>> t = ReplicaTopology(4, gpus_per_node=2)
    >>> worker_injections((NicFault(nic=1, delay_ms=2.0),), t)
    (LinkDelay(link=(0, 2), delay_ms=2.0), LinkDelay(link=(0, 3), delay_ms=2.0), LinkDelay(link=(1, 2), delay_ms=2.0), LinkDelay(link=(1, 3), delay_ms=2.0))
    """
    plain: list[GpuFault | LinkDelay] = []
    delays: dict[tuple[int, int], float] = {}
    for inj in injections:
        if isinstance(inj, SharedFault):
            if topology is None or inj.delay_ms is None:
                raise ValueError(f"{inj!r} needs the replica's topology and a delay_ms")
            c = inj.component(topology)
            for a, b in combinations(range(topology.gpus), 2):
                if topology.holds(c, (a, b)):
                    delays[(a, b)] = max(delays.get((a, b), 0.0), inj.delay_ms)
        elif isinstance(inj, LinkDelay):
            delays[inj.link] = max(delays.get(inj.link, 0.0), inj.delay_ms)
        else:
            plain.append(inj)
    return (*plain, *(LinkDelay(link=ab, delay_ms=d) for ab, d in sorted(delays.items())))
