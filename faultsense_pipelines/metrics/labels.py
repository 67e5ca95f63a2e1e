"""Prometheus label values of a ledger component: where it sits (node, GPU, rail).

Every value comes from the fleet file (a replica's ``topology``) or from the ledger row itself
(``component_kind``, ``component``, ``gpu``, ``peer_gpu``), never from anything unbounded such
as a sweep id, so the exporter's series stay as many as the fleet's components.

The ``node`` label is how a component's metrics join those of the host it runs on:
dcgm-exporter labels a GPU host's metrics ``Hostname``; name the nodes in the fleet file
(``topology: {gpus_per_node: 8, node_names: [a17, a18, ...]}``) as the hosts call themselves,
and PromQL joins the two with ``label_replace(DCGM_FI_DEV_GPU_TEMP, "node", "$1", "Hostname",
"(.*)")`` (docs/operations.md, "Metrics and alerts"). The node is the one the ledger's verdicts
name (:meth:`~faultsense_pipelines.replica.topology.ReplicaTopology.row_node`), worked out in
that one place.

>>> t = ReplicaTopology(16, gpus_per_node=8, node_names=("a17", "a18"))
>>> component_labels("nic", "nic:a18/rail5", None, None, t)
{'kind': 'nic', 'node': 'a18', 'gpu': '', 'rail': '5'}
>>> component_labels("gpu", "gpu:9", 9, None, t)["node"], component_labels("link", "link:3-12", 3, 12, t)["node"]
('a18', '')
"""

from __future__ import annotations

import re

from faultsense_pipelines.replica.topology import ReplicaTopology

__all__ = ["COMPONENT_LABELS", "component_labels"]

#: The labels of every per-component series, in order (``replica`` and ``component`` first).
COMPONENT_LABELS = ("replica", "component", "kind", "node", "gpu", "rail")

#: ``nic:<node>/rail<r>``: a rail's NIC.
_RAIL = re.compile(r"nic:[A-Za-z0-9_.-]{1,64}/rail(\d{1,4})")


def component_labels(
    kind: str,
    component: str,
    gpu: int | None,
    peer_gpu: int | None,
    topology: ReplicaTopology | None,
    recorded: str | None = None,
) -> dict[str, str]:
    """The ``kind``, ``node``, ``gpu`` and ``rail`` labels of one ledger component.

    * ``node``: the row's own ``node`` (``recorded``: what the sweep's verdict named, e.g. a
      ``ray`` replica's actor host), else the replica's
      :meth:`~faultsense_pipelines.replica.topology.ReplicaTopology.row_node` -- the one
      function both come from: a GPU's node, a link's when both ends share one (``""`` for a
      path between nodes, which belongs to neither), a NIC's or NVSwitch's; ``""`` without
      either;
    * ``gpu:17``: ``gpu="17"``; ``nic:<node>/rail<r>``: ``rail="r"``;
    * anything else (``switch:1``, ``replica:<name>``): only ``kind`` (and no ``node``).

    Args:
        kind: the row's ``component_kind``; component: its ``component``; gpu, peer_gpu: its
            GPU ids (None where the row has none); topology: the replica's topology from the
            fleet file (None without one); recorded: the row's ``node`` (None in rows of
            ledger versions 1-2 and of replicas without a topology).

    Returns:
        ``{"kind", "node", "gpu", "rail"}``, each a string, ``""`` where it does not apply.
    """
    out = {"kind": str(kind), "node": "", "gpu": "", "rail": ""}
    node = recorded or (None if topology is None else topology.row_node(str(kind), str(component), gpu, peer_gpu))
    out["node"] = "" if node is None or "," in node else node  # "a17,a18": a path between two hosts
    if kind == "gpu" and gpu is not None:
        out["gpu"] = str(int(gpu))
    if kind == "nic" and (m := _RAIL.fullmatch(str(component))):
        out["rail"] = m.group(1)
    return out
