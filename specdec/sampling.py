"""Turning logits into the distribution a token is drawn from.

The same function serves the draft and the target, so temperature, top-k and top-p are applied
identically to both, and the `q` the verifier sees is exactly the distribution the draft token was
drawn from (a known peer bug is warping only one of the two). Everything is computed in float32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SamplingConfig:
    temperature: float = 1.0  # 0 means true greedy (argmax, a one-hot distribution), not a tiny T
    top_k: int | None = None  # keep only the k most likely tokens (None: all)
    top_p: float | None = None  # keep the smallest set whose mass reaches top_p (None: all)

    def __post_init__(self) -> None:
        if (not isinstance(self.temperature, (int, float)) or isinstance(self.temperature, bool)
                or not math.isfinite(self.temperature)):
            raise ValueError(f"temperature must be a finite number, got {self.temperature!r}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0 (0 = greedy), got {self.temperature}")
        if self.top_k is not None and (not isinstance(self.top_k, int) or isinstance(self.top_k, bool)
                                       or self.top_k < 1):
            raise ValueError(f"top_k must be a positive integer or None, got {self.top_k!r}")
        if self.top_p is not None and (not isinstance(self.top_p, (int, float)) or isinstance(self.top_p, bool)
                                       or not 0.0 < self.top_p <= 1.0):
            raise ValueError(f"top_p must be in (0, 1] or None, got {self.top_p!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def probs_from_logits(logits: torch.Tensor, config: SamplingConfig) -> torch.Tensor:
    """(..., V) logits -> (..., V) float32 probabilities after temperature, top-k and top-p."""
    logits = logits.float()
    # 1. Greedy: a one-hot on the argmax, so verification accepts iff draft == target argmax.
    if config.greedy:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    logits = logits / config.temperature
    # 2. Top-k: mask everything below the k-th largest logit (ties at the boundary are kept).
    if config.top_k is not None and config.top_k < logits.shape[-1]:
        kth = torch.topk(logits, config.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    # 3. Top-p (nucleus): keep the most likely tokens until their mass reaches top_p; the first
    #    token is always kept.
    if config.top_p is not None and config.top_p < 1.0:
        sorted_probs, order = torch.sort(probs, dim=-1, descending=True)
        mass_before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
        drop_sorted = mass_before >= config.top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        probs = probs.masked_fill(drop, 0.0)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def sample(probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """(V,) probabilities -> () token id, drawn with an explicit generator (replayable).

    Inverse-CDF sampling with ONE uniform: the first id whose cumulative mass exceeds u * total, u ~ U[0, 1).
    Exact for any non-negative weights (they need not sum to 1): id i is drawn with probability
    probs[i] / total, and an id of probability 0 never (its cumulative mass equals its predecessor's). The
    cumulative sum is taken in float64. `torch.multinomial` draws the same distribution, but on this project's
    151,936-id vocabulary it cost ~3 ms per call on the build's CPU, ~10% of an int8 draft pass.
    """
    cdf = torch.cumsum(probs, dim=0, dtype=torch.float64)  # (V,)
    total = cdf[-1]
    # A distribution no token can be drawn from is an error, never a token (one host sync).
    if not bool((probs.amin() >= 0) & (total > 0) & torch.isfinite(total)):
        raise ValueError("cannot sample: the probabilities are negative, NaN or infinite, or sum to 0")
    # torch.rand in float64 is at most 1 - 2**-53, so u < total: the search never runs off the end.
    u = torch.rand(1, generator=generator, dtype=torch.float64, device=probs.device) * total
    return torch.searchsorted(cdf, u, right=True)[0]
