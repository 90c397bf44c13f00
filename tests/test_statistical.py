"""Exactness, way 2: sampled sequences from speculative_generate vs the target's exact distribution.

Tiny random transformers models (vocab 8) as target and draft. The target's exact distribution over
all 8^3 continuations of 3 tokens is computed from its logits; sequences sampled with
speculative_generate are compared to it with a chi-square test. Fixed seeds make the test
deterministic; the wrong residual must fail the same test, which shows the test has power.

How many sequences: the least N at which each test has POWER against the wrong residual
norm(max(0, p - a q)), computed (tests/power.py) from that rule's exact output distribution under the same
settings (TV about 0.16 from the target's, in both cases): a test that must pass (p > 1e-3) would fail the
wrong rule with probability >= POWER, and the test that must fail (p < 1e-6) does so with probability
>= POWER. test_the_sample_sizes_are_the_computed_ones recomputes them; at 3000 each (the earlier guess) the
slow tier spent 4x the draws for a power of 1 - 2e-31 (the wrong residual's noncentrality at 3000: 442, 61 degrees
of freedom).
"""

import pytest
import torch
from power import POWER, smallest_n, speculative_distribution

from specdec import SamplingConfig, speculative_generate
from specdec_site.exactness.exact import (
    chi_square_test,
    make_tiny_lm,
    naive_residual,
    one_thread,
    sample_sequence_counts,
    sequence_distribution,
)
from specdec_site.exactness.mutants import naive_rule

VOCAB = 8
NEW = 3
PROMPT = torch.tensor([0, 3, 5])
PASS_LEVEL, FAIL_LEVEL = 1e-3, 1e-6  # a correct rule's p-value must exceed the first, the wrong rule's be under the second
# N per test: smallest_n(exact, wrong residual's distribution, level, POWER), rounded up to a multiple of 50
N_PASS = {"T=1,k=2": 650, "T=0.7,top_k=5,top_p=0.9,k=1": 500}
N_FAIL = 800  # the wrong residual, T = 1, k = 2


@pytest.fixture(scope="module")
def models():
    with one_thread():
        yield make_tiny_lm(seed=11, vocab_size=VOCAB, init_scale=0.5), make_tiny_lm(seed=12, vocab_size=VOCAB, init_scale=0.5)


def sample_counts(target, draft, config, k, n, seed, **kwargs):
    return sample_sequence_counts(target, draft, PROMPT, NEW, n, seed, k=k, temperature=config.temperature,
                                  top_k=config.top_k, top_p=config.top_p, **kwargs)


CASES = {
    "T=1,k=2": (SamplingConfig(1.0), 2),
    "T=0.7,top_k=5,top_p=0.9,k=1": (SamplingConfig(0.7, top_k=5, top_p=0.9), 1),
}


def distributions(models, case):
    """(the target's exact distribution, the wrong residual's exact distribution) under the case's settings."""
    target, draft = models
    config, k = CASES[case]
    exact = sequence_distribution(target, PROMPT, NEW, config)
    wrong = speculative_distribution(target, draft, PROMPT, NEW, k, config, naive_residual)
    return exact, wrong


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_sample_sizes_are_the_computed_ones(models, case):
    """The enumeration of the speculative process (tests/power.py) gives the target's distribution with the exact
    residual, so it is the decoder's law; with the wrong residual it is far enough off that the N below has power."""
    target, draft = models
    config, k = CASES[case]
    exact, wrong = distributions(models, case)
    spec = speculative_distribution(target, draft, PROMPT, NEW, k, config)
    assert max(abs(spec.get(s, 0.0) - p) for s, p in exact.items()) < 1e-6
    assert 0.5 * sum(abs(wrong.get(s, 0.0) - p) for s, p in exact.items()) > 0.1
    assert smallest_n(exact, wrong, PASS_LEVEL, POWER) == N_PASS[case]
    if case == "T=1,k=2":
        assert smallest_n(exact, wrong, FAIL_LEVEL, POWER) == N_FAIL


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_speculative_samples_match_target_distribution(models, case):
    target, draft = models
    config, k = CASES[case]
    exact = sequence_distribution(target, PROMPT, NEW, config)
    assert abs(sum(exact.values()) - 1) < 1e-5 and len(exact) == VOCAB**NEW
    counts = sample_counts(target, draft, config, k, N_PASS[case], seed=2024)
    test = chi_square_test(counts, exact)
    assert test["bins"] >= 10, "too few bins for a meaningful test"
    assert test["p_value"] > PASS_LEVEL, test


@pytest.mark.slow
def test_wrong_residual_fails_the_same_test(models):
    target, draft = models
    config, k = CASES["T=1,k=2"]
    exact, wrong = distributions(models, "T=1,k=2")
    assert abs(sum(exact.values()) - 1) < 1e-5 and len(exact) == VOCAB**NEW
    with naive_rule():
        counts = sample_counts(target, draft, config, k, N_FAIL, seed=2024)
    test = chi_square_test(counts, exact)
    assert test["bins"] >= 10, "too few bins for a meaningful test"
    assert test["p_value"] < FAIL_LEVEL, f"the wrong residual passed: {test}"
    # and the decoder under the wrong rule samples the distribution the power was computed from
    assert chi_square_test(counts, wrong)["p_value"] > PASS_LEVEL


def test_draft_and_target_differ_enough_for_the_test_to_have_power(models):
    """The test is only meaningful if the draft is often rejected: check the acceptance rate."""
    target, draft = models
    gen = torch.Generator().manual_seed(7)
    _, trace = speculative_generate(target, draft, PROMPT, max_new_tokens=NEW, k=2, temperature=1.0,
                                    generator=gen, record=True)
    rates = []
    for _ in range(200):
        _, trace = speculative_generate(target, draft, PROMPT, max_new_tokens=NEW, k=2, temperature=1.0,
                                        generator=gen, record=True)
        rates.append(trace.acceptance_rate)
    mean = sum(rates) / len(rates)
    assert 0.2 < mean < 0.9, f"acceptance rate {mean:.2f}: draft too close to or too far from the target"


# --- the sampler itself: one uniform, inverse CDF (specdec.sampling.sample) ---

def draw_counts(probs, n, seed, sampler=None):
    from specdec.sampling import sample

    sampler = sampler or sample
    gen = torch.Generator().manual_seed(seed)
    counts = {}
    for _ in range(n):
        i = int(sampler(probs, gen))
        counts[(i,)] = counts.get((i,), 0) + 1
    return counts


# Zeros at both ends and in the middle, a tiny mass, unnormalized weights (the residual's form before norm()).
SAMPLER_WEIGHTS = torch.tensor([0.0, 3.0, 0.0, 0.0, 1.0, 0.02, 5.0, 0.0, 2.0, 0.0])


def test_sample_draws_each_id_with_its_probability_and_never_a_zero():
    exact = {(i,): float(w / SAMPLER_WEIGHTS.sum()) for i, w in enumerate(SAMPLER_WEIGHTS)}
    counts = draw_counts(SAMPLER_WEIGHTS, 20_000, seed=3)
    result = chi_square_test(counts, exact)  # raises on any draw of probability 0
    assert result["p_value"] > 1e-3, result
    assert set(counts) == {(1,), (4,), (5,), (6,), (8,)}


def test_an_off_by_one_sampler_fails_the_same_test():
    from specdec.sampling import sample

    shifted = lambda probs, gen: (sample(probs, gen) + 1) % probs.shape[0]  # noqa: E731
    exact = {(i,): float(w / SAMPLER_WEIGHTS.sum()) for i, w in enumerate(SAMPLER_WEIGHTS)}
    with pytest.raises(AssertionError, match="probability 0"):
        chi_square_test(draw_counts(SAMPLER_WEIGHTS, 2_000, seed=3, sampler=shifted), exact)


def test_sample_is_replayable_one_hot_is_its_id_and_bad_weights_are_an_error():
    from specdec.sampling import sample

    probs = torch.softmax(torch.randn(151_936, generator=torch.Generator().manual_seed(0)), 0)
    a = [int(sample(probs, torch.Generator().manual_seed(7))) for _ in range(3)]
    assert len(set(a)) == 1  # same seed, same draw
    one_hot = torch.zeros(151_936)
    for i in (0, 4321, 151_935):  # either end too
        one_hot.zero_()
        one_hot[i] = 1.0
        assert int(sample(one_hot, torch.Generator().manual_seed(1))) == i
    for bad in (torch.zeros(5), torch.tensor([0.5, float("nan")]), torch.tensor([1.0, -0.1]),
                torch.tensor([1.0, float("inf")])):
        with pytest.raises(ValueError, match="cannot sample"):
            sample(bad, torch.Generator().manual_seed(0))
