"""Exactness, way 1: exact enumeration of verify_draft's first emitted token on small distributions.

P(first emitted token = y) = sum_x q(x) [a(x) 1{y = x} + (1 - a(x)) r_x(y)], where a(x) is the
acceptance probability verify_draft reports for draft token x and r_x the residual it resamples from.
For the correct rule this equals p(y) for every (p, q); for the naive residual it does not.
"""

import pytest
import torch

from specdec import verify_draft
from specdec_site.exactness.exact import counterexample, first_token_distribution
from specdec_site.exactness.mutants import naive_rule


def random_dist(gen, V, sparse):
    logits = torch.randn(V, generator=gen, dtype=torch.float64) * 2
    if sparse:  # zero out some entries: top-k-like supports, and p/q with disjoint mass
        mask = torch.rand(V, generator=gen) < 0.3
        mask[torch.randint(V, (1,), generator=gen)] = False
        logits[mask] = float("-inf")
    return torch.softmax(logits, 0)


def test_exact_first_token_distribution_equals_target_for_1200_pairs():
    gen = torch.Generator().manual_seed(1234)
    worst = 0.0
    for trial in range(1200):
        V = int(torch.randint(2, 7, (1,), generator=gen))
        k = trial % 4 + 1
        p = torch.stack([random_dist(gen, V, trial % 3 == 0) for _ in range(k + 1)])
        q = torch.stack([random_dist(gen, V, trial % 5 == 0) for _ in range(k)])
        dist = first_token_distribution(p, q)
        worst = max(worst, float((dist - p[0]).abs().max()))
    assert worst < 1e-9, f"largest deviation from p_target[0]: {worst}"


def test_exact_check_fails_for_the_wrong_residual():
    p, q = counterexample()
    correct = first_token_distribution(p, q)
    with naive_rule():
        wrong = first_token_distribution(p, q)
    assert torch.allclose(correct, p[0], atol=1e-12)
    assert (wrong - p[0]).abs().max() > 1e-3, f"the wrong residual unexpectedly gave {wrong.tolist()}"
    # The counterexample in numbers: x=0 rejected w.p. 1/3 (alpha = 2/3), residual ∝ max(0, p - 2/3 q).
    assert wrong.tolist() != pytest.approx(p[0].tolist(), abs=1e-9)


def test_accept_probs_are_min_one_p_over_q():
    gen = torch.Generator().manual_seed(5)
    p = torch.tensor([[0.5, 0.5], [0.2, 0.8], [0.9, 0.1]])
    q = torch.tensor([[0.25, 0.75], [0.4, 0.6]])
    result = verify_draft(torch.tensor([1, 0]), q, p, gen)
    assert result.accept_probs.tolist() == pytest.approx([0.5 / 0.75, 0.2 / 0.4])
    assert result.p_draft_tokens.tolist() == pytest.approx([0.5, 0.2])
    assert result.q_draft_tokens.tolist() == pytest.approx([0.75, 0.4])


def test_all_accepted_gives_bonus_from_last_target_row():
    gen = torch.Generator().manual_seed(0)
    p = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    q = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    result = verify_draft(torch.tensor([1, 2]), q, p, gen)
    assert result.n_accepted == 2 and result.bonus_token == 0 and result.resampled_token is None
    assert result.tokens.tolist() == [1, 2, 0]


def test_rejection_resamples_from_residual():
    gen = torch.Generator().manual_seed(0)
    p = torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    q = torch.tensor([[0.0, 1.0, 0.0]])
    result = verify_draft(torch.tensor([1]), q, p, gen)
    assert result.n_accepted == 0 and result.resampled_token == 2 and result.bonus_token is None
    assert result.residual.tolist() == [0.0, 0.0, 1.0]


def test_verify_rejects_bad_shapes():
    gen = torch.Generator()
    with pytest.raises(ValueError, match="shape mismatch"):
        verify_draft(torch.tensor([0, 1]), torch.rand(2, 4), torch.rand(2, 4), gen)
