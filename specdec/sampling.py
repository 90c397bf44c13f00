"""Turning logits into the distribution a token is drawn from.

The same function serves the draft and the target, so temperature, top-k and top-p are applied
identically to both, and the `q` the verifier sees is exactly the distribution the draft token was
drawn from (a known peer bug is warping only one of the two). Everything is computed in float32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .checks import ArgumentError, as_int, as_real
from .limits import MIN_TEMPERATURE


@dataclass(frozen=True)
class SamplingConfig:
    # 0 means true greedy (argmax, a one-hot distribution), not a tiny T; 0 < T < MIN_TEMPERATURE is refused
    temperature: float = 1.0
    top_k: int | None = None  # keep only the k most likely tokens (None: all)
    top_p: float | None = None  # keep the smallest set whose mass reaches top_p (None: all)

    def __post_init__(self) -> None:
        # Numbers are stored as Python numbers (a NumPy or 0-d tensor scalar is accepted, as everywhere: checks.py).
        temperature = as_real(self.temperature, "temperature must be a finite number")
        if not math.isfinite(temperature):
            raise ArgumentError(f"temperature must be a finite number, got {self.temperature!r}")
        if temperature < 0:
            raise ArgumentError(f"temperature must be >= 0 (0 = greedy), got {temperature}")
        if 0 < temperature < MIN_TEMPERATURE:
            raise ArgumentError(f"temperature {temperature} is too small to sample from: the least is "
                                f"{MIN_TEMPERATURE} (below about 1e-37 the scaled logits overflow float32); use "
                                "temperature=0 for greedy decoding")
        object.__setattr__(self, "temperature", temperature)
        if self.top_k is not None:
            top_k = as_int(self.top_k, "top_k must be a positive integer or None")
            if top_k < 1:
                raise ArgumentError(f"top_k must be a positive integer or None, got {top_k}")
            object.__setattr__(self, "top_k", top_k)
        if self.top_p is not None:
            top_p = as_real(self.top_p, "top_p must be in (0, 1] or None")
            if not 0.0 < top_p <= 1.0:
                raise ArgumentError(f"top_p must be in (0, 1] or None, got {self.top_p!r}")
            object.__setattr__(self, "top_p", top_p)

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
    # torch.rand in float64 is at most 1 - 2**-53, so u * total < total: the search never runs off the end.
    return inverse_cdf(probs, torch.rand(1, generator=generator, dtype=torch.float64, device=probs.device))


def inverse_cdf(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """(V,) weights, (1,) float64 u in [0, 1) -> () the first id whose cumulative mass exceeds u * total: the one
    inverse-CDF draw of the library (sample draws u from a generator; the tree rules replay a recorded u)."""
    cdf = torch.cumsum(probs, dim=0, dtype=torch.float64)  # (V,)
    total = cdf[-1]
    # A distribution no token can be drawn from is an error, never a token (one host sync).
    if not bool((probs.amin() >= 0) & (total > 0) & torch.isfinite(total)):
        raise ValueError("cannot sample: the probabilities are negative, NaN or infinite, or sum to 0")
    return torch.searchsorted(cdf, u * total, right=True)[0]
