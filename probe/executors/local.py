"""The ``local`` executor: a replica of ``n`` GPUs as ``n`` worker processes on this machine.

Each worker is one rank of a ``torch.distributed`` process group (gloo on CPU, NCCL when
CUDA is available) and hosts one GPU's experts (:class:`~.moe_worker.ProbeWorker`). The
pool starts once and serves many probes: the driver tells a probe's members over per-worker
pipes what to run and the members run the MoE layer for real. In ``member_only`` mode (the
default) non-members stay idle and the all-to-all is among the members only (FaultSense §4.1);
in ``all_ranks`` mode every worker joins every probe's forward, as a real expert-parallel
engine does (:mod:`.moe_worker`). Faults are injected for demos and tests
(:mod:`.injection`).

A worker that dies or hangs turns the probe into an error measurement within ``timeout_s``;
the pool is then torn down and later probes return errors too (make a new executor).
Workers are always reaped: on :meth:`LocalExecutor.close`, on leaving a ``with`` block, when
the executor is garbage-collected, at interpreter exit, and a worker exits by itself when
its driver's pipe closes, and is killed by the kernel when its driver process dies (Linux
``PR_SET_PDEATHSIG``, requested before the worker imports torch: :mod:`probe.deathsig`;
elsewhere, or for a pool started outside the main thread, within :data:`ORPHAN_CHECK_S`), so a
sweep killed with SIGKILL, during the pool's start or mid-probe, leaves no worker (nor
multiprocessing's resource tracker, which ends with the last of them) behind. A killed
driver's rendezvous folder (:data:`STORE_PREFIX`) is removed by the next pool.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import timedelta
from multiprocessing import connection, get_context
from typing import Any

import torch

from faultsense_pipelines._utils import pid_alive
from faultsense_pipelines.replica.executor import ExecutorError
from faultsense_pipelines.replica.topology import ReplicaTopology
from faultsense_pipelines.replica.vocabulary import Engine

from ..deathsig import pack, run_guarded
from .common import LayerOptions, WorkerPoolExecutor, warm_up_probes
from .injection import Injection
from .moe_worker import LayerShape, ProbeWorker

__all__ = ["ORPHAN_CHECK_S", "STORE_PREFIX", "LocalExecutor", "remove_stale_store_dirs"]

#: How often a worker checks that its driver process is still its parent, seconds.
ORPHAN_CHECK_S = 0.5
#: Name prefix of a pool's rendezvous folder in the temp folder: ``faultsense-local-<driver pid>-<random>``.
STORE_PREFIX = "faultsense-local-"
_STORE_RE = re.compile(rf"{STORE_PREFIX}([0-9]+)-[A-Za-z0-9_]+")


def remove_stale_store_dirs(tmp: str | None = None) -> list[str]:
    """Remove the rendezvous folders (:data:`STORE_PREFIX`) in ``tmp`` (default: the temp
    folder) whose driver process is gone: a driver killed with SIGKILL never removes its own.
    Folders of live processes, of other users and of the older unnamed form are left alone.

    Returns:
        The folders removed (absolute paths); a folder that cannot be removed is skipped.
    """
    tmp = tmp or tempfile.gettempdir()
    removed = []
    with suppress(OSError), os.scandir(tmp) as entries:
        for entry in entries:
            m = _STORE_RE.fullmatch(entry.name)
            if m is None or not entry.is_dir(follow_symlinks=False) or entry.stat().st_uid != os.getuid():
                continue
            if not pid_alive(int(m.group(1))):
                shutil.rmtree(entry.path, ignore_errors=True)
                if not os.path.exists(entry.path):
                    removed.append(entry.path)
    return removed


def _exit_when_orphaned(driver_pid: int) -> None:
    """Body of a worker's daemon thread: end the worker at once when its driver is gone.

    A driver killed with SIGKILL runs no cleanup, and a worker in the middle of a probe
    (an injected link delay or slowdown can keep it there for minutes) would only notice
    the closed pipe when it next talks to the driver. The kernel re-parents an orphan, so
    a parent PID other than ``driver_pid`` means the driver has exited. ``os._exit``: the
    process group and the probe in hand are abandoned, as the driver's death already did.
    """
    while os.getppid() == driver_pid:
        time.sleep(ORPHAN_CHECK_S)
    os._exit(0)


def _worker_main(
    rank: int,
    shape: LayerShape,
    backend: str,
    init_method: str,
    pg_timeout_s: float,
    injections: tuple[Injection, ...],
    conn: connection.Connection,
    engine: str,
    driver_pid: int,
) -> None:
    """Body of worker process ``rank``: join the group, then serve commands until told to stop
    (or until the driver process ``driver_pid`` is gone: :func:`_exit_when_orphaned`)."""
    import torch.distributed as dist

    threading.Thread(target=_exit_when_orphaned, args=(driver_pid,), name="orphan-check", daemon=True).start()
    torch.set_num_threads(1)
    device = f"cuda:{rank}" if backend == "nccl" else "cpu"
    if backend == "nccl":
        torch.cuda.set_device(rank)
    try:
        worker = ProbeWorker(shape, rank, device, engine)
        worker.set_injections(injections)
        dist.init_process_group(
            backend, init_method=init_method, rank=rank, world_size=shape.n_gpus, timeout=timedelta(seconds=pg_timeout_s)
        )
        dist.barrier()
        conn.send(("ready", os.getpid()))
        _serve(worker, conn)
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass
    except Exception as exc:  # report startup failures; the driver turns them into ExecutorError
        with suppress(OSError):
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _serve(worker: ProbeWorker, conn: connection.Connection) -> None:
    while True:
        command, *args = conn.recv()  # EOFError when the driver is gone: exit
        if command == "close":
            return
        try:
            if command == "probe":
                reply: Any = worker.run_probe(*args)
            elif command == "inject":
                worker.set_injections(*args)
                reply = None
            else:
                raise ValueError(f"unknown command {command!r}")
            conn.send(("ok", reply))
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


def _reason(exc: BaseException) -> str:
    """``exc``'s message, or its type's name when the message is empty."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextmanager
def _workers_ignore_sigint() -> Iterator[None]:
    """Start worker processes inside this block so that they ignore ``SIGINT`` for life.

    A Ctrl-C in a terminal reaches the whole process group; it belongs to the driver, which
    then reaps its workers. A blocked signal mask is not enough: with torch imported, a spawned
    worker starts with an empty mask and a Ctrl-C during its bootstrap printed a
    ``KeyboardInterrupt`` traceback. An *ignored* ``SIGINT`` survives ``exec``, and Python then
    never installs its handler, so in the main thread the disposition is ``SIG_IGN`` while the
    block runs (with the signal also blocked, and a Ctrl-C already pending re-raised after).
    A Ctrl-C sent during the block itself (a few ms per worker) is dropped by the kernel.
    Outside the main thread (where ``signal.signal`` is not allowed) only the mask is set.
    """
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    main = threading.current_thread() is threading.main_thread()
    pending = main and signal.SIGINT in signal.sigpending()
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        yield
    finally:
        if main:  # None: a handler installed outside Python; Python's own is the closest
            signal.signal(signal.SIGINT, signal.default_int_handler if handler is None else handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        if pending:
            signal.raise_signal(signal.SIGINT)


def _reap(processes: list, conns: list, store_dir: str, how: dict) -> None:
    """Stop workers politely (unless ``how["polite"]`` is false), then by force; never
    leaves one behind."""
    for conn in conns if how["polite"] else ():
        with suppress(OSError):
            conn.send(("close",))
    deadline = time.monotonic() + (5.0 if how["polite"] else 0.0)
    for p in processes:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in processes:
        if p.is_alive():
            p.kill()
            p.join(5.0)
    for conn in conns:
        conn.close()
    shutil.rmtree(store_dir, ignore_errors=True)


class LocalExecutor(WorkerPoolExecutor):
    """Runs probes on ``gpus`` worker processes of this machine (one per GPU).

    Args:
        gpus: GPUs (worker processes) in the replica, ``n >= 1``.
        probe_size: the plan's probe size ``k`` (kept for the fleet; probes may have any size
            ``1..n``, and the router's top-k is each probe's size).
        inject: faults, e.g. ``[{"gpu": 2, "slowdown": 3.0}, {"link": [0, 5], "delay_ms": 2.0}]``.
        tokens: tokens per probe (split over the members), ``>= probe_size``; default
            :data:`~.common.DEFAULT_TOKENS` of the engine (64 ``member_only``, 128 ``all_ranks``).
        hidden: model hidden size (OLMoE-1B-7B: 2048).
        intermediate: expert FFN width; default :data:`~.common.DEFAULT_INTERMEDIATE` of the
            engine (1024, OLMoE-1B-7B's, ``member_only``; 8192 ``all_ranks``).
        experts_per_gpu: experts each GPU hosts.
        dtype: ``"bfloat16"`` (default), ``"float16"`` or ``"float32"``.
        backend: ``"gloo"`` or ``"nccl"``; default NCCL when ``n`` CUDA devices exist, else gloo.
        seed: seeds the experts' weights.
        timeout_s: a probe that has not finished after this long is an error.
        start_timeout_s: how long the pool may take to start.
        engine: ``"member_only"`` (default: only a probe's GPUs run it) or ``"all_ranks"``
            (every worker joins every probe's forward: shared attention, all-rank dispatch and
            combine; :class:`~faultsense_pipelines.replica.vocabulary.Engine`).
        topology: where the GPUs sit; needed to inject a NIC, NVSwitch or switch delay
            (``{"nic": 1, "delay_ms": 2.0}``: every transfer on the paths it carries).

    Attributes:
        worker_pids: the process id of each GPU's worker, in GPU order (for outside tools).

    Raises:
        ValueError: for a bad argument or injection (naming it).
        ExecutorError: if the workers cannot start.
    """

    name = "local"

    def __init__(
        self,
        gpus: int,
        probe_size: int,
        *,
        inject: Iterable[Mapping[str, Any] | Injection] = (),
        tokens: int | None = None,
        hidden: int = 2048,
        intermediate: int | None = None,
        experts_per_gpu: int = 1,
        dtype: str = "bfloat16",
        backend: str | None = None,
        seed: int = 0,
        timeout_s: float = 60.0,
        start_timeout_s: float = 180.0,
        engine: Engine | str = Engine.MEMBER_ONLY,
        topology: ReplicaTopology | None = None,
    ) -> None:
        layer = LayerOptions(tokens, hidden, intermediate, experts_per_gpu, dtype, seed)
        self._configure(gpus, probe_size, inject, layer, timeout_s, start_timeout_s, engine, topology)
        cuda = torch.cuda.is_available() and torch.cuda.device_count() >= gpus
        backend = backend or ("nccl" if cuda else "gloo")
        if backend not in ("gloo", "nccl"):
            raise ValueError(f"backend must be 'gloo' or 'nccl', got {backend!r}")
        if backend == "nccl" and not cuda:
            raise ValueError(f"backend 'nccl' needs {gpus} CUDA devices, found {torch.cuda.device_count()}")
        self.backend = backend
        self._processes: list[Any] = []  # multiprocessing spawn-context processes
        self._conns: list[connection.Connection] = []
        remove_stale_store_dirs()
        store_dir = tempfile.mkdtemp(prefix=f"{STORE_PREFIX}{os.getpid()}-")
        self._reap_how = {"polite": True}  # a broken pool is killed at once
        self._finalizer = weakref.finalize(self, _reap, self._processes, self._conns, store_dir, self._reap_how)
        try:
            self._start(store_dir, float(start_timeout_s))
        except BaseException as exc:
            self._reap_how["polite"] = False
            self.close()
            if isinstance(exc, ExecutorError) or not isinstance(exc, Exception):
                raise  # an interrupt (KeyboardInterrupt, Dagster's) stays an interrupt, never an error row
            raise ExecutorError(f"local executor could not start {gpus} workers: {_reason(exc)}") from exc

    def _start(self, store_dir: str, start_timeout_s: float) -> None:
        ctx = get_context("spawn")
        deathsig = threading.current_thread() is threading.main_thread()  # see probe.deathsig
        init_method = f"file://{os.path.join(store_dir, 'store')}"
        # the executor's own deadlines decide (and reap the pool); the process group's timeout is
        # only a backstop, longer than either, so a hung rank is always reported as hung
        pg_timeout_s = 2 * max(self.timeout_s, start_timeout_s) + 10
        for rank in range(self.gpus):
            parent, child = ctx.Pipe()
            # run_guarded: the worker asks for SIGKILL on the driver's death before it imports torch
            packed = pack(_worker_main, rank, self.shape, self.backend, init_method, pg_timeout_s, self.injections)
            p = ctx.Process(
                target=run_guarded,
                name=f"faultsense-gpu{rank}",
                daemon=True,
                args=(os.getpid(), deathsig, packed, child, self.engine.value, os.getpid()),
            )
            with _workers_ignore_sigint():  # the worker inherits an ignored SIGINT: Ctrl-C is the driver's
                p.start()
            child.close()
            self._processes.append(p)
            self._conns.append(parent)
        replies = self._collect(range(self.gpus), start_timeout_s)
        if isinstance(replies, str):
            raise ExecutorError(f"local executor could not start {self.gpus} workers: {replies}")
        self.worker_pids = tuple(replies[r] for r in range(self.gpus))
        for group in warm_up_probes(self.gpus, self.probe_size):  # every worker learns its usual layer time
            warm = self._call(self._ranks_of(group), ("probe", group, 2), start_timeout_s)
            if isinstance(warm, str):
                raise ExecutorError(f"local executor failed its warm-up probe {list(group)}: {warm}")

    def _collect(self, ranks: Iterable[int], timeout_s: float) -> dict[int, Any] | str:
        """Wait for one reply from each of ``ranks``; a string says why that failed."""
        pending = {self._conns[r]: r for r in ranks}
        sentinels = {self._processes[r].sentinel: r for r in pending.values()}
        replies: dict[int, Any] = {}
        deadline = time.monotonic() + timeout_s
        while pending:
            ready = connection.wait([*pending, *sentinels], timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                return f"GPU worker(s) {sorted(pending.values())} did not answer within {timeout_s:g} s (hung?)"
            for obj in ready:
                if obj in pending:
                    rank = pending.pop(obj)
                    del sentinels[self._processes[rank].sentinel]
                    try:
                        status, payload = self._conns[rank].recv()
                    except (EOFError, OSError):
                        return f"GPU worker {rank} died (exit code {self._processes[rank].exitcode})"
                    if status == "error":
                        return f"GPU worker {rank} failed: {payload}"
                    replies[rank] = payload
                elif obj in sentinels:
                    rank = sentinels[obj]
                    self._processes[rank].join(1.0)
                    return f"GPU worker {rank} died (exit code {self._processes[rank].exitcode})"
        return replies

    def _fail(self, reason: str) -> str:
        self._failure = reason
        self._reap_how["polite"] = False
        self._finalizer()
        return reason

    def _call(self, ranks: Sequence[int], message: tuple, timeout_s: float) -> dict[int, Any] | str:
        if self._failure is not None:
            return f"local executor is down after an earlier failure: {self._failure}"
        for r in ranks:
            try:
                self._conns[r].send(message)
            except OSError:
                return self._fail(f"GPU worker {r} is gone (exit code {self._processes[r].exitcode})")
        replies = self._collect(ranks, timeout_s)
        return self._fail(replies) if isinstance(replies, str) else replies

    def _probe(self, members: tuple[int, ...], repeats: int) -> dict[int, Any] | str:
        replies = self._call(self._ranks_of(members), ("probe", members, repeats), self.timeout_s)
        return replies if isinstance(replies, str) else {m: replies[m] for m in members}

    def _inject(self, injections: tuple[Injection, ...]) -> str | None:
        replies = self._call(range(self.gpus), ("inject", injections), self.timeout_s)
        return replies if isinstance(replies, str) else None

    def close(self) -> None:
        """Stop and reap every worker process. Safe to call twice."""
        self._finalizer()

    def __repr__(self) -> str:
        state = "closed" if not self._finalizer.alive else "running"
        return (
            f"LocalExecutor(gpus={self.gpus}, probe_size={self.probe_size}, backend={self.backend!r}, "
            f"engine={self.engine.value!r}, {state})"
        )
