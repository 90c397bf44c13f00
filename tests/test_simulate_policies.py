"""The design tool (specdec_site/design/, behind scripts/simulate_policies.py): its replay of a length policy on recorded greedy draft chains takes the
decoder's own steps (the premise of the tool), and no policy beats the oracle."""

import copy
import json

import pytest
import torch

from specdec import AdaptivePolicy, speculative_generate
from specdec.policies import make_policy
from specdec_site.design import chains as recording
from specdec_site.design import cli
from specdec_site.design import fit as fitting
from specdec_site.design import probe as probing
from specdec_site.design import replay as replaying
from specdec_site.exactness.exact import make_tiny_lm
from specdec_site.paths import ROOT

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
    chains = recording.record_chains(target, draft, ids, N_NEW, K)
    assert len(chains) == N_NEW and 0 < sum(c["accepted"] for c in chains) < N_NEW * K  # partial agreement
    _, trace = speculative_generate(target, draft, ids, max_new_tokens=N_NEW, k=K, temperature=0.0,
                                    generator=torch.Generator().manual_seed(0), policy=factory(), record=True)
    _, steps = replaying.replay_one(chains, factory(), recording.Costs(0.1, 1.0, 0.02))
    assert steps == [(s.k, s.n_accepted) for s in trace.steps]
    assert len(steps) > 3


def test_no_policy_beats_the_oracle(pair):
    target, draft = pair
    chains = recording.record_chains(target, draft, torch.tensor([3, 3, 4]), N_NEW, K)
    cost = recording.Costs(0.15, 1.0, 0.03)
    oracle = replaying.oracle_one(chains, cost)
    prompts = recording.with_depth([{"id": "a", "chains": chains},
                              {"id": "b", "chains": recording.record_chains(target, draft, torch.tensor([1, 5, 2]), N_NEW, K)}])
    candidates = replaying.candidates(K, prompts[0], prompts, signals=True)
    assert {"adaptive", "adaptive, flat prior", "adaptive, earlier rule", "adaptive, prior without this prompt",
            *(f"adaptive + {s}, prior without this prompt" for s in replaying.SIGNALS)} <= set(candidates)
    for name, factory in [*policies(), *candidates.items()]:
        seconds, steps = replaying.replay_one(chains, factory(), cost)
        assert seconds >= oracle - 1e-9, name
        assert sum(a + 1 for _, a in steps) >= N_NEW  # every token emitted (the last step may end past none)


def test_oracle_plus_one_pays_one_rejected_draft_per_step():
    # agreements T T F F T T: accepted runs from each start 2 1 0 0 2 1 (chains of at most n - t tokens)
    chains = [{"confidences": [0.9] * n, "accepted": a} for n, a in zip((6, 5, 4, 3, 2, 1), (2, 1, 0, 0, 2, 1))]
    d, a, b = 0.1, 1.0, 0.02
    cost = recording.Costs(d, a, b)
    # oracle steps (eq. 13): 2, 0, 1 drafts; plus one: 3 (2 accepted + the rejected), 1 (the rejected), 1 (the end)
    assert replaying.oracle_one(chains, cost) == pytest.approx(3 * d + 3 * a + 3 * b)
    assert replaying.oracle_plus_one(chains, cost, k=16) == pytest.approx(5 * d + 3 * a + 5 * b)
    assert replaying.oracle_plus_one(chains, cost, k=1) == pytest.approx(4 * d + 4 * a + 4 * b)  # capped: one more step


def test_measured_verify_costs_replace_the_line_where_a_k_has_them():
    chains = [{"confidences": [0.9] * n, "accepted": a} for n, a in zip((6, 5, 4, 3, 2, 1), (2, 1, 0, 0, 2, 1))]
    d, a, b = 0.1, 1.0, 0.02
    cost = recording.Costs(d, a, b, {3: 2.5, 1: 0.5})  # k = 3 dearer than its line, k = 1 cheaper; k = 0 on the line
    # the same steps as above: oracle 2, 0, 1 drafts; plus one 3, 1, 1
    assert replaying.oracle_one(chains, cost) == pytest.approx(3 * d + (a + 2 * b) + a + 0.5)
    assert replaying.oracle_plus_one(chains, cost, k=16) == pytest.approx(5 * d + 2.5 + 0.5 + 0.5)
    seconds, steps = replaying.replay_one(chains, make_policy("fixed", 3), cost)
    assert seconds == pytest.approx(sum(k * d + cost.verify(k) for k, _ in steps))
    assert recording.Costs(d, a, b).verify(7) == pytest.approx(a + 7 * b)  # no measured medians: the line throughout


def test_costs_take_each_k_s_median_over_the_committed_steps_after_the_first():
    step = lambda k, v: {"k": k, "verify_seconds": v}  # noqa: E731
    run = lambda steps: {"oracle": {"draft_seconds_per_token": 0.04, "verify_intercept": 0.25,  # noqa: E731
                                    "verify_slope": 0.01}, "steps": [step(2, 9.0), *steps]}
    rows = [{"variants": {"adaptive": run([step(2, 0.30), step(2, 0.20), step(5, 0.40)])}},
            {"variants": {"adaptive": run([step(2, 0.26), step(2, 0.28), step(2, 0.27), step(1, 0.3)])}}]
    data = {"domains": {"code": {"rows": rows}}}
    cost = recording.costs("code", data=data)
    assert cost.per_k == {2: pytest.approx(0.27)}  # the prefill steps (9 s) left out; k = 1 and 5 have < MIN_STEPS
    assert cost.verify(5) == pytest.approx(0.25 + 5 * 0.01)
    assert recording.costs("code", per_k=False, data=data).per_k == {}


def test_hindsight_threshold_is_a_replayable_rule_below_the_oracle(pair):
    target, draft = pair
    prompts = [{"chains": recording.record_chains(target, draft, torch.tensor(ids), N_NEW, K)} for ids in ([3, 3, 4], [1, 5, 2])]
    cost = recording.Costs(0.15, 1.0, 0.03)
    hindsight, tau = replaying.hindsight_threshold(prompts, [replaying.oracle_one(p["chains"], cost) for p in prompts], cost, K)
    assert tau in replaying.TAUS and 0 < hindsight <= 1 + 1e-9
    calibration = replaying.hindsight_calibration(prompts)
    ratios = [replaying.oracle_one(p["chains"], cost) / replaying.replay_one(p["chains"], replaying.hindsight_policy(calibration, K, tau),
                                                                 cost)[0] for p in prompts]
    assert hindsight == pytest.approx(sorted(ratios)[0] / 2 + sorted(ratios)[1] / 2)  # the median of the two prompts


def test_replay_refuses_a_cap_beyond_the_recorded_chains(tmp_path):
    chains = tmp_path / "chains.json"
    chains.write_text('{"k": 4, "tokens": 2, "prompts": [{"id": "x", "domain": "code", "chains": []}]}')
    for k in ("5", "0", "-1"):  # 0 too: it once fell through to the recorded cap
        with pytest.raises(SystemExit, match="recorded with up to 4 drafts"):
            cli.main(["replay", str(chains), "--k", k])


@pytest.mark.parametrize("argv", [["--start", "-1"], ["--count", "0"], ["--tokens", "0"], ["--k", "0"],
                                  ["--domains", "poetry"]])
def test_collect_checks_its_arguments_before_loading_a_model(argv, monkeypatch, capsys):
    import specdec_site.engine.options

    monkeypatch.setattr(specdec_site.engine.options, "make_context", lambda *a, **k: pytest.fail("a model was loaded"))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["collect", "--out", "/dev/null", *argv])
    assert exit_info.value.code == 2 and argv[0] in capsys.readouterr().err


@pytest.mark.parametrize("cmd", ["probe", "replay", "collect"])
def test_a_missing_chains_file_or_an_unwritable_output_is_refused_before_any_work(cmd, tmp_path, monkeypatch, capsys):
    """probe and collect run the real pair for minutes before they write: what would fail then fails first."""
    import specdec_site.engine.options

    monkeypatch.setattr(specdec_site.engine.options, "make_context", lambda *a, **k: pytest.fail("a model was loaded"))
    chains = str(ROOT / "scripts" / "design_chains.json.gz")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    flag = "--out" if cmd == "collect" else "--json"
    cases = [([] if cmd == "collect" else [chains]) + [flag, str(tmp_path)],  # a folder, not a file
             ([] if cmd == "collect" else [chains]) + [flag, str(blocker / "out.json")]]  # under a file
    if cmd != "collect":
        cases.append([str(tmp_path / "missing.json.gz"), flag, str(tmp_path / "out.json")])
    for argv in cases:
        with pytest.raises(SystemExit) as exit_info:
            cli.main([cmd, *argv])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and ("no such file" in err or f"{flag} " in err), err
    assert not (tmp_path / "out.json").exists()


def test_the_shipped_prior_is_the_fit_of_the_committed_design_chains():
    """specdec/prior.py is what `fit` writes from scripts/design_chains.json.gz: no hand-tuned number."""
    from specdec.sources import DEFAULT_DRAFT, DEFAULT_TARGET

    data = recording.load_chains([ROOT / "scripts" / "design_chains.json.gz"])
    text = fitting.prior_module(fitting.fit_prior(data), data["prompts"],
                            f"{DEFAULT_TARGET} (target) and {DEFAULT_DRAFT} (draft, int8)", data["costs_from"])
    assert (ROOT / "specdec" / "prior.py").read_text() == text
    # the design prompts are not the benchmark's: the policies stage takes the first ones of each set
    from specdec_site.engine.config import FULL
    from specdec_site.public_prompts import public_prompts

    benchmark = {p["id"] for domain, n in FULL.core_prompts.items() for p in public_prompts(domain, 0, n)}
    narrative = recording.load_chains([ROOT / "scripts" / "design_chains_narrative.json.gz"])["prompts"]
    assert not benchmark & {p["id"] for p in data["prompts"] + narrative}
    # the narrative set's design chains came after the fit (issue 47): the replay scores the prior on them unseen
    assert {p["domain"] for p in data["prompts"]} | {"narrative"} == set(FULL.core_prompts)
    assert {p["domain"] for p in narrative} == {"narrative"}


def test_fit_writes_the_library_prior_from_the_design_chains_only(tmp_path, capsys):
    """Issue 48, case 5: `fit` rewrote specdec/prior.py from any chains file (3 prompts, a NaN cost) and the new file
    said it came from the design chains. Now the library's prior comes from the design chains alone; other chains
    need --out, and a file that is no chains file is refused in one line."""
    prior = (ROOT / "specdec" / "prior.py").read_bytes()
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"k": 4, "tokens": 2, "costs": {}, "prompts": [
        {"id": f"p{i}", "domain": "code", "chains": []} for i in range(3)]}))
    nan_cost = tmp_path / "nan.json"
    nan_cost.write_text(json.dumps({"k": 4, "tokens": 2, "prompts": [{"id": "x", "domain": "code", "chains": []}],
                                    "costs": {"code": {"draft": float("nan"), "intercept": 1.0, "slope": 0.1,
                                                       "per_k": {}}}}).replace("NaN", "NaN"))
    binary = tmp_path / "binary.json.gz"
    binary.write_bytes(bytes(range(256)))
    empty = tmp_path / "empty.json"
    empty.write_text("")
    cases = [([str(small)], "give --out FILE"),
             ([str(small), "--out", str(ROOT / "specdec" / "prior.py")], "give --out FILE"),
             ([str(small), "--out", str(tmp_path / "mine.py")], "a prior needs at least 10"),
             ([str(nan_cost), "--out", str(tmp_path / "mine.py")], "not finite non-negative seconds"),
             ([str(binary), "--out", str(tmp_path / "mine.py")], "not a chains file written by `collect`"),
             ([str(empty), "--out", str(tmp_path / "mine.py")], "not a chains file written by `collect`")]
    for argv, message in cases:
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["fit", *argv])
        assert message in str(exit_info.value.code), (argv, exit_info.value.code)
    assert (ROOT / "specdec" / "prior.py").read_bytes() == prior
    assert not (tmp_path / "mine.py").exists()


def test_fit_of_other_chains_says_what_they_are(tmp_path, capsys):
    """A prior fitted on chains of one's own (--out) names its command, its pair and its prompts, not the design's."""
    import gzip

    data = json.loads(gzip.open(ROOT / "scripts" / "design_chains.json.gz", "rt").read())
    data["recorded"] = {**data["recorded"], "target": "my/target", "draft": "my/draft"}
    mine = tmp_path / "my-chains.json"
    mine.write_text(json.dumps(data))
    cli.main(["fit", str(mine), "--out", str(tmp_path / "mine.py")])
    text = (tmp_path / "mine.py").read_text()
    words = " ".join(text.split())  # the docstring wraps at a place that depends on the temp folder's length
    assert "my/target (target) and my/draft (draft)" in words and "my-chains.json" in text
    doc = " ".join(text.split('"""')[1].split())
    assert "design_chains" not in doc and "simulate_policies.py fit" in doc and "prompts of my-chains.json" in doc


def test_a_prompt_recorded_twice_counts_once(tmp_path):
    one = {"k": 4, "tokens": 2, "prompts": [{"id": "x", "domain": "code", "chains": []}]}
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(json.dumps(one))
    assert [p["id"] for p in recording.load_chains([tmp_path / "a.json", tmp_path / "b.json"])["prompts"]] == ["x"]


def test_the_committed_replay_table_is_what_the_tool_prints_now(tmp_path):
    """docs/data/design-replay.json (the Benchmark's replay table) is the replay of the committed design chains by
    the committed policies: deterministic, no model, so it is compared whole."""
    out = tmp_path / "replay.json"
    chains = ["scripts/design_chains.json.gz", "scripts/design_chains_narrative.json.gz"]
    cli.main(["replay", *(str(ROOT / c) for c in chains), "--signals", "--json", str(out)])
    committed = json.loads((ROOT / "docs" / "data" / "design-replay.json").read_text())
    fresh = json.loads(out.read_text())
    # the same table; the provenance is the run's own (the commit it ran at; tests/test_guards.py checks the digest)
    assert fresh == {**committed, "chains": fresh["chains"], "command": fresh["command"], "git": fresh["git"]}
    assert committed["chains"] == chains
    assert sorted(committed["prompts"]) == ["code", "dialogue", "narrative", "prose"]


def test_prior_sensitivity_sees_a_prior_that_misleads(monkeypatch):
    """The replay's "one part of the prior changed" table has power: with the shipped prior's acceptance made
    absurdly low (every bin 0.05: the policy stops after one draft until the run's own drafts outweigh it), setting it
    to the set's own in hindsight is faster; with the shipped prior every change moves the narrative set's time by
    little (what the Benchmark reports)."""
    import specdec.prior as prior

    data = recording.load_chains([str(ROOT / "scripts" / "design_chains_narrative.json.gz")])
    prompts = data["prompts"][:4]
    cost = recording.domain_costs(data, "narrative")

    def shipped_seconds():
        from specdec.policies import AdaptivePolicy
        return [replaying.replay_one(p["chains"], AdaptivePolicy(16), cost)[0] for p in prompts]

    fair = replaying.prior_sensitivity(prompts, cost, 16, shipped_seconds())["ratios"]
    assert all(abs(v - 1) < 0.05 for v in fair.values())
    monkeypatch.setattr(prior, "ACCEPTANCE", [0.05] * 10)
    misled = replaying.prior_sensitivity(prompts, cost, 16, shipped_seconds())["ratios"]
    assert misled[replaying.SENSITIVITY[0]] > 1.05 > fair[replaying.SENSITIVITY[0]]  # the set's own calibration undoes the bad prior


def test_the_probe_records_what_the_chains_record_of_a_steps_first_draft(pair):
    """probe's agreement and confidence at each position are those of the chain's first draft token there (collect):
    the same draft fed the same prefix, so a head is scored on the events the policy faces at a step's first draft."""
    target, draft = pair
    ids = torch.tensor([1, 5, 2, 7])
    record = probing.record_probe(target, draft, ids, N_NEW)
    chains = recording.record_chains(target, draft, ids, N_NEW, K)
    assert record["agree"] == [c["accepted"] > 0 for c in chains]
    assert [round(c, 5) for c in record["confidences"]] == [c["confidences"][0] for c in chains]
    assert record["hidden"].shape == (N_NEW, target.config.hidden_size)
    assert 0 < sum(record["agree"]) < N_NEW  # both kinds of position: the scores below can tell predictors apart


def _probe_records(planted: bool, seed: int = 0) -> list[dict]:
    """Synthetic probe records: acceptance follows the confidence, and (planted) one hidden coordinate too."""
    g = torch.Generator().manual_seed(seed)
    records = []
    for i in range(8):
        confidence = torch.rand(60, generator=g) * 0.9 + 0.05
        hidden = torch.randn(60, 16, generator=g)
        logit = 3 * (confidence - 0.5) + (2.5 * hidden[:, 0] if planted else 0)
        agree = (torch.rand(60, generator=g) < torch.sigmoid(logit)).tolist()
        records.append({"domain": ("code", "prose")[i % 2], "id": f"p{i}", "hidden": hidden,
                        "confidences": confidence.tolist(), "agree": agree})
    return records


def test_the_probe_finds_a_signal_that_the_confidence_lacks_and_no_gain_in_noise():
    """Power: where one hidden coordinate moves acceptance, every weakly held head beats the confidence alone by a
    wide margin (leave one prompt out). And where the hidden state is noise, no head scores much better than the
    confidence: the probe's table cannot show a gain that is not there."""
    planted = probing.probe_table(_probe_records(True))
    base = planted["logistic on the confidence"]["all"]
    for ridge in (0.01, 0.1):
        head = planted[f"logistic on the hidden state and the confidence, ridge {ridge:g}"]["all"]
        assert head["log_loss"] < 0.8 * base["log_loss"] and head["auc"] > base["auc"] + 0.15
    noise = probing.probe_table(_probe_records(False))
    base = noise["logistic on the confidence"]["all"]["log_loss"]
    assert min(r["all"]["log_loss"] for n, r in noise.items() if "hidden" in n) > 0.995 * base
    assert set(noise[next(iter(noise))]) == {"code", "prose", "all"}
    assert noise[next(iter(noise))]["all"]["positions"] == 8 * 60


def test_the_probe_table_on_the_site_is_the_committed_probe_file():
    """The Benchmark's probe table and values come from docs/data/design-probe.json, made by the probe on the same
    design prompts as the chains file (its metadata names the models and the commit)."""
    from specdec_site.site import values

    probe = json.loads((ROOT / "docs" / "data" / "design-probe.json").read_text())
    chains = recording.load_chains([ROOT / "scripts" / "design_chains.json.gz"])
    assert probe["prompts"] == {d: [p["id"] for p in chains["prompts"] if p["domain"] == d]
                                for d in dict.fromkeys(p["domain"] for p in chains["prompts"])}
    assert probe["command"].startswith("python scripts/simulate_policies.py probe scripts/design_chains.json.gz")
    assert probe["git"]["commit"] and probe["recorded"]["target"] and probe["recorded"]["draft"]
    table = values.replay_tables(values.design_replay())["probe"]
    assert [row[0] for row in table["rows"]] == list(probe["predictors"])
    total = probe["predictors"]["logistic on the confidence"]["all"]["positions"]
    assert total == sum(len(p["chains"]) for p in chains["prompts"])
