"""The cost model (specdec.theory): Leviathan's formulas, the adaptive rule's criterion, the oracle bound."""

import math
import random

import pytest

from specdec.theory import (
    VerifyCost,
    best_k,
    bootstrap_median_ci,
    expected_tokens_per_pass,
    leviathan_speedup,
    oracle_seconds,
    oracle_steps,
    run_rate,
    speedup_from_tokens_per_pass,
    worth_drafting,
)


def test_leviathan_formulas():
    assert expected_tokens_per_pass(0.0, 4) == 1.0
    assert expected_tokens_per_pass(1.0, 4) == 5.0
    assert expected_tokens_per_pass(0.5, 2) == pytest.approx(1.75)
    # Thm 3.8 with c = 0: the speedup is the expected tokens per pass
    assert leviathan_speedup(0.8, 4, 0.0) == pytest.approx((1 - 0.8**5) / 0.2)
    assert leviathan_speedup(0.8, 4, 0.1) == pytest.approx((1 - 0.8**5) / (0.2 * 1.4))
    assert speedup_from_tokens_per_pass(3.0, 4, 0.1, 1.2) == pytest.approx(3.0 / 1.6)


def test_expected_tokens_match_a_simulation():
    rng = random.Random(0)
    alpha, k, n = 0.7, 5, 200_000
    total = 0
    for _ in range(n):
        accepted = 0
        while accepted < k and rng.random() < alpha:
            accepted += 1
        total += accepted + 1
    assert total / n == pytest.approx(expected_tokens_per_pass(alpha, k), rel=0.01)


def test_best_k_grows_with_alpha_and_shrinks_with_cost():
    assert best_k(0.9, 0.05) > best_k(0.5, 0.05)
    assert best_k(0.8, 0.02) >= best_k(0.8, 0.3)
    assert 1 <= best_k(0.0, 0.5) <= 16


def test_the_marginal_rule_compares_the_next_draft_with_the_run_rate():
    # Eq. (11): draft more iff survival_next / marginal_cost >= rate.
    assert worth_drafting(0.5, 2.0, 0.2) and not worth_drafting(0.3, 2.0, 0.2)
    # Eq. (12): the prior rate counts as prior_weight steps; the run's steps are costed on the cost model.
    assert run_rate(2.0, 2, 0.0, 0, 0, 1.0, 0.2) == pytest.approx(2.0)
    assert run_rate(2.0, 2, 10.0, 3, 9, 1.0, 0.2) == pytest.approx((4 + 10) / (5 * 1.0 + 9 * 0.2))
    # With i.i.d. acceptance alpha and the rate of the best fixed k (eq. 8's maximum), the rule stops at that k:
    # at the maximum of E(k) / T(k) the marginal rate crosses the average one.
    for alpha, c in [(0.8, 0.1), (0.6, 0.05), (0.95, 0.2), (0.3, 0.02)]:
        k_best = best_k(alpha, c, k_max=30)
        rate = leviathan_speedup(alpha, k_best, c)
        k, survival = 0, 1.0
        while k < 30 and worth_drafting(survival * alpha, rate, c):
            k, survival = k + 1, survival * alpha
        assert k == k_best, (alpha, c, k, k_best)


def test_oracle_steps_draft_exactly_the_accepted_runs():
    # agree: T T F | T F | F | T T (ends inside a run)
    agree = [True, True, False, True, False, False, True, True]
    lengths = oracle_steps(agree)
    assert lengths == [2, 1, 0, 1]
    assert sum(n + 1 for n in lengths) == len(agree), "every token is emitted exactly once"
    assert oracle_steps([]) == []
    assert oracle_steps([False] * 3) == [0, 0, 0]


def test_verify_cost_fit_and_oracle_seconds():
    fit = VerifyCost([1, 2, 3, 4], [1.1, 1.2, 1.3, 1.4])
    assert fit.slope == pytest.approx(0.1) and fit(0) == pytest.approx(1.0)
    flat = VerifyCost([4, 4], [2.0, 2.0])
    assert flat.slope == 0 and flat(10) == pytest.approx(2.0)
    assert oracle_seconds([2, 0], 0.1, fit) == pytest.approx((0.2 + 1.2) + (0 + 1.0))
    with pytest.raises(ValueError):
        VerifyCost([], [])


def test_bootstrap_interval_contains_the_median_and_is_deterministic():
    values = [1.0, 1.2, 1.4, 1.5, 1.9, 2.2, 2.5]
    lo, hi = bootstrap_median_ci(values, seed=1)
    assert lo <= 1.5 <= hi and (lo, hi) == bootstrap_median_ci(values, seed=1)
    assert math.isclose(*bootstrap_median_ci([3.0] * 5))


def test_the_best_tree_is_the_best_of_every_small_tree():
    """Sequoia's dynamic programme (theory.best_tree) against every tree of up to 6 nodes whose rank paths sum to at most 2 (depth <= 3),
    under the positional acceptance model; its value is its own tree's expected accepted nodes."""
    import itertools

    from specdec.theory import best_tree, tree_expected_accepted

    candidates = [p for d in range(1, 4) for p in itertools.product(range(3), repeat=d) if sum(p) <= 2]
    for a in ([0.6, 0.2, 0.1], [0.9, 0.05, 0.0], [0.3, 0.3, 0.3]):
        brute = {0: 0.0}
        for size in range(1, 7):
            brute[size] = max(brute[size - 1], max(
                tree_expected_accepted(s, a) for s in itertools.combinations([p for p in candidates if len(p) <= size], size)
                if all(len(p) == 1 or p[:-1] in s for p in s)))
        for n in range(0, 7):
            value, paths = best_tree(a, n, 3)
            assert len(paths) <= n and abs(tree_expected_accepted(paths, a) - value) < 1e-12
            assert abs(value - brute[n]) < 1e-12, (a, n, value, brute[n])
    # a chain is best when the draft's top-1 is all that is ever accepted
    assert best_tree([0.8, 0.0], 4, 8)[1] == [(0,), (0, 0), (0, 0, 0), (0, 0, 0, 0)]
    with pytest.raises(ValueError):
        best_tree([1.2], 3, 2)
