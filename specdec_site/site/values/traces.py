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


def _tree_fact(name: str, digits: int | None = None) -> Callable:
    """A fact of the recorded tree step the Results page draws (pictures.tree_example): the same step as the picture."""
    from specdec_site.site.pictures import ORDINALS, tree_example, tree_example_facts

    def value(a):
        run, step = tree_example(a["traces"]) or (None, None)
        if run is None:  # no step took another branch than the draft's first choices (a small or --quick build)
            return "— (no such step in this build)"
        facts = tree_example_facts(run, step, escape=False)
        if name == "branch_rank":
            return ORDINALS.get(facts[name], f"{facts[name]}th")
        return fmt(facts[name], digits) if digits is not None else facts[name]
    return value


def _block_step_fact(which: str, name: str) -> Callable:
    """A fact of the two recorded block steps the Results page draws (pictures.block_examples): the step where block
    verification expects the most over the token rule ("best") and the one where it expects the least ("worst")."""
    from specdec_site.site.pictures import block_examples, block_step_facts

    def value(a):
        found = block_examples(a["traces"])
        if found is None:
            return "–"
        facts = block_step_facts(found[1] if which == "best" else found[2])
        if name == "first_ratio":
            return fmt(facts["ratios"][0])
        if name == "peak_weight":  # the running weight's highest point after the first draft
            return fmt(max(facts["weights"][1:], default=facts["weights"][0]))
        if name == "verdict":
            return "more" if facts["block"] > facts["token"] else "fewer" if facts["block"] < facts["token"] else "as many"
        return fmt(facts[name]) if isinstance(facts[name], float) else facts[name]
    return value


# The Results page's two teaching pictures: a tree step whose path leaves the draft's first choices, and two block
# steps (the rules' expected drafts kept on the same drafts).
EXAMPLES: dict[str, Callable] = {
    "tree_step_run": _tree_fact("run"),
    "tree_step_step": _tree_fact("step"),
    "tree_step_nodes": _tree_fact("nodes"),
    "tree_step_tree_kept": _tree_fact("tree_kept"),
    "tree_step_chain_kept": _tree_fact("chain_kept"),
    "tree_step_branch_token": _tree_fact("branch_token"),
    "tree_step_first_token": _tree_fact("first_token"),
    "tree_step_branch_rank": _tree_fact("branch_rank"),
    "tree_step_branch_q": _tree_fact("branch_q", 3),
    "tree_step_first_q": _tree_fact("first_q", 3),
    "block_step_best_step": _block_step_fact("best", "step"),
    "block_step_best_token": _block_step_fact("best", "token"),
    "block_step_best_block": _block_step_fact("best", "block"),
    "block_step_best_first_ratio": _block_step_fact("best", "first_ratio"),
    "block_step_best_peak_weight": _block_step_fact("best", "peak_weight"),
    "block_step_best_verdict": _block_step_fact("best", "verdict"),
    "block_step_worst_step": _block_step_fact("worst", "step"),
    "block_step_worst_token": _block_step_fact("worst", "token"),
    "block_step_worst_block": _block_step_fact("worst", "block"),
    "block_step_worst_first_ratio": _block_step_fact("worst", "first_ratio"),
    "block_step_worst_peak_weight": _block_step_fact("worst", "peak_weight"),
    "block_step_worst_verdict": _block_step_fact("worst", "verdict"),
    "block_step_run": lambda a: block_examples_run(a) or "–",
}


def block_examples_run(a) -> str | None:
    from specdec_site.site.pictures import block_examples

    found = block_examples(a["traces"])
    return found[0]["id"] if found else None
