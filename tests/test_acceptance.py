"""The acceptance rate the theory is compared through (issue 43): the tested acceptance â, never the draft yield.

â = accepted ÷ (accepted + rejections) estimates α, the probability that a tested draft is accepted; accepted ÷
drafted (the draft yield) counts untested drafts as failures and falls with k by truncation alone. These tests check
the estimator on simulated steps with a known α, that every value and figure the pages compare with the theory uses
it, and that no page calls the draft yield α.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from specdec.theory import expected_tokens_per_pass, leviathan_speedup
from specdec_site.acceptance import draft_yield, expected_from_beta, theory
from specdec_site.acceptance import tested_acceptance as a_hat  # not test_*: pytest would collect it
from specdec_site.paths import ROOT

DOCS = ROOT / "docs"
POLICIES = json.loads((DOCS / "data" / "cpu" / "policies.json").read_text())
VALUES = json.loads((DOCS / "figures" / "values.json").read_text())["values"]


def simulated_row(alpha: float, k: int, steps: int, seed: int = 0) -> dict:
    """A sweep row of i.i.d. steps: each draft accepted with probability alpha until the first rejection."""
    rng = random.Random(seed)
    hist = [0] * (k + 1)
    for _ in range(steps):
        n = 0
        while n < k and rng.random() < alpha:
            n += 1
        hist[n] += 1
    accepted = sum(n * c for n, c in enumerate(hist))
    return {"k": k, "accepted_length_histogram": hist, "alpha": accepted / (k * steps), "c": 0.1, "verify_cost": 1.2}


@pytest.mark.parametrize("alpha,k", [(0.9, 8), (0.6, 8), (0.75, 3), (0.3, 1)])
def test_tested_acceptance_recovers_alpha_and_the_draft_yield_does_not(alpha, k):
    row = simulated_row(alpha, k, 20000)
    assert a_hat(row) == pytest.approx(alpha, abs=0.01)
    # the yield's expectation is E[n] / k = alpha (1 - alpha^k) / ((1 - alpha) k): below alpha for every k > 1
    expected_yield = alpha * (1 - alpha ** k) / ((1 - alpha) * k)
    assert draft_yield(row) == pytest.approx(expected_yield, abs=0.01)
    if k > 1:
        assert draft_yield(row) < alpha - 0.05


def test_the_theory_at_the_tested_acceptance_is_eqs_6_to_8():
    row = simulated_row(0.8, 6, 5000)
    a = a_hat(row)
    t = theory(row)
    assert t["alpha_hat"] == a
    assert t["tokens_per_pass"] == expected_tokens_per_pass(a, 6)
    assert t["speedup_eq7"] == leviathan_speedup(a, 6, 0.1)
    assert t["speedup_eq8"] == leviathan_speedup(a, 6, 0.1, 1.2)


def test_a_row_without_a_full_step_is_refused():
    with pytest.raises(ValueError, match="no full-k step"):
        a_hat({"k": 4, "accepted_length_histogram": [0] * 5})


def test_expected_beta_reads_only_the_tested_drafts():
    steps = [{"k": 3, "n_accepted": 1, "accept_probs": [0.9, 0.2, 0.7]},  # tested: 0.9, 0.2
             {"k": 2, "n_accepted": 2, "accept_probs": [1.0, 0.8]}]  # tested: both
    assert expected_from_beta(steps) == pytest.approx((0.9 + 0.2 + 1.0 + 0.8) / 4)
    assert expected_from_beta([{"k": 0, "n_accepted": 0, "accept_probs": []}]) is None


# ---------------------------------------------------------------- the committed pages


def test_every_alpha_value_is_the_a_hat():
    """Each value the pages quote as α is â of its sweep row, and differs from the draft yield where the two differ."""
    for sweep in POLICIES["sweeps"]:
        d = sweep["domain"]
        rows = {"k1": sweep["spec"][0], "kmax": sweep["spec"][-1],
                "best": max(sweep["spec"], key=lambda r: r["speedup"]["median"])}
        for where, row in rows.items():
            assert VALUES[f"{d}_greedy_{where}_alpha"] == f"{a_hat(row):.2f}", (d, where)
        assert VALUES[f"{d}_greedy_kmax_draft_yield"] == f"{draft_yield(rows['kmax']):.2f}"
        assert VALUES[f"{d}_greedy_kmax_alpha"] != VALUES[f"{d}_greedy_kmax_draft_yield"]  # the check has power
    alpha_names = [n for n in VALUES if re.search(r"(^|_)alpha($|_)", n) and n != "audit_alpha"]
    assert alpha_names and all(re.match(r"\w+_greedy_(best|k1|kmax)_alpha$", n) for n in alpha_names), alpha_names


YIELD_AS_ALPHA = [
    re.compile(r"α\s*(=|≈|is|was|of)\s*\[\[val:\w*draft_yield\]\]"),  # α = <a draft yield>
    re.compile(r"α[^.]{0,60}accepted( drafts)?\s*(÷|/)\s*drafted", re.I),  # α defined as accepted ÷ drafted
    re.compile(r"accepted( drafts)?\s*(÷|/)\s*drafted[^.]{0,20}\(?α\)?", re.I),
]


@pytest.mark.parametrize("page", sorted(p.relative_to(DOCS).as_posix() for p in DOCS.glob("*.md")))
def test_no_page_quotes_the_draft_yield_as_alpha(page):
    text = (DOCS / page).read_text()
    for pattern in YIELD_AS_ALPHA:
        match = pattern.search(text)
        assert match is None, f"{page} calls the draft yield α: {match.group(0)!r}"


def test_the_check_catches_the_old_wording():
    """The patterns above have power: the wording the site had before issue 43 matches them."""
    old = ["**α, the acceptance rate**\n: Accepted drafts ÷ drafted tokens over a run", "Acceptance rate α (accepted / drafted) vs k",
           "there the acceptance rate was α = [[val:code_greedy_best_draft_yield]]"]
    assert all(any(p.search(t) for p in YIELD_AS_ALPHA) for t in old)


def test_the_theory_figures_use_the_a_hat():
    from specdec_site.site.figures import set_name

    figures = DOCS / "figures"
    # the speedup figure draws eq. (8) at â beside each measured line (the figure that repeated it is gone)
    fig = json.loads((figures / "speedup_vs_k.json").read_text())["figure"]
    predicted = {t["name"].split(": ")[1]: t["y"] for t in fig["data"] if t["name"].startswith("eq. (8) at â")}
    assert len(fig["data"]) == 2 * len(POLICIES["sweeps"]), "two lines per prompt set: measured and eq. (8)"
    for sweep in POLICIES["sweeps"]:  # a legend names a set as the pages do ("technical prose" for "prose")
        name = f"{set_name(sweep['domain'])}, {sweep['mode']}"
        assert predicted[name] == pytest.approx([theory(r)["speedup_eq8"] for r in sweep["spec"]])
        assert predicted[name] != pytest.approx([r["predicted_speedup_with_verify_cost"] for r in sweep["spec"]])
    tpp = json.loads((figures / "tokens_per_pass.json").read_text())["figure"]
    for sweep in POLICIES["sweeps"]:
        line = next(t for t in tpp["data"] if t["name"] == f"eq. (6) at â: {set_name(sweep['domain'])}, {sweep['mode']}")
        assert line["y"] == pytest.approx([theory(r)["tokens_per_pass"] for r in sweep["spec"]])
