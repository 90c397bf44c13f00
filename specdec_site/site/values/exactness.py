"""The exactness stage's values: the rules' enumerated and sampled distributions against the target's (TV, p-value,
samples, the counterexample), the mutation table (which checks catch each planted bug: specdec_site.exactness.mutants), and
the exactness audit of this and other implementations (specdec_site.exactness.audit), with its tables (audit_tables).

From the exactness stage's artifact ("rules", "exact", "counterexample", "sequences", "mutants", "audit", "setup").
The block rule's own rows are block.py's, beside the block stage's.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable

from specdec_site.paths import ROOT
from specdec_site.site.values.common import NotRecorded, NotRun, fmt, fmt_p


def _noise_tv(a) -> str:
    """The total variation distance that sampling noise alone gives: its expected value between the exact sequence
    distribution and the histogram of N draws from it, E[TV] = ½ Σ E|X_i/N − p_i| with X_i ~ Binomial(N, p_i), by de
    Moivre's mean absolute deviation E|X − Np| = 2 ν C(N, ν) p^ν (1 − p)^(N − ν + 1), ν = ⌊Np⌋ + 1."""
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
    """Which quick exactness checks a variant of the rule fails (specdec_site.exactness.mutants, exactness stage)."""
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


def _audit_group(row: dict) -> str:
    """The row's group on the page: control, eagle, or whose implementation the row audits, specdec or transformers
    (its reference distribution's; a run from before the rows had a family)."""
    return row.get("family") or ("control" if row["control"] else row["reference"])


def _audit_row(a, name: str, field: str = "verdict") -> str:
    """One audit row's verdict and p-value, in words ("passes (p = 0.42)"), or another of its fields."""
    row = next((r for r in a["exactness"]["audit"]["rows"] if r["name"] == name), None)
    if row is None:
        raise NotRecorded(f"audit row {name}")  # a run from before the row was in the table, or a quick build's
    if field != "verdict":
        return row[field]
    shown = fmt_p(row["p_value"], 2)  # "< 1e-300" carries its own sign: "p < 1e-300", never "p = < 1e-300"
    return f"{row['verdict']} (p {shown if shown.startswith('<') else '= ' + shown})"


def _audit_count(a, group: str, verdict: str) -> str:
    """"N of M": the audit rows of a group (specdec, transformers, control) with this verdict."""
    rows = [r for r in a["exactness"]["audit"]["rows"] if _audit_group(r) == group]
    return f"{sum(r['verdict'] == verdict for r in rows)} of {len(rows)}"


def _audit_detectable(a) -> str:
    """The range of the rows' detectable TV (80% power), or its one value."""
    tvs = sorted(r["tv_detectable"] for r in a["exactness"]["audit"]["rows"])
    return fmt(tvs[0], 3) if fmt(tvs[0], 3) == fmt(tvs[-1], 3) else f"{fmt(tvs[0], 3)}–{fmt(tvs[-1], 3)}"


def _audit_constant(name: str):
    """A constant of the audit's verdict rule (specdec_site/exactness/audit.py), read from its source: the code that
    gave the artifact's verdicts (the freshness test holds the two together), without importing torch here."""
    tree = ast.parse((ROOT / "specdec_site" / "exactness" / "audit.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise KeyError(f"specdec_site/exactness/audit.py defines no {name}")


# The rules against the target (the correct one and the naive residual), the counterexample, the mutation table,
# and the audit's setup, versions and summary (its rows are a table: audit_tables).
EXACTNESS: dict[str, Callable] = {
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
    # The exactness audit (specdec_site.exactness.audit): its setup, versions and summary; the rows are a table (audit_tables)
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
    "audit_pass_tv": lambda a: fmt(_audit_constant("MAX_PASS_TV"), 2),
}


# The enumeration's setup (its vocabulary, tokens, k and temperature), quoted after the design replay's values (the
# order values.json has always listed them in).
SETUP: dict[str, Callable] = {
    "exact_vocab": lambda a: a["exactness"]["setup"]["vocab"],
    "exact_new_tokens": lambda a: a["exactness"]["setup"]["new_tokens"],
    "exact_k": lambda a: a["exactness"]["setup"]["k"],
    "exact_temperature": lambda a: a["exactness"]["setup"]["temperature"],
}


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
