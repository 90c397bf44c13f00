"""Nothing silently wrong, part 2: what a drafter or a policy returns is checked before it is used, scalar
arguments have one type rule, and the build proves its output folder writable before any model loads.

Each case here returned output (or a traceback) before the checks existed: a drafter reporting a scaled, NaN,
negative or zero q gave output 0.01-0.53 in total variation from p with no error; a drafter proposing past its
budget returned more than max_new_tokens; `k` beside a policy object was ignored; a budget of -1, 1.5, NaN, None or
True, an eos_token_id of "12" (read as {1, 2}) or True (read as 1), generator=None (the global RNG)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from entry import run_entry

from specdec import FixedPolicy, ModelDrafter, NgramDrafter, autoregressive_generate, speculative_generate
from specdec.drafters import Proposal
from specdec.policies import DraftPolicy
from specdec_site.exactness.exact import make_tiny_lm

PROMPT = torch.tensor([1, 2, 3])
V = 12


@pytest.fixture(scope="module")
def pair():
    return make_tiny_lm(seed=5, vocab_size=V), make_tiny_lm(seed=6, vocab_size=V)


def greedy(target, n=8):
    return autoregressive_generate(target, PROMPT, max_new_tokens=n, temperature=0.0, generator=torch.Generator())


def spec(target, draft, **kw):
    args = dict(max_new_tokens=8, k=3, temperature=1.0, generator=torch.Generator().manual_seed(0)) | kw
    return speculative_generate(target, draft, PROMPT, **args)


# ---------------------------------------------------------------- the drafter's proposal


class ReportsAnotherQ(ModelDrafter):
    """Samples from its real q, then reports a transformed one: the bug the proposal check exists for."""

    def __init__(self, model, transform):
        super().__init__(model)
        self.transform = transform

    def propose(self, context, budget, config, generator, policy):
        proposal = super().propose(context, budget, config, generator, policy)
        return Proposal(proposal.tokens, self.transform(proposal.q_draft.clone(), proposal.tokens),
                        proposal.confidences, proposal.source)


def _zero_at_token(q, tokens):
    q[torch.arange(len(tokens)), tokens] = 0.0
    return q / q.sum(-1, keepdim=True)


def _negative(q, tokens):
    q[:, (tokens[0] + 1) % q.shape[1]] -= 0.01
    q[:, (tokens[0] + 2) % q.shape[1]] += 0.01
    return q


@pytest.mark.parametrize("transform,message", [
    (lambda q, t: q * 0.9, "do not sum to 1"),
    (lambda q, t: q * 1.1, "do not sum to 1"),
    (lambda q, t: torch.full_like(q, float("nan")), "NaN or infinite q"),
    (_negative, "negative q"),
    (_zero_at_token, "its own q gives probability 0"),
    (lambda q, t: q[:, :-1], r"shape \(\d, 12\)"),
    (lambda q, t: q.double(), "must be float32"),
], ids=["scaled_down", "scaled_up", "nan", "negative", "zero_at_token", "short_rows", "float64"])
def test_a_q_other_than_the_one_sampled_from_is_refused(pair, transform, message):
    target, draft = pair
    with pytest.raises(ValueError, match=message):
        spec(target, ReportsAnotherQ(draft, transform))
    assert spec(target, ModelDrafter(draft)).shape[0] == 8  # the honest drafter runs


class TooMany(NgramDrafter):
    """Proposes budget + 2 tokens (one-hot q, otherwise well-formed)."""

    def propose(self, context, budget, config, generator, policy):
        tokens = torch.tensor([3] * (budget + 2))
        q = torch.zeros(len(tokens), self.vocab_size)
        q[:, 3] = 1.0
        return Proposal(tokens, q, [1.0] * len(tokens), "ngram")


def test_a_proposal_past_its_budget_is_refused(pair):
    target, _ = pair
    for n in (1, 2, 5):
        with pytest.raises(ValueError, match="more than this step's budget"):
            spec(target, TooMany(), max_new_tokens=n)


class Garbage(NgramDrafter):
    """Proposes ids outside the vocabulary (what an unwritten torch.empty slot holds)."""

    def propose(self, context, budget, config, generator, policy):
        tokens = torch.tensor([2**40] * budget)
        return Proposal(tokens, torch.full((budget, self.vocab_size), 1.0 / self.vocab_size), [1.0] * budget, "ngram")


def test_ids_outside_the_vocabulary_are_refused(pair):
    target, _ = pair
    with pytest.raises(ValueError, match=r"ids outside the vocabulary"):
        spec(target, Garbage())


class Vandal(ModelDrafter):
    """Overwrites the committed tokens it is shown, then proposes honestly."""

    def propose(self, context, budget, config, generator, policy):
        context[:] = 0
        return super().propose(context, budget, config, generator, policy)


def test_a_drafter_cannot_change_the_committed_sequence(pair):
    """The drafter gets a copy: its writes reach neither the output nor the target's input."""
    target, draft = pair
    out = spec(target, Vandal(draft), temperature=0.0, max_new_tokens=10)
    assert out.tolist() == greedy(target, 10).tolist()


def test_a_drafter_returning_something_else_is_a_type_error(pair):
    target, draft = pair

    class Tuple(ModelDrafter):
        def propose(self, *args):
            p = super().propose(*args)
            return p.tokens, p.q_draft

    with pytest.raises(TypeError, match="must return a specdec Proposal"):
        spec(target, Tuple(draft))


# ---------------------------------------------------------------- policies: k and the budget


def test_k_and_a_policy_object_follow_one_rule(pair):
    target, draft = pair
    with pytest.raises(ValueError, match=r"k=2 disagrees with the policy object's own k=6"):
        spec(target, draft, k=2, policy=FixedPolicy(6))
    _, trace = spec(target, draft, k=None, policy=FixedPolicy(6), max_new_tokens=20, record=True)
    assert trace.k == 6 and max(s.k for s in trace.steps) == 6
    _, same = spec(target, draft, k=6, policy=FixedPolicy(6), max_new_tokens=20, record=True)
    assert same.k == 6
    with pytest.raises(ValueError, match="pass k with a policy name"):
        spec(target, draft, k=None, policy="fixed")


class Budget(DraftPolicy):
    def __init__(self, value):
        super().__init__(4)
        self.value = value

    def budget(self):
        return self.value


@pytest.mark.parametrize("value", [-1, 1.5, float("nan"), None, True, 5, "2"])
def test_a_bad_budget_is_a_clear_error(pair, value):
    target, draft = pair
    for drafter in (draft, NgramDrafter()):
        with pytest.raises((TypeError, ValueError), match=r"Budget.budget\(\) must return an integer in \[0, k = 4\]"):
            spec(target, drafter, k=None, policy=Budget(value))


@pytest.mark.parametrize("value", [0, 3, np.int64(2), torch.tensor(1)])
def test_integer_budgets_of_any_kind_are_accepted(pair, value):
    target, draft = pair
    out = spec(target, draft, k=None, policy=Budget(value), temperature=0.0)
    assert out.tolist() == greedy(target).tolist()


# ---------------------------------------------------------------- scalar arguments


@pytest.mark.parametrize("eos,message", [
    ("12", "got the string '12'"),
    (True, "got bool True"),
    ([1, True], "got bool True"),
    (1.0, "got float 1.0"),
    (-1, "must be an id >= 0"),
])
def test_eos_token_id_is_an_id_or_a_list_of_ids(pair, eos, message):
    target, draft = pair
    for call in (lambda: spec(target, draft, eos_token_id=eos),
                 lambda: autoregressive_generate(target, PROMPT, max_new_tokens=4, temperature=1.0,
                                                 generator=torch.Generator(), eos_token_id=eos)):
        with pytest.raises((TypeError, ValueError), match=message):
            call()


def test_numpy_and_0d_tensor_integers_are_integers(pair):
    target, draft = pair
    reference = greedy(target, 6)
    for kind in (np.int64, np.int32, torch.tensor):
        out = spec(target, draft, max_new_tokens=kind(6), k=kind(2), temperature=0.0)
        assert out.tolist() == reference.tolist()
    eos = int(reference[2])
    for given in (np.int64(eos), torch.tensor(eos), torch.tensor([eos]), [np.int64(eos)]):
        out = spec(target, draft, max_new_tokens=6, temperature=0.0, eos_token_id=given)
        assert out.tolist() == reference[: reference.tolist().index(eos) + 1].tolist()
    with pytest.raises(TypeError, match="max_new_tokens must be a positive integer, got Tensor"):
        spec(target, draft, max_new_tokens=torch.tensor(6.0))


def test_generator_is_required_where_draws_happen(pair):
    """None would silently draw from the global RNG: not replayable, so refused by both decoders."""
    target, draft = pair
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        spec(target, draft, generator=None)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        autoregressive_generate(target, PROMPT, max_new_tokens=4, temperature=1.0, generator=None)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        spec(target, draft, generator=0)


def test_ngram_sizes_take_the_integer_rule():
    for bad in (dict(max_ngram=True), dict(max_ngram=2.0), dict(min_ngram=0), dict(min_ngram=3, max_ngram=2)):
        with pytest.raises((TypeError, ValueError), match="need integers 1 <= min_ngram <= max_ngram"):
            NgramDrafter(**bad)
    assert NgramDrafter(max_ngram=np.int64(2)).max_ngram == 2


def test_acceptance_rate_counts_verdicts_and_n_emitted_the_tokens_kept():
    """With an EOS inside an accepted block, the rule's verdicts (n_accepted) include the drafts after the EOS, which
    the output drops: acceptance_rate is the rule's rate (documented), n_emitted what was kept."""
    target = make_tiny_lm(seed=5, vocab_size=V)
    reference = greedy(target, 12).tolist()
    eos = reference[1]  # emitted second
    out, trace = speculative_generate(target, target, PROMPT, max_new_tokens=12, k=6, temperature=0.0,
                                      generator=torch.Generator(), eos_token_id=eos, record=True)
    assert out.tolist() == reference[: reference.index(eos) + 1]
    assert trace.n_emitted == len(out) < trace.n_accepted + 1  # the target as its own draft accepts all 6
    assert trace.acceptance_rate == 1.0
    assert "after an end-of-sequence token" in type(trace).acceptance_rate.__doc__


# ---------------------------------------------------------------- the build's output folder


def test_an_out_that_refuses_writes_fails_before_any_model_loads(tmp_path, capsys, monkeypatch):
    """As root every folder passes an access check; /proc refuses the write itself. The build creates the folder and
    a temporary file there first, and stops with one line before loading the pair (no model hub, no conversion; in
    this process: tests/entry.py)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path / "no-cache"))
    code, _, err = run_entry(["--out", "/proc/specdec-out", "--device", "cpu", "--stages", "traces"], capsys,
                             monkeypatch, context=True)
    assert code == 2, err[-2000:]
    assert "cannot write there" in err and "nothing was run" in err
    assert not (tmp_path / "no-cache").exists(), "a model was loaded before the folder was tried"


def test_a_second_build_of_the_same_folder_stops_before_any_model_loads(tmp_path, capsys, monkeypatch):
    """Two builds of one folder ran at once (a `site.sh` beside a running build): both timed on a shared CPU and
    interleaved their log lines. While one holds the folder's lock, another stops with one line, naming the holder,
    before loading the pair; once the lock is let go, the folder is free again."""
    from specdec_site.engine.options import hold_build_lock

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path / "no-cache"))
    out = tmp_path / "data"
    held = hold_build_lock(out)
    code, _, err = run_entry(["--out", str(out), "--device", "cpu", "--stages", "traces"], capsys, monkeypatch,
                             context=True)
    assert code == 2, err[-2000:]
    assert "another build is writing" in err and "nothing was run" in err and f"pid {os.getpid()}" in err
    assert not (tmp_path / "no-cache").exists(), "a model was loaded before the lock was tried"
    assert not (out / "build-log.txt").exists()
    held.close()  # the first build ends: its lock goes with it
    hold_build_lock(out).close()
