"""The traces stage's values: the recorded runs the Step Visualizer shows (how many, of which kind, their k), their
greedy equality with the target's own output, and the acceptance over the sampled traces' steps.

From the traces stage's artifact ("runs", each with its trace's steps: specdec.trace) and, for the count of greedy
runs that diverged, every greedy real-pair run of the build (the policies and trees stages' too).
"""

from __future__ import annotations

from collections.abc import Callable

from specdec_site.acceptance import expected_from_beta, tested_acceptance_of_steps
from specdec_site.policy_variants import HF_VARIANTS
from specdec_site.site.figures import chain_runs
from specdec_site.site.values.common import fmt


def _sampled_traces_acceptance(which: str) -> Callable:
    """Over the sampled traces' steps: E[β] estimated from p and q, or the tested acceptance â of the same steps
    (specdec_site.acceptance)."""
    def value(a):
        steps = [s for r in chain_runs(a["traces"]) if r["mode"] == "sampled" for s in r["trace"]["steps"]]
        estimate = expected_from_beta(steps) if which == "beta" else tested_acceptance_of_steps(steps)
        return "–" if estimate is None else fmt(estimate)
    return value


# The sampled traces' acceptance two ways, quoted beside the sweep's theory (the Benchmark, in page order).
SAMPLED_ACCEPTANCE: dict[str, Callable] = {
    "traces_sampled_beta": _sampled_traces_acceptance("beta"),
    "traces_sampled_tested": _sampled_traces_acceptance("alpha_hat"),
}


def _trace_greedy_equal(a):
    runs = [r for r in a["traces"]["runs"] if r["mode"] == "greedy"]
    return f"{sum(bool(r['equals_target_greedy']) for r in runs)} of {len(runs)}"


def _greedy_runs_diverged(a):
    """How many of the build's distinct greedy real-pair runs differed from the target's own greedy output, "D of
    N": the traces, the sweep's runs and every policy and drafter's run (HF's runs are not this decoder's). A sweep's
    run at the fixed policy's k is that policy's own run of the prompt (the stage shares it), so it is counted once,
    with the policy's runs."""
    checks = [bool(r["equals_target_greedy"]) for r in a["traces"]["runs"] if r["mode"] == "greedy"]
    fixed_k = a["policies"]["metadata"]["config"]["fixed_k"]
    for sweep in a["policies"]["sweeps"]:
        shared = [r for r in a["policies"]["domains"][sweep["domain"]]["rows"] if r["prompt"] in sweep["prompts"]
                  and "fixed" in r["variants"]] if any(s["k"] == fixed_k for s in sweep["spec"]) else []
        # the shared runs' verdicts are the fixed policy's, counted below: the sweep's own are the rest
        unequal = sweep["greedy_runs_checked"] - sweep["greedy_runs_equal"]
        unequal -= sum(not r["variants"]["fixed"]["same_output"] for r in shared)
        distinct = sweep["greedy_runs_checked"] - len(shared)
        checks += [True] * (distinct - unequal) + [False] * unequal
    checks += [v["same_output"] for d in a["policies"]["domains"].values() for r in d["rows"]
               for name, v in r["variants"].items() if name not in HF_VARIANTS]
    checks += [v["same_output"] for d in a["trees"]["domains"].values() for r in d["rows"] for v in r["greedy"].values()]
    return f"{len(checks) - sum(checks)} of {len(checks)}"


def _fixed_trace_k(a):
    return next(r["trace"]["k"] for r in chain_runs(a["traces"]) if r.get("policy", "fixed") == "fixed")


# The recorded runs: their greedy equality, the fixed-k traces' k, how many runs (of trees, of block verification),
# and the tree traces' nodes per step.
TRACES: dict[str, Callable] = {
    "trace_greedy_equal": _trace_greedy_equal,
    "greedy_runs_diverged": _greedy_runs_diverged,
    "trace_k": _fixed_trace_k,
    "trace_runs": lambda a: len(a["traces"]["runs"]),
    "trace_tree_runs": lambda a: sum(r["trace"].get("drafter") == "tree" for r in a["traces"]["runs"]),
    "trace_block_runs": lambda a: sum(r["trace"].get("verify") == "block" for r in a["traces"]["runs"]),
    "trace_tree_nodes": lambda a: next(r["trace"]["steps"][0]["k"] for r in a["traces"]["runs"]
                                       if r["trace"].get("drafter") == "tree"),
}
