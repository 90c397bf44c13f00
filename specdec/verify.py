"""The verification rule of speculative sampling, as one pure function.

Leviathan, Kalman & Matias, "Fast Inference from Transformers via Speculative Decoding", 2022
(arXiv 2211.17192), Algorithm 1; the same rule is Chen et al. 2023 (arXiv 2302.01318), Algorithm 2,
where the names are swapped (there q is the target and p the draft). Here, as in Leviathan:
p = target, q = draft. The numbered steps below are the ones the math page refers to.

`verify_proposal` picks the rule for a proposal's shape: a chain's is `verify_draft`; a tree of deterministic
children (the draft's top-b at each node: Medusa, EAGLE-2, SGLang, vLLM) is verified by `verify_tree`, "sample and
match": at each node draw y from the target's p there, descend if y is a child, else emit y. Each emitted token is
drawn from p given the tokens before it, so the output is the target's distribution whatever the tree; at
temperature 0 it is the longest path that follows the target's argmax. A tree whose children were drawn from the
draft's q without replacement (SpecInfer; Jeon et al. 2024, arXiv 2402.14160) is verified by `verify_tree_sampled`,
recursive rejection sampling: each child in turn is accepted with min(1, p(x)/q(x)), and after a rejection p becomes
the residual norm(max(0, p - q)) and q loses the tried child (renormalised over the siblings not yet tried).

`verify_block` is block verification (Sun, Mendlovic, Leviathan et al., "Block Verification Accelerates Speculative
Decoding", ICLR 2025, arXiv 2403.10444, Algorithm 2): the same chain, the same draws, decided as a block. The weight
of a prefix is the running product of the ratios p(x)/q(x), capped at 1; going back from the longest prefix, each is
kept with a probability that weighs its residual mass against what it lost; the extra token comes from that prefix's
own residual norm(max(0, w p - q)). It is exact, and in expectation it keeps at least as many tokens as the token
rule for every draft and target (the paper's Theorem 2; the math page's worked example). At temperature 0 the two
rules keep the same tokens.
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
    path: list[int] | None = None  # a tree's: the accepted nodes, root to leaf (None for a chain)
    # block verification's (None for the token rule): the capped running product w_i, and the probability h_i of
    # keeping prefix i given no longer prefix was kept (block_terms)
    block_weights: torch.Tensor | None = None  # (k,) w_1..w_k
    stop_probs: torch.Tensor | None = None  # (k,) h_1..h_k


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


def block_terms(draft_tokens: torch.Tensor, q_draft: torch.Tensor, p_target: torch.Tensor,
                cap: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Block verification's per-prefix terms (Sun et al. 2025, Algorithm 2), shapes as for verify_draft:
    (weights (k + 1,) with w_0 = 1, stop_probs (k + 1,) with h_0 = 1, residual masses (k,) of prefixes 0..k-1).

    w_i = min(1, w_(i-1) p(x_i)/q(x_i)), the running product of the ratios capped at 1 (cap=False: uncapped, a wrong
    variant for the Exactness page); m_i = sum_x max(0, w_i p_(i+1)(x) - q_(i+1)(x)), the residual mass after prefix
    i; h_i = m_i / (m_i + 1 - w_i) for i < k and h_k = w_k. Where m_i + 1 - w_i = 0 (w_i = 1 and p = q there) the
    rule never reaches prefix i in exact arithmetic; h_i = 1 there.
    """
    k = draft_tokens.shape[0]
    positions = torch.arange(k, device=draft_tokens.device)
    ratios = p_target[positions, draft_tokens] / q_draft[positions, draft_tokens].clamp_min(torch.finfo(q_draft.dtype).tiny)
    weights = [torch.ones((), dtype=p_target.dtype, device=p_target.device)]
    for i in range(k):
        w = weights[-1] * ratios[i]
        weights.append(w.clamp(max=1.0) if cap else w)
    weights = torch.stack(weights)  # (k + 1,)
    masses = (weights[:k, None] * p_target[:k] - q_draft).clamp_min(0.0).sum(dim=1)  # (k,)
    denominators = masses + 1.0 - weights[:k]
    h = torch.where(denominators > 0, masses / denominators.clamp_min(torch.finfo(p_target.dtype).tiny),
                    torch.ones_like(masses))
    stop_probs = torch.cat([h, weights[k:]]).clamp(0.0, 1.0)  # h_0..h_(k-1), then h_k = w_k
    return weights, stop_probs, masses


def verify_block(
    draft_tokens: torch.Tensor,
    q_draft: torch.Tensor,
    p_target: torch.Tensor,
    generator: torch.Generator,
    *,
    uniforms: torch.Tensor | None = None,
) -> VerifyResult:
    """Block verification (Sun et al. 2025, arXiv 2403.10444, Algorithm 2): exact, never fewer tokens in expectation
    than verify_draft. Arguments as for verify_draft; `uniforms` (k,) are the draws eta_1..eta_k (replay), one per
    prefix, used by this step alone.
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
    # 2. The weight of each prefix, w_i = min(1, w_(i-1) p(x_i)/q(x_i)), and the probability h_i of keeping prefix i
    #    when no longer one was kept: h_i = m_i / (m_i + 1 - w_i), m_i the mass of max(0, w_i p - q) after it; h_k = w_k.
    weights, stop_probs, _ = block_terms(draft_tokens, q_draft, p_target)
    # 3. One uniform eta_i per prefix i = 1..k (fresh for this step: reusing another step's draws couples the steps).
    if uniforms is None:
        uniforms = torch.rand(k, generator=generator, device=draft_tokens.device)
    kept = uniforms < stop_probs[1:]
    # 4. tau = the longest prefix i with eta_i < h_i, 0 if none (the empty prefix is always kept).
    hits = torch.nonzero(kept).flatten()
    n_accepted = int(hits[-1].item()) + 1 if hits.numel() else 0
    if n_accepted < k:
        # 5a. Below k: the extra token from that prefix's residual norm(max(0, w_tau p - q)) (w_0 = 1: the token
        #     rule's residual at tau = 0, and only there).
        residual = residual_distribution(weights[n_accepted] * p_target[n_accepted], q_draft[n_accepted])
        extra = sample(residual, generator)
        resampled, bonus = int(extra), None
    else:
        # 5b. All k kept: the bonus token from the target's next distribution.
        residual = None
        extra = sample(p_target[k], generator)
        resampled, bonus = None, int(extra)
    tokens = torch.cat([draft_tokens[:n_accepted], extra.view(1)])
    return VerifyResult(
        n_accepted=n_accepted,
        tokens=tokens,
        accept_probs=acceptance_probability(p_x, q_x),
        uniforms=uniforms,
        accepted=kept,
        p_draft_tokens=p_x,
        q_draft_tokens=q_x,
        resampled_token=resampled,
        bonus_token=bonus,
        residual=residual,
        block_weights=weights[1:],
        stop_probs=stop_probs[1:],
    )


def verify_tree(
    tokens: torch.Tensor,
    parents: list[int],
    p_target: torch.Tensor,
    generator: torch.Generator,
    *,
    uniforms: torch.Tensor | None = None,
) -> VerifyResult:
    """Sample and match: the exact rule for a tree whose children are chosen deterministically (top-b).

    tokens (N,) int64, the nodes, parents before children, siblings' tokens distinct; parents[i] the index of node
    i's parent, -1 for a child of the prefix; p_target (N + 1, V): row 0 the target's p after the prefix, row 1 + i
    its p after node i's root-to-node path. `uniforms` (at most depth + 1, float64) replaces the draws (replay).
    """
    n = tokens.shape[0]
    if len(parents) != n or p_target.shape[0] != n + 1:
        raise ValueError(f"shape mismatch: {n} nodes, {len(parents)} parents, p_target {tuple(p_target.shape)}; "
                         f"expected N parents and (N + 1, V)")
    ids = tokens.tolist()
    # 1. The children of each node (-1: the prefix), as {token: node}.
    children: dict[int, dict[int, int]] = {}
    for i, parent in enumerate(parents):
        children.setdefault(parent, {})[ids[i]] = i
    path, drawn = [], []
    node = -1
    while True:
        # 2. At the current node, draw y ~ p there (inverse CDF with one uniform, as sampling.sample draws).
        p_row = p_target[node + 1]
        cdf = torch.cumsum(p_row, dim=0, dtype=torch.float64)
        if uniforms is None:
            u = torch.rand(1, generator=generator, dtype=torch.float64, device=p_row.device)
        else:
            u = uniforms[len(drawn)].view(1).to(torch.float64)
        drawn.append(u)
        y = int(torch.searchsorted(cdf, u * cdf[-1], right=True)[0])
        # 3. If y is one of the node's children, accept that child and go on from it.
        child = children.get(node, {}).get(y)
        if child is None:
            break
        path.append(child)
        node = child
    # 4. Otherwise emit y: drawn from p at the last accepted node, a bonus token where that node is a leaf.
    leaf = node not in children
    tried = list(children.get(node, {}))  # the children y missed: p restricted to the other tokens is what y was
    rest = p_target[node + 1].clone()  # drawn from, given no match (shown as the step's residual)
    rest[tried] = 0.0
    residual = None if leaf else rest / rest.sum().clamp_min(torch.finfo(rest.dtype).tiny)
    # each node's q is one-hot (chosen), and its acceptance probability the chance that the draw at its parent picks it
    return tree_result(tokens, parents, p_target, path, y, leaf, drawn, None,
                       torch.ones(n, dtype=p_target.dtype, device=tokens.device), residual)


def tree_result(tokens, parents, p_target, path, y, leaf, drawn, accept_probs, q_draft_tokens, residual) -> VerifyResult:
    """The VerifyResult of a tree step, either rule: the accepted path's nodes, then y, the step's own token (a bonus
    at a leaf, else drawn from what the last node's children left); p(x) of each node at its parent; accept_probs
    None: those p(x)."""
    n = tokens.shape[0]
    on_path = torch.zeros(n, dtype=torch.bool, device=tokens.device)
    on_path[path] = True
    rows = torch.tensor([parent + 1 for parent in parents], dtype=torch.long, device=tokens.device)
    p_x = p_target[rows, tokens] if n else p_target.new_zeros(0)
    return VerifyResult(
        n_accepted=len(path),
        tokens=torch.cat([tokens[path], torch.tensor([y], dtype=torch.int64, device=tokens.device)]),
        accept_probs=p_x if accept_probs is None else accept_probs,
        uniforms=torch.cat(drawn),
        accepted=on_path,
        p_draft_tokens=p_x,
        q_draft_tokens=q_draft_tokens,
        resampled_token=None if leaf else y,
        bonus_token=y if leaf else None,
        residual=residual,
        path=path,
    )


def verify_tree_sampled(
    tokens: torch.Tensor,
    parents: list[int],
    q_draft: torch.Tensor,
    p_target: torch.Tensor,
    generator: torch.Generator,
    *,
    uniforms: torch.Tensor | None = None,
) -> VerifyResult:
    """Recursive rejection sampling: the exact rule for a tree whose children were drawn from q without replacement.

    tokens (N,) and parents as for verify_tree, the siblings in the order they were drawn; q_draft (N, V): row i the
    draft's q at node i's parent (the distribution its siblings were drawn from, before any was removed); p_target
    (N + 1, V) as for verify_tree. `uniforms` replaces the draws in the order the rule uses them (replay).
    """
    n = tokens.shape[0]
    if len(parents) != n or p_target.shape[0] != n + 1 or tuple(q_draft.shape) != (n, p_target.shape[1]):
        raise ValueError(f"shape mismatch: {n} nodes, {len(parents)} parents, q_draft {tuple(q_draft.shape)}, "
                         f"p_target {tuple(p_target.shape)}; expected N parents, (N, V) and (N + 1, V)")
    ids = tokens.tolist()
    drawn: list[torch.Tensor] = []

    def uniform() -> torch.Tensor:
        u = (torch.rand(1, generator=generator, dtype=torch.float64, device=p_target.device) if uniforms is None
             else uniforms[len(drawn)].view(1).to(torch.float64))
        drawn.append(u)
        return u

    # 1. The children of each node (-1: the prefix), in the order they were drawn.
    children: dict[int, list[int]] = {}
    for i, parent in enumerate(parents):
        children.setdefault(parent, []).append(i)
    accept_probs = torch.full((n,), float("nan"), dtype=p_target.dtype, device=p_target.device)
    path, node, residual = [], -1, None
    while True:
        p_row = p_target[node + 1]
        tried = children.get(node, [])
        if not tried:
            break  # a leaf: the bonus token from p there
        q_row = q_draft[tried[0]].clone()
        accepted = None
        for c in tried:
            # 2. Accept child c with probability min(1, p(x)/q(x)) under the current p and q.
            x = ids[c]
            accept_probs[c] = acceptance_probability(p_row[x], q_row[x])
            if bool(uniform() < accept_probs[c]):
                accepted = c
                break
            # 3. Rejected: p becomes the residual norm(max(0, p - q)); q loses x, renormalised over the rest.
            p_row = residual_distribution(p_row, q_row)
            q_row[x] = 0.0
            total = q_row.sum()
            q_row = q_row / total if bool(total > 0) else q_row
        if accepted is None:
            residual = p_row
            break
        path.append(accepted)
        node = accepted
    # 4. The step's own token: from the last residual if every child of the last node was rejected, else (a leaf)
    #    from p there.
    u = uniform()
    cdf = torch.cumsum(p_row, dim=0, dtype=torch.float64)
    y = int(torch.searchsorted(cdf, u * cdf[-1], right=True)[0])
    leaf = residual is None
    q_x = q_draft[torch.arange(n, device=tokens.device), tokens] if n else p_target.new_zeros(0)
    # accept_probs: NaN for the children never tried
    return tree_result(tokens, parents, p_target, path, y, leaf, drawn, accept_probs, q_x, residual)


RULES = ("token", "block")  # a chain's verification rules: Algorithm 1 (verify_draft), block verification (verify_block)


def verify_proposal(proposal, p_target: torch.Tensor, generator: torch.Generator, rule: str = "token") -> VerifyResult:
    """The verification rule for the proposal's shape (a drafters.Proposal): a chain's is Algorithm 1 (verify_draft)
    or, with rule="block", block verification (verify_block); a tree's sample and match (verify_tree); p_target
    (n + 1, V) holds the target's distribution after the prefix's last token (row 0, for a tree) or before each node,
    and after the last."""
    if proposal.parents is None:
        verify = verify_block if rule == "block" else verify_draft
        return verify(proposal.tokens, proposal.q_draft, p_target, generator)
    if proposal.sampled_children:
        return verify_tree_sampled(proposal.tokens, proposal.parents, proposal.q_draft, p_target, generator)
    return verify_tree(proposal.tokens, proposal.parents, p_target, generator)
