"""Speculative decoding and its baseline, plain autoregressive decoding, with KV caches.

Leviathan et al. 2022 (arXiv 2211.17192), Algorithm 1: the draft proposes tokens one at a time, the
target scores all of them in ONE forward pass, `verify_draft` keeps a prefix and adds one token. How
many tokens to draft is a policy's choice (`policies.py`), where they come from a drafter's
(`drafters.py`). The KV caches and their invariant are in `cache.py`.

A drafter only proposes: it returns its tokens and their q, and the decoder checks the proposal
(`check_proposal`) before the target sees it, then writes the tokens it keeps. Nothing a drafter or a
policy returns can silently change what is emitted.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

import torch

from .cache import CachedLM, assert_cache_invariant, grown, input_size, output_size
from .checks import ArgumentError, as_count, check_eos_ids, check_generator, eos_set
from .drafters import Drafter, Proposal, as_drafter
from .policies import DraftPolicy, StepOutcome, make_policy
from .sampling import SamplingConfig, probs_from_logits, sample
from .verify import verify_draft


@dataclass
class StepRecord:
    step: int  # 0-based index of this draft/verify round
    position: int  # index (among the new tokens) of the first token this step emits
    k: int  # draft tokens proposed this step (the policy's choice, fewer near max_new_tokens)
    draft_tokens: list[int]  # the k proposed ids
    q_draft_tokens: list[float]  # q(x) of each proposed token
    p_draft_tokens: list[float]  # p(x) of each proposed token
    accept_probs: list[float]  # min(1, p(x)/q(x))
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


@dataclass
class GenerationTrace:
    k: int  # the cap on drafts per step
    sampling: dict
    prompt_length: int
    policy: str = "fixed"  # the draft-length policy
    drafter: str = "model"  # the drafter's name
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
            "sampling": self.sampling,
            "prompt_length": self.prompt_length,
            "n_steps": len(self.steps),
            "n_drafted": self.n_drafted,
            "n_accepted": self.n_accepted,
            "n_emitted": self.n_emitted,
            "acceptance_rate": alpha if alpha == alpha else None,
            "tokens_per_target_pass": self.tokens_per_target_pass,
            "steps": [asdict(s) for s in self.steps],
        }


def _check_inputs(input_ids: torch.Tensor, max_new_tokens) -> tuple[torch.Tensor, int]:
    """Validate input_ids and max_new_tokens: (input_ids as (1, n) int64, max_new_tokens as an int)."""
    if not isinstance(input_ids, torch.Tensor) or input_ids.dtype not in (torch.int64, torch.int32):
        raise TypeError("input_ids must be an integer torch.Tensor of shape (n,) or (1, n)")
    if input_ids.dim() == 1:
        input_ids = input_ids.unsqueeze(0)
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must have shape (n,) or (1, n), got {tuple(input_ids.shape)}")
    if input_ids.shape[0] != 1:
        raise ValueError(f"batch size must be 1 (speculative decoding here is per sequence), got {input_ids.shape[0]}")
    if input_ids.shape[1] == 0:
        raise ValueError("the prompt is empty: give at least one token (e.g. a BOS token)")
    max_new_tokens = as_count(max_new_tokens, "max_new_tokens must be a positive integer", 1)
    return input_ids.to(torch.int64), max_new_tokens


K_RULE = "k (the most draft tokens in one step, Leviathan's gamma) must be >= 1"


def _resolve_policy(policy, k) -> DraftPolicy:
    """One rule for k and the policy: a policy name needs k (the cap it drafts up to); a DraftPolicy object carries
    its own k, and a k given beside it must be the same (two caps that disagree are an error, not a silent choice)."""
    if isinstance(policy, DraftPolicy):
        if k is not None and as_count(k, K_RULE, 1) != policy.k:
            raise ArgumentError(f"k={k} disagrees with the policy object's own k={policy.k}: pass k=None (or the "
                                f"same k) with a DraftPolicy, or a policy name with k")
        return policy
    if k is None:
        raise ArgumentError(f"{K_RULE}: pass k with a policy name ({policy!r})")
    return make_policy(policy, as_count(k, K_RULE, 1))


INITIAL_NEW_TOKENS = 256  # room for this many new tokens at first; the buffer doubles when a run makes more


def new_sequence_buffer(input_ids: torch.Tensor, max_new_tokens: int) -> torch.Tensor:
    """(1, n_prompt + room) int64, the prompt written: room for what a run usually makes, not for max_new_tokens
    (10**12 would ask for terabytes before the first token); `grown` makes room as the run goes."""
    n_prompt = input_ids.shape[1]
    seq = torch.empty(1, n_prompt + min(max_new_tokens, INITIAL_NEW_TOKENS), dtype=torch.int64, device=input_ids.device)
    seq[:, :n_prompt] = input_ids
    return seq


def _cut_at_eos(tokens: list[int], eos: set[int]) -> tuple[list[int], bool]:
    for i, t in enumerate(tokens):
        if t in eos:
            return tokens[: i + 1], True
    return tokens, False


def resolve_vocab_size(target: torch.nn.Module, draft: torch.nn.Module | None = None,
                       vocab_size: int | None = None) -> int:
    """V, the ids a token is drawn from: the target's output rows, or `vocab_size` (the tokenizer's size)
    when the rows beyond it are padding, in both models and in the baseline alike.

    A draft head with fewer rows is fine: ids it cannot produce get q = 0 (exact). Refused, naming the
    sizes: a draft head with MORE rows than V (it could propose ids the target cannot score), or a draft
    that cannot READ every id the target may emit (input embedding < V), unless `vocab_size` says the
    rows beyond it are padding (then every head is cut to it).
    """
    v_target = output_size(target)
    if vocab_size is None:
        V = v_target
    else:
        V = as_count(vocab_size, f"vocab_size must be an integer in [1, {v_target}] (the target's output rows)",
                     1, v_target)
    if draft is None:
        return V
    hint = ("If the rows beyond the tokenizer are padding, pass vocab_size=<the tokenizer's size>; "
            "otherwise this pair cannot be used")
    if vocab_size is None and output_size(draft) > V:
        raise ValueError(f"the draft's head has {output_size(draft)} rows, the target's {v_target}: the draft "
                         f"could propose ids the target cannot score. {hint}")
    if input_size(draft) < V:
        raise ValueError(f"the draft reads {input_size(draft)} ids, but the target may emit any of {V}: the "
                         f"draft could not read the target's tokens. {hint}")
    return V


def _check_ids(input_ids: torch.Tensor, *models: torch.nn.Module | None) -> None:
    limit = min(input_size(m) for m in models if m is not None)
    low, high = int(input_ids.min()), int(input_ids.max())
    if low < 0 or high >= limit:
        bad = low if low < 0 else high
        raise ValueError(f"input_ids holds id {bad}, outside the models' vocabulary [0, {limit})")


def _top(probs: torch.Tensor, n: int) -> dict:
    values, ids = torch.topk(probs, min(n, probs.shape[-1]))
    return {"ids": ids.tolist(), "probs": values.tolist()}


def sync_device(device: torch.device) -> None:
    """Wait for queued GPU work, so that a wall-clock reading covers it (a no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class StepTimer:
    """Wall-clock laps of one step (draft, then verify), synchronizing the device; free when disabled."""

    def __init__(self, device: torch.device, enabled: bool):
        self.device, self.enabled = device, enabled
        self.last = 0.0

    def start(self) -> None:
        if self.enabled:
            sync_device(self.device)
            self.last = time.perf_counter()

    def lap(self) -> float | None:
        if not self.enabled:
            return None
        sync_device(self.device)
        now = time.perf_counter()
        seconds, self.last = now - self.last, now
        return seconds


def _step_budget(policy: DraftPolicy, left: int) -> int:
    """The policy's budget, checked, capped so that a step never emits past max_new_tokens (left tokens to go)."""
    budget = as_count(policy.budget(), f"{type(policy).__name__}.budget() must return an integer in [0, k = "
                      f"{policy.k}]", 0, policy.k)
    # Not in Algorithm 1: never draft past max_new_tokens (a step emits at most k_step + 1 tokens).
    return min(budget, left - 1)


def check_proposal(proposal: Proposal, budget: int, vocab_size: int, drafter: str) -> None:
    """A drafter's proposal is checked before it is used, because a wrong q is never an error by itself: the output
    would silently stop being the target's distribution. Required: at most `budget` tokens, ids in [0, V), q (n, V)
    finite and >= 0 with each row summing to 1 (float32 tolerance), and q(x) > 0 for each proposed x (the draft
    drew it, so it had mass). One host sync."""
    if not isinstance(proposal, Proposal):
        raise TypeError(f"the {drafter} drafter's propose() must return a specdec Proposal, got "
                        f"{type(proposal).__name__}")
    tokens, q = proposal.tokens, proposal.q_draft
    if not (isinstance(tokens, torch.Tensor) and tokens.dim() == 1 and tokens.dtype == torch.int64):
        raise ValueError(f"the {drafter} drafter proposed tokens that are not a 1-D int64 tensor")
    n = tokens.shape[0]
    if n > budget:
        raise ValueError(f"the {drafter} drafter proposed {n} tokens, more than this step's budget of {budget}")
    if not (isinstance(q, torch.Tensor) and q.dtype == torch.float32 and tuple(q.shape) == (n, vocab_size)):
        shape = tuple(q.shape) if isinstance(q, torch.Tensor) else type(q).__name__
        raise ValueError(f"the {drafter} drafter's q_draft must be float32 of shape ({n}, {vocab_size}) "
                         f"(one row per proposed token), got {shape}")
    if len(proposal.confidences) != n:
        raise ValueError(f"the {drafter} drafter gave {len(proposal.confidences)} confidences for {n} tokens")
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


@torch.inference_mode()
def speculative_generate(
    target: torch.nn.Module,
    draft: torch.nn.Module | Drafter,
    input_ids: torch.Tensor,
    *,
    max_new_tokens: int,
    k: int | None,
    temperature: float,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator,
    policy: str | DraftPolicy = "fixed",
    eos_token_id: int | Iterable[int] | None = None,
    record: bool = False,
    record_top: int = 10,
    vocab_size: int | None = None,
    check_cache_invariant: bool = False,
):
    """Generate up to max_new_tokens new tokens from `target`, drafting up to k at a time with `draft`.

    `draft` is a model or a Drafter (`NgramDrafter()`, `HybridDrafter(model)`); `policy` ("fixed",
    "confidence", "heuristic", "adaptive" or a DraftPolicy) chooses how many of the k to draft each step.
    With a policy name, k is required; a DraftPolicy object carries its own k, and `k` must then be None or
    the same. `generator` (a torch.Generator) drives every random draw, so a run replays exactly with the same
    generator seed, models and arguments, on one condition: the policy must not read wall-clock timings.
    "adaptive" measures its costs as it runs, so under timing jitter two runs can draft different lengths and,
    when sampling, draw different tokens (each run still exact in distribution); pin its costs,
    `AdaptivePolicy(k, draft_cost=..., verify_slope=...)`, for a run that replays. The other policies never read
    timings.
    Returns the new tokens (1-D int64 tensor); with record=True, (tokens, GenerationTrace).
    The output is distributed exactly as target sampling with the same temperature/top-k/top-p, and
    at temperature 0 equals greedy decoding of the target token for token, for every drafter and policy, up to
    floating point: the target scores k + 1 positions in one pass where greedy decoding scores one, and the two
    passes' logits can differ in the last bits, so two tokens whose logits are that close may be
    ordered differently (the math page's caveat; none of the committed greedy runs differed).
    """
    # Arguments are checked before any model work.
    input_ids, max_new_tokens = _check_inputs(input_ids, max_new_tokens)
    policy = _resolve_policy(policy, k)
    config = SamplingConfig(temperature, top_k, top_p)
    check_generator(generator)
    record_top = as_count(record_top, "record_top must be an integer >= 0", 0)
    drafter = as_drafter(draft)
    device = input_ids.device
    eos = eos_set(eos_token_id)
    V = resolve_vocab_size(target, drafter.model, vocab_size)
    check_eos_ids(eos, V)
    _check_ids(input_ids, target, drafter.model)
    target_lm = CachedLM(target, V, "target")
    drafter.start(V)

    n_prompt = input_ids.shape[1]
    # One buffer for the whole sequence; n = tokens so far. Drafts are written after position n. It grows as
    # tokens are made (a huge max_new_tokens or k costs nothing up front); a step writes at most n + k_step + 1.
    seq = new_sequence_buffer(input_ids, max_new_tokens)
    n = n_prompt
    trace = GenerationTrace(k=policy.k, sampling=asdict(config), prompt_length=n_prompt, policy=policy.name,
                            drafter=drafter.name) if record else None
    timer = StepTimer(device, record or policy.needs_timing)

    while n - n_prompt < max_new_tokens:
        budget = _step_budget(policy, max_new_tokens - (n - n_prompt))
        timer.start()
        # 1. Draft up to `budget` tokens; the policy may stop earlier, deciding before the target runs. The drafter
        #    reads a copy of the sequence: it cannot change a committed token.
        proposal = drafter.propose(seq[:, :n].clone(), budget, config, generator, policy)
        check_proposal(proposal, budget, V, drafter.name)
        draft_tokens = proposal.tokens  # (k_step,)
        k_step = draft_tokens.shape[0]
        seq = grown(seq, n + k_step + 1, dim=1)  # the drafts, then at most one token more
        seq[0, n : n + k_step] = draft_tokens
        draft_seconds = timer.lap()
        # 2. One target pass scores the last real token and all drafts: p_target (k_step + 1, V).
        p_target = probs_from_logits(target_lm.logits(seq[:, : n + k_step], k_step + 1), config)
        # 3. Accept a prefix, then resample or take a bonus token (Algorithm 1).
        result = verify_draft(draft_tokens, proposal.q_draft, p_target, generator)
        # Not in Algorithm 1: stop at an end-of-sequence token, even inside the accepted prefix.
        emitted, hit_eos = _cut_at_eos(result.tokens.tolist(), eos)
        seq[0, n : n + len(emitted)] = result.tokens[: len(emitted)]
        n_new = n + len(emitted)
        # 4. Roll back the caches to the accepted sequence (everything but its last token is valid).
        target_lm.rollback(n_new - 1)
        drafter.rollback(n_new - 1)
        if check_cache_invariant:
            assert_cache_invariant(target_lm, n_new)
            for lm in drafter.cached_lms():
                assert_cache_invariant(lm, n_new, lagging_ok=True)  # a draft may not have seen its last token
        verify_seconds = timer.lap()
        # 5. The policy learns from the outcome (it never sees p before deciding: the rule stays exact).
        policy.observe(StepOutcome(proposal.source, k_step, result.n_accepted, proposal.confidences,
                                   draft_seconds, verify_seconds, first=n == n_prompt))
        if record:
            trace.steps.append(_record_step(len(trace.steps), n - n_prompt, draft_tokens, proposal, budget,
                                            p_target, result, emitted, record_top, draft_seconds, verify_seconds))
        n = n_new
        if hit_eos:
            break
    tokens = seq[0, n_prompt:n].clone()
    return (tokens, trace) if record else tokens


def _record_step(index, position, draft_tokens, proposal, budget, p_target, result, emitted, n_top, t_draft,
                 t_verify) -> StepRecord:
    k = draft_tokens.shape[0]
    fates = [bool(a) and i < result.n_accepted for i, a in enumerate(result.accepted.tolist())]
    return StepRecord(
        step=index,
        position=position,
        k=k,
        draft_tokens=draft_tokens.tolist(),
        q_draft_tokens=result.q_draft_tokens.tolist(),
        p_draft_tokens=result.p_draft_tokens.tolist(),
        accept_probs=result.accept_probs.tolist(),
        uniforms=result.uniforms.tolist(),
        accepted=fates,
        n_accepted=result.n_accepted,
        resampled_token=result.resampled_token,
        bonus_token=result.bonus_token,
        emitted=emitted,
        top_p=[_top(p_target[i], n_top) for i in range(k + 1)],
        top_q=[_top(proposal.q_draft[i], n_top) for i in range(k)],
        top_residual=_top(result.residual, n_top) if result.residual is not None else None,
        draft_seconds=t_draft,
        verify_seconds=t_verify,
        source=proposal.source,
        budget=budget,
    )


@torch.inference_mode()
def autoregressive_generate(
    target: torch.nn.Module,
    input_ids: torch.Tensor,
    *,
    max_new_tokens: int,
    temperature: float,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator,
    eos_token_id: int | Iterable[int] | None = None,
    vocab_size: int | None = None,
) -> torch.Tensor:
    """The baseline: one target forward per token, same sampling rules. Returns the new tokens."""
    input_ids, max_new_tokens = _check_inputs(input_ids, max_new_tokens)
    config = SamplingConfig(temperature, top_k, top_p)
    check_generator(generator)
    eos = eos_set(eos_token_id)
    _check_ids(input_ids, target)
    V = resolve_vocab_size(target, None, vocab_size)
    check_eos_ids(eos, V)
    lm = CachedLM(target, V, "target")
    n_prompt = input_ids.shape[1]
    seq = new_sequence_buffer(input_ids, max_new_tokens)
    n = n_prompt
    while n - n_prompt < max_new_tokens:
        seq = grown(seq, n + 1, dim=1)
        p = probs_from_logits(lm.logits(seq[:, :n], 1)[0], config)  # (V,)
        seq[0, n] = sample(p, generator)
        n += 1
        # A host sync per token only when EOS can stop us.
        if eos and int(seq[0, n - 1]) in eos:
            break
    return seq[0, n_prompt:n].clone()
