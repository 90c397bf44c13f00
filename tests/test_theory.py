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
    should_draft_more,
    speedup_from_tokens_per_pass,
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


def test_the_marginal_rule_is_the_ratio_test():
    # Drafting more pays exactly when (E + s) / (T + m) > E / T.
    for e, t, s, m in [(2.0, 1.5, 0.5, 0.2), (2.0, 1.5, 0.1, 0.2), (1.0, 1.0, 0.3, 0.3)]:
        assert should_draft_more(s, e, t, m) == ((e + s) / (t + m) > e / t)
    # And the rule's stopping point is the argmax of eq. (7) when acceptances are i.i.d. alpha.
    alpha, c = 0.8, 0.1
    k, e, t, survival = 0, 1.0, 1.0, 1.0
    while k < 30 and should_draft_more(survival * alpha, e, t, c):
        k, survival = k + 1, survival * alpha
        e, t = e + survival, t + c
    assert k == best_k(alpha, c, k_max=30)


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
