"""Token trees (specdec/tree.py, verify.verify_tree and verify_tree_sampled, cache.tree_attention and commit).

The three checks of the chain, for trees: exact enumeration of both rules (specdec_site.exactness.exact), greedy equality
with the target token for token (here on tiny models; tests/test_real_pair.py on the real pair), and chi-square
tests of sampled sequences (slow tier) with width >= 2 and depth >= 3, temperature, top-k and top-p; and the tree's
own plumbing: one target pass scores every node as a plain forward of its root-to-node path, a chain-shaped tree
scores as the chain, and the caches keep the accepted path as a fresh forward would have computed it. The wrong
variants (specdec_site.exactness.mutants: a mask that shows siblings, positions by index, a leaf bonus without the sampling
settings, a residual that keeps the tried children) must fail these checks (tests/test_mutants.py).
"""

from __future__ import annotations

import pytest
import torch
from test_decoding import make_close_pair

from specdec import (
    Proposal,
    SamplingConfig,
    TreeDrafter,
    TreeShape,
    autoregressive_generate,
    speculative_generate,
    verify_tree,
    verify_tree_sampled,
)
from specdec.cache import CachedLM, assert_cache_invariant, tree_attention
from specdec.drafters import check_proposal
from specdec_site.exactness.exact import (
    chi_square_test,
    make_tiny_lm,
    one_thread,
    sample_sequence_counts,
    sampled_tree_first_token_distribution,
    sequence_distribution,
    tree_outcomes,
)
from specdec_site.exactness.mutants import BY_NAME, mutated

PROMPTS = [torch.tensor(p) for p in ([0, 3], [0, 5, 2, 7], [0], [0, 9, 9, 9, 4, 2])]
MEDUSA_LIKE = TreeShape(((0,), (1,), (2,), (0, 0), (0, 1), (1, 0), (0, 0, 0), (0, 0, 1), (0, 0, 0, 0)))


@pytest.fixture(scope="module")
def close_pair():
    """A draft that agrees with the target often, so that paths run deep (test_decoding's, noisier)."""
    return make_close_pair(0.05)


def tree_drafters(draft):
    return {"chain 4": TreeDrafter(draft, TreeShape.chain(4)), "full 2x3": TreeDrafter(draft, TreeShape.full(2, 3)),
            "medusa-like": TreeDrafter(draft, MEDUSA_LIKE), "dynamic": TreeDrafter(draft, width=3, depth=4, nodes=10),
            "sampled 2x3": TreeDrafter(draft, TreeShape.full(2, 3), sampled=True)}


# ---------------------------------------------------------------- the shapes and the mask


def test_tree_shapes_are_rank_paths_with_every_prefix():
    shape = TreeShape(((1,), (0, 0), (0,)))
    assert shape.paths == ((0,), (1,), (0, 0)) and shape.parents == [-1, -1, 0] and shape.depth == 2
    assert TreeShape.chain(3).parents == [-1, 0, 1]
    assert len(TreeShape.full(2, 3).paths) == 2 + 4 + 8
    with pytest.raises(ValueError, match="lacks the parent"):
        TreeShape(((0, 1),))
    with pytest.raises(ValueError, match="each path once"):
        TreeShape(((0,), (0,)))
    with pytest.raises(ValueError, match="ranks >= 0"):
        TreeShape(((-1,),))


def test_the_mask_of_a_chain_is_causal_and_a_node_sees_only_its_ancestors():
    mask, positions = tree_attention([-1, 0, 1], n_prefix=3, past=2, dtype=torch.float32, device=torch.device("cpu"))
    causal = torch.zeros(4, 6).masked_fill(~torch.ones(6, 6, dtype=torch.bool).tril()[2:], torch.finfo(torch.float32).min)
    assert torch.equal(mask[0, 0], causal) and positions.tolist() == [[2, 3, 4, 5]]
    # two children of the prefix (a, b), a child of a (c): c sees a but never b; b never a
    mask, positions = tree_attention([-1, -1, 0], n_prefix=2, past=1, dtype=torch.bfloat16, device=torch.device("cpu"))
    seen = (mask[0, 0] == 0).int().tolist()  # rows: prefix token 1, a, b, c; columns: prefix 0, 1, a, b, c
    assert seen == [[1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 0, 1, 0], [1, 1, 1, 0, 1]]
    assert mask.dtype == torch.bfloat16 and mask.min() == torch.finfo(torch.bfloat16).min
    assert positions.tolist() == [[1, 2, 2, 3]]  # a and b at the first draft's position, c one further
    with pytest.raises(ValueError, match="earlier node"):
        tree_attention([0], 2, 0, torch.float32, torch.device("cpu"))


@pytest.mark.parametrize("parents", [[-1, 0, 1, 2], [-1, -1, 0, 0, 1, 2, 2, 4], [-1, -1, -1, 2, 2, 4]])
def test_every_node_scores_as_a_plain_forward_of_its_path(parents):
    """One pass with the tree mask (prefix partly cached) gives each node the logits of a plain forward of the
    prefix and its root-to-node path, to float tolerance; the prefix's last token gets its own."""
    model = make_tiny_lm(seed=5)
    prefix = torch.tensor([[0, 5, 2, 7, 1]])
    nodes = torch.randint(12, (1, len(parents)), generator=torch.Generator().manual_seed(len(parents)))
    lm = CachedLM(model, 12, "target")
    lm.logits(prefix[:, :3], 1)  # the cache holds 3 of the prefix's 5 tokens
    logits = lm.logits(torch.cat([prefix, nodes], 1), len(parents) + 1, parents)
    reference = model(input_ids=prefix).logits[0, -1]
    assert torch.allclose(logits[0], reference, atol=1e-5)
    for i in range(len(parents)):
        path, j = [], i
        while j >= 0:
            path.insert(0, int(nodes[0, j]))
            j = parents[j]
        plain = model(input_ids=torch.cat([prefix, torch.tensor([path])], 1)).logits[0, -1]
        assert torch.allclose(logits[1 + i], plain, atol=1e-5), (i, (logits[1 + i] - plain).abs().max())


def test_a_chain_shaped_tree_scores_as_the_chain():
    model = make_tiny_lm(seed=6)
    seq = torch.tensor([[0, 4, 4, 9, 3, 8, 1]])
    chain, tree = CachedLM(model, 12), CachedLM(model, 12)
    chain.logits(seq[:, :2], 1)  # cached: 2 tokens; then the third, and four nodes
    tree.logits(seq[:, :2], 1)
    a = chain.logits(seq, 5)
    b = tree.logits(seq, 5, [-1, 0, 1, 2])
    assert torch.allclose(a, b, atol=1e-5)


def test_commit_keeps_the_path_as_a_fresh_forward_would():
    """After scoring a tree and committing an accepted path, the cache holds exactly the prefix and the path, in
    contiguous slots at their own positions: the next token's logits are a plain forward's."""
    model = make_tiny_lm(seed=7)
    prefix = torch.tensor([[0, 5, 2]])
    parents = [-1, -1, 0, 1, 1, 3]
    nodes = torch.tensor([[4, 6, 8, 3, 9, 2]])
    lm = CachedLM(model, 12)
    lm.logits(prefix[:, :2], 1)
    lm.logits(torch.cat([prefix, nodes], 1), len(parents) + 1, parents)
    path = [1, 3, 5]  # 6 -> 3 -> 2
    lm.commit(3 + len(path), [3 + i for i in path])
    assert_cache_invariant(lm, 3 + len(path) + 1)
    final = torch.cat([prefix, torch.tensor([[6, 3, 2, 11]])], 1)
    assert torch.allclose(lm.logits(final, 1)[0], model(input_ids=final).logits[0, -1], atol=1e-5)
    with pytest.raises(ValueError, match="increasing cache slots"):
        lm.commit(4, [9])


# ---------------------------------------------------------------- the rules, enumerated


def test_sample_and_match_emits_what_each_draw_says_from_the_right_rows():
    gen = torch.Generator().manual_seed(1)
    for trial in range(40):
        V = 3 + trial % 4
        parents = [-1, -1, 0, 0, 1, 2]
        tokens = torch.tensor([0, 1, 1, 2, 0, 2])  # siblings distinct; ids below every V tried
        p = torch.softmax(torch.randn(len(parents) + 1, V, generator=gen, dtype=torch.float64) * 2, -1)
        assert tree_outcomes(tokens, parents, p) == pytest.approx(1.0, abs=1e-12)


def test_sample_and_match_at_temperature_zero_follows_the_argmax_as_far_as_the_tree_goes():
    p = torch.eye(4, dtype=torch.float64)[[1, 2, 3, 0, 2]]  # after the prefix: 1; after node 0 (token 1): 2; ...
    result = verify_tree(torch.tensor([1, 3, 2, 3]), [-1, -1, 0, 2], p, torch.Generator())
    assert result.path == [0, 2] and result.tokens.tolist() == [1, 2, 0] and result.resampled_token == 0
    leaf = verify_tree(torch.tensor([1, 3, 2, 0]), [-1, -1, 0, 2], p, torch.Generator())
    assert leaf.path == [0, 2, 3] and leaf.tokens.tolist() == [1, 2, 0, 2] and leaf.bonus_token == 2  # from row 4


@pytest.mark.parametrize("m", [1, 2, 3])
def test_recursive_rejection_sampling_gives_p_at_the_root(m):
    gen = torch.Generator().manual_seed(m)
    for trial in range(30):
        V = 3 + trial % 3
        p = torch.softmax(torch.randn(V, generator=gen, dtype=torch.float64) * 2, -1)
        q = torch.softmax(torch.randn(V, generator=gen, dtype=torch.float64) * 2, -1)
        if trial % 5 == 0:
            q[trial % V] = 0.0
            q /= q.sum()
        dist = sampled_tree_first_token_distribution(p, q, min(m, V - 1))
        assert torch.allclose(dist, p, atol=1e-9), (trial, dist, p)


def test_a_residual_that_keeps_the_tried_children_is_not_exact():
    p = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    q = torch.tensor([0.4, 0.3, 0.2, 0.1], dtype=torch.float64)
    assert torch.allclose(sampled_tree_first_token_distribution(p, q, 2), p, atol=1e-12)
    with mutated(BY_NAME["tree_residual_keeps_tried"]):
        wrong = sampled_tree_first_token_distribution(p, q, 2)
    assert float((wrong - p).abs().max()) > 0.01, wrong


def test_sampled_tree_verification_replays_from_its_uniforms():
    gen = torch.Generator().manual_seed(3)
    p = torch.softmax(torch.randn(4, 5, generator=gen), -1)
    q = torch.softmax(torch.randn(3, 5, generator=gen), -1)
    first = verify_tree_sampled(torch.tensor([1, 4, 0]), [-1, -1, 0], q, p, torch.Generator().manual_seed(9))
    again = verify_tree_sampled(torch.tensor([1, 4, 0]), [-1, -1, 0], q, p, torch.Generator(), uniforms=first.uniforms)
    assert again.tokens.tolist() == first.tokens.tolist() and again.path == first.path


# ---------------------------------------------------------------- the decoder with trees


@pytest.mark.parametrize("name", ["chain 4", "full 2x3", "medusa-like", "dynamic", "sampled 2x3"])
def test_greedy_tree_decoding_equals_the_target_with_both_caches_checked(close_pair, name):
    target, draft = close_pair
    for prompt in PROMPTS:
        drafter = tree_drafters(draft)[name]
        spec, trace = speculative_generate(target, drafter, prompt, max_new_tokens=30, k=8, temperature=0,
                                           generator=torch.Generator(), record=True, check_cache_invariant=True)
        reference = autoregressive_generate(target, prompt, max_new_tokens=30, temperature=0,
                                            generator=torch.Generator())
        assert spec.tolist() == reference.tolist(), (name, prompt.tolist())
    assert trace.n_accepted > 0 and any(len(s.path) >= 2 for s in trace.steps)


def test_a_chain_shaped_tree_emits_the_chains_tokens(close_pair):
    """Sampled too: a chain of top-1 tokens is what greedy chain drafting proposes, and the chain's rule and sample
    and match give the same greedy tokens; their steps accept the same numbers of drafts."""
    target, draft = close_pair
    prompt = PROMPTS[1]
    chain, chain_trace = speculative_generate(target, draft, prompt, max_new_tokens=24, k=3, temperature=0,
                                              generator=torch.Generator(), record=True)
    tree, tree_trace = speculative_generate(target, TreeDrafter(draft, TreeShape.chain(3)), prompt, max_new_tokens=24,
                                            k=3, temperature=0, generator=torch.Generator(), record=True)
    assert tree.tolist() == chain.tolist()
    assert [s.n_accepted for s in tree_trace.steps] == [s.n_accepted for s in chain_trace.steps]


def test_a_tree_step_records_its_nodes_path_and_fates(close_pair):
    target, draft = close_pair
    _, trace = speculative_generate(target, TreeDrafter(draft, TreeShape.full(2, 3)), PROMPTS[1], max_new_tokens=20,
                                    k=8, temperature=1.0, generator=torch.Generator().manual_seed(2), record=True)
    for step in trace.steps:
        record = step.to_dict()
        n = step.k
        assert len(record["parents"]) == n == len(record["fates"]) == len(record["p_draft_tokens"])
        assert len(record["top_p"]) == n + 1 and record["top_q"] == []
        assert [i for i, f in enumerate(record["fates"]) if f == "accepted"] == sorted(step.path)
        assert record["emitted"][: len(step.path)] == [record["draft_tokens"][i] for i in step.path]
        assert step.depth == 3 or n < 14
        last = step.path[-1] if step.path else -1
        rejected = [i for i, f in enumerate(record["fates"]) if f == "rejected"]
        assert rejected == [i for i, a in enumerate(record["parents"]) if a == last]
        assert step.extra_fate == ("bonus" if step.bonus_token is not None else "resampled")
        assert 0 < min(record["q_draft_tokens"]) and max(record["q_draft_tokens"]) <= 1
    chain = speculative_generate(target, draft, PROMPTS[1], max_new_tokens=8, k=2, temperature=0,
                                 generator=torch.Generator(), record=True)[1]
    assert "parents" not in chain.steps[0].to_dict() and "path" not in chain.steps[0].to_dict()


def test_a_tree_drafter_refuses_what_it_cannot_do(close_pair):
    target, draft = close_pair
    with pytest.raises(ValueError, match="not both"):
        TreeDrafter(draft, TreeShape.chain(2), width=2, depth=2, nodes=4)
    with pytest.raises(ValueError, match="draws 0, 1"):
        TreeDrafter(draft, TreeShape(((0,), (2,), (1,), (0, 1))), sampled=True)
    with pytest.raises(ValueError, match="static shape"):
        TreeDrafter(draft, width=2, depth=2, nodes=3, sampled=True)
    with pytest.raises(ValueError, match="nodes must be"):
        TreeDrafter(draft, width=2, depth=2, nodes=0)
    with pytest.raises(TypeError, match="policy='fixed'"):
        speculative_generate(target, TreeDrafter(draft, TreeShape.chain(2)), PROMPTS[0], max_new_tokens=4, k=2,
                             temperature=0, generator=torch.Generator(), policy="adaptive")


def test_tree_proposals_are_checked_before_the_target_sees_them():
    V = 6

    def proposal(tokens, parents):  # one-hot q: the chosen children's
        return Proposal(torch.tensor(tokens), torch.eye(V)[tokens], [1.0] * len(tokens), "model", parents)

    check_proposal(proposal([1, 2, 3], [-1, -1, 0]), 2, V, "t")
    for parents, budget, message in [([-1, 0, 0], 1, "deeper than"), ([0, -1, -1], 3, "earlier node"),
                                     ([-1, -1], 3, "earlier node"), ([-1, True, 0], 3, "earlier node")]:
        with pytest.raises(ValueError, match=message):
            check_proposal(proposal([1, 2, 3], parents), budget, V, "t")
    with pytest.raises(ValueError, match="same token"):
        check_proposal(proposal([1, 1], [-1, -1]), 3, V, "t")
    assert proposal([1, 2], [-1, 0]).n == 2


def test_the_mask_and_position_variants_break_greedy_equality(close_pair):
    """The tree's own wrong variants, caught on the decoder by the greedy check (the sampled ones: test_mutants)."""
    from specdec_site.exactness.mutants import check_tree_greedy_equality

    assert check_tree_greedy_equality() is None
    for name in ("tree_mask_sees_siblings", "tree_positions_by_index"):
        with mutated(BY_NAME[name]):
            assert check_tree_greedy_equality() is not None, name


# ---------------------------------------------------------------- sampled sequences (slow tier)

VOCAB, NEW = 6, 3
PROMPT = torch.tensor([0, 3, 5])
# (settings, drafter, N): N is the least number of sequences (a multiple of 50) at which the test that must pass
# (p > 1e-3) would fail a wrong tree variant under the same settings with probability >= 0.99 (tests/power.py's
# POWER), from that variant's per-draw noncentrality measured at 3000 sequences (power.measured_noncentrality, a
# lower bound) or, where it makes sequences the target never makes, from the rate of those (any one fails the test):
# the siblings mask (0.125, 0.122, 0.088, 0.067 per draw under the first four settings; 1.5% of sequences impossible
# under the fifth, 350), the residual keeping tried children (0.120 under the sixth, where the sampled children of a
# peaked q rarely branch enough for the mask to show).
SAMPLED_CASES = {
    "full 2x3, T=1": (SamplingConfig(1.0), lambda d: TreeDrafter(d, TreeShape.full(2, 3)), 550),
    "dynamic 3x3 (6 nodes), T=0.6": (SamplingConfig(0.6), lambda d: TreeDrafter(d, width=3, depth=3, nodes=6), 450),
    "one level of 3 leaves, T=0.6": (SamplingConfig(0.6), lambda d: TreeDrafter(d, TreeShape.full(3, 1)), 700),
    "sampled children 2x3, T=1": (SamplingConfig(1.0), lambda d: TreeDrafter(d, TreeShape.full(2, 3), sampled=True),
                                  1050),
    "full 2x3, T=0.9 top-k 4 top-p 0.95": (SamplingConfig(0.9, top_k=4, top_p=0.95),
                                            lambda d: TreeDrafter(d, TreeShape.full(2, 3)), 350),
    "sampled children 3x3, T=0.9 top-p 0.95": (SamplingConfig(0.9, top_p=0.95),
                                                lambda d: TreeDrafter(d, TreeShape.full(3, 3), sampled=True), 550),
}
# (variant, settings, N): the same test at the larger of its settings' N above and the least N at which the test
# that must fail (p < 1e-6) does with probability >= 0.99 by the same measurements (800, 650; the leaf bonus without
# the sampling settings, 0.349 per draw: 200; the residual keeping tried children, 0.718: 100). At the smaller
# sizes alone the two strongest variants passed seed 1: the measured bound, taken at 3000 sequences' bins, does not
# carry down to 100 or 200 sequences, whose bins pool most sequences.
WRONG_CASES = [("tree_leaf_bonus_unwarped", "one level of 3 leaves, T=0.6", 700),
               ("tree_mask_sees_siblings", "full 2x3, T=1", 800),
               ("tree_positions_by_index", "full 2x3, T=1", 650),
               ("tree_residual_keeps_tried", "sampled children 2x3, T=1", 1050)]


@pytest.fixture(scope="module")
def tiny_pair():
    with one_thread():
        yield make_tiny_lm(seed=21, vocab_size=VOCAB, init_scale=0.5), make_tiny_lm(seed=22, vocab_size=VOCAB, init_scale=0.5)


def tree_counts(target, draft, case, n, seed):
    config, make, _ = SAMPLED_CASES[case]
    with one_thread():
        return sample_sequence_counts(target, make(draft), PROMPT, NEW, n, seed, k=NEW, temperature=config.temperature,
                                      top_k=config.top_k, top_p=config.top_p)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(SAMPLED_CASES))
def test_tree_decoding_samples_the_target_distribution(tiny_pair, case):
    target, draft = tiny_pair
    config, _, n = SAMPLED_CASES[case]
    result = chi_square_test(tree_counts(target, draft, case, n, seed=1), sequence_distribution(target, PROMPT, NEW, config))
    assert result["p_value"] > 1e-3, result


@pytest.mark.slow
@pytest.mark.parametrize("mutant, case, n", WRONG_CASES)
def test_the_wrong_tree_variants_fail_the_same_test(tiny_pair, mutant, case, n):
    target, draft = tiny_pair
    exact = sequence_distribution(target, PROMPT, NEW, SAMPLED_CASES[case][0])
    with mutated(BY_NAME[mutant]):
        counts = tree_counts(target, draft, case, n, seed=1)
    zero = [s for s in counts if exact.get(s, 0.0) == 0.0]
    assert zero or chi_square_test(counts, exact)["p_value"] < 1e-6


@pytest.mark.parametrize("quick", [False, True])
def test_the_per_set_design_prompts_are_held_out_of_every_benchmark(quick):
    """The trees stage's model per set is fitted on prompts after the core set, the most of a set any stage runs
    (policies' matrix and core set, the trees stage's and the block stage's prompts are its first ones)."""
    from specdec_site.engine.config import build_config
    from specdec_site.public_prompts import public_prompts
    from specdec_site.stages.trees import held_out_prompts

    cfg = build_config(quick)
    for domain in cfg.tree_prompts:
        used = max([cfg.core_prompts[domain], cfg.policy_prompts[domain], cfg.tree_prompts[domain],
                    *(per_set.get(domain, 0) for _, per_set in cfg.block_runs)])
        assert used == cfg.core_prompts[domain]
        benchmarked = {p["text"] for p in public_prompts(domain, cfg.policy_prompt_start, used)}
        held_out = held_out_prompts(cfg, domain)
        assert len(held_out) == cfg.tree_design_prompts and not benchmarked & {p["text"] for p in held_out}
