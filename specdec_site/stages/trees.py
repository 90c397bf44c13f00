"""Stage `trees`: token trees against chains on the real pair, with the cost model that chooses the tree.

1. The cost curves: one pass of the target and of the draft against the rows it scores (cost_curve.ROWS), on the
   build's device, with the decoder's CachedLM and tree mask.
2. The acceptance by draft rank (Sequoia's positional model) on the design prompts (prompts.PROMPTS, never the
   benchmark's): the draft's rank of each token of the target's greedy continuation.
3. The cost model, before any benchmark prompt runs: the tree of most predicted tokens per unit cost on this
   device's curves (cost_curve.predict, Sequoia's dynamic programme per node budget and depth), and the chain the
   same model prefers (its depth is the best chain's k); and the same on a GPU-like curve, an H200's roofline for
   these architectures (a model, cost_curve.roofline_curve: there a pass of 64 rows costs what one row does). The
   dynamic tree (EAGLE-2) gets the GPU-like tree's node budget and depth.
   The same model per prompt set, fitted on each public set's held-out prompts (those after the core set, which no
   stage benchmarks): what a tree chosen for one kind of text would predict. It is recorded, not run: the stage's
   trees take no label of the text they decode.
4. On the benchmark's core prompts (cfg.tree_prompts, the first of each set), per prompt, interleaved, the same
   target and draft objects: one greedy target-only run (the baseline of every run of the prompt), then greedy the
   best chain, the adaptive chain policy, the best tree for this device, the best tree for the GPU-like curve and
   the dynamic tree, then sampled (T = cfg.sampled_temperature) the chain and both static trees. Tokens per target
   pass and the speedup over the target alone per run; per domain the medians with their 95% bootstrap intervals,
   and each tree / the chain per prompt.
"""

from __future__ import annotations

import json
import statistics

from specdec_site.cost_curve import MAX_RANK, accept_by_rank, measure_pass_seconds, predict, roofline_curve
from specdec_site.prompts import PROMPTS, encode, prompt_ids
from specdec_site.public_prompts import SOURCES, public_prompts
from specdec_site.summary import median_ci

GREEDY_VARIANTS = ("chain", "adaptive", "tree", "tree_gpu_like", "dynamic_tree")
SAMPLED_VARIANTS = ("chain", "tree", "tree_gpu_like")
DYNAMIC_WIDTH = 4  # children per expanded node of the dynamic tree (EAGLE-2 expands its top-k; k = 4 here)


def draft_ranks(ctx, prompt: dict, n_tokens: int) -> list[int]:
    """The draft's rank (0 = its most probable token) of each token of the target's greedy continuation."""
    import torch

    from specdec.cache import CachedLM

    ids = encode(ctx.target.tokenizer, prompt, ctx.device)
    _, tokens = ctx.run_spec(ctx.default_draft, ids, n_tokens, 4, {"temperature": 0.0}, ctx.seed, record=False)
    seq = torch.cat([ids, tokens])[None]
    lm = CachedLM(ctx.default_draft, ctx.vocab_size or ctx.target.model.config.vocab_size, "draft")
    logits = lm.logits(seq[:, :-1], len(tokens))  # row i: the draft's logits before new token i
    chosen = logits.gather(1, tokens[:, None].to(logits.device))
    return (logits > chosen).sum(1).tolist()


def held_out_prompts(cfg, domain: str) -> list[dict]:
    """A public set's design prompts: tree_design_prompts of them, after the last of its core set (the most any stage
    benchmarks), so that fitting on them sees no benchmark prompt."""
    core = public_prompts(domain, cfg.policy_prompt_start, cfg.core_prompts[domain])
    return public_prompts(domain, max(p["index"] for p in core) + 1, cfg.tree_design_prompts)


def design_for_set(ctx, cfg, domain: str, curves: dict, gpu_like: dict) -> dict:
    """The cost model fitted on one set's held-out prompts: its acceptance by rank, and the tree and chain it would
    choose on this device's curves and on the GPU-like ones."""
    prompts = held_out_prompts(cfg, domain)
    ranks = [r for p in prompts for r in draft_ranks(ctx, p, cfg.tree_design_tokens)]
    accept = accept_by_rank(ranks)
    return {"prompts": [p["id"] for p in prompts], "tokens": len(ranks), "accept_by_rank": accept,
            "choice": {"tree": predict(accept, curves["target"], curves["draft"]),
                       "chain": predict(accept, curves["target"], curves["draft"], chain=True),
                       "tree_gpu_like": predict(accept, gpu_like["target"], gpu_like["draft"]),
                       "chain_gpu_like": predict(accept, gpu_like["target"], gpu_like["draft"], chain=True)}}


def make_variant(ctx, name: str, choice: dict):
    """(drafter, k, policy) of a variant."""
    from specdec import TreeDrafter, TreeShape

    if name == "chain":
        return ctx.default_draft, choice["chain"]["depth"], "fixed"
    if name == "adaptive":
        return ctx.default_draft, 16, "adaptive"
    if name in ("tree", "tree_gpu_like"):
        tree = choice[name]
        return TreeDrafter(ctx.default_draft, TreeShape(tuple(tuple(p) for p in tree["paths"]))), tree["depth"], "fixed"
    if name == "dynamic_tree":
        tree = choice["tree_gpu_like"]
        return (TreeDrafter(ctx.default_draft, width=DYNAMIC_WIDTH, depth=tree["depth"], nodes=tree["nodes"]),
                tree["depth"], "fixed")
    raise ValueError(f"unknown tree-stage variant {name!r}")


def run_one(ctx, name, choice, ids, n, sampling, base_seconds, reference) -> dict:
    drafter, k, policy = make_variant(ctx, name, choice)
    seconds, (tokens, trace) = ctx.run_spec(drafter, ids, n, k, sampling, ctx.seed, policy=policy, record_top=0)
    later = trace.steps[1:]
    return {"seconds": seconds, "speedup": base_seconds / seconds,
            "tokens_per_target_pass": trace.tokens_per_target_pass, "steps": len(trace.steps),
            "same_output": tokens.tolist() == reference.tolist() if reference is not None else None,
            "nodes_per_step": trace.n_drafted / len(trace.steps),
            "draft_seconds_per_step": statistics.fmean(s.draft_seconds for s in later) if later else None,
            "verify_seconds_per_step": statistics.fmean(s.verify_seconds for s in later) if later else None}


def summarize(rows: list[dict], mode: str, seed: int) -> dict:
    """Per variant: median speedup and tokens per pass with intervals; tree / chain per prompt, both measures."""
    names = GREEDY_VARIANTS if mode == "greedy" else SAMPLED_VARIANTS
    out = {}
    for name in names:
        runs = [r[mode][name] for r in rows]
        entry = {"speedup": median_ci([x["speedup"] for x in runs], seed),
                 "tokens_per_target_pass": median_ci([x["tokens_per_target_pass"] for x in runs], seed)}
        if name != "chain":
            chain = [r[mode]["chain"] for r in rows]
            entry["over_chain"] = median_ci([c["seconds"] / x["seconds"] for x, c in zip(runs, chain)], seed)
            entry["tokens_per_pass_over_chain"] = median_ci(
                [x["tokens_per_target_pass"] / c["tokens_per_target_pass"] for x, c in zip(runs, chain)], seed)
        if mode == "greedy":
            entry["same_output"] = sum(x["same_output"] for x in runs)
        out[name] = entry
    return out


def run(ctx, cfg) -> dict:
    vocab = ctx.vocab_size or ctx.target.model.config.vocab_size
    greedy, sampled, n = cfg.modes["greedy"], cfg.modes["sampled"], cfg.policy_tokens
    # 1. the cost curves of this device (the draft: the default draft object, the one every run drafts with)
    curves = {role: measure_pass_seconds(model, vocab, cfg.tree_rows, reps=cfg.tree_cost_reps, seed=ctx.seed,
                                         device=ctx.device)
              for role, model in (("target", ctx.target.model), ("draft", ctx.default_draft))}
    # 2. the acceptance by rank, on the design prompts
    ranks = [r for domain in PROMPTS for p in PROMPTS[domain][: cfg.tree_design_prompts]
             for r in draft_ranks(ctx, p, cfg.tree_design_tokens)]
    accept = accept_by_rank(ranks)
    # 3. the cost model's choice, before the benchmark prompts run, on this device's curves and the GPU-like ones
    architectures = {role: json.loads(m.config.to_json_string()) for role, m in (("target", ctx.target.model),
                                                                                 ("draft", ctx.draft.model))}
    gpu_like = {role: roofline_curve(architectures[role], cfg.tree_rows) for role in ("target", "draft")}
    choice = {"tree": predict(accept, curves["target"], curves["draft"]),
              "chain": predict(accept, curves["target"], curves["draft"], chain=True),
              "tree_gpu_like": predict(accept, gpu_like["target"], gpu_like["draft"]),
              "chain_gpu_like": predict(accept, gpu_like["target"], gpu_like["draft"], chain=True)}
    by_set = {domain: design_for_set(ctx, cfg, domain, curves, gpu_like) for domain in cfg.tree_prompts}
    # 4. the benchmark prompts
    warm = encode(ctx.target.tokenizer, public_prompts("code", 0, 1)[0], ctx.device)
    for name in GREEDY_VARIANTS:
        drafter, k, policy = make_variant(ctx, name, choice)
        ctx.run_spec(drafter, warm, 4, k, greedy, 0, record=False, policy=policy)
    domains = {}
    for domain, count in cfg.tree_prompts.items():
        prompts = public_prompts(domain, cfg.policy_prompt_start, count)
        rows = []
        for p in ctx.tqdm(prompts, desc=f"trees {domain}", unit="prompt"):
            ids = prompt_ids(ctx, cfg, p)
            base_seconds, reference = ctx.run_target(ids, n, greedy, ctx.seed)
            row = {"prompt": p["id"], "prompt_tokens": int(ids.shape[0]), "target_seconds": base_seconds,
                   "greedy": {}, "sampled": {}}
            for name in GREEDY_VARIANTS:
                row["greedy"][name] = run_one(ctx, name, choice, ids, n, greedy, base_seconds, reference)
            for name in SAMPLED_VARIANTS:
                row["sampled"][name] = run_one(ctx, name, choice, ids, n, sampled, base_seconds, None)
            rows.append(row)
        domains[domain] = {"source": SOURCES[domain], "prompts": [p["id"] for p in prompts], "rows": rows,
                           "summary": {mode: summarize(rows, mode, ctx.seed) for mode in ("greedy", "sampled")}}
    return {"draft_variant": ctx.default_draft_name, "new_tokens": n, "sampled_temperature": cfg.sampled_temperature,
            "cost_curves": curves, "design": {"prompts": [p["id"] for d in PROMPTS
                                                          for p in PROMPTS[d][: cfg.tree_design_prompts]],
                                              "tokens": len(ranks), "rank_counts": [ranks.count(r) for r in range(MAX_RANK)]
                                              + [sum(r >= MAX_RANK for r in ranks)],
                                              "accept_by_rank": accept},
            "gpu_like_curves": gpu_like, "choice": choice, "by_set": by_set, "dynamic_width": DYNAMIC_WIDTH,
            "architectures": architectures,
            "variants": {"greedy": list(GREEDY_VARIANTS), "sampled": list(SAMPLED_VARIANTS)}, "domains": domains}
