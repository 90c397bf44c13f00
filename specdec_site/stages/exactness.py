"""Stage `exactness`: tiny random transformers, empirical vs exact sequence distributions under the correct rule and
the naive residual, the mutation table (known wrong variants against the quick checks), the counterexample, and the
exactness audit of specdec and transformers' speculative decoders (specdec_site.exactness.audit)."""

from __future__ import annotations

import contextlib
import os

EXACT_SETUP = {"vocab": 8, "new_tokens": 3, "prompt": [0, 3, 5], "k": 2, "temperature": 1.0,
               "target_seed": 11, "draft_seed": 12, "init_scale": 0.5}


# Sun et al. 2025's two-token example: the draft and the target draw two independent tokens, A or B.
BLOCK_EXAMPLE = {"q": [1 / 3, 2 / 3], "p": [2 / 3, 1 / 3], "k": 2, "ids": "AB"}


def block_example() -> dict:
    """The math page's worked example, through the library's own terms (verify.block_terms): per draft block, its
    probability, min(1, p/q) of each token, block verification's w_i and h_i, and the expected accepted tokens of
    either rule; then the totals and an ideal verifier's (the maximal coupling of the two blocks' joint
    distributions: sum over i of the prefixes' overlap, sum_x min(p(x_1..x_i), q(x_1..x_i)))."""
    import itertools

    import torch

    from specdec.theory import expected_accepted_block, expected_accepted_token
    from specdec.verify import acceptance_probability, block_terms

    e = BLOCK_EXAMPLE
    p, q, k = torch.tensor(e["p"], dtype=torch.float64), torch.tensor(e["q"], dtype=torch.float64), e["k"]
    blocks = []
    for block in itertools.product(range(len(p)), repeat=k):
        tokens = torch.tensor(block)
        weights, stop_probs, _ = block_terms(tokens, q.expand(k, -1), p.expand(k + 1, -1))
        accept = [float(acceptance_probability(p[x], q[x])) for x in block]
        blocks.append({"block": "".join(e["ids"][x] for x in block), "q": float(torch.prod(q[tokens])),
                       "p": float(torch.prod(p[tokens])), "accept_probs": accept,
                       "weights": weights[1:].tolist(), "stop_probs": stop_probs[1:].tolist(),
                       "token": expected_accepted_token(accept),
                       "block_rule": expected_accepted_block(stop_probs[1:].tolist())})
    ideal = 0.0
    for i in range(1, k + 1):
        for prefix in itertools.product(range(len(p)), repeat=i):
            ideal += min(float(torch.prod(p[list(prefix)])), float(torch.prod(q[list(prefix)])))
    return {**e, "blocks": blocks, "token": sum(b["q"] * b["token"] for b in blocks),
            "block": sum(b["q"] * b["block_rule"] for b in blocks), "ideal": ideal}


def run(ctx, cfg) -> dict:
    """Tiny random transformers: empirical vs exact sequence distributions, correct rule vs naive residual."""
    import torch

    from specdec import SamplingConfig
    from specdec_site.exactness.exact import (
        chi_square_test,
        counterexample,
        first_token_distribution,
        make_tiny_lm,
        one_thread,
        sample_sequence_counts,
        sequence_distribution,
    )
    from specdec_site.exactness.mutants import MUTANTS, mutation_table, naive_rule

    s = EXACT_SETUP
    prompt = torch.tensor(s["prompt"])
    with one_thread():
        target = make_tiny_lm(s["target_seed"], s["vocab"], s["init_scale"])
        draft = make_tiny_lm(s["draft_seed"], s["vocab"], s["init_scale"])
        exact = sequence_distribution(target, prompt, s["new_tokens"], SamplingConfig(s["temperature"]))
        order = sorted(exact, key=exact.get, reverse=True)
        rules = {}
        # the token rule, the wrong residual, and block verification (the same models, draws of its own)
        for rule, context, verify in ctx.tqdm([("correct", contextlib.nullcontext, "token"),
                                               ("naive_residual", naive_rule, "token"),
                                               ("block", contextlib.nullcontext, "block")],
                                              desc="exactness", unit="rule"):
            with context():
                counts = sample_sequence_counts(target, draft, prompt, s["new_tokens"], cfg.exact_samples,
                                                seed=ctx.seed, k=s["k"], temperature=s["temperature"], verify=verify)
            rules[rule] = {**chi_square_test(counts, exact),
                           "empirical": [counts.get(q, 0) / cfg.exact_samples for q in order]}
    # Known wrong variants of the rule against the quick exactness checks (the tests run the same).
    variants = [m for m in MUTANTS if cfg.mutation_variants is None or m.name in cfg.mutation_variants]
    mutants = mutation_table(variants, sampled_runs=cfg.mutation_sampled_runs, progress=ctx.tqdm)
    # The audit: specdec in every policy and drafter, transformers' candidate generators, two known-inexact controls;
    # its rows side by side on two cores (each row one process, one thread; the quick build stays in this process).
    from specdec_site.exactness.audit import audit_table

    audit = audit_table(cfg.audit_samples, seed=ctx.seed, workers=1 if cfg.quick else min(2, os.cpu_count() or 1),
                        progress=ctx.tqdm, names=cfg.audit_rows)
    # The counterexample of the math page, enumerated exactly through verify_draft.
    p, q = counterexample()
    with naive_rule():
        naive_cx = first_token_distribution(p, q).tolist()
    return {
        "setup": {**s, "models": f"random LlamaForCausalLM (specdec_site.exactness.exact.make_tiny_lm), 2 layers, hidden 16, "
                                 f"init range {s['init_scale']}, seeds {s['target_seed']} (target) / {s['draft_seed']} (draft)"},
        "sequences": ["".join(map(str, seq)) for seq in order],
        "exact": [exact[seq] for seq in order],
        "rules": rules,
        "mutants": mutants,
        "audit": audit,
        "block_example": block_example(),
        "counterexample": {"p": p[0].tolist(), "q": q[0].tolist(), "correct": first_token_distribution(p, q).tolist(),
                           "naive_residual": naive_cx},
    }
