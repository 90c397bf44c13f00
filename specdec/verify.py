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

from .checks import ArgumentError, check_generator
from .sampling import inverse_cdf, sample


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


# ---------------------------------------------------------------- what every exported rule checks first
# The decoder checks a drafter's proposal (drafters.check_proposal) and the target's logits before a rule runs; a
# direct caller (the audit's users, a test, a notebook) gets the same protection here: a rule given a row that is not
# a distribution, an id outside the vocabulary or a draw outside [0, 1) would otherwise return an impossible token
# (id V, a token of probability 0) rather than fail. Each check is one host sync.


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    return type(value).__name__


def check_distributions(probs, name: str, rows: int, vocab: int | None = None) -> None:
    """probs (rows, V): floating point, every row finite, >= 0 and summing to 1 (within 1e-3, as
    drafters.check_proposal allows float32 sums over a large vocabulary)."""
    if not isinstance(probs, torch.Tensor) or not probs.is_floating_point() or probs.dim() != 2:
        raise ArgumentError(f"{name} must be a 2-D floating-point tensor of probabilities, got {_describe(probs)}")
    if probs.shape[0] != rows or probs.shape[1] == 0 or (vocab is not None and probs.shape[1] != vocab):
        raise ArgumentError(f"shape mismatch: {name} has shape {tuple(probs.shape)}, expected "
                            f"({rows}, {vocab if vocab else 'V'})")
    if rows == 0:
        return
    sums = probs.sum(-1, dtype=torch.float64)  # NaN or +-inf anywhere in a row makes its sum non-finite
    ok = torch.stack([torch.isfinite(sums).all(), torch.nan_to_num(probs.amin(), nan=0.0) >= 0,
                      ((sums - 1).abs() <= 1e-3).all()]).tolist()
    problems = ("NaN or infinite entries", "negative entries", "rows that do not sum to 1")
    bad = [why for good, why in zip(ok, problems) if not good]
    if bad:
        raise ArgumentError(f"{name} has {' and '.join(bad)}: each row must be a probability distribution")


def check_token_ids(tokens, name: str, vocab: int) -> None:
    """tokens: a 1-D int64 tensor of ids in [0, V)."""
    if not isinstance(tokens, torch.Tensor) or tokens.dtype != torch.int64 or tokens.dim() != 1:
        raise ArgumentError(f"{name} must be a 1-D int64 tensor of token ids, got {_describe(tokens)}")
    if tokens.numel() and not bool(((tokens >= 0) & (tokens < vocab)).all()):
        raise ArgumentError(f"{name} has ids outside the vocabulary [0, {vocab})")


def check_uniforms(uniforms, name: str = "uniforms", length: int | None = None, upper: float = 1.0) -> None:
    """Replayed draws: a 1-D floating tensor (of `length` entries, if given), each in [0, upper]; upper < 1 is checked
    where a draw picks a token (an inverse CDF at u >= 1 runs off the vocabulary)."""
    if not isinstance(uniforms, torch.Tensor) or not uniforms.is_floating_point() or uniforms.dim() != 1:
        raise ArgumentError(f"{name} must be a 1-D floating-point tensor of draws in [0, 1), got {_describe(uniforms)}")
    if length is not None and uniforms.shape[0] != length:
        raise ArgumentError(f"{name} has {uniforms.shape[0]} draws, expected {length} (one per draft position)")
    if uniforms.numel() and not bool(((uniforms >= 0) & (uniforms <= upper)).all()):
        raise ArgumentError(f"{name} must lie in [0, 1) (1 itself only rejects), got values outside it or NaN")


def check_chain_inputs(draft_tokens, q_draft, p_target, generator, uniforms) -> None:
    """verify_draft's and verify_block's arguments: shapes (k,), (k, V), (k + 1, V); ids in the vocabulary; q and p
    distributions; q(x) > 0 for each draft x (the draft drew it); k draws in [0, 1] (1 rejects every draft)."""
    check_generator(generator)
    if not isinstance(draft_tokens, torch.Tensor) or draft_tokens.dim() != 1:
        raise ArgumentError(f"draft_tokens must be a 1-D int64 tensor, got {_describe(draft_tokens)}")
    k = draft_tokens.shape[0]
    if not isinstance(p_target, torch.Tensor) or p_target.dim() != 2:
        raise ArgumentError(f"p_target must be a (k + 1, V) tensor, got {_describe(p_target)}")
    vocab = p_target.shape[1]
    check_distributions(p_target, "p_target", k + 1, vocab)
    check_distributions(q_draft, "q_draft", k, vocab)
    check_token_ids(draft_tokens, "draft_tokens", vocab)
    if k and not bool((q_draft[torch.arange(k, device=q_draft.device), draft_tokens] > 0).all()):
        raise ArgumentError("q_draft gives a draft token probability 0: q must be the distribution each draft token "
                            "was drawn from")
    if uniforms is not None:
        check_uniforms(uniforms, length=k)


def check_tree_inputs(tokens, parents, p_target, generator, uniforms, q_draft=None) -> list[int]:
    """verify_tree's and verify_tree_sampled's arguments: tokens (N,) ids in the vocabulary; parents a list of N ints,
    each -1 or an earlier node; siblings' tokens distinct; p_target (N + 1, V) (and q_draft (N, V)) distributions,
    q(x) > 0 for each node's token; draws in [0, 1]. Returns parents as a list of ints."""
    check_generator(generator)
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1:
        raise ArgumentError(f"tokens must be a 1-D int64 tensor, got {_describe(tokens)}")
    n = tokens.shape[0]
    if not isinstance(parents, (list, tuple)) or len(parents) != n:
        raise ArgumentError(f"parents must be a list of {n} node indices (one per token), got {_describe(parents)}"
                            + (f" of length {len(parents)}" if isinstance(parents, (list, tuple)) else ""))
    if not all(isinstance(a, int) and not isinstance(a, bool) and -1 <= a < i for i, a in enumerate(parents)):
        raise ArgumentError("parents must list, for each node, -1 (a child of the prefix) or the index of an earlier "
                            "node (parents before children)")
    if not isinstance(p_target, torch.Tensor) or p_target.dim() != 2:
        raise ArgumentError(f"p_target must be an (N + 1, V) tensor, got {_describe(p_target)}")
    vocab = p_target.shape[1]
    check_distributions(p_target, "p_target", n + 1, vocab)
    check_token_ids(tokens, "tokens", vocab)
    ids = tokens.tolist()
    if len(set(zip(parents, ids))) != n:
        raise ArgumentError("two children of one node have the same token: the rule descends to THE child that "
                            "matches a draw")
    if q_draft is not None:
        check_distributions(q_draft, "q_draft", n, vocab)
        if n and not bool((q_draft[torch.arange(n, device=q_draft.device), tokens] > 0).all()):
            raise ArgumentError("q_draft gives a node's token probability 0: each child was drawn from its row")
    if uniforms is not None:
        check_uniforms(uniforms)
    return list(parents)


def _replayed(uniforms: torch.Tensor, used: int, token_draw: bool) -> torch.Tensor:
    """The rule's next replayed draw (a 1-element float64 tensor), or a clear error when the replay ran out or a draw
    that picks a token is 1 (an inverse CDF at u = 1 runs off the vocabulary)."""
    if used >= uniforms.shape[0]:
        raise ArgumentError(f"uniforms has {uniforms.shape[0]} draws; the rule needed more (one per draw it makes, in "
                            "order)")
    u = uniforms[used].view(1).to(torch.float64)
    if token_draw and bool(u >= 1):
        raise ArgumentError(f"uniforms[{used}] draws a token and must be below 1, got {float(u)}")
    return u


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
    tried: list[int] | None = None  # recursive rejection sampling's: the nodes it tested, in the order tested
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
    # 0. The arguments: shapes (k,), (k, V), (k + 1, V), distributions, ids, draws (check_chain_inputs).
    check_chain_inputs(draft_tokens, q_draft, p_target, generator, uniforms)
    k = draft_tokens.shape[0]
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
    # 0. The arguments: shapes (k,), (k, V), (k + 1, V), distributions, ids, draws (check_chain_inputs).
    check_chain_inputs(draft_tokens, q_draft, p_target, generator, uniforms)
    k = draft_tokens.shape[0]
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
    its p after node i's root-to-node path. `uniforms` (float64, each in [0, 1): one per node the rule visits, at most
    depth + 1) replaces the draws (replay).
    """
    # 0. The arguments: ids, parents, distributions, draws (check_tree_inputs).
    parents = check_tree_inputs(tokens, parents, p_target, generator, uniforms)
    n = tokens.shape[0]
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
        if uniforms is None:
            u = torch.rand(1, generator=generator, dtype=torch.float64, device=p_row.device)
        else:
            u = _replayed(uniforms, len(drawn), token_draw=True)
        drawn.append(u)
        y = int(inverse_cdf(p_row, u))
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
    (N + 1, V) as for verify_tree. `uniforms` replaces the draws in the order the rule uses them (replay): one per
    child tested, in [0, 1] (1 rejects), then one in [0, 1) for the step's own token. The result's `tried` lists the
    children tested, in order.
    """
    # 0. The arguments: ids, parents, both distributions, draws (check_tree_inputs).
    parents = check_tree_inputs(tokens, parents, p_target, generator, uniforms, q_draft)
    n = tokens.shape[0]
    ids = tokens.tolist()
    drawn: list[torch.Tensor] = []
    tested: list[int] = []  # the children the rule tested, in order (the record's "rejected" are the tested ones off the path)

    def uniform(token_draw: bool = False) -> torch.Tensor:
        u = (torch.rand(1, generator=generator, dtype=torch.float64, device=p_target.device) if uniforms is None
             else _replayed(uniforms, len(drawn), token_draw))
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
            tested.append(c)
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
    y = int(inverse_cdf(p_row, uniform(token_draw=True)))
    leaf = residual is None
    q_x = q_draft[torch.arange(n, device=tokens.device), tokens] if n else p_target.new_zeros(0)
    # accept_probs: NaN for the children never tried (the record writes null there: trace.record_step)
    result = tree_result(tokens, parents, p_target, path, y, leaf, drawn, accept_probs, q_x, residual)
    result.tried = tested
    return result


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
