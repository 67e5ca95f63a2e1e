"""One GPU's share of a probe: its experts, and its part of the member-only all-to-all.

A probe over GPU set ``S`` (FaultSense §4.1) runs one expert-parallel MoE layer whose tokens
touch only the experts on ``S``. This module is the worker side shared by the ``local``
(spawned processes) and ``ray`` (actors) executors: each worker is one rank of a
``torch.distributed`` process group and hosts the experts of one GPU under linear placement
(GPU ``g`` hosts experts ``[g*E/n, (g+1)*E/n)``). Per repeat, every member of ``S``:

1. routes its data-parallel shard of the probe tokens with the probe model's identity router
   (``logits = x[:, :E]``, softmax in fp32, top-``|S|``; FaultSense §4.1);
2. dispatches each (token, expert) pair to the expert's GPU — split sizes per expert first,
   then the tokens grouped by expert — an all-to-all among the
   members of ``S`` only, built from point-to-point sends, so ranks outside ``S`` take no
   part (a process-group collective would need every rank, and a straggler outside the
   probe would then slow it);
3. runs the SwiGLU expert FFN (OLMoE: ``down(silu(gate(x)) * up(x))``) on what it received;
4. sends the outputs back (the combine all-to-all) and sums them weighted by the router.

The time from a member-only barrier to the end of step 4, the slowest member's, is the
probe's latency.

References:
    FaultSense (APSys '26), §4.1 (probe model: identity router, chosen experts, all-to-all
    among the chosen GPUs only); OLMoE (Muennighoff et al., 2024) for the expert FFN shapes.
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

from .injection import GpuFault, Injection, LinkDelay

__all__ = ["LayerShape", "ProbeWorker", "expert_weights", "route", "swiglu"]

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
    """

    n_gpus: int
    experts_per_gpu: int = 1
    hidden: int = 2048
    intermediate: int = 1024
    tokens: int = 64
    dtype: str = "bfloat16"
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("n_gpus", "experts_per_gpu", "hidden", "intermediate", "tokens"):
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


class ProbeWorker:
    """Rank ``rank`` of a replica: hosts GPU ``rank``'s experts and runs its part of probes.

    The caller initializes the default ``torch.distributed`` process group (rank = GPU id)
    before :meth:`run_probe`; non-members of a probe are never called for it.

    Args:
        shape: the layer shape (same on every rank).
        rank: this worker's GPU id, ``0..n-1``.
        device: ``"cpu"`` or a CUDA device such as ``"cuda:0"``.
    """

    def __init__(self, shape: LayerShape, rank: int, device: str = "cpu") -> None:
        self.shape = shape
        self.rank = rank
        self.device = torch.device(device)
        self.experts = expert_range(rank, shape.n_gpus, shape.n_experts)
        weights = [expert_weights(shape, e) for e in self.experts]
        self.gate_up = [g.to(self.device) for g, _ in weights]  # per local expert, (2I, H)
        self.down = [d.to(self.device) for _, d in weights]  # per local expert, (H, I)
        self.slowdown = 1.0
        self.delays_ms: dict[int, float] = {}
        self._healthy_s: deque[float] = deque(maxlen=15)  # recent layer times without injected work, s

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
            ``latencies_ms`` (this member's time per repeat), ``ffn_ms`` (its expert FFN
            stage per repeat, injected slowdown included), ``routed_experts`` (its
            shard's top-k expert ids, ``(tokens_in_shard, k)`` as lists), ``experts_computed``
            (ids of its experts that processed at least one token) and ``checksum`` (sum of
            its shard's layer output, fp32).
        """
        members = sorted(members)
        if self.rank not in members:
            raise ValueError(f"GPU {self.rank} is not a member of probe {members}")
        shape = self.shape
        embeds = probe_embeddings(
            members, shape.n_gpus, shape.n_experts, len(members), shape.hidden, shape.tokens, shape.torch_dtype
        )  # (tokens, H)
        x = embeds.tensor_split(len(members))[members.index(self.rank)].to(self.device)  # (t, H)
        latencies: list[float] = []
        ffn: list[float] = []
        trace: dict[str, Any] = {}
        for _ in range(repeats):
            self._barrier(members)
            t0 = time.perf_counter()
            out, trace = self._layer(x, members, t0)
            self._sync()
            elapsed = time.perf_counter() - t0
            self._healthy_s.append(elapsed - trace.pop("extra_s"))
            latencies.append(elapsed * 1e3)
            ffn.append(trace.pop("ffn_ms"))
        trace["checksum"] = float(out.float().sum())
        return {"latencies_ms": latencies, "ffn_ms": ffn, **trace}

    def _layer(self, x: torch.Tensor, members: list[int], t0: float) -> tuple[torch.Tensor, dict]:
        per = self.shape.experts_per_gpu
        weights, experts = route(x, self.shape.n_experts, len(members))  # (t, k) each
        # what goes to each member: its (token, slot) pairs sorted by expert, and the count
        # per expert of that member (the all-to-all's split sizes)
        picks, counts = {}, {}
        for m in members:
            tok, slot = ((experts // per) == m).nonzero(as_tuple=True)  # (r,) each
            order = experts[tok, slot].argsort(stable=True)
            picks[m] = (tok[order], slot[order])
            counts[m] = torch.bincount(experts[picks[m]] - m * per, minlength=per).to(self.device)  # (E/n,)
        # dispatch: split sizes first, then the tokens (rows grouped by expert)
        counts_in = self._all_to_all(
            members, counts, lambda m: torch.empty(per, dtype=torch.long, device=self.device), delayed=False
        )
        sizes_in = {m: c.tolist() for m, c in counts_in.items()}
        tokens_in = self._all_to_all(
            members,
            {m: x[tok] for m, (tok, _) in picks.items()},
            lambda m: torch.empty(sum(sizes_in[m]), x.shape[1], dtype=x.dtype, device=self.device),
        )
        t_ffn = time.perf_counter()
        outputs = {m: self._experts_ffn(tokens_in[m], sizes_in[m]) for m in members}  # (r_m, H) each
        self._sync()
        extra_s = self._extra_compute(tokens_in, time.perf_counter() - t0)
        ffn_ms = (time.perf_counter() - t_ffn) * 1e3
        # combine: expert outputs back to the tokens' GPUs, then the router-weighted sum
        back = self._all_to_all(
            members, outputs, lambda m: torch.empty(len(picks[m][0]), x.shape[1], dtype=x.dtype, device=self.device)
        )
        out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)  # (t, H)
        for m, (tok, slot) in picks.items():
            out.index_add_(0, tok, back[m].float() * weights[tok, slot].unsqueeze(1))
        computed = sorted({e for sizes in sizes_in.values() for e, c in zip(self.experts, sizes) if c})
        return out.to(x.dtype), {
            "routed_experts": experts.tolist(),
            "experts_computed": computed,
            "ffn_ms": ffn_ms,
            "extra_s": extra_s,
        }

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
        """Member-only barrier: one tiny exchange with every other member."""
        peers = [m for m in members if m != self.rank]
        token = {m: torch.ones(1, device=self.device) for m in peers}
        self._exchange(token, {m: torch.empty(1, device=self.device) for m in peers}, delayed=False)

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
