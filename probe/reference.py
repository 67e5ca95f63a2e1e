"""Reference forward of the probe model in transformers: routing and next-token logprobs.

The reference answers two questions about a probe checkpoint without any serving engine:
which experts the router picked for each probe token (read from the router itself), and the
log-probabilities of the next token after the probe. A server that ran the same checkpoint
on the same embeddings with the same routing returns the same greedy token and (up to bf16
kernel differences) the same logprobs; random expert weights make any other routing visible.
This is how routing is checked where the server cannot return routed experts (vLLM on CPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import OlmoeForCausalLM

__all__ = ["ReferenceOutput", "load_reference_model", "matches_reference", "reference_forward"]


@dataclass(frozen=True)
class ReferenceOutput:
    """What the reference forward saw for one probe.

    Attributes:
        routed_experts: expert ids per token, shape ``(tokens, top_k)``, sorted per row.
        logprobs: next-token log-probabilities after the last probe token, shape ``(vocab,)``,
            float32.
    """

    routed_experts: torch.Tensor
    logprobs: torch.Tensor

    @property
    def greedy_token(self) -> int:
        """The id a greedy sampler picks next."""
        return int(self.logprobs.argmax())


def load_reference_model(path: str | Path, device: str = "cpu") -> OlmoeForCausalLM:
    """Load a probe checkpoint folder in transformers (bf16, eval mode) on ``device``."""
    model = OlmoeForCausalLM.from_pretrained(str(path), dtype=torch.bfloat16)
    return model.to(device).eval()  # type: ignore[arg-type]  # transformers types .to() as a decorator


@torch.no_grad()
def reference_forward(model: OlmoeForCausalLM, embeddings: torch.Tensor) -> ReferenceOutput:
    """Run the probe model on ``embeddings`` and record its routing and next-token logprobs.

    Args:
        model: a one-layer probe model (see :mod:`probe.model`).
        embeddings: probe embeddings, shape ``(tokens, hidden)``.

    Returns:
        :class:`ReferenceOutput`.

    Raises:
        ValueError: if ``embeddings`` is not 2-D with the model's hidden size.
    """
    hidden = model.config.hidden_size
    if embeddings.ndim != 2 or embeddings.shape[1] != hidden:
        raise ValueError(f"embeddings must have shape (tokens, {hidden}), got {tuple(embeddings.shape)}")
    routed: list[torch.Tensor] = []

    def keep_indices(_module, _inputs, output):  # router returns (logits, weights, indices)
        routed.append(output[2].detach().cpu())

    router = model.model.layers[0].mlp.gate
    handle = router.register_forward_hook(keep_indices)
    try:
        device = next(model.parameters()).device
        inputs = embeddings.to(device=device, dtype=torch.bfloat16).unsqueeze(0)  # (1, tokens, H)
        logits = model(inputs_embeds=inputs, use_cache=False).logits  # (1, tokens, vocab)
    finally:
        handle.remove()
    logprobs = torch.log_softmax(logits[0, -1].float(), dim=-1).cpu()  # (vocab,)
    return ReferenceOutput(routed_experts=routed[0].sort(dim=1).values, logprobs=logprobs)


def matches_reference(
    top_logprobs: dict[str, float], reference: ReferenceOutput, token_ids: dict[str, int], tol: float = 0.1
) -> bool:
    """Whether a server's next-token top logprobs agree with the reference forward.

    They agree when the server's most likely token is the reference's greedy token and
    every token the server lists has a logprob within ``tol`` of the reference's.

    Args:
        top_logprobs: token -> logprob from the server (e.g. ``VllmProbeDetails.top_logprobs``).
        reference: :func:`reference_forward` on the same checkpoint and embeddings.
        token_ids: token -> id of the checkpoint's tokenizer (``tokenizer.get_vocab()``).
        tol: largest allowed absolute logprob difference (bf16 kernels differ slightly).

    Returns:
        ``True`` if they agree.

    Raises:
        ValueError: if ``top_logprobs`` is empty or names a token the tokenizer lacks.
    """
    if not top_logprobs:
        raise ValueError("top_logprobs is empty; request logprobs from the server")
    unknown = [t for t in top_logprobs if t not in token_ids]
    if unknown:
        raise ValueError(f"token {unknown[0]!r} is not in the checkpoint's vocabulary")
    best = max(top_logprobs, key=top_logprobs.__getitem__)
    if token_ids[best] != reference.greedy_token:
        return False
    return all(abs(v - float(reference.logprobs[token_ids[t]])) <= tol for t, v in top_logprobs.items())
