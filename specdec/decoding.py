"""Speculative decoding and its baseline, plain autoregressive decoding: the loop alone.

Leviathan et al. 2022 (arXiv 2211.17192), Algorithm 1: the draft proposes tokens one at a time, the
target scores all of them in ONE forward pass, `verify_draft` keeps a prefix and adds one token. How
many tokens to draft is a policy's choice (`policies.py`), where they come from a drafter's
(`drafters.py`, with `check_proposal`, the check of its contract). The KV caches, their invariant and the
vocabulary checks are in `cache.py`, the rule in `verify.py`, what a recorded step keeps in `trace.py`.

A drafter only proposes: it returns its tokens and their q, and the decoder checks the proposal
(`check_proposal`) before the target sees it, then writes the tokens it keeps. Nothing a drafter or a
policy returns can silently change what is emitted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict

import torch

from .cache import CachedLM, assert_cache_invariant, check_ids, grown, resolve_vocab_size
from .checks import ArgumentError, as_count, check_eos_ids, check_generator, eos_set
from .drafters import Drafter, as_drafter, check_proposal
from .policies import DraftPolicy, StepOutcome, make_policy
from .sampling import SamplingConfig, probs_from_logits, sample
from .timing import StepTimer
from .trace import GenerationTrace, record_step
from .verify import RULES, verify_proposal


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


def _step_budget(policy: DraftPolicy, left: int) -> int:
    """The policy's budget, checked, capped so that a step never emits past max_new_tokens (left tokens to go)."""
    budget = as_count(policy.budget(), f"{type(policy).__name__}.budget() must return an integer in [0, k = "
                      f"{policy.k}]", 0, policy.k)
    # Not in Algorithm 1: never draft past max_new_tokens (a step emits at most k_step + 1 tokens).
    return min(budget, left - 1)


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
    verify: str = "token",
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
    `verify` chooses a chain's rule: "token" (Algorithm 1, each draft on its own) or "block" (block verification,
    Sun et al. 2025: the chain decided as a block; exact too, never fewer tokens in expectation); a tree has its own.
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
    if verify not in RULES:
        raise ArgumentError(f"verify must be one of {', '.join(map(repr, RULES))}, got {verify!r}")
    if drafter.drafts_trees and verify != "token":
        raise ArgumentError(f"verify={verify!r} verifies a chain; a tree drafter's proposals are verified by the tree "
                            f"rule: use verify='token'")
    if drafter.drafts_trees and policy.name != "fixed":
        raise ArgumentError(f"a tree drafter drafts to a fixed depth (its budget): policy {policy.name!r} learns "
                            f"from chains; use policy='fixed'")
    device = input_ids.device
    eos = eos_set(eos_token_id)
    V = resolve_vocab_size(target, drafter.model, vocab_size)
    check_eos_ids(eos, V)
    check_ids(input_ids, target, drafter.model)
    target_lm = CachedLM(target, V, "target")
    drafter.start(V)

    n_prompt = input_ids.shape[1]
    # One buffer for the whole sequence; n = tokens so far. Drafts are written after position n. It grows as
    # tokens are made (a huge max_new_tokens or k costs nothing up front); a step writes at most n + k_step + 1.
    seq = new_sequence_buffer(input_ids, max_new_tokens)
    n = n_prompt
    trace = GenerationTrace(k=policy.k, sampling=asdict(config), prompt_length=n_prompt, policy=policy.name,
                            drafter=drafter.name, verify=verify) if record else None
    timer = StepTimer(device, record or policy.needs_timing)

    while n - n_prompt < max_new_tokens:
        budget = _step_budget(policy, max_new_tokens - (n - n_prompt))
        timer.start()
        # 1. Draft up to `budget` tokens (a chain), or a tree at most `budget` deep; the policy may stop earlier,
        #    deciding before the target runs. The drafter reads a copy of the sequence: it cannot change a committed
        #    token.
        proposal = drafter.propose(seq[:, :n].clone(), budget, config, generator, policy)
        check_proposal(proposal, budget, V, drafter.name)
        draft_tokens = proposal.tokens  # (k_step,)
        k_step = draft_tokens.shape[0]
        seq = grown(seq, n + k_step + 1, dim=1)  # the drafts, then at most one token more
        seq[0, n : n + k_step] = draft_tokens
        draft_seconds = timer.lap()
        # 2. One target pass scores the last real token and all drafts (a tree's with its mask and positions
        #    prefix + depth): p_target (k_step + 1, V).
        p_target = probs_from_logits(target_lm.logits(seq[:, : n + k_step], k_step + 1, proposal.parents), config)
        # 3. Accept a prefix, then resample or take a bonus token (Algorithm 1, for a chain); a tree: accept a
        #    root-to-node path (verify_tree, sample and match; verify_tree_sampled for drawn children). A chain under
        #    verify="block": the longest prefix block verification keeps, then its residual or the bonus.
        result = verify_proposal(proposal, p_target, generator, verify)
        # Not in Algorithm 1: stop at an end-of-sequence token, even inside the accepted prefix.
        emitted, hit_eos = _cut_at_eos(result.tokens.tolist(), eos)
        seq[0, n : n + len(emitted)] = result.tokens[: len(emitted)]
        n_new = n + len(emitted)
        # 4. Keep the accepted sequence in the caches (everything but its last token is valid): a chain's is a
        #    prefix of what was fed, a tree's the prefix and the accepted path (node i was fed at slot n + i).
        path = None if result.path is None else result.path[: len(emitted) - 1]
        target_lm.commit(n_new - 1, None if path is None else [n + i for i in path])
        drafter.commit(n_new - 1, path)
        if check_cache_invariant:
            assert_cache_invariant(target_lm, n_new)
            for lm in drafter.cached_lms():
                assert_cache_invariant(lm, n_new, lagging_ok=True)  # a draft may not have seen its last token
        verify_seconds = timer.lap()
        # 5. The policy learns from the outcome (it never sees p before deciding: the rule stays exact).
        policy.observe(StepOutcome(proposal.source, k_step, result.n_accepted, proposal.confidences,
                                   draft_seconds, verify_seconds, first=n == n_prompt))
        if record:
            trace.steps.append(record_step(len(trace.steps), n - n_prompt, proposal, budget, p_target, result,
                                           emitted, record_top, draft_seconds, verify_seconds))
        n = n_new
        if hit_eos:
            break
    tokens = seq[0, n_prompt:n].clone()
    return (tokens, trace) if record else tokens


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
    check_ids(input_ids, target)
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
