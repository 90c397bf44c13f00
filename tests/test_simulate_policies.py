"""scripts/simulate_policies.py: its replay of a length policy on recorded greedy draft chains takes the
decoder's own steps (the premise of the tool), and no policy beats the oracle."""

import copy
import importlib.util
from pathlib import Path

import pytest
import torch

from specdec import AdaptivePolicy, speculative_generate
from specdec.exact import make_tiny_lm
from specdec.policies import make_policy

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("simulate_policies", ROOT / "scripts" / "simulate_policies.py")
sim = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sim)

N_NEW, K = 24, 6


@pytest.fixture(scope="module")
def pair():
    """A target and a draft that agree often but not always: the target with a perturbed output head."""
    target = make_tiny_lm(seed=21, vocab_size=16, init_scale=0.5)
    draft = copy.deepcopy(target)
    with torch.no_grad():
        draft.lm_head.weight += 0.6 * torch.randn(draft.lm_head.weight.shape, generator=torch.Generator().manual_seed(3))
    return target, draft


def policies():
    # the adaptive rule with pinned costs: its choices do not depend on wall time, so the replay can match it
    return [("fixed", lambda: make_policy("fixed", K)), ("confidence", lambda: make_policy("confidence", K)),
            ("heuristic", lambda: make_policy("heuristic", K)),
            ("adaptive", lambda: AdaptivePolicy(K, draft_cost=0.1, verify_slope=0.02))]


@pytest.mark.parametrize("name,factory", policies(), ids=[n for n, _ in policies()])
def test_replay_takes_the_decoders_steps(pair, name, factory):
    target, draft = pair
    ids = torch.tensor([1, 5, 2, 5, 7])
    chains = sim.record_chains(target, draft, ids, N_NEW, K)
    assert len(chains) == N_NEW and 0 < sum(c["accepted"] for c in chains) < N_NEW * K  # partial agreement
    _, trace = speculative_generate(target, draft, ids, max_new_tokens=N_NEW, k=K, temperature=0.0,
                                    generator=torch.Generator().manual_seed(0), policy=factory(), record=True)
    _, steps = sim.replay_one(chains, factory(), (0.1, 1.0, 0.02))
    assert steps == [(s.k, s.n_accepted) for s in trace.steps]
    assert len(steps) > 3


def test_no_policy_beats_the_oracle(pair):
    target, draft = pair
    chains = sim.record_chains(target, draft, torch.tensor([3, 3, 4]), N_NEW, K)
    cost = (0.15, 1.0, 0.03)
    oracle = sim.oracle_one(chains, cost)
    for name, factory in [*policies(), *((n, lambda f=f: f(K)) for n, f in sim.study().items())]:
        seconds, steps = sim.replay_one(chains, factory(), cost)
        assert seconds >= oracle - 1e-9, name
        assert sum(a + 1 for _, a in steps) >= N_NEW  # every token emitted (the last step may end past none)


def test_oracle_plus_one_pays_one_rejected_draft_per_step():
    # agreements T T F F T T: accepted runs from each start 2 1 0 0 2 1 (chains of at most n - t tokens)
    chains = [{"confidences": [0.9] * n, "accepted": a} for n, a in zip((6, 5, 4, 3, 2, 1), (2, 1, 0, 0, 2, 1))]
    d, a, b = cost = (0.1, 1.0, 0.02)
    # oracle steps (eq. 13): 2, 0, 1 drafts; plus one: 3 (2 accepted + the rejected), 1 (the rejected), 1 (the end)
    assert sim.oracle_one(chains, cost) == pytest.approx(3 * d + 3 * a + 3 * b)
    assert sim.oracle_plus_one(chains, cost, k=16) == pytest.approx(5 * d + 3 * a + 5 * b)
    assert sim.oracle_plus_one(chains, cost, k=1) == pytest.approx(4 * d + 4 * a + 4 * b)  # capped: one more step


def test_hindsight_bound_is_a_replayable_rule_below_the_oracle(pair):
    target, draft = pair
    prompts = [{"chains": sim.record_chains(target, draft, torch.tensor(ids), N_NEW, K)} for ids in ([3, 3, 4], [1, 5, 2])]
    cost = (0.15, 1.0, 0.03)
    bound, tau = sim.hindsight_bound(prompts, [sim.oracle_one(p["chains"], cost) for p in prompts], cost, K)
    assert tau in sim.TAUS and 0 < bound <= 1 + 1e-9
    calibration = sim.hindsight_calibration(prompts)
    ratios = [sim.oracle_one(p["chains"], cost) / sim.replay_one(p["chains"], sim.hindsight_policy(calibration, K, tau),
                                                                 cost)[0] for p in prompts]
    assert bound == pytest.approx(sorted(ratios)[0] / 2 + sorted(ratios)[1] / 2)  # the median of the two prompts


def test_replay_refuses_a_cap_beyond_the_recorded_chains(tmp_path):
    chains = tmp_path / "chains.json"
    chains.write_text('{"k": 4, "tokens": 2, "prompts": []}')
    for k in ("5", "-1"):
        with pytest.raises(SystemExit, match="recorded with up to 4 drafts"):
            sim.main(["replay", str(chains), "--k", k])


@pytest.mark.parametrize("argv", [["--start", "-1"], ["--count", "0"], ["--tokens", "0"], ["--k", "0"],
                                  ["--domains", "poetry"]])
def test_collect_checks_its_arguments_before_loading_a_model(argv, monkeypatch, capsys):
    import specdec_site.cli

    monkeypatch.setattr(specdec_site.cli, "make_context", lambda *a, **k: pytest.fail("a model was loaded"))
    with pytest.raises(SystemExit) as exit_info:
        sim.main(["collect", "--out", "/dev/null", *argv])
    assert exit_info.value.code == 2 and argv[0] in capsys.readouterr().err
