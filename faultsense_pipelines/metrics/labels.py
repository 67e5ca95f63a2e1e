"""Prometheus label values of a ledger component: where it sits (node, GPU, rail).

Every value comes from the fleet file (a replica's ``topology``) or from the ledger row itself
(``component_kind``, ``component``, ``gpu``, ``peer_gpu``), never from anything unbounded such
as a sweep id, so the exporter's series stay as many as the fleet's components.

The ``node`` label is how a component's metrics join those of the host it runs on:
dcgm-exporter labels a GPU host's metrics ``Hostname``; name the nodes in the fleet file
(``topology: {gpus_per_node: 8, node_names: [a17, a18, ...]}``) as the hosts call themselves,
and PromQL joins the two with ``label_replace(DCGM_FI_DEV_GPU_TEMP, "node", "$1", "Hostname",
"(.*)")`` (docs/operations.md, "Metrics and alerts").

>>> gpu_node(8, ("a17", "a18"), 9), gpu_node(8, None, 9), gpu_node(None, None, 9)
('a18', 'node1', '')
>>> component_labels("nic", "nic:a18/rail5", None, None, 8, ("a17", "a18"))
{'kind': 'nic', 'node': 'a18', 'gpu': '', 'rail': '5'}
>>> component_labels("link", "link:3-40", 3, 40, 8, None)
{'kind': 'link', 'node': '', 'gpu': '', 'rail': ''}
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["COMPONENT_LABELS", "component_labels", "gpu_node"]

#: The labels of every per-component series, in order (``replica`` and ``component`` first).
COMPONENT_LABELS = ("replica", "component", "kind", "node", "gpu", "rail")

#: ``nic:<node>``, ``nic:<node>/rail<r>``, ``nvswitch:<node>`` (the node as the ledger names it).
_NODE_COMPONENT = re.compile(r"(?:nic|nvswitch):([A-Za-z0-9_.-]{1,64})(?:/rail(\d{1,4}))?")


def gpu_node(gpus_per_node: int | None, node_names: Sequence[str] | None, gpu: int | None) -> str:
    """The node GPU ``gpu`` sits on: GPU g is on node ``g // gpus_per_node``, named
    ``node_names[v]`` when the fleet file names the nodes, else ``node<v>`` (the ledger's own
    words, ``nic:node3``); ``""`` without a topology, without a GPU, or past the named nodes.

    Args:
        gpus_per_node: the replica's ``topology.gpus_per_node`` (or bare ``gpus_per_node``), or None.
        node_names: its ``topology.node_names``, or None.
        gpu: the replica's GPU id (0-based), or None.
    """
    if gpus_per_node is None or gpus_per_node < 1 or gpu is None or gpu < 0:
        return ""
    v = gpu // gpus_per_node
    if node_names is None:
        return f"node{v}"
    return node_names[v] if v < len(node_names) else ""


def component_labels(
    kind: str,
    component: str,
    gpu: int | None,
    peer_gpu: int | None,
    gpus_per_node: int | None,
    node_names: Sequence[str] | None,
) -> dict[str, str]:
    """The ``kind``, ``node``, ``gpu`` and ``rail`` labels of one ledger component.

    * ``gpu:17``: ``gpu="17"``, ``node`` = its node (:func:`gpu_node`);
    * ``link:3-40``: ``node`` = the node of both ends when they share one (an NVLink path), else
      ``""`` (a path between nodes belongs to neither); ``gpu=""`` (the component names both);
    * ``nic:<node>[/rail<r>]``, ``nvswitch:<node>``: ``node`` as the ledger row names it,
      ``rail="r"`` for a rail's NIC;
    * anything else (``switch:1``, ``replica:<name>``): only ``kind``.

    Args:
        kind: the row's ``component_kind``; component: its ``component``; gpu, peer_gpu: its
            GPU ids (None where the row has none); gpus_per_node, node_names: the replica's
            topology from the fleet file (None without one).

    Returns:
        ``{"kind", "node", "gpu", "rail"}``, each a string, ``""`` where it does not apply.
    """
    out = {"kind": str(kind), "node": "", "gpu": "", "rail": ""}
    if kind == "gpu" and gpu is not None:
        out["gpu"] = str(int(gpu))
        out["node"] = gpu_node(gpus_per_node, node_names, gpu)
    elif kind == "link" and gpu is not None and peer_gpu is not None:
        a, b = gpu_node(gpus_per_node, node_names, gpu), gpu_node(gpus_per_node, node_names, peer_gpu)
        out["node"] = a if a == b else ""
    elif kind in ("nic", "nvswitch") and (m := _NODE_COMPONENT.fullmatch(component)):
        out["node"] = m.group(1)
        out["rail"] = m.group(2) or ""
    return out
