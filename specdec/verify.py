"""The verification rule of speculative sampling, as one pure function.

Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative Decoding", 2022
(arXiv 2211.17192), Algorithm 1; the same rule is Chen et al. 2023 (arXiv 2302.01318), Algorithm 2,
where the names are swapped (there q is the target and p the draft). Here, as in Leviathan:
p = target, q = draft. The numbered steps below are the ones the math page refers to.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .sampling import sample


def acceptance_probability(p_x: torch.Tensor, q_x: torch.Tensor) -> torch.Tensor:
    """min(1, p(x)/q(x)) for each drafted token x. A token the draft drew has q(x) > 0."""
    ratio = p_x / q_x.clamp_min(torch.finfo(q_x.dtype).tiny)
    return ratio.clamp(max=1.0)


def residual_distribution(p_row: torch.Tensor, q_row: torch.Tensor) -> torch.Tensor:
    """norm(max(0, p - q)): where the target has mass the draft under-proposed. It does not depend on the
    rejected token (a wrong rule seen in the wild, norm(max(0, p - alpha q)), does: see the Exactness page).

    If p == q the residual is empty; a rejection then has probability 0 in exact arithmetic,
    and falling back to p keeps the output exact if rounding ever lands there.
    """
    residual = (p_row - q_row).clamp_min(0.0)
    total = residual.sum()
    # torch.where, not `if`: no device-to-host sync on a GPU.
    return torch.where(total > 0, residual / total.clamp_min(torch.finfo(p_row.dtype).tiny), p_row / p_row.sum())


@dataclass
class VerifyResult:
    n_accepted: int  # how many draft tokens were accepted (0..k)
    tokens: torch.Tensor  # (n_accepted + 1,) emitted: accepted prefix + resampled or bonus token
    accept_probs: torch.Tensor  # (k,) min(1, p/q) at each draft position
    uniforms: torch.Tensor  # (k,) the uniform draws r compared against accept_probs
    accepted: torch.Tensor  # (k,) bool, r < min(1, p/q) at each position (only a prefix counts)
    p_draft_tokens: torch.Tensor  # (k,) p(x) of each draft token
    q_draft_tokens: torch.Tensor  # (k,) q(x) of each draft token
    resampled_token: int | None  # token drawn from the residual at the first rejection
    bonus_token: int | None  # token drawn from p_target[k] when all k were accepted
    residual: torch.Tensor | None  # (V,) norm(max(0, p - q)) at the rejected position


def verify_draft(
    draft_tokens: torch.Tensor,
    q_draft: torch.Tensor,
    p_target: torch.Tensor,
    generator: torch.Generator,
    *,
    uniforms: torch.Tensor | None = None,
) -> VerifyResult:
    """Leviathan Algorithm 1, verification half.

    draft_tokens (k,) int64, q_draft (k, V) and p_target (k+1, V) float32 probabilities; p_target[i]
    is the target's distribution for the position of draft_tokens[i], p_target[k] the one after them.
    `uniforms` (k,) replaces the draws, to replay a recorded step or to enumerate both branches exactly.
    """
    k = draft_tokens.shape[0]
    if q_draft.shape[0] != k or p_target.shape[0] != k + 1 or q_draft.shape[1] != p_target.shape[1]:
        raise ValueError(
            f"shape mismatch: draft_tokens {tuple(draft_tokens.shape)}, q_draft {tuple(q_draft.shape)}, "
            f"p_target {tuple(p_target.shape)}; expected (k,), (k, V), (k+1, V)"
        )
    positions = torch.arange(k, device=draft_tokens.device)
    # 1. Look up p(x) and q(x) of every draft token x.
    p_x = p_target[positions, draft_tokens]
    q_x = q_draft[positions, draft_tokens]
    # 2. Acceptance probability min(1, p(x)/q(x)) at each position.
    accept_probs = acceptance_probability(p_x, q_x)
    # 3. One uniform draw r per position; accept x iff r < min(1, p(x)/q(x)).
    if uniforms is None:
        uniforms = torch.rand(k, generator=generator, device=draft_tokens.device)
    accepted = uniforms < accept_probs
    # 4. n = length of the accepted prefix (the only host sync of a step).
    n_accepted = int(accepted.to(torch.int64).cumprod(0).sum().item())
    if n_accepted < k:
        # 5a. First rejection at position n: resample from norm(max(0, p - q)) there.
        residual = residual_distribution(p_target[n_accepted], q_draft[n_accepted])
        extra = sample(residual, generator)
        resampled, bonus = int(extra), None
    else:
        # 5b. All k accepted: a bonus token from the target's next distribution, for free.
        residual = None
        extra = sample(p_target[k], generator)
        resampled, bonus = None, int(extra)
    tokens = torch.cat([draft_tokens[:n_accepted], extra.view(1)])
    return VerifyResult(
        n_accepted=n_accepted,
        tokens=tokens,
        accept_probs=accept_probs,
        uniforms=uniforms,
        accepted=accepted,
        p_draft_tokens=p_x,
        q_draft_tokens=q_x,
        resampled_token=resampled,
        bonus_token=bonus,
        residual=residual,
    )
