"""Exactness, way 2: sampled sequences from speculative_generate vs the target's exact distribution.

Tiny random transformers models (vocab 8) as target and draft. The target's exact distribution over
all 8^3 continuations of 3 tokens is computed from its logits; >= 10^4 sequences sampled with
speculative_generate are compared to it with a chi-square test. Fixed seeds make the test
deterministic; the wrong residual must fail the same test, which shows the test has power.
"""

import pytest
import torch

from specdec import SamplingConfig, speculative_generate
from specdec.exact import chi_square_test, make_tiny_lm, sample_sequence_counts, sequence_distribution
from specdec.exact import naive_residual as wrong_residual

VOCAB = 8
NEW = 3
PROMPT = torch.tensor([0, 3, 5])
N_SAMPLES = 10_000


@pytest.fixture(scope="module")
def models():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: threading costs more than it saves
    yield make_tiny_lm(seed=11, vocab_size=VOCAB, init_scale=0.5), make_tiny_lm(seed=12, vocab_size=VOCAB, init_scale=0.5)
    torch.set_num_threads(threads)


def sample_counts(target, draft, config, k, seed, **kwargs):
    return sample_sequence_counts(target, draft, PROMPT, NEW, N_SAMPLES, seed, k=k, temperature=config.temperature,
                                  top_k=config.top_k, top_p=config.top_p, **kwargs)


CASES = [
    pytest.param(SamplingConfig(1.0), 2, id="T=1,k=2"),
    pytest.param(SamplingConfig(0.7, top_k=5, top_p=0.9), 1, id="T=0.7,top_k=5,top_p=0.9,k=1"),
]


@pytest.mark.parametrize("config,k", CASES)
def test_speculative_samples_match_target_distribution(models, config, k):
    target, draft = models
    exact = sequence_distribution(target, PROMPT, NEW, config)
    assert abs(sum(exact.values()) - 1) < 1e-5 and len(exact) == VOCAB**NEW
    counts = sample_counts(target, draft, config, k, seed=2024)
    test = chi_square_test(counts, exact)
    assert test["bins"] >= 10, "too few bins for a meaningful test"
    assert test["p_value"] > 1e-3, test


def test_wrong_residual_fails_the_same_test(models):
    target, draft = models
    config = SamplingConfig(1.0)
    exact = sequence_distribution(target, PROMPT, NEW, config)
    assert abs(sum(exact.values()) - 1) < 1e-5 and len(exact) == VOCAB**NEW
    counts = sample_counts(target, draft, config, 2, seed=2024, residual_fn=wrong_residual)
    test = chi_square_test(counts, exact)
    assert test["bins"] >= 10, "too few bins for a meaningful test"
    assert test["p_value"] < 1e-6, f"the wrong residual passed: {test}"


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
