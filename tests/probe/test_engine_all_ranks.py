"""``engine: all_ranks``: every worker of a ``local`` pool joins every probe's forward.

In a real expert-parallel engine (vLLM) every rank runs every forward and joins its
collectives, so a rank outside a probe can hold the probe up; ``member_only`` (the paper's
model) never contacts it. These tests start real worker processes (gloo) and show the
difference by *order of events*, not by wall-clock bounds: with one worker stopped by
``SIGSTOP`` from outside, a probe without that worker finishes while it is still stopped in
``member_only`` mode and only after it was continued in ``all_ranks`` mode. The layer output
is checked against a one-process computation of the MoE layer written out here (the shared
attention adds nothing: the probe model's ``o_proj`` is zero), and the contrast under an
injected slowdown is computed from latencies measured side by side.
"""

from __future__ import annotations

import os
import signal
import statistics
import threading

import pytest
import torch
import torch.nn.functional as F

from faultsense_pipelines.fleet import parse_fleet
from faultsense_pipelines.probe.encoding import probe_embeddings
from faultsense_pipelines.probe.executors.local import LocalExecutor
from faultsense_pipelines.probe.executors.moe_worker import LayerShape, attention_shard, expert_weights
from faultsense_pipelines.replica.vocabulary import Engine

pytestmark = pytest.mark.integration  # real torch.distributed worker processes

N, K = 3, 2
# fp32 for an exact comparison; a wide expert FFN (3*H*I per token against each rank's
# 2*H*H/n of attention projections: 36x here), so that it is most of a member's work
LAYER = {"tokens": 32, "hidden": 512, "intermediate": 2048, "dtype": "float32", "seed": 5}
SLOWDOWN = 6.0
STOPPED = 2  # the worker stopped from outside
STOP_S = 3.0  # how long it stays stopped unless the probe under test returns first


@pytest.fixture(scope="module")
def pools():
    with (
        LocalExecutor(N, K, engine="member_only", timeout_s=60, **LAYER) as member_only,
        LocalExecutor(N, K, engine="all_ranks", timeout_s=60, **LAYER) as all_ranks,
    ):
        yield {Engine.MEMBER_ONLY: member_only, Engine.ALL_RANKS: all_ranks}


def reference_checksum(probe: tuple[int, ...]) -> float:
    """Sum of the MoE layer's output over the probe tokens, computed token by token here."""
    shape = LayerShape(N, **LAYER)
    x = probe_embeddings(probe, N, N, len(probe), shape.hidden, shape.tokens, torch.float32)  # (T, H)
    weights, experts = torch.softmax(x[:, :N], dim=-1).topk(len(probe), dim=-1)  # (T, k)
    expert = [expert_weights(shape, e) for e in range(N)]  # E = n experts
    total = 0.0
    for t in range(x.shape[0]):
        for w, e in zip(weights[t].tolist(), experts[t].tolist()):
            gate_up, down = expert[e]
            gate, up = gate_up[: shape.intermediate], gate_up[shape.intermediate :]
            total += w * float(((F.silu(x[t] @ gate.T) * (x[t] @ up.T)) @ down.T).sum())
    return total


@pytest.mark.parametrize("probe", [(0, 1), (1, 2), (2,), (0, 1, 2)])
def test_all_ranks_computes_the_same_layer_on_the_same_experts_as_member_only(pools, probe):
    want = reference_checksum(probe)
    for engine, pool in pools.items():
        trace = pool.run_traced(probe, repeats=1)
        assert trace.measurement.ok, (engine, trace.measurement.error)
        assert trace.checksum == pytest.approx(want, rel=1e-4, abs=1e-4), engine
        assert trace.experts_computed == {g: (g,) for g in probe}, engine  # one expert per GPU, E = n


def test_the_attention_shards_cover_every_head_once():
    shape = LayerShape(8, hidden=2048, head_dim=32, kv_heads=8)
    q = [h for r in range(8) for h in attention_shard(shape, r)[0]]
    kv = [h for r in range(8) for h in attention_shard(shape, r)[1]]
    assert q == list(range(64)) and kv == list(range(8))  # 64 query heads, 8 KV heads, TP 8
    # fewer KV heads than ranks: each rank keeps the one its queries use (vLLM replicates)
    one_kv = LayerShape(4, hidden=256, head_dim=32, kv_heads=1)
    assert [attention_shard(one_kv, r) for r in range(4)] == [(range(2 * r, 2 * r + 2), range(0, 1)) for r in range(4)]


def _probe_while_stopped(pool: LocalExecutor, probe: tuple[int, ...]) -> tuple[bool, list[float]]:
    """Stop worker ``STOPPED`` with SIGSTOP, run ``probe`` once, continue the worker when the
    probe returns or after ``STOP_S``; return whether the probe returned while it was stopped."""
    pid = pool.worker_pids[STOPPED]
    returned, continued = threading.Event(), threading.Event()

    def resume_later() -> None:
        returned.wait(STOP_S)
        continued.set()  # set before SIGCONT: a probe that sees it unset returned while stopped
        os.kill(pid, signal.SIGCONT)

    os.kill(pid, signal.SIGSTOP)
    thread = threading.Thread(target=resume_later)
    thread.start()
    try:
        m = pool.run(probe, repeats=1)
        while_stopped = not continued.is_set()
    finally:
        returned.set()
        thread.join()
    assert m.ok, m.error
    return while_stopped, list(m.latencies_ms)


def test_a_stopped_rank_holds_up_a_probe_without_its_experts_only_in_all_ranks_mode(pools):
    not_held, _ = _probe_while_stopped(pools[Engine.MEMBER_ONLY], (0, 1))
    held, _ = _probe_while_stopped(pools[Engine.ALL_RANKS], (0, 1))
    assert not_held, "member_only: a probe of GPUs 0, 1 must not wait for the stopped GPU 2"
    assert not held, "all_ranks: a probe of GPUs 0, 1 must wait for the stopped GPU 2"
    # and both pools still work afterwards
    assert all(p.run((0, 1), 1).ok for p in pools.values())


def test_all_ranks_slow_rank_slows_its_own_probes_more_than_the_others(pools):
    pool = pools[Engine.ALL_RANKS]
    pool.set_injections([{"gpu": STOPPED, "slowdown": SLOWDOWN}])
    try:
        own, other = [], []
        for _ in range(4):  # interleaved, so that outside load hits both alike
            own.append(statistics.median(pool.run((1, STOPPED), 3).latencies_ms))
            other.append(statistics.median(pool.run((0, 1), 3).latencies_ms))
    finally:
        pool.set_injections([])
    # its attention share (and the collectives) slow both; its expert FFN only its own probes.
    # The healthy time per forward here is mostly the ranks' synchronisation on 2 shared cores,
    # so the contrast stays well below the 6x (bench/results/ep_contrast.md measures it)
    contrast = statistics.median(own) / statistics.median(other)
    assert contrast > 1.3, (own, other)


def test_the_fleet_file_takes_engine_and_names_the_field_of_a_bad_one():
    base = {"ledger": "x", "replicas": [{"name": "l", "gpus": 4, "probe_size": 2, "executor": "local"}]}
    fleet = parse_fleet({**base, "replicas": [{**base["replicas"][0], "local": {"engine": "all_ranks"}}]})
    assert fleet.replicas[0].local is not None and fleet.replicas[0].local.engine is Engine.ALL_RANKS
    ray = {"name": "r", "gpus": 4, "probe_size": 2, "executor": "ray", "ray": {"engine": "member_only", "tokens": 32}}
    assert parse_fleet({**base, "replicas": [ray]}).replicas[0].ray.engine is Engine.MEMBER_ONLY
    with pytest.raises(ValueError, match=r"replicas\[0\]\.local\.engine: .*'member_only' or 'all_ranks'"):
        parse_fleet({**base, "replicas": [{**base["replicas"][0], "local": {"engine": "everyone"}}]})


@pytest.mark.slow  # ~20 s: a Ray start and 3 actors
def test_ray_actors_in_all_ranks_mode_compute_the_same_layer():
    pytest.importorskip("ray")
    from faultsense_pipelines.probe.executors.ray_actors import RayExecutor

    with RayExecutor(N, K, engine="all_ranks", **LAYER) as ray_pool:
        assert ray_pool.engine is Engine.ALL_RANKS
        for probe in [(0, 1), (2,)]:
            trace = ray_pool.run_traced(probe)
            assert trace.measurement.ok, trace.measurement.error
            assert trace.checksum == pytest.approx(reference_checksum(probe), rel=1e-4, abs=1e-4)
            assert trace.experts_computed == {g: (g,) for g in probe}


def test_each_member_reports_the_cpu_time_of_its_ffn_stage(pools):
    # one torch thread per worker does the FFN, so its thread CPU time is positive and at most
    # the stage's wall time (the clock of the same stage, measured around the same code)
    for engine, ex in pools.items():
        trace = ex.run_traced((0, 2), repeats=2)
        assert trace.measurement.ok, trace.measurement.error
        for m in (0, 2):
            assert len(trace.ffn_cpu_ms[m]) == len(trace.ffn_ms[m]) == 2, engine
            assert all(0.0 < cpu <= wall * 1.01 + 0.05 for cpu, wall in zip(trace.ffn_cpu_ms[m], trace.ffn_ms[m])), engine
        assert all(a > 0.0 for a in trace.attention_ms[0]) == (engine is Engine.ALL_RANKS)


@pytest.mark.parametrize(("engine", "width"), [("member_only", 1024), ("all_ranks", 8192)])
def test_the_expert_width_defaults_by_engine(engine, width):
    # 1024: OLMoE-1B-7B's expert intermediate size (the paper's probe); 8192: the all_ranks
    # width chosen in bench/results/ep_contrast.md. An explicit width always wins.
    with LocalExecutor(2, 2, engine=engine, hidden=64, tokens=4) as ex:
        assert ex.shape.intermediate == width
    with LocalExecutor(2, 2, engine=engine, hidden=64, intermediate=32, tokens=4) as ex:
        assert ex.shape.intermediate == 32
