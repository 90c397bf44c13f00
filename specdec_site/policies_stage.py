"""Stage `policies`: choosing k. Fixed k vs each draft-length policy vs the oracle, on public prompt sets.

Per prompt, interleaved, greedy, the same packed target object for every variant: one target-only run
(the shared baseline), Hugging Face assisted generation with the same int8 draft object and its default
settings, and specdec with each policy (int8 draft) and with the n-gram and hybrid drafters. For every
specdec run the oracle bound (eq. 13 of the math page) is computed from its recorded steps.
"""

from __future__ import annotations

import statistics

from specdec.theory import VerifyCost, bootstrap_median_ci, oracle_seconds, oracle_steps

from .hf import hf_assisted
from .prompts import encode
from .public_prompts import SOURCES, public_prompts

# variant -> (drafter, policy, k). The drafters' names: "int8" (the default draft model), "ngram", "hybrid".
VARIANTS = {
    "fixed": ("int8", "fixed", 4),
    "confidence": ("int8", "confidence", 16),
    "heuristic": ("int8", "heuristic", 16),
    "adaptive": ("int8", "adaptive", 16),
    "adaptive_ngram": ("ngram", "adaptive", 16),
    "adaptive_hybrid": ("hybrid", "adaptive", 16),
}


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


def run_prompt(ctx, cfg, prompt) -> dict:
    ids = encode(ctx.target.tokenizer, prompt, ctx.device)
    n, greedy = cfg.policy_tokens, cfg.modes["greedy"]
    base_seconds, reference = ctx.run_target(ids, n, greedy, ctx.seed)
    row = {"prompt": prompt["id"], "prompt_tokens": int(ids.shape[0]), "target_seconds": base_seconds,
           "variants": {}}
    seconds, out = hf_assisted(ctx, ids, n, None, None, ctx.default_draft)  # its defaults, kept across calls
    row["variants"]["hf_default"] = {"seconds": seconds, "speedup": base_seconds / seconds,
                                     "same_output": out.tolist() == reference.tolist()}
    for name, (drafter, policy, k) in VARIANTS.items():
        # record_top=0: the steps' numbers and timings, without top-10 lists (they would cost time here)
        seconds, (tokens, trace) = ctx.run_spec(make_drafter(ctx, drafter), ids, n, k, greedy, ctx.seed, policy=policy,
                                                record_top=0)
        bound = oracle(trace, seconds)
        row["variants"][name] = {
            "seconds": seconds, "speedup": base_seconds / seconds, "same_output": tokens.tolist() == reference.tolist(),
            "alpha": trace.n_accepted / trace.n_drafted if trace.n_drafted else None,
            "tokens_per_target_pass": trace.tokens_per_target_pass, "drafts_per_step": trace.n_drafted / len(trace.steps),
            "oracle_speedup": base_seconds / bound["seconds"], "measured_over_oracle": bound["seconds"] / seconds,
            "oracle": bound, "steps": step_summary(trace),
        }
    return row


def summarize(rows: list[dict], seed: int) -> dict:
    out = {}
    for name in rows[0]["variants"]:
        speedups = [r["variants"][name]["speedup"] for r in rows]
        entry = {"median": statistics.median(speedups), "ci95": list(bootstrap_median_ci(speedups, seed=seed)),
                 "same_output": sum(r["variants"][name]["same_output"] for r in rows)}
        if name != "hf_default":
            ratio = [r["variants"][name]["measured_over_oracle"] for r in rows]
            entry["measured_over_oracle"] = {"median": statistics.median(ratio),
                                             "ci95": list(bootstrap_median_ci(ratio, seed=seed))}
            over_hf = [r["variants"][name]["speedup"] / r["variants"]["hf_default"]["speedup"] for r in rows]
            entry["over_hf_default"] = {"median": statistics.median(over_hf),
                                        "ci95": list(bootstrap_median_ci(over_hf, seed=seed))}
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
        domains = {}
        for domain, count in cfg.policy_prompts.items():
            prompts = public_prompts(domain, cfg.policy_prompt_start, count)
            rows = [run_prompt(ctx, cfg, p) for p in ctx.tqdm(prompts, desc=f"policies {domain}", unit="prompt")]
            domains[domain] = {"source": SOURCES[domain], "prompts": prompts, "rows": rows,
                               "summary": summarize(rows, ctx.seed)}
    finally:
        draft.generation_config = saved
    return {"draft_variant": ctx.default_draft_name, "new_tokens": cfg.policy_tokens, "mode": "greedy",
            "variants": {name: {"drafter": d, "policy": p, "k": k} for name, (d, p, k) in VARIANTS.items()},
            "hf_default": "transformers defaults, the same int8 draft object", "domains": domains}
