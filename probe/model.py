"""The probe model: one OLMoE decoder layer whose router obeys the probe encoding.

FaultSense's probe (§4.1) is a real MoE forward pass that touches only the GPUs of a probe.
The probe model is an ``OlmoeForCausalLM`` with a single decoder layer, built so that the
input embedding decides the routing exactly (see :mod:`probe.encoding`):

- attention ``o_proj`` is zero, so the residual stream after attention is the input
  embedding itself;
- every RMSNorm weight is one, so the router sees the embedding up to a positive scale;
- router rows are the identity on the first ``E`` hidden dimensions (dimension ``i``
  selects expert ``i``) and ``num_experts_per_tok`` is the probe size ``k``;
- expert, attention-projection and vocabulary weights are random (seeded): real compute,
  and any other routing would change the logits.

Two variants share the expert shapes of OLMoE-1B-7B's first layer (hidden 2048,
intermediate 1024), so per-token expert compute and all-to-all volume are the paper's:

- ``paper``: OLMoE-1B-7B's shapes (64 experts, vocabulary 50304, 16 heads).
- ``slim`` (default): one expert per GPU (``E = n``), a 256-token vocabulary and a small
  attention (64 heads of dimension 32, :data:`SLIM_KV_HEADS` = 8 key/value heads) whose head
  counts and q/k-norm widths divide evenly at every tensor-parallel size up to 8, so stock
  vLLM serves it at TP 1, 2, 4 and 8 (:func:`tensor_parallel_problems`).
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from transformers import OlmoeConfig, OlmoeForCausalLM

from faultsense_pipelines.probe.encoding import experts_per_gpu

__all__ = [
    "HIDDEN",
    "INTERMEDIATE",
    "SLIM_KV_HEADS",
    "VARIANTS",
    "Variant",
    "build_probe_model",
    "probe_config",
    "tensor_parallel_problems",
]

Variant = Literal["slim", "paper"]
VARIANTS: tuple[Variant, ...] = ("slim", "paper")

HIDDEN = 2048
"""OLMoE-1B-7B hidden size (model dimension ``H``)."""
INTERMEDIATE = 1024
"""OLMoE-1B-7B expert intermediate size ``I``."""
PAPER_EXPERTS = 64
PAPER_VOCAB = 50304
SLIM_VOCAB = 256
SLIM_HEAD_DIM = 32
SLIM_KV_HEADS = 8
"""Key/value heads of ``slim``: divisible by every tensor-parallel size up to 8. With fewer KV
heads than TP ranks vLLM replicates them, and OLMoE's q/k norm then sees the gathered key
width (TP x one head) against a ``k_norm`` of the model's width, and fails at start."""
# Special token ids; kept inside both vocabularies (OLMoE's pad is 1, its eos 50279).
BOS_ID, PAD_ID, SLIM_EOS_ID, PAPER_EOS_ID = 0, 1, 2, 50279
_CHUNK = 1 << 22


def probe_config(n_gpus: int, probe_size: int, variant: Variant = "slim") -> OlmoeConfig:
    """The ``OlmoeConfig`` of the probe model for an ``n``-GPU replica and probe size ``k``.

    Args:
        n_gpus: GPUs in the replica (expert-parallel degree ``n``), ``>= 1``.
        probe_size: GPUs per probe ``k`` (``num_experts_per_tok``), ``1 <= k <= n``.
        variant: ``"slim"`` (``E = n`` experts, 256-token vocabulary, GQA attention) or
            ``"paper"`` (OLMoE-1B-7B's 64 experts and 50304-token vocabulary; ``n`` must
            divide 64).

    Returns:
        A one-layer bf16 ``OlmoeConfig``.

    Raises:
        ValueError: naming the bad value, for ``n < 1``, ``k`` outside ``1..n``, an unknown
            variant, or (``paper``) ``n`` not dividing 64.

    Examples:
        >>> c = probe_config(4, 2)
        >>> (c.num_experts, c.num_experts_per_tok, c.hidden_size, c.intermediate_size)
        (4, 2, 2048, 1024)
    """
    if isinstance(n_gpus, bool) or not isinstance(n_gpus, int) or n_gpus < 1:
        raise ValueError(f"n_gpus must be an integer >= 1, got {n_gpus!r}")
    if isinstance(probe_size, bool) or not isinstance(probe_size, int) or not 1 <= probe_size <= n_gpus:
        raise ValueError(f"probe_size must be an integer in 1..{n_gpus}, got {probe_size!r}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    common: dict[str, Any] = dict(
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=1,
        num_experts_per_tok=probe_size,
        norm_topk_prob=False,
        tie_word_embeddings=False,
        max_position_embeddings=4096,
        bos_token_id=BOS_ID,
        pad_token_id=PAD_ID,
        dtype="bfloat16",
    )
    if variant == "paper":
        experts_per_gpu(n_gpus, PAPER_EXPERTS)  # raises unless n divides 64
        return OlmoeConfig(
            vocab_size=PAPER_VOCAB,
            num_experts=PAPER_EXPERTS,
            num_attention_heads=16,
            num_key_value_heads=16,
            eos_token_id=PAPER_EOS_ID,
            **common,
        )
    return OlmoeConfig(
        vocab_size=SLIM_VOCAB,
        num_experts=n_gpus,
        num_attention_heads=HIDDEN // SLIM_HEAD_DIM,
        num_key_value_heads=SLIM_KV_HEADS,
        eos_token_id=SLIM_EOS_ID,
        **common,
    )


def tensor_parallel_problems(config: OlmoeConfig, tp: int) -> list[str]:
    """Why vLLM cannot shard ``config`` over ``tp`` tensor-parallel ranks (empty: it can).

    vLLM's OLMoE splits the query heads and the key/value heads over the TP ranks and
    applies ``q_norm`` / ``k_norm`` to the all-gathered ``q`` and ``k``; the gathered widths
    equal the norms' (``heads * head_dim``, ``kv_heads * head_dim``) only when both head
    counts divide by ``tp``. The vocabulary is padded by vLLM and needs no check.

    Args:
        config: the probe model's config.
        tp: tensor-parallel size, ``>= 1``.

    Returns:
        One sentence per problem, naming the field.

    Examples:
        >>> tensor_parallel_problems(probe_config(8, 4), 8)
        []
        >>> tensor_parallel_problems(probe_config(8, 4, "paper"), 32)
        ['num_attention_heads=16 is not divisible by tensor-parallel size 32', 'num_key_value_heads=16 is not divisible by tensor-parallel size 32']
    """
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise ValueError(f"tensor-parallel size must be an integer >= 1, got {tp!r}")
    problems = []
    for name in ("num_attention_heads", "num_key_value_heads"):
        value = getattr(config, name)
        if value % tp:
            problems.append(f"{name}={value} is not divisible by tensor-parallel size {tp}")
    return problems


def build_probe_model(config: OlmoeConfig, seed: int = 0, std: float = 0.02) -> OlmoeForCausalLM:
    """Instantiate the probe model: random weights (seeded) plus the routing construction.

    Args:
        config: from :func:`probe_config` (one layer, ``hidden_size >= num_experts``).
        seed: seed of the random weights; the same seed gives the same checkpoint.
        std: standard deviation of the random weights (OLMoE's ``initializer_range``).

    Returns:
        ``OlmoeForCausalLM`` in bf16, eval mode, on CPU.

    Raises:
        ValueError: if the config has more than one layer or fewer hidden dims than experts.

    Notes:
        Random values come from a ``torch.Generator`` seeded with ``seed``, drawn per
        parameter in ``named_parameters()`` order in chunks of ``2**22`` elements,
        independent of transformers' own init. Peak memory is about the bf16 model plus
        transformers' init.
    """
    if config.num_hidden_layers != 1:
        raise ValueError(f"the probe model has one decoder layer, got num_hidden_layers={config.num_hidden_layers}")
    if config.hidden_size < config.num_experts:
        raise ValueError(f"hidden_size must be >= num_experts={config.num_experts}, got {config.hidden_size}")
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)  # build in bf16: the paper variant is 1.2 GB, not 2.5
    try:
        model = OlmoeForCausalLM(config).to(torch.bfloat16).eval()  # type: ignore[arg-type]  # transformers types .to() as a decorator
    finally:
        torch.set_default_dtype(default)
    gen = torch.Generator().manual_seed(seed)
    layer = model.model.layers[0]
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):  # every RMSNorm: weights one
                param.fill_(1.0)
                continue
            for piece in param.view(-1).split(_CHUNK):  # bounded fp32 scratch
                piece.copy_(torch.randn(piece.numel(), generator=gen) * std)
        layer.self_attn.o_proj.weight.zero_()  # attention adds nothing to the residual
        router = layer.mlp.gate.weight  # (E, H)
        router.zero_()
        router[:, : config.num_experts].copy_(torch.eye(config.num_experts))
    return model
