"""The fixed-k sweep (k = 1..8 against target-only) of the policies stage, summarized per domain.

The sweep runs inside the policies stage (policies_stage.py), on the matrix's prompts: the target-only run of
each prompt and its fixed-k run at the stage's k serve both the sweep and the policy comparison, so every
comparison is side by side in one process, interleaved prompt by prompt, on the same prompt and seed.
"""

from __future__ import annotations

import statistics

from specdec.theory import expected_tokens_per_pass, leviathan_speedup


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


def summarize_sweep(domain: str, sampling: dict, n: int, prompts: list[str], base_times: list[float],
                    first_times: list[float], runs: dict, greedy_equal: list[bool]) -> dict:
    """The sweep of one domain from the policies stage's runs: runs[k] = ([seconds per prompt], [trace per prompt]),
    base_times / first_times the prompts' target-only runs of n tokens and of one token."""
    # One decoding step of the target, prefill excluded: (T(n) - T(1)) / (n - 1), median over the prompts.
    base_per_token = statistics.median([(t - f) / (n - 1) for t, f in zip(base_times, first_times)])
    return {
        "domain": domain, "mode": "greedy", "sampling": sampling, "new_tokens": n, "prompts": prompts,
        "target_only": {"seconds": spread(base_times), "tokens_per_second": n / statistics.median(base_times),
                        "seconds_per_token": base_per_token, "prefill_plus_one_seconds": spread(first_times)},
        "spec": [summarize_spec(times, traces, base_times, base_per_token, [n] * len(base_times), k)
                 for k, (times, traces) in sorted(runs.items())],
        "greedy_equal_all": all(greedy_equal),
        "greedy_runs_checked": len(greedy_equal),
        "greedy_runs_equal": sum(greedy_equal),
    }
