"""Where draft tokens come from: one small interface, three drafters.

A drafter proposes up to `budget` tokens after the tokens so far and returns them with the distribution q
each was drawn from; the verifier needs nothing else (Leviathan Algorithm 1 holds for any q that the
proposals really came from). As in transformers' `candidate_generator.py`, the draft source sits behind
one interface, and the decoder checks every proposal (`check_proposal`, beside the contract it checks) before
using it:

- `ModelDrafter(model)`: a small causal LM with its own KV cache (fp32 or int8); q is its warped softmax.
- `NgramDrafter()`: prompt lookup (Saxena 2023; transformers' `prompt_lookup_num_tokens`): find the
  last n-gram earlier in the sequence and propose what followed it. No model; q is one-hot, so the
  acceptance probability is p(x) and the residual norm(max(0, p - delta_x)): exact for sampling too.
- `HybridDrafter(model)`: the n-gram proposal when there is one, the model otherwise.

`speculative_generate(draft=...)` takes a model (wrapped in a ModelDrafter) or any drafter.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .cache import CachedLM, grown, node_depths
from .checks import as_count
from .sampling import SamplingConfig, probs_from_logits, sample

MAX_TREE_NODES = 256  # the most nodes a tree proposal may have (the target scores them all in one pass)
DRAFT_ROOM = 64  # draft rows allocated at the start of a step (a q row is V floats: 0.6 MB for this vocabulary)


@dataclass
class Proposal:
    tokens: torch.Tensor  # (n,) int64: the proposed ids (nodes), parents before children
    q_draft: torch.Tensor  # (n, V) float32: the distribution each proposed token was drawn from
    confidences: list[float]  # draft_confidence at each token (NaN when the policy did not ask)
    source: str  # "model" or "ngram"
    parents: list[int] | None = None  # a tree's: node i's parent index (-1: the sequence's last token); None: a chain
    sampled_children: bool = False  # a tree's children drawn from q without replacement (else chosen: top-b)

    @property
    def n(self) -> int:
        """Nodes proposed (a chain's k)."""
        return self.tokens.shape[0]

    @property
    def is_chain(self) -> bool:
        return self.parents is None


class Drafter:
    """The interface. `model` is the draft's nn.Module (None without one): its output size bounds V.

    The contract of `propose`, which the decoder checks: at most `budget` tokens, ids in [0, V), and for each
    token i the row q_draft[i] is THE distribution token i was drawn from (given the context and the tokens
    before it), finite, non-negative, summing to 1; a deterministic proposal (a lookup) has a one-hot row. Why:
    the acceptance test min(1, p(x)/q(x)) and the residual norm(max(0, p - q)) undo exactly the q that produced x
    (Leviathan et al. 2022, Thm 3.5). Report another q, even a valid distribution, and the output silently follows
    neither the target nor the draft; a scaled, NaN, negative or zero q(x) is refused. A drafter never writes the
    sequence: it gets a copy of the tokens so far and returns its proposal."""

    model: torch.nn.Module | None = None
    name = "drafter"
    drafts_trees = False  # whether its proposals are trees (Proposal.parents); the policy's budget is then a depth

    def start(self, vocab_size: int) -> None:
        """A new sequence begins: forget any state (KV cache) of the previous one."""

    def propose(self, context: torch.Tensor, budget: int, config: SamplingConfig,
                generator: torch.Generator, policy) -> Proposal:
        """context (1, n): the tokens so far (a copy). Propose up to `budget` tokens to follow them, asking
        `policy.keep_drafting` after each."""
        raise NotImplementedError

    def rollback(self, length: int) -> None:
        """Only the first `length` tokens of the sequence are final; forget anything after them."""

    def commit(self, length: int, path: list[int] | None = None) -> None:
        """After a step: the first `length` tokens are final. A chain's are a prefix of what was proposed (path
        None: rollback); a tree's end with the accepted `path` (node indices), which a tree drafter keeps."""
        if path is not None:
            raise ValueError(f"the {self.name} drafter proposes chains; it cannot keep a tree's path")
        self.rollback(length)

    def cached_lms(self) -> list:
        """The KV-cached models this drafter holds (for check_cache_invariant)."""
        return []


class ModelDrafter(Drafter):
    """A causal LM drafting autoregressively, one forward pass per token, with its own KV cache."""

    name = "model"

    def __init__(self, model: torch.nn.Module, name: str | None = None):
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"draft must be a torch model or a specdec Drafter, got {type(model).__name__}")
        self.model = model
        self.name = name or "model"
        self.lm = None

    def start(self, vocab_size: int) -> None:
        self.lm = CachedLM(self.model, vocab_size, "draft")

    def propose(self, context, budget, config, generator, policy) -> Proposal:
        start = context.shape[1]
        room = min(budget, DRAFT_ROOM)  # the buffers grow past it only when a policy keeps drafting (huge k)
        seq = torch.empty(1, start + room, dtype=torch.int64, device=context.device)  # context, then the drafts
        seq[:, :start] = context
        q_draft = torch.empty(room, self.lm.vocab_size, dtype=torch.float32, device=context.device)
        confidences, n = [], 0
        while n < budget:
            seq, q_draft = grown(seq, start + n + 1, dim=1), grown(q_draft, n + 1, dim=0)
            logits = self.lm.logits(seq[:, : start + n], 1)  # (1, V)
            q_draft[n] = probs_from_logits(logits[0], config)
            seq[0, start + n] = sample(q_draft[n], generator)  # drawn from exactly the q reported
            n += 1
            # The confidence costs a host sync per token: read only for policies that use it.
            confidence = draft_confidence(logits[0], q_draft[n - 1], config) if policy.needs_confidence else float("nan")
            confidences.append(confidence)
            if not policy.keep_drafting(n, confidence, "model"):
                break
        return Proposal(seq[0, start : start + n].clone(), q_draft[:n], confidences, "model")

    def rollback(self, length: int) -> None:
        self.lm.rollback(length)

    def cached_lms(self) -> list:
        return [self.lm]


def draft_confidence(logits: torch.Tensor, q_draft: torch.Tensor, config: SamplingConfig) -> float:
    """The draft's top probability at one position: max q, or, at T = 0, where q is one-hot (its max is
    always 1), the max of the model's plain softmax, as transformers reads `assistant_confidence_threshold`."""
    if config.greedy:
        return float(torch.softmax(logits.float(), dim=-1).max())
    return float(q_draft.max())


def draft_margin(logits: torch.Tensor) -> float:
    """The gap between the draft's two most likely tokens under its plain softmax: 1 when it is sure."""
    top2 = torch.softmax(logits.float(), dim=-1).topk(2).values
    return float(top2[0] - top2[1])


def draft_entropy(logits: torch.Tensor) -> float:
    """The entropy, in nats, of the draft's plain softmax at one position."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return float(-(logp.exp() * logp).sum())


class NgramDrafter(Drafter):
    """Prompt lookup: match the sequence's last n-gram (longest first) earlier in it; propose what followed.

    The most recent earlier match wins. The proposal is a deterministic function of the sequence, so its
    q is one-hot.
    """

    name = "ngram"

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1):
        rule = "need integers 1 <= min_ngram <= max_ngram"
        min_ngram = as_count(min_ngram, f"{rule}: min_ngram", 1)
        max_ngram = as_count(max_ngram, f"{rule}: max_ngram", min_ngram)
        self.max_ngram, self.min_ngram = max_ngram, min_ngram
        self.vocab_size = None

    def start(self, vocab_size: int) -> None:
        self.vocab_size = vocab_size

    def lookup(self, tokens: list[int], budget: int) -> list[int]:
        """The continuation of the latest earlier occurrence of the longest matching suffix n-gram."""
        n = len(tokens)
        for g in range(min(self.max_ngram, n - 1), self.min_ngram - 1, -1):
            suffix = tokens[n - g:]
            for j in range(n - g - 1, -1, -1):  # occurrences that start before the suffix itself
                if tokens[j: j + g] == suffix:
                    follow = tokens[j + g: j + g + budget]
                    if follow:
                        return follow
        return []

    def propose(self, context, budget, config, generator, policy) -> Proposal:
        proposal = self.lookup(context[0].tolist(), budget) if budget > 0 else []
        kept = []
        for token in proposal:
            if token >= self.vocab_size:
                break  # a prompt token outside the shared output vocabulary cannot be proposed
            kept.append(token)
            if not policy.keep_drafting(len(kept), 1.0, "ngram"):
                break
        n = len(kept)
        ids = torch.tensor(kept, dtype=torch.int64, device=context.device)
        q_draft = torch.zeros(n, self.vocab_size, dtype=torch.float32, device=context.device)
        q_draft[torch.arange(n, device=context.device), ids] = 1.0  # one-hot: drawn with probability 1
        return Proposal(ids, q_draft, [1.0] * n, "ngram")


class HybridDrafter(Drafter):
    """The n-gram proposal when the sequence has one, the draft model otherwise."""

    name = "hybrid"

    def __init__(self, model: torch.nn.Module, max_ngram: int = 3, min_ngram: int = 1):
        self.ngram = NgramDrafter(max_ngram, min_ngram)
        self.drafter = ModelDrafter(model)
        self.model = model

    def start(self, vocab_size: int) -> None:
        self.ngram.start(vocab_size)
        self.drafter.start(vocab_size)

    def propose(self, context, budget, config, generator, policy) -> Proposal:
        proposal = self.ngram.propose(context, budget, config, generator, policy)
        if proposal.n == 0:
            proposal = self.drafter.propose(context, budget, config, generator, policy)
        return proposal

    def rollback(self, length: int) -> None:
        # The model's cache may lag after n-gram steps: it catches up on its next forward pass.
        self.drafter.rollback(length)

    def cached_lms(self) -> list:
        return self.drafter.cached_lms()


def check_proposal(proposal: Proposal, budget: int, vocab_size: int, drafter: str) -> None:
    """A drafter's proposal is checked before it is used, because a wrong q is never an error by itself: the output
    would silently stop being the target's distribution. Required: at most `budget` tokens, ids in [0, V), q (n, V)
    finite and >= 0 with each row summing to 1 (float32 tolerance), and q(x) > 0 for each proposed x (the draft
    drew it, so it had mass); a tree's parents each -1 or an earlier node. One host sync."""
    if not isinstance(proposal, Proposal):
        raise TypeError(f"the {drafter} drafter's propose() must return a specdec Proposal, got "
                        f"{type(proposal).__name__}")
    tokens, q = proposal.tokens, proposal.q_draft
    if not (isinstance(tokens, torch.Tensor) and tokens.dim() == 1 and tokens.dtype == torch.int64):
        raise ValueError(f"the {drafter} drafter proposed tokens that are not a 1-D int64 tensor")
    n = tokens.shape[0]
    parents = proposal.parents
    if parents is None and n > budget:
        raise ValueError(f"the {drafter} drafter proposed {n} tokens, more than this step's budget of {budget}")
    if not (isinstance(q, torch.Tensor) and q.dtype == torch.float32 and tuple(q.shape) == (n, vocab_size)):
        shape = tuple(q.shape) if isinstance(q, torch.Tensor) else type(q).__name__
        raise ValueError(f"the {drafter} drafter's q_draft must be float32 of shape ({n}, {vocab_size}) "
                         f"(one row per proposed token), got {shape}")
    if len(proposal.confidences) != n:
        raise ValueError(f"the {drafter} drafter gave {len(proposal.confidences)} confidences for {n} tokens")
    if parents is not None:
        check_tree(parents, tokens, budget, drafter)
    if n == 0:
        return
    in_vocab = (tokens >= 0) & (tokens < vocab_size)
    q_x = q[torch.arange(n, device=q.device), tokens.clamp(0, vocab_size - 1)]
    sums = q.sum(-1, dtype=torch.float64)  # (n,): NaN or +-inf anywhere in a row makes its sum non-finite
    # 1e-3: float32 sums over a 152k vocabulary round to ~1e-5; a scaled or truncated q misses by far more
    ok = torch.stack([in_vocab.all(), torch.isfinite(sums).all(), torch.nan_to_num(q.amin(), nan=0.0) >= 0,
                      ((sums - 1).abs() <= 1e-3).all(), (q_x > 0).all()]).tolist()
    problems = ("ids outside the vocabulary [0, V)", "NaN or infinite q", "negative q",
                "q rows that do not sum to 1", "a token its own q gives probability 0")
    bad = [why for good, why in zip(ok, problems) if not good]
    if bad:
        raise ValueError(f"the {drafter} drafter's proposal has {' and '.join(bad)}: q must be the distribution each "
                         f"proposed token was drawn from (one-hot for a deterministic proposal), or the output is "
                         f"not exact")


def check_tree(parents, tokens: torch.Tensor, budget: int, drafter: str) -> None:
    """A tree proposal's shape: each node's parent -1 or an earlier node, at most MAX_TREE_NODES nodes, no path
    longer than the budget (a step emits at most depth + 1 tokens), siblings with distinct tokens (the rule
    descends to THE child that matches a draw)."""
    n = tokens.shape[0]
    if not isinstance(parents, list) or len(parents) != n or not all(
            isinstance(a, int) and not isinstance(a, bool) and -1 <= a < i for i, a in enumerate(parents)):
        raise ValueError(f"the {drafter} drafter's parents must list, for each of its {n} nodes, -1 or the index of "
                         f"an earlier node, got {parents!r}")
    if n > MAX_TREE_NODES:
        raise ValueError(f"the {drafter} drafter proposed a tree of {n} nodes, more than {MAX_TREE_NODES}")
    depth = node_depths(parents)
    if depth and max(depth) > budget:
        raise ValueError(f"the {drafter} drafter proposed a tree {max(depth)} deep, deeper than this step's budget "
                         f"of {budget}")
    ids = tokens.tolist()
    if len({(a, t) for a, t in zip(parents, ids)}) != n:
        raise ValueError(f"the {drafter} drafter proposed two siblings with the same token")


def as_drafter(draft) -> Drafter:
    """A Drafter as given, or a model wrapped in a ModelDrafter."""
    return draft if isinstance(draft, Drafter) else ModelDrafter(draft)
