"""Write and read the probe model as a Hugging Face checkpoint folder.

The folder holds what transformers and vLLM load unchanged: ``config.json``,
``model.safetensors`` (bf16, per-expert keys as ``save_pretrained`` writes them),
``generation_config.json``, the tokenizer of :mod:`probe.tokenizer`, and ``probe.json``,
FaultSense's own record of how it was built (GPUs, probe size, variant, seed).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from faultsense_pipelines.probe.model import Variant, build_probe_model, probe_config
from faultsense_pipelines.probe.tokenizer import save_tokenizer

__all__ = ["ProbeCheckpoint", "read_checkpoint_info", "write_checkpoint"]

PROBE_INFO = "probe.json"


@dataclass(frozen=True)
class ProbeCheckpoint:
    """What a probe checkpoint folder was built for.

    Attributes:
        path: the folder.
        n_gpus: GPUs in the replica ``n``.
        probe_size: probe size ``k`` (the router's top-k).
        variant: ``"slim"`` or ``"paper"``.
        seed: seed of the random weights.
        n_experts: experts ``E`` in the layer.
        hidden: hidden size ``H`` (the width of a probe embedding).
    """

    path: Path
    n_gpus: int
    probe_size: int
    variant: Variant
    seed: int
    n_experts: int
    hidden: int


@contextmanager
def _no_progress_bars() -> Iterator[None]:
    """Silence transformers' and huggingface_hub's tqdm bars ("Writing model shards") for one
    call, restoring what was on before."""
    import huggingface_hub.utils as hub_utils
    from transformers.utils import logging as hf_logging

    was_on, hub_was_on = hf_logging.is_progress_bar_enabled(), not hub_utils.are_progress_bars_disabled()
    hf_logging.disable_progress_bar()
    hub_utils.disable_progress_bars()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()
        if hub_was_on:
            hub_utils.enable_progress_bars()


def write_checkpoint(out: str | Path, n_gpus: int, probe_size: int, variant: Variant = "slim", seed: int = 0) -> ProbeCheckpoint:
    """Build the probe model and save it, with a tokenizer, to the folder ``out``.

    Args:
        out: destination folder (created; existing files of the same names are replaced).
        n_gpus, probe_size, variant: as :func:`probe.model.probe_config`.
        seed: seed of the random weights.

    Returns:
        The :class:`ProbeCheckpoint` written.

    Raises:
        ValueError: as :func:`probe.model.probe_config`.
    """
    config = probe_config(n_gpus, probe_size, variant)
    model = build_probe_model(config, seed=seed)
    path = Path(out)
    path.mkdir(parents=True, exist_ok=True)
    with _no_progress_bars():
        model.save_pretrained(str(path))
    save_tokenizer(config, path)
    info = ProbeCheckpoint(
        path=path,
        n_gpus=n_gpus,
        probe_size=probe_size,
        variant=variant,
        seed=seed,
        n_experts=config.num_experts,
        hidden=config.hidden_size,
    )
    record = {k: v for k, v in asdict(info).items() if k != "path"}
    (path / PROBE_INFO).write_text(json.dumps(record, indent=2) + "\n")
    return info


def read_checkpoint_info(path: str | Path) -> ProbeCheckpoint:
    """Read ``probe.json`` from a checkpoint folder written by :func:`write_checkpoint`.

    Raises:
        ValueError: if the folder has no readable ``probe.json``.
    """
    file = Path(path) / PROBE_INFO
    try:
        record = json.loads(file.read_text())
        return ProbeCheckpoint(path=Path(path), **record)
    except (OSError, ValueError, TypeError) as exc:
        raise ValueError(f"not a probe checkpoint (no valid {PROBE_INFO}): {path}") from exc
