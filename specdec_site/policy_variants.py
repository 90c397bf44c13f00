"""What the policies benchmark compares: its variants (drafter, policy, k), the Hugging Face variants beside them,
and the summary of its per-prompt rows. The policies stage runs these; the site's values read the same table and
summarize the artifact's rows the same way, without importing the stage."""

from __future__ import annotations

from specdec_site.summary import median_ci

# variant -> (drafter, policy, k); k=None: cfg.fixed_k. The drafters' names: "int8" (the default draft
# model), "fp32" (the same draft unquantized), "ngram", "hybrid" (n-gram, else the int8 draft).
VARIANTS = {
    "fixed": ("int8", "fixed", None),
    "confidence": ("int8", "confidence", 16),
    "heuristic": ("int8", "heuristic", 16),
    "adaptive": ("int8", "adaptive", 16),
    "adaptive_fp32": ("fp32", "adaptive", 16),
    "adaptive_ngram": ("ngram", "adaptive", 16),
    "adaptive_hybrid": ("hybrid", "adaptive", 16),
}
# Hugging Face assisted generation given the same draft model objects: name -> (schedule, drafter).
# schedule None: the draft's own GenerationConfig, transformers' defaults, kept across calls; "constant":
# k = cfg.fixed_k, specdec's fixed k.
HF_ASSISTED = {"hf_default": (None, "int8"), "hf_constant": ("constant", "int8"),
               "hf_default_fp32": (None, "fp32")}
HF_VARIANTS = (*HF_ASSISTED, "hf_prompt_lookup")  # the last: transformers' own n-gram matcher, no model
# Decoders are compared only at equal drafts: a specdec variant is divided by the HF assisted variants that
# draft with the same model object (int8 by int8, fp32 by fp32).
SAME_DRAFT_AS_HF = tuple(name for name, (drafter, _, _) in VARIANTS.items()
                         if drafter in {d for _, d in HF_ASSISTED.values()})
# Candidates for "the best drafter" of the core set: every drafter with the adaptive policy.
BEST_DRAFTER_CANDIDATES = tuple(name for name, (_, policy, _) in VARIANTS.items() if policy == "adaptive")
CORE_HF = ("hf_default",)  # HF variants on every prompt of the core set
CORE_SPECDEC = ("fixed", "adaptive")  # specdec variants on every prompt (the default policy, the adaptive one)


def over_hf_key(hf: str) -> str:
    """The summary key of a ratio to an HF assisted variant: over_hf_default or over_hf_constant, whichever draft."""
    return "over_hf_default" if HF_ASSISTED[hf][0] is None else "over_hf_constant"






def summarize(rows: list[dict], seed: int) -> dict:
    """Per variant, over the prompts that ran it: the median speedup with its 95% bootstrap interval and the
    number of prompts; for specdec variants also measured / oracle, and, for those drafting with a model HF was
    given too, the speedup / each HF assisted variant with that same draft (over_hf_default, over_hf_constant),
    per prompt, then the median. Greedy and sampled rows alike."""

    names = list(dict.fromkeys(name for r in rows for name in r["variants"]))  # first-seen order
    out = {}
    for name in names:
        ran = [r for r in rows if name in r["variants"]]
        entry = {**median_ci([r["variants"][name]["speedup"] for r in ran], seed)}
        same = [r["variants"][name]["same_output"] for r in ran]
        if None not in same:
            entry["same_output"] = sum(same)
        if "measured_over_oracle" in ran[0]["variants"][name]:
            entry["measured_over_oracle"] = median_ci([r["variants"][name]["measured_over_oracle"] for r in ran], seed)
        if name in SAME_DRAFT_AS_HF:
            for hf, (_, drafter) in HF_ASSISTED.items():
                both = [r for r in ran if hf in r["variants"]]
                if drafter == VARIANTS[name][0] and both:
                    entry[over_hf_key(hf)] = median_ci([r["variants"][name]["speedup"] / r["variants"][hf]["speedup"]
                                                        for r in both], seed)
        out[name] = entry
    return out


def best_drafter(summary: dict) -> str:
    """The adaptive variant with the highest median speedup in a (matrix) summary, among those it has."""
    return max((name for name in BEST_DRAFTER_CANDIDATES if name in summary), key=lambda name: summary[name]["median"])


