"""Artifacts -> the files the site reads (docs/figures/*.json), in the format of `contract`.

    python scripts/build_figures.py [--device cpu] [--data DIR] [--out docs/figures]

Writes one file per entry of figures.FIGURES, values.json (values.VALUES), visualizer.json (the recorded
traces with each token's fate and the palette), playground.json (the Playground's presets, measured points
and race timings). Each records the sha256 of the artifacts it was built
from, relative to the docs folder (the parent of --out); the MkDocs hook refuses stale ones.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from specdec.fileio import sha256_file, write_json_atomic
from specdec_site.acceptance import tested_acceptance
from specdec_site.paths import ROOT, notebook_path
from specdec_site.site import contract
from specdec_site.site.figures import CHART_LAYOUT, FIGURES, PALETTE, chain_runs, pick, set_name
from specdec_site.site.values import (
    DESIGN_PROBE,
    DESIGN_REPLAY,
    audit_tables,
    compute_values,
    design_replay,
    replay_tables,
    tree_tables,
)

STAGES = contract.ARTIFACTS


def executed_notebook(data_dir: Path) -> Path:
    """The executed notebook of the artifacts in data_dir: beside them, or for a docs/data/<device> folder built to
    the site (the default CPU one, paths.notebook_path), docs/notebooks/ (in this checkout or a copy)."""
    for path in (data_dir / "walkthrough.ipynb", data_dir.parent.parent / "notebooks" / "walkthrough.ipynb"):
        if path.is_file():
            return path
    raise SystemExit(f"error: {notebook_path(data_dir)} is missing: run `python scripts/build_data.py` first")


def load_artifacts(data_dir: Path) -> dict:
    artifacts = {}
    for stage in STAGES:
        path = data_dir / f"{stage}.json"
        if not path.is_file():
            raise SystemExit(f"error: {path} is missing: run `python scripts/build_data.py` first")
        artifacts[stage] = json.loads(path.read_text())
    # The executed notebook's provenance (its stage time, date, code digest), beside the JSON artifacts': it must
    # come from the same environment too.
    notebook = executed_notebook(data_dir)
    artifacts["notebook"] = {"metadata": json.loads(notebook.read_text())["metadata"]["specdec"]["metadata"]}
    check_one_environment(artifacts)
    return artifacts


# What every artifact must share: the build reruns only the stages whose code or settings changed (freshness.py),
# and a page that quotes one device, one set of versions and one pair of models must be true of every number on it.
# The platform too: two hosts that both report "AMD EPYC (2 cores)" timed the target 1.7 to 2.7 times apart and
# rounded the draft's near-ties differently, so speedups and steps from the two do not mix.
ENVIRONMENT = ("models", "versions", "device.type", "device.name", "device.threads", "device.platform",
               "device.capability", "dtype",
               "kernels", "seed", "draft_variant", "schema_version")


# What only the stages that ran the pair on the build's device share: a stage without the pair (exactness, the
# notebook) ran on the CPU in float32 whatever the build's device, and says so.
ON_BUILD_DEVICE = ("models", "device.type", "device.name", "dtype", "kernels", "draft_variant")


def check_one_environment(artifacts: dict) -> None:
    """Fail the site build if two artifacts were built with other models, versions, device... (a stage without
    models, e.g. exactness, has none to compare, nor the build's device; a model's load time is not part of its
    identity)."""
    def get(meta: dict, key: str):
        for part in key.split("."):
            meta = meta.get(part) if isinstance(meta, dict) else None
        if key == "models" and meta:
            meta = {role: {k: v for k, v in m.items() if k != "load_seconds"} for role, m in meta.items()}
        return json.dumps(meta, sort_keys=True)

    for key in ENVIRONMENT:
        seen = {stage: get(a["metadata"], key) for stage, a in artifacts.items()
                if key not in ON_BUILD_DEVICE or a["metadata"].get("models")}
        if len(set(seen.values()) - {"null"}) > 1:
            shown = {stage: value[:120] for stage, value in seen.items()}
            raise SystemExit(f"error: the artifacts disagree on {key}: {shown}. They must come from one environment: "
                             "rebuild them together with `python scripts/build_data.py --force`")


def step_fates(step: dict) -> dict:
    """Each drafted token's fate, and the fate of the step's own extra token, as the decoder recorded them
    (specdec.trace.step_fates, computed once, when the step ran)."""
    return {"fates": step["fates"], "extra_fate": step["extra_fate"]}


def visualizer_runs(artifacts: dict) -> list:
    """The traces' runs as the Step Visualizer reads them: the fields it shows (the steps carry their recorded
    fates, as a trace file a reader opens does)."""
    keep = ("id", "domain", "mode", "policy", "prompt", "sampling", "vocab", "equals_target_greedy", "trace")
    return [{k: r.get(k, "fixed") for k in keep} for r in artifacts["traces"]["runs"]]


def strip_run(artifacts: dict) -> dict:
    """Home's strip (Leviathan et al.'s Figure 1, from a recorded run): per step, the accepted drafts, the rejected
    one and the target's own token, as text. The run shows the payoff, not the worst case: of the fixed-k greedy runs
    on code (else of all the fixed-k runs), the one with the most tokens per target pass, the first on a tie; the text
    as the tokenizer wrote it (the page lays it out as text, so code reads as code)."""
    def payoff(run):
        steps = run["trace"]["steps"]
        return sum(len(s["emitted"]) for s in steps) / max(1, len(steps))

    chains = chain_runs(artifacts["traces"])
    fixed = [r for r in chains if r.get("policy", "fixed") == "fixed"] or chains
    runs = [r for r in fixed if r.get("domain") == "code" and r["mode"] == "greedy"] or fixed
    run = max(runs, key=payoff)  # max keeps the first of equals
    text = lambda t: run["vocab"].get(str(t), f"#{t}")  # noqa: E731
    steps = []
    for s in run["trace"]["steps"]:
        f, n = step_fates(s), s["n_accepted"]
        extra = s["emitted"][n] if f["extra_fate"] else None
        steps.append({"accepted": [text(t) for t in s["emitted"][:n]],
                      "rejected": text(s["draft_tokens"][n]) if n < s["k"] else None,
                      "extra": None if extra is None else text(extra), "extra_fate": f["extra_fate"]})
    sampling = run.get("sampling") or {}
    how = "greedy" if run["mode"] == "greedy" else f"sampled at temperature {sampling.get('temperature', '?')}"
    return {"label": f"{run['prompt']['id']}, {how}, k = {run['trace']['k']}", "prompt": run["prompt"]["text"],
            "k": run["trace"]["k"], "steps": steps}


def visible(text: str) -> str:
    """Whitespace made visible, as the visualizer shows it."""
    return text.replace("\n", "↵").replace("\t", "⇥").replace(" ", "␣")


def real_position_preset(artifacts: dict, n_tokens: int = 6) -> dict | None:
    """p and q of a recorded sampled step's first rejected position, over its n most likely tokens; None when no
    sampled step was rejected (the build accepts a draft equal to the target, whose every draft is accepted)."""
    for run in chain_runs(artifacts["traces"]):
        if run["mode"] != "sampled":
            continue
        for step in run["trace"]["steps"]:
            j = step["n_accepted"]
            if j >= step["k"]:
                continue
            p = dict(zip(step["top_p"][j]["ids"], step["top_p"][j]["probs"]))
            q = dict(zip(step["top_q"][j]["ids"], step["top_q"][j]["probs"]))
            ids = sorted(set(p) | set(q), key=lambda i: -(p.get(i, 0) + q.get(i, 0)))[:n_tokens]
            labels = [visible(run["vocab"].get(str(i), f"#{i}")) for i in ids]
            return {"name": f"a real position ({run['id']}, step {step['step'] + 1})", "labels": labels,
                    "p": [p.get(i, 0.0) for i in ids], "q": [q.get(i, 0.0) for i in ids],
                    "hint": f"The target's p and the draft's q at the rejected position of a recorded run, over its "
                            f"{len(ids)} most likely tokens (renormalized over them). The draft proposed "
                            f"{visible(run['vocab'].get(str(step['draft_tokens'][j]), '?'))!r}."}
    return None  # no sampled step was rejected (a draft equal to the target): the Playground has no such preset


def playground_data(artifacts: dict, values: dict) -> dict:
    """The Playground's presets, the calculator's defaults (values.json's numbers) and data, the race."""
    counterexample = artifacts["exactness"]["counterexample"]  # the p and q the exactness stage enumerated
    letters = ["A", "B", "C", "D", "E", "F"]
    presets = [
        {"name": "q = p", "labels": letters, "p": [0.35, 0.25, 0.2, 0.1, 0.06, 0.04], "q": [0.35, 0.25, 0.2, 0.1, 0.06, 0.04],
         "hint": "Try this: the draft is the target. Every draft is accepted (β = 1) and no residual is needed."},
        {"name": "disjoint supports", "labels": letters, "p": [0.5, 0.3, 0.2, 0, 0, 0], "q": [0, 0, 0, 0.5, 0.3, 0.2],
         "hint": "Try this: q puts its mass where p has none. Every draft is rejected (β = 0) and the residual carries "
                 "all of p back: the output is still exactly p."},
        {"name": "the counterexample (math page, eq. 9)", "labels": ["token 0", "token 1", "token 2", "token 3", "token 4"],
         "p": counterexample["p"] + [0, 0], "q": counterexample["q"] + [0, 0],
         "hint": "Try this: switch the rule to the wrong residual. The exact output becomes (0.4, 0.24, 0.36) instead of p."},
    ]
    real = real_position_preset(artifacts)
    presets += [real] if real else []
    b = artifacts["policies"]
    code = pick(b["sweeps"], "code", "greedy")
    kmax = code["spec"][-1]
    measured = [{"label": f"{set_name(s['domain'])}, {s['mode']}", "domain": s["domain"], "mode": s["mode"],
                 "k": [r["k"] for r in s["spec"]], "speedup": [r["speedup"]["median"] for r in s["spec"]]}
                for s in b["sweeps"]]
    # The calculator's defaults are the numbers the pages quote (values.py, one place), not a second rounding.
    speedup = {"defaults": {"alpha": float(values["code_greedy_best_alpha"]), "c": float(values["code_greedy_best_c"]),
                            "k": int(values["code_greedy_best_k"]),
                            "verify_slope": verify_slope(kmax)},
               "measured": measured, "presets": calculator_presets(artifacts)}
    races = []
    for run in chain_runs(artifacts["traces"]):
        if run["mode"] != "greedy" or not run.get("target_seconds") or not run.get("equals_target_greedy"):
            continue
        steps = run["trace"]["steps"]
        step_total = sum(s["draft_seconds"] + s["verify_seconds"] for s in steps) or 1.0
        scale, elapsed, out = run["seconds"] / step_total, 0.0, []
        for s in steps:
            elapsed += (s["draft_seconds"] + s["verify_seconds"]) * scale
            f = step_fates(s)
            fates = [x for x in f["fates"] if x == "accepted"][: len(s["emitted"])]
            fates += [f["extra_fate"]] if f["extra_fate"] else []
            out.append({"end": elapsed, "tokens": [visible(run["vocab"].get(str(t), "?")) for t in s["emitted"]],
                        "fates": fates[: len(s["emitted"])]})
        if out:  # the scaled steps sum to the run's time up to rounding: the last one ends when the run did
            out[-1]["end"] = run["seconds"]
        policy = "fixed k = " + str(run["trace"]["k"]) if run.get("policy", "fixed") == "fixed" else f"{run['policy']}, k ≤ {run['trace']['k']}"
        races.append({"label": f"{run['prompt']['id']} ({policy})", "target_seconds": run["target_seconds"],
                      "spec_seconds": run["seconds"], "tokens": [visible(run["vocab"].get(str(t), "?")) for t in run["tokens"]],
                      "steps": out})
    if not races:
        raise ValueError("no greedy trace with a recorded target-only time: rebuild the traces stage")
    return {"rule": {"presets": presets}, "block": block_presets(artifacts), "speedup": speedup,
            "race": {"runs": races}, "palette": PALETTE}


def block_presets(artifacts: dict) -> dict:
    """The Playground's block-verification panel: two-token blocks (k = 2, the same p and q at both positions), on
    Sun et al.'s example and the math page's counterexample, as the exactness stage enumerated them."""
    example = artifacts["exactness"]["block_example"]
    counterexample = artifacts["exactness"]["counterexample"]
    return {"k": example["k"], "presets": [
        {"name": "Sun et al.'s example", "labels": list(example["ids"]), "p": example["p"], "q": example["q"],
         "hint": "Try this: the draft prefers B, the target A. Switch the rule and read the row B A: the token "
                 "rule keeps a drafted B with probability 1/2 and stops there; block verification keeps B A whole "
                 "every time, because the A after it, which p favours, pays for the B."},
        {"name": "the counterexample (math page, eq. 9)", "labels": ["0", "1", "2"], "p": counterexample["p"],
         "q": counterexample["q"], "hint": "Try this: three tokens, each position drawn alike; block verification "
                                          "is never behind the token rule, in total."},
    ]}


HOVER_DIGITS = ".3g"  # three significant digits in every hover: 1.86×, 0.914, not 1.8612345


def readable_hovers(fig: dict) -> dict:
    """Hovers a reader can use: the trace's whole name (Plotly cuts it at 15 characters, so "Leviathan Th…" stood for
    two traces), numbers to three significant digits, and an error bar as its min–max, not "+0.62 / −0.32". A
    trace with its own hovertemplate keeps it."""
    fig["layout"]["hoverlabel"] = {**fig["layout"].get("hoverlabel", {}), "namelength": -1}
    for trace in fig["data"]:
        if trace.get("hovertemplate") or trace.get("hoverinfo") == "skip":
            continue
        horizontal = trace.get("orientation") == "h"
        value, other = ("x", "y") if horizontal else ("y", "x")
        template = f"%{{{other}}}: %{{{value}:{HOVER_DIGITS}}}"
        error = trace.get("error_x" if horizontal else "error_y") or {}
        if error.get("array") is not None and trace.get(value) is not None:
            values = trace[value]
            plus = error["array"]
            minus = error.get("arrayminus") if error.get("symmetric") is False else plus
            trace["customdata"] = [[None, None] if v is None else [v - m, v + u]
                                   for v, u, m in zip(values, plus, minus or plus)]
            template += f" (min–max %{{customdata[0]:{HOVER_DIGITS}}}–%{{customdata[1]:{HOVER_DIGITS}}})"
        trace["hovertemplate"] = template + "<extra>%{fullData.name}</extra>"
    return fig


def calculator_presets(artifacts: dict) -> list[dict]:
    """The calculator's presets: per domain of the greedy sweep, the hardware this artifact set measured (its device),
    with the tested acceptance â (specdec_site.acceptance), c and k of the sweep's best row (rounded as the pages quote them: values._best) and the verify cost
    per drafted token of its longest drafts. The page adds "your own" (the sliders as set)."""
    device = artifacts["policies"]["metadata"]["device"]
    presets = []
    for sweep in artifacts["policies"]["sweeps"]:
        if sweep["mode"] != "greedy":
            continue
        best = max(sweep["spec"], key=lambda r: r["speedup"]["median"])
        longest = sweep["spec"][-1]
        presets.append({"label": f"measured: {device['name']} ({device['type']}), {set_name(sweep['domain'])}, greedy",
                        "domain": sweep["domain"], "alpha": round(tested_acceptance(best), 2), "c": round(best["c"], 3),
                        "k": best["k"], "verify_slope": verify_slope(longest)})
    return presets


def verify_slope(row: dict) -> float:
    """The calculator's verify cost per drafted token, from a sweep row (its longest drafts): a verify pass of k drafts
    costs 1 + slope × k target passes."""
    return round(max(0.0, (row["verify_cost"] - 1) / row["k"]), 3)


def write_site_files(data_dir: Path, out: Path, docs: Path | None = None) -> list[str]:
    """The figure files of data_dir's artifacts in out; each names its sources relative to docs (the site's docs
    folder: by default out's parent, as for docs/figures)."""
    import plotly

    artifacts = load_artifacts(data_dir)
    design = design_replay()  # read once, before any figure: a missing one stops the build here
    docs = docs.resolve() if docs else out.resolve().parent
    inputs = [data_dir / f"{s}.json" for s in STAGES] + [executed_notebook(data_dir), DESIGN_REPLAY, DESIGN_PROBE]  # values quote them
    sources = {os.path.relpath(path.resolve(), docs): sha256_file(path) for path in inputs}
    common = {"sources": sources, "plotly_version": plotly.__version__}
    files = {}
    for name, builder in FIGURES.items():
        fig = readable_hovers(json.loads(builder(artifacts).to_json()))
        fig["layout"].pop("template", None)  # the site themes figures itself (light/dark)
        files[name] = {**common, "title": fig["layout"]["title"]["text"], "figure": fig}
    files["values"] = {**common, "values": compute_values(artifacts, design)}
    files["tables"] = {**common, "tables": {**audit_tables(artifacts), **replay_tables(design),
                                            **tree_tables(artifacts)}}
    files["visualizer"] = {**common, "runs": visualizer_runs(artifacts), "palette": PALETTE, "layout": CHART_LAYOUT}
    files["playground"] = {**common, **playground_data(artifacts, files["values"]["values"])}
    files["strip"] = {**common, "run": strip_run(artifacts), "palette": PALETTE}
    for name, data in files.items():
        contract.check(name, data)
        write_json_atomic(out / f"{name}.json", data)
    return list(files)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/build_figures.py", description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="which artifact folder under docs/data to plot")
    parser.add_argument("--data", default=None, help="artifact folder (default docs/data/<device>)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "figures"), help="where the files go (default docs/figures)")
    parser.add_argument("--docs", default=None, help="the site's docs folder, which the files name their artifacts "
                        "relative to (default: the parent of --out)")
    args = parser.parse_args(argv)
    data_dir = Path(args.data) if args.data else ROOT / "docs" / "data" / args.device
    names = write_site_files(data_dir, Path(args.out), Path(args.docs) if args.docs else None)
    print(f"[figures] wrote {len(names)} files ({len(FIGURES)} figures) to {args.out}")
    return 0
