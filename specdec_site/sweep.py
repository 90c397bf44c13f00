"""Stage `benchmark`: the fixed-k sweep against target-only, on the public prompt sets.

Every comparison is side by side in one process, interleaved rep by rep, on the same prompt and seed.
Hugging Face assisted generation is compared at equal drafts in the policies stage (policies_stage.py).
"""

from __future__ import annotations

import statistics

from specdec.theory import expected_tokens_per_pass, leviathan_speedup

from .prompts import encode
from .public_prompts import public_prompts


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "values": values}


def summarize_spec(times, traces, base_times, base_per_token, n_tokens, k) -> dict:
    """Speedup, alpha, c, verify cost and predictions from side-by-side runs.

    base_per_token: the target's cost of one decoding token, prefill excluded.
    """
    steps = [s for t in traces for s in t.steps]
    drafted = sum(t.n_drafted for t in traces)
    alpha = sum(t.n_accepted for t in traces) / drafted if drafted else float("nan")
    hist = [0] * (k + 1)
    pos_tried, pos_acc = [0] * k, [0] * k
    for s in steps:
        if s.k == k:
            hist[s.n_accepted] += 1
            for i in range(min(s.n_accepted + 1, k)):  # position i is evaluated only if all before it were accepted
                pos_tried[i] += 1
                pos_acc[i] += i < s.n_accepted
    # Costs relative to one target forward of one token. The first step includes the prompt's prefill
    # for both models, so it is left out of c and of the verify cost.
    later = [s for t in traces for s in t.steps[1:] if s.k == k]
    draft_per_token = sum(s.draft_seconds for s in later) / max(1, sum(s.k for s in later))
    verify_per_step = statistics.median([s.verify_seconds for s in later]) if later else float("nan")
    c = draft_per_token / base_per_token
    verify_cost = verify_per_step / base_per_token
    return {
        "k": k,
        "seconds": spread(times),
        "tokens_per_second": statistics.median([n / t for n, t in zip(n_tokens, times)]),
        "speedup": spread([b / t for b, t in zip(base_times, times)]),
        "alpha": alpha,
        "tokens_per_target_pass": sum(t.n_emitted for t in traces) / max(1, len(steps)),
        "accepted_length_histogram": hist,
        "per_position_acceptance": [a / n if n else None for a, n in zip(pos_acc, pos_tried)],
        "c": c,
        "verify_cost": verify_cost,
        "draft_seconds": sum(s.draft_seconds for s in steps),
        "verify_seconds": sum(s.verify_seconds for s in steps),
        "predicted_speedup": leviathan_speedup(alpha, k, c),
        "predicted_speedup_with_verify_cost": leviathan_speedup(alpha, k, c, verify_cost),
        "expected_tokens_per_pass": expected_tokens_per_pass(alpha, k),
        # per rep, the drafts each step accepted: two stages that decode the same prompt greedily with the same k
        # must record the same steps (tests/test_build_data.py checks it against the policies stage)
        "n_accepted_per_step": [[s.n_accepted for s in t.steps] for t in traces],
    }


def sweep(ctx, cfg, domain: str, mode: str) -> dict:
    """k = 1..K against target-only, interleaved rep by rep; each rep uses the next public prompt of the domain."""
    tok, sampling, reps = ctx.target.tokenizer, cfg.modes[mode], cfg.reps[mode]
    prompts = public_prompts(domain, cfg.policy_prompt_start, reps)  # the prompt of each rep
    n = cfg.sweep_tokens
    base_times, first_times, per_k = [], [], {k: ([], []) for k in cfg.sweep_ks}
    greedy_equal = []
    warm = encode(tok, prompts[0], ctx.device)
    ctx.run_target(warm, 4, sampling, 0)  # warm-up: allocator, kernels, caches
    ctx.run_spec(ctx.default_draft, warm, 4, 2, sampling, 0, record=False)
    for rep in ctx.tqdm(range(reps), desc=f"sweep {domain}/{mode}", unit="rep", leave=False):
        ids = encode(tok, prompts[rep], ctx.device)
        seed = ctx.seed + rep
        seconds, reference = ctx.run_target(ids, n, sampling, seed)
        base_times.append(seconds)
        first_times.append(ctx.run_target(ids, 1, sampling, seed)[0])  # prefill + first token
        for k in cfg.sweep_ks:
            seconds, (tokens, trace) = ctx.run_spec(ctx.default_draft, ids, n, k, sampling, seed)
            per_k[k][0].append(seconds)
            per_k[k][1].append(trace)
            if mode == "greedy":
                greedy_equal.append(tokens.tolist() == reference.tolist())
    # One decoding step of the target, prefill excluded: (T(n) - T(1)) / (n - 1), median over reps.
    base_per_token = statistics.median([(t - f) / (n - 1) for t, f in zip(base_times, first_times)])
    return {
        "domain": domain, "mode": mode, "sampling": sampling, "new_tokens": n,
        "prompts": [p["id"] for p in prompts],
        "target_only": {"seconds": spread(base_times), "tokens_per_second": n / statistics.median(base_times),
                        "seconds_per_token": base_per_token, "prefill_plus_one_seconds": spread(first_times)},
        "spec": [summarize_spec(per_k[k][0], per_k[k][1], base_times, base_per_token, [n] * len(base_times), k)
                 for k in cfg.sweep_ks],
        "greedy_equal_all": all(greedy_equal) if greedy_equal else None,
        "greedy_runs_checked": len(greedy_equal),
    }


def run(ctx, cfg) -> dict:
    sweeps = [sweep(ctx, cfg, domain, mode) for domain in ("code", "prose") for mode in cfg.modes]
    return {"draft_variant": ctx.default_draft_name, "sweeps": sweeps}
