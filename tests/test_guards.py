"""Nothing silently wrong: broken logits, bad scalars, mismatched heads, malformed caches, stale artifacts,
arguments checked before any model loads, and the build's memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from entry import run_entry
from test_models import default_draft_cache, make_cache

from specdec import autoregressive_generate, models, speculative_generate
from specdec_site.exactness.exact import make_tiny_lm
from specdec_site.paths import ROOT

PROMPT = torch.tensor([1, 2, 3])


@pytest.fixture(scope="module")
def pair():
    return make_tiny_lm(seed=5, vocab_size=12), make_tiny_lm(seed=6, vocab_size=12)


def poisoned(value: float, token: int = 3):
    """A tiny model whose logit for `token` is always `value` (through the output bias)."""
    model = make_tiny_lm(seed=7, vocab_size=12)
    head = torch.nn.Linear(model.config.hidden_size, 12, bias=True)
    with torch.no_grad():
        head.weight.copy_(model.lm_head.weight)
        head.bias.zero_()
        head.weight[token] = 0.0
        head.bias[token] = value
    model.lm_head = head
    return model


# ---------------------------------------------------------------- NaN / inf logits


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_nan_or_inf_logits_raise_in_both_decoders(pair, value, temperature):
    target, draft = pair
    gen = torch.Generator().manual_seed(0)
    bad = poisoned(value)
    name = "NaN" if value != value else r"\+inf"
    with pytest.raises(FloatingPointError, match=f"target model produced {name}"):
        autoregressive_generate(bad, PROMPT, max_new_tokens=4, temperature=temperature, generator=gen)
    with pytest.raises(FloatingPointError, match=f"target model produced {name}"):
        speculative_generate(bad, draft, PROMPT, max_new_tokens=4, k=2, temperature=temperature, generator=gen)
    with pytest.raises(FloatingPointError, match=f"draft model produced {name}"):
        speculative_generate(target, bad, PROMPT, max_new_tokens=4, k=2, temperature=temperature, generator=gen)


def test_minus_inf_logits_stay_legal(pair):
    """A masked token (-inf) is not an error: it just never comes out."""
    target, draft = pair
    masked = poisoned(float("-inf"))  # token 3 masked in the target
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        out = speculative_generate(masked, draft, PROMPT, max_new_tokens=6, k=3, temperature=1.0, generator=gen)
        assert 3 not in out.tolist()


# ---------------------------------------------------------------- scalar types and ids


@pytest.mark.parametrize("kwargs,message", [
    (dict(top_k=True), "top_k must be a positive integer"),
    (dict(top_p="0.5"), "top_p must be in"),
    (dict(top_p=True), "top_p must be in"),
    (dict(temperature=True), "temperature must be a finite number"),
    (dict(temperature=float("inf")), "temperature must be a finite number"),
    (dict(temperature=float("nan")), "temperature must be a finite number"),
    (dict(max_new_tokens=True), "max_new_tokens must be a positive integer"),
    (dict(k=True), "k .* must be >= 1"),
    (dict(vocab_size=0), r"vocab_size must be an integer in \[1, 12\]"),
    (dict(vocab_size=13), r"vocab_size must be an integer in \[1, 12\]"),
    (dict(vocab_size=True), r"vocab_size must be an integer"),
    (dict(input_ids=torch.tensor([1, 12])), r"id 12, outside the models' vocabulary \[0, 12\)"),
    (dict(input_ids=torch.tensor([-1, 2])), r"id -1, outside"),
])
def test_bad_scalars_and_ids_are_clear_errors(pair, kwargs, message):
    target, draft = pair
    args = dict(input_ids=PROMPT, max_new_tokens=4, k=2, temperature=0.0, generator=torch.Generator())
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        speculative_generate(target, draft, args.pop("input_ids"), **args)


def test_baseline_checks_ids_and_vocab_size_too(pair):
    target, _ = pair
    with pytest.raises(ValueError, match="outside the models' vocabulary"):
        autoregressive_generate(target, torch.tensor([40]), max_new_tokens=2, temperature=0, generator=torch.Generator())
    with pytest.raises(ValueError, match="vocab_size must be"):
        autoregressive_generate(target, PROMPT, max_new_tokens=2, temperature=0, generator=torch.Generator(),
                                vocab_size=0)


# ---------------------------------------------------------------- heads of different sizes (the loaded pair)


def loaded(model, n_tokens):
    return SimpleNamespace(model=model, tokenizer=[0] * n_tokens, name=f"m{n_tokens}")


def with_head(model, rows):
    model.lm_head = torch.nn.Linear(model.config.hidden_size, rows, bias=False)
    return model


def test_pair_vocab_size_reconciles_padding_and_refuses_the_rest():
    same = loaded(make_tiny_lm(1, 16), 16), loaded(make_tiny_lm(2, 16), 16)
    assert models.pair_vocab_size(*same) is None
    smaller_head = loaded(make_tiny_lm(1, 16), 16), loaded(with_head(make_tiny_lm(2, 16), 8), 16)
    assert models.pair_vocab_size(*smaller_head) is None  # q = 0 on ids >= 8: exact
    padded_draft = loaded(make_tiny_lm(1, 16), 14), loaded(make_tiny_lm(2, 20), 14)
    assert models.pair_vocab_size(*padded_draft) == 14  # the draft's rows 16..19 are padding
    padded_target = loaded(make_tiny_lm(1, 20), 14), loaded(make_tiny_lm(2, 16), 14)
    assert models.pair_vocab_size(*padded_target) == 14  # the target's rows the draft cannot read are padding
    with pytest.raises(models.TokenizerMismatchError, match="scores 20 ids, the draft 'm20' scores 16 and reads 16"):
        models.pair_vocab_size(loaded(make_tiny_lm(1, 20), 20), loaded(make_tiny_lm(2, 16), 20))


# ---------------------------------------------------------------- the converted-model cache


@pytest.mark.parametrize("manifest,reason", [
    ([1, 2], "malformed manifest"),
    ({"format": 1, "files": []}, "malformed manifest"),
    ({"format": 1, "files": {"config.json": {"size": "2"}}}, "malformed manifest"),
    ({"format": 1, "files": {"../x": {"size": 2, "sha256": "ab"}}}, "malformed manifest"),
    ({"files": {"config.json": {"size": 2, "sha256": "ab"}}}, "malformed manifest"),
    ("just a string", "malformed manifest"),
])
def test_malformed_manifest_means_rebuild_not_a_crash(tmp_path, manifest, reason):
    folder = tmp_path / "c"
    make_cache(folder)
    (folder / models.MANIFEST).write_text(json.dumps(manifest))
    assert reason in models.find_conversion_problem(folder)


def test_manifest_must_cover_every_weight_file(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    models.write_manifest(folder, {"source": "test"})  # lists only config.json
    (folder / "model.safetensors").write_bytes(os.urandom(2048))  # weights added after: unprotected
    assert "not in the manifest: model.safetensors" in models.find_conversion_problem(folder)
    (folder / "model.safetensors").unlink()
    assert "does not cover config.json and the weights" in models.find_conversion_problem(folder)


def test_killed_conversion_leaves_no_temp_folder_behind(tmp_path, monkeypatch):
    source, folder = default_draft_cache(tmp_path, monkeypatch)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = folder.parent / f"{folder.name}.tmp-{dead.pid}-abc"
    live = folder.parent / f"{folder.name}.tmp-{os.getpid()}-xyz"  # a conversion still running
    for path in (stale, live):
        (path / "gguf").mkdir(parents=True)
    assert models.converted_folder(source) == folder
    assert not stale.exists() and live.exists()


# ---------------------------------------------------------------- the build: arguments, staleness, memory


def run_build(*args, capsys, monkeypatch):
    """scripts/build_data.py's entry in this process (tests/entry.py): (exit status, stderr)."""
    code, _, err = run_entry(args, capsys, monkeypatch)
    return SimpleNamespace(returncode=code, stderr=err)


@pytest.mark.parametrize("args,message", [
    (["--temperature", "inf"], "argument --temperature: expected a finite number in ASCII digits (such as 0.7), got 'inf'"),
    (["--temperature", "nan"], "argument --temperature: expected a finite number in ASCII digits (such as 0.7), got 'nan'"),
    (["--seed", str(2**70)], "--seed must be in"),
    (["--seed", "-1"], "--seed must be in"),
    (["--k", "1000000"], "--k must be in [1, 64]"),
    (["--k", "0"], "--k must be in [1, 64]"),
])
def test_bad_arguments_exit_2_with_one_line_before_loading_anything(args, message, tmp_path, capsys, monkeypatch):
    start = time.perf_counter()
    result = run_build(*args, "--out", str(tmp_path / "out"), capsys=capsys, monkeypatch=monkeypatch)
    assert time.perf_counter() - start < 10
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python scripts/build_data.py: error:") and message in lines[0], lines
    assert not (tmp_path / "out").exists()


def test_the_build_refuses_before_torch_loads(tmp_path):
    """One subprocess for scripts/build_data.py (the in-process tests share an interpreter that has torch already):
    a bad argument is refused in one line, exit 2, before torch or transformers is imported, within seconds."""
    code = ("import runpy, sys; sys.argv = ['scripts/build_data.py', '--k', '0', '--out', sys.argv[1]]\n"
            "try:\n    runpy.run_path('scripts/build_data.py', run_name='__main__')\n"
            "except SystemExit as e:\n    assert 'torch' not in sys.modules, 'torch imported'\n    sys.exit(e.code)")
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], capture_output=True, text=True,
                            timeout=60, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1",
                                                       "SPECDEC_CACHE": str(tmp_path / "cache")})
    assert time.perf_counter() - start < 10
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("python scripts/build_data.py: error:") and "--k must be in [1, 64]" in lines[0], lines
    assert not (tmp_path / "out").exists() and not (tmp_path / "cache").exists()


def test_out_that_is_a_file_is_refused(tmp_path, capsys, monkeypatch):
    target = tmp_path / "file.json"
    target.write_text("{}")
    result = run_build("--out", str(target), capsys=capsys, monkeypatch=monkeypatch)
    assert result.returncode == 2 and "is a file, not a folder" in result.stderr
    result = run_build("--out", str(target / "sub"), capsys=capsys, monkeypatch=monkeypatch)
    assert result.returncode == 2 and "is a file, not a folder" in result.stderr
    assert target.read_text() == "{}"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_out_in_a_read_only_folder_is_refused(tmp_path, capsys, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        result = run_build("--out", str(locked / "data"), capsys=capsys, monkeypatch=monkeypatch)
        assert result.returncode == 2 and "is not writable" in result.stderr
    finally:
        locked.chmod(0o755)


def test_committed_artifacts_were_built_by_the_committed_code():
    """Each committed artifact (the executed notebook too) records the code that built it: the code its stage runs
    (freshness.py) or, for one written before those digests, all of the data code. It must be the repository's."""
    from specdec_site.engine.freshness import code_hash, stage_code_hash
    from specdec_site.engine.stages import DEFAULT_CPU_OUT, STAGES

    checked = 0
    for name, stage in STAGES.items():
        path = stage.path(DEFAULT_CPU_OUT)
        meta = stage.read_meta(json.loads(path.read_text()))
        field, now = (("stage_code_sha256", stage_code_hash(name)) if "stage_code_sha256" in meta
                      else ("code_sha256", code_hash()))
        assert meta[field] == now, (
            f"{path.relative_to(ROOT)} was built by other code ({field} {meta[field][:12]}, the repository's is "
            f"{now[:12]}): rebuild with `python scripts/build_data.py --device cpu` (the changed stages rerun)")
        checked += 1
    assert checked == len(STAGES) == 6


def _artifact(tmp_path, meta: dict) -> Path:
    path = tmp_path / "exactness.json"
    path.write_text(json.dumps({"metadata": meta}))
    return path


def test_changed_code_makes_the_stages_that_run_it_stale(tmp_path, monkeypatch):
    from specdec_site.engine import cli
    from specdec_site.engine.stages import STAGES

    stage, config = STAGES["exactness"], {"seed": 0, "exact_samples": 10, "trace_tokens": 48}
    # An artifact from before the per-stage digests: all of the data code, all of the settings.
    path = _artifact(tmp_path, {"schema_version": cli.SCHEMA_VERSION, "config_hash": cli.config_hash(config),
                                "code_sha256": cli.code_hash()})
    assert cli.staleness(stage, path, config) is None
    assert cli.staleness(stage, path, {**config, "trace_tokens": 8}) == "built with other settings"
    monkeypatch.setattr(cli, "code_hash", lambda: "0" * 64)
    assert "built by other code" in cli.staleness(stage, path, config)
    monkeypatch.undo()
    # With per-stage digests: a setting the stage does not read changes nothing; one it reads does.
    path = _artifact(tmp_path, {"schema_version": cli.SCHEMA_VERSION, "code_sha256": "0" * 64,
                                "stage_config_hash": cli.config_hash(cli.stage_settings("exactness", config)),
                                "stage_code_sha256": cli.stage_code_hash("exactness")})
    assert cli.staleness(stage, path, config) is None, "the global code digest must no longer decide"
    assert cli.staleness(stage, path, {**config, "trace_tokens": 8}) is None
    assert cli.staleness(stage, path, {**config, "exact_samples": 20}) == "built with other settings"
    assert cli.staleness(stage, path, {**config, "seed": 1}) == "built with other settings"
    monkeypatch.setattr(cli, "stage_code_hash", lambda name: "0" * 64)
    assert "built by other code" in cli.staleness(stage, path, config)


def _digests_after_editing(tmp_path, monkeypatch, edited: str, edit=None) -> dict:
    """{stage: digest changed?} after an edit of one file of a copy of the tree: `edit(text) -> text`, by default a
    line of code appended (a notebook: a code cell gains one). The digests are the build's own (meta.hash_paths)."""
    import shutil

    from specdec_site.engine import freshness
    from specdec_site.engine.meta import hash_paths
    from specdec_site.engine.stages import STAGES

    tree = tmp_path / "tree"
    for folder in ("specdec", "specdec_site", "scripts", "notebooks"):
        shutil.copytree(ROOT / folder, tree / folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(freshness, "ROOT", tree)
    monkeypatch.setattr(freshness, "hash_paths", lambda paths: hash_paths(paths, root=tree))
    monkeypatch.setattr("specdec_site.engine.stages.STAGE_MODULES",
                        {name: s.run.__module__.replace(".", "/") + ".py" for name, s in STAGES.items()})

    def digests():
        freshness._specdec_exports.cache_clear()
        return {name: hash_paths(freshness.stage_files(name), root=tree) for name in STAGES}

    before = digests()
    if edited.endswith(".ipynb"):  # a code cell gains a line of code
        nb = json.loads((tree / edited).read_text())
        next(c for c in nb["cells"] if c["cell_type"] == "code")["source"].append("\n_an_edit = 1")
        (tree / edited).write_text(json.dumps(nb))
    else:
        text = (tree / edited).read_text()
        (tree / edited).write_text(edit(text) if edit else text + "\n_an_edit = 1\n")
    after = digests()
    return {name: before[name] != after[name] for name in STAGES}


@pytest.mark.parametrize("edited,stale", [
    ("specdec_site/stages/exactness.py", {"exactness"}),  # the stage's own module: that stage alone
    ("specdec_site/exactness/mutants.py", {"exactness", "notebook"}),  # the mutation harness (the notebook shows the naive rule)
    ("specdec_site/stages/sweep.py", {"policies"}),
    ("specdec_site/stages/hf.py", {"policies"}),
    ("specdec_site/stages/traces.py", {"traces"}),
    ("specdec/models.py", {"traces", "policies", "trees", "block", "notebook"}),  # loading the pair: not the exactness stage's tiny models
    ("specdec/verify.py", {"traces", "policies", "trees", "block", "exactness", "notebook"}),  # the rule: every stage
    ("specdec/tree.py", {"traces", "trees", "exactness", "notebook"}),  # the tree drafter: the stages that draft trees
    ("specdec_site/stages/trees.py", {"trees"}),
    ("specdec_site/cost_curve.py", {"trees"}),
    ("specdec_site/stages/block.py", {"block"}),
    ("specdec_site/summary.py", {"policies", "trees", "block"}),  # the medians and intervals the benchmark stages share
    ("notebooks/walkthrough.ipynb", {"notebook"}),
    ("specdec_site/engine/cli.py", set()),  # the command line decides what runs, not what a stage computes
    ("specdec_site/site/figures.py", set()),  # the figure half re-reads the artifacts
])
def test_an_edit_reruns_exactly_the_stages_that_run_the_edited_file(tmp_path, monkeypatch, edited, stale):
    changed = _digests_after_editing(tmp_path, monkeypatch, edited)
    assert {name for name, yes in changed.items() if yes} == stale


# Prose is not code: a docstring or a comment edited, added or removed reruns no stage (meta.code_tokens); the same
# file's code edits, however small, rerun every stage that runs it.
PROSE_EDITS = {
    "module docstring reworded": lambda t: t.replace("The verification rule of speculative sampling",
                                                     "The verification rule of speculative sampling, reworded", 1),
    "function docstring removed": lambda t: t.replace(
        '    """min(1, p(x)/q(x)) for each drafted token x. A token the draft drew has q(x) > 0."""\n', "", 1),
    "comment added": lambda t: t.replace("    # 1. Look up p(x) and q(x)", "    # a new comment\n    # 1. Look up p(x) and q(x)", 1),
    "comment appended": lambda t: t + "\n# an edit\n",
}
CODE_EDITS = {
    "a constant": lambda t: t.replace("clamp(max=1.0)", "clamp(max=1.01)", 1),
    "a comparison": lambda t: t.replace("accepted = uniforms < accept_probs", "accepted = uniforms <= accept_probs", 1),
    "a string that is code": lambda t: t.replace('RULES = ("token", "block")', 'RULES = ("token", "blocks")', 1),
}


@pytest.mark.parametrize("name", PROSE_EDITS)
def test_a_prose_edit_in_the_rule_leaves_every_stage_fresh(tmp_path, monkeypatch, name):
    edit = PROSE_EDITS[name]
    assert edit((ROOT / "specdec" / "verify.py").read_text()) != (ROOT / "specdec" / "verify.py").read_text(), name
    changed = _digests_after_editing(tmp_path, monkeypatch, "specdec/verify.py", edit)
    assert not any(changed.values()), (name, changed)


@pytest.mark.parametrize("name", CODE_EDITS)
def test_a_code_edit_in_the_rule_stales_every_stage_that_runs_it(tmp_path, monkeypatch, name):
    edit = CODE_EDITS[name]
    assert edit((ROOT / "specdec" / "verify.py").read_text()) != (ROOT / "specdec" / "verify.py").read_text(), name
    changed = _digests_after_editing(tmp_path, monkeypatch, "specdec/verify.py", edit)
    assert all(changed.values()), (name, changed)


def test_stage_code_follows_imports_through_the_library_and_the_build_package():
    """A stage's digest covers what its module imports, transitively, lazy `from specdec import X` names too."""
    from specdec_site.engine.freshness import NOT_CODE, code_hash, data_code, imported_files, stage_files

    files = {name: {str(p.relative_to(ROOT)) for p in stage_files(name)}
             for name in ("traces", "policies", "trees", "block", "exactness")}
    assert {"specdec/verify.py", "specdec/cache.py", "specdec/drafters.py", "specdec_site/engine/context.py",
            "specdec/models.py", "specdec_site/prompts.py"} <= files["traces"]
    assert {"specdec_site/stages/policies.py", "specdec_site/stages/sweep.py", "specdec_site/stages/hf.py",
            "specdec_site/public_prompts.py"} <= files["policies"]
    assert {"specdec_site/stages/trees.py", "specdec_site/cost_curve.py", "specdec/tree.py"} <= files["trees"]
    assert {"specdec_site/exactness/mutants.py", "specdec_site/exactness/exact.py", "specdec/decoding.py"} <= files["exactness"]
    assert "specdec/models.py" not in files["exactness"] and "specdec_site/engine/context.py" not in files["exactness"]
    assert not any(set(NOT_CODE) & f for f in files.values())
    # `from specdec import HybridDrafter` (inside a function) reaches specdec/drafters.py through the export table
    assert ROOT / "specdec" / "drafters.py" in imported_files(ROOT / "specdec_site" / "stages" / "policies.py")
    assert set(data_code()) == {p for name in files for p in stage_files(name)} | set(stage_files("notebook"))
    assert len(code_hash()) == 64


def test_a_stage_that_reads_an_unlisted_setting_is_refused():
    from specdec_site.engine.config import FULL
    from specdec_site.engine.freshness import STAGE_CONFIG, RecordedConfig, UndeclaredSetting

    cfg = RecordedConfig(FULL)
    assert cfg.exact_samples == FULL.exact_samples and cfg.undeclared("exactness") == []
    assert cfg.modes["sampled"]["temperature"] == FULL.sampled_temperature
    assert cfg.undeclared("exactness") == ["modes", "sampled_temperature"]
    assert cfg.undeclared("traces") == ["exact_samples"]
    with pytest.raises(AttributeError):
        cfg.exact_samples = 3
    # given the stage, at the first read, before the stage has run for minutes
    staged = RecordedConfig(FULL, "exactness")
    assert staged.exact_samples == FULL.exact_samples
    with pytest.raises(UndeclaredSetting, match=r"exactness stage read settings \['modes', 'sampled_temperature'\]"):
        _ = staged.modes
    # every setting each stage lists can be read without a refusal
    for stage, names in STAGE_CONFIG.items():
        for name in names:
            getattr(RecordedConfig(FULL, stage), name)


def test_the_full_build_stayed_under_14_gb_and_logged_it():
    log = (ROOT / "docs" / "data" / "cpu" / "build-log.txt").read_text()
    summary = [line for line in log.splitlines() if line.startswith("[build] summary:")]
    assert summary and "peak memory" in summary[-1]
    for path in sorted((ROOT / "docs" / "data" / "cpu").glob("*.json")):
        peak = json.loads(path.read_text())["metadata"]["peak_rss_gb"]
        assert peak < 14, f"{path.name}: peak memory {peak} GB"


@pytest.mark.parametrize("argv", [["--reps", "2"], ["--rows", "0", "3"]])
def test_bench_kernels_checks_its_arguments_before_loading_a_model(argv, monkeypatch, capsys):
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "scripts" / "bench_kernels.py"
    spec = importlib.util.spec_from_file_location("bench_kernels", path)  # as tests/test_simulate_policies.py does
    bench_kernels = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_kernels)
    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("a model was loaded"))
    with pytest.raises(SystemExit) as exit_info:
        bench_kernels.main(argv)
    assert exit_info.value.code == 2 and "--reps must be >= 3" in capsys.readouterr().err


# ---------------------------------------------------------------- issue 34: the edges that lost data or hours


def committed_digests() -> dict:
    from specdec.fileio import sha256_file

    folders = [ROOT / "docs" / name for name in ("data", "figures", "notebooks")]
    return {p: sha256_file(p) for folder in folders for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("args,message", [
    (["--out", ""], "--out is empty"),
    (["--out", "   "], "--out is empty"),
    (["--quick"], "--quick make(s) data other than the committed configuration's: give --out FOLDER"),
    (["--target", "qwen2.5-coder-0.5b-instruct-q4_k_m"], "--target make(s) data other than"),
    (["--quick", "--out", "docs/data/cpu"], "is the committed data"),
    (["--quick", "--out", str(ROOT / "docs" / "data" / "cuda")], "is the committed data"),
    (["--draft", "/nonexistent", "--out", "{tmp}"], "--draft: the draft folder '/nonexistent' does not exist"),
    (["--target", "/nonexistent", "--out", "{tmp}"], "--target: the target folder '/nonexistent' does not exist"),
    (["--target", "./no/such/folder", "--out", "{tmp}"], "does not exist"),
    (["--draft", "{file}", "--out", "{tmp}"], "is a file; a local model is a folder"),
    (["--draft", "{tmp}", "--out", "{tmp}"], "has no config.json"),
    (["--target", "org/x", "--out", "{tmp}"], "HF_HUB_OFFLINE is set and the local hub cache has no copy of it"),
    (["--target", "not an id!", "--out", "{tmp}"], "nor a well-formed hub id"),
    (["--stages", "", "--out", "{tmp}"], "has an empty name"),
    (["--stages", "traces,,exactness", "--out", "{tmp}"], "has an empty name"),
    (["--k", "1e3", "--out", "{tmp}"], "argument --k: expected an integer in ASCII digits (such as 4), got '1e3'"),
    (["--temperature", "1e-39", "--out", "{tmp}"], "--temperature 1e-39 is too small to sample from"),
])
def test_unusable_out_or_model_fails_in_seconds_with_one_line_touching_nothing(args, message, tmp_path, capsys,
                                                                              monkeypatch):
    """`--out ''` once replaced the committed exactness.json; `--draft /nonexistent` converted the 1.5B target (1.1 GB
    in the cache) before it looked for the draft. Now: exit 2 within 5 s, one line, the committed data and the model
    cache (an empty SPECDEC_CACHE) untouched. In this process (tests/entry.py), run from the repository's root."""
    (tmp_path / "file").write_text("x")
    args = [a.format(tmp=tmp_path / "out", file=tmp_path / "file") for a in args]
    (tmp_path / "out").mkdir()
    cache = tmp_path / "cache"
    before = committed_digests()
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SPECDEC_CACHE", str(cache))
    start = time.perf_counter()
    result = run_build(*args, capsys=capsys, monkeypatch=monkeypatch)
    assert time.perf_counter() - start < 5
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("python scripts/build_data.py: error:") and message in lines[0], lines[0]
    assert committed_digests() == before
    assert not cache.exists() and not list((tmp_path / "out").iterdir())


def test_each_stage_runs_once_in_the_order_given(tmp_path):
    from specdec_site.engine.cli import parse_args

    args = parse_args(["--stages", "exactness, traces,exactness", "--out", str(tmp_path)])
    assert args.stages == "exactness,traces"


def test_the_module_entry_names_itself_in_usage_and_errors(capsys, monkeypatch):
    """One subprocess for `python -m specdec_site` (its __main__ passes the name); its help in this process."""
    result = subprocess.run([sys.executable, "-m", "specdec_site", "--k", "x"], capture_output=True, text=True,
                            timeout=60, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 2 and result.stderr.startswith("python -m specdec_site: error:")
    code, help_text, _ = run_entry(["--help"], capsys, monkeypatch, prog="python -m specdec_site")
    assert code == 0 and help_text.startswith("usage: python -m specdec_site") and "examples:" in help_text
    for option in ("--device", "--seed", "--quick", "--out"):  # every option has its help
        assert option in help_text
    assert "about 65 to 75 min" in help_text  # the full build's measured range (TIMINGS.md)


def test_model_names_are_resolved_without_loading_anything(tmp_path, monkeypatch):
    from specdec.sources import ModelLoadError, resolve_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    assert resolve_model(str(tmp_path / "m")).kind == "local"
    assert resolve_model(models.DEFAULT_DRAFT).kind == "pypi"
    for name, message in [("", "is empty"), ("/no/such", "does not exist"), ("~/no-such-folder-x", "does not exist"),
                          ("a/b/c", "does not exist"), ("org/x", "local hub cache has no copy"),
                          ("bad--id", "nor a well-formed hub id")]:
        with pytest.raises(ModelLoadError, match=message):
            resolve_model(name)
    # online, the hub is asked once: unreachable is an error at once, not tens of seconds of retries
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    import huggingface_hub

    def unreachable(self, repo_id, **kw):
        raise ConnectionError("Name or service not known")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", unreachable)
    with pytest.raises(ModelLoadError, match="the hub cannot be reached .*Name or service not known"):
        resolve_model("org/x")


@pytest.mark.parametrize("temperature", [1e-39, 1e-300, 5e-7])
def test_a_temperature_too_small_to_sample_is_refused_naming_it(pair, temperature):
    target, draft = pair
    gen = torch.Generator().manual_seed(0)
    message = f"temperature {temperature} is too small to sample from"
    with pytest.raises(ValueError, match=message):
        speculative_generate(target, draft, PROMPT, max_new_tokens=4, k=2, temperature=temperature, generator=gen)
    with pytest.raises(ValueError, match=message):
        autoregressive_generate(target, PROMPT, max_new_tokens=4, temperature=temperature, generator=gen)
    from specdec.limits import MIN_TEMPERATURE  # the least that samples: it does

    out = speculative_generate(target, draft, PROMPT, max_new_tokens=4, k=2, temperature=MIN_TEMPERATURE, generator=gen)
    assert out.shape == (4,)


def test_a_huge_k_or_max_new_tokens_allocates_for_what_is_made(pair):
    """k = max_new_tokens = 10**12 asked the allocator for 8 TB before the first token. Every id is an EOS here, so
    the run ends after its first token; a confidence threshold of 1 drafts one token per step."""
    from specdec import ConfidencePolicy

    target, draft = pair
    every_id = list(range(12))
    gen = torch.Generator().manual_seed(0)
    out = speculative_generate(target, draft, PROMPT, max_new_tokens=10**12, k=None, temperature=1.0,
                               policy=ConfidencePolicy(10**12, threshold=1.0), eos_token_id=every_id, generator=gen)
    assert 1 <= out.shape[0] <= 2
    out = autoregressive_generate(target, PROMPT, max_new_tokens=10**12, temperature=1.0, eos_token_id=every_id,
                                  generator=gen)
    assert out.shape == (1,)


def test_growing_buffers_keep_greedy_equal_past_their_first_size(pair, monkeypatch):
    """Past the sequence buffer's first room and the drafter's, set small here (256 new tokens and 64 drafts in a step
    in the library) so that a short run grows each several times."""
    import specdec.decoding
    import specdec.drafters

    monkeypatch.setattr(specdec.decoding, "INITIAL_NEW_TOKENS", 5)
    monkeypatch.setattr(specdec.drafters, "DRAFT_ROOM", 2)
    target, draft = pair
    n = 40
    gen = torch.Generator().manual_seed(0)
    reference = autoregressive_generate(target, PROMPT, max_new_tokens=n, temperature=0, generator=gen)
    for k in (3, 12):
        out = speculative_generate(target, draft, PROMPT, max_new_tokens=n, k=k, temperature=0, generator=gen,
                                   check_cache_invariant=True)
        assert out.tolist() == reference.tolist()


def test_grown_copies_and_doubles():
    from specdec.cache import grown

    t = torch.arange(6).reshape(2, 3)
    assert grown(t, 3, dim=1) is t
    bigger = grown(t, 4, dim=1)
    assert bigger.shape == (2, 6) and bigger[:, :3].tolist() == t.tolist()
    assert grown(t, 9, dim=0).shape == (9, 3)


def test_scalars_of_every_kind_follow_the_one_rule(pair):
    import numpy as np

    from specdec import ConfidencePolicy, HeuristicPolicy, SamplingConfig
    from specdec.policies import AdaptivePolicy

    target, draft = pair
    gen = torch.Generator().manual_seed(0)
    # eos as a 0-d NumPy array ("iteration over a 0-d array" before) and top_k as a NumPy integer (refused before)
    out = speculative_generate(target, draft, PROMPT, max_new_tokens=4, k=2, temperature=1.0, generator=gen,
                               eos_token_id=np.array(2), top_k=np.int64(3))
    assert out.shape[0] >= 1
    assert SamplingConfig(np.float32(0.5), top_k=np.int64(3), top_p=np.float64(0.9)) == SamplingConfig(0.5, 3, 0.9)
    # an EOS id the model cannot emit would never stop anything
    for decode in (lambda: speculative_generate(target, draft, PROMPT, max_new_tokens=4, k=2, temperature=0,
                                                generator=gen, eos_token_id=100),
                   lambda: autoregressive_generate(target, PROMPT, max_new_tokens=4, temperature=0, generator=gen,
                                                   eos_token_id=[1, 100])):
        with pytest.raises(ValueError, match=r"eos_token_id 100 is outside the vocabulary \[0, 12\)"):
            decode()
    for make, message in [(lambda: ConfidencePolicy(4, "0.5"), "threshold must be a number in"),
                          (lambda: ConfidencePolicy(4, 1.5), r"threshold must be in \[0, 1\]"),
                          (lambda: HeuristicPolicy(4, "2"), "start .* must be an integer"),
                          (lambda: AdaptivePolicy(4, draft_cost="1"), "draft_cost must be a finite number"),
                          (lambda: SamplingConfig(1.0, top_k=3.0), "top_k must be a positive integer")]:
        with pytest.raises(ValueError, match=message):
            make()


@pytest.mark.parametrize("device,dtype,no_int8,expected", [
    ("cpu", None, False, {"dtype": "float32", "packed": True, "int8": True, "synchronize": False}),
    ("cpu", None, True, {"dtype": "float32", "packed": True, "int8": False, "synchronize": False}),
    # --dtype bfloat16 on CPU crashed after loading: the int8 copy needs float32 weights, and packing too
    ("cpu", "bfloat16", False, {"dtype": "bfloat16", "packed": False, "int8": False, "synchronize": False}),
    ("cuda", None, False, {"dtype": "bfloat16", "packed": False, "int8": False, "synchronize": True}),
    ("cuda", "float32", False, {"dtype": "float32", "packed": False, "int8": False, "synchronize": True}),
])
def test_the_device_dependent_choices(device, dtype, no_int8, expected):
    from specdec.timing import StepTimer
    from specdec_site.engine.cli import device_choices

    assert device_choices(device, dtype, no_int8) == expected
    # what synchronising means: StepTimer syncs a CUDA device around each lap, and never a CPU one
    calls = []
    timer = StepTimer(torch.device(device), enabled=True)
    import specdec.timing as timing

    original = timing.sync_device
    timing.sync_device = lambda d: calls.append(d.type)
    try:
        timer.start()
        timer.lap()
    finally:
        timing.sync_device = original
    assert calls == [device, device]


TRACE_REFUSALS = [
    (["--prompt", "", "--out", "{tmp}/t.json"], "the prompt is empty"),
    (["--prompt", "x", "--out", "{tmp}"], "is a folder: give the trace file's path"),
    (["--prompt", "x", "--out", ""], "--out is empty"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--temperature", "1e-39"], "temperature 1e-39 is too small"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--top-k", "0"], "--top-k must be an integer >= 1"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--k", "65"], "--k must be in [1, 64]"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--draft", "/nonexistent"], "--draft: the draft folder"),
    (["--prompt-file", "{tmp}/missing.txt", "--out", "{tmp}/t.json"], "--prompt-file"),
    (["--out", "{tmp}/t.json"], "one of the arguments --prompt --prompt-file is required"),
    # issue 48: committed files, paths that cannot take the file, values that round to nothing
    (["--prompt", "x", "--out", "docs/data/cpu/traces.json"], "the committed data the site is built from"),
    (["--prompt", "x", "--out", "docs/figures/x.json"], "the committed data the site is built from"),
    (["--prompt", "x", "--out", "-"], "not to standard output"),
    (["--prompt", "x", "--out", "/proc/x.json"], "cannot write there"),
    (["--prompt", "x", "--out", "{tmp}/" + "a" * 250 + ".json"], "past the 255 a file name may have"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--top-p", "1e-46"], "is 0 in float32"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--top-p", "0"], "--top-p must be in (0, 1]"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--domain", ".."], "with a letter or digit"),
    (["--prompt-file", "{tmp}/huge.txt", "--out", "{tmp}/t.json"], "over the 1,048,576 a prompt may have"),
    # token trees (issue 45)
    (["--prompt", "x", "--out", "{tmp}/t.json", "--tree", "3x9"], "has 29,523 nodes, over the 256"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--tree", "2by3"], "--tree must be WxD"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--tree", "0x3"], "width and depth must be in [1, 16]"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--tree", "2x3", "--policy", "adaptive"], "leave out --policy"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--tree-nodes", "4"], "--tree-nodes needs --tree WxD"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--tree", "4x6", "--tree-nodes", "300"], "--tree-nodes must be in"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--tree-paths", "0;0,1,2"], "lacks the parent of (0, 1, 2)"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--tree-paths", "0;a"], "ranks in ASCII digits"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--tree", "2x2", "--tree-paths", "0"], "not allowed with argument"),
    # block verification (issue 46)
    (["--prompt", "x", "--out", "{tmp}/t.json", "--verify", "blocks"], "invalid choice: 'blocks'"),
    (["--prompt", "x", "--out", "{tmp}/t.json", "--tree", "2x2", "--verify", "block"], "a token tree has its own rule"),
]


def run_in_process(entry_argv, capsys, monkeypatch):
    """The build's entry point in this process (tests/entry.py), named as the module: (exit status, stderr)."""
    code, _, err = run_entry(entry_argv, capsys, monkeypatch, prog="python -m specdec_site")
    return code, err


@pytest.mark.parametrize("args,message", TRACE_REFUSALS)
def test_the_trace_command_checks_its_arguments_before_loading(args, message, tmp_path, capsys, monkeypatch):
    """Each refusal in one line, exit 2, nothing written, no model context made; in this process (a subprocess each
    cost 2-3 s of imports: test_the_trace_command_refuses_before_torch_loads keeps one)."""
    (tmp_path / "huge.txt").write_text("x" * (1 << 20 | 1))
    args = [a.format(tmp=tmp_path) for a in args]
    before = committed_digests()
    monkeypatch.setenv("SPECDEC_CACHE", str(tmp_path / "cache"))
    code, err = run_in_process(["trace", *args], capsys, monkeypatch)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith("python -m specdec_site trace: error:") and message in lines[0], lines[0]
    assert not (tmp_path / "t.json").exists() and not (tmp_path / "cache").exists()
    assert committed_digests() == before
    assert not list(tmp_path.glob(".*tmp-*")), "the write test left its file"


def test_the_trace_command_refuses_before_torch_loads(tmp_path):
    """One subprocess (the in-process tests above share an interpreter that has torch already): the refusal comes
    before torch, transformers or a model is imported, within seconds."""
    code = ("import sys; from specdec_site.engine.cli import entry; rc = entry(['trace', '--prompt', 'x', '--out', "
            "'docs/data/cpu/traces.json']); assert 'transformers' not in sys.modules, 'transformers imported'; "
            "sys.exit(rc)")
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                            env={**os.environ, "HF_HUB_OFFLINE": "1", "SPECDEC_CACHE": str(tmp_path / "cache")})
    assert time.perf_counter() - start < 10
    assert result.returncode == 2 and "the committed data the site is built from" in result.stderr, result.stderr
    assert not (tmp_path / "cache").exists()


BUILD_REFUSALS = [
    (["--out", "docs/figures", "--stages", "exactness"], "holds committed files of this repository"),
    (["--out", "docs/notebooks", "--stages", "notebook"], "holds committed files of this repository"),
    (["--out", "specdec", "--quick"], "holds committed files of this repository"),
    (["--prompts", "{tmp}/blank.jsonl"], "is empty: give it at least one prompt"),
    (["--prompts", "{tmp}/UP.JSONL", "--out", "{tmp}/o"], "must end in lowercase .jsonl"),
    (["--prompts", "{tmp}/dots.jsonl", "--out", "{tmp}/o"], "has no letter or digit"),
]


@pytest.mark.parametrize("args,message", BUILD_REFUSALS)
def test_the_build_refuses_outputs_and_prompt_files_it_would_misread(args, message, tmp_path, capsys, monkeypatch):
    """Issue 48, cases 2 and 3 and the unclear ones: the build's --out never a folder of committed files (it wrote
    docs/figures/exactness.json); a blank prompts file is not "no prompts" (the run became the committed
    configuration); a .JSONL is not one text prompt; '.' and '..' are no domains."""
    (tmp_path / "blank.jsonl").write_text("  \n\n")
    (tmp_path / "UP.JSONL").write_text('{"text": "hi"}\n')
    (tmp_path / "dots.jsonl").write_text('{"text": "hi", "domain": ".."}\n')
    args = [a.format(tmp=tmp_path) for a in args]
    before = committed_digests()
    code, err = run_in_process(args, capsys, monkeypatch)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and message in lines[0], err
    assert committed_digests() == before


def test_the_caveats_are_stated_where_the_claims_are():
    """Issue 34, 7: greedy equality holds up to floating point (a near-tie of two logits may be ordered differently by
    a batched and a one-row pass), and a run replays only when its policy reads no timings: said in the docstring of
    speculative_generate and on the math and exactness pages, with the committed count of greedy runs that differed.
    (That pinned adaptive runs do replay: tests/test_policies.py.)"""
    doc = " ".join(speculative_generate.__doc__.split())
    assert "up to floating point" in doc and "pin its costs" in doc and "must not read wall-clock timings" in doc
    for page in ("math.md", "exactness.md"):
        text = (ROOT / "docs" / page).read_text()
        assert "[[val:greedy_runs_diverged]]" in text and "floating point" in " ".join(text.split()), page


class _FakeTokenizer:
    chat_template = None

    def __call__(self, text):
        return type("Encoded", (), {"input_ids": text.split()})()


def _fake_context(limit: int):
    model = type("Model", (), {"config": type("Config", (), {"max_position_embeddings": limit})()})()
    target = type("Loaded", (), {"tokenizer": _FakeTokenizer(), "model": model})()
    return type("Context", (), {"target": target})()


def test_prompts_past_the_targets_context_are_refused_before_decoding():
    """Issue 48, case 7: no prompt length was checked against the model's context (a 10k-token prompt ran past a
    2,048-token context with no word). The build and the trace command check it once the pair is loaded."""
    from specdec_site.engine.options import prompts_past_context

    ctx = _fake_context(100)
    table = {"custom": [{"id": "short", "kind": "completion", "text": "a " * 50},
                        {"id": "long", "kind": "completion", "text": "a " * 99}]}
    assert "prompt 'long' is 99 tokens" in prompts_past_context(ctx, table, 4)
    assert prompts_past_context(ctx, {"custom": table["custom"][:1]}, 4) is None
    chat = {"custom": [{"id": "c", "kind": "chat", "text": "hi"}]}
    assert "no chat template" in prompts_past_context(ctx, chat, 4)
    one = {"custom": [{"id": "prompt", "kind": "completion", "text": "a " * 97}]}  # the trace command's one prompt
    assert "past the target's context of 100 tokens" in prompts_past_context(ctx, one, 4)
    assert prompts_past_context(ctx, {"custom": [dict(one["custom"][0], text="a " * 96)]}, 4) is None


def test_the_site_url_a_host_needs_is_named_where_users_read():
    """Issue 48, case 13: hosting anywhere but the Pages workflow needs SPECDEC_SITE_URL, which no user-facing page
    named."""
    for page in ("README.md", "docs/reproduce.md", "scripts/site.sh"):
        assert "SPECDEC_SITE_URL=" in (ROOT / page).read_text(), page


@pytest.mark.parametrize("tool,name", [("replay", "design-replay.json"), ("probe", "design-probe.json")])
def test_committed_design_artifacts_were_built_by_the_committed_code(tool, name):
    """The design tool's artifacts, which the site's values read, are held to this checkout like the stages' are: the
    digest of the code their command runs and the sha256 of the chains files they read."""
    from specdec.fileio import sha256_file
    from specdec_site.engine.freshness import tool_code_hash

    data = json.loads((ROOT / "docs" / "data" / name).read_text())
    command = f"python scripts/simulate_policies.py {tool} " + " ".join(data["inputs"])
    assert data.get("code_sha256") == tool_code_hash(tool), (
        f"docs/data/{name} was built by other code: rerun `{command} ...` (its command is in the file)")
    for path, digest in data["inputs"].items():
        assert sha256_file(ROOT / path) == digest, f"docs/data/{name} read another {path}: rerun `{command} ...`"
    assert data["git"]["clean"] is True, f"docs/data/{name} was built with uncommitted changes to the data code"


def test_a_design_tool_digest_covers_the_code_its_command_runs():
    """replay's digest follows its imports through the design package and the library (the policies it replays), and
    leaves out what it does not run (probe, the build's command line)."""
    from specdec_site.engine.freshness import DESIGN_TOOLS, followed_files

    files = followed_files([ROOT / DESIGN_TOOLS["replay"]])
    assert {ROOT / "specdec" / "policies.py", ROOT / "specdec" / "prior.py", ROOT / "specdec_site" / "design" / "chains.py"} <= set(files)
    assert not {ROOT / "specdec_site" / "design" / "probe.py", ROOT / "specdec_site" / "engine" / "cli.py"} & set(files)
