"""Exact distributions, for the exactness tests and the Exactness page.

`first_token_distribution` enumerates verify_draft's branches exactly: for each draft token x, the
acceptance probability verify_draft reports, the accept branch (replayed draw r = 0) and the reject
branch (replayed draw r = 1, where verify_draft returns the residual it resamples from). For the correct
rule the result is p_target[0] (Leviathan Thm 3.5 / Appendix A.1).
"""

from __future__ import annotations

import torch

from .verify import acceptance_probability, residual_distribution, verify_draft


def naive_residual(p_row: torch.Tensor, q_row: torch.Tensor, draft_token) -> torch.Tensor:
    """WRONG on purpose: norm(max(0, p - alpha q)), alpha = min(1, p/q) of the rejected token.

    A formula seen in the wild; it is not exact. Kept only to show on the site what it breaks.
    """
    alpha = acceptance_probability(p_row[draft_token], q_row[draft_token])
    residual = (p_row - alpha * q_row).clamp_min(0.0)
    return residual / residual.sum()


def first_token_distribution(p_target: torch.Tensor, q_draft: torch.Tensor, residual_fn=residual_distribution):
    """Exact distribution (V,) float64 of the first emitted token of verify_draft."""
    k, V = q_draft.shape
    dist = torch.zeros(V, dtype=torch.float64)
    rest = torch.zeros(k - 1, dtype=torch.int64)  # later draft tokens cannot change the first output
    gen = torch.Generator().manual_seed(0)
    for x in range(V):
        qx = float(q_draft[0, x])
        if qx == 0.0:
            continue  # the draft never proposes x
        draft_tokens = torch.cat([torch.tensor([x]), rest])
        accept = verify_draft(draft_tokens, q_draft, p_target, gen, residual_fn=residual_fn,
                              uniforms=torch.zeros(k, dtype=q_draft.dtype))
        reject = verify_draft(draft_tokens, q_draft, p_target, gen, residual_fn=residual_fn,
                              uniforms=torch.ones(k, dtype=q_draft.dtype))
        a = float(accept.accept_probs[0])
        if reject.n_accepted != 0 or (a > 0 and int(accept.tokens[0]) != x):
            raise AssertionError("verify_draft did not follow the replayed draws")
        dist[x] += qx * a
        if a < 1:
            dist += qx * (1.0 - a) * reject.residual.double()
    return dist
