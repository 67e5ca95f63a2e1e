"""A minimal tokenizer for the probe checkpoint, built offline.

Probes send embeddings, never text, but transformers and vLLM both load a tokenizer from
the checkpoint folder (vLLM detokenizes the one generated token). This module builds a
word-level tokenizer with one token per vocabulary id (``<bos>``, ``<pad>``, ``<eos>``,
``<unk>`` at the config's special ids, ``t<i>`` elsewhere) with the ``tokenizers`` library,
so every id the model can emit decodes and nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path

from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import WhitespaceSplit
from transformers import OlmoeConfig, PreTrainedTokenizerFast

__all__ = ["UNK_ID", "build_tokenizer", "save_tokenizer"]

UNK_ID = 3


def build_tokenizer(config: OlmoeConfig) -> PreTrainedTokenizerFast:
    """A word-level tokenizer covering exactly ``config.vocab_size`` ids.

    Args:
        config: the probe model's config (``vocab_size``, ``bos/pad/eos_token_id``).

    Returns:
        A ``PreTrainedTokenizerFast`` whose id ``i`` is the token ``t<i>`` except for the
        special ids.

    Raises:
        ValueError: if a special id falls outside the vocabulary or two share an id.
    """
    specials = {
        "<bos>": config.bos_token_id,
        "<pad>": config.pad_token_id,
        "<eos>": config.eos_token_id,
        "<unk>": UNK_ID,
    }
    ids = list(specials.values())
    for name, i in specials.items():
        if not isinstance(i, int) or not 0 <= i < config.vocab_size:
            raise ValueError(f"{name} id must be in 0..{config.vocab_size - 1}, got {i!r}")
    if len(set(ids)) != len(ids):
        raise ValueError(f"special token ids must differ, got {specials}")
    names = {i: name for name, i in specials.items()}
    vocab = {names.get(i, f"t{i}"): i for i in range(config.vocab_size)}
    backend = Tokenizer(WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        model_max_length=config.max_position_embeddings,
    )


def save_tokenizer(config: OlmoeConfig, out: str | Path) -> None:
    """Write the tokenizer files (``tokenizer.json``, ``tokenizer_config.json``) to ``out``."""
    build_tokenizer(config).save_pretrained(str(out))
