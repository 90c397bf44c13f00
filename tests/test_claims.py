"""Every sentence that states a result takes it from the artifacts: a test fails when a page's stated k, set, direction,
verdict or count contradicts them.

Two halves. The claims the captions make (where the speedup peaks, whether acceptance by position is flat, whether
block verification's intervals hold 1, how many distinct greedy runs differed, which chain a tree is measured
against) are values (specdec_site/site/values/), recomputed here from the artifact by code of this test's own, and the
pages quote them through [[val:…]]. And a page may not type such a claim itself: the phrases that state one are
refused in a page's own text, so that a typed "code gains with k up to the largest k run" cannot come back.
Changing the artifact (a peak moved, an interval that no longer holds 1) changes the value with it: shown below.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from specdec_site.paths import ROOT
from specdec_site.public_prompts import LABELS
from specdec_site.site.files import load_artifacts
from specdec_site.site.values import VALUES
from specdec_site.site.values.common import Artifacts

PAGES = sorted((ROOT / "docs").glob("*.md"))


@pytest.fixture(scope="module")
def artifacts():
    return load_artifacts(ROOT / "docs" / "data" / "cpu")


def value(artifacts, name: str):
    return VALUES[name](Artifacts(artifacts))


# ---------------------------------------------------------------- each claim, recomputed from the artifact


def test_the_speedup_peaks_are_where_the_sweep_puts_them(artifacts):
    said = value(artifacts, "sweep_peaks")
    for sweep in artifacts["policies"]["sweeps"]:
        medians = {row["k"]: row["speedup"]["median"] for row in sweep["spec"]}
        peak = max(medians, key=medians.get)
        name = LABELS.get(sweep["domain"], sweep["domain"])
        if peak == max(medians):
            assert f"{name} is still rising at the largest k run, k = {peak}" in said, (name, said)
        else:
            assert f"{name} peaks at k = {peak} " in said, (name, peak, said)


def test_acceptance_by_position_is_called_flat_only_where_it_is(artifacts):
    said = value(artifacts, "sweep_positions")
    for sweep in artifacts["policies"]["sweeps"]:
        row = sweep["spec"][-1]
        hist = row["accepted_length_histogram"]
        tested = [sum(hist[i:]) for i in range(row["k"])]
        accepted = [sum(hist[i + 1:]) for i in range(row["k"])]
        first, later = accepted[0] / tested[0], sum(accepted[1:]) / sum(tested[1:])
        name = LABELS.get(sweep["domain"], sweep["domain"])
        clause = next(part for part in said.split("; ") if f"{name} (" in part)
        expected = "rising" if later - first >= 0.1 else "falling" if first - later >= 0.1 else "close to flat"
        assert clause.startswith(expected), (name, first, later, clause)


def test_the_block_intervals_that_hold_1_are_the_ones_the_page_says(artifacts):
    said = value(artifacts, "block_measured_intervals")
    for key, what in (("tokens_per_pass_ratio", "tokens per pass"), ("speed_ratio", "wall clock")):
        entries = [(t["temperature"], d, v["summary"][key]) for t in artifacts["block"]["temperatures"]
                   for d, v in t["domains"].items()]
        out = [(T, d) for T, d, e in entries if not e["ci95"][0] <= 1 <= e["ci95"][1]]
        clause = next(part for part in said.split("; ") if part.startswith(f"in {what},"))
        if out:
            assert f"{len(entries) - len(out)} of the {len(entries)} intervals hold 1" in clause, clause
            for T, d in out:
                assert f"{LABELS.get(d, d)} at T = {T:g}" in clause, (d, T, clause)
        else:
            assert "every one" in clause, clause


def test_the_greedy_runs_are_counted_once_each(artifacts):
    """The sweep's run at the fixed policy's k is that policy's run: 16 runs the count once took twice."""
    a = artifacts
    traces = sum(r["mode"] == "greedy" for r in a["traces"]["runs"])
    policies = sum(1 for d in a["policies"]["domains"].values() for r in d["rows"] for name in r["variants"]
                   if not name.startswith("hf_"))
    trees = sum(len(r["greedy"]) for d in a["trees"]["domains"].values() for r in d["rows"])
    fixed_k = a["policies"]["metadata"]["config"]["fixed_k"]
    sweeps = sum(s["greedy_runs_checked"] - (len(s["prompts"]) if any(r["k"] == fixed_k for r in s["spec"]) else 0)
                 for s in a["policies"]["sweeps"])
    assert value(a, "greedy_runs_diverged").endswith(f" of {traces + policies + sweeps + trees}")


def test_the_tree_is_compared_with_the_best_chain_measured(artifacts):
    said = value(artifacts, "tree_code_best_chain_measured")
    summary = artifacts["trees"]["domains"]["code"]["summary"]["greedy"]
    code = next(s for s in artifacts["policies"]["sweeps"] if s["domain"] == "code" and s["mode"] == "greedy")
    best = max([summary["chain"]["speedup"]["median"], summary["adaptive"]["speedup"]["median"],
                *(r["speedup"]["median"] for r in code["spec"])])
    tree = summary["tree"]["speedup"]["median"]
    assert f"{'below' if tree < best else 'above'} the best chain measured" in said and f"at {best:.2f}×" in said, said


def test_an_interval_over_four_prompts_is_called_a_range(artifacts):
    """Over n <= 5 prompts a percentile-bootstrap interval of the median is the range of the values."""
    from specdec.theory import bootstrap_median_ci

    values = [1.3, 0.9, 2.2, 1.7]
    assert bootstrap_median_ci(values, seed=0) == (min(values), max(values))
    entry = artifacts["block"]["temperatures"][-1]["domains"]["dialogue"]["summary"]["speed_ratio"]
    if entry["prompts"] <= 5:
        assert value(artifacts, "block_10_dialogue_speed_ci").startswith(f"range (n = {entry['prompts']}) ")


# ---------------------------------------------------------------- the values follow the artifact


def test_a_moved_peak_or_a_lost_interval_changes_the_sentence(artifacts):
    """Change the artifact and the claim follows: code's peak moved to the largest k, dialogue's wall-clock
    interval at every temperature made to hold 1."""
    a = copy.deepcopy(artifacts)
    code = next(s for s in a["policies"]["sweeps"] if s["domain"] == "code" and s["mode"] == "greedy")
    code["spec"][-1]["speedup"]["median"] = 99.0
    assert "code is still rising at the largest k run" in value(a, "sweep_peaks")
    for t in a["block"]["temperatures"]:
        for v in t["domains"].values():
            v["summary"]["speed_ratio"]["ci95"] = [0.9, 1.1]
    assert "in wall clock, every one of the" in value(a, "block_measured_intervals")


# ---------------------------------------------------------------- no page types a claim of its own

# Phrases that state a result: a page may carry them only inside a value.
TYPED_CLAIMS = [r"\b" + phrase.replace(" ", r"\s+") + r"\b" for phrase in (
    "gains? with k up to", "peaks? (?:at|early)", "close to flat", "intervals hold 1", r"\d+ of \d+ greedy runs",
    "one to a few percent", "run run")]


def phrases_in(page: Path, patterns: list[str]) -> list[str]:
    """The phrases of a page's own text (its markers taken out) that match any of the patterns."""
    text = re.sub(r"\[\[(?:val|fig|table):[a-z0-9_.-]+\]\]", "VALUE", page.read_text())
    return [m.group(0) for pattern in patterns for m in re.finditer(pattern, text, re.I)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_types_a_result_claim_of_its_own(page):
    found = phrases_in(page, TYPED_CLAIMS)
    assert not found, f"{page.name} states a result in its own words (use a value computed from the artifacts): {found}"


def test_the_benchmark_quotes_the_claims_it_makes():
    """The Results page and its details page, between them."""
    text = (ROOT / "docs" / "benchmark.md").read_text() + (ROOT / "docs" / "benchmark-details.md").read_text()
    for name in ("sweep_peaks", "sweep_positions", "block_expected_gains", "block_measured_intervals",
                 "tree_code_best_chain_measured"):
        assert f"[[val:{name}]]" in text, name


def test_the_committed_values_carry_the_claims():
    """values.json, which the site reads, was rebuilt with the claims (scripts/build_figures.py)."""
    committed = json.loads((ROOT / "docs" / "figures" / "values.json").read_text())
    values = committed.get("values", committed)
    assert all(name in values for name in ("sweep_peaks", "sweep_positions", "block_measured_intervals",
                                           "block_expected_gains", "tree_code_best_chain_measured"))


# ---------------------------------------------------------------- no tracker words where a reader goes

# The project's own words for its work: issue numbers, the build's stage names, its names for prompt groups, "the
# bar" a section was built to test. A reader meets none of them (the Reproduce page names the build's stages: it is
# the page about running the build).
TRACKER_WORDS = [r"\bissue\s+#?\d+", r"\b(?:policies|trees|block|exactness|traces|notebook)\s+stage\b", r"\bthe\s+matrix\b",
                 r"\bcore\s+set\b", r"\bthe\s+bar\b"]
READER_PAGES = [p for p in PAGES if p.name not in ("reproduce.md", "source.md")]


@pytest.mark.parametrize("page", READER_PAGES, ids=lambda p: p.name)
def test_no_reader_page_carries_tracker_words(page):
    found = phrases_in(page, TRACKER_WORDS)
    assert not found, f"{page.name} uses the project's own words: {found}"


def test_no_value_a_page_quotes_carries_tracker_words():
    """The values are text on the pages too (the provenance's commands aside: they are commands)."""
    values = json.loads((ROOT / "docs" / "figures" / "values.json").read_text())
    values = values.get("values", values)
    found = {name: m.group(0) for name, text in values.items() if not name.startswith("command_")
             for pattern in TRACKER_WORDS for m in [re.search(pattern, str(text), re.I)] if m}
    assert not found, found
