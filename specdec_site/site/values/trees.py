"""The trees stage's values: token trees against the best chain, measured (tokens per pass and speedup over the
chain, per set) and modelled (the acceptance by rank fitted on the design prompts, the cost curves of a pass of the
target and the draft, the shapes the model chooses for this CPU and for an H200's roofline), with the Trees section's
tables (tree_tables).

From the trees stage's artifact (trees_stage.py: "domains" with each mode's summary, "choice", "design",
"cost_curves", "gpu_like_curves", "by_set"). The per-set rows are made for each set the stage runs
(config.FULL.tree_prompts: a set added there gets its rows with no edit here).
"""

from __future__ import annotations

from collections.abc import Callable

from specdec_site.cost_curve import H200
from specdec_site.engine.config import FULL
from specdec_site.public_prompts import LABELS
from specdec_site.site.values.common import NotRecorded, ci, fmt, per_set, verdict


def _tree_prediction(t: dict, variant: str, curves: dict) -> dict:
    """The cost model's tokens per pass and per-step speedup of a variant's shape on the given cost curves (this
    CPU's, or the H200 roofline's), with the acceptance by rank fitted on the design prompts."""
    from specdec.theory import tree_expected_accepted
    from specdec_site.cost_curve import tree_cost

    paths = t["choice"][variant]["paths"]
    tokens = 1.0 + tree_expected_accepted(paths, t["design"]["accept_by_rank"])
    return {"tokens_per_pass": tokens, "speedup": tokens / tree_cost(paths, curves["target"], curves["draft"])}


def _tree_entry(domain: str, mode: str, variant: str, what: str) -> Callable:
    return lambda a: a["trees"]["domains"][domain]["summary"][mode][variant][what]


def _pass_cost(a, role: str, rows: int) -> float:
    """A pass of `rows` rows over a one-row pass, measured (between measured row counts: interpolated)."""
    from specdec_site.cost_curve import interpolate

    curve = a["trees"]["cost_curves"][role]
    return interpolate(curve, rows) / curve["seconds"][0]


def _cost_ratio(role: str, rows: int) -> Callable:
    return lambda a: fmt(_pass_cost(a, role, rows))


def _tree_median(domain: str, mode: str, variant: str, measure: str) -> Callable:
    return lambda a: fmt(_tree_entry(domain, mode, variant, measure)(a)["median"])


def _tree_ci(domain: str, mode: str, variant: str, measure: str) -> Callable:
    return lambda a: ci(_tree_entry(domain, mode, variant, measure)(a))


def _best_chain_measured(a) -> str:
    """The tree for this CPU against the best chain measured on code, greedy: the fastest of the trees stage's chains
    (the cost model's chain, the adaptive chain) and the sweep's best fixed k, each named, and whether the tree's
    median speedup is above or below it (the trees section compares against the cost model's chain: this says
    which chain is which)."""
    from specdec_site.site.values.sweep import sweep_peaks

    summary = a["trees"]["domains"]["code"]["summary"]["greedy"]
    chains = {"the cost model's chain": summary["chain"]["speedup"]["median"],
              "the adaptive chain": summary["adaptive"]["speedup"]["median"]}
    peak = sweep_peaks(a).get("code")
    if peak:
        chains[f"the sweep's fixed k = {peak['k']}"] = peak["speedup"]
    best = max(chains, key=chains.get)
    tree = summary["tree"]["speedup"]["median"]
    side = "below" if tree < chains[best] else "above"
    others = [f"{name} {fmt(x)}×" for name, x in chains.items() if name != best]
    return (f"the tree for this CPU ran at {fmt(tree)}×, {side} the best chain measured, {best} at "
            f"{fmt(chains[best])}× (" + ", ".join(others) + ")")


def _tree_verdict(domain: str, mode: str, variant: str) -> Callable:
    return lambda a: verdict(_tree_entry(domain, mode, variant, "over_chain")(a))


def _tpp_over_chain_rows(d: str) -> dict[str, Callable]:
    """A set's tokens per pass of the H200 roofline's tree ÷ the chain's (greedy), with its interval."""
    return {
        f"tree_{d}_greedy_tree_gpu_like_tpp_over_chain": _tree_median(d, "greedy", "tree_gpu_like", "tokens_per_pass_over_chain"),
        f"tree_{d}_greedy_tree_gpu_like_tpp_over_chain_ci": _tree_ci(d, "greedy", "tree_gpu_like", "tokens_per_pass_over_chain"),
    }


def _over_chain_rows(d: str) -> dict[str, Callable]:
    """A set's speedup of the tree for this CPU ÷ the chain's (greedy), with its interval."""
    return {
        f"tree_{d}_greedy_tree_over_chain": _tree_median(d, "greedy", "tree", "over_chain"),
        f"tree_{d}_greedy_tree_over_chain_ci": _tree_ci(d, "greedy", "tree", "over_chain"),
    }


def stage_sets() -> tuple[str, ...]:
    """The public prompt sets the trees stage runs (config.FULL.tree_prompts; the narrative set runs in the policies
    stage only), read at call time."""
    return tuple(FULL.tree_prompts)


def tree_values() -> dict[str, Callable]:
    """Every value the Benchmark's Trees section quotes, spelled out (the measured medians it quotes, each with its
    interval; the figures and the table show the rest): the setup, the model, code's measured rows, each set's
    ratios over the chain (stage_sets) and the model fitted per set."""
    sets = stage_sets()
    return {
        "tree_new_tokens": lambda a: a["trees"]["new_tokens"],
        "tree_prompts_per_set": lambda a: ", ".join(f"{len(d['prompts'])} {LABELS.get(name, name)}" for name, d in
                                                    a["trees"]["domains"].items()),
        "tree_sampled_temperature": lambda a: a["trees"]["sampled_temperature"],
        "tree_design_tokens": lambda a: a["trees"]["design"]["tokens"],
        "tree_design_prompts": lambda a: len(a["trees"]["design"]["prompts"]),
        "tree_accept_rank0": lambda a: f"{100 * a['trees']['design']['accept_by_rank'][0]:.0f}%",
        "tree_accept_rank1": lambda a: f"{100 * a['trees']['design']['accept_by_rank'][1]:.0f}%",
        "tree_accept_top2": lambda a: f"{100 * sum(a['trees']['design']['accept_by_rank'][:2]):.0f}%",
        "tree_cost_prefix": lambda a: a["trees"]["cost_curves"]["target"]["n_prefix"],
        "tree_cost_reps": lambda a: a["trees"]["cost_curves"]["target"]["reps"],
        "tree_target_ms": lambda a: f"{1e3 * a['trees']['cost_curves']['target']['seconds'][0]:.0f}",
        "tree_draft_ms": lambda a: f"{1e3 * a['trees']['cost_curves']['draft']['seconds'][0]:.0f}",
        "tree_knee_rows": lambda a: f"{a['trees']['gpu_like_curves']['target']['knee_rows']:.0f}",
        "tree_dynamic_width": lambda a: a["trees"]["dynamic_width"],
        "tree_h200_bandwidth": lambda a: f"{H200['bandwidth'] / 1e12:g} TB/s",
        "tree_h200_flops": lambda a: f"{H200['flops'] / 1e12:g} TFLOP/s",
        "tree_cost_target_8": _cost_ratio("target", 8),
        "tree_cost_target_32": _cost_ratio("target", 32),
        "tree_cost_target_64": _cost_ratio("target", 64),
        "tree_cost_draft_8": _cost_ratio("draft", 8),
        "tree_cost_draft_32": _cost_ratio("draft", 32),
        "tree_cost_draft_64": _cost_ratio("draft", 64),
        # eight one-row draft passes over one pass of eight rows: what drafting a depth in one pass saves
        "tree_draft_one_pass_8": lambda a: fmt(8 / _pass_cost(a, "draft", 8), 1),
        "tree_chain_depth": lambda a: a["trees"]["choice"]["chain"]["depth"],
        "tree_tree_nodes": lambda a: a["trees"]["choice"]["tree"]["nodes"],
        "tree_tree_depth": lambda a: a["trees"]["choice"]["tree"]["depth"],
        "tree_gpu_tree_nodes": lambda a: a["trees"]["choice"]["tree_gpu_like"]["nodes"],
        "tree_gpu_tree_depth": lambda a: a["trees"]["choice"]["tree_gpu_like"]["depth"],
        "tree_gpu_tree_pred_speedup": lambda a: fmt(a["trees"]["choice"]["tree_gpu_like"]["speedup"]),
        # a tree of depth D emits at most D + 1 tokens per pass, a chain of k at most k + 1
        "tree_gpu_tree_max_tpp": lambda a: a["trees"]["choice"]["tree_gpu_like"]["depth"] + 1,
        "tree_chain_max_tpp": lambda a: a["trees"]["choice"]["chain"]["depth"] + 1,
        # the H200-roofline tree costed on this CPU's curve
        "tree_gpu_tree_pred_speedup_here": lambda a: fmt(
            _tree_prediction(a["trees"], "tree_gpu_like", a["trees"]["cost_curves"])["speedup"]),
        "tree_pred_over_chain": lambda a: fmt(a["trees"]["choice"]["tree"]["speedup"] / a["trees"]["choice"]["chain"]["speedup"]),
        "tree_code_best_chain_measured": _best_chain_measured,
        "tree_code_greedy_chain_tpp": _tree_median("code", "greedy", "chain", "tokens_per_target_pass"),
        "tree_code_greedy_chain_tpp_ci": _tree_ci("code", "greedy", "chain", "tokens_per_target_pass"),
        "tree_code_greedy_adaptive_tpp": _tree_median("code", "greedy", "adaptive", "tokens_per_target_pass"),
        "tree_code_greedy_adaptive_tpp_ci": _tree_ci("code", "greedy", "adaptive", "tokens_per_target_pass"),
        "tree_code_greedy_dynamic_tree_tpp": _tree_median("code", "greedy", "dynamic_tree", "tokens_per_target_pass"),
        "tree_code_greedy_dynamic_tree_tpp_ci": _tree_ci("code", "greedy", "dynamic_tree", "tokens_per_target_pass"),
        "tree_code_greedy_dynamic_tree_over_chain": _tree_median("code", "greedy", "dynamic_tree", "over_chain"),
        "tree_code_greedy_dynamic_tree_over_chain_ci": _tree_ci("code", "greedy", "dynamic_tree", "over_chain"),
        "tree_code_greedy_tree_gpu_like_tpp": _tree_median("code", "greedy", "tree_gpu_like", "tokens_per_target_pass"),
        "tree_code_greedy_tree_gpu_like_tpp_ci": _tree_ci("code", "greedy", "tree_gpu_like", "tokens_per_target_pass"),
        "tree_code_greedy_tree_gpu_like_over_chain": _tree_median("code", "greedy", "tree_gpu_like", "over_chain"),
        "tree_code_greedy_tree_gpu_like_over_chain_ci": _tree_ci("code", "greedy", "tree_gpu_like", "over_chain"),
        "tree_code_sampled_tree_gpu_like_tpp_over_chain": _tree_median("code", "sampled", "tree_gpu_like", "tokens_per_pass_over_chain"),
        "tree_code_sampled_tree_gpu_like_tpp_over_chain_ci": _tree_ci("code", "sampled", "tree_gpu_like", "tokens_per_pass_over_chain"),
        # each set the stage runs: the H200 tree's tokens per pass ÷ the chain's, then the CPU tree's speedup ÷ the chain's
        **per_set(sets, _tpp_over_chain_rows),
        **per_set(sets, _over_chain_rows),
        "tree_code_greedy_tree_over_chain_verdict": _tree_verdict("code", "greedy", "tree"),
        "tree_code_greedy_tree_gpu_like_over_chain_verdict": _tree_verdict("code", "greedy", "tree_gpu_like"),
        # the cost model fitted per set on held-out prompts (trees_stage.design_for_set): recorded, not run
        "tree_set_prompts": lambda a: len(_by_set(a, "code")["prompts"]),
        "tree_set_code_first": lambda a: _by_set(a, "code")["prompts"][0],
        "tree_set_code_rank0": lambda a: f"{100 * _by_set(a, 'code')['accept_by_rank'][0]:.0f}%",
        "tree_set_code_beyond_rank0": lambda a: f"{100 * sum(_by_set(a, 'code')['accept_by_rank'][1:]):.0f}%",
        "tree_set_code_tree_gpu_tpp": lambda a: fmt(_by_set(a, "code")["choice"]["tree_gpu_like"]["tokens_per_pass"]),
        "tree_set_code_chain_tpp": lambda a: fmt(_by_set(a, "code")["choice"]["chain"]["tokens_per_pass"]),
        "tree_set_code_chain_k": lambda a: _by_set(a, "code")["choice"]["chain"]["depth"],
        "tree_set_code_ratio": lambda a: f"{fmt(_set_ratio(_by_set(a, 'code')))}×",
    }


def _by_set(a, domain: str) -> dict:
    """The trees stage's cost model fitted on one set's held-out prompts (NotRecorded for a run from before it)."""
    by_set = a["trees"].get("by_set")
    if by_set is None or domain not in by_set:
        raise NotRecorded(f"trees stage's model per set, {domain}")
    return by_set[domain]


def _set_ratio(entry: dict) -> float:
    """The model's tokens per pass of the roofline's tree over this device's best chain's, fitted on one set (the
    measured bar's ratio, predicted)."""
    return entry["choice"]["tree_gpu_like"]["tokens_per_pass"] / entry["choice"]["chain"]["tokens_per_pass"]


def tree_set_table(t: dict) -> dict:
    """The cost model fitted per set on held-out prompts: its acceptance, and the chain and trees it would choose."""
    def shape(c: dict) -> str:
        return f"{fmt(c['tokens_per_pass'])} ({c['nodes']} nodes, depth {c['depth']})"

    columns = ["set (held-out prompts)", "draft's top-1 · top-2", "best chain here: tokens per pass", "tree here",
               "tree for an H200", "H200 tree ÷ chain here"]
    if "by_set" not in t:
        return {"tree_by_set": {"columns": columns, "rows": [["not recorded by this run"] + [""] * 5]}}
    rows = [[f"{domain} ({e['prompts'][0]} …, {len(e['prompts'])})",
             f"{100 * e['accept_by_rank'][0]:.0f}% · {100 * sum(e['accept_by_rank'][:2]):.0f}%",
             f"{fmt(e['choice']['chain']['tokens_per_pass'])} (k = {e['choice']['chain']['depth']})",
             shape(e["choice"]["tree"]), shape(e["choice"]["tree_gpu_like"]), f"{fmt(_set_ratio(e))}×"]
            for domain, e in t["by_set"].items()]
    return {"tree_by_set": {"columns": columns, "rows": rows}}


def tree_tables(artifacts: dict) -> dict:
    """The Trees section's table: each static shape's predicted tokens per pass and per-step speedup (this CPU's
    curve, and the H200 roofline's) beside what was measured here, greedy, per domain (medians)."""
    t = artifacts["trees"]
    names = {"chain": "the cost model's chain", "tree": "tree for this CPU", "tree_gpu_like": "tree for an H200"}
    rows = []
    for variant, name in names.items():
        c = t["choice"][variant]
        here = _tree_prediction(t, variant, t["cost_curves"])
        gpu = _tree_prediction(t, variant, t["gpu_like_curves"])
        measured = [t["domains"][d]["summary"]["greedy"][variant] for d in t["domains"]]
        rows.append([f"{name} ({c['nodes']} nodes, depth {c['depth']})", fmt(here["tokens_per_pass"]),
                     " · ".join(fmt(m["tokens_per_target_pass"]["median"]) for m in measured),
                     fmt(here["speedup"]), " · ".join(fmt(m["speedup"]["median"]) for m in measured),
                     fmt(gpu["speedup"])])
    domains = " · ".join(t["domains"])
    return {**tree_set_table(t), "tree_model": {"columns": ["variant", "tokens per pass: model", f"measured ({domains})",
                                       "speedup here: model (per step)", f"measured (whole runs; {domains})",
                                       "H200 roofline: model"],
                           "rows": rows}}
