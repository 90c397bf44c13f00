"""The policies stage's values: the length policies and drafters against target-only, Hugging Face's assisted
generation and the oracle draft length, per public prompt set, over the matrix's prompts (polm_) and over the core
set (pol_); the stage's setup; the HF comparison's count.

From the policies stage's artifact (policies_stage.py: "domains", each with its rows, its "summary" and
"sampled_summary"; "variants"; "hf") and the summary over the matrix's rows that compute_values makes once
(matrix_summaries). Each public prompt set's rows are made by one function, set_rows, for every set of
public_prompts.SOURCES.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from specdec_site.policy_variants import HF_VARIANTS, summarize
from specdec_site.site.figures import pick
from specdec_site.site.values.common import ci, fmt, per_set, verdict
from specdec_site.site.values.provenance import _float_draft
from specdec_site.site.values.sweep import _sweep


def _summary(a, domain: str, which: str) -> dict:
    """The stage's own "summary" or "sampled_summary" of a domain, or compute_values' "matrix" one."""
    if which == "matrix":
        return a.matrix_summaries[domain]
    return a["policies"]["domains"][domain][which]


def _pol(domain: str, variant: str, what: Callable, summary: str = "summary"):
    """A metric of one variant in the policies stage's greedy "summary" (all the prompts that ran it), its
    "sampled_summary", or the "matrix" summary (the matrix's prompts only)."""
    return lambda a: what(_summary(a, domain, summary)[variant])


def _median_or_ci(a, values: list[float], what: str) -> str:
    """The median of per-prompt values (what="median") or its bootstrap 95% interval ("ci"), with the policies
    stage's seed, formatted as the stage's own summaries are."""
    from specdec.theory import bootstrap_median_ci

    if what == "median":
        return fmt(statistics.median(values))
    return ci({"ci95": bootstrap_median_ci(values, seed=a["policies"]["metadata"]["seed"]), "prompts": len(values)})


# how a policy value is read from a summary entry; M[...] in set_rows below
POLICY_METRICS = M = {
    "median": lambda e: fmt(e["median"]),  # speedup over target-only, median over the prompts
    "ci": ci,  # its bootstrap 95% interval
    "over_hf": lambda e: fmt(e["over_hf_default"]["median"]),  # ÷ HF assisted default, same draft
    "over_hf_ci": lambda e: ci(e["over_hf_default"]),
    "over_hf_constant": lambda e: fmt(e["over_hf_constant"]["median"]),  # ÷ HF assisted at constant k, same draft
    "over_hf_constant_ci": lambda e: ci(e["over_hf_constant"]),
    "over_oracle": lambda e: fmt(e["measured_over_oracle"]["median"]),  # ÷ the oracle draft length's speedup
}


def _drafter_name(a, drafter: str) -> str:
    """How a page names a policies-stage drafter: "int8" is the default draft model (int8, or the float draft when
    the build had no int8 copy: the artifact's draft_variant says which), "fp32" the unquantized draft."""
    default = a["policies"]["draft_variant"]
    return {"int8": f"the {default} draft model", "fp32": f"the {_float_draft(a)} draft model",
            "ngram": "the n-gram drafter", "hybrid": f"the hybrid drafter (n-gram, else the {default} draft model)"}[drafter]


def _best_variant(a, domain: str) -> dict:
    """The domain's best drafter (chosen by the build on the matrix's prompts): its variant entry."""
    return a["policies"]["variants"][a["policies"]["domains"][domain]["best_drafter"]]


def _best_drafter(domain: str, what: Callable, summary: str = "summary"):
    return lambda a: what(_summary(a, domain, summary)[a["policies"]["domains"][domain]["best_drafter"]])


def _core_ratio(domain: str, variant: str, over: str | None, what: str):
    """Median (what="median"), 95% interval ("ci") or count ("prompts") over the core set's prompts that ran both
    variants of the variant's speedup, or of its speedup ÷ the variant `over`'s (same prompt, same target-only run)."""

    def value(a):
        d = a["policies"]["domains"][domain]
        rows = [r for r in d["rows"] if {variant, over or variant} <= r["variants"].keys()]
        ratios = [r["variants"][variant]["speedup"] / (r["variants"][over]["speedup"] if over else 1.0) for r in rows]
        return len(ratios) if what == "prompts" else _median_or_ci(a, ratios, what)
    return value


def over_capped_oracle(run: dict, k: int) -> float:
    """A recorded run's measured ÷ oracle time with the oracle held to the run's cap k: the stage's oracle
    time with its steps (eq. 13) re-costed as split_at_cap's, at the same recorded costs."""
    from specdec.theory import oracle_seconds, split_at_cap

    o = run["oracle"]
    if o["verify_intercept"] is None:  # no step after the prefill: nothing was re-costed
        return o["seconds"] / run["seconds"]

    def verify(n):
        return o["verify_intercept"] + o["verify_slope"] * n

    d = o["draft_seconds_per_token"]
    capped = (o["seconds"] - oracle_seconds(o["lengths"], d, verify)
              + oracle_seconds(split_at_cap(o["lengths"], k), d, verify))
    return capped / run["seconds"]


def _capped(domain: str, variant: str, what: str):
    """Over the core set's prompts, for a specdec variant: the median or 95% interval of measured ÷ the oracle
    held to its cap, or how many of the oracle's steps draft more than the cap ("past_cap": "n of the N")."""

    def value(a):
        k = a["policies"]["variants"][variant]["k"]
        runs = [r["variants"][variant] for r in a["policies"]["domains"][domain]["rows"] if variant in r["variants"]]
        if what == "past_cap":
            lengths = [n for run in runs for n in run["oracle"]["lengths"]]
            return f"{sum(n > k for n in lengths)} of the {len(lengths)}"
        return _median_or_ci(a, [over_capped_oracle(run, k) for run in runs], what)
    return value




def _best_oracle_speedup(domain: str, what: str):
    """Over the core set's prompts, the oracle draft length's speedup (eq. 13) with the domain's best drafter,
    each from that run's own recorded steps and costs: the median or its 95% interval. No length policy for
    that drafter can pass it."""
    return lambda a: _median_or_ci(a, _best_oracle_speedups(a, domain), what)


def _hf_verdicts(variant: str) -> Callable:
    """specdec's variant ÷ Hugging Face's defaults (same draft), each set's verdict on its 95% interval, the sets that
    share one named together in the sets' order: "ahead on code and technical prose; neither ahead nor behind on
    narrative text"."""
    from specdec_site.public_prompts import LABELS
    from specdec_site.site.values.common import listed

    def grouped(a) -> str:
        by = {}
        for d in a["policies"]["domains"]:
            by.setdefault(verdict(_summary(a, d, "summary")[variant]["over_hf_default"]), []).append(LABELS.get(d, d))
        return "; ".join(f"{word} on {listed(names)}" for word, names in by.items())
    return grouped


def _best_oracle_speedups(a, domain: str) -> list[float]:
    best = a["policies"]["domains"][domain]["best_drafter"]
    return [r["variants"][best]["oracle_speedup"] for r in a["policies"]["domains"][domain]["rows"]
            if best in r["variants"]]


def _matrix_rows(a, domain: str) -> list[dict]:
    return [r for r in a["policies"]["domains"][domain]["rows"] if r["set"] == "matrix"]


def matrix_summaries(a) -> dict:
    """Each domain's summary over the matrix's rows alone (the "matrix" summary of polm_): the same function and
    seed as the stage's own summaries, so that each row of the matrix table covers the same prompts."""
    seed = a["policies"]["metadata"]["seed"]
    return {domain: summarize(_matrix_rows(a, domain), seed) for domain in a["policies"]["domains"]}


def _skipped(a, domain: str) -> str:
    """The set's entries passed over for having no prompt text (by index), or "none"."""
    skipped = a["policies"]["domains"][domain]["skipped_indices"]
    return ", ".join(f"#{i}" for i in skipped) if skipped else "none"


def _pol_runs_per_prompt(prompt_set: str):
    """Decoding runs per prompt of a set ("matrix" or "core") in the policies stage: target-only and every
    variant, greedy and sampled, and on the matrix's prompts the k sweep's own runs (every k but the fixed
    variant's, whose run it shares, and a one-token target run)."""
    def value(a):
        row = next(r for r in a["policies"]["domains"]["code"]["rows"] if r["set"] == prompt_set)
        sweep = pick(a["policies"]["sweeps"], "code", "greedy")
        # every k but the fixed variant's (its run is shared), plus the one-token target run
        sweep_runs = len(sweep["spec"]) if row["prompt"] in sweep["prompts"] else 0
        return 1 + len(row["variants"]) + len(row["sampled"]["variants"]) + sweep_runs
    return value


def _pol_same_output(a):
    runs = [v["same_output"] for d in a["policies"]["domains"].values() for r in d["rows"]
            for name, v in r["variants"].items() if name not in HF_VARIANTS]
    return f"{sum(runs)} of {len(runs)}"


def _hf_same_output(a):
    runs = [r["variants"][h]["same_output"] for d in a["policies"]["domains"].values() for r in d["rows"]
            for h in HF_VARIANTS if h in r["variants"]]
    return f"{sum(runs)} of {len(runs)}"


def _adaptive_ahead_of_hf(a) -> str:
    """On how many prompts of the HF comparison (figures.fig_hf_ratios) the adaptive run beat HF's defaults."""
    rows = [r for d in a["policies"]["domains"].values() for r in d["rows"]
            if "adaptive" in r["variants"] and "hf_default" in r["variants"]]
    ahead = sum(r["variants"]["adaptive"]["speedup"] > r["variants"]["hf_default"]["speedup"] for r in rows)
    return f"{ahead} of {len(rows)}"


# The HF comparison figure's finding, quoted beside the sweep's (the Benchmark's figures, in page order).
HF_COMPARISON: dict[str, Callable] = {
    "hf_adaptive_ahead_prompts": _adaptive_ahead_of_hf,
}


def set_rows(d: str) -> dict[str, Callable]:
    """One public prompt set's rows: its source and prompts, then per variant (HF's, then this decoder's) polm_ over
    the matrix's prompts beside pol_ over the core set (the core variants: hf_default, fixed, adaptive), then the
    sampled mode, the best drafter, the core set's paired ratios and the oracle held to the adaptive policy's cap.
    The rule these follow is checked by tests/test_build_data.py."""
    return {
        # the set: its size, source, licence, first and last prompt
        f"pol_{d}_prompts": lambda a: len(a["policies"]["domains"][d]["rows"]),
        f"pol_{d}_source": lambda a: a["policies"]["domains"][d]["source"]["name"],
        f"pol_{d}_licence": lambda a: a["policies"]["domains"][d]["source"]["licence"],
        f"pol_{d}_first": lambda a: a["policies"]["domains"][d]["rows"][0]["prompt"],
        f"pol_{d}_last": lambda a: a["policies"]["domains"][d]["rows"][-1]["prompt"],
        # Hugging Face's assisted generation: its defaults, constant k, given the float draft, prompt lookup
        f"polm_{d}_hf_default_median": _pol(d, "hf_default", M["median"], "matrix"),
        f"pol_{d}_hf_default_median": _pol(d, "hf_default", M["median"]),
        f"polm_{d}_hf_default_ci": _pol(d, "hf_default", M["ci"], "matrix"),
        f"pol_{d}_hf_default_ci": _pol(d, "hf_default", M["ci"]),
        f"polm_{d}_hf_constant_median": _pol(d, "hf_constant", M["median"], "matrix"),
        f"polm_{d}_hf_constant_ci": _pol(d, "hf_constant", M["ci"], "matrix"),
        f"polm_{d}_hf_default_fp32_median": _pol(d, "hf_default_fp32", M["median"], "matrix"),
        f"polm_{d}_hf_default_fp32_ci": _pol(d, "hf_default_fp32", M["ci"], "matrix"),
        f"polm_{d}_hf_prompt_lookup_median": _pol(d, "hf_prompt_lookup", M["median"], "matrix"),
        f"polm_{d}_hf_prompt_lookup_ci": _pol(d, "hf_prompt_lookup", M["ci"], "matrix"),
        # this decoder's variants: fixed k, the confidence stop, the heuristic, the adaptive policy (with the default
        # draft, the float draft, the n-gram and hybrid drafters); ÷ HF only where HF was given the same draft
        f"polm_{d}_fixed_median": _pol(d, "fixed", M["median"], "matrix"),
        f"pol_{d}_fixed_median": _pol(d, "fixed", M["median"]),
        f"polm_{d}_fixed_ci": _pol(d, "fixed", M["ci"], "matrix"),
        f"pol_{d}_fixed_ci": _pol(d, "fixed", M["ci"]),
        f"polm_{d}_fixed_over_oracle": _pol(d, "fixed", M["over_oracle"], "matrix"),
        f"pol_{d}_fixed_over_oracle": _pol(d, "fixed", M["over_oracle"]),
        f"polm_{d}_fixed_over_hf": _pol(d, "fixed", M["over_hf"], "matrix"),
        f"pol_{d}_fixed_over_hf": _pol(d, "fixed", M["over_hf"]),
        f"polm_{d}_fixed_over_hf_ci": _pol(d, "fixed", M["over_hf_ci"], "matrix"),
        f"pol_{d}_fixed_over_hf_ci": _pol(d, "fixed", M["over_hf_ci"]),
        f"polm_{d}_fixed_over_hf_constant": _pol(d, "fixed", M["over_hf_constant"], "matrix"),
        f"polm_{d}_fixed_over_hf_constant_ci": _pol(d, "fixed", M["over_hf_constant_ci"], "matrix"),
        f"polm_{d}_confidence_median": _pol(d, "confidence", M["median"], "matrix"),
        f"polm_{d}_confidence_ci": _pol(d, "confidence", M["ci"], "matrix"),
        f"polm_{d}_confidence_over_oracle": _pol(d, "confidence", M["over_oracle"], "matrix"),
        f"polm_{d}_confidence_over_hf": _pol(d, "confidence", M["over_hf"], "matrix"),
        f"polm_{d}_confidence_over_hf_ci": _pol(d, "confidence", M["over_hf_ci"], "matrix"),
        f"polm_{d}_heuristic_median": _pol(d, "heuristic", M["median"], "matrix"),
        f"polm_{d}_heuristic_ci": _pol(d, "heuristic", M["ci"], "matrix"),
        f"polm_{d}_heuristic_over_oracle": _pol(d, "heuristic", M["over_oracle"], "matrix"),
        f"polm_{d}_heuristic_over_hf": _pol(d, "heuristic", M["over_hf"], "matrix"),
        f"polm_{d}_heuristic_over_hf_ci": _pol(d, "heuristic", M["over_hf_ci"], "matrix"),
        f"polm_{d}_adaptive_median": _pol(d, "adaptive", M["median"], "matrix"),
        f"pol_{d}_adaptive_median": _pol(d, "adaptive", M["median"]),
        f"polm_{d}_adaptive_ci": _pol(d, "adaptive", M["ci"], "matrix"),
        f"pol_{d}_adaptive_ci": _pol(d, "adaptive", M["ci"]),
        f"polm_{d}_adaptive_over_oracle": _pol(d, "adaptive", M["over_oracle"], "matrix"),
        f"pol_{d}_adaptive_over_oracle": _pol(d, "adaptive", M["over_oracle"]),
        f"polm_{d}_adaptive_over_hf": _pol(d, "adaptive", M["over_hf"], "matrix"),
        f"pol_{d}_adaptive_over_hf": _pol(d, "adaptive", M["over_hf"]),
        f"polm_{d}_adaptive_over_hf_ci": _pol(d, "adaptive", M["over_hf_ci"], "matrix"),
        f"pol_{d}_adaptive_over_hf_ci": _pol(d, "adaptive", M["over_hf_ci"]),
        f"polm_{d}_adaptive_fp32_median": _pol(d, "adaptive_fp32", M["median"], "matrix"),
        f"polm_{d}_adaptive_fp32_ci": _pol(d, "adaptive_fp32", M["ci"], "matrix"),
        f"polm_{d}_adaptive_fp32_over_oracle": _pol(d, "adaptive_fp32", M["over_oracle"], "matrix"),
        f"polm_{d}_adaptive_fp32_over_hf": _pol(d, "adaptive_fp32", M["over_hf"], "matrix"),
        f"polm_{d}_adaptive_fp32_over_hf_ci": _pol(d, "adaptive_fp32", M["over_hf_ci"], "matrix"),
        f"polm_{d}_adaptive_ngram_median": _pol(d, "adaptive_ngram", M["median"], "matrix"),
        f"polm_{d}_adaptive_ngram_ci": _pol(d, "adaptive_ngram", M["ci"], "matrix"),
        f"polm_{d}_adaptive_ngram_over_oracle": _pol(d, "adaptive_ngram", M["over_oracle"], "matrix"),
        f"polm_{d}_adaptive_hybrid_median": _pol(d, "adaptive_hybrid", M["median"], "matrix"),
        f"polm_{d}_adaptive_hybrid_ci": _pol(d, "adaptive_hybrid", M["ci"], "matrix"),
        f"polm_{d}_adaptive_hybrid_over_oracle": _pol(d, "adaptive_hybrid", M["over_oracle"], "matrix"),
        # the sampled mode (core set), and the best drafter chosen on the matrix's prompts
        f"pol_{d}_sampled_adaptive_median": _pol(d, "adaptive", M["median"], "sampled_summary"),
        f"pol_{d}_sampled_best_median": _best_drafter(d, M["median"], "sampled_summary"),
        f"pol_{d}_sampled_adaptive_ci": _pol(d, "adaptive", M["ci"], "sampled_summary"),
        f"pol_{d}_sampled_best_ci": _best_drafter(d, M["ci"], "sampled_summary"),
        f"pol_{d}_sampled_adaptive_over_oracle": _pol(d, "adaptive", M["over_oracle"], "sampled_summary"),
        f"pol_{d}_sampled_best_over_oracle": _best_drafter(d, M["over_oracle"], "sampled_summary"),
        f"pol_{d}_best_median": _best_drafter(d, M["median"]),
        f"pol_{d}_best_ci": _best_drafter(d, M["ci"]),
        f"pol_{d}_best_over_oracle": _best_drafter(d, M["over_oracle"]),
        f"pol_{d}_best_drafter": lambda a: _drafter_name(a, _best_variant(a, d)["drafter"]),
        # the matrix's prompts, the set's passed-over entries, and the core set's paired ratios and counts
        f"pol_{d}_matrix_prompts": lambda a: a["policies"]["domains"][d]["matrix_prompts"],
        f"pol_{d}_matrix_last": lambda a: _matrix_rows(a, d)[-1]["prompt"],
        f"pol_{d}_skipped": lambda a: _skipped(a, d),
        f"pol_{d}_adaptive_over_fixed_median": _core_ratio(d, "adaptive", "fixed", "median"),
        f"pol_{d}_adaptive_over_fixed_ci": _core_ratio(d, "adaptive", "fixed", "ci"),
        f"pol_{d}_hf_default_prompts": _pol(d, "hf_default", lambda e: e["prompts"]),
        f"pol_{d}_fixed_prompts": _pol(d, "fixed", lambda e: e["prompts"]),
        f"pol_{d}_adaptive_prompts": _pol(d, "adaptive", lambda e: e["prompts"]),
        # the oracle held to the adaptive policy's cap, and the best drafter's own oracle
        f"pol_{d}_adaptive_capped_oracle_median": _capped(d, "adaptive", "median"),
        f"pol_{d}_adaptive_capped_oracle_ci": _capped(d, "adaptive", "ci"),
        f"pol_{d}_adaptive_capped_oracle_past_cap": _capped(d, "adaptive", "past_cap"),
        f"pol_{d}_best_oracle_speedup_median": _best_oracle_speedup(d, "median"),
        f"pol_{d}_best_oracle_speedup_ci": _best_oracle_speedup(d, "ci"),
    }


def policy_values(sets: tuple[str, ...]) -> dict[str, Callable]:
    """The stage's setup, each public set's rows (set_rows), the runs' token equality, and the verdicts against
    Hugging Face by set."""
    return {
        "pol_tokens": lambda a: a["policies"]["new_tokens"],
        "pol_fixed_k": lambda a: a["policies"]["variants"]["fixed"]["k"],
        "pol_adaptive_k": lambda a: a["policies"]["variants"]["adaptive"]["k"],
        # median wall time of one greedy target-only run, over every prompt of the policies stage
        "pol_target_seconds": lambda a: fmt(statistics.median(r["target_seconds"] for d in a["policies"]["domains"].values()
                                                              for r in d["rows"]), 0),
        "pol_runs_per_matrix_prompt": _pol_runs_per_prompt("matrix"),
        "pol_runs_per_core_prompt": _pol_runs_per_prompt("core"),
        "pol_sampled_temperature": lambda a: a["policies"]["sampled_temperature"],
        "pol_sweep_prompts": lambda a: ", ".join(p for d in a["policies"]["domains"] for p in _sweep(d, "greedy")(a)["prompts"]),
        **per_set(sets, set_rows),
        "pol_same_output": _pol_same_output,
        "pol_hf_same_output": _hf_same_output,
        # the verdicts of specdec ÷ Hugging Face's defaults, per set, grouped: the Results page's finding
        "hf_adaptive_verdicts": _hf_verdicts("adaptive"),
        "hf_fixed_verdicts": _hf_verdicts("fixed"),
    }
