"""Block verification (Sun et al. 2025, arXiv 2403.10444; specdec.verify.verify_block and block_terms).

The chain's three checks for the block rule: exact enumeration (specdec_site.exactness.exact.block_sequence_distribution:
every draft block and every prefix the rule can keep, replayed through verify_block), chi-square tests of sampled
sequences with temperature, top-k and top-p (slow tier, at the sizes tests/power.py computes for the chain's wrong
residual with k = 2, the same law under the block rule's settings), and greedy equality with the target and with the
token rule (here on tiny models; tests/test_real_pair.py on the real pair). And the claims the Math page makes: the
paper's worked example (10/9, 11/9, 12/9), never fewer accepted tokens in expectation than the token rule, never more
than an ideal verifier. The wrong variants (the token rule's residual after a block rejection, the product uncapped)
fail the enumeration (tests/test_mutants.py).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
import torch

from specdec import SamplingConfig, TreeDrafter, TreeShape, autoregressive_generate, speculative_generate
from specdec.checks import ArgumentError
from specdec.theory import expected_accepted_block, expected_accepted_token
from specdec.verify import acceptance_probability, block_terms, verify_block, verify_draft, verify_proposal
from specdec_site.exactness.exact import (
    block_sequence_distribution,
    chi_square_test,
    make_tiny_lm,
    one_thread,
    random_context_tables,
    sample_sequence_counts,
    sequence_distribution,
)
from specdec_site.stages.exactness import block_example

VOCAB, NEW, PROMPT = 8, 3, torch.tensor([0, 3, 5])  # tests/test_statistical.py's setting
# N per case: power.smallest_n against the chain's wrong residual at k = 2 (0.16 TV), rounded up to 50; a correct
# rule's p-value must exceed PASS_LEVEL
N_PASS = {"T=1,k=2": 650, "T=0.7,top_k=5,top_p=0.9,k=2": 500}
CASES = {"T=1,k=2": SamplingConfig(1.0), "T=0.7,top_k=5,top_p=0.9,k=2": SamplingConfig(0.7, top_k=5, top_p=0.9)}
PASS_LEVEL = 1e-3


def random_step(V: int, k: int, seed: int):
    """A random chain step: draft tokens (k,), q (k, V) and p (k + 1, V), peaked so ratios on both sides of 1."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.rand(k, V, generator=gen, dtype=torch.float64) ** 3
    p = torch.rand(k + 1, V, generator=gen, dtype=torch.float64) ** 3
    q, p = q / q.sum(-1, keepdim=True), p / p.sum(-1, keepdim=True)
    tokens = torch.multinomial(q, 1, generator=gen).flatten()
    return tokens, q, p


# ---------------------------------------------------------------- the terms and the worked example


def test_block_terms_follow_the_papers_recursion():
    for seed in range(20):
        k = 1 + seed % 5
        tokens, q, p = random_step(6, k, seed)
        weights, stop_probs, masses = block_terms(tokens, q, p)
        assert weights.shape == (k + 1,) and stop_probs.shape == (k + 1,) and masses.shape == (k,)
        w = [1.0]
        for i in range(k):
            w.append(min(1.0, w[-1] * float(p[i, tokens[i]] / q[i, tokens[i]])))
        assert torch.allclose(weights, torch.tensor(w, dtype=torch.float64))
        for i in range(k):
            m = float((w[i] * p[i] - q[i]).clamp_min(0).sum())
            assert masses[i] == pytest.approx(m)
            assert stop_probs[i] == pytest.approx(m / (m + 1 - w[i]) if i else 1.0)  # h_0 = 1: the empty prefix
        assert stop_probs[k] == pytest.approx(w[k])  # h_k = w_k
        # the first token's weight is the token rule's acceptance probability
        assert weights[1] == pytest.approx(float(acceptance_probability(p[0, tokens[0]], q[0, tokens[0]])))
        assert bool(((stop_probs >= 0) & (stop_probs <= 1)).all())
    # uncapped (the wrong variant): the product runs past 1
    tokens, q, p = torch.tensor([0, 0]), torch.tensor([[0.1, 0.9]] * 2).double(), torch.tensor([[0.9, 0.1]] * 3).double()
    assert block_terms(tokens, q, p, cap=False)[0].max() > 1 and block_terms(tokens, q, p)[0].max() == 1


def test_the_papers_two_token_example_gives_10_11_and_12_ninths():
    """The Math page's worked example (exactness_stage.block_example, the library's own terms): p = (2/3, 1/3),
    q = (1/3, 2/3), two drafts; the token rule accepts 10/9 tokens per step, block verification 11/9, an ideal
    verifier 12/9."""
    example = block_example()
    for key, ninths in (("token", 10), ("block", 11), ("ideal", 12)):
        assert Fraction(example[key]).limit_denominator(90) == Fraction(ninths, 9), (key, example[key])
    by_block = {b["block"]: b for b in example["blocks"]}
    assert set(by_block) == {"AA", "AB", "BA", "BB"}
    assert sum(b["q"] for b in by_block.values()) == pytest.approx(1.0)
    # the block rule gains on BA: the token rule keeps B with probability 1/2 (then A always): 1 token; as a block BA
    # keeps both, w_2 = min(1, (1/2)(2)) = 1: 2 tokens. It loses on BB (0.75 against 0.5): better in expectation,
    # not draft by draft.
    assert by_block["BA"]["token"] == pytest.approx(1.0) and by_block["BA"]["block_rule"] == pytest.approx(2.0)
    assert by_block["BB"]["token"] == pytest.approx(0.75) and by_block["BB"]["block_rule"] == pytest.approx(0.5)


def test_block_verification_is_never_behind_the_token_rule_nor_ahead_of_an_ideal_verifier():
    """Sun et al.'s Theorem: in expectation over the draft, block verification accepts at least as many tokens as the
    token rule, for every draft and target; and no exact verifier accepts more than the maximal coupling of the
    blocks' joint distributions (sum over prefixes of min(p, q))."""
    for seed in range(12):
        V, k = 3, 2 + seed % 2
        p_of, q_of = random_context_tables(V, k, seed=500 + seed)
        token = block = ideal = 0.0
        for draft_block in itertools.product(range(V), repeat=k):
            q_block = 1.0
            for i in range(k):
                q_block *= float(q_of[draft_block[:i]][draft_block[i]])
            tokens = torch.tensor(draft_block)
            q = torch.stack([q_of[draft_block[:i]] for i in range(k)])
            p = torch.stack([p_of[draft_block[:i]] for i in range(k + 1)])
            accept = [float(acceptance_probability(p[i, tokens[i]], q[i, tokens[i]])) for i in range(k)]
            token += q_block * expected_accepted_token(accept)
            block += q_block * expected_accepted_block(block_terms(tokens, q, p)[1][1:].tolist())
        for i in range(1, k + 1):
            for prefix in itertools.product(range(V), repeat=i):
                pp = qq = 1.0
                for j in range(i):
                    pp *= float(p_of[prefix[:j]][prefix[j]])
                    qq *= float(q_of[prefix[:j]][prefix[j]])
                ideal += min(pp, qq)
        assert token - 1e-12 <= block <= ideal + 1e-12, (seed, token, block, ideal)


# ---------------------------------------------------------------- exactness: enumeration


@pytest.mark.parametrize("V,k,seed", [(3, 2, 1), (3, 3, 2), (4, 2, 3)])
def test_block_verification_emits_the_targets_distribution_by_enumeration(V, k, seed):
    p_of, q_of = random_context_tables(V, k, seed=seed)
    got, want = block_sequence_distribution(p_of, q_of, V, k)
    assert abs(sum(want.values()) - 1) < 1e-12
    assert max(abs(got[s] - want[s]) for s in want) < 1e-12


def test_the_enumeration_sees_a_wrong_residual():
    """block_sequence_distribution replays verify_block itself: a verify_block whose residual is the token rule's
    (block_token_residual in specdec_site.exactness.mutants) gives another distribution."""
    from specdec_site.exactness.mutants import BY_NAME, mutated

    p_of, q_of = random_context_tables(4, 2, seed=101)
    with mutated(BY_NAME["block_token_residual"]):
        from specdec_site.exactness import exact

        got, want = exact.block_sequence_distribution(p_of, q_of, 4, 2)
    assert max(abs(got[s] - want[s]) for s in want) > 1e-3


# ---------------------------------------------------------------- the function: replay, fields, edge cases


def test_verify_block_keeps_the_longest_prefix_below_its_stop_probability_and_replays():
    for seed in range(30):
        k = 1 + seed % 4
        tokens, q, p = random_step(5, k, seed)
        a = verify_block(tokens, q, p, torch.Generator().manual_seed(seed))
        b = verify_block(tokens, q, p, torch.Generator().manual_seed(seed + 1000), uniforms=a.uniforms)
        assert a.n_accepted == b.n_accepted and a.uniforms.shape == (k,)
        _, stop_probs, _ = block_terms(tokens, q, p)
        kept = (a.uniforms < stop_probs[1:]).nonzero().flatten().tolist()
        assert a.n_accepted == (kept[-1] + 1 if kept else 0)
        assert torch.equal(a.stop_probs, stop_probs[1:]) and a.block_weights.shape == (k,)
        assert a.tokens[: a.n_accepted].tolist() == tokens[: a.n_accepted].tolist() and len(a.tokens) == a.n_accepted + 1
        if a.n_accepted == k:
            assert a.bonus_token == int(a.tokens[-1]) and a.resampled_token is None and a.residual is None
        else:
            assert a.resampled_token == int(a.tokens[-1]) and a.bonus_token is None
            assert a.residual[a.resampled_token] > 0 and float(a.residual.sum()) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="shape mismatch"):
        verify_block(tokens, q, p[:-1], torch.Generator())


def test_the_rules_agree_where_they_must():
    """k = 1: block verification is the token rule (h_1 = w_1 = min(1, p/q), the residual p - q), the same draws
    giving the same tokens; a draft equal to the target keeps every token under both."""
    for seed in range(20):
        tokens, q, p = random_step(5, 1, seed)
        u = torch.rand(1, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        a = verify_draft(tokens, q, p, torch.Generator().manual_seed(7), uniforms=u)
        b = verify_block(tokens, q, p, torch.Generator().manual_seed(7), uniforms=u)
        assert a.n_accepted == b.n_accepted and a.tokens.tolist() == b.tokens.tolist()
    tokens, q, p = random_step(5, 4, 0)
    p = torch.cat([q, p[-1:]])
    assert verify_block(tokens, q, p, torch.Generator().manual_seed(0)).n_accepted == 4


def test_verify_proposal_chooses_the_block_rule_for_a_chain_only():
    from specdec.drafters import Proposal

    tokens, q, p = random_step(5, 3, 4)
    proposal = Proposal(tokens=tokens, q_draft=q, confidences=[float('nan')] * 3, source="model")
    result = verify_proposal(proposal, p, torch.Generator().manual_seed(0), rule="block")
    assert result.stop_probs is not None
    assert verify_proposal(proposal, p, torch.Generator().manual_seed(0)).stop_probs is None


# ---------------------------------------------------------------- the decoder: greedy, traces, arguments


@pytest.fixture(scope="module")
def models():
    with one_thread():
        yield make_tiny_lm(seed=11, vocab_size=VOCAB, init_scale=0.5), make_tiny_lm(seed=12, vocab_size=VOCAB, init_scale=0.5)


def test_greedy_block_verification_is_the_target_and_the_token_rule_token_for_token(models):
    target, draft = models
    with one_thread():
        for prompt in (PROMPT, torch.tensor([1]), torch.tensor([7, 7, 2, 0, 4])):
            reference = autoregressive_generate(target, prompt, max_new_tokens=12, temperature=0.0,
                                                generator=torch.Generator())
            for k in (2, 5):
                outs = [speculative_generate(target, draft, prompt, max_new_tokens=12, k=k, temperature=0.0,
                                             generator=torch.Generator(), check_cache_invariant=True, verify=rule)
                        for rule in ("token", "block")]
                assert outs[0].tolist() == outs[1].tolist() == reference.tolist(), (prompt.tolist(), k)


def test_a_block_trace_records_the_rule_and_its_terms(models):
    target, draft = models
    with one_thread():
        out, trace = speculative_generate(target, draft, PROMPT, max_new_tokens=10, k=3, temperature=1.0,
                                          generator=torch.Generator().manual_seed(5), record=True, verify="block")
    assert trace.verify == "block" and trace.to_dict()["verify"] == "block"
    assert sum(len(s.emitted) for s in trace.steps) == len(out)
    for step in trace.steps:
        k = len(step.draft_tokens)
        assert len(step.block_weights) == len(step.stop_probs) == k == len(step.uniforms)
        kept = [i for i in range(k) if step.uniforms[i] < step.stop_probs[i]]
        assert step.n_accepted == (kept[-1] + 1 if kept else 0)


def test_the_rule_is_checked_before_any_model_work(models):
    target, draft = models
    with pytest.raises(ArgumentError, match="verify"):
        speculative_generate(target, draft, PROMPT, max_new_tokens=4, k=2, temperature=1.0,
                             generator=torch.Generator(), verify="blocks")
    with pytest.raises(ArgumentError, match="tree"):
        speculative_generate(target, TreeDrafter(draft, TreeShape.full(2, 2)), PROMPT, max_new_tokens=4, k=2,
                             temperature=1.0, generator=torch.Generator(), verify="block")


# ---------------------------------------------------------------- exactness: sampled sequences (slow tier)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_block_samples_match_the_targets_distribution(models, case):
    target, draft = models
    config = CASES[case]
    exact = sequence_distribution(target, PROMPT, NEW, config)
    with one_thread():
        counts = sample_sequence_counts(target, draft, PROMPT, NEW, N_PASS[case], seed=2024, k=2,
                                        temperature=config.temperature, top_k=config.top_k, top_p=config.top_p,
                                        verify="block")
    test = chi_square_test(counts, exact)
    assert test["bins"] >= 10, "too few bins for a meaningful test"
    assert test["p_value"] > PASS_LEVEL, test
