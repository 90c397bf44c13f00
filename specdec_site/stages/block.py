"""Stage `block`: block verification (Sun et al. 2025, arXiv 2403.10444) against the token rule (Algorithm 1).

Per prompt, interleaved (the order alternates from prompt to prompt, so neither rule always runs first), the same
packed target and default draft objects, the same seed, fixed k = cfg.fixed_k: one sampled run under each rule, at
each temperature of cfg.block_runs on the first prompts of each public set (at 0.7 the core set, the policies
stage's, at 1.0 the matrix's). Greedy runs are not made: at T = 0 the two rules keep the same tokens (the exactness
stage checks it).

Per run: tokens per target pass, its seconds, and, from its recorded steps, the expected tokens per pass of either
rule on the very drafts of that run (theory.expected_accepted_token / _block, from each step's min(1, p/q) and block
terms): a paired measure without the noise of the accept draws, on blocks drafted exactly as either rule's run would
draft them (both rules emit the target's distribution, so the contexts, and the drafts given them, are distributed
alike). Per set and temperature: medians of block / token per prompt with 95% bootstrap intervals.
"""

from __future__ import annotations

import statistics

from specdec.theory import expected_accepted_block, expected_accepted_token
from specdec_site.prompts import encode, prompt_ids
from specdec_site.public_prompts import SOURCES, public_prompts
from specdec_site.summary import median_ci

RULES = ("token", "block")


def expected_tokens_per_pass(steps) -> dict:
    """Each rule's expected tokens per target pass over a run's chain steps (1 + expected accepted drafts per step,
    averaged), from the drafts those steps proposed."""
    return {"token": statistics.fmean(1.0 + expected_accepted_token(s.accept_probs) for s in steps),
            "block": statistics.fmean(1.0 + expected_accepted_block(s.stop_probs) for s in steps)}


def run_rule(ctx, cfg, ids, n: int, temperature: float, rule: str) -> dict:
    """One timed run under a rule, its steps recorded without top-10 lists (they would cost time here)."""
    seconds, (tokens, trace) = ctx.run_spec(ctx.default_draft, ids, n, cfg.fixed_k, {"temperature": temperature},
                                            ctx.seed, record_top=0, verify=rule)
    return {"seconds": seconds, "steps": len(trace.steps), "n_drafted": trace.n_drafted,
            "n_accepted": trace.n_accepted, "tokens_per_target_pass": trace.tokens_per_target_pass,
            "expected_tokens_per_pass": expected_tokens_per_pass(trace.steps)}


def summarize(rows: list[dict], seed: int) -> dict:
    """Per rule its median tokens per pass; block / token per prompt: measured tokens per pass, expected tokens per
    pass on the same drafts (the token rule's run's and the block rule's run's, pooled per prompt), and wall clock
    (token seconds / block seconds: > 1 when block verification is faster)."""
    def pooled(row, rule):
        a, b = (row[r]["expected_tokens_per_pass"][rule] * row[r]["steps"] for r in RULES)
        return (a + b) / (row["token"]["steps"] + row["block"]["steps"])

    return {
        **{rule: {"tokens_per_target_pass": median_ci([r[rule]["tokens_per_target_pass"] for r in rows], seed),
                  "expected_tokens_per_pass": median_ci([pooled(r, rule) for r in rows], seed)} for rule in RULES},
        "tokens_per_pass_ratio": median_ci([r["block"]["tokens_per_target_pass"] / r["token"]["tokens_per_target_pass"]
                                            for r in rows], seed),
        "expected_ratio": median_ci([pooled(r, "block") / pooled(r, "token") for r in rows], seed),
        "speed_ratio": median_ci([r["token"]["seconds"] / r["block"]["seconds"] for r in rows], seed),
        "block_ahead": sum(r["block"]["tokens_per_target_pass"] >= r["token"]["tokens_per_target_pass"] for r in rows),
    }


def run(ctx, cfg) -> dict:
    n = cfg.policy_tokens
    warm = encode(ctx.target.tokenizer, public_prompts("code", 0, 1)[0], ctx.device)
    for rule in RULES:
        ctx.run_spec(ctx.default_draft, warm, 4, cfg.fixed_k, {"temperature": 1.0}, 0, record=False, verify=rule)
    temperatures, order = [], 0
    for temperature, per_set in cfg.block_runs:
        domains = {}
        for domain, count in per_set.items():
            prompts = public_prompts(domain, cfg.policy_prompt_start, count)
            rows = []
            for p in ctx.tqdm(prompts, desc=f"block T={temperature} {domain}", unit="prompt"):
                ids = prompt_ids(ctx, cfg, p)
                row = {"prompt": p["id"], "prompt_tokens": int(ids.shape[0]),
                       "first": RULES[order % 2]}  # which rule ran first on this prompt
                for rule in (RULES if order % 2 == 0 else RULES[::-1]):
                    row[rule] = run_rule(ctx, cfg, ids, n, temperature, rule)
                order += 1
                rows.append(row)
            domains[domain] = {"source": SOURCES[domain], "prompts": [p["id"] for p in prompts], "rows": rows,
                               "summary": summarize(rows, ctx.seed)}
        temperatures.append({"temperature": temperature, "domains": domains})
    return {"draft_variant": ctx.default_draft_name, "new_tokens": n, "k": cfg.fixed_k, "rules": list(RULES),
            "temperatures": temperatures}
