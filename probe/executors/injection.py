"""Fault injection for the real executors: a slow GPU and a slow GPU-to-GPU path.

A *gray failure* (FaultSense §1) makes a GPU or a path slower without any error. The
``local`` and ``ray`` executors reproduce the two kinds for demos and tests, from the one
fault model of :mod:`faultsense_pipelines.faults` (an :data:`Injection`):

* :class:`~faultsense_pipelines.faults.GpuFault` — the worker of ``gpu`` does extra real
  compute (more expert FFN work) after its FFN, for ``slowdown - 1`` times its usual time per
  layer, so its part of every probe takes ``slowdown`` times as long (a thermally throttled
  GPU; the core's fault model, where a slow GPU multiplies the latency of the probes that run
  it).
* :class:`~faultsense_pipelines.faults.LinkDelay` — every data transfer between GPUs ``a`` and
  ``b``, in both directions, is held back by ``delay_ms`` (a degraded NVLink/PCIe path). A
  probe's all-to-all has two phases (dispatch, combine), so a probe over the link is slowed by
  about ``2 * delay_ms``.

A fleet file's ``inject:`` list is validated into these objects when the file loads; an
executor's caller may also pass plain mappings, validated once by :func:`parse_injections`:

>>> parse_injections([{"gpu": 2, "slowdown": 3.0}, {"link": [5, 0], "delay_ms": 2.0}], 8)
(GpuFault(gpu=2, slowdown=3.0), LinkDelay(link=(0, 5), delay_ms=2.0))
"""

from __future__ import annotations

from faultsense_pipelines.faults import GpuFault, Injection, LinkDelay, parse_injections

__all__ = ["GpuFault", "GpuSlowdown", "Injection", "LinkDelay", "parse_injections"]

#: The former name of :class:`~faultsense_pipelines.faults.GpuFault` for the real workers.
GpuSlowdown = GpuFault
