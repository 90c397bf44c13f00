"""The engines' verification rules (specdec/engine_rules.py) on small distributions: the exact ones emit the target's
distribution and keep drafts at the rate their docstrings give; the lossy ones fail the same test, with the power to
see it. Statistical: one seeded generator, so a run is the same every time; p-values against 1e-3.

A draft is drawn from q_sample, the distribution the draft really sampled from, and the first token each rule emits
is counted; exact means that token is distributed as the target's p, whatever the draft.
"""

from __future__ import annotations

import pytest
import torch

from specdec.engine_rules import (
    RULES,
    compare_rules,
    expected_tokens,
    position_law,
    raw_logits_q,
    total_variation,
    verify_one_hot_q,
    verify_sample_match,
    verify_typical,
)
from specdec.sampling import sample
from specdec.verify import verify_draft
from specdec_site.exactness.exact import chi_square_test

N = 20_000
ALPHA = 1e-3
slow = pytest.mark.slow  # 20,000 steps a test: the slow tier, beside the other chi-square tests
P = torch.tensor([[0.5, 0.3, 0.15, 0.05], [0.25, 0.25, 0.25, 0.25]])  # (k + 1, V) with k = 1: the target
Q = torch.tensor([[0.1, 0.2, 0.3, 0.4]])  # the draft's sampling distribution, far from p


def first_tokens(rule, n: int = N, seed: int = 0) -> tuple[dict, float]:
    """({token: count} of the first token the rule emits, its accepted drafts per step), over n steps with drafts
    drawn from Q."""
    g = torch.Generator().manual_seed(seed)
    counts, accepted = {}, 0
    for _ in range(n):
        x = sample(Q[0], g).view(1)
        result = rule(x, g)
        first = int(result.tokens[0])
        counts[(first,)] = counts.get((first,), 0) + 1
        accepted += result.n_accepted
    return counts, accepted / n


def target_law() -> dict:
    return {(i,): float(P[0, i]) for i in range(P.shape[1])}


EXACT = {
    "residual rule, full q": lambda x, g: verify_draft(x, Q, P, g),
    "one-hot q": lambda x, g: verify_one_hot_q(x, P, g),
    "sample and match": lambda x, g: verify_sample_match(x, P, g),
}


@slow
@pytest.mark.parametrize("name", EXACT)
def test_the_exact_rules_emit_the_targets_distribution(name):
    counts, _ = first_tokens(EXACT[name])
    result = chi_square_test(counts, target_law())
    assert result["p_value"] > ALPHA, (name, result)


@slow
def test_each_rule_keeps_drafts_at_the_rate_it_says():
    """The full rule keeps a draft with probability Σ min(p, q); one-hot q and sample and match with Σ q·p, lower
    wherever the draft samples (within 4 standard errors of N steps)."""
    full = float(torch.minimum(P[0], Q[0]).sum())
    product = float((P[0] * Q[0]).sum())
    assert product < full
    for name, expected in (("residual rule, full q", full), ("one-hot q", product), ("sample and match", product)):
        _, rate = first_tokens(EXACT[name])
        assert abs(rate - expected) < 4 * (expected * (1 - expected) / N) ** 0.5, (name, rate, expected)


@slow
def test_q_from_raw_logits_is_not_exact_when_the_draft_sampled_from_processed_ones():
    """The draft sampled at temperature 0.5 from its logits; the rule was handed softmax of the raw logits
    (transformers #47932): the output leaves p. Handed the processed q, the same rule is exact again."""
    logits = torch.log(Q)
    processed = torch.softmax(logits / 0.5, dim=-1)
    g = torch.Generator().manual_seed(1)
    wrong, right = {}, {}
    for _ in range(N):
        x = sample(processed[0], g).view(1)
        for q, counts in ((raw_logits_q(logits), wrong), (processed, right)):
            first = int(verify_draft(x, q, P, g).tokens[0])
            counts[(first,)] = counts.get((first,), 0) + 1
    assert chi_square_test(wrong, target_law())["p_value"] < ALPHA
    assert chi_square_test(right, target_law())["p_value"] > ALPHA


@slow
def test_typical_acceptance_is_lossy():
    """Medusa's rule keeps every draft over its threshold: with these p and q the output over-weights the draft."""
    counts, _ = first_tokens(lambda x, g: verify_typical(x, P, g, epsilon=0.09, delta=0.3))
    assert chi_square_test(counts, target_law())["p_value"] < ALPHA


@slow
def test_a_known_wrong_variant_fails_the_same_test():
    """Power: the one-hot rule with its residual not removing the rejected token (p itself) is not exact, and the test
    with these N and p, q sees it."""
    def wrong(x, g):
        result = verify_one_hot_q(x, P, g)
        if result.n_accepted == 0:  # resample from p, the rejected token included
            result.tokens = sample(P[0], g).view(1)
        return result

    counts, _ = first_tokens(wrong)
    assert chi_square_test(counts, target_law())["p_value"] < ALPHA


def test_the_rules_check_their_arguments():
    from specdec.checks import ArgumentError

    g = torch.Generator().manual_seed(0)
    with pytest.raises(ArgumentError):
        verify_one_hot_q(torch.tensor([7]), P, g)  # an id outside the vocabulary
    with pytest.raises(ArgumentError):
        verify_sample_match(torch.tensor([0]), P * 2, g)  # rows that are not distributions
    with pytest.raises(ArgumentError):
        verify_typical(torch.tensor([0]), P, g, epsilon=0.0, delta=0.3)
    with pytest.raises(ArgumentError):
        verify_one_hot_q(torch.tensor([0]), P, None)  # no generator


# ---------------------------------------------------------------- the rules at one position, computed (position_law)

TEMPERATURE = 0.5  # the raw-logits case: the draft sampled at this temperature, the rule handed the raw softmax


def sampled_rule(rule: str):
    """(the draft's sampling law, the rule as a step function) for each of position_law's rules, k = 1."""
    processed = torch.softmax(torch.log(Q) / TEMPERATURE, dim=-1)
    argmax = torch.nn.functional.one_hot(Q[0].argmax(), Q.shape[1]).double().view(1, -1)
    return {
        "residual": (Q, lambda x, g: verify_draft(x, Q, P, g)),
        "one_hot_q": (Q, lambda x, g: verify_one_hot_q(x, P, g)),
        "one_hot_q_argmax": (argmax, lambda x, g: verify_one_hot_q(x, P, g)),
        "sample_match": (Q, lambda x, g: verify_sample_match(x, P, g)),
        "raw_logits": (processed, lambda x, g: verify_draft(x, raw_logits_q(torch.log(Q)), P, g)),
        "typical": (Q, lambda x, g: verify_typical(x, P, g, epsilon=0.09, delta=0.3)),
    }[rule]


def computed(rule: str) -> tuple[float, torch.Tensor]:
    drafts, _ = sampled_rule(rule)
    return position_law(P[0], drafts[0], rule, q_rule=raw_logits_q(torch.log(Q))[0], epsilon=0.09, delta=0.3)


@slow
@pytest.mark.parametrize("rule", RULES)
def test_each_rules_computed_law_is_what_its_sampled_rule_does(rule):
    """position_law, computed by enumeration, against the rule run N times with drafts from the draft's own law: the
    kept rate within 4 standard errors, the first token's law by a chi-square test; and, for the lossy rules, the
    same test refuses p (power: the test sees the loss the computed total variation states)."""
    drafts, step = sampled_rule(rule)
    kept, law = computed(rule)
    g = torch.Generator().manual_seed(2)
    counts, n_kept = {}, 0
    for _ in range(N):
        result = step(sample(drafts[0], g).view(1), g)
        counts[(int(result.tokens[0]),)] = counts.get((int(result.tokens[0]),), 0) + 1
        n_kept += result.n_accepted
    assert abs(n_kept / N - kept) <= 4 * (max(kept * (1 - kept), 1 / N) / N) ** 0.5, (rule, n_kept / N, kept)
    assert chi_square_test(counts, {(i,): float(law[i]) for i in range(len(law))})["p_value"] > ALPHA, rule
    if total_variation(law, P[0]) > 0.02:
        assert chi_square_test(counts, target_law())["p_value"] < ALPHA, rule


def test_computed_laws_say_which_rules_are_exact_and_what_each_keeps():
    """The exact rules emit p (total variation 0); the raw-logits and typical rules do not; the one-hot and the
    sample-and-match rules keep Σ q·p, below the full rule's Σ min(p, q); every law sums to 1."""
    laws = {rule: computed(rule) for rule in RULES}
    for rule, (kept, law) in laws.items():
        assert 0 <= kept <= 1 and abs(float(law.sum()) - 1) < 1e-6 and float(law.min()) >= 0, rule
    assert {rule for rule, (_, law) in laws.items() if total_variation(law, P[0]) < 1e-9} == {
        "residual", "one_hot_q", "one_hot_q_argmax", "sample_match"}
    assert laws["one_hot_q"][0] == laws["sample_match"][0] == pytest.approx(float((P[0] * Q[0]).sum()))
    assert laws["one_hot_q"][0] < laws["residual"][0] == pytest.approx(float(torch.minimum(P[0], Q[0]).sum()))
    assert laws["one_hot_q_argmax"][0] == pytest.approx(float(P[0, Q[0].argmax()]))
    assert total_variation(laws["raw_logits"][1], P[0]) > 0.02 and total_variation(laws["typical"][1], P[0]) > 0.02


def test_expected_tokens_and_the_laws_check_their_arguments():
    from specdec.checks import ArgumentError

    assert expected_tokens([]) == 1.0
    assert expected_tokens([1.0, 1.0, 1.0, 1.0]) == 5.0
    assert expected_tokens(torch.tensor([0.5, 0.5])) == pytest.approx(1.75)
    with pytest.raises(ArgumentError, match=r"in \[0, 1\]"):
        expected_tokens([1.2])
    with pytest.raises(ArgumentError, match="unknown rule"):
        position_law(P[0], Q[0], "greedy")
    with pytest.raises(ArgumentError, match="q_rule"):
        position_law(P[0], Q[0], "raw_logits")
    with pytest.raises(ArgumentError, match="epsilon"):
        position_law(P[0], Q[0], "typical", epsilon=0.0, delta=0.3)
    with pytest.raises(ArgumentError, match="one shape"):
        position_law(P[0], Q[0, :3], "residual")


def test_compare_rules_on_logits_orders_the_rules_and_zeroes_the_exact_ones():
    """compare_rules on random (4, 16) logits at T = 0.7, top-p 0.9: the exact rules' TV is 0, the full rule keeps the
    most among them, the one-hot and sample-and-match rules keep the same; at T = 0 (greedy) every exact rule keeps
    the same (q is one-hot); the expected tokens follow from the kept probabilities (1 <= E <= k + 1)."""
    from specdec.sampling import SamplingConfig

    g = torch.Generator().manual_seed(3)
    target, draft = torch.randn(4, 16, generator=g) * 2, torch.randn(4, 16, generator=g) * 2
    sampled = compare_rules(target, draft, SamplingConfig(temperature=0.7, top_p=0.9))
    for rule in ("residual", "one_hot_q", "one_hot_q_argmax", "sample_match"):
        assert sampled[rule]["tv"] < 1e-6, rule
    assert sampled["residual"]["kept"] >= sampled["one_hot_q"]["kept"] == pytest.approx(sampled["sample_match"]["kept"])
    assert all(1 <= r["expected_tokens"] <= 5 for r in sampled.values())
    # the draft from its whole vocabulary (vLLM main) is exact too; with no top-k/top-p it is the same draft
    assert sampled["residual_draft_full_vocab"]["tv"] < 1e-6
    plain = compare_rules(target, draft, SamplingConfig(temperature=0.7))
    assert plain["residual_draft_full_vocab"] == pytest.approx(plain["residual"])
    topk = compare_rules(target, draft, SamplingConfig(temperature=1.0, top_k=3))
    assert topk["residual_draft_full_vocab"]["kept"] != pytest.approx(topk["residual"]["kept"])
    greedy = compare_rules(target, draft, SamplingConfig(temperature=0.0))
    assert len({round(greedy[r]["kept"], 9) for r in ("residual", "one_hot_q", "one_hot_q_argmax", "sample_match")}) == 1
    from specdec.checks import ArgumentError

    with pytest.raises(ArgumentError, match="one shape"):
        compare_rules(target, draft[:3], SamplingConfig(temperature=0.7))
