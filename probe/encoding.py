"""Probe encoding: a GPU set becomes input embeddings that route to exactly those GPUs.

A *probe* over a GPU set ``S`` (FaultSense §4.1) is a forward pass of one MoE layer whose
tokens touch only the experts hosted on the GPUs of ``S``, so its latency depends only on
those GPUs and the all-to-all paths between them. The probe model's router is the identity
on the first ``E`` hidden dimensions (dimension ``i`` selects expert ``i``) and its
``top_k`` equals the probe size ``k``; an embedding with ones at ``k`` expert dimensions,
one per GPU of ``S``, therefore sends the token to exactly one expert on each GPU of ``S``.

Experts are placed contiguously (vLLM's linear expert-parallel placement): with ``n`` GPUs
and ``E`` experts, GPU ``g`` hosts experts ``[g*E/n, (g+1)*E/n)``.

All functions are pure; nothing here does I/O. torch is imported only by the functions that
return tensors (:func:`probe_experts`, :func:`probe_embeddings`); their NumPy forms
(:func:`probe_expert_ids`, :func:`probe_embedding_bits`) serve the ``vllm`` HTTP client, which
never imports torch.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

__all__ = [
    "BF16_ONE",
    "expert_range",
    "experts_per_gpu",
    "gpu_of_expert",
    "gpus_of_routed_experts",
    "probe_embedding_bits",
    "probe_embeddings",
    "probe_expert_ids",
    "probe_experts",
]

#: The bfloat16 bit pattern of 1.0.
BF16_ONE = 0x3F80


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return int(value)


def experts_per_gpu(n_gpus: int, n_experts: int) -> int:
    """Number of experts each GPU hosts under linear expert-parallel placement.

    Args:
        n_gpus: GPUs in the replica, ``n >= 1``.
        n_experts: experts in the MoE layer, ``E``; a positive multiple of ``n_gpus``.

    Returns:
        ``E // n``.

    Raises:
        ValueError: if ``n_gpus < 1`` or ``n_experts`` is not a positive multiple of ``n_gpus``.

    Examples:
        >>> experts_per_gpu(4, 64)
        16
        >>> experts_per_gpu(3, 64)
        Traceback (most recent call last):
        ...
        ValueError: n_experts must be a positive multiple of n_gpus=3, got 64
    """
    n = _check_int("n_gpus", n_gpus, 1)
    e = _check_int("n_experts", n_experts, 1)
    if e % n:
        raise ValueError(f"n_experts must be a positive multiple of n_gpus={n}, got {e}")
    return e // n


def expert_range(gpu: int, n_gpus: int, n_experts: int) -> range:
    """The experts GPU ``gpu`` hosts: ``[g*E/n, (g+1)*E/n)``.

    Args:
        gpu: GPU id ``g`` in ``0..n_gpus-1``.
        n_gpus: GPUs in the replica.
        n_experts: experts in the layer (a multiple of ``n_gpus``).

    Returns:
        A ``range`` of expert ids.

    Raises:
        ValueError: if ``gpu`` is out of range or the placement is invalid.

    Examples:
        >>> expert_range(1, 4, 8)
        range(2, 4)
    """
    per = experts_per_gpu(n_gpus, n_experts)
    g = _check_gpu(gpu, n_gpus)
    return range(g * per, (g + 1) * per)


def gpu_of_expert(expert: int, n_gpus: int, n_experts: int) -> int:
    """The GPU hosting ``expert`` under linear placement (``expert // (E/n)``).

    Args:
        expert: expert id in ``0..n_experts-1``.
        n_gpus: GPUs in the replica.
        n_experts: experts in the layer (a multiple of ``n_gpus``).

    Returns:
        The GPU id.

    Raises:
        ValueError: if ``expert`` is out of range or the placement is invalid.

    Examples:
        >>> gpu_of_expert(5, 4, 8)
        2
    """
    per = experts_per_gpu(n_gpus, n_experts)
    if isinstance(expert, bool) or not isinstance(expert, (int, np.integer)) or not 0 <= expert < n_experts:
        raise ValueError(f"expert id must be an integer in 0..{n_experts - 1}, got {expert!r}")
    return int(expert) // per


def _check_gpu(gpu: Any, n_gpus: int) -> int:
    if isinstance(gpu, bool) or not isinstance(gpu, (int, np.integer)) or not 0 <= gpu < n_gpus:
        raise ValueError(f"GPU id must be an integer in 0..{n_gpus - 1}, got {gpu!r}")
    return int(gpu)


def _check_gpu_set(gpus: Iterable[int], n_gpus: int, top_k: int) -> list[int]:
    gpus = list(gpus)
    checked = [_check_gpu(g, n_gpus) for g in gpus]
    seen: set[int] = set()
    for g in checked:
        if g in seen:
            raise ValueError(f"duplicate GPU id {g} in probe {gpus}")
        seen.add(g)
    if len(checked) != top_k:
        raise ValueError(f"probe {gpus} has {len(checked)} GPUs; it must have exactly top_k={top_k}")
    return sorted(checked)


def probe_expert_ids(gpus: Sequence[int], n_gpus: int, n_experts: int, top_k: int, tokens: int) -> np.ndarray:
    """:func:`probe_experts` as a NumPy ``int64`` array of shape ``(tokens, top_k)`` (no torch).

    >>> probe_expert_ids([3, 1], n_gpus=4, n_experts=8, top_k=2, tokens=3).tolist()
    [[2, 6], [3, 7], [2, 6]]
    """
    per = experts_per_gpu(n_gpus, n_experts)
    k = _check_int("top_k", top_k, 1)
    if k > n_gpus:
        raise ValueError(f"top_k must be <= n_gpus={n_gpus}, got {k}")
    t = _check_int("tokens", tokens, 1)
    members = np.asarray(_check_gpu_set(gpus, n_gpus, k), dtype=np.int64)  # (k,)
    local = np.arange(t, dtype=np.int64) % per  # (tokens,)
    return members[None, :] * per + local[:, None]  # (tokens, k)


def probe_experts(gpus: Sequence[int], n_gpus: int, n_experts: int, top_k: int, tokens: int) -> torch.Tensor:
    """The experts each probe token is routed to: one expert on each GPU of the probe.

    Token ``t`` goes to expert ``g*E/n + (t mod E/n)`` on each GPU ``g`` of the probe, so
    over ``E/n`` tokens every expert of every probed GPU is exercised once.

    Args:
        gpus: the probe's GPU set ``S`` (any order, no duplicates), ``|S| == top_k``.
        n_gpus: GPUs in the replica, ``n``.
        n_experts: experts in the layer, ``E`` (a multiple of ``n``).
        top_k: experts per token (the probe size ``k``), ``1 <= k <= n``.
        tokens: probe tokens, ``>= 1``.

    Returns:
        ``torch.LongTensor`` of shape ``(tokens, top_k)``; column ``j`` holds experts of the
        ``j``-th GPU of ``sorted(S)``.

    Raises:
        ValueError: naming the bad value, for a duplicate or out-of-range GPU id,
            ``|S| != top_k``, ``top_k`` outside ``1..n``, or ``tokens < 1``.

    Notes:
        O(tokens * k) time and memory.

    Examples:
        >>> probe_experts([3, 1], n_gpus=4, n_experts=8, top_k=2, tokens=3).tolist()
        [[2, 6], [3, 7], [2, 6]]
    """
    import torch

    return torch.from_numpy(probe_expert_ids(gpus, n_gpus, n_experts, top_k, tokens))


def probe_embeddings(
    gpus: Sequence[int],
    n_gpus: int,
    n_experts: int,
    top_k: int,
    hidden: int,
    tokens: int,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Input embeddings for a probe: ones at the chosen expert dimensions, zeros elsewhere.

    With the probe model's identity router (dimension ``i`` selects expert ``i``), unit
    RMSNorm weights and zeroed attention output, every token's top-``k`` router logits are
    exactly the experts of :func:`probe_experts`.

    Args:
        gpus, n_gpus, n_experts, top_k, tokens: as in :func:`probe_experts`.
        hidden: model hidden size, ``>= n_experts``.
        dtype: element type (default ``torch.bfloat16``, the serving dtype).

    Returns:
        Tensor of shape ``(tokens, hidden)``.

    Raises:
        ValueError: as :func:`probe_experts`, or if ``hidden < n_experts``.

    Examples:
        >>> probe_embeddings([1], n_gpus=2, n_experts=4, top_k=1, hidden=6, tokens=2).tolist()
        [[0.0, 0.0, 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]]
    """
    import torch

    h = _check_int("hidden", hidden, 1)
    if h < n_experts:
        raise ValueError(f"hidden must be >= n_experts={n_experts}, got {h}")
    experts = probe_experts(gpus, n_gpus, n_experts, top_k, tokens)  # (tokens, k)
    embeds = torch.zeros(experts.shape[0], h, dtype=torch.bfloat16 if dtype is None else dtype)  # (tokens, hidden)
    embeds.scatter_(1, experts, 1.0)
    return embeds


def probe_embedding_bits(gpus: Sequence[int], n_gpus: int, n_experts: int, top_k: int, hidden: int, tokens: int) -> np.ndarray:
    """:func:`probe_embeddings` in bf16 as NumPy bit patterns (``uint16``, shape ``(tokens,
    hidden)``: :data:`BF16_ONE` at the chosen expert dimensions, 0 elsewhere), without torch;
    :func:`probe.tensor_file.save_bf16` turns it into the ``torch.save`` bytes vLLM reads.

    >>> probe_embedding_bits([1], n_gpus=2, n_experts=4, top_k=1, hidden=6, tokens=2).tolist()
    [[0, 0, 16256, 0, 0, 0], [0, 0, 0, 16256, 0, 0]]
    """
    h = _check_int("hidden", hidden, 1)
    if h < n_experts:
        raise ValueError(f"hidden must be >= n_experts={n_experts}, got {h}")
    experts = probe_expert_ids(gpus, n_gpus, n_experts, top_k, tokens)  # (tokens, k)
    bits = np.zeros((experts.shape[0], h), dtype=np.uint16)  # (tokens, hidden)
    np.put_along_axis(bits, experts, BF16_ONE, axis=1)
    return bits


def gpus_of_routed_experts(experts: Any, n_gpus: int, n_experts: int) -> list[frozenset[int]]:
    """The inverse of :func:`probe_experts`: the GPU set each token was routed to.

    Args:
        experts: routed expert ids, shape ``(tokens, top_k)`` (numpy array, tensor or
            nested sequence of ints), e.g. vLLM's routed experts for one layer.
        n_gpus: GPUs in the replica.
        n_experts: experts in the layer (a multiple of ``n_gpus``).

    Returns:
        One ``frozenset`` of GPU ids per token.

    Raises:
        ValueError: if ``experts`` is not 2-D or holds an id outside ``0..n_experts-1``.

    Examples:
        >>> gpus_of_routed_experts([[2, 6], [3, 7]], n_gpus=4, n_experts=8)
        [frozenset({1, 3}), frozenset({1, 3})]
    """
    per = experts_per_gpu(n_gpus, n_experts)
    torch_module = sys.modules.get("torch")  # a tensor can only exist once torch is imported
    if torch_module is not None and isinstance(experts, torch_module.Tensor):
        experts = experts.detach().cpu().numpy()
    arr = np.asarray(experts)
    if arr.ndim != 2:
        raise ValueError(f"routed experts must have shape (tokens, top_k), got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"routed experts must be integers, got dtype {arr.dtype}")
    bad = arr[(arr < 0) | (arr >= n_experts)]
    if bad.size:
        raise ValueError(f"routed expert id must be in 0..{n_experts - 1}, got {int(bad[0])}")
    return [frozenset(int(e) // per for e in row) for row in arr]
