"""Minder's settings: the window, the outlier threshold, continuity, and the denoiser's size.

One frozen object, validated when built, saved beside the model weights (see
:mod:`faultsense_pipelines.minder.store`) so a scan uses the settings the model was trained
with unless told otherwise.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

__all__ = ["MinderSettings"]


@dataclass(frozen=True)
class MinderSettings:
    """How Minder trains and scans.

    Attributes:
        window_s: length of one comparison window in seconds (at least 4 samples are used).
        continuity_s: how long a machine must stay the outlier to be a fault, in seconds
            (Minder: most abnormal patterns last longer than ~5 minutes; blips do not).
        threshold: robust z-score (median/MAD across machines) above which a machine is an
            outlier in a window. 14 sits between the highest score a healthy machine kept
            for 5 minutes (10.2, from persistent per-machine offsets) and the weakest fault
            (21) on generated fleets of 64-256 machines (bench/bench_minder.py, tuning seed 1).
        min_spread: absolute floor, in normalized metric units, on the spread of machines'
            distances to the fleet (the score's unit). The working floor is each metric's
            spread in healthy history, learnt in training; this only guards a metric that
            never varied.
        max_gap_windows: quiet windows allowed inside one abnormal run.
        min_coverage: fraction of a window's samples a machine must have to be compared.
        min_machines: machines needed in a window for any comparison.
        denoise: compare machines on LSTM-VAE reconstructions (Minder); False compares the
            raw windows (an ablation, see bench/bench_minder.py).
        hidden: LSTM hidden size of each per-metric LSTM-VAE.
        latent: latent size of each LSTM-VAE.
        train_steps: optimizer steps per metric model.
        batch_size: windows per training step.
        learning_rate: Adam learning rate.
        kl_weight: weight of the KL term of the VAE loss.
        seed: random seed of training.
    """

    window_s: float = 60.0
    continuity_s: float = 300.0
    threshold: float = 14.0
    min_spread: float = 0.01
    max_gap_windows: int = 1
    min_coverage: float = 0.5
    min_machines: int = 4
    denoise: bool = True
    hidden: int = 16
    latent: int = 4
    train_steps: int = 150
    batch_size: int = 128
    learning_rate: float = 3e-3
    kl_weight: float = 1e-3
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("window_s", "continuity_s", "threshold", "min_spread", "learning_rate"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("hidden", "latent", "train_steps", "batch_size", "min_machines"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if self.max_gap_windows < 0:
            raise ValueError(f"max_gap_windows must be >= 0, got {self.max_gap_windows!r}")
        if not 0 < self.min_coverage <= 1:
            raise ValueError(f"min_coverage must be in (0, 1], got {self.min_coverage!r}")
        if self.kl_weight < 0:
            raise ValueError(f"kl_weight must be >= 0, got {self.kl_weight!r}")

    def window_samples(self, interval_s: float) -> int:
        """Samples per window at ``interval_s`` (at least 4)."""
        return max(4, round(self.window_s / interval_s))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MinderSettings:
        """Build from :meth:`to_dict` output; unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown Minder setting {unknown[0]!r}")
        return cls(**data)

    def updated(self, **changes: Any) -> MinderSettings:
        """A copy with ``changes`` (None values ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})
