"""Where draft tokens come from: one small interface, three drafters.

A drafter proposes up to `budget` tokens after the tokens so far and returns them with the distribution q
each was drawn from; the verifier needs nothing else (Leviathan Algorithm 1 holds for any q that the
proposals really came from). As in transformers' `candidate_generator.py`, the draft source sits behind
one interface, and the decoder checks every proposal (`decoding.check_proposal`) before using it:

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

from .cache import CachedLM, grown
from .checks import as_count
from .sampling import SamplingConfig, probs_from_logits, sample

DRAFT_ROOM = 64  # draft rows allocated at the start of a step (a q row is V floats: 0.6 MB for this vocabulary)


@dataclass
class Proposal:
    tokens: torch.Tensor  # (n,) int64: the proposed ids, in order
    q_draft: torch.Tensor  # (n, V) float32: the distribution each proposed token was drawn from
    confidences: list[float]  # draft_confidence at each token (NaN when the policy did not ask)
    source: str  # "model" or "ngram"

    @property
    def n(self) -> int:
        return self.tokens.shape[0]


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

    def start(self, vocab_size: int) -> None:
        """A new sequence begins: forget any state (KV cache) of the previous one."""

    def propose(self, context: torch.Tensor, budget: int, config: SamplingConfig,
                generator: torch.Generator, policy) -> Proposal:
        """context (1, n): the tokens so far (a copy). Propose up to `budget` tokens to follow them, asking
        `policy.keep_drafting` after each."""
        raise NotImplementedError

    def rollback(self, length: int) -> None:
        """Only the first `length` tokens of the sequence are final; forget anything after them."""

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


def as_drafter(draft) -> Drafter:
    """A Drafter as given, or a model wrapped in a ModelDrafter."""
    return draft if isinstance(draft, Drafter) else ModelDrafter(draft)
