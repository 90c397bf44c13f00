"""Speculative decoding and its baseline, plain autoregressive decoding, with KV caches.

Leviathan et al. 2022 (arXiv 2211.17192), Algorithm 1: the draft proposes tokens one at a time, the
target scores all of them in ONE forward pass, `verify_draft` keeps a prefix and adds one token. How
many tokens to draft is a policy's choice (`policies.py`), where they come from a drafter's
(`drafters.py`).

Cache invariant (target and model drafters): the cache holds keys/values for a prefix of the tokens so
far, never a token that is not in the sequence. Each forward feeds exactly the tokens the cache lacks, so
the prefill, the normal step and the step after an all-accepted block (where the draft never saw its own
last token) are one code path. Rejected positions are cropped away after verification.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

import torch

from .drafters import Drafter, as_drafter
from .policies import DraftPolicy, StepOutcome, make_policy
from .sampling import SamplingConfig, probs_from_logits, sample
from .verify import residual_distribution, verify_draft


class CachedLM:
    """A causal LM plus its KV cache, fed the part of a token sequence it has not seen yet."""

    def __init__(self, model: torch.nn.Module, vocab_size: int, role: str = "model"):
        from transformers import DynamicCache

        self.model = model
        self.role = role  # "target" or "draft", for error messages
        self.vocab_size = vocab_size  # V: the ids sampled from (the target's, see resolve_vocab_size)
        self.rows = min(output_size(model), vocab_size)  # logit rows this model scores (< V: ids it cannot produce)
        self.cache = DynamicCache(config=model.config)
        # transformers >= 5.2x renamed `past_key_values` to `cache`; accept both.
        params = inspect.signature(model.forward).parameters
        self.cache_kwarg = "cache" if "cache" in params else "past_key_values"

    @property
    def cached(self) -> int:
        return self.cache.get_seq_length()

    @torch.inference_mode()
    def logits(self, seq: torch.Tensor, n_logits: int) -> torch.Tensor:
        """seq (1, n) -> (n_logits, V) float32 logits of the last n_logits positions."""
        new = seq[:, self.cached:]  # (1, n_new): everything not yet in the cache
        if new.shape[1] < n_logits:
            raise RuntimeError(f"cache holds {self.cached} of {seq.shape[1]} tokens; cannot score {n_logits}")
        out = self.model(input_ids=new, use_cache=True, logits_to_keep=n_logits, **{self.cache_kwarg: self.cache})
        logits = out.logits[0, -n_logits:, : self.rows].float()
        check_logits(logits, self.role)
        if self.rows < self.vocab_size:
            # Ids this model cannot produce get logit -inf, so probability 0: for a draft that is q = 0,
            # which keeps verification exact (Leviathan et al. 2022: any q works).
            logits = torch.nn.functional.pad(logits, (0, self.vocab_size - self.rows), value=float("-inf"))
        return logits

    def rollback(self, length: int) -> None:
        """Drop cached positions >= length (rejected drafts)."""
        extra = self.cached - length
        if extra > 0:
            self.cache.crop(-extra)


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
        """alpha: accepted / drafted (NaN when nothing was drafted)."""
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


def check_logits(logits: torch.Tensor, role: str) -> None:
    """NaN or +inf logits (broken weights, overflow in half precision) are an error, never a token.

    -inf is legal (a masked token), but not on every token of a row. One host sync per forward pass.
    """
    if not bool(((logits < float("inf")).all() & (logits.amax(-1) > float("-inf")).all()).item()):
        kind = "NaN" if bool(torch.isnan(logits).any()) else "+inf" if bool(torch.isposinf(logits).any()) else "all -inf"
        raise FloatingPointError(
            f"the {role} model produced {kind} logits: its weights or dtype are broken "
            f"(no token can be drawn from them)")


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_inputs(input_ids: torch.Tensor, max_new_tokens: int, k: int | None = None) -> torch.Tensor:
    """Validate and return input_ids as (1, n)."""
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
    if not _is_int(max_new_tokens) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
    if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
        raise ValueError(f"k (the most draft tokens in one step, Leviathan's gamma) must be >= 1, got {k!r}")
    return input_ids.to(torch.int64)


def _eos_set(eos_token_id: int | Iterable[int] | None) -> set[int]:
    if eos_token_id is None:
        return set()
    if isinstance(eos_token_id, int):
        return {eos_token_id}
    return set(int(t) for t in eos_token_id)


def _cut_at_eos(tokens: list[int], eos: set[int]) -> tuple[list[int], bool]:
    for i, t in enumerate(tokens):
        if t in eos:
            return tokens[: i + 1], True
    return tokens, False


def output_size(model: torch.nn.Module) -> int:
    """Rows of the model's output head (often padded beyond its tokenizer's size)."""
    emb = model.get_output_embeddings()
    return emb.out_features if hasattr(emb, "out_features") else model.config.vocab_size


def input_size(model: torch.nn.Module) -> int:
    """Rows of the model's input embedding: the ids it can read."""
    return model.get_input_embeddings().num_embeddings


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
    elif not _is_int(vocab_size) or not 1 <= vocab_size <= v_target:
        raise ValueError(f"vocab_size must be an integer in [1, {v_target}] (the target's output rows), "
                         f"got {vocab_size!r}")
    else:
        V = vocab_size
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


@torch.inference_mode()
def speculative_generate(
    target: torch.nn.Module,
    draft: torch.nn.Module | Drafter,
    input_ids: torch.Tensor,
    *,
    max_new_tokens: int,
    k: int,
    temperature: float,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator,
    policy: str | DraftPolicy = "fixed",
    eos_token_id: int | Iterable[int] | None = None,
    record: bool = False,
    record_top: int = 10,
    vocab_size: int | None = None,
    residual_fn: Callable[..., torch.Tensor] = residual_distribution,
    check_cache_invariant: bool = False,
):
    """Generate up to max_new_tokens new tokens from `target`, drafting up to k at a time with `draft`.

    `draft` is a model or a Drafter (`NgramDrafter()`, `HybridDrafter(model)`); `policy` ("fixed",
    "confidence", "heuristic", "adaptive" or a DraftPolicy) chooses how many of the k to draft each step.
    Returns the new tokens (1-D int64 tensor); with record=True, (tokens, GenerationTrace).
    The output is distributed exactly as target sampling with the same temperature/top-k/top-p, and
    at temperature 0 equals greedy decoding of the target token for token, for every drafter and policy.
    """
    # Arguments are checked before any model work.
    input_ids = _check_inputs(input_ids, max_new_tokens, k)
    config = SamplingConfig(temperature, top_k, top_p)
    policy = make_policy(policy, k)
    drafter = as_drafter(draft)
    device = input_ids.device
    eos = _eos_set(eos_token_id)
    V = resolve_vocab_size(target, drafter.model, vocab_size)
    _check_ids(input_ids, target, drafter.model)
    target_lm = CachedLM(target, V, "target")
    drafter.start(V)

    n_prompt = input_ids.shape[1]
    # One buffer for the whole sequence; n = tokens so far. Drafts are written after position n.
    seq = torch.empty(1, n_prompt + max_new_tokens + max(k, policy.k) + 1, dtype=torch.int64, device=device)
    seq[:, :n_prompt] = input_ids
    n = n_prompt
    trace = GenerationTrace(k=policy.k, sampling=asdict(config), prompt_length=n_prompt, policy=policy.name,
                            drafter=drafter.name) if record else None
    timer = StepTimer(device, record or policy.needs_timing)

    while n - n_prompt < max_new_tokens:
        # Not in Algorithm 1: never draft past max_new_tokens (a step emits at most k_step + 1 tokens).
        budget = min(policy.budget(), max_new_tokens - (n - n_prompt) - 1)
        timer.start()
        # 1. Draft up to `budget` tokens; the policy may stop earlier, deciding before the target runs.
        proposal = drafter.propose(seq, n, budget, config, generator, policy)
        k_step = proposal.n
        draft_seconds = timer.lap()
        # 2. One target pass scores the last real token and all drafts: p_target (k_step + 1, V).
        p_target = probs_from_logits(target_lm.logits(seq[:, : n + k_step], k_step + 1), config)
        draft_tokens = seq[0, n : n + k_step].clone()  # seq is overwritten with the emitted tokens below
        # 3. Accept a prefix, then resample or take a bonus token (Algorithm 1).
        result = verify_draft(draft_tokens, proposal.q_draft, p_target, generator, residual_fn=residual_fn)
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


def assert_cache_invariant(lm: CachedLM, n: int, lagging_ok: bool = False) -> None:
    """After a step: the cache holds exactly the first n - 1 positions (never a rejected or future token);
    with lagging_ok (a draft, which never fed its own last proposal, or a hybrid's model, idle during
    n-gram steps) it may hold fewer."""
    if lm.cached > n - 1 or (not lagging_ok and lm.cached != n - 1):
        raise AssertionError(f"cache holds {lm.cached} positions but only {n - 1} tokens are final")
    for layer in lm.cache.layers:
        if layer.is_initialized and layer.keys.shape[-2] != lm.cached:
            raise AssertionError(f"layer cache length {layer.keys.shape[-2]} != {lm.cached}")


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
    input_ids = _check_inputs(input_ids, max_new_tokens)
    config = SamplingConfig(temperature, top_k, top_p)
    eos = _eos_set(eos_token_id)
    _check_ids(input_ids, target)
    lm = CachedLM(target, resolve_vocab_size(target, None, vocab_size), "target")
    n_prompt = input_ids.shape[1]
    seq = torch.empty(1, n_prompt + max_new_tokens, dtype=torch.int64, device=input_ids.device)
    seq[:, :n_prompt] = input_ids
    n = n_prompt
    while n - n_prompt < max_new_tokens:
        p = probs_from_logits(lm.logits(seq[:, :n], 1)[0], config)  # (V,)
        seq[0, n] = sample(p, generator)
        n += 1
        # A host sync per token only when EOS can stop us.
        if eos and int(seq[0, n - 1]) in eos:
            break
    return seq[0, n_prompt:n].clone()
