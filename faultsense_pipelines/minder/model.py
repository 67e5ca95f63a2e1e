"""Minder's per-metric denoiser: an LSTM variational autoencoder over metric windows.

Monitoring series are noisy; Minder compares machines on denoised series. One LSTM-VAE per
metric, shared by all machines, encodes a window of ``W`` samples into a small Gaussian
latent and decodes it back. Trained on healthy history, it keeps the shape the fleet's
iteration rhythm gives a window and drops sample-to-sample noise.

Each window is centred before it is encoded and its mean added back after decoding, so the
denoiser changes only a window's shape, never its level: a machine whose level drops (a
throttled GPU) stays exactly as far from the fleet as it is, whatever the model learnt.

References:
    Deng et al., "Minder: Faulty Machine Detection for Large-scale Distributed Model
    Training", NSDI '25 (arXiv 2411.01791), section 4.3 (per-metric LSTM-VAE denoising).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

__all__ = ["LSTMVAE", "fit_denoiser", "reconstruct", "torch_threads"]


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run torch on ``n`` intra-op threads inside the block, then restore the old count.

    These LSTMs are tiny (hidden 16): one thread runs them fastest, and on a shared CPU
    extra threads mostly spin.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class LSTMVAE(nn.Module):
    """LSTM encoder -> Gaussian latent -> LSTM decoder, for windows of one metric.

    Args:
        hidden: LSTM hidden size.
        latent: latent size.
    """

    def __init__(self, hidden: int = 16, latent: int = 4) -> None:
        super().__init__()
        self.hidden, self.latent = hidden, latent
        self.encoder = nn.LSTM(1, hidden, batch_first=True)
        self.to_mu = nn.Linear(hidden, latent)
        self.to_logvar = nn.Linear(hidden, latent)
        self.decoder = nn.LSTM(latent, hidden, batch_first=True)
        self.to_value = nn.Linear(hidden, 1)

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and log-variance of the latent; x: (batch, W) -> two (batch, latent)."""
        _, (h, _) = self.encoder(x.unsqueeze(-1))  # h: (1, batch, hidden)
        return self.to_mu(h[-1]), self.to_logvar(h[-1])

    def decode(self, z: torch.Tensor, length: int) -> torch.Tensor:
        """Window from latent; z: (batch, latent) -> (batch, length)."""
        steps = z.unsqueeze(1).expand(-1, length, -1)  # (batch, length, latent)
        out, _ = self.decoder(steps)  # (batch, length, hidden)
        return self.to_value(out).squeeze(-1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sampled reconstruction, latent mean, latent log-variance."""
        mu, logvar = self.encode(x)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.decode(z, x.shape[1]), mu, logvar


def fit_denoiser(
    windows: np.ndarray,
    *,
    hidden: int = 16,
    latent: int = 4,
    steps: int = 300,
    batch_size: int = 256,
    learning_rate: float = 3e-3,
    kl_weight: float = 1e-3,
    seed: int = 0,
) -> LSTMVAE:
    """Train one metric's LSTM-VAE on centred healthy windows.

    Args:
        windows: (n_windows, W) float array in normalized units, no NaN.
        hidden, latent: model size.
        steps: Adam steps of ``batch_size`` windows drawn at random.
        learning_rate: Adam learning rate.
        kl_weight: weight of KL(q(z|x) || N(0, I)) against the reconstruction MSE.
        seed: seeds both the initial weights and the batches.

    Returns:
        The trained model in eval mode.

    Raises:
        ValueError: ``windows`` is empty, not 2-D, or holds NaN.

    Notes:
        O(steps * batch_size * W * hidden^2) time.
    """
    if windows.ndim != 2 or windows.shape[0] == 0:
        raise ValueError(f"need (n_windows, W) training windows, got shape {windows.shape}")
    if not np.isfinite(windows).all():
        raise ValueError("training windows hold NaN or infinite values")
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = LSTMVAE(hidden, latent)
    data = torch.as_tensor(windows - windows.mean(axis=1, keepdims=True), dtype=torch.float32)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    model.train()
    for _ in range(steps):
        batch = data[torch.randint(len(data), (min(batch_size, len(data)),), generator=generator)]
        recon, mu, logvar = model(batch)
        kl = -0.5 * torch.mean(torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1))
        loss = nn.functional.mse_loss(recon, batch) + kl_weight * kl
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


@torch.inference_mode()
def reconstruct(model: LSTMVAE, windows: np.ndarray) -> np.ndarray:
    """Denoise windows: decode each window's latent mean and add its own mean back.

    Args:
        model: a trained :class:`LSTMVAE`.
        windows: (..., W) float array in normalized units, no NaN.

    Returns:
        Float32 array of the same shape; deterministic (no latent sampling).
    """
    flat = torch.as_tensor(windows.reshape(-1, windows.shape[-1]), dtype=torch.float32)
    level = flat.mean(dim=1, keepdim=True)
    mu, _ = model.encode(flat - level)
    out = model.decode(mu, flat.shape[1]) + level
    return out.numpy().reshape(windows.shape)
