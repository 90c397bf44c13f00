"""The build script: schema of the committed artifacts, bad arguments, atomic writes, and --quick end to end."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "build_data.py"
SCHEMA = json.loads((ROOT / "docs" / "data" / "schema.json").read_text())
STAGES = ["traces", "benchmark", "exactness"]

sys.path.insert(0, str(ROOT / "scripts"))
import build_data  # noqa: E402


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
        (["--k", "0"], "--k must be >= 1"),
        (["--temperature", "-1"], "--temperature must be >= 0"),
        (["--stages", "traces,nope"], "unknown stage"),
        (["--device", "tpu"], "invalid choice"),
    ],
)
def test_bad_arguments_fail_with_one_clear_message(args, message, tmp_path):
    result = run(*args, "--out", str(tmp_path))
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not list(tmp_path.iterdir())


def test_unknown_model_fails_cleanly_and_leaves_artifacts_alone(tmp_path):
    (tmp_path / "traces.json").write_text('{"keep": true}')
    result = run("--target", "no-such-org/no-such-model", "--quick", "--out", str(tmp_path), "--stages", "traces")
    assert result.returncode == 2
    assert "cannot load model 'no-such-org/no-such-model'" in result.stderr
    assert "Traceback" not in result.stderr
    assert json.loads((tmp_path / "traces.json").read_text()) == {"keep": True}


def test_atomic_write_never_leaves_a_half_written_file(tmp_path):
    path = tmp_path / "a.json"
    build_data.write_json_atomic(path, {"x": 1})
    with pytest.raises(ValueError):
        build_data.write_json_atomic(path, {"x": float("nan")})  # not valid JSON: refused
    assert json.loads(path.read_text()) == {"x": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_leviathan_formulas():
    assert build_data.expected_tokens_per_pass(0.0, 4) == 1.0
    assert build_data.expected_tokens_per_pass(1.0, 4) == 5.0
    assert build_data.expected_tokens_per_pass(0.5, 2) == pytest.approx(1.75)
    # Thm 3.8 with c = 0: the speedup is the expected tokens per pass
    assert build_data.leviathan_speedup(0.8, 4, 0.0) == pytest.approx((1 - 0.8**5) / 0.2)
    assert build_data.leviathan_speedup(0.8, 4, 0.1) == pytest.approx((1 - 0.8**5) / (0.2 * 1.4))


@pytest.mark.real
@pytest.mark.skipif(os.environ.get("SPECDEC_SKIP_REAL") == "1", reason="SPECDEC_SKIP_REAL=1")
def test_quick_run_end_to_end_is_valid_and_resumable(tmp_path):
    first = run("--quick", "--out", str(tmp_path), "--device", "cpu", timeout=1200)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "[build] summary:" in first.stdout
    for stage in STAGES:
        data = json.loads((tmp_path / f"{stage}.json").read_text())
        validate(data, stage)
        assert data["metadata"]["config"]["quick"] is True
    traces = json.loads((tmp_path / "traces.json").read_text())
    assert all(r["equals_target_greedy"] for r in traces["runs"] if r["mode"] == "greedy")
    bench = json.loads((tmp_path / "benchmark.json").read_text())
    assert all(s["greedy_equal_all"] for s in bench["sweeps"] if s["mode"] == "greedy")
    exact = json.loads((tmp_path / "exactness.json").read_text())
    assert exact["counterexample"]["correct"] == pytest.approx(exact["counterexample"]["p"], abs=1e-12)
    notebook = json.loads((tmp_path / "walkthrough.ipynb").read_text())
    outputs = [o for c in notebook["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
    assert outputs and not [o for o in outputs if o["output_type"] == "error"]
    assert any("identical to target greedy: True" in "".join(o.get("text", "")) for o in outputs)
    # Same seed, same traces (timings aside).
    before = {s: (tmp_path / f"{s}.json").stat().st_mtime_ns for s in STAGES}
    second = run("--quick", "--out", str(tmp_path), "--device", "cpu")
    assert second.returncode == 0 and second.stdout.count("up to date") == 4
    assert before == {s: (tmp_path / f"{s}.json").stat().st_mtime_ns for s in STAGES}
    again = run("--quick", "--out", str(tmp_path / "again"), "--device", "cpu", "--stages", "traces", timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    replay = json.loads((tmp_path / "again" / "traces.json").read_text())

    def strip(run_):
        steps = [{k: v for k, v in s.items() if not k.endswith("_seconds")} for s in run_["trace"]["steps"]]
        return run_["tokens"], steps
    assert [strip(r) for r in replay["runs"]] == [strip(r) for r in traces["runs"]]
