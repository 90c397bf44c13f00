"""The build: schema of the committed artifacts, bad arguments, atomic writes, the figure contract, --quick end to end."""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys

import jsonschema
import pytest
from entry import run_entry

from specdec_site.paths import ROOT

SCRIPT = ROOT / "scripts" / "build_data.py"
SCHEMA = json.loads((ROOT / "docs" / "data" / "schema.json").read_text())

from specdec.fileio import write_json_atomic  # noqa: E402
from specdec_site.site import contract  # noqa: E402

STAGES = contract.ARTIFACTS  # the JSON artifacts of docs/data/<device>/ (the notebook stage writes a notebook)


def validate(data, stage):
    schema = {**SCHEMA, "$ref": f"#/$defs/{stage}"}
    jsonschema.validate(data, schema)


def committed():
    return sorted((ROOT / "docs" / "data").glob("*/*.json"))


def test_committed_artifacts_exist_for_cpu():
    names = {p.name for p in (ROOT / "docs" / "data" / "cpu").glob("*.json")}
    assert names >= {f"{s}.json" for s in STAGES}


@pytest.mark.parametrize("path", committed(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_artifacts_match_the_schema(path):
    data = json.loads(path.read_text())
    validate(data, data["metadata"]["stage"])
    assert data["metadata"]["config"]["quick"] is False, "committed data must come from a full run"


def run(*args, **kw):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, **kw)


@pytest.mark.parametrize(
    "args,message",
    [
        (["--k", "0"], "--k must be in [1, 64]"),
        (["--temperature", "-1"], "--temperature must be a finite number >= 0"),
        (["--stages", "traces,nope"], "unknown stage"),
        (["--device", "tpu"], "invalid choice"),
    ],
)
def test_bad_arguments_fail_with_one_clear_message(args, message, tmp_path, capsys, monkeypatch):
    code, _, err = run_entry([*args, "--out", str(tmp_path)], capsys, monkeypatch)  # in this process: tests/entry.py
    assert code != 0
    assert message in err
    assert "Traceback" not in err
    assert not list(tmp_path.iterdir())


def test_unknown_model_fails_cleanly_and_leaves_artifacts_alone(tmp_path, capsys, monkeypatch):
    (tmp_path / "traces.json").write_text('{"keep": true}')
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, _, err = run_entry(["--target", "no-such-org/no-such-model", "--quick", "--out", str(tmp_path), "--stages",
                              "traces"], capsys, monkeypatch)
    assert code == 2
    assert "--target: the target 'no-such-org/no-such-model' is a hub id" in err
    assert "the local hub cache has no copy of it" in err and "Traceback" not in err
    assert json.loads((tmp_path / "traces.json").read_text()) == {"keep": True}


def test_atomic_write_never_leaves_a_half_written_file(tmp_path):
    path = tmp_path / "a.json"
    write_json_atomic(path, {"x": 1})
    with pytest.raises(ValueError):
        write_json_atomic(path, {"x": float("nan")})  # not valid JSON: refused
    assert json.loads(path.read_text()) == {"x": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "docs" / "figures").glob("*.json")))
def test_committed_figure_files_keep_the_contract(name):
    contract.check(name, json.loads((ROOT / "docs" / "figures" / f"{name}.json").read_text()))


def test_contract_rejects_broken_files():
    with pytest.raises(ValueError, match="lacks"):
        contract.check("speedup_vs_k", {"sources": {"a": "b"}, "plotly_version": "7"})
    with pytest.raises(ValueError, match="no data"):
        contract.check("x", {"sources": {"a": "b"}, "plotly_version": "7", "title": "t", "figure": {"data": []}})
    with pytest.raises(ValueError, match="not a string or a number"):
        contract.check("values", {"sources": {"a": "b"}, "plotly_version": "7", "values": {"x": [1]}})


def test_every_page_marker_names_a_known_figure_or_value():
    from specdec_site.site.figures import FIGURES
    from specdec_site.site.values import VALUES

    text = "".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    figs = set(re.findall(r"\[\[fig:([a-z_0-9]+)\]\]", text))
    vals = set(re.findall(r"\[\[val:([a-z_0-9]+)\]\]", text))
    assert figs and figs <= set(FIGURES), figs - set(FIGURES)
    assert vals and vals <= set(VALUES), vals - set(VALUES)
    assert set(VALUES) <= vals, f"values no page quotes: {sorted(set(VALUES) - vals)}"


def test_every_value_is_spelled_out_in_the_table_and_the_policy_values_follow_their_rule():
    """values.VALUES is an explicit table: grep a page's [[val:NAME]] and find NAME under specdec_site/site/values/, spelled
    out or as the template of the one function that makes it per prompt set or per stage (f"pol_{d}_prompts",
    f"built_{stage}"; `python -m specdec_site.site.values` lists every name). The policies stage's values follow one rule,
    checked here so that no variant or metric is left out: for each domain, polm_ over the matrix's prompts for
    every variant (HF: median, ci; specdec: + over_oracle; + over_hf for the variants HF was given the draft of; +
    over_hf_constant for fixed k), pol_ over the core set for the core variants."""
    from specdec_site.engine.config import FULL
    from specdec_site.site.values import VALUES
    from specdec_site.stages.policies import CORE_HF, CORE_SPECDEC, HF_VARIANTS, SAME_DRAFT_AS_HF, VARIANTS

    source = "".join(p.read_text() for p in sorted((ROOT / "specdec_site" / "site" / "values").glob("*.py")))
    spelled = set(re.findall(r'^\s*"([a-z0-9_]+)":', source, re.M))
    # a template's placeholder ({d}: a prompt set, {t}: a temperature, {stage}) stands for one word of the name
    templates = [re.compile(re.sub(r"\\\{\w+\\\}", "[a-z0-9]+", re.escape(t)))
                 for t in re.findall(r'^\s*f"([a-z0-9_{}]+)":', source, re.M)]
    assert [k for k in VALUES if k not in spelled and not any(t.fullmatch(k) for t in templates)] == []
    expected = set()
    for domain in FULL.core_prompts:
        for variant in (*HF_VARIANTS, *VARIANTS):
            metrics = ["median", "ci"]
            if variant in VARIANTS:
                metrics += ["over_oracle"] + ["over_hf", "over_hf_ci"] * (variant in SAME_DRAFT_AS_HF)
                metrics += ["over_hf_constant", "over_hf_constant_ci"] * (variant == "fixed")
            for metric in metrics:
                expected.add(f"polm_{domain}_{variant}_{metric}")
                if variant in (*CORE_HF, *CORE_SPECDEC) and "constant" not in metric:
                    expected.add(f"pol_{domain}_{variant}_{metric}")
    polm = {k for k in VALUES if k.startswith("polm_")}
    assert polm == {k for k in expected if k.startswith("polm_")}
    assert expected - polm <= set(VALUES)


def test_no_page_types_a_measured_number_by_hand():
    """Every number a page quotes from the data comes from one place, values.json, through [[val:...]]: a decimal
    typed into a page's prose that equals one of the values is a copy that the next build would leave stale. (The
    decimals pages do type are theorem numbers, arXiv ids, settings and constants, never a value.)"""
    values = json.loads((ROOT / "docs" / "figures" / "values.json").read_text())["values"]
    decimals = {str(v) for v in values.values() if re.fullmatch(r"\d+\.\d+", str(v))}
    copies = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text()
        for pattern in (r"```.*?```", r"\$\$.*?\$\$", r"\\\(.*?\\\)", r"`[^`]*`", r"\[\[[^\]]*\]\]", r"\]\([^)]*\)",
                        r"\b(?:Theorem|Thm) \d+\.\d+"):  # a theorem's number may equal a value (3.8 once)
            text = re.sub(pattern, " ", text, flags=re.S)
        copies += [f"{page.name}: {m.group(0)}" for m in re.finditer(r"(?<![\w.])\d+\.\d+(?![\w.])", text)
                   if m.group(0) in decimals]
    assert decimals and copies == [], copies


def page_units(text: str) -> list[str]:
    """A page's Markdown as the units a reader compares numbers in: each sentence of its prose, and each table with
    the paragraph before it (which introduces it). Code blocks are left out."""
    blocks = re.split(r"\n\s*\n", re.sub(r"```.*?```", " ", text, flags=re.S))
    units = []
    for before, block in zip(["", *blocks], blocks):
        if block.lstrip().startswith("|"):
            units.append(before + "\n" + block)
        else:
            units += re.split(r"(?<=[.!?])\s+(?=[A-Z*\[(])", block)
    return units


def test_a_comparison_across_prompt_sets_names_both():
    """Issue 36: a sentence or table that quotes numbers measured over different prompt sets (the matrix and sweep,
    the core set, the traces: values.prompt_set) names each set (values.PROMPT_SETS), so that no reader compares
    a 4-prompt median with a 12-prompt one unawares. The rule has power: the sentence this test was written for,
    before its fix, breaks it."""
    from specdec_site.site.values import PROMPT_SETS, VALUES, prompt_set

    def unnamed(unit: str) -> list[str]:
        sets = {prompt_set(n) for n in re.findall(r"\[\[val:([a-z0-9_]+)\]\]", unit)} - {None}
        return sorted(s for s in sets if len(sets) > 1 and not re.search(PROMPT_SETS[s][1], unit))

    assert {prompt_set(n) for n in VALUES} == {*PROMPT_SETS, None}
    old = ("Speedups over target-only: HF constant k = [[val:pol_fixed_k]] [[val:polm_code_hf_constant_median]]× on "
           "code; HF defaults [[val:pol_code_hf_default_median]]× and [[val:pol_prose_hf_default_median]]×.")
    assert unnamed(old) == ["core", "matrix"]
    problems = [f"{page.name}: sets {unnamed(unit)} unnamed in: {unit[:200]}"
                for page in sorted((ROOT / "docs").glob("*.md")) for unit in page_units(page.read_text()) if unnamed(unit)]
    assert problems == [], "\n".join(problems)


GREEK = r"alpha|beta|gamma|delta|pi|kappa|sigma|tau|mu|nu|lambda|theta|epsilon|varepsilon|rho|phi|psi|omega"


def math_symbols(latex: str) -> set[str]:
    """The symbols a piece of LaTeX uses: its single Latin letters and Greek letters, with a subscript's index
    dropped (p_i is p) and words (\\text, \\mathrm: TV, oracle) and operators left out; \\mathbb{E} is "E-bb"."""
    latex = re.sub(r"\\mathbb\{(\w)\}", r" \1bb ", latex)
    # a decorated letter is a symbol of its own: p' (the residual), \tilde p, \hat a, k^\star
    latex = re.sub(r"\\(tilde|hat)\{?\s*([A-Za-z])\}?", lambda m: f" {m.group(2)}{'~' if m.group(1) == 'tilde' else '^'} ", latex)
    latex = re.sub(r"(?<![A-Za-z])([A-Za-z])'", r" \1' ", latex)
    latex = re.sub(r"(?<![A-Za-z])([A-Za-z])\^\\star", r" \1* ", latex)
    latex = re.sub(r"\\(text|mathrm|operatorname|tag|begin|end)\{[^}]*\}", " ", latex)
    latex = re.sub(r"_\{[^{}]*\}|_\\?\w", " ", latex)  # subscripts: indices, not symbols of their own
    found = set(re.findall(rf"\\({GREEK})(?![A-Za-z])", latex))
    latex = re.sub(r"\\[A-Za-z]+", " ", latex)
    return found | set(re.findall(r"(?<![A-Za-z])(?:[A-Za-z]bb|[A-Za-z][~^'*]|[A-Za-z])(?![A-Za-z~^'*])", latex))


@pytest.mark.parametrize("page", ["math.md", "choosing-k.md"])
def test_every_math_symbol_has_one_meaning_in_the_symbol_table(page):
    """Issue 36: The Math (and Choosing k, its continuation) opens with a symbol table; every symbol its formulas use
    is in it, once. The meanings that once collided stay apart: α is the acceptance rate only (the per-token
    probability is a, the wrong rule's formula included), c is the draft's cost only (the confidence is κ), and T is
    a time only (temperature is written out); issue 43: the verify cost of (8) is V_k, not v_k, whose v_1 was also
    the slope of (10)-(13)."""
    text = (ROOT / "docs" / page).read_text()
    table = re.search(r"\| symbol \| meaning \|\n\|---\|---\|\n((?:\|.*\|\n)+)", text)
    assert table, "the math page has no symbol table"
    rows = [line.split(" | ")[0].lstrip("| ") for line in table.group(1).splitlines()]
    listed = [math_symbols(" ".join(re.findall(r"\\\((.*?)\\\)", row))) for row in rows]
    firsts = [sym for syms in listed for sym in syms]
    body = text[:table.start()] + text[table.end():]
    used = set()
    for latex in re.findall(r"\\\((.*?)\\\)|\$\$(.*?)\$\$", body, flags=re.S):
        used |= math_symbols(" ".join(latex))
    assert used and used <= set(firsts), f"symbols used but not in the table: {sorted(used - set(firsts))}"
    # a symbol in two rows would have two meanings (an index row may repeat one of its row's symbols as a subscript)
    assert len(firsts) == len(set(firsts)), sorted(s for s in firsts if firsts.count(s) > 1)
    prose = re.sub(r"\\\(.*?\\\)|\$\$.*?\$\$|`[^`]*`", " ", body, flags=re.S)
    assert not re.search(r"α\s*·?\s*q\b|\\alpha\\?,?\s*q\b", text), "α used for one token's acceptance probability"
    assert not re.search(r"\bT\s*=\s*\d", prose), "T used for the temperature"
    assert not re.search(r"\bc_j\b|\bc_\{?j", text), "c used for the confidence"
    assert not re.search(r"v_k\b", text), "v_k for the verify cost of (8): it is V_k (v_1 is the slope of (10)-(13))"


def test_no_build_module_imports_torch_at_import_time():
    """The figure half runs with the site's requirements only (the Pages workflow has no torch)."""
    code = ("import sys; import specdec_site.site.files, specdec_site.site.contract, specdec.theory, specdec.fileio; "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.build
def test_quick_run_end_to_end_is_valid_and_resumable(tmp_path, tiny_qwen_pair):
    """Every stage of the --quick build, end to end, on a tiny pair with the default pair's architecture and
    tokenizer (tests/tiny_qwen.py: the stages run the same code whatever the pair's size; the real pair's greedy
    equality is test_real_pair.py's), then resumed: nothing to do, a setting one stage reads, a lost artifact."""
    from specdec_site.engine.config import QUICK

    target, draft = tiny_qwen_pair
    out = tmp_path / "out"
    pair = ("--target", str(target), "--draft", str(draft))

    def run_quick(*args, **kw):
        return run("--quick", "--out", str(out), "--device", "cpu", *pair, *args, **kw)

    first = run_quick(timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "[build] summary:" in first.stdout
    for stage in STAGES:
        data = json.loads((out / f"{stage}.json").read_text())
        validate(data, stage)
        assert data["metadata"]["config"]["quick"] is True
    traces = json.loads((out / "traces.json").read_text())
    assert all(r["equals_target_greedy"] for r in traces["runs"] if r["mode"] == "greedy")
    steps = [s for r in traces["runs"] for s in r["trace"]["steps"]]  # the pair makes both branches of the rule
    assert any(s["n_accepted"] for s in steps) and any(s["n_accepted"] < s["k"] for s in steps)
    policies = json.loads((out / "policies.json").read_text())
    sweep_shares_the_matrix_runs(policies)
    for domain in policies["domains"].values():
        for row in domain["rows"]:
            assert row["prompt_tokens"] <= QUICK.policy_prompt_cap  # the quick build's prompts are cut (config.py)
            assert all(v["same_output"] for name, v in row["variants"].items() if not name.startswith("hf_")), row
            assert row["sampled"]["variants"]["adaptive"]["speedup"] > 0
    exact = json.loads((out / "exactness.json").read_text())
    assert exact["counterexample"]["correct"] == pytest.approx(exact["counterexample"]["p"], abs=1e-12)
    # a few of the mutation table's variants and of the audit's rows, end to end (the fast tier runs each of them)
    assert [r["variant"] for r in exact["mutants"]] == ["correct", *QUICK.mutation_variants]
    assert [r["name"] for r in exact["audit"]["rows"]] == list(QUICK.audit_rows)
    notebook = json.loads((out / "walkthrough.ipynb").read_text())
    outputs = [o for c in notebook["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert outputs and not [o for o in outputs if o["output_type"] == "error"]
    assert any("identical to target greedy: True" in "".join(o.get("text", "")) for o in outputs)
    # the site reads the build's own artifacts as one environment (a stage that left torch on one thread made the
    # notebook's metadata disagree on device.threads, and `build_site.py --data` refused the set)
    from specdec_site.site.files import load_artifacts

    load_artifacts(out)
    # Resumable, shown on one stage: nothing changed -> every stage skipped, nothing rewritten; a setting only the
    # sampled stages read (per-stage freshness) leaves the other two alone; a lost artifact is rebuilt alone, and
    # with the same seed it is the same (timings and dates aside). The lost one is the traces (8 s here; the
    # exactness stage, 40 s, is the same code whatever the pair, and its artifact is checked in the fast tier).
    from specdec_site.engine.stages import STAGES as BUILD_STAGES  # the notebook stage too

    before = {s: stage.path(out).stat().st_mtime_ns for s, stage in BUILD_STAGES.items()}
    log = (out / "build-log.txt").read_text()
    second = run_quick()
    assert second.returncode == 0 and second.stdout.count("up to date") == len(BUILD_STAGES), second.stdout
    assert before == {s: stage.path(out).stat().st_mtime_ns for s, stage in BUILD_STAGES.items()}
    assert (out / "build-log.txt").read_text() == log  # a run that builds nothing leaves the log as it was
    unread = run_quick("--temperature", "0.8", "--stages", "exactness,notebook")
    assert unread.returncode == 0 and unread.stdout.count("up to date") == 2, unread.stdout
    (out / "traces.json").unlink()
    again = run_quick(timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("up to date") == len(BUILD_STAGES) - 1 and "traces: to build (missing" in again.stdout
    # all its lines but one: "models loaded in ... s" is printed by the model context (context.py), not logged
    build_lines = [line for line in again.stdout.splitlines()
                   if line.startswith("[build]") and not line.startswith("[build] models loaded in")]
    assert (out / "build-log.txt").read_text().splitlines() == log.splitlines() + build_lines
    redone = json.loads((out / "traces.json").read_text())

    def strip(data):
        """The artifact without its metadata and its measured times (every key ending in "seconds")."""
        if isinstance(data, dict):
            return {k: strip(v) for k, v in data.items() if k != "metadata" and not k.endswith("seconds")}
        return [strip(v) for v in data] if isinstance(data, list) else data
    assert strip(redone) == strip(traces)
    assert strip(exact) == strip(json.loads((out / "exactness.json").read_text()))  # untouched
    # and the site, built from the build's own artifacts (scripts/build_site.py --data): every page, naming its pair
    site = tmp_path / "site"
    built = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_site.py"), "--data", str(out), "--site-dir",
                            str(site)], capture_output=True, text=True, cwd=ROOT, timeout=600,
                           env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert built.returncode == 0, (built.stdout + built.stderr)[-3000:]
    home = (site / "index.html").read_text()
    assert traces["metadata"]["models"]["target"]["upstream"] in home
    assert "not run in this build" in (site / "exactness" / "index.html").read_text()  # the variants it left out
    for page in ("visualizer", "playground", "benchmark", "exactness", "notebooks/walkthrough"):
        assert (site / page / "index.html").is_file(), page


def test_build_config_is_typed_and_overrides_make_new_objects():
    from specdec_site.engine.config import FULL, QUICK, build_config

    cfg = build_config(False, k=6, temperature=0.9)
    assert (cfg.trace_k, cfg.fixed_k, cfg.modes["sampled"]["temperature"]) == (6, 6, 0.9)
    assert (FULL.trace_k, FULL.modes["sampled"]["temperature"]) == (4, 0.7), "the defaults must not change"
    assert QUICK.quick and not FULL.quick


def test_step_fates_are_computed_once_by_the_decoder_and_read_by_the_site():
    from specdec.trace import step_fates
    from specdec_site.site import files as site_files

    assert step_fates(3, 1, False, 2) == (["accepted", "rejected", "not evaluated"], "resampled")
    assert step_fates(2, 2, True, 3) == (["accepted", "accepted"], "bonus")
    assert step_fates(2, 2, True, 1)[1] is None  # cut at an end-of-sequence token among the accepted drafts
    # a tree: the path accepted, the last path node's children rejected, the rest never looked at
    assert step_fates(5, 1, False, 2, [-1, -1, 0, 0, 1], [0]) == (
        ["accepted", "not evaluated", "rejected", "rejected", "not evaluated"], "resampled")
    # the site reads what the decoder recorded, in the committed traces too
    runs = json.loads((ROOT / "docs" / "data" / "cpu" / "traces.json").read_text())["runs"]
    assert any(run["trace"]["drafter"] == "tree" for run in runs)  # the token-tree traces, with their paths
    for step in (s for run in runs for s in run["trace"]["steps"]):
        fates, extra = step_fates(step["k"], step["n_accepted"], step["bonus_token"] is not None, len(step["emitted"]),
                                  step.get("parents"), step.get("path"))
        assert site_files.step_fates(step) == {"fates": fates, "extra_fate": extra} == {
            "fates": step["fates"], "extra_fate": step["extra_fate"]}


def test_committed_policy_runs_all_reproduce_target_greedy_output():
    data = json.loads((ROOT / "docs" / "data" / "cpu" / "policies.json").read_text())
    for domain in data["domains"].values():
        for row in domain["rows"]:
            for name, variant in row["variants"].items():
                if not name.startswith("hf_"):  # Hugging Face's output is reported, ours is asserted
                    assert variant["same_output"], (row["prompt"], name)


def sweep_shares_the_matrix_runs(policies: dict) -> None:
    """The k sweep is folded into the policies stage: per domain, its prompts are the matrix's, its target-only times
    are the matrix rows' own, its k = fixed_k entry is the fixed variant's run (same seconds, same steps), and every
    run of the sweep emitted the target's greedy output."""
    k = policies["variants"]["fixed"]["k"]
    assert {s["domain"] for s in policies["sweeps"]} == set(policies["domains"])
    for sweep in policies["sweeps"]:
        rows = [r for r in policies["domains"][sweep["domain"]]["rows"] if r["set"] == "matrix"]
        assert sweep["prompts"] == [r["prompt"] for r in rows] and sweep["mode"] == "greedy"
        assert sweep["new_tokens"] == policies["new_tokens"]
        assert sweep["target_only"]["seconds"]["values"] == [r["target_seconds"] for r in rows]
        at_k = next(r for r in sweep["spec"] if r["k"] == k)
        assert at_k["seconds"]["values"] == [r["variants"]["fixed"]["seconds"] for r in rows]
        assert at_k["n_accepted_per_step"] == [[st["n_accepted"] for st in r["variants"]["fixed"]["steps"]] for r in rows]
        assert sweep["greedy_equal_all"] and sweep["greedy_runs_checked"] == len(rows) * len(sweep["spec"])


def test_committed_sweep_shares_the_policies_stages_runs():
    from specdec_site.engine.config import FULL
    from specdec_site.site.files import load_artifacts

    policies = load_artifacts(ROOT / "docs" / "data" / "cpu")["policies"]  # refuses artifacts from two environments
    sweep_shares_the_matrix_runs(policies)
    assert all(len(s["prompts"]) == FULL.policy_prompts[s["domain"]] and [r["k"] for r in s["spec"]] == list(FULL.sweep_ks)
               for s in policies["sweeps"])


def test_committed_speedups_over_hf_compare_equal_work():
    """A ÷ HF ratio compares two decoders only if they produced the same tokens. Both run exactly n tokens
    (specdec with no stop token, HF with min_new_tokens = max_new_tokens), but HF's setting masks EOS out,
    so where the target's greedy output has an EOS, HF's tokens differ from there on. Every HF run the
    committed ratios divide by emitted the target's greedy output."""
    data = json.loads((ROOT / "docs" / "data" / "cpu" / "policies.json").read_text())
    divided = 0
    for domain in data["domains"].values():
        for hf in (name for name in domain["summary"] if name.startswith("hf_")):
            if not any(f"over_{hf}" in domain["summary"][v] for v in data["same_draft_as_hf"]):
                continue
            for row in (r for r in domain["rows"] if hf in r["variants"]):
                assert row["variants"][hf]["same_output"], (row["prompt"], hf)
                divided += 1
    from specdec_site.engine.config import FULL

    assert divided >= sum(FULL.core_prompts.values())  # HF's defaults with the int8 draft run on every core prompt


def test_split_at_cap_keeps_every_token_in_the_fewest_steps():
    from specdec.theory import split_at_cap

    # a run of L drafts and the target's token is L + 1 tokens; a capped step emits at most k + 1
    assert split_at_cap([39, 4, 16, 17, 0], 16) == [16, 16, 5, 4, 16, 16, 0, 0]
    for length in range(60):
        for k in (1, 4, 16):
            steps = split_at_cap([length], k)
            assert sum(n + 1 for n in steps) == length + 1 and max(steps) <= k
            assert len(steps) == -(-(length + 1) // (k + 1))
    with pytest.raises(ValueError, match="k must be"):
        split_at_cap([3], 0)


def test_capped_oracle_recosts_the_stages_oracle_and_backs_the_benchmark_page():
    """values.over_capped_oracle re-costs the stage's oracle at its recorded costs: with a cap no oracle step
    reaches, it gives back the stage's own measured ÷ oracle. The page's reading of it: the adaptive policy's
    cap accounts for some of its gap to the oracle on code and almost none on prose; in both most of it is the stop
    rule (measured falls further below the capped oracle than the capped oracle below the oracle)."""
    from specdec_site.site.values import over_capped_oracle

    data = json.loads((ROOT / "docs" / "data" / "cpu" / "policies.json").read_text())
    gain = {}
    for name, domain in data["domains"].items():
        runs = [r["variants"]["adaptive"] for r in domain["rows"]]
        for run in runs:
            assert over_capped_oracle(run, 10**6) == pytest.approx(run["measured_over_oracle"], rel=1e-9)
            assert run["measured_over_oracle"] <= over_capped_oracle(run, 16) + 1e-12  # a cap only slows the oracle
        k = data["variants"]["adaptive"]["k"]
        capped = statistics.median(over_capped_oracle(run, k) for run in runs)
        gain[name] = capped - statistics.median(run["measured_over_oracle"] for run in runs)
        assert 1 - capped > gain[name], (name, capped, gain[name])
    assert gain["prose"] < 0.03 and gain["code"] < 0.1, gain


def test_the_oracle_is_every_runs_ceiling_and_backs_the_oracle_paragraph():
    """Every specdec run of the committed policies stage is slower than its own oracle bound (eq. 13), sampled
    runs too, whose verify line has the run's own level. The details page quotes the best drafter's oracle speedup:
    from the rows, per prompt, with the stage's seed."""
    from specdec.theory import bootstrap_median_ci
    from specdec_site.site.values import VALUES, _Artifacts, fmt

    data = json.loads((ROOT / "docs" / "data" / "cpu" / "policies.json").read_text())
    runs = [v for d in data["domains"].values() for r in d["rows"]
            for v in (*r["variants"].values(), *r["sampled"]["variants"].values()) if "oracle" in v]
    assert len(runs) > 100
    for run in runs:
        assert run["measured_over_oracle"] <= 1.0 and run["oracle_speedup"] >= run["speedup"]
        # each run's own verify level: its line, at its own draft lengths, sums to its measured verify time
        o, steps = run["oracle"], run["steps"][1:]
        if steps:
            assert sum(o["verify_intercept"] + o["verify_slope"] * s["k"] for s in steps) == pytest.approx(
                sum(s["verify_seconds"] for s in steps), rel=1e-9)
    a = _Artifacts({"policies": data})
    best = data["domains"]["code"]["best_drafter"]
    oracle = [r["variants"][best]["oracle_speedup"] for r in data["domains"]["code"]["rows"] if best in r["variants"]]
    assert len(oracle) == data["domains"]["code"]["summary"][best]["prompts"]
    assert VALUES["pol_code_best_oracle_speedup_median"](a) == fmt(statistics.median(oracle))
    lo, hi = bootstrap_median_ci(oracle, seed=data["metadata"]["seed"])
    assert VALUES["pol_code_best_oracle_speedup_ci"](a) == f"{lo:.2f}–{hi:.2f}"
    # the best drafter's median speedup is below its oracle's median (the page's "no length policy beats it")
    assert data["domains"]["code"]["summary"][best]["median"] < statistics.median(oracle)


def test_policy_summary_divides_by_hf_only_at_equal_draft():
    from specdec_site.stages.policies import HF_VARIANTS, SAME_DRAFT_AS_HF, VARIANTS, summarize

    def variant(speedup, oracle=None):
        out = {"speedup": speedup, "same_output": True}
        return out if oracle is None else {**out, "measured_over_oracle": oracle}

    rows = [{"prompt": f"p{i}", "variants": {**{h: variant(2.0 + i) for h in HF_VARIANTS},
                                             **{v: variant(3.0 + i, 0.8) for v in VARIANTS}}} for i in range(3)]
    summary = summarize(rows, seed=0)
    assert summary["adaptive"]["median"] == 4.0 and summary["adaptive"]["same_output"] == 3
    assert summary["adaptive"]["over_hf_default"]["median"] == pytest.approx(4 / 3)
    assert summary["adaptive"]["measured_over_oracle"]["median"] == 0.8
    for name in VARIANTS:  # the n-gram and hybrid drafters are not HF's draft: no ratio
        assert ("over_hf_default" in summary[name]) == (name in SAME_DRAFT_AS_HF), name
    assert "adaptive_ngram" not in SAME_DRAFT_AS_HF and "adaptive" in SAME_DRAFT_AS_HF
    assert not any(k.startswith("over_") or k == "measured_over_oracle" for h in HF_VARIANTS for k in summary[h])
    # sampled rows: no HF runs, no token comparison (same_output None), the oracle ratio kept
    sampled = [{"prompt": r["prompt"], "variants": {"adaptive": {**r["variants"]["adaptive"], "same_output": None}}}
               for r in rows]
    entry = summarize(sampled, seed=0)["adaptive"]
    assert set(entry) == {"median", "ci95", "measured_over_oracle", "prompts"}


def test_policy_summary_pairs_each_draft_with_hf_given_that_draft_over_the_prompts_that_ran_both():
    """The fp32 variants are divided by HF given the fp32 draft, the int8 ones by HF given the int8 draft; a
    variant of the matrix only (here adaptive_fp32, hf_default_fp32) is summarized over the prompts that ran it."""
    from specdec_site.stages.policies import summarize

    def v(speedup):
        return {"speedup": speedup, "same_output": True, "measured_over_oracle": 0.9}

    matrix = [{"prompt": f"m{i}", "variants": {"hf_default": v(2.0), "hf_default_fp32": v(1.0), "adaptive": v(3.0),
                                               "adaptive_fp32": v(1.5), "hf_constant": v(0.5)}} for i in range(3)]
    core = [{"prompt": f"c{i}", "variants": {"hf_default": v(4.0), "adaptive": v(4.0)}} for i in range(4)]
    summary = summarize(matrix + core, seed=0)
    assert summary["adaptive"]["prompts"] == 7 and summary["adaptive_fp32"]["prompts"] == 3
    assert summary["adaptive"]["over_hf_default"]["median"] == 1.0  # 3/2 on 3 prompts, 4/4 on 4: median 1
    assert summary["adaptive_fp32"]["over_hf_default"]["median"] == 1.5  # ÷ HF with the fp32 draft, not the int8
    assert summary["adaptive"]["over_hf_constant"]["median"] == 6.0  # 3/0.5, over the 3 prompts that ran both
    assert "over_hf_constant" not in summary["adaptive_fp32"]  # no constant-k HF run with the fp32 draft


def test_best_drafter_is_the_adaptive_variant_with_the_best_median():
    from specdec_site.stages.policies import BEST_DRAFTER_CANDIDATES, best_drafter

    summary = {name: {"median": 1.0} for name in BEST_DRAFTER_CANDIDATES}
    summary["adaptive_hybrid"] = {"median": 2.0}
    summary["fixed"] = {"median": 9.0}  # not a drafter with the adaptive policy: never chosen
    assert best_drafter(summary) == "adaptive_hybrid"
    assert set(BEST_DRAFTER_CANDIDATES) == {"adaptive", "adaptive_fp32", "adaptive_ngram", "adaptive_hybrid"}


def test_policy_prompts_pass_over_entries_without_text_in_the_sets_order():
    from pydoc_data.topics import topics

    from specdec_site.public_prompts import first_paragraph, passed_over, public_prompts

    prompts = public_prompts("prose", 0, 20)
    assert len(prompts) == 20 and len({p["id"] for p in prompts}) == 20
    skipped = passed_over(prompts, 0)
    assert skipped  # the set has a topic with no prose paragraph among its first 21 (the page names it)
    names = sorted(topics)
    assert [p["index"] for p in prompts] == [i for i in range(21) if i not in skipped]
    assert [p["id"] for p in prompts] == [f"pyref-{names[p['index']]}" for p in prompts]
    for index in skipped:
        with pytest.raises(ValueError, match="no prose paragraph"):
            first_paragraph(topics[names[index]])
    # a window that starts on a passed-over entry begins with the next usable one
    assert public_prompts("prose", skipped[0], 1)[0]["index"] == skipped[0] + 1
    code = public_prompts("code", 0, 20)
    assert passed_over(code, 0) == [] and [p["index"] for p in code] == list(range(20))
    with pytest.raises(ValueError, match="HumanEval has 164"):
        public_prompts("code", 160, 5)
    with pytest.raises(ValueError, match="unknown prompt domain"):
        public_prompts("poetry", 0, 1)
    dialogue = public_prompts("dialogue", 0, 23)  # ChatterBot's conversations.yml, every one of them
    assert [p["index"] for p in dialogue] == list(range(23)) and all(p["text"].endswith(("A:", "B:")) for p in dialogue)
    assert dialogue[3]["text"] == "A: Have you heard the news?\nB: What good news?\nA:"
    with pytest.raises(ValueError, match="conversations number 23"):
        public_prompts("dialogue", 20, 5)
    for domain in ("code", "prose", "dialogue", "narrative"):  # a negative start would index the set from its end
        for start, n in ((-1, 5), (0, 0), (1.0, 2), (0, True)):
            with pytest.raises(ValueError, match="start >= 0 and n >= 1"):
                public_prompts(domain, start, n)


def test_the_narrative_set_is_austens_chapter_openings_in_turn_across_the_novels():
    """Read from the janeaustenr package's own data (no R): chapter 1 of each novel in publication order, then
    chapter 2, and so on; each prompt the chapter's first paragraph, cut to 40 words."""
    from specdec_site.public_prompts import NOVELS, public_prompts

    prompts = public_prompts("narrative", 0, 14)
    assert [p["id"] for p in prompts[:7]] == [f"austen-{name}-1" for name in NOVELS] + ["austen-sensesensibility-2"]
    assert prompts[1]["text"].startswith("It is a truth universally acknowledged, that a single man in possession")
    assert prompts[3]["text"].startswith("Emma Woodhouse, handsome, clever, and rich,")
    assert all(8 <= len(p["text"].split()) <= 40 and "CHAPTER" not in p["text"] for p in prompts)
    assert [p["index"] for p in public_prompts("narrative", 12, 4)] == [12, 13, 14, 15]
    # Persuasion has 24 chapters: index 6 * 24 + 5 is past its end, and the set says so
    with pytest.raises(ValueError, match="runs out at index 149"):
        public_prompts("narrative", 140, 10)


def test_the_r_reader_refuses_what_it_cannot_read(tmp_path):
    import gzip

    from specdec_site.public_prompts import janeaustenr_dir
    from specdec_site.rdata import read_lazy_data

    books = read_lazy_data(janeaustenr_dir())
    assert sorted(books) == sorted(["emma", "mansfieldpark", "northangerabbey", "persuasion", "prideprejudice",
                                    "sensesensibility"])
    assert all(isinstance(line, str) for line in books["emma"]) and len(books["emma"]) > 10_000
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "Rdata.rdx").write_bytes(gzip.compress(b"RDX2\n"))
    with pytest.raises(ValueError, match="not an R serialization"):
        read_lazy_data(tmp_path)


def test_site_build_refuses_artifacts_from_two_environments():
    """Stages rerun alone when only their code or settings change (freshness.py); the pages quote one device, one
    set of versions and one model pair, so artifacts built with other ones must not be mixed."""
    import copy

    from specdec_site.site.files import check_one_environment, load_artifacts

    artifacts = load_artifacts(ROOT / "docs" / "data" / "cpu")  # the committed ones agree
    later = copy.deepcopy(artifacts)
    later["policies"]["metadata"]["date"] = "2027-01-01T00:00:00+00:00"  # another day, same environment: fine
    later["policies"]["metadata"]["models"]["target"]["load_seconds"] = 99.0
    check_one_environment(later)
    for key, value in (("versions", {"torch": "2.14.0"}), ("seed", 1), ("dtype", "bfloat16")):
        mixed = copy.deepcopy(artifacts)
        mixed["policies"]["metadata"][key] = value
        with pytest.raises(SystemExit, match=f"disagree on {key}"):
            check_one_environment(mixed)
    mixed = copy.deepcopy(artifacts)
    mixed["traces"]["metadata"]["device"]["platform"] += "-another-host"  # same CPU name, another machine
    with pytest.raises(SystemExit, match="disagree on device.platform"):
        check_one_environment(mixed)
    mixed = copy.deepcopy(artifacts)
    capability = mixed["traces"]["metadata"]["device"]["capability"]  # same platform string, another instruction set
    mixed["traces"]["metadata"]["device"]["capability"] = "AVX512" if capability == "AVX2" else "AVX2"
    with pytest.raises(SystemExit, match="disagree on device.capability"):
        check_one_environment(mixed)
    mixed = copy.deepcopy(artifacts)
    mixed["traces"]["metadata"]["models"]["draft"]["gguf_sha256"] = "0" * 64
    with pytest.raises(SystemExit, match="disagree on models"):
        check_one_environment(mixed)


def test_citation_cff_version_is_the_package_version():
    import yaml

    import specdec

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    package = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert cff["version"] == package == specdec.__version__


def test_bibtex_is_generated_from_citation_cff_and_the_data_commit(monkeypatch):
    """Reproduce & cite's entry: CITATION.cff's title, authors, version and year, the commit(s) the data was built at in
    its note (said to be dirty when the data code differed), and one `commit` field, the pages' own, which only the
    build knows: values.json holds @DOCS_COMMIT@ and the hook fills it (tests/test_hook.py), with the site's URL and the
    versioned source URL where the build names them (issue 43: the field held two stage commits and no URL)."""
    from specdec_site.site.values import provenance as values

    cff = {"title": "T", "authors": [{"name": "specdec contributors"}, {"family-names": "Doe", "given-names": "J"}],
           "version": "9.9.9", "date-released": "2031-02-03"}
    monkeypatch.setattr(values, "_citation", lambda: cff)
    clean = {s: {"metadata": {"git": {"commit": "a" * 40, "clean": True}}} for s in ("traces", "policies", "notebook")}
    entry = values._bibtex(clean)
    # @misc: classic BibTeX keeps every field of it; @software fell back to @misc there and lost `commit`
    assert entry.startswith("@misc{specdec,") and entry.endswith("}") and "@software" not in entry
    for text in ("{T}", "{{specdec contributors} and Doe, J}", "Version 9.9.9", "{2031}", "git commit " + "a" * 12):
        assert text in entry, (text, entry)
    note = re.search(r"^\s*note\s+= \{(.*)\}$", entry, re.M).group(1)
    assert "pages at git commit @DOCS_COMMIT@" in note and entry.count("@DOCS_COMMIT@") == 1  # both commits, one field
    assert "@SITE_URL@" in entry and "uncommitted" not in entry
    monkeypatch.setenv("SPECDEC_SITE_URL", "https://you.github.io/specdec/")  # read by the hook, never by values.json
    assert values._bibtex(clean) == entry
    clean["policies"]["metadata"]["git"]["clean"] = False
    assert "uncommitted changes" in values._bibtex(clean)
    assert values._data_commit({"traces": {"metadata": {}}}) == "not recorded"


def test_the_playground_quotes_the_pages_numbers():
    """A number the site shows twice comes from one place: the calculator's measured defaults (α, c, the best k) are
    values.json's, which the pages quote (the Playground rounded its own copy before)."""
    figures = ROOT / "docs" / "figures"
    values = json.loads((figures / "values.json").read_text())["values"]
    defaults = json.loads((figures / "playground.json").read_text())["speedup"]["defaults"]
    assert defaults["alpha"] == float(values["code_greedy_best_alpha"])
    assert defaults["c"] == float(values["code_greedy_best_c"])
    assert defaults["k"] == int(values["code_greedy_best_k"])


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two #rrggbb colours."""
    def luminance(color: str) -> float:
        rgb = [int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_in_both_schemes_every_trace_colour_and_link_reaches_wcag_aa():
    """Graphics need 3:1 against the background (WCAG 1.4.11), text 4.5:1 (1.4.3). The light scheme's background is
    white; the dark scheme's is Material's slate, #1e2129, where a trace colour too dark for it is swapped for its
    light tone by specdec.js (DARK_TONES), and the links and buttons take #9fa8da (specdec.css). The Home diagram's
    accept and reject outlines are graphics too."""
    from specdec_site.site.figures import PALETTE

    script = (ROOT / "docs" / "assets" / "specdec.js").read_text()
    tones = json.loads(re.search(r"const DARK_TONES = (\{[^}]*\});", script).group(1))
    slate, white = "#1e2129", "#ffffff"
    for name, color in PALETTE.items():
        if name in ("accepted", "rejected", "resampled", "bonus"):  # backgrounds under #111 text: text contrast
            assert contrast(color, "#111111") >= 4.5, (name, color)
            continue
        assert contrast(color, white) >= 3, (name, color, round(contrast(color, white), 2))
        shown = tones.get(color, color)
        assert contrast(shown, slate) >= 3, (name, color, shown, round(contrast(shown, slate), 2))
    for stroke in re.findall(r"\.sd-(?:accept|reject) rect \{ stroke: (#[0-9a-f]{6}); \}",
                             (ROOT / "docs" / "assets" / "specdec.css").read_text()):
        assert min(contrast(stroke, white), contrast(stroke, slate)) >= 3, stroke
    assert contrast("#ff9800", white) < 3  # the orange it replaces fails on white: the test can tell
    css = (ROOT / "docs" / "assets" / "specdec.css").read_text()
    link = re.search(r'\[data-md-color-scheme="slate"\] \{ --md-typeset-a-color: (#[0-9a-f]{6}); \}', css).group(1)
    assert contrast(link, slate) >= 4.5
    assert contrast("#3f51b5", slate) < 3  # the indigo it replaces fails: the test can tell


@pytest.mark.parametrize("name,command", [
    ("DESIGN_REPLAY", "simulate_policies.py replay scripts/design_chains.json.gz scripts/design_chains_narrative.json.gz "
                      "--signals --json"),
    ("DESIGN_PROBE", "simulate_policies.py probe scripts/design_chains.json.gz --json")])
def test_the_site_build_fails_loudly_without_the_replay_or_probe_table(monkeypatch, tmp_path, name, command):
    """The Benchmark's replay and probe tables come from docs/data/design-replay.json and design-probe.json
    (scripts/simulate_policies.py replay / probe --json): without either, the figure build stops before writing
    anything, and says how to make it."""
    import specdec_site.site.files as site_files
    import specdec_site.site.values.design as design

    monkeypatch.setattr(design, name, tmp_path / "missing.json")
    with pytest.raises(SystemExit, match=command):
        site_files.write_site_files(ROOT / "docs" / "data" / "cpu", tmp_path / "figures")
    assert not (tmp_path / "figures").exists()


# ---------------------------------------------------------------- a user's site from a user's folder (issue 48)


@pytest.mark.build  # an mkdocs build
def test_a_site_of_ones_own_folder_is_its_own_and_leaves_the_tree_as_it_was(tmp_path):
    """Cases 4 and 10: `build_site.py --data DIR` rewrote the committed docs/figures/*.json (and, for a folder outside
    docs/, refused after writing them), and showed the committed Notebook. Now it builds from a copy of docs/: the
    site's Notebook is the folder's own, and the committed figures and notebook are untouched."""
    import nbformat

    from specdec.fileio import sha256_file
    from specdec_site.site import build as site_build

    own = tmp_path / "elsewhere" / "my-run"
    shutil.copytree(ROOT / "docs" / "data" / "cpu", own)
    notebook = nbformat.read(ROOT / "docs" / "notebooks" / "walkthrough.ipynb", as_version=4)
    notebook.cells[0].source += "\n\nMARKER-OF-MY-OWN-RUN"
    nbformat.write(notebook, own / "walkthrough.ipynb")
    watched = [p for folder in ("figures", "notebooks") for p in sorted((ROOT / "docs" / folder).rglob("*")) if p.is_file()]
    before = {p: sha256_file(p) for p in watched}
    site_build.build(ROOT, "cpu", own, tmp_path / "site", log=lambda line: None)
    assert {p: sha256_file(p) for p in watched} == before
    assert not any((ROOT / "docs" / "data").glob("my-run*")) and not (ROOT / "docs" / "data" / "own").exists()
    page = (tmp_path / "site" / "notebooks" / "walkthrough" / "index.html").read_text()
    assert "MARKER-OF-MY-OWN-RUN" in page
    assert (tmp_path / "site" / "benchmark" / "index.html").is_file()


def test_a_device_folder_must_hold_that_devices_run(tmp_path):
    """Case 11: the switch named a copy by its folder: CPU artifacts in docs/data/cuda/ showed as CUDA."""
    from specdec_site.site import build as site_build

    for device in ("cpu", "cuda"):
        folder = tmp_path / "docs" / "data" / device
        folder.mkdir(parents=True)
        shutil.copy2(ROOT / "docs" / "data" / "cpu" / "traces.json", folder / "traces.json")
    with pytest.raises(SystemExit, match="docs/data/cuda/ holds a run recorded on cpu"):
        site_build.site_copies(tmp_path, "cpu")


def test_a_run_without_a_rejected_sampled_step_builds_its_playground():
    """Case 12: a draft equal to the target makes no rejection, and the site build failed with a traceback."""
    from specdec_site.site import files as site_files

    artifacts = site_files.load_artifacts(ROOT / "docs" / "data" / "cpu")
    for run in artifacts["traces"]["runs"]:
        for step in run["trace"]["steps"]:
            step["n_accepted"] = step["k"]  # every draft accepted
    assert site_files.real_position_preset(artifacts) is None
    values = {"code_greedy_best_alpha": "0.87", "code_greedy_best_c": "0.138", "code_greedy_best_k": "8"}
    data = site_files.playground_data(artifacts, values)
    assert [p["name"] for p in data["rule"]["presets"]][:3] == ["q = p", "disjoint supports",
                                                                 "the counterexample (math page, eq. 9)"]


def test_a_run_whose_trees_keep_only_first_choices_builds_its_tree_picture():
    """The --quick build on a tiny pair failed: no greedy tree step took a branch past the draft's first choices, and
    the tree picture had no data. It draws the step that kept most and says so; its caption's values say why."""
    from specdec_site.site import contract, pictures
    from specdec_site.site import files as site_files
    from specdec_site.site.values import VALUES, Artifacts

    artifacts = site_files.load_artifacts(ROOT / "docs" / "data" / "cpu")
    assert pictures.tree_example(artifacts["traces"]) is not None  # the committed data has such a step
    for run in artifacts["traces"]["runs"]:
        for step in run["trace"]["steps"]:
            if step.get("parents"):  # every accepted path is the chain of first choices, cut to its length
                step["path"] = pictures.first_choice_chain(step["parents"])[: len(step["path"])]
    assert pictures.tree_example(artifacts["traces"]) is None
    fig = json.loads(pictures.fig_tree_example(artifacts).to_json())
    contract.check("tree_example", {"sources": {"x": "y"}, "plotly_version": "6", "title": fig["layout"]["title"]["text"],
                                    "figure": fig})
    run, step = pictures.largest_tree_step(artifacts["traces"])
    assert f"the step that kept most ({len(step['path'])} drafts)" in fig["layout"]["title"]["text"]
    assert VALUES["tree_step_branch_token"](Artifacts(artifacts)) == "— (no such step in this build)"
    for run in artifacts["traces"]["runs"]:
        run["trace"]["steps"] = [s for s in run["trace"]["steps"] if not s.get("parents")]
    fig = json.loads(pictures.fig_tree_example(artifacts).to_json())
    assert fig["data"] and fig["layout"]["title"]["text"] == "No greedy tree run was recorded in this build"
