"""Memory per GPU of the probe model under ``n``-way expert parallelism.

With expert parallelism (vLLM ``--enable-expert-parallel`` over ``n`` data-parallel ranks)
every GPU holds a full copy of the non-expert parameters (embedding, attention, norms,
router, LM head) and its ``E/n`` experts. The bytes per GPU of the weights are therefore::

    replicated = 2*V*H + 2*H*H_q + 2*H*H_kv + H_q + H_kv + 3*H + E*H   (parameters)
    experts    = (E/n) * 3*H*I                                         (parameters)

where ``V`` is the vocabulary, ``H`` the hidden size, ``H_q = heads*head_dim = H``,
``H_kv = kv_heads*head_dim``, ``I`` the expert intermediate size, times the bytes of the
element type. Activations and KV cache are not included.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import OlmoeConfig

from faultsense_pipelines.probe.encoding import experts_per_gpu

__all__ = ["ProbeMemory", "bytes_per_gpu", "parameter_counts"]


@dataclass(frozen=True)
class ProbeMemory:
    """Weights one GPU holds for the probe model.

    Attributes:
        n_gpus: expert-parallel degree ``n``.
        replicated_bytes: non-expert weights (on every GPU), bytes.
        expert_bytes: the ``E/n`` experts this GPU hosts, bytes.
    """

    n_gpus: int
    replicated_bytes: int
    expert_bytes: int

    @property
    def total_bytes(self) -> int:
        """Weights on one GPU, bytes."""
        return self.replicated_bytes + self.expert_bytes


def parameter_counts(config: OlmoeConfig) -> tuple[int, int]:
    """Parameters of a one-layer OLMoE, split into (non-expert, one expert).

    Args:
        config: the probe model's config (``num_hidden_layers`` layers are counted).

    Returns:
        ``(replicated, per_expert)`` parameter counts.

    Examples:
        >>> from faultsense_pipelines.probe.model import probe_config
        >>> parameter_counts(probe_config(4, 2))[1] == 3 * 2048 * 1024
        True
    """
    h, i, v, e = config.hidden_size, config.intermediate_size, config.vocab_size, config.num_experts
    head_dim = getattr(config, "head_dim", None) or h // config.num_attention_heads
    h_q = config.num_attention_heads * head_dim
    h_kv = (config.num_key_value_heads or config.num_attention_heads) * head_dim
    lm_head = 0 if config.tie_word_embeddings else v * h
    attention = h * h_q + 2 * h * h_kv + h_q * h + h_q + h_kv  # q, k, v, o projections; q_norm, k_norm
    per_layer = attention + 2 * h + e * h  # input and post-attention norms; router (E, H)
    replicated = v * h + lm_head + h + config.num_hidden_layers * per_layer  # + final norm
    per_expert = config.num_hidden_layers * 3 * h * i  # gate, up (I, H) and down (H, I)
    return replicated, per_expert


def bytes_per_gpu(config: OlmoeConfig, n_gpus: int, dtype: torch.dtype = torch.bfloat16) -> ProbeMemory:
    """Weights per GPU of the probe model under ``n``-way linear expert parallelism.

    Args:
        config: the probe model's config.
        n_gpus: expert-parallel degree ``n``; must divide ``config.num_experts``.
        dtype: element type of the weights (default bf16, 2 bytes).

    Returns:
        :class:`ProbeMemory` in bytes.

    Raises:
        ValueError: if ``n_gpus`` does not divide the number of experts.

    Notes:
        O(1). Counts weights only (no activations, KV cache or framework overhead).

    Examples:
        >>> from faultsense_pipelines.probe.model import probe_config
        >>> m = bytes_per_gpu(probe_config(4, 2), 4)
        >>> m.expert_bytes == 3 * 2048 * 1024 * 2
        True
    """
    per = experts_per_gpu(n_gpus, config.num_experts)
    replicated, per_expert = parameter_counts(config)
    width = torch.empty((), dtype=dtype).element_size()
    return ProbeMemory(n_gpus=n_gpus, replicated_bytes=replicated * width, expert_bytes=per * per_expert * width)
