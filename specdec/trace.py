"""What a recorded run keeps: one `StepRecord` per draft/verify round, in a `GenerationTrace`.

The decoder (`decoding.py`) builds them with `record_step`; the build writes them into the traces artifact
(`docs/data/<device>/traces.json`, `docs/data/schema.json`), the trace command into a user's trace file, and the Step
Visualizer draws them. A token's fate (accepted, rejected, not evaluated; the step's extra token resampled or bonus)
is computed here, once (`step_fates`), and recorded: the site and the page's script read it.

A step's proposal is a chain (Leviathan et al. 2022, Algorithm 1): its nodes are the drafts in order, and `k`
counts them, which is also the chain's depth. A tree step (token trees: SpecInfer, Medusa, EAGLE) would also
record each node's parent and the path the target took; a chain step records neither (its parents are the nodes
before it, its path the accepted prefix), so chain traces read as they always have.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch

from .cache import node_depths
from .verify import block_terms

FATES = ("accepted", "rejected", "not evaluated")  # a drafted token's fate
EXTRA_FATES = ("resampled", "bonus")  # the fate of the step's own token, drawn from the residual or from p


@dataclass
class StepRecord:
    step: int  # 0-based index of this draft/verify round
    position: int  # index (among the new tokens) of the first token this step emits
    k: int  # draft tokens (nodes) proposed this step (the policy's choice, fewer near max_new_tokens)
    draft_tokens: list[int]  # the k proposed ids
    q_draft_tokens: list[float]  # q(x) of each proposed token
    p_draft_tokens: list[float]  # p(x) of each proposed token
    accept_probs: list[float | None]  # min(1, p(x)/q(x)) (a tree's: tree_rule says; None where never tested)
    uniforms: list[float]  # the draw r at each position
    accepted: list[bool]  # fate of each draft token (False after the first rejection too)
    n_accepted: int  # length of the accepted prefix
    resampled_token: int | None  # drawn from norm(max(0, p - q)) at the first rejection
    bonus_token: int | None  # drawn from p_target[k] when all k were accepted
    emitted: list[int]  # tokens this step added (cut after EOS)
    top_p: list[dict] = field(default_factory=list)  # per position 0..k: {"ids", "probs"} of p
    top_q: list[dict] = field(default_factory=list)  # per position 0..k-1: {"ids", "probs"} of q
    top_residual: dict | None = None  # {"ids", "probs"} of the residual at a rejection
    draft_seconds: float = 0.0  # wall time of the drafting
    verify_seconds: float = 0.0  # wall time of the target forward + verification
    source: str = "model"  # which proposer drafted ("model" or "ngram")
    budget: int = 0  # the most drafts this step was allowed (policy and max_new_tokens)
    fates: list[str] = field(default_factory=list)  # per draft token: one of FATES (step_fates)
    extra_fate: str | None = None  # the step's own token: one of EXTRA_FATES, None when cut by an EOS before it
    # A tree step's only (a chain step records neither: its parents are the drafts before, its path the accepted
    # prefix). With them, k counts nodes, top_p[0] is p after the prefix and top_p[1 + i] p after node i, q_draft_tokens
    # the draft's probability of each node's token (its children are chosen, not drawn: their q is one-hot), and the
    # uniforms are one per draw of the rule, root to the emitted token (verify.verify_tree).
    parents: list[int] | None = None  # node i's parent index, -1 for a child of the prefix
    path: list[int] | None = None  # the accepted nodes, root to leaf
    # which tree rule verified the step: "match" (sample and match, verify.verify_tree: children chosen) or
    # "rejection" (recursive rejection sampling, verify.verify_tree_sampled: children drawn from q). Under
    # "rejection", accept_probs is null for a node the rule never tested, a node tested and not kept is "rejected",
    # and the uniforms are one per node tested, in the order tested, then one for the step's own token.
    tree_rule: str | None = None
    # A chain step's, under either rule (verify.block_terms, from the full p and q): block verification's weight w_i
    # (the running product of p/q capped at 1) and h_i, the probability of keeping prefix i when no longer one was
    # kept, i = 1..k. Under the block rule the uniforms are its eta_i (kept: eta_i < h_i, n_accepted the largest
    # such i); under the token rule they show what block verification would have kept with the same draws.
    block_weights: list[float] | None = None
    stop_probs: list[float] | None = None

    @property
    def depth(self) -> int:
        """Tokens on the longest root-to-leaf path of the proposal: k for a chain."""
        if self.parents is None:
            return self.k
        return max(node_depths(self.parents), default=0)

    def to_dict(self) -> dict:
        record = asdict(self)
        if self.parents is None:  # a chain step reads as chain steps always have
            del record["parents"], record["path"], record["tree_rule"]
        else:
            del record["block_weights"], record["stop_probs"]
        return record


def step_fates(k: int, n_accepted: int, bonus: bool, n_emitted: int, parents: list[int] | None = None,
               path: list[int] | None = None, tried: list[int] | None = None) -> tuple[list[str], str | None]:
    """Each drafted token's fate and the fate of the step's own extra token (None when an EOS among the accepted
    drafts cut the step before it). A chain: the accepted prefix, the first rejected draft, the drafts after it,
    which the rule never looked at. A tree under sample and match: the accepted path; the children of its last node,
    which the target's draw there missed (rejected); every other node, not evaluated. A tree under recursive
    rejection sampling (`tried`, the nodes it tested): the path; every other node tested, rejected; the rest, not
    evaluated."""
    if parents is None:
        fates = [FATES[0] if j < n_accepted else FATES[1] if j == n_accepted else FATES[2] for j in range(k)]
    elif tried is not None:
        tested = set(tried)
        fates = [FATES[0] if j in path else FATES[1] if j in tested else FATES[2] for j in range(k)]
    else:
        last = path[-1] if path else -1
        fates = [FATES[0] if j in path else FATES[1] if parents[j] == last else FATES[2] for j in range(k)]
    extra = (EXTRA_FATES[1] if bonus else EXTRA_FATES[0]) if n_emitted > n_accepted else None
    return fates, extra


@dataclass
class GenerationTrace:
    k: int  # the cap on drafts per step
    sampling: dict
    prompt_length: int
    policy: str = "fixed"  # the draft-length policy
    drafter: str = "model"  # the drafter's name
    verify: str = "token"  # a chain's rule: "token" (Algorithm 1) or "block" (block verification)
    steps: list[StepRecord] = field(default_factory=list)

    @property
    def n_drafted(self) -> int:
        return sum(s.k for s in self.steps)

    @property
    def n_accepted(self) -> int:
        return sum(s.n_accepted for s in self.steps)

    @property
    def n_emitted(self) -> int:
        return sum(len(s.emitted) for s in self.steps)

    @property
    def acceptance_rate(self) -> float:
        """alpha: accepted / drafted (NaN when nothing was drafted). It counts verification's verdicts: a draft
        accepted after an end-of-sequence token in the same step is counted though the output is cut at the EOS
        (the rule accepted it; `n_emitted` counts what was kept)."""
        return self.n_accepted / self.n_drafted if self.n_drafted else float("nan")

    @property
    def tokens_per_target_pass(self) -> float:
        return self.n_emitted / len(self.steps) if self.steps else float("nan")

    def to_dict(self) -> dict:
        alpha = self.acceptance_rate
        return {
            "k": self.k,
            "policy": self.policy,
            "drafter": self.drafter,
            "verify": self.verify,
            "sampling": self.sampling,
            "prompt_length": self.prompt_length,
            "n_steps": len(self.steps),
            "n_drafted": self.n_drafted,
            "n_accepted": self.n_accepted,
            "n_emitted": self.n_emitted,
            "acceptance_rate": alpha if alpha == alpha else None,
            "tokens_per_target_pass": self.tokens_per_target_pass,
            "steps": [s.to_dict() for s in self.steps],
        }


def top_entries(probs: torch.Tensor, n: int) -> dict:
    """{"ids", "probs"} of the n most probable ids of a distribution (V,)."""
    values, ids = torch.topk(probs, min(n, probs.shape[-1]))
    return {"ids": ids.tolist(), "probs": values.tolist()}


def record_step(index, position, proposal, budget, p_target, result, emitted, n_top, t_draft, t_verify) -> StepRecord:
    """The record of one round: the proposal, the target's p at each node, the rule's draws and verdicts, what was
    emitted, the top-n of p, q and the residual, and the two timings."""
    k = proposal.n
    tree = proposal.parents is not None
    # a verdict counts up to the kept prefix (the block rule may draw eta_i < h_i below its longest kept prefix)
    verdicts = [bool(a) and (tree or i < result.n_accepted) for i, a in enumerate(result.accepted.tolist())]
    if tree:
        weights = stop_probs = None
    elif result.stop_probs is not None:
        weights, stop_probs = result.block_weights, result.stop_probs
    else:
        weights, stop_probs, _ = block_terms(proposal.tokens, proposal.q_draft, p_target)
        weights, stop_probs = weights[1:], stop_probs[1:]
    fates, extra_fate = step_fates(k, result.n_accepted, result.bonus_token is not None, len(emitted),
                                   proposal.parents, result.path, result.tried)
    accept_probs = result.accept_probs.tolist()
    if result.tried is not None:  # recursive rejection sampling: null (strict JSON) where the rule tested nothing
        tested = set(result.tried)
        accept_probs = [a if j in tested else None for j, a in enumerate(accept_probs)]
    return StepRecord(
        step=index,
        position=position,
        k=k,
        draft_tokens=proposal.tokens.tolist(),
        q_draft_tokens=list(proposal.confidences) if tree else result.q_draft_tokens.tolist(),
        p_draft_tokens=result.p_draft_tokens.tolist(),
        accept_probs=accept_probs,
        uniforms=result.uniforms.tolist(),
        accepted=verdicts,
        n_accepted=result.n_accepted,
        resampled_token=result.resampled_token,
        bonus_token=result.bonus_token,
        emitted=emitted,
        top_p=[top_entries(p_target[i], n_top) for i in range(k + 1)],
        top_q=[] if tree else [top_entries(proposal.q_draft[i], n_top) for i in range(k)],
        top_residual=top_entries(result.residual, n_top) if result.residual is not None else None,
        draft_seconds=t_draft,
        verify_seconds=t_verify,
        source=proposal.source,
        budget=budget,
        fates=fates,
        extra_fate=extra_fate,
        parents=list(proposal.parents) if tree else None,
        path=list(result.path) if tree else None,
        tree_rule=("rejection" if result.tried is not None else "match") if tree else None,
        block_weights=None if tree else weights.tolist(),
        stop_probs=None if tree else stop_probs.tolist(),
    )
