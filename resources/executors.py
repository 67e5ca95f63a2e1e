"""The GPU resource: builds, reuses and closes each replica's probe executor.

One executor per replica per run: Phase 1 and Phase 2 of a sweep share it (the sweep job
runs in-process), so a ``local`` replica starts its worker processes once. Executors are
built by :func:`faultsense_pipelines.probe.executors.make_executor` (the one registry of
executor kinds, :data:`~faultsense_pipelines.probe.executors.EXECUTOR_BUILDERS`) from the
replica's section of the fleet file, its faults passed on as the validated objects;
a vLLM API key is read by the executor from the environment variable the fleet file names,
so the key itself never enters Dagster config, logs, metadata or the ledger.
"""

from __future__ import annotations

import os
from typing import Any

import dagster as dg
from pydantic import PrivateAttr

from faultsense_pipelines.fleet import LocalOptions, RayOptions, Replica, SimulatedOptions
from faultsense_pipelines.replica.executor import ProbeExecutor
from faultsense_pipelines.replica.vocabulary import ExecutorKind

__all__ = ["ProbeExecutorResource", "executor_options", "redact_secrets"]


def executor_options(replica: Replica) -> dict[str, Any]:
    """Keyword options for ``make_executor`` from the replica's executor section.

    Faults (``simulated.faults``) and injections (``local.inject``, ``ray.inject``) are the
    objects the fleet file was validated into (:mod:`faultsense_pipelines.replica.faults`), not
    re-parsed dicts; the other options are the section's set fields.
    """
    section = replica.options
    if isinstance(section, SimulatedOptions):
        return {
            "faults": list(section.faults),
            "noise_sigma": section.noise_sigma,
            "seed": section.seed,
            "base_ms": section.base_ms,
            "topology": replica.replica_topology,
        }
    options = section.model_dump(exclude_none=True, exclude={"inject"})
    if isinstance(section, LocalOptions | RayOptions):  # executor local or ray
        options["inject"] = list(section.inject)
        if replica.gpus_per_node is not None or replica.topology is not None:
            options["topology"] = replica.replica_topology
    return options


def redact_secrets(text: str, replica: Replica) -> str:
    """``text`` through the one scrubber (:func:`faultsense_pipelines.redaction.scrub`): every
    registered secret and the value of the replica's API-key variable (if set), in any form
    (verbatim, repr / JSON escaped, whitespace-split, truncated), replaced by ``***``."""
    from faultsense_pipelines.redaction import scrub

    env = replica.vllm.api_key_env if replica.vllm is not None else None
    return scrub(text, [os.environ.get(env)] if env else ())


class ProbeExecutorResource(dg.ConfigurableResource):
    """Runs probes on the fleet's replicas (the sweep's "GPU resource").

    Attributes:
        ray_address: overrides every ``ray`` replica's cluster address (e.g. ``auto`` on a
            Ray head node); empty keeps the fleet file's.
    """

    ray_address: str = ""

    _executors: dict[str, ProbeExecutor] = PrivateAttr(default_factory=dict)

    def executor_for(self, replica: Replica) -> ProbeExecutor:
        """The replica's executor, built on first use in this run.

        Raises:
            ExecutorError: the executor could not start (workers, cluster, server).
            ValueError: the replica's section does not suit the executor.
        """
        if replica.name not in self._executors:
            from faultsense_pipelines.probe.executors import make_executor

            options = executor_options(replica)
            if replica.executor == ExecutorKind.RAY and self.ray_address:
                options["address"] = self.ray_address
            self._executors[replica.name] = make_executor(replica.executor, replica.gpus, replica.probe_size, **options)
        return self._executors[replica.name]

    def close_all(self) -> None:
        """Close every executor built so far (idempotent)."""
        while self._executors:
            _, executor = self._executors.popitem()
            executor.close()

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        self.close_all()
