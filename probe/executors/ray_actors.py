"""The ``ray`` executor: a replica's GPUs as Ray actors, possibly on other machines.

One actor per GPU runs the same worker as the ``local`` executor
(:class:`~.moe_worker.ProbeWorker`: that GPU's experts, its part of the all-to-all among a
probe's members, or among every rank in ``all_ranks`` mode); the actors form a ``torch.distributed`` process group (gloo on CPU, NCCL on
GPUs) whose rendezvous is on actor 0's node. A placement group with one bundle per GPU
(``{"GPU": 1}`` on GPU clusters, ``{"CPU": c}`` otherwise) pins actor ``g`` to bundle ``g``,
which is how a sweep reaches replicas on other machines. Each actor reports its host
(:attr:`RayExecutor.hosts`), from which a sweep names the replica's nodes where the fleet file
gives no ``node_names``.

A dead or hung actor turns the probe into an error measurement within ``timeout_s``; the
actors are then killed and later probes return errors too (make a new executor).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

import ray
import torch
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from faultsense_pipelines.replica.executor import ExecutorError
from faultsense_pipelines.replica.topology import ReplicaTopology
from faultsense_pipelines.replica.vocabulary import Engine

from .common import LayerOptions, WorkerPoolExecutor, warm_up_probes
from .injection import Injection
from .moe_worker import LayerShape, ProbeWorker

__all__ = ["ProbeActor", "RayExecutor"]


class ProbeActor:
    """A Ray actor hosting GPU ``rank`` of a replica (wrapped with ``ray.remote`` on use)."""

    def __init__(self, shape: LayerShape, rank: int, use_gpu: bool, engine: str = Engine.MEMBER_ONLY) -> None:
        torch.set_num_threads(1)
        # Ray exposes the bundle's one GPU as cuda:0 (CUDA_VISIBLE_DEVICES)
        self.worker = ProbeWorker(shape, rank, "cuda:0" if use_gpu else "cpu", engine)
        self.rank, self.shape = rank, shape

    def endpoint(self) -> tuple[str, int]:
        """An address and a free TCP port on this actor's node, for the process group's store."""
        with socket.socket() as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
        return ray.util.get_node_ip_address(), port

    def host(self) -> str:
        """The name of the machine this actor runs on (its hostname, as the host calls itself)."""
        return socket.gethostname()

    def setup(self, init_method: str, backend: str, timeout_s: float) -> int:
        """Join the process group (every actor must call this at the same time); returns the pid."""
        import torch.distributed as dist

        if backend == "nccl":
            torch.cuda.set_device(0)
        dist.init_process_group(
            backend, init_method=init_method, rank=self.rank, world_size=self.shape.n_gpus, timeout=timedelta(seconds=timeout_s)
        )
        dist.barrier()
        return os.getpid()

    def set_injections(self, injections: tuple[Injection, ...]) -> None:
        self.worker.set_injections(injections)

    def run_probe(self, members: tuple[int, ...], repeats: int) -> dict:
        return self.worker.run_probe(members, repeats)

    def shutdown(self) -> None:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()


class RayExecutor(WorkerPoolExecutor):
    """Runs probes on ``gpus`` Ray actors (one per GPU) placed by a placement group.

    Args:
        gpus: GPUs (actors) in the replica, ``n >= 1``.
        probe_size: the plan's probe size ``k`` (probes may have any size ``1..n``).
        address: Ray cluster address (``"auto"``, ``"ray://host:10001"``, ...); ``None`` joins
            the cluster this process already initialized, or starts a local one.
        inject: faults, as for :class:`~.local.LocalExecutor`.
        use_gpus: bundles ``{"GPU": 1, "CPU": cpus_per_actor}`` and NCCL; else CPU and gloo.
        cpus_per_actor: CPUs reserved per bundle (a local cluster gets ``n * cpus_per_actor``).
        tokens, hidden, intermediate, experts_per_gpu, dtype, seed: the layer, as for
            :class:`~.local.LocalExecutor`.
        timeout_s: a probe that has not finished after this long is an error.
        start_timeout_s: how long placement and process-group setup may take.
        engine: ``"member_only"`` (default) or ``"all_ranks"``, as for
            :class:`~.local.LocalExecutor`.
        topology: where the GPUs sit, as for :class:`~.local.LocalExecutor`.

    Raises:
        ValueError: for a bad argument or injection (naming it).
        ExecutorError: if the actors cannot be placed or started.
    """

    name = "ray"

    def __init__(
        self,
        gpus: int,
        probe_size: int,
        *,
        address: str | None = None,
        inject: Iterable[Mapping[str, Any] | Injection] = (),
        use_gpus: bool = False,
        cpus_per_actor: float = 1,
        tokens: int | None = None,
        hidden: int = 2048,
        intermediate: int | None = None,
        experts_per_gpu: int = 1,
        dtype: str = "bfloat16",
        seed: int = 0,
        timeout_s: float = 60.0,
        start_timeout_s: float = 180.0,
        engine: Engine | str = Engine.MEMBER_ONLY,
        topology: ReplicaTopology | None = None,
    ) -> None:
        layer = LayerOptions(tokens, hidden, intermediate, experts_per_gpu, dtype, seed)
        self._configure(gpus, probe_size, inject, layer, timeout_s, start_timeout_s, engine, topology)
        if isinstance(cpus_per_actor, bool) or not isinstance(cpus_per_actor, (int, float)) or not cpus_per_actor > 0:
            raise ValueError(f"cpus_per_actor must be > 0, got {cpus_per_actor!r}")
        self.use_gpus = bool(use_gpus)
        self.backend = "nccl" if use_gpus else "gloo"
        self._actors: list = []
        #: The host each GPU's actor runs on (``hosts[g]``), read when the actors start: the
        #: sweep names the replica's nodes after them where the fleet file does not
        #: (:meth:`~faultsense_pipelines.replica.topology.ReplicaTopology.named_by_hosts`).
        self.hosts: tuple[str, ...] = ()
        self._pg = None
        self._owns_ray = False
        try:
            self._start(address, float(cpus_per_actor), float(start_timeout_s))
        except BaseException as exc:
            self.close()
            if isinstance(exc, (ExecutorError, ValueError)):
                raise
            raise ExecutorError(f"ray executor could not start {gpus} actors: {type(exc).__name__}: {exc}") from exc

    def _start(self, address: str | None, cpus: float, start_timeout_s: float) -> None:
        if not ray.is_initialized():
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(num_cpus=max(1, int(self.gpus * cpus + 0.999)), include_dashboard=False, log_to_driver=False)
            self._owns_ray = True
        bundle = {"GPU": 1, "CPU": cpus} if self.use_gpus else {"CPU": cpus}
        pg = self._pg = placement_group([dict(bundle) for _ in range(self.gpus)], strategy="PACK")
        ray.get(pg.ready(), timeout=start_timeout_s)
        actor_cls = ray.remote(ProbeActor)
        self._actors = [
            actor_cls.options(
                num_cpus=cpus,
                num_gpus=1 if self.use_gpus else 0,
                scheduling_strategy=PlacementGroupSchedulingStrategy(placement_group=pg, placement_group_bundle_index=g),
            ).remote(self.shape, g, self.use_gpus, self.engine.value)
            for g in range(self.gpus)
        ]
        host, port = ray.get(self._actors[0].endpoint.remote(), timeout=start_timeout_s)
        init_method = f"tcp://{host}:{port}"
        pids = ray.get([a.setup.remote(init_method, self.backend, self.timeout_s) for a in self._actors], timeout=start_timeout_s)
        self.worker_pids = tuple(pids)
        self.hosts = tuple(ray.get([a.host.remote() for a in self._actors], timeout=start_timeout_s))
        groups = warm_up_probes(self.gpus, self.probe_size)  # every worker learns its usual layer time
        for group in groups:
            ray.get([self._actors[g].run_probe.remote(group, 2) for g in self._ranks_of(group)], timeout=start_timeout_s)
        if self.injections:
            ray.get([a.set_injections.remote(self.injections) for a in self._actors], timeout=start_timeout_s)

    def _call(self, ranks: Sequence[int], method: str, *args: Any) -> list | str:
        if self._failure is not None:
            return f"ray executor is down after an earlier failure: {self._failure}"
        refs = [getattr(self._actors[r], method).remote(*args) for r in ranks]
        try:
            return ray.get(refs, timeout=self.timeout_s)
        except ray.exceptions.GetTimeoutError:
            reason = f"GPU actor(s) {list(ranks)} did not answer within {self.timeout_s:g} s (hung?)"
        except ray.exceptions.RayActorError as exc:
            reason = f"a GPU actor of {list(ranks)} died: {type(exc).__name__}"
        except ray.exceptions.RayTaskError as exc:
            reason = f"a GPU actor of {list(ranks)} failed: {exc.cause!r}"
        self._failure = reason
        self._kill_actors()
        return reason

    def _probe(self, members: tuple[int, ...], repeats: int) -> dict[int, Any] | str:
        ranks = self._ranks_of(members)
        replies = self._call(ranks, "run_probe", members, repeats)
        return replies if isinstance(replies, str) else {r: rep for r, rep in zip(ranks, replies) if r in members}

    def _inject(self, injections: tuple[Injection, ...]) -> str | None:
        replies = self._call(range(self.gpus), "set_injections", injections)
        return replies if isinstance(replies, str) else None

    def _kill_actors(self) -> None:
        for actor in self._actors:
            ray.kill(actor, no_restart=True)
        self._actors = []
        if self._pg is not None:
            remove_placement_group(self._pg)
            self._pg = None

    def close(self) -> None:
        """Stop the actors, free the placement group, and stop Ray if this executor started it."""
        if self._actors and self._failure is None:
            with contextlib.suppress(Exception):  # a broken group is killed below all the same
                ray.get([a.shutdown.remote() for a in self._actors], timeout=10)
        if ray.is_initialized():
            self._kill_actors()
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
        self._owns_ray = False

    def __repr__(self) -> str:
        return (
            f"RayExecutor(gpus={self.gpus}, probe_size={self.probe_size}, backend={self.backend!r}, engine={self.engine.value!r})"
        )
