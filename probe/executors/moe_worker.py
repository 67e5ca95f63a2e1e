"""One GPU's share of a probe: its experts, and its part of the probe's all-to-all.

A probe over GPU set ``S`` (FaultSense §4.1) runs one expert-parallel MoE layer whose tokens
touch only the experts on ``S``. This module is the worker side shared by the ``local``
(spawned processes) and ``ray`` (actors) executors: each worker is one rank of a
``torch.distributed`` process group and hosts the experts of one GPU under linear placement
(GPU ``g`` hosts experts ``[g*E/n, (g+1)*E/n)``). Per repeat, every member of ``S``:

1. routes its data-parallel shard of the probe tokens with the probe model's identity router
   (``logits = x[:, :E]``, softmax in fp32, top-``|S|``; FaultSense §4.1);
2. dispatches each (token, expert) pair to the expert's GPU — split sizes per expert first,
   then the tokens grouped by expert — an all-to-all built from point-to-point sends;
3. runs the SwiGLU expert FFN (OLMoE: ``down(silu(gate(x)) * up(x))``) on what it received;
4. sends the outputs back (the combine all-to-all) and sums them weighted by the router.

Which ranks take part is the pool's :class:`~faultsense_pipelines.replica.vocabulary.Engine`:

* ``member_only`` (the paper's model): only the members of ``S``; ranks outside ``S`` are
  never contacted, so a straggler outside the probe cannot slow it.
* ``all_ranks`` (what a real expert-parallel engine such as vLLM does): every rank runs every
  forward. Before step 1 each rank computes its tensor-parallel share of the probe model's
  attention over all the probe's tokens (its query heads and their key/value heads, with the
  probe's zero ``o_proj``) and the shares are summed by an all-reduce over every rank; the
  dispatch and combine then exchange split sizes with every rank, non-members sending and
  receiving empty messages. A slow rank thus slows every probe a little (its attention share
  and the collectives wait for it) and the probes holding its experts more (its FFN).

The time from a barrier of the participating ranks to the end of step 4, the slowest
member's, is the probe's latency.

References:
    FaultSense (APSys '26), §4.1 (probe model: identity router, chosen experts, all-to-all
    among the chosen GPUs only); OLMoE (Muennighoff et al., 2024) for the expert FFN and
    attention shapes; vLLM's expert-parallel execution (every rank joins every forward).
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F

from faultsense_pipelines.probe.encoding import expert_range, probe_embeddings
from faultsense_pipelines.replica.vocabulary import Engine

from .injection import GpuFault, Injection, LinkDelay

__all__ = ["LayerShape", "ProbeWorker", "attention_shard", "expert_weights", "route", "swiglu"]

_DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32, "float16": torch.float16}


@dataclass(frozen=True)
class LayerShape:
    """Shape of the probe's MoE layer, shared by every worker of a replica.

    Attributes:
        n_gpus: GPUs (ranks) in the replica, ``n``.
        experts_per_gpu: experts each GPU hosts, ``E/n``.
        hidden: model hidden size ``H`` (OLMoE-1B-7B: 2048); ``>= E``.
        intermediate: expert FFN width ``I`` (OLMoE-1B-7B: 1024).
        tokens: tokens per probe, split into contiguous data-parallel shards over the members.
        dtype: ``"bfloat16"``, ``"float16"`` or ``"float32"``.
        seed: seeds every expert's weights (expert ``e`` gets the same weights on any pool).
        head_dim: attention head size (the probe model: 32); query heads ``H // head_dim``.
        kv_heads: key/value heads of the attention (the probe model's ``slim``: 8).
            Attention runs only in ``all_ranks`` mode (:class:`ProbeWorker`).
    """

    n_gpus: int
    experts_per_gpu: int = 1
    hidden: int = 2048
    intermediate: int = 1024
    tokens: int = 64
    dtype: str = "bfloat16"
    seed: int = 0
    head_dim: int = 32
    kv_heads: int = 8

    def __post_init__(self) -> None:
        for name in ("n_gpus", "experts_per_gpu", "hidden", "intermediate", "tokens", "head_dim", "kv_heads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.hidden < self.n_experts:
            raise ValueError(f"hidden must be >= n_experts={self.n_experts} (identity router), got {self.hidden}")
        if self.dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(_DTYPES)}, got {self.dtype!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"seed must be an integer, got {self.seed!r}")

    @property
    def n_experts(self) -> int:
        """Experts in the layer, ``E = n * experts_per_gpu``."""
        return self.n_gpus * self.experts_per_gpu

    @property
    def q_heads(self) -> int:
        """Query heads of the attention, ``max(1, H // head_dim)``."""
        return max(1, self.hidden // self.head_dim)

    @property
    def torch_dtype(self) -> torch.dtype:
        """:attr:`dtype` as a ``torch.dtype``."""
        return _DTYPES[self.dtype]


def expert_weights(shape: LayerShape, expert: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Deterministic random weights of one expert (the paper's model; no checkpoint needed).

    Returns:
        ``gate_up`` of shape ``(2I, H)`` (gate rows first, as OLMoE's fused ``gate_up_proj``)
        and ``down`` of shape ``(H, I)``, in ``shape.dtype`` on the CPU.
    """
    gen = torch.Generator().manual_seed(shape.seed * 1_000_003 + expert)
    h, i = shape.hidden, shape.intermediate
    gate_up = torch.randn(2 * i, h, generator=gen) / h**0.5  # (2I, H)
    down = torch.randn(h, i, generator=gen) / i**0.5  # (H, I)
    return gate_up.to(shape.torch_dtype), down.to(shape.torch_dtype)


def _attention_weights(shape: LayerShape, rank: int, q_heads: range, kv_heads: range) -> list[torch.Tensor]:
    """Seeded random ``q, k, v`` projections of this rank's heads and the zero ``o_proj``:
    ``(nq*hd, H)``, ``(nkv*hd, H)`` twice, ``(H, nq*hd)``, in ``shape.dtype``."""
    gen = torch.Generator().manual_seed(shape.seed * 1_000_003 + 999_983 * (rank + 1))
    h, hd = shape.hidden, shape.head_dim
    q, kv = len(q_heads) * hd, len(kv_heads) * hd
    wq, wk, wv = (torch.randn(rows, h, generator=gen) / h**0.5 for rows in (q, kv, kv))
    return [w.to(shape.torch_dtype) for w in (wq, wk, wv, torch.zeros(h, q))]


def swiglu(x: torch.Tensor, gate_up: torch.Tensor, down: torch.Tensor) -> torch.Tensor:
    """OLMoE's expert FFN, ``down(silu(gate(x)) * up(x))``: ``(t, H) -> (t, H)``."""
    gate, up = (x @ gate_up.T).chunk(2, dim=-1)  # (t, I) each
    return (F.silu(gate) * up) @ down.T  # (t, H)


def route(x: torch.Tensor, n_experts: int, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The probe model's identity router: dimension ``i`` of the input selects expert ``i``.

    Args:
        x: tokens, shape ``(t, H)`` with ``H >= n_experts``.
        n_experts: experts ``E``.
        top_k: experts per token.

    Returns:
        ``(weights, experts)``, both ``(t, top_k)``: softmax probabilities in fp32 (not
        renormalized over the top-k, as OLMoE's ``norm_topk_prob=False``) and expert ids.

    Examples:
        >>> w, e = route(torch.tensor([[0.0, 1.0, 0.0, 1.0, 5.0]]), n_experts=4, top_k=2)
        >>> sorted(e[0].tolist())
        [1, 3]
    """
    probs = torch.softmax(x[:, :n_experts].float(), dim=-1)  # (t, E)
    return probs.topk(top_k, dim=-1)


def attention_shard(shape: LayerShape, rank: int) -> tuple[range, range]:
    """Rank ``rank``'s tensor-parallel share of the attention: its query and key/value heads.

    Query heads are split into ``n`` contiguous near-equal blocks (a rank may get none when
    ``n`` exceeds the heads); key/value heads likewise when there are at least ``n`` of them,
    else each rank holds the one key/value head its block's queries use (vLLM replicates KV
    heads when ``kv_heads < TP``).

    >>> attention_shard(LayerShape(4, hidden=256, head_dim=32, kv_heads=2), 3)
    (range(6, 8), range(1, 2))
    """
    n, q, kv = shape.n_gpus, shape.q_heads, min(shape.kv_heads, shape.q_heads)
    q_lo, q_hi = rank * q // n, (rank + 1) * q // n
    if kv >= n:
        return range(q_lo, q_hi), range(rank * kv // n, (rank + 1) * kv // n)
    one = min(kv - 1, q_lo * kv // q)
    return range(q_lo, q_hi), range(one, one + 1)


class ProbeWorker:
    """Rank ``rank`` of a replica: hosts GPU ``rank``'s experts and runs its part of probes.

    The caller initializes the default ``torch.distributed`` process group (rank = GPU id)
    before :meth:`run_probe`. In ``member_only`` mode non-members of a probe are never called
    for it; in ``all_ranks`` mode every rank must be called for every probe (see the module
    docstring).

    Args:
        shape: the layer shape (same on every rank).
        rank: this worker's GPU id, ``0..n-1``.
        device: ``"cpu"`` or a CUDA device such as ``"cuda:0"``.
        engine: :class:`~faultsense_pipelines.replica.vocabulary.Engine` (or its word).

    Raises:
        ValueError: for an unknown engine.
    """

    def __init__(self, shape: LayerShape, rank: int, device: str = "cpu", engine: Engine | str = Engine.MEMBER_ONLY) -> None:
        self.shape = shape
        self.rank = rank
        self.device = torch.device(device)
        self.engine = Engine.parse(engine, "engine")
        self.experts = expert_range(rank, shape.n_gpus, shape.n_experts)
        weights = [expert_weights(shape, e) for e in self.experts]
        self.gate_up = [g.to(self.device) for g, _ in weights]  # per local expert, (2I, H)
        self.down = [d.to(self.device) for _, d in weights]  # per local expert, (H, I)
        self.q_heads, self.kv_heads = attention_shard(shape, rank)
        self.attn: list[torch.Tensor] = []  # q, k, v, o of this rank's heads (all_ranks only)
        if self.engine is Engine.ALL_RANKS:
            self.attn = [w.to(self.device) for w in _attention_weights(shape, rank, self.q_heads, self.kv_heads)]
        self.slowdown = 1.0
        self.delays_ms: dict[int, float] = {}
        self._healthy_s: deque[float] = deque(maxlen=15)  # recent layer times without injected work, s
        self._stage_s: dict[str, deque[float]] = {"attention": deque(maxlen=15), "ffn": deque(maxlen=15)}

    def set_injections(self, injections: Iterable[Injection]) -> None:
        """Apply the faults that concern this GPU (a slowdown, delays on its links); clear others."""
        self.slowdown, self.delays_ms = 1.0, {}
        for inj in injections:
            if isinstance(inj, GpuFault) and inj.gpu == self.rank:
                self.slowdown = inj.slowdown
            elif isinstance(inj, LinkDelay) and self.rank in inj.link:
                peer = inj.link[1] if inj.link[0] == self.rank else inj.link[0]
                self.delays_ms[peer] = inj.delay_ms

    # ---- one probe -------------------------------------------------------------------

    def run_probe(self, members: Sequence[int], repeats: int) -> dict:
        """Run this rank's part of the probe over ``members`` ``repeats`` times.

        Returns:
            ``latencies_ms`` (this rank's time per repeat), ``ffn_ms`` (its expert FFN
            stage per repeat, injected slowdown included), ``ffn_cpu_ms`` (the CPU time of
            this rank's thread in that stage, ms: with ``ffn_ms`` it says how far the rank's
            own work was stretched, e.g. by a CPU quota from outside), ``attention_ms`` (its attention
            share per repeat, injected slowdown included; 0 in ``member_only`` mode),
            ``routed_experts`` (its shard's top-k expert ids, ``(tokens_in_shard, k)`` as
            lists; none for a non-member), ``experts_computed`` (ids of its experts that
            processed at least one token) and ``checksum`` (sum of its shard's layer output,
            fp32).

        Raises:
            ValueError: in ``member_only`` mode, if this rank is not a member.
        """
        members = sorted(members)
        member = self.rank in members
        if not member and self.engine is Engine.MEMBER_ONLY:
            raise ValueError(f"GPU {self.rank} is not a member of probe {members}")
        shape = self.shape
        group = list(range(shape.n_gpus)) if self.engine is Engine.ALL_RANKS else members
        embeds = probe_embeddings(
            members, shape.n_gpus, shape.n_experts, len(members), shape.hidden, shape.tokens, shape.torch_dtype
        ).to(self.device)  # (tokens, H)
        rows = torch.arange(shape.tokens).tensor_split(len(members))[members.index(self.rank)] if member else torch.arange(0)
        latencies: list[float] = []
        ffn: list[float] = []
        ffn_cpu: list[float] = []
        attention: list[float] = []
        trace: dict[str, Any] = {}
        for _ in range(repeats):
            self._barrier(group)
            t0 = time.perf_counter()
            attn_s = 0.0
            if self.engine is Engine.ALL_RANKS:
                residual = self._shared_attention(embeds)  # (tokens, H), every rank's share summed
                attn_s = time.perf_counter() - t0
                x = residual[rows]  # (t, H)
            else:
                x = embeds[rows]  # (t, H)
            out, trace = self._layer(x, group, len(members), t0)
            self._sync()
            elapsed = time.perf_counter() - t0
            self._healthy_s.append(elapsed - trace.pop("extra_s"))
            latencies.append(elapsed * 1e3)
            ffn.append(trace.pop("ffn_ms"))
            ffn_cpu.append(trace.pop("ffn_cpu_ms"))
            attention.append(attn_s * 1e3)
        trace["checksum"] = float(out.float().sum())
        return {"latencies_ms": latencies, "ffn_ms": ffn, "ffn_cpu_ms": ffn_cpu, "attention_ms": attention, **trace}

    def _shared_attention(self, embeds: torch.Tensor) -> torch.Tensor:
        """This rank's attention share over all probe tokens, all-reduced over every rank.

        Causal scaled-dot-product attention of the rank's query heads (grouped-query: each
        uses the key/value head of its group), then the probe model's zero ``o_proj``, so the
        returned residual ``embeds + attention`` equals ``embeds``: ``(T, H) -> (T, H)``.
        RoPE and the q/k norms are left out (element-wise, a small part of the cost).
        """
        t_start = time.perf_counter()
        wq, wk, wv, wo = self.attn
        t, hd = embeds.shape[0], self.shape.head_dim
        nq, nkv = len(self.q_heads), len(self.kv_heads)
        out = torch.zeros(t, embeds.shape[1], dtype=torch.float32, device=self.device)  # (T, H)
        if nq:
            q = (embeds @ wq.T).view(t, nq, hd).transpose(0, 1)  # (nq, T, hd)
            k = (embeds @ wk.T).view(t, nkv, hd).transpose(0, 1)  # (nkv, T, hd)
            v = (embeds @ wv.T).view(t, nkv, hd).transpose(0, 1)  # (nkv, T, hd)
            group = torch.arange(nq, device=self.device) * nkv // nq  # query head -> its KV head
            a = F.scaled_dot_product_attention(q, k[group], v[group], is_causal=True)  # (nq, T, hd)
            out += (a.transpose(0, 1).reshape(t, nq * hd) @ wo.T).float()  # (T, H): zero o_proj
        self._sync()
        self._slow_stage("attention", time.perf_counter() - t_start, lambda: embeds[:8] @ wq.T if nq else None)
        dist.all_reduce(out)  # gloo has no bf16 sum on every build: fp32
        return (embeds.float() + out).to(embeds.dtype)

    def _layer(self, x: torch.Tensor, group: list[int], top_k: int, t0: float) -> tuple[torch.Tensor, dict]:
        per = self.shape.experts_per_gpu
        all_ranks = self.engine is Engine.ALL_RANKS
        weights, experts = route(x, self.shape.n_experts, top_k)  # (t, k) each
        # what goes to each rank of the group: its (token, slot) pairs sorted by expert, and
        # the count per expert of that rank (the all-to-all's split sizes; zeros to non-members)
        picks, counts = {}, {}
        for m in group:
            tok, slot = ((experts // per) == m).nonzero(as_tuple=True)  # (r,) each
            order = experts[tok, slot].argsort(stable=True)
            picks[m] = (tok[order], slot[order])
            counts[m] = torch.bincount(experts[picks[m]] - m * per, minlength=per).to(self.device)  # (E/n,)
        # dispatch: split sizes first, then the tokens (rows grouped by expert)
        counts_in = self._all_to_all(
            group, counts, lambda m: torch.empty(per, dtype=torch.long, device=self.device), delayed=False
        )
        sizes_in = {m: c.tolist() for m, c in counts_in.items()}
        tokens_in = self._all_to_all(
            group,
            {m: x[tok] for m, (tok, _) in picks.items()},
            lambda m: torch.empty(sum(sizes_in[m]), x.shape[1], dtype=x.dtype, device=self.device),
        )
        t_ffn, cpu_ffn = time.perf_counter(), time.thread_time()
        outputs = {m: self._experts_ffn(tokens_in[m], sizes_in[m]) for m in group}  # (r_m, H) each
        self._sync()
        received = sum(t.shape[0] for t in tokens_in.values())
        if all_ranks:
            chunk = torch.cat(list(tokens_in.values()))[: max(1, received // 16)]
            work = (lambda: swiglu(chunk, self.gate_up[0], self.down[0])) if received else None
            extra_s = self._slow_stage("ffn", time.perf_counter() - t_ffn, work)
        else:
            extra_s = self._extra_compute(tokens_in, time.perf_counter() - t0)
        ffn_ms = (time.perf_counter() - t_ffn) * 1e3
        ffn_cpu_ms = (time.thread_time() - cpu_ffn) * 1e3  # torch runs one thread here (set_num_threads(1))
        if all_ranks:  # the combine's split sizes: every rank hears from every rank
            self._all_to_all(
                group,
                {m: torch.tensor([o.shape[0]], device=self.device) for m, o in outputs.items()},
                lambda m: torch.empty(1, dtype=torch.long, device=self.device),
                delayed=False,
            )
        # combine: expert outputs back to the tokens' GPUs, then the router-weighted sum
        back = self._all_to_all(
            group, outputs, lambda m: torch.empty(len(picks[m][0]), x.shape[1], dtype=x.dtype, device=self.device)
        )
        out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)  # (t, H)
        for m, (tok, slot) in picks.items():
            out.index_add_(0, tok, back[m].float() * weights[tok, slot].unsqueeze(1))
        computed = sorted({e for sizes in sizes_in.values() for e, c in zip(self.experts, sizes) if c})
        return out.to(x.dtype), {
            "routed_experts": experts.tolist(),
            "experts_computed": computed,
            "ffn_ms": ffn_ms,
            "ffn_cpu_ms": ffn_cpu_ms,
            "extra_s": extra_s,
        }

    def _slow_stage(self, stage: str, spent_s: float, work: Callable[[], object] | None) -> float:
        """Injected slowdown ``f`` on one compute stage in ``all_ranks`` mode: repeat ``work``
        for ``(f - 1)`` times the stage's usual time (the median of its recent healthy times,
        ``spent_s`` seconds included), so this rank's stage takes ``f`` times as long. A stage
        with nothing to do (``work`` is None: no tokens reached this rank) is neither recorded
        nor slowed. Returns the seconds spent on injected work."""
        if work is None:
            return 0.0
        recent = self._stage_s[stage]
        recent.append(spent_s)
        if self.slowdown <= 1.0:
            return 0.0
        start = time.perf_counter()
        deadline = start + (self.slowdown - 1.0) * statistics.median(recent)
        while time.perf_counter() < deadline:
            work()
            self._sync()
        return time.perf_counter() - start

    def _experts_ffn(self, tokens: torch.Tensor, sizes: list[int]) -> torch.Tensor:
        """Each local expert's FFN on its contiguous block of ``tokens`` (``sizes`` rows each)."""
        blocks = tokens.split(sizes)  # per local expert, (r_e, H)
        return torch.cat([swiglu(b, g, d) for b, g, d in zip(blocks, self.gate_up, self.down)])

    def _extra_compute(self, tokens_in: dict[int, torch.Tensor], so_far_s: float) -> float:
        """Injected slowdown ``f``: real FFN work on slices of the tokens for ``(f - 1)`` times
        this worker's usual time per layer, so its part of the probe takes ``f`` times as long
        (the core's fault model: a slow GPU multiplies the latency of probes that run it).

        The usual time is the median of this worker's recent healthy layer times (its own
        layer time minus injected work), or ``so_far_s`` (seconds since the layer started)
        before it has any: on a shared CPU a single sample can be far off. Returns the
        seconds spent.
        """
        if self.slowdown <= 1.0:
            return 0.0
        usual_s = statistics.median(self._healthy_s) if self._healthy_s else so_far_s
        tokens = torch.cat(list(tokens_in.values()))  # (r, H)
        chunk = tokens[: max(1, tokens.shape[0] // 16)]
        start = time.perf_counter()
        deadline = start + (self.slowdown - 1.0) * usual_s
        while time.perf_counter() < deadline:
            swiglu(chunk, self.gate_up[0], self.down[0])
            self._sync()
        return time.perf_counter() - start

    # ---- member-only communication -----------------------------------------------------

    def _all_to_all(
        self,
        members: list[int],
        send: dict[int, torch.Tensor],
        recv_buffer: Callable[[int], torch.Tensor],
        delayed: bool = True,
    ) -> dict[int, torch.Tensor]:
        """Send ``send[m]`` to every member ``m``; receive into ``recv_buffer(m)`` from each.

        Ranks outside ``members`` are never contacted. Returns what each member sent to this
        rank (its own ``send`` entry included, without a copy). Injected link delays apply
        when ``delayed`` (payloads; not the split sizes, so each phase is delayed once).
        """
        peers = [m for m in members if m != self.rank]
        recv = {m: recv_buffer(m) for m in peers}
        self._exchange({m: send[m] for m in peers if send[m].numel()}, {m: t for m, t in recv.items() if t.numel()}, delayed)
        recv[self.rank] = send[self.rank]
        return recv

    def _exchange(self, out: dict[int, torch.Tensor], into: dict[int, torch.Tensor], delayed: bool = True) -> None:
        """Point-to-point sends of ``out[peer]`` and receives into ``into[peer]``.

        With injected link delays, receives and sends on healthy links are posted first and a
        delayed link's send only after its delay (gloo); NCCL needs one grouped batch, so it
        waits for the largest delay first.
        """
        delays = {p: self.delays_ms.get(p, 0.0) if delayed else 0.0 for p in out}
        if dist.get_backend() == "nccl":
            time.sleep(max(delays.values(), default=0.0) / 1e3)
            delays = dict.fromkeys(delays, 0.0)
        ops = [dist.P2POp(dist.irecv, t, p) for p, t in into.items()]
        ops += [dist.P2POp(dist.isend, out[p].contiguous(), p) for p, d in delays.items() if d == 0.0]
        works = dist.batch_isend_irecv(ops) if ops else []
        slept = 0.0
        for peer, delay in sorted(((p, d) for p, d in delays.items() if d > 0.0), key=lambda pd: pd[1]):
            time.sleep((delay - slept) / 1e3)
            slept = delay
            works += dist.batch_isend_irecv([dist.P2POp(dist.isend, out[peer].contiguous(), peer)])
        for w in works:
            w.wait()

    def _barrier(self, members: list[int]) -> None:
        """Barrier of ``members`` only: one tiny exchange with every other member."""
        peers = [m for m in members if m != self.rank]
        token = {m: torch.ones(1, device=self.device) for m in peers}
        self._exchange(token, {m: torch.empty(1, device=self.device) for m in peers}, delayed=False)

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
