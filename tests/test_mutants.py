"""The exactness checks have power: every known wrong variant of the rule fails at least one of them, the
correct code passes all, and the enumeration now tests verify_draft's comparison itself.

Fast tier: the correct code against every check, and each mutant against the checks that must catch it (EXPECTED),
its statistical check at 1000 sampled sequences; and the whole table at the build's size (every check on every
variant, what the Exactness page shows) as the committed artifact records it."""

from __future__ import annotations

import json

import pytest
import torch

import specdec
from specdec import decoding, drafters, verify
from specdec_site.exactness.exact import counterexample, first_token_distribution
from specdec_site.exactness.mutants import (
    CHECKS,
    MUTANTS,
    check_acceptance_statistics,
    check_enumeration,
    mutated,
    run_check,
    run_checks,
)
from specdec_site.paths import ROOT

BY_NAME = {m.name: m for m in MUTANTS}
# Which check must catch which bug (a mutant may fail more).
EXPECTED = {
    "biased_acceptance": {"enumeration", "acceptance_statistics"},
    "biased_acceptance_1pct": {"enumeration", "acceptance_statistics"},
    "wrong_residual": {"enumeration"},
    "bonus_wrong_row": {"enumeration", "greedy_equality"},
    "q_not_sampled": {"sampled_sequences"},
    "rollback_off_by_one": {"greedy_equality"},
    "draft_cut_after_seen": {"sampled_sequences"},  # p ~ 3e-5 at the fast tier's 1000 runs, ~5e-7 at 2000
    # the tree variants: each also fails the sampled tests (the table at the build's size; tests/test_tree.py, slow)
    "tree_mask_sees_siblings": {"tree_greedy_equality"},
    "tree_positions_by_index": {"tree_greedy_equality"},
    "tree_leaf_bonus_unwarped": {"tree_greedy_equality"},  # at T = 0 its plain softmax is no one-hot: greedy drifts
    "tree_residual_keeps_tried": {"tree_enumeration"},
    # block verification's: the enumeration replays verify_block on every block and kept prefix (the sampled
    # check does not see the token rule's residual at the fast tier's size)
    "block_token_residual": {"block_enumeration"},
    "block_product_uncapped": {"block_enumeration"},
}


FAST_SAMPLED_RUNS = 1000  # the sampled check's size in the fast tier (p ~ 1e-10 for q_not_sampled; the build: 2000)


def test_correct_code_passes_every_check():
    failures = run_checks(sampled_runs=FAST_SAMPLED_RUNS)
    assert set(failures) == set(CHECKS) and all(why is None for why in failures.values()), failures


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_wrong_variant_is_caught_by_its_checks(name):
    with mutated(BY_NAME[name]):
        for check in EXPECTED[name]:
            assert run_check(check, FAST_SAMPLED_RUNS) is not None, f"{name} passed the {check} check"


def test_the_table_at_the_builds_size_catches_every_variant():
    """The Exactness page's table, as the exactness stage computed it at the build's size: every check on every
    variant. Read from the committed artifact, not recomputed (78 s in the slow tier before): the artifact is
    the committed code's (test_guards: test_committed_artifacts_were_built_by_the_committed_code), the quick build
    computes the table end to end at its size, and the tests above run each check on each variant here."""
    from specdec_site.engine.config import FULL

    data = json.loads((ROOT / "docs" / "data" / "cpu" / "exactness.json").read_text())
    assert data["metadata"]["config"]["mutation_sampled_runs"] == FULL.mutation_sampled_runs
    table = {row["variant"]: row["failures"] for row in data["mutants"]}
    assert set(table) == {"correct", *EXPECTED} and all(set(t) == set(CHECKS) for t in table.values()), table
    assert all(why is None for why in table["correct"].values()), table["correct"]
    for name in EXPECTED:
        failed = {check for check, why in table[name].items() if why}
        assert failed >= EXPECTED[name], f"{name}: caught only by {sorted(failed)}; {table[name]}"


def test_the_table_covers_every_mutant():
    assert set(EXPECTED) == set(BY_NAME)


def test_the_three_percent_bias_fails_the_enumeration_itself():
    """The bias the old enumeration missed: it weighted branches by the accept_probs verify_draft reports."""
    p, q = counterexample()
    assert torch.allclose(first_token_distribution(p, q), p[0], atol=1e-12)
    with mutated(BY_NAME["biased_acceptance"]):
        with pytest.raises(AssertionError, match="just below min"):
            first_token_distribution(p, q)
    assert torch.allclose(first_token_distribution(p, q), p[0], atol=1e-12)  # restored


def test_one_step_statistics_reject_a_one_percent_bias_in_seconds():
    assert check_acceptance_statistics() is None
    with mutated(BY_NAME["biased_acceptance_1pct"]):
        why = check_acceptance_statistics()
    assert why is not None and "z = " in why


def test_mutations_are_undone_and_reach_every_reference():
    from specdec_site.exactness import exact

    originals = (verify.verify_draft, exact.verify_draft, verify.residual_distribution,
                 drafters.ModelDrafter.propose, decoding.speculative_generate, specdec.speculative_generate)
    with mutated(BY_NAME["wrong_residual"]):
        # the harness's own modules hold the library's functions too: a reference missed would hide the mutant
        assert verify.verify_draft is exact.verify_draft is not originals[0]
        assert check_enumeration() is not None
    with mutated(BY_NAME["bonus_wrong_row"]):
        assert exact.verify_draft is verify.verify_draft is not originals[0]
    with mutated(BY_NAME["rollback_off_by_one"]):
        assert decoding.speculative_generate is specdec.speculative_generate is not originals[4]
    assert (verify.verify_draft, exact.verify_draft, verify.residual_distribution,
            drafters.ModelDrafter.propose, decoding.speculative_generate, specdec.speculative_generate) == originals
    assert check_enumeration() is None


def test_a_mutant_whose_text_is_gone_is_an_error():
    from specdec_site.exactness.mutants import Mutant

    with pytest.raises(ValueError, match="does not occur once"):
        with mutated(Mutant("x", "x", "verify", "verify_draft", "no such text", "")):
            pass
