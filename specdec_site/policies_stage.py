"""Stage `policies`: choosing k. Fixed k vs each draft-length policy vs the oracle, on public prompt sets.

Per prompt, interleaved, the same packed target object for every variant. Greedy: one target-only run
(the shared baseline), Hugging Face assisted generation with the same int8 draft object (its default
settings, and a constant k equal to specdec's fixed k), Hugging Face prompt lookup (no model), and specdec
with each policy (int8 draft) and with the n-gram and hybrid drafters. Sampled (T = cfg.sampled_temperature): one target-only run and specdec's
adaptive policy, same seed. For every specdec run the oracle bound (eq. 13 of the math page) is computed
from its recorded steps.
"""

from __future__ import annotations

import statistics

from specdec.theory import VerifyCost, bootstrap_median_ci, oracle_seconds, oracle_steps

from .hf import HF_DEFAULT_DESCRIPTION, HF_PROMPT_LOOKUP, HF_SCHEDULES, hf_assisted, hf_prompt_lookup
from .prompts import encode
from .public_prompts import SOURCES, public_prompts

# variant -> (drafter, policy, k); k=None: cfg.fixed_k. The drafters' names: "int8" (the default draft
# model), "ngram", "hybrid".
VARIANTS = {
    "fixed": ("int8", "fixed", None),
    "confidence": ("int8", "confidence", 16),
    "heuristic": ("int8", "heuristic", 16),
    "adaptive": ("int8", "adaptive", 16),
    "adaptive_ngram": ("ngram", "adaptive", 16),
    "adaptive_hybrid": ("hybrid", "adaptive", 16),
}
# Hugging Face assisted generation with the same int8 draft object: name -> schedule (None: the draft's own
# GenerationConfig, transformers' defaults, kept across calls; "constant": k = cfg.fixed_k, specdec's fixed k).
HF_ASSISTED = {"hf_default": None, "hf_constant": "constant"}
HF_VARIANTS = (*HF_ASSISTED, "hf_prompt_lookup")  # the last: transformers' own n-gram matcher, no model
# Decoders are compared only at equal drafts: the specdec variants divided by the HF assisted ones are
# those drafting with the same int8 model object.
SAME_DRAFT_AS_HF = tuple(name for name, (drafter, _, _) in VARIANTS.items() if drafter == "int8")
SAMPLED_VARIANTS = ("adaptive",)  # specdec variants also run sampled, against a sampled target-only run


def make_drafter(ctx, name: str):
    from specdec import HybridDrafter, NgramDrafter

    model = ctx.default_draft
    return {"int8": lambda: model, "ngram": NgramDrafter, "hybrid": lambda: HybridDrafter(model)}[name]()


def oracle(trace, seconds: float) -> dict:
    """The run's time with each step (after the first) drafting exactly what gets accepted (eq. 13).

    The first step (prefill) and everything outside the steps keep their measured time; the other steps
    are re-costed at this run's own draft seconds per token and its verify-time line a + b k. A bonus
    token after a drafted block counts as agreement (the draft was never asked: this can only make the
    oracle faster); a token of a step that drafted nothing (no n-gram match) does not.
    """
    steps = trace.steps[1:]
    agree = []
    for s in steps:
        agree += [True] * s.n_accepted + [s.bonus_token is not None and s.k > 0] * (len(s.emitted) > s.n_accepted)
    drafted = [s for s in steps if s.k > 0 and s.source == "model"]
    per_token = (sum(s.draft_seconds for s in drafted) / sum(s.k for s in drafted)) if drafted else 0.0
    fit = VerifyCost([s.k for s in steps], [s.verify_seconds for s in steps]) if steps else None
    lengths = oracle_steps(agree)
    step_time = sum(s.draft_seconds + s.verify_seconds for s in steps)
    oracle_time = seconds - step_time + (oracle_seconds(lengths, per_token, fit) if fit else 0.0)
    return {"lengths": lengths, "seconds": oracle_time, "draft_seconds_per_token": per_token,
            "verify_intercept": fit.intercept if fit else None, "verify_slope": fit.slope if fit else None}


def step_summary(trace) -> list[dict]:
    return [{"k": s.k, "budget": s.budget, "n_accepted": s.n_accepted, "source": s.source,
             "draft_seconds": s.draft_seconds, "verify_seconds": s.verify_seconds} for s in trace.steps]


def run_variant(ctx, cfg, ids, n, name, sampling, base_seconds, reference) -> dict:
    """One specdec run of VARIANTS[name], timed, with its oracle bound and step summary."""
    drafter, policy, k = VARIANTS[name]
    k = cfg.fixed_k if k is None else k
    # record_top=0: the steps' numbers and timings, without top-10 lists (they would cost time here)
    seconds, (tokens, trace) = ctx.run_spec(make_drafter(ctx, drafter), ids, n, k, sampling, ctx.seed, policy=policy,
                                            record_top=0)
    bound = oracle(trace, seconds)
    return {
        "seconds": seconds, "speedup": base_seconds / seconds,
        "same_output": tokens.tolist() == reference.tolist() if reference is not None else None,
        "alpha": trace.n_accepted / trace.n_drafted if trace.n_drafted else None,
        "tokens_per_target_pass": trace.tokens_per_target_pass, "drafts_per_step": trace.n_drafted / len(trace.steps),
        "oracle_speedup": base_seconds / bound["seconds"], "measured_over_oracle": bound["seconds"] / seconds,
        "oracle": bound, "steps": step_summary(trace),
    }


def run_prompt(ctx, cfg, prompt) -> dict:
    ids = encode(ctx.target.tokenizer, prompt, ctx.device)
    n, greedy, sampled = cfg.policy_tokens, cfg.modes["greedy"], cfg.modes["sampled"]
    base_seconds, reference = ctx.run_target(ids, n, greedy, ctx.seed)
    row = {"prompt": prompt["id"], "prompt_tokens": int(ids.shape[0]), "target_seconds": base_seconds,
           "variants": {}}
    for name in HF_VARIANTS:
        if name in HF_ASSISTED:
            schedule = HF_ASSISTED[name]
            seconds, out = hf_assisted(ctx, ids, n, cfg.fixed_k if schedule else None, schedule, ctx.default_draft)
        else:
            seconds, out = hf_prompt_lookup(ctx, ids, n)
        row["variants"][name] = {"seconds": seconds, "speedup": base_seconds / seconds,
                                 "same_output": out.tolist() == reference.tolist()}
    for name in VARIANTS:
        row["variants"][name] = run_variant(ctx, cfg, ids, n, name, greedy, base_seconds, reference)
    # Sampled: its own target-only baseline (same seed); the output is a sample, so not compared token by token
    # (the exactness stage tests its distribution).
    sampled_base, _ = ctx.run_target(ids, n, sampled, ctx.seed)
    row["sampled"] = {"temperature": sampled["temperature"], "target_seconds": sampled_base,
                      "variants": {name: run_variant(ctx, cfg, ids, n, name, sampled, sampled_base, None)
                                   for name in SAMPLED_VARIANTS}}
    return row


def summarize(rows: list[dict], seed: int) -> dict:
    """Per variant: median speedup over prompts with its 95% bootstrap interval; for specdec variants also
    measured / oracle, and, for those with the int8 draft model, the speedup / each HF assisted variant's
    present in the rows (at equal draft), both per prompt, then the median. Greedy and sampled rows alike."""

    def median_ci(values: list[float]) -> dict:
        return {"median": statistics.median(values), "ci95": list(bootstrap_median_ci(values, seed=seed))}

    out = {}
    for name, first in rows[0]["variants"].items():
        entry = median_ci([r["variants"][name]["speedup"] for r in rows])
        same = [r["variants"][name]["same_output"] for r in rows]
        if None not in same:
            entry["same_output"] = sum(same)
        if "measured_over_oracle" in first:
            entry["measured_over_oracle"] = median_ci([r["variants"][name]["measured_over_oracle"] for r in rows])
        if name in SAME_DRAFT_AS_HF:
            for hf in (h for h in HF_ASSISTED if h in rows[0]["variants"]):
                entry[f"over_{hf}"] = median_ci([r["variants"][name]["speedup"] / r["variants"][hf]["speedup"]
                                                 for r in rows])
        out[name] = entry
    return out


def run(ctx, cfg) -> dict:
    from transformers import GenerationConfig

    draft = ctx.default_draft
    saved = getattr(draft, "generation_config", None)
    draft.generation_config = GenerationConfig()  # transformers' assisted-generation defaults
    try:
        warm = encode(ctx.target.tokenizer, public_prompts("code", 0, 1)[0], ctx.device)
        ctx.run_spec(make_drafter(ctx, "int8"), warm, 4, 16, cfg.modes["greedy"], 0, record=False, policy="adaptive")
        hf_assisted(ctx, warm, 4, None, None, draft)
        hf_assisted(ctx, warm, 4, cfg.fixed_k, "constant", draft)
        hf_prompt_lookup(ctx, warm, 4)
        domains = {}
        for domain, count in cfg.policy_prompts.items():
            prompts = public_prompts(domain, cfg.policy_prompt_start, count)
            rows = [run_prompt(ctx, cfg, p) for p in ctx.tqdm(prompts, desc=f"policies {domain}", unit="prompt")]
            sampled = [{"prompt": r["prompt"], "variants": r["sampled"]["variants"]} for r in rows]
            domains[domain] = {"source": SOURCES[domain], "prompts": prompts, "rows": rows,
                               "summary": summarize(rows, ctx.seed), "sampled_summary": summarize(sampled, ctx.seed)}
    finally:
        draft.generation_config = saved
    return {"draft_variant": ctx.default_draft_name, "new_tokens": cfg.policy_tokens, "mode": "greedy",
            "variants": {name: {"drafter": d, "policy": p, "k": cfg.fixed_k if k is None else k}
                         for name, (d, p, k) in VARIANTS.items()},
            "sampled_variants": list(SAMPLED_VARIANTS), "sampled_temperature": cfg.sampled_temperature,
            "hf": {"hf_default": HF_DEFAULT_DESCRIPTION + "; the same int8 draft object",
                   "hf_constant": f"num_assistant_tokens={cfg.fixed_k}, constant schedule, no confidence stop; "
                                  "the same int8 draft object",
                   "hf_prompt_lookup": "prompt lookup, no draft model: transformers' n-gram matcher, "
                                       + ", ".join(f"{k}={v}" for k, v in HF_PROMPT_LOOKUP.items()),
                   "settings": {**{name: HF_SCHEDULES[s](cfg.fixed_k) if s else None for name, s in HF_ASSISTED.items()},
                                "hf_prompt_lookup": HF_PROMPT_LOOKUP}},
            "same_draft_as_hf": list(SAME_DRAFT_AS_HF),
            "domains": domains}
