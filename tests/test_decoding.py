"""Decoder behaviour on tiny models: greedy equality, cache invariants, EOS, q, vocab padding, bad input."""

import pytest
import torch

from specdec import SamplingConfig, autoregressive_generate, probs_from_logits, speculative_generate
from specdec.cache import CachedLM
from specdec_site.exactness.exact import (
    chi_square_test,
    make_tiny_lm,
    naive_residual,
    sample_sequence_counts,
    sequence_distribution,
)

PROMPTS = [torch.tensor(p) for p in ([0, 3], [0, 5, 2, 7], [0], [0, 9, 9, 9, 4, 2])]


@pytest.fixture(scope="module")
def pair():
    return make_tiny_lm(seed=1), make_tiny_lm(seed=2)


def make_close_pair(noise: float = 0.02):
    """A draft that agrees with the target often: long accepted runs and all-accepted steps (the draft is the target's
    twin plus `noise` times Gaussian noise on every weight)."""
    target = make_tiny_lm(seed=3, init_scale=0.3)
    draft = make_tiny_lm(seed=3, init_scale=0.3)
    with torch.no_grad():
        for p in draft.parameters():
            p.add_(noise * torch.randn(p.shape, generator=torch.Generator().manual_seed(4)))
    return target, draft


@pytest.fixture(scope="module")
def close_pair():
    return make_close_pair()


def greedy_pair(target, draft, prompt, k, n=24, **kw):
    gen = torch.Generator().manual_seed(0)
    spec, trace = speculative_generate(target, draft, prompt, max_new_tokens=n, k=k, temperature=0,
                                       generator=gen, record=True, check_cache_invariant=True, **kw)
    ar = autoregressive_generate(target, prompt, max_new_tokens=n, temperature=0, generator=gen, **kw)
    return spec, ar, trace


@pytest.mark.parametrize("k", [1, 2, 4, 8])
@pytest.mark.parametrize("which", ["pair", "close_pair"])
def test_greedy_equals_autoregressive_tiny(request, which, k):
    target, draft = request.getfixturevalue(which)
    for prompt in PROMPTS:
        spec, ar, trace = greedy_pair(target, draft, prompt, k)
        assert spec.tolist() == ar.tolist()
        assert len(spec) == 24
        assert sum(len(s.emitted) for s in trace.steps) == 24


def test_target_only_greedy_equals_transformers_generate_tiny():
    """An oracle outside this package for the reference every greedy test compares with: transformers'
    own `generate` (greedy, its own cache) gives the tokens `autoregressive_generate` gives.

    Two behaviours of `generate` would change its output and are set aside here: `min_new_tokens`
    suppresses the EOS token (id 1 of these 12-token models, which greedy decoding often reaches), and a
    pad id found in the prompt (0 is also BOS here) is masked out of attention unless the mask is given."""
    from transformers import GenerationConfig

    n, compared = 16, 0
    for seed in range(6):
        model = make_tiny_lm(seed=seed)
        model.generation_config.eos_token_id = None  # run n tokens: no stop, no EOS suppression
        config = GenerationConfig(max_new_tokens=n, do_sample=False, num_beams=1, pad_token_id=0)
        for prompt in PROMPTS:
            ours = autoregressive_generate(model, prompt, max_new_tokens=n, temperature=0,
                                           generator=torch.Generator().manual_seed(0))
            theirs = model.generate(prompt[None], attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                                    generation_config=config)[0, len(prompt):]
            assert ours.tolist() == theirs.tolist(), (seed, prompt.tolist())
            compared += 1
    assert compared == 24


def test_hf_baseline_runs_exactly_n_tokens_past_eos_tiny():
    """Equal work beside HF: the policies stage runs specdec with no stop token, so `generate` must run
    exactly n tokens too. Leaving `eos_token_id` unset does not do that: transformers fills it from the
    model's own generation config and stops there. `specdec_site.stages.hf.generation_config` sets
    min_new_tokens = max_new_tokens instead, which masks EOS out; the output then follows the target's
    greedy output up to its first EOS (the stage counts a run with an EOS as not the same output)."""
    from types import SimpleNamespace

    from transformers import GenerationConfig

    from specdec_site.stages.hf import generation_config

    n, eos, reached = 16, 1, 0
    tokenizer = SimpleNamespace(pad_token_id=0, eos_token_id=eos)
    for seed in range(6):
        model = make_tiny_lm(seed=seed)
        model.generation_config.eos_token_id = eos
        for prompt in PROMPTS:
            mask = torch.ones(1, len(prompt), dtype=torch.long)
            ours = autoregressive_generate(model, prompt, max_new_tokens=n, temperature=0,
                                           generator=torch.Generator().manual_seed(0)).tolist()
            theirs = model.generate(prompt[None], attention_mask=mask,
                                    generation_config=generation_config(tokenizer, n))[0, len(prompt):].tolist()
            cut = ours.index(eos) if eos in ours else n
            assert len(theirs) == n and eos not in theirs and theirs[:cut] == ours[:cut], (seed, prompt.tolist())
            if cut < n:
                reached += 1
                unset = GenerationConfig(max_new_tokens=n, do_sample=False, num_beams=1, pad_token_id=0)
                stopped = model.generate(prompt[None], attention_mask=mask, generation_config=unset)[0, len(prompt):]
                assert stopped.tolist() == ours[:cut + 1], "an unset eos_token_id should stop at the model's EOS"
    assert reached >= 3, f"only {reached} of 24 greedy runs reached EOS: the case is untested"


def test_close_pair_exercises_all_accepted_steps(close_pair):
    target, draft = close_pair
    _, _, trace = greedy_pair(target, draft, PROMPTS[1], k=4)
    assert any(s.bonus_token is not None for s in trace.steps), "no all-accepted step: draft-cache path untested"
    assert any(s.resampled_token is not None for s in trace.steps), "no rejection: rollback path untested"


def test_broken_rollback_is_caught(close_pair, monkeypatch):
    """A decoder that forgets to roll back rejected positions must fail the cache checks."""
    target, draft = close_pair
    monkeypatch.setattr(CachedLM, "rollback", lambda self, length: None)
    with pytest.raises(AssertionError, match="cache holds"):
        greedy_pair(target, draft, PROMPTS[1], k=4)


def test_cache_contents_match_a_fresh_forward(close_pair):
    """After a speculative run, the cache equals the keys a single fresh pass computes."""
    target, draft = close_pair
    gen = torch.Generator().manual_seed(3)
    prompt = PROMPTS[3]
    captured = {}
    original = CachedLM.rollback

    def spy(self, length):
        original(self, length)
        captured[id(self)] = self
    CachedLM.rollback = spy
    try:
        out = speculative_generate(target, draft, prompt, max_new_tokens=10, k=3, temperature=1.0, generator=gen)
    finally:
        CachedLM.rollback = original
    seq = torch.cat([prompt, out])
    for lm in captured.values():
        fresh = CachedLM(lm.model, lm.vocab_size)
        fresh.logits(seq[None, : lm.cached], 1)
        for got, want in zip(lm.cache.layers, fresh.cache.layers):
            torch.testing.assert_close(got.keys, want.keys, atol=1e-5, rtol=1e-4)
            torch.testing.assert_close(got.values, want.values, atol=1e-5, rtol=1e-4)


def test_sampled_run_is_replayable(pair):
    """Same seed, same tokens and same steps (draws, fates, q and p), timings aside (the Reproduce page says so)."""
    target, draft = pair
    runs = []
    for _ in range(2):
        gen = torch.Generator().manual_seed(42)
        tokens, trace = speculative_generate(target, draft, PROMPTS[1], max_new_tokens=16, k=3, temperature=0.9,
                                             top_k=6, generator=gen, record=True)
        steps = [{k: v for k, v in step.items() if not k.endswith("_seconds")} for step in trace.to_dict()["steps"]]
        runs.append((tokens.tolist(), steps))
    assert runs[0] == runs[1] and len(runs[0][1]) > 2


def test_trace_records_the_q_the_draft_sampled_from(pair):
    """q in the trace is the draft's distribution after the same temperature/top-k/top-p as p."""
    target, draft = pair
    config = SamplingConfig(0.7, top_k=4, top_p=0.8)
    gen = torch.Generator().manual_seed(9)
    prompt = PROMPTS[1]
    out, trace = speculative_generate(target, draft, prompt, max_new_tokens=12, k=3, temperature=0.7, top_k=4,
                                      top_p=0.8, generator=gen, record=True)
    seq = torch.cat([prompt, out]).tolist()
    for step in trace.steps:
        prefix = seq[: len(prompt) + step.position]
        for i, x in enumerate(step.draft_tokens):
            with torch.no_grad():
                logits = draft(input_ids=torch.tensor([prefix + step.draft_tokens[:i]])).logits[0, -1]
                q = probs_from_logits(logits, config)
                p = probs_from_logits(target(input_ids=torch.tensor([prefix + step.draft_tokens[:i]])).logits[0, -1],
                                      config)
            assert step.q_draft_tokens[i] == pytest.approx(float(q[x]), abs=1e-5)
            assert step.p_draft_tokens[i] == pytest.approx(float(p[x]), abs=1e-5)
            assert float(q[x]) > 0, "the draft proposed a token outside its own top-k/top-p set"
    assert [t for s in trace.steps for t in s.emitted] == out.tolist()


def test_trace_fields_are_consistent(close_pair):
    target, draft = close_pair
    gen = torch.Generator().manual_seed(1)
    out, trace = speculative_generate(target, draft, PROMPTS[0], max_new_tokens=20, k=4, temperature=1.0,
                                      generator=gen, record=True, record_top=5)
    for s in trace.steps:
        assert s.accepted == [i < s.n_accepted for i in range(s.k)]
        assert s.emitted[: s.n_accepted] == s.draft_tokens[: s.n_accepted]
        assert (s.bonus_token is None) != (s.resampled_token is None)
        assert (s.bonus_token is not None) == (s.n_accepted == s.k)
        for i in range(s.n_accepted):
            assert s.uniforms[i] < s.accept_probs[i]
        if s.n_accepted < s.k:
            assert s.uniforms[s.n_accepted] >= s.accept_probs[s.n_accepted]
            assert s.top_residual is not None and len(s.top_residual["ids"]) == 5
        assert len(s.top_p) == s.k + 1 and len(s.top_q) == s.k
    d = trace.to_dict()
    assert d["n_emitted"] == len(out) == 20
    assert 0 <= d["acceptance_rate"] <= 1


def test_eos_stops_generation_and_nothing_follows(pair):
    target, draft = pair
    gen = torch.Generator().manual_seed(0)
    ar_free = autoregressive_generate(target, PROMPTS[1], max_new_tokens=20, temperature=0, generator=gen).tolist()
    eos = ar_free[5]  # a token greedy decoding reaches at position >= 5
    first = ar_free.index(eos)
    for k in (1, 3, 8):
        spec = speculative_generate(target, draft, PROMPTS[1], max_new_tokens=20, k=k, temperature=0,
                                    generator=gen, eos_token_id=eos).tolist()
        ar = autoregressive_generate(target, PROMPTS[1], max_new_tokens=20, temperature=0, generator=gen,
                                     eos_token_id=[eos]).tolist()
        assert spec == ar == ar_free[: first + 1]


def test_max_new_tokens_is_never_exceeded(close_pair):
    target, draft = close_pair
    for n in (1, 2, 3, 5, 9):
        gen = torch.Generator().manual_seed(n)
        out = speculative_generate(target, draft, PROMPTS[0], max_new_tokens=n, k=4, temperature=1.0, generator=gen)
        assert len(out) == n


def test_draft_with_more_rows_is_refused_unless_they_are_padding():
    """A draft head larger than the target's could propose ids the target cannot score: refused, naming
    both sizes; with vocab_size (the tokenizer's size) the padding rows are cut in both decoders."""
    target = make_tiny_lm(seed=5, vocab_size=12)
    draft = make_tiny_lm(seed=6, vocab_size=16)
    with torch.no_grad():
        draft.lm_head.weight[12:] = 0
        draft.lm_head.weight[12:, 0] = 50.0  # padding rows would win every argmax
    with pytest.raises(ValueError, match="16 rows, the target's 12"):
        speculative_generate(target, draft, PROMPTS[0], max_new_tokens=4, k=2, temperature=0,
                             generator=torch.Generator())
    for prompt in PROMPTS[:2]:
        spec, ar, _ = greedy_pair(target, draft, prompt, k=3, n=12, vocab_size=12)
        assert spec.tolist() == ar.tolist()
        gen = torch.Generator().manual_seed(1)
        sampled = speculative_generate(target, draft, prompt, max_new_tokens=12, k=3, temperature=1.0, generator=gen,
                                       vocab_size=12)
        assert int(sampled.max()) < 12


def smaller_head_pair():
    """Target V=16; a draft that reads all 16 ids but scores only 8 (an unpadded smaller head)."""
    target = make_tiny_lm(seed=5, vocab_size=16)
    draft = make_tiny_lm(seed=6, vocab_size=16)
    draft.lm_head = torch.nn.Linear(draft.config.hidden_size, 8, bias=False)
    torch.nn.init.normal_(draft.lm_head.weight, std=0.6, generator=torch.Generator().manual_seed(6))
    return target, draft


# Sampled sequences of the smaller-head test: the least N at which its chi-square test (level 1e-3) fails the wrong
# residual with probability POWER, computed from both laws (tests/power.py; TV 0.054 here; 3000 before). The old bug
# (the target cut to the draft's 8 ids) is caught by the ids >= 8 alone: they are 82% of the target's sequences.
N_SMALLER_HEAD = 1850


def test_smaller_draft_head_is_exact_and_reaches_every_target_id():
    """Target V=16, draft V=8: ids >= 8 get q = 0, so the target still emits them (the old code cut the
    target to 8 ids: 0 of 300 runs reached them) and greedy output equals the target's."""
    target, draft = smaller_head_pair()
    with pytest.raises(ValueError, match="draft reads 8 ids, but the target may emit any of 16"):
        speculative_generate(target, make_tiny_lm(seed=6, vocab_size=8), PROMPTS[0], max_new_tokens=4, k=2,
                             temperature=0, generator=torch.Generator())
    for prompt in PROMPTS[:3]:
        spec, ar, _ = greedy_pair(target, draft, prompt, k=3, n=16)
        assert spec.tolist() == ar.tolist()
    counts = sample_sequence_counts(target, draft, torch.tensor([1, 2]), 2, 100, seed=3, k=2, temperature=1.0)
    assert sum(c for seq, c in counts.items() if max(seq) >= 8) > 0  # (1 - 0.82)^100: never 0 by chance


@pytest.mark.slow
def test_a_smaller_draft_head_samples_the_target_distribution():
    from power import POWER, smallest_n, speculative_distribution

    target, draft = smaller_head_pair()
    prompt = torch.tensor([1, 2])
    exact = sequence_distribution(target, prompt, 2, SamplingConfig(1.0))
    wrong = speculative_distribution(target, draft, prompt, 2, 2, SamplingConfig(1.0), naive_residual)
    assert smallest_n(exact, wrong, 1e-3, POWER) == N_SMALLER_HEAD
    counts = sample_sequence_counts(target, draft, prompt, 2, N_SMALLER_HEAD, seed=3, k=2, temperature=1.0)
    assert sum(c for seq, c in counts.items() if max(seq) >= 8) > 0
    result = chi_square_test(counts, exact)
    assert result["p_value"] > 1e-3, result


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(k=0), "k .* must be >= 1"),
        (dict(k=-2), "k .* must be >= 1"),
        (dict(temperature=-0.5), "temperature must be >= 0"),
        (dict(top_k=0), "top_k must be a positive"),
        (dict(top_p=1.5), "top_p must be in"),
        (dict(max_new_tokens=0), "max_new_tokens must be a positive"),
        (dict(input_ids=torch.tensor([], dtype=torch.int64)), "prompt is empty"),
        (dict(input_ids=torch.tensor([[0, 1], [0, 2]])), "batch size must be 1"),
        (dict(input_ids=torch.tensor([0.5, 1.0])), "integer torch.Tensor"),
    ],
)
def test_bad_input_gives_clear_error(pair, kwargs, message):
    target, draft = pair
    args = dict(input_ids=torch.tensor([0, 3]), max_new_tokens=4, k=2, temperature=1.0,
                generator=torch.Generator())
    args.update(kwargs)
    input_ids = args.pop("input_ids")
    with pytest.raises((ValueError, TypeError), match=message):
        speculative_generate(target, draft, input_ids, **args)


def test_probs_from_logits_rules():
    logits = torch.tensor([2.0, 1.0, 0.5, -1.0, 3.0])
    greedy = probs_from_logits(logits, SamplingConfig(0))
    assert greedy.tolist() == [0, 0, 0, 0, 1]
    top2 = probs_from_logits(logits, SamplingConfig(1.0, top_k=2))
    assert (top2 > 0).tolist() == [True, False, False, False, True]
    full = torch.softmax(logits, 0)
    nucleus = probs_from_logits(logits, SamplingConfig(1.0, top_p=0.8))
    order = torch.argsort(full, descending=True)
    kept = (nucleus > 0)[order].tolist()
    # the smallest prefix (by probability) whose mass reaches 0.8
    cum = torch.cumsum(full[order], 0)
    n_keep = int((cum < 0.8).sum()) + 1
    assert kept == [True] * n_keep + [False] * (5 - n_keep)
    assert float(nucleus.sum()) == pytest.approx(1.0)
    hot = probs_from_logits(logits, SamplingConfig(0.5))
    assert torch.allclose(hot, torch.softmax(logits / 0.5, 0))
    assert probs_from_logits(logits.half(), SamplingConfig(1.0)).dtype == torch.float32


def test_packed_linear_matches_nn_linear():
    from specdec.kernels import MIN_ROWS, PackedLinear, pack_linear_layers

    gen = torch.Generator().manual_seed(0)
    for bias in (True, False):
        lin = torch.nn.Linear(24, 40, bias=bias)
        packed = PackedLinear(lin)
        for shape in [(1, 24), (5, 24), (1, 3, 24), (2, 7, 24)]:
            x = torch.randn(shape, generator=gen)
            torch.testing.assert_close(packed(x), lin(x), atol=1e-5, rtol=1e-5)
    target = make_tiny_lm(seed=1)
    fast = pack_linear_layers(make_tiny_lm(seed=1))
    assert {m.min_rows for m in fast.modules() if isinstance(m, PackedLinear)} == {MIN_ROWS}
    assert not any(type(m) is torch.nn.Linear for m in fast.modules())
    ids = torch.tensor([[0, 3, 5, 7]])
    with torch.no_grad():
        torch.testing.assert_close(fast(ids).logits, target(ids).logits, atol=1e-4, rtol=1e-4)
    for prompt in PROMPTS:
        spec, ar, _ = greedy_pair(fast, make_tiny_lm(seed=2), prompt, k=3)
        assert spec.tolist() == ar.tolist()


def test_packed_linear_pads_few_rows():
    """Fewer than min_rows rows run as min_rows rows (the faster kernel) and the padding's outputs are dropped:
    each real row is exactly the row the unpadded kernel gives for the zero-padded input, and all shapes agree
    with nn.Linear."""
    from specdec.kernels import MIN_ROWS, PackedLinear

    assert MIN_ROWS > 1
    gen = torch.Generator().manual_seed(0)
    lin = torch.nn.Linear(32, 48)
    padded, plain = PackedLinear(lin), PackedLinear(lin, min_rows=1)
    for m in range(1, MIN_ROWS + 2):
        x = torch.randn(1, m, 32, generator=gen)
        out = padded(x)
        assert out.shape == (1, m, 48)
        torch.testing.assert_close(out, lin(x), atol=1e-5, rtol=1e-5)
        if m < MIN_ROWS:
            by_hand = plain(torch.cat([x[0], torch.zeros(MIN_ROWS - m, 32)]))[:m]
            assert torch.equal(out[0], by_hand)
    for bad in (0, -1, 2.0, None):
        with pytest.raises(ValueError, match="min_rows"):
            PackedLinear(lin, min_rows=bad)


def test_quantize_draft_never_copies_the_float_linear_weights_and_leaves_the_original():
    """The int8 copy is made from the original's Linear weights, shared during the copy (not deep-copied): the
    same int8 model as quantizing a whole deep copy, and the original unchanged."""
    import copy

    from torch.ao.quantization import quantize_dynamic

    from specdec import quantize_draft

    model = make_tiny_lm(4, 12)
    before = {name: t.clone() for name, t in model.state_dict().items()}
    ptrs = {name: t.data_ptr() for name, t in model.state_dict().items()}
    deep_copies = []
    original_deepcopy = copy.deepcopy

    def spy(obj, memo=None, *rest):
        if obj is model:
            deep_copies.append({k for k in (memo or {}) if k != id(memo)})
        return original_deepcopy(obj, memo, *rest)

    copy.deepcopy = spy
    try:
        int8 = quantize_draft(model)
    finally:
        copy.deepcopy = original_deepcopy
    linear_weights = {id(m.weight) for m in model.modules() if type(m) is torch.nn.Linear}
    assert deep_copies and linear_weights <= deep_copies[0], "the Linear weights were deep-copied"
    assert all(torch.equal(before[n], t) and t.data_ptr() == ptrs[n] for n, t in model.state_dict().items())
    assert not any(type(m) is torch.nn.Linear for m in int8.modules())
    reference = quantize_dynamic(copy.deepcopy(model), {torch.nn.Linear}, dtype=torch.qint8).eval()
    ids = torch.tensor([[1, 5, 7, 2]])
    with torch.inference_mode():
        assert torch.equal(int8(ids).logits, reference(ids).logits)
