"""Draft-length policies and drafters: every combination stays exact, and each does what it says.

Exactness three ways for policies and drafters: exact enumeration (one-hot q, the n-gram drafter's),
chi-square of sampled sequences from tiny models for every policy and every drafter (the wrong residual
still fails), greedy token equality on tiny models here and on the real pair in test_real_pair.py.
"""

import pytest
import torch
from power import POWER, smallest_n_measured

from specdec import (
    AdaptivePolicy,
    ConfidencePolicy,
    HeuristicPolicy,
    HybridDrafter,
    NgramDrafter,
    SamplingConfig,
    autoregressive_generate,
    speculative_generate,
)
from specdec.policies import POLICIES, StepOutcome
from specdec_site.exactness.exact import (
    chi_square_test,
    first_token_distribution,
    make_tiny_lm,
    one_thread,
    sequence_distribution,
)
from specdec_site.exactness.mutants import naive_rule

VOCAB, NEW = 8, 3
# Sequences per chi-square test, computed (tests/power.py) for power POWER against the wrong residual with the hybrid
# drafter, whose law cannot be enumerated (the policies keep state): its per-draw noncentrality, measured on 3000
# sequences at another seed (1234; 33 bins, X^2 = 372, p ~ 1e-59, the same for the three policies) with
# power.measured_noncentrality, is at least 0.088 (two standard deviations under the estimate), so a test at level 1e-3 (the correct rule must pass it) finds it with
# probability >= POWER from N_PASS sequences on, and one at 1e-6 (the wrong rule must fail it) from N_FAIL on:
# smallest_n_measured(0.088, exact, level, POWER). They were 3000 each (82 s for the four tests, now about 20 s).
N_PASS, N_FAIL = 650, 950
MEASURED_PER_DRAW = 0.088
PROMPT = torch.tensor([0, 3, 5, 3])  # "3" repeats: the n-gram drafter has proposals to make
# The chi-square tests' prompt: no repeat, so the hybrid's first step is the model's, and later steps find n-grams in
# what it generated (both proposers draft hundreds of steps). The naive residual equals the correct one on n-gram
# steps (one-hot q), so only model steps can show it: after PROMPT, whose first step is the n-gram's, it failed only
# at p ~ 0.02 with 3000 sequences and needed 10^4 (72 s); after this one, p ~ 1e-59 at 3000, the tests' own size.
CHI_PROMPT = torch.tensor([0, 3, 5, 1])


@pytest.fixture(scope="module")
def models():
    with one_thread():
        yield make_tiny_lm(seed=11, vocab_size=VOCAB, init_scale=0.5), make_tiny_lm(seed=12, vocab_size=VOCAB, init_scale=0.5)


def make_drafter(name, draft):
    return {"model": draft, "ngram": NgramDrafter(), "hybrid": HybridDrafter(draft)}[name]


# ---------------------------------------------------------------- exact enumeration


def test_one_hot_q_is_exact_by_enumeration():
    """The n-gram drafter's q is one-hot: acceptance p(x), residual norm(max(0, p - delta_x)): output p."""
    gen = torch.Generator().manual_seed(7)
    worst = 0.0
    for trial in range(300):
        V, k = int(torch.randint(2, 7, (1,), generator=gen)), trial % 4 + 1
        p = torch.softmax(torch.randn(k + 1, V, generator=gen, dtype=torch.float64) * 2, -1)
        if trial % 3 == 0:
            p[0, int(torch.randint(V, (1,), generator=gen))] = 0.0  # a proposal the target never makes
            p[0] /= p[0].sum()
        x = torch.randint(V, (k,), generator=gen)
        q = torch.nn.functional.one_hot(x, V).double()
        worst = max(worst, float((first_token_distribution(p, q) - p[0]).abs().max()))
    assert worst < 1e-9


def test_for_one_hot_q_the_naive_residual_happens_to_coincide():
    """With q = delta_x, alpha = p(x) and max(0, p - alpha delta_x) = max(0, p - delta_x) off x and 0 at x:
    the wrong rule is harmless for prompt lookup (math page), so its power is shown with a model draft."""
    p = torch.tensor([[0.5, 0.3, 0.2], [1 / 3, 1 / 3, 1 / 3]], dtype=torch.float64)
    q = torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64)
    q_model = torch.tensor([[0.6, 0.1, 0.3]], dtype=torch.float64)
    with naive_rule():
        assert torch.allclose(first_token_distribution(p, q), p[0], atol=1e-12)
        assert (first_token_distribution(p, q_model) - p[0]).abs().max() > 1e-2


# ---------------------------------------------------------------- chi-square on tiny models


def sample_counts(target, draft, k, policy, drafter, seed, n, sources=False, **kw):
    """n sequences at T = 1; with sources=True also how many steps each proposer drafted."""
    gen = torch.Generator().manual_seed(seed)
    counts, used = {}, {"ngram": 0, "model": 0}
    for _ in range(n):
        result = speculative_generate(target, make_drafter(drafter, draft), CHI_PROMPT, max_new_tokens=NEW, k=k,
                                      temperature=1.0, generator=gen, policy=policy, record=sources, record_top=0, **kw)
        out = result[0] if sources else result
        counts[tuple(out.tolist())] = counts.get(tuple(out.tolist()), 0) + 1
        for step in result[1].steps if sources else ():
            used[step.source] += step.k > 0
    return (counts, used) if sources else counts


# Each policy with the hybrid drafter, whose steps come from the n-gram lookup (one-hot q) when the sequence
# has a match and from the model otherwise; the fixed policy with the model drafter is in
# tests/test_statistical.py, the pure n-gram proposal's one-hot q is enumerated exactly above. ~15 s each.
CASES = [pytest.param(policy, "hybrid", id=f"{policy}-hybrid") for policy in POLICIES if policy != "fixed"]


@pytest.mark.slow
@pytest.mark.parametrize("policy,drafter", CASES)
def test_every_policy_and_drafter_samples_the_target_distribution(models, policy, drafter):
    target, draft = models
    exact = sequence_distribution(target, CHI_PROMPT, NEW, SamplingConfig(1.0))
    counts, sources = sample_counts(target, draft, 3, policy, drafter, seed=99, n=N_PASS, sources=True)
    assert min(sources["ngram"], sources["model"]) > N_PASS // 10, f"both proposers must be exercised: {sources}"
    test = chi_square_test(counts, exact)
    assert test["bins"] >= 10
    assert test["p_value"] > 1e-3, test


@pytest.mark.slow
def test_the_wrong_residual_fails_with_the_adaptive_hybrid_drafter(models):
    target, draft = models
    exact = sequence_distribution(target, CHI_PROMPT, NEW, SamplingConfig(1.0))
    # The same test as above (prompt, seed; N_FAIL sequences): on CHI_PROMPT the model drafts most steps (see there)
    with naive_rule():
        counts, sources = sample_counts(target, draft, 3, "adaptive", "hybrid", seed=99, n=N_FAIL, sources=True)
    assert min(sources["ngram"], sources["model"]) > N_FAIL // 10, sources
    test = chi_square_test(counts, exact)
    assert test["p_value"] < 1e-6, test
    # the sizes are the ones the measured effect gives (above)
    assert smallest_n_measured(MEASURED_PER_DRAW, exact, 1e-3, POWER) == N_PASS
    assert smallest_n_measured(MEASURED_PER_DRAW, exact, 1e-6, POWER) == N_FAIL


# ---------------------------------------------------------------- greedy equality, behaviour, errors


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("drafter", ["model", "ngram", "hybrid"])
def test_greedy_equality_for_every_policy_and_drafter(policy, drafter):
    target, draft = make_tiny_lm(seed=3, init_scale=0.3), make_tiny_lm(seed=4, init_scale=0.3)
    prompt = torch.tensor([0, 5, 2, 7, 5, 2])
    gen = torch.Generator().manual_seed(0)
    ref = autoregressive_generate(target, prompt, max_new_tokens=30, temperature=0, generator=gen)
    out, trace = speculative_generate(target, make_drafter(drafter, draft), prompt, max_new_tokens=30, k=6,
                                      temperature=0, generator=gen, policy=policy, record=True,
                                      check_cache_invariant=True)
    assert out.tolist() == ref.tolist()
    assert trace.policy == policy and all(s.k <= 6 for s in trace.steps)


def test_policies_choose_different_lengths():
    target, draft = make_tiny_lm(seed=3, init_scale=0.3), make_tiny_lm(seed=4, init_scale=0.3)
    prompt = torch.tensor([0, 5, 2, 7])
    lengths = {}
    for policy in POLICIES:
        _, trace = speculative_generate(target, draft, prompt, max_new_tokens=40, k=8, temperature=0,
                                        generator=torch.Generator(), policy=policy, record=True)
        lengths[policy] = [s.k for s in trace.steps]
        if policy == "fixed":  # k every step, clamped only near max_new_tokens
            assert lengths[policy][0] == 8 and all(s.k == s.budget for s in trace.steps)
    assert len({tuple(v) for v in lengths.values()}) > 1, lengths
    assert lengths["heuristic"][0] == 5


def test_heuristic_schedule_follows_transformers():
    policy = HeuristicPolicy(8)
    assert policy.budget() == 5
    policy.observe(StepOutcome("model", 5, 5, [], None, None, False))
    assert policy.budget() == 7
    policy.observe(StepOutcome("model", 7, 7, [], None, None, False))
    assert policy.budget() == 8, "capped at k"
    policy.observe(StepOutcome("model", 8, 2, [], None, None, False))
    assert policy.budget() == 7


def test_confidence_policy_stops_below_its_threshold():
    policy = ConfidencePolicy(8, threshold=0.4)
    assert policy.keep_drafting(1, 0.9, "model") and not policy.keep_drafting(2, 0.3, "model")


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_confidence_is_the_drafts_own_top_probability_also_when_greedy(models, temperature):
    """At T = 0 q is one-hot, so its max is always 1: the confidence a policy sees must be the top of the
    draft's plain softmax there (as transformers reads it), else "confidence" never stops drafting and
    "adaptive" calibrates nothing. At T > 0 it is the top of q, the distribution the token was drawn from."""
    from specdec.policies import DraftPolicy

    target, draft = models

    class Spy(DraftPolicy):
        name = "spy"
        needs_confidence = True

        def __init__(self):
            super().__init__(3)
            self.seen = []

        def keep_drafting(self, n_drafted, confidence, source):
            self.seen.append(confidence)
            return True

    spy = Spy()
    speculative_generate(target, draft, PROMPT, max_new_tokens=4, k=3, temperature=temperature,
                         generator=torch.Generator().manual_seed(0), policy=spy)
    with torch.no_grad():
        logits = draft(PROMPT[None]).logits[0, -1].float()
    expected = torch.softmax(logits / (temperature or 1.0), -1).max().item()
    assert spy.seen[0] == pytest.approx(expected, abs=1e-6)
    assert all(0.0 < c <= 1.0 for c in spy.seen) and min(spy.seen) < 0.99, spy.seen
    # and the confidence policy does stop a greedy draft below its threshold
    threshold = sorted(spy.seen)[len(spy.seen) // 2]
    tokens, trace = speculative_generate(target, draft, PROMPT, max_new_tokens=6, k=8, temperature=0.0,
                                         generator=torch.Generator().manual_seed(0),
                                         policy=ConfidencePolicy(8, threshold=threshold), record=True)
    assert min(s.k for s in trace.steps) < 8


def test_adaptive_policy_drafts_long_when_cheap_and_reliable_and_short_otherwise():
    def run(policy, accept_rate, steps=60):
        lengths = []
        for step in range(steps):
            budget, n = policy.budget(), 0
            while n < budget:
                n += 1
                if not policy.keep_drafting(n, 0.95, "model"):
                    break
            n_acc = n if (step % 10) < accept_rate * 10 else 0
            policy.observe(StepOutcome("model", n, n_acc, [0.95] * n, None, None, False))
            lengths.append(n)
        return sum(lengths[-20:]) / 20

    cheap_good = run(AdaptivePolicy(16, draft_cost=0.02, verify_slope=0.01), accept_rate=1.0)
    dear_bad = run(AdaptivePolicy(16, draft_cost=0.5, verify_slope=0.05), accept_rate=0.3)
    assert cheap_good > 8 > dear_bad, (cheap_good, dear_bad)


@pytest.mark.parametrize("confidence", [0.25, 0.55, 0.75, 0.95, 0.999])
def test_the_first_step_follows_the_shipped_prior(confidence):
    """Before a run has told it anything, the adaptive policy drafts what eqs. (10)-(12) give with specdec.prior's
    numbers: token n + 1 while ACCEPTANCE[bin]^(n + 1) >= RATE (DRAFT_COST + VERIFY_SLOPE), in verify passes."""
    from specdec import prior

    def first_step(policy):
        n, budget = 0, policy.budget()
        while n < budget:
            n += 1
            if not policy.keep_drafting(n, confidence, "model"):
                break
        return n

    a = prior.ACCEPTANCE[min(9, int(confidence * 10))]
    threshold = prior.RATE * (prior.DRAFT_COST + prior.VERIFY_SLOPE)
    expected = next((n for n in range(1, 16) if a ** (n + 1) < threshold), 16)
    assert first_step(AdaptivePolicy(16)) == expected
    # the flat start believes the bin's centre and a rate of one token per pass
    centre = (min(9, int(confidence * 10)) + 0.5) / 10
    flat = next((n for n in range(1, 16) if centre ** (n + 1) < 1.0 * (0.25 + 0.05)), 16)
    assert first_step(AdaptivePolicy(16, prior=False)) == flat


def test_pinned_adaptive_runs_replay_exactly(models):
    target, draft = models

    def once():
        gen = torch.Generator().manual_seed(5)
        return speculative_generate(target, draft, PROMPT, max_new_tokens=12, k=8, temperature=1.0, generator=gen,
                                    policy=AdaptivePolicy(8, draft_cost=0.1, verify_slope=0.02)).tolist()
    assert once() == once()


def test_ngram_lookup_takes_the_latest_longest_match():
    drafter = NgramDrafter(max_ngram=2)
    assert drafter.lookup([1, 2, 3, 9, 1, 2, 4, 7, 1, 2], 3) == [4, 7, 1]
    assert drafter.lookup([5, 6, 7], 3) == []
    assert drafter.lookup([7, 7], 4) == [7]


@pytest.mark.parametrize("kwargs,message", [
    ({"policy": "bogus"}, "unknown draft-length policy 'bogus'"),
    ({"k": 0}, "must be >= 1"),
    ({"policy": "fixed", "k": 1.5}, "must be >= 1"),
])
def test_bad_policy_arguments_are_clear_errors(models, kwargs, message):
    target, draft = models
    args = {"max_new_tokens": 4, "k": 2, "temperature": 1.0, "generator": torch.Generator(), **kwargs}
    with pytest.raises(ValueError, match=message):
        speculative_generate(target, draft, PROMPT, **args)


def test_bad_policy_constructors_are_clear_errors():
    with pytest.raises(ValueError, match="draft_cost"):
        AdaptivePolicy(4, draft_cost=float("nan"))
    with pytest.raises(ValueError, match="must be >= 1"):
        AdaptivePolicy(0)
    with pytest.raises(ValueError, match="threshold"):
        ConfidencePolicy(4, threshold=2)
    with pytest.raises(ValueError, match="prior must be True"):
        AdaptivePolicy(4, prior="shipped")
    with pytest.raises(ValueError, match="min_ngram"):
        NgramDrafter(max_ngram=0)
    with pytest.raises(TypeError, match="Drafter"):
        speculative_generate(make_tiny_lm(1), "not a model", PROMPT, max_new_tokens=2, k=2, temperature=0,
                             generator=torch.Generator())


def _step(k, n_accepted, verify, draft_per_token=0.06, source="model", bonus=True):
    from types import SimpleNamespace

    return SimpleNamespace(k=k, n_accepted=n_accepted, emitted=[0] * (n_accepted + 1), verify_seconds=verify,
                           draft_seconds=draft_per_token * k, source=source,
                           bonus_token=0 if bonus and n_accepted == k else None)


def _measured(trace):
    return sum(s.draft_seconds + s.verify_seconds for s in trace.steps) + 0.05  # + time outside the steps


def _pooled_line_oracle(trace, seconds, traces):
    """75a72d3's oracle, a known wrong variant: the verify line (intercept too) fitted on all the prompt's runs,
    every draft at the model's cost per token."""
    from specdec.theory import VerifyCost, oracle_seconds, oracle_steps

    steps = trace.steps[1:]
    points = [(s.k, s.verify_seconds) for t in traces for s in t.steps[1:]]
    fit = VerifyCost([k for k, _ in points], [v for _, v in points])
    agree = []
    for s in steps:
        agree += [True] * s.n_accepted + [s.bonus_token is not None and s.k > 0] * (len(s.emitted) > s.n_accepted)
    model = [s for s in steps if s.k > 0 and s.source == "model"]
    per_token = sum(s.draft_seconds for s in model) / sum(s.k for s in model) if model else 0.0
    return seconds - sum(s.draft_seconds + s.verify_seconds for s in steps) + oracle_seconds(
        oracle_steps(agree), per_token, fit)


def test_the_oracle_takes_the_slope_from_the_prompts_runs_and_the_level_from_its_own():
    """The oracle bound (eq. 13) must never be slower than the run it bounds, and must be costed at that run's
    own level. Three cases from committed data:
    - a sampled adaptive run that drafts 1 at almost every step, with one slow 2-draft step: its own steps gave a
      slope of ~0.5 s per draft, and a line fitted on it alone made its oracle 2.2x the run's time;
    - a run measured while the host was faster than during the prompt's other runs: a line fitted on all the runs
      took its level from them, and its oracle came out slower than it (n-gram runs, up to 4%);
    - a hybrid run: its n-gram tokens were costed at the model's draft cost.
    The slope is pooled over the prompt's runs; the intercept and the draft costs are each run's own."""
    from types import SimpleNamespace

    from specdec_site.stages.policies import add_oracles, verify_slope

    prefill = _step(1, 1, 1.1)
    ones = SimpleNamespace(steps=[prefill, *[_step(1, 1, 0.25) for _ in range(24)], _step(2, 0, 0.8, bonus=False)])
    fours = SimpleNamespace(steps=[prefill, *[_step(4, 4, 0.29) for _ in range(8)]])
    assert verify_slope([ones]) > 0.4, "one run's steps: the slope the defect came from"
    assert 0 < verify_slope([ones, fours]) < 0.05

    # the n-gram run met a host 10% faster than the model runs' (verify 0.225 + 0.009 k, not 0.25 + 0.01 k), and
    # was close to its oracle: no match (k = 0), or a block rejected at its first token
    ngram = SimpleNamespace(steps=[prefill, *[_step(k, n, 0.9 * (0.25 + 0.01 * k), 0.0005, "ngram", bonus=False)
                                              for k, n in [(0, 0), (1, 0), (0, 0), (2, 1)] * 6]])
    # the hybrid: n-gram blocks (nearly free) rejected at their last token, model blocks at their first
    hybrid = SimpleNamespace(steps=[prefill, *[_step(k, n, 0.25 + 0.01 * k, 0.06 if src == "model" else 0.0005, src,
                                                     bonus=False)
                                               for k, n, src in [(6, 5, "ngram"), (1, 0, "model")] * 5]])
    traces = [ones, fours, ngram, hybrid]
    assert _pooled_line_oracle(ngram, _measured(ngram), traces) > _measured(ngram), "the level's defect"
    assert _pooled_line_oracle(hybrid, _measured(hybrid), traces) > _measured(hybrid), "the hybrid's defect"

    runs = [({"seconds": _measured(t), "speedup": 20 / _measured(t)}, t, 20.0) for t in traces]
    add_oracles(runs)
    for (entry, trace, _), name in zip(runs, ["ones", "fours", "ngram", "hybrid"]):
        bound = entry["oracle"]
        assert entry["measured_over_oracle"] <= 1.0 and entry["oracle_speedup"] >= entry["speedup"], name
        assert bound["verify_slope"] == pytest.approx(verify_slope(traces)), name
        # the run's own line: at its own draft lengths it sums to its measured verify time
        steps = trace.steps[1:]
        assert sum(bound["verify_intercept"] + bound["verify_slope"] * s.k for s in steps) == pytest.approx(
            sum(s.verify_seconds for s in steps)), name
        assert sum(bound["lengths"]) + len(bound["lengths"]) == sum(len(s.emitted) for s in steps), name
    # the hybrid's oracle drafts its 5 x 5 accepted n-gram tokens, at the n-gram's cost
    hybrid_bound = runs[3][0]["oracle"]
    assert hybrid_bound["lengths"] == [5, 0] * 5
    assert hybrid_bound["draft_seconds_per_token"] == pytest.approx(0.0005)


def test_the_oracle_is_never_slower_than_its_run_at_any_slope():
    """On the cost model it is built on, the run is one of the oracle's choices plus its rejected drafts: for random
    runs (sources, acceptances, bonus tokens, idle steps) and any slope, even one that makes drafting dearer than a
    target pass, measured >= oracle."""
    import random
    from types import SimpleNamespace

    from specdec_site.stages.policies import oracle

    rng = random.Random(7)
    for _ in range(300):
        steps = [_step(1, 1, 1.0)]
        for _ in range(rng.randint(0, 12)):
            k = rng.randint(0, 8)
            n = rng.randint(0, k)
            steps.append(_step(k, n, rng.uniform(0.2, 0.4) + rng.uniform(0, 0.03) * k, rng.uniform(0, 0.1),
                               rng.choice(["model", "ngram"]), bonus=rng.random() < 0.8))
        trace = SimpleNamespace(steps=steps)
        for slope in (0.0, 0.01, 0.1, 1.0):
            assert oracle(trace, _measured(trace), slope)["seconds"] <= _measured(trace) + 1e-12
