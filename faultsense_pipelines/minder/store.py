"""Save and load trained Minder models: safetensors weights plus a JSON of settings.

A model directory holds two files:

- ``minder.safetensors``: every metric's LSTM-VAE weights, keyed ``<metric>/<parameter>``;
- ``minder.json``: format and version, the settings, the sampling interval and window, the
  metrics with their normalization and healthy spread, the metric priority, and
  ``model_version`` (the first 12 hex digits of a SHA-256 over the weights), which tells two
  trainings apart. Retraining writes both files again.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from safetensors.torch import load_file, save_file

from faultsense_pipelines.minder.model import LSTMVAE
from faultsense_pipelines.minder.settings import MinderSettings
from faultsense_pipelines.minder.train import MinderModel

__all__ = ["FORMAT", "FORMAT_VERSION", "load_model", "save_model"]

FORMAT = "faultsense-minder"
FORMAT_VERSION = 1
_WEIGHTS, _MANIFEST = "minder.safetensors", "minder.json"


def _weights_digest(tensors: dict) -> str:
    """First 12 hex digits of SHA-256 over names and bytes (the file's header order varies)."""
    digest = hashlib.sha256()
    for name in sorted(tensors):
        digest.update(name.encode())
        digest.update(tensors[name].numpy().tobytes())
    return digest.hexdigest()[:12]


def save_model(model: MinderModel, directory: str | Path) -> str:
    """Write ``model`` into ``directory`` (created if needed).

    Args:
        model: a trained model.
        directory: where to write ``minder.safetensors`` and ``minder.json``.

    Returns:
        The ``model_version`` written.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {
        f"{metric}/{name}": tensor.detach().contiguous().clone()
        for metric, denoiser in model.denoisers.items()
        for name, tensor in denoiser.state_dict().items()
    }
    save_file(tensors, directory / _WEIGHTS, metadata={"format": FORMAT, "format_version": str(FORMAT_VERSION)})
    version = _weights_digest(tensors)
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "model_version": version,
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "settings": model.settings.to_dict(),
        "interval_s": model.interval_s,
        "window": model.window,
        "metrics": {
            metric: {"center": float(c), "scale": float(s), "spread": float(p)}
            for metric, c, s, p in zip(model.metrics, model.centers, model.scales, model.spreads, strict=True)
        },
        "priority": list(model.priority),
    }
    (directory / _MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return version


def _read_manifest(directory: Path) -> dict:
    path = directory / _MANIFEST
    if not path.is_file() or not (directory / _WEIGHTS).is_file():
        raise ValueError(f"no Minder model in {directory} (need {_MANIFEST} and {_WEIGHTS})")
    try:
        manifest = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{path}: format {manifest.get('format')!r} is not {FORMAT!r}")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path}: format_version {manifest.get('format_version')!r}, this code reads {FORMAT_VERSION}")
    return manifest


def load_model(directory: str | Path) -> MinderModel:
    """Read a model written by :func:`save_model`.

    Raises:
        ValueError: missing files, another format or version, or weights that do not
            match the settings.
    """
    directory = Path(directory)
    manifest = _read_manifest(directory)
    settings = MinderSettings.from_dict(manifest["settings"])
    weights = load_file(directory / _WEIGHTS)
    metrics = tuple(manifest["metrics"])
    denoisers = {}
    for metric in metrics:
        prefix = f"{metric}/"
        state = {key[len(prefix) :]: value for key, value in weights.items() if key.startswith(prefix)}
        denoiser = LSTMVAE(settings.hidden, settings.latent)
        try:
            denoiser.load_state_dict(state, strict=True)
        except RuntimeError as exc:
            raise ValueError(f"{directory / _WEIGHTS}: weights for {metric!r} do not fit: {str(exc).splitlines()[0]}") from None
        denoisers[metric] = denoiser.eval()
    stats = manifest["metrics"]
    return MinderModel(
        settings=settings,
        interval_s=float(manifest["interval_s"]),
        window=int(manifest["window"]),
        metrics=metrics,
        centers=np.array([stats[m]["center"] for m in metrics]),
        scales=np.array([stats[m]["scale"] for m in metrics]),
        spreads=np.array([stats[m]["spread"] for m in metrics]),
        priority=tuple(manifest["priority"]),
        denoisers=denoisers,
    )
