"""How serving engines verify a chain of drafts, each rule as one pure function beside `verify.verify_draft`.

Every engine keeps drafts and emits one token of its own per target pass; they differ in what they take as q, the
draft's distribution, and in what they compare. Here p = target, q = draft (Leviathan et al. 2022's names), and each
rule returns a `verify.VerifyResult` as `verify_draft` does, with the same arguments where it has them, so that the
exactness checks and the audit run on all of them alike. Which rules keep the output the target's:

- `verify_draft` (verify.py), the residual rule with the full q (this library; transformers' `_speculative_sampling`;
  vLLM's rejection sampler given draft probabilities): exact when q is the distribution each draft was drawn from.
- `verify_one_hot_q`: the same rule with q one-hot at each draft (vLLM with `draft_probs=None`, PR #16899 and
  #40149; SGLang's and TensorRT-LLM's defaults): a draft x is kept with probability p(x), and on a rejection the
  token is drawn from p without x. Exact for any draft distribution, sampled or argmax; its acceptance, Σ q·p over
  the draft's choices, is below the full rule's Σ min(p, q) wherever the draft samples.
- `verify_sample_match`: the target samples its own token and a draft is kept if the two are equal (llama.cpp before
  PR #27694; mlx-lm's `exact` rule, PR #1709). Exact for any draft, with the same law as `verify_one_hot_q`.
- `raw_logits_q` then `verify_draft`: q from the draft's raw logits while the draft sampled from its processed
  distribution (temperature, top-k, top-p: transformers #47932, fixed by PR #47961). Not exact: the rule corrects
  for a q the draft did not sample from.
- `verify_typical`: Medusa's typical acceptance (Cai et al. 2024, arXiv 2401.10774): a draft is kept where the
  target's probability of it exceeds min(ε, δ exp(−H(p))). Lossy by design: it keeps plausible tokens, not the
  target's distribution.

Each rule draws with an explicit `torch.Generator`; `uniforms` replays a recorded step as in `verify_draft`.

The same rules at one position, computed rather than sampled (`position_law`): the probability that the draft is
kept and the law of the token the position emits, from which `total_variation` says how far a rule's output is from
p, and `expected_tokens` a step's expected tokens per target pass from its positions' acceptance probabilities.
`compare_rules` puts every rule side by side on one step's target and draft logits under one sampling config.
"""

from __future__ import annotations

import torch

from .checks import ArgumentError, check_generator
from .sampling import sample
from .verify import VerifyResult, check_distributions, check_token_ids, check_uniforms, residual_distribution


def _check(draft_tokens, p_target, generator, uniforms) -> int:
    """The arguments every rule here shares: (k,) ids, (k + 1, V) target rows, a generator, k replayed draws."""
    check_generator(generator)
    if not isinstance(draft_tokens, torch.Tensor) or draft_tokens.dim() != 1:
        raise ArgumentError("draft_tokens must be a 1-D int64 tensor")
    k = draft_tokens.shape[0]
    if not isinstance(p_target, torch.Tensor) or p_target.dim() != 2:
        raise ArgumentError("p_target must be a (k + 1, V) tensor")
    check_distributions(p_target, "p_target", k + 1, p_target.shape[1])
    check_token_ids(draft_tokens, "draft_tokens", p_target.shape[1])
    if uniforms is not None:
        check_uniforms(uniforms, length=k)
    return k


def verify_one_hot_q(draft_tokens: torch.Tensor, p_target: torch.Tensor, generator: torch.Generator, *,
                     uniforms: torch.Tensor | None = None) -> VerifyResult:
    """Algorithm 1 with q one-hot at each draft: what an engine does when it keeps no draft probabilities.

    draft_tokens (k,), p_target (k + 1, V). Exact for any draft: on a draft x drawn with any q, the emitted token is x
    with probability q(x) p(x), and any y ≠ x with probability Σ_(x ≠ y) q(x) (1 − p(x)) p(y) / (1 − p(x)), which sum
    to p(y). Its acceptance is p(x), so Σ_x q(x) p(x) per draft, against Σ min(p, q) with the full q.
    """
    k = _check(draft_tokens, p_target, generator, uniforms)
    positions = torch.arange(k, device=draft_tokens.device)
    # 1. p(x) of each draft; with q one-hot, min(1, p(x)/q(x)) = p(x).
    p_x = p_target[positions, draft_tokens]
    # 2. One uniform per position; keep x iff r < p(x).
    if uniforms is None:
        uniforms = torch.rand(k, generator=generator, device=draft_tokens.device)
    accepted = uniforms < p_x
    n_accepted = int(accepted.to(torch.int64).cumprod(0).sum().item())
    # 3. The step's own token: at the first rejection from p without the rejected x; else the bonus from p_target[k].
    residual = None
    if n_accepted < k:  # norm(max(0, p - one-hot(x))): p without x, verify.py's residual with a one-hot q
        one_hot = torch.nn.functional.one_hot(draft_tokens[n_accepted], p_target.shape[1]).to(p_target.dtype)
        residual = residual_distribution(p_target[n_accepted], one_hot)
    extra = sample(residual if residual is not None else p_target[k], generator)
    return VerifyResult(n_accepted=n_accepted, tokens=torch.cat([draft_tokens[:n_accepted], extra.view(1)]),
                        accept_probs=p_x, uniforms=uniforms, accepted=accepted, p_draft_tokens=p_x,
                        q_draft_tokens=torch.ones_like(p_x),
                        resampled_token=int(extra) if residual is not None else None,
                        bonus_token=None if residual is not None else int(extra), residual=residual)


def verify_sample_match(draft_tokens: torch.Tensor, p_target: torch.Tensor, generator: torch.Generator) -> VerifyResult:
    """Sample and match: at each position the target draws its own token y ~ p; the draft x is kept iff y = x, and
    the first y that differs is emitted (all k kept: a bonus y from p_target[k]).

    Every emitted token is the target's own draw given the tokens before it, so the output is the target's
    distribution whatever the draft; x is kept with probability p(x). One draw per position tested, and one more.
    """
    k = _check(draft_tokens, p_target, generator, None)
    p_x = p_target[torch.arange(k, device=draft_tokens.device), draft_tokens]
    # 1. The target's own draws, position by position, until one differs from the draft.
    drawn = []
    for i in range(k + 1):
        y = sample(p_target[i], generator)
        drawn.append(y)
        if i == k or int(y) != int(draft_tokens[i]):
            break
    n_accepted = len(drawn) - 1
    accepted = torch.zeros(k, dtype=torch.bool, device=draft_tokens.device)
    accepted[:n_accepted] = True
    extra = drawn[-1]
    return VerifyResult(n_accepted=n_accepted, tokens=torch.cat([draft_tokens[:n_accepted], extra.view(1)]),
                        accept_probs=p_x, uniforms=torch.full((k,), float("nan")), accepted=accepted, p_draft_tokens=p_x,
                        q_draft_tokens=torch.ones_like(p_x),
                        resampled_token=int(extra) if n_accepted < k else None,
                        bonus_token=int(extra) if n_accepted == k else None, residual=None)


def raw_logits_q(draft_logits: torch.Tensor) -> torch.Tensor:
    """(k, V) logits -> q as softmax of the raw logits: the q an engine hands the rule when its draft sampled from the
    processed logits (temperature, top-k, top-p) but it kept the raw ones (transformers #47932). Given to
    `verify_draft`, it makes the rule lossy wherever processing changed the distribution."""
    return torch.softmax(draft_logits.float(), dim=-1)


def typical_threshold(p_row: torch.Tensor, epsilon: float, delta: float) -> torch.Tensor:
    """Medusa's typical acceptance threshold at one position: min(ε, δ exp(−H(p)))."""
    entropy = -(p_row * torch.log(p_row.clamp_min(1e-30))).sum()
    return torch.minimum(torch.tensor(epsilon, dtype=p_row.dtype), delta * torch.exp(-entropy))


def verify_typical(draft_tokens: torch.Tensor, p_target: torch.Tensor, generator: torch.Generator, *,
                   epsilon: float, delta: float) -> VerifyResult:
    """Medusa's typical acceptance (Cai et al. 2024): keep drafts while p(x) > min(ε, δ exp(−H(p))), then one token
    of the target's own from p at the first position not kept. ε is the rule's hard threshold, δ its entropy-scaled
    one (Medusa's posterior threshold and posterior alpha).

    Lossy by design: a plausible draft is kept with probability 1, so the output over-weights the draft's choices.
    """
    k = _check(draft_tokens, p_target, generator, None)
    if not (0 < epsilon <= 1 and delta > 0):
        raise ArgumentError(f"epsilon must be in (0, 1] and delta > 0, got {epsilon} and {delta}")
    positions = torch.arange(k, device=draft_tokens.device)
    p_x = p_target[positions, draft_tokens]
    # 1. Each position's threshold, and whether its draft clears it.
    thresholds = torch.stack([typical_threshold(p_target[i], epsilon, delta) for i in range(k)]) if k else p_x
    accepted = p_x > thresholds
    n_accepted = int(accepted.to(torch.int64).cumprod(0).sum().item())
    # 2. The next token from the target's p where the kept prefix ends.
    extra = sample(p_target[n_accepted], generator)
    return VerifyResult(n_accepted=n_accepted, tokens=torch.cat([draft_tokens[:n_accepted], extra.view(1)]),
                        accept_probs=accepted.to(p_x.dtype), uniforms=thresholds, accepted=accepted,
                        p_draft_tokens=p_x, q_draft_tokens=torch.full_like(p_x, float("nan")),
                        resampled_token=int(extra) if n_accepted < k else None,
                        bonus_token=int(extra) if n_accepted == k else None, residual=None)


# ---------------------------------------------------------------- the rules at one position, computed


RULES = ("residual", "one_hot_q", "one_hot_q_argmax", "sample_match", "raw_logits", "typical")


def position_law(p: torch.Tensor, q: torch.Tensor, rule: str, *, q_rule: torch.Tensor | None = None,
                 epsilon: float | None = None, delta: float | None = None) -> tuple[float, torch.Tensor]:
    """(the probability the draft is kept, the (V,) law of the token emitted) at one position, for a draft drawn from
    q (argmax q for "one_hot_q_argmax") and the target's p, under `rule` (RULES), by enumeration over the draft's token:

    - "residual": kept with min(1, p/q), else from norm(max(0, p − q)): Σ min(p, q); emits p.
    - "one_hot_q" (draft sampled) and "one_hot_q_argmax" (draft = argmax q): kept with p(x), else from p without x:
      Σ q·p, or p(argmax q); emits p.
    - "sample_match": the target's own y ~ p kept as the token; the draft kept iff y = x: Σ q·p; emits p.
    - "raw_logits": the draft samples from q but the rule is handed q_rule (softmax of the raw logits): kept with
      Σ q min(1, p/q_rule); emits q·min(1, p/q_rule) + (1 − kept)·norm(max(0, p − q_rule)), not p where q_rule ≠ q.
    - "typical": kept iff p(x) > min(ε, δ exp(−H(p))): Σ q over those x; emits q on them + (1 − kept)·p. Lossy.
    The emitted token is the draft when kept, else the rule's own draw (the position's resampled token).
    """
    if p.dim() != 1 or q.shape != p.shape:
        raise ArgumentError(f"p and q must be (V,) distributions of one shape, got {tuple(p.shape)} and {tuple(q.shape)}")
    p, q = p.double(), q.double()
    if rule in ("residual", "sample_match", "one_hot_q", "one_hot_q_argmax"):
        if rule == "residual":
            kept = float(torch.minimum(p, q).sum())
        elif rule == "one_hot_q_argmax":
            kept = float(p[int(q.argmax())])
        else:
            kept = float((q * p).sum())
        return kept, p.clone()  # each of these emits the target's distribution (their docstrings say why)
    if rule == "raw_logits":
        if q_rule is None or q_rule.shape != p.shape:
            raise ArgumentError("the raw-logits rule needs q_rule, the (V,) q the rule is handed")
        q_rule = q_rule.double()
        ratio = torch.where(q_rule > 0, p / q_rule.clamp_min(1e-300), torch.ones_like(p)).clamp(max=1.0)
        kept_law = q * ratio
        kept = float(kept_law.sum())
        residual = (p - q_rule).clamp_min(0)
        residual = residual / residual.sum() if float(residual.sum()) > 0 else p
        return kept, kept_law + (1 - kept) * residual
    if rule == "typical":
        if epsilon is None or delta is None or not (0 < epsilon <= 1 and delta > 0):
            raise ArgumentError(f"typical acceptance needs epsilon in (0, 1] and delta > 0, got {epsilon} and {delta}")
        passes = p > typical_threshold(p, epsilon, delta)
        kept_law = torch.where(passes, q, torch.zeros_like(q))
        kept = float(kept_law.sum())
        return kept, kept_law + (1 - kept) * p
    raise ArgumentError(f"unknown rule {rule!r}; one of {', '.join(RULES)}")


def total_variation(a: torch.Tensor, b: torch.Tensor) -> float:
    """½ Σ |a − b|: the largest difference in probability the two laws give any set of tokens."""
    return 0.5 * float((a.double() - b.double()).abs().sum())


def expected_tokens(accept_probs: list[float] | torch.Tensor) -> float:
    """A step's expected tokens per target pass from its k positions' acceptance probabilities a_1..a_k (each given
    the drafts before it kept): 1 + a_1 + a_1 a_2 + … + a_1⋯a_k (the drafts kept, and the step's own token)."""
    total, run = 1.0, 1.0
    for a in [float(x) for x in accept_probs]:
        if not 0.0 <= a <= 1.0:
            raise ArgumentError(f"an acceptance probability must be in [0, 1], got {a}")
        run *= a
        total += run
    return total


# Medusa's defaults for typical acceptance (its posterior_threshold and posterior_alpha)
MEDUSA_EPSILON, MEDUSA_DELTA = 0.09, 0.3


def compare_rules(target_logits: torch.Tensor, draft_logits: torch.Tensor, config, *,
                  epsilon: float = MEDUSA_EPSILON, delta: float = MEDUSA_DELTA) -> dict[str, dict[str, float]]:
    """Every rule of RULES at the positions of (k, V) target and draft logits under one sampling config (temperature,
    top-k, top-p, applied to both, as an engine serving the request does): {rule: {"kept": mean kept probability,
    "expected_tokens": a step's expected tokens per pass at these k positions, "tv": the largest total variation of a
    position's emitted law from p}}. The draft samples from its processed distribution; the raw-logits rule is handed
    softmax of its raw logits; typical acceptance reads p with Medusa's ε and δ.

    One more entry, "residual_draft_full_vocab": the residual rule with a draft that samples from its whole vocabulary
    at the request's temperature, top-k and top-p left out of drafting (vLLM's main branch; PR #56724 applies them to
    the draft, as every other entry here does). Exact too; it differs in what it keeps: a draft outside the target's
    top-k/top-p set is always rejected.
    """
    from .sampling import SamplingConfig, probs_from_logits

    if target_logits.dim() != 2 or draft_logits.shape != target_logits.shape:
        raise ArgumentError(f"target_logits and draft_logits must be (k, V) of one shape, got "
                            f"{tuple(target_logits.shape)} and {tuple(draft_logits.shape)}")
    p_rows = probs_from_logits(target_logits, config)
    q_rows = probs_from_logits(draft_logits, config)
    q_raw = raw_logits_q(draft_logits)
    out = {rule: _summary([position_law(p_row, q_row, rule, q_rule=q_raw_row, epsilon=epsilon, delta=delta)
                           for p_row, q_row, q_raw_row in zip(p_rows, q_rows, q_raw)], p_rows) for rule in RULES}
    q_full = probs_from_logits(draft_logits, SamplingConfig(temperature=config.temperature))
    out["residual_draft_full_vocab"] = _summary([position_law(p_row, q_row, "residual")
                                                 for p_row, q_row in zip(p_rows, q_full)], p_rows)
    return out


def _summary(laws: list[tuple[float, torch.Tensor]], p_rows: torch.Tensor) -> dict[str, float]:
    """One rule's positions (kept, emitted law) -> its mean kept probability, expected tokens and largest TV from p."""
    kept = [a for a, _ in laws]
    return {"kept": sum(kept) / len(kept) if kept else float("nan"), "expected_tokens": expected_tokens(kept),
            "tv": max((total_variation(law, p_row) for (_, law), p_row in zip(laws, p_rows)), default=0.0)}
