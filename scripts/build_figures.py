"""Turn the build artifacts (docs/data/<device>/*.json) into Plotly figure JSON and page values.

    python scripts/build_figures.py [--device cpu] [--data DIR] [--out docs/figures]

Writes docs/figures/<name>.json for every fig_* function below, values.json (every number a page
quotes, already formatted) and visualizer.json (the recorded traces for the Step Visualizer). Each file
records the sha256 of the artifacts it was built from; the MkDocs hook refuses stale ones.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
from pathlib import Path

import plotly
import plotly.graph_objects as go

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from artifacts import write_json_atomic  # noqa: E402

COLORS = {"code": "#3f51b5", "prose": "#e91e63", "greedy": "solid", "sampled": "dash"}


def load(data_dir: Path) -> dict:
    artifacts = {}
    for stage in ("traces", "benchmark", "exactness"):
        path = data_dir / f"{stage}.json"
        if not path.is_file():
            raise SystemExit(f"error: {path} is missing: run `python scripts/build_data.py` first")
        artifacts[stage] = json.loads(path.read_text())
    return artifacts


def layout(title: str, x: str, y: str, **extra) -> dict:
    xaxis = {"title": {"text": x}}
    if x.startswith("k") or x == "draft position":
        xaxis["dtick"] = 1  # integer ticks for k
    base = dict(title={"text": title, "font": {"size": 15}}, xaxis=xaxis, yaxis={"title": {"text": y}},
                margin={"t": 50, "r": 20, "b": 50, "l": 60}, height=420, legend={"orientation": "h", "y": -0.2},
                hovermode="closest")
    base.update(extra)
    return base


def label(sweep: dict) -> str:
    return f"{sweep['domain']}, {sweep['mode']}"


# ---------------------------------------------------------------- benchmark figures


def fig_speedup_vs_k(a) -> go.Figure:
    fig = go.Figure()
    for s in a["benchmark"]["sweeps"]:
        ks = [r["k"] for r in s["spec"]]
        med = [r["speedup"]["median"] for r in s["spec"]]
        color, dash = COLORS[s["domain"]], COLORS[s["mode"]]
        fig.add_scatter(x=ks, y=med, name=f"measured: {label(s)}", mode="lines+markers", legendgroup=label(s),
                        line={"color": color, "dash": dash},
                        error_y={"type": "data", "symmetric": False,
                                 "array": [r["speedup"]["max"] - m for r, m in zip(s["spec"], med)],
                                 "arrayminus": [m - r["speedup"]["min"] for r, m in zip(s["spec"], med)]})
        fig.add_scatter(x=ks, y=[r["predicted_speedup_with_verify_cost"] for r in s["spec"]], mode="lines",
                        name=f"predicted (α, c, verify cost): {label(s)}", legendgroup=label(s),
                        line={"color": color, "dash": "dot", "width": 1.5}, opacity=0.7)
    fig.add_hline(y=1, line={"color": "gray", "width": 1})
    fig.update_layout(**layout("Speedup over target-only decoding vs k (median, min–max over reps)", "k (draft tokens per step)",
                               "speedup ×"))
    return fig


def fig_theory_vs_measured(a) -> go.Figure:
    fig = go.Figure()
    for s in a["benchmark"]["sweeps"]:
        if s["mode"] != "greedy":
            continue
        ks = [r["k"] for r in s["spec"]]
        color = COLORS[s["domain"]]
        fig.add_scatter(x=ks, y=[r["speedup"]["median"] for r in s["spec"]], name=f"measured: {s['domain']}",
                        mode="lines+markers", line={"color": color})
        fig.add_scatter(x=ks, y=[r["predicted_speedup"] for r in s["spec"]], name=f"Leviathan Thm 3.8 (α, c): {s['domain']}",
                        mode="lines", line={"color": color, "dash": "dot"})
        fig.add_scatter(x=ks, y=[r["predicted_speedup_with_verify_cost"] for r in s["spec"]],
                        name=f"Thm 3.8 with measured verify cost: {s['domain']}", mode="lines",
                        line={"color": color, "dash": "dash"})
        fig.add_scatter(x=ks, y=[predicted_from_tpp(r) for r in s["spec"]],
                        name=f"measured tokens/pass ÷ (k·c + verify cost): {s['domain']}", mode="lines",
                        line={"color": color, "dash": "dashdot", "width": 1})
    fig.update_layout(**layout("Greedy: measured speedup vs the theory, from the measured α and c", "k", "speedup ×"))
    return fig


def predicted_from_tpp(r: dict) -> float:
    """Eq. (8) with the measured tokens per pass in place of (1 - a^(k+1))/(1 - a) (no i.i.d. assumption)."""
    return r["tokens_per_target_pass"] / (r["k"] * r["c"] + r["verify_cost"])


def fig_acceptance_vs_k(a) -> go.Figure:
    fig = go.Figure()
    for s in a["benchmark"]["sweeps"]:
        fig.add_scatter(x=[r["k"] for r in s["spec"]], y=[r["alpha"] for r in s["spec"]], name=label(s),
                        mode="lines+markers", line={"color": COLORS[s["domain"]], "dash": COLORS[s["mode"]]})
    fig.update_layout(**layout("Acceptance rate α (accepted / drafted) vs k", "k", "α", yaxis={"range": [0, 1.02], "title": {"text": "α"}}))
    return fig


def fig_tokens_per_pass(a) -> go.Figure:
    fig = go.Figure()
    for s in a["benchmark"]["sweeps"]:
        ks = [r["k"] for r in s["spec"]]
        fig.add_scatter(x=ks, y=[r["tokens_per_target_pass"] for r in s["spec"]], name=f"measured: {label(s)}",
                        mode="lines+markers", line={"color": COLORS[s["domain"]], "dash": COLORS[s["mode"]]})
        fig.add_scatter(x=ks, y=[r["expected_tokens_per_pass"] for r in s["spec"]], name=f"(1−α^(k+1))/(1−α): {label(s)}",
                        mode="lines", line={"color": COLORS[s["domain"]], "dash": "dot", "width": 1}, opacity=0.6)
    fig.update_layout(**layout("Tokens per target pass: measured vs expected from α", "k", "tokens per target pass"))
    return fig


def pick(sweeps, domain, mode):
    return next(s for s in sweeps if s["domain"] == domain and s["mode"] == mode)


def at_k(sweep, k):
    return next(r for r in sweep["spec"] if r["k"] == k)


def fig_accepted_length_histogram(a) -> go.Figure:
    k = a["traces"]["runs"][0]["trace"]["k"]
    fig = go.Figure()
    for domain in ("code", "prose"):
        s = pick(a["benchmark"]["sweeps"], domain, "greedy")
        r = at_k(s, min(k, max(x["k"] for x in s["spec"])))
        total = sum(r["accepted_length_histogram"]) or 1
        fig.add_bar(x=list(range(len(r["accepted_length_histogram"]))), y=[h / total for h in r["accepted_length_histogram"]],
                    name=f"{domain}, greedy, k={r['k']}", marker={"color": COLORS[domain]})
    fig.update_layout(**layout("How many drafts a step accepts", "accepted draft tokens in a step", "fraction of steps",
                               barmode="group"))
    return fig


def fig_per_position_acceptance(a) -> go.Figure:
    fig = go.Figure()
    for s in a["benchmark"]["sweeps"]:
        r = s["spec"][-1]
        fig.add_scatter(x=list(range(1, r["k"] + 1)), y=r["per_position_acceptance"], name=f"{label(s)}, k={r['k']}",
                        mode="lines+markers", line={"color": COLORS[s["domain"]], "dash": COLORS[s["mode"]]})
    fig.update_layout(**layout("Acceptance by draft position (given all earlier drafts were accepted)", "draft position",
                               "P(accept)", yaxis={"range": [0, 1.02], "title": {"text": "P(accept)"}}))
    return fig


def fig_time_breakdown(a) -> go.Figure:
    fig = go.Figure()
    s = pick(a["benchmark"]["sweeps"], "code", "greedy")
    n = s["new_tokens"] * len(s["target_only"]["seconds"]["values"])
    ks = [str(r["k"]) for r in s["spec"]]
    fig.add_bar(x=["target only", *ks], y=[s["target_only"]["seconds"]["median"] / s["new_tokens"]] + [None] * len(ks),
                name="target only", marker={"color": "#607d8b"})
    fig.add_bar(x=["target only", *ks], y=[None] + [r["draft_seconds"] / n for r in s["spec"]], name="draft", marker={"color": "#ff9800"})
    fig.add_bar(x=["target only", *ks], y=[None] + [r["verify_seconds"] / n for r in s["spec"]], name="verify (target pass + rule)",
                marker={"color": "#3f51b5"})
    fig.update_layout(**layout("Where the time goes (code, greedy): seconds per generated token", "k", "seconds per token",
                               barmode="stack"))
    return fig


def fig_hf_comparison(a) -> go.Figure:
    cs = a["benchmark"]["code_set"]
    prompts = [r["prompt"] for r in cs["rows"]]
    names = {f"ours_{d}": f"specdec, {d} draft" for d in cs["drafts"]}
    names |= {"hf_assisted_constant": f"HF assisted, k={cs['k']} constant", "hf_assisted_default": "HF assisted, default schedule"}
    colors = ["#3f51b5", "#00bcd4", "#ff9800", "#9e9e9e"]
    fig = go.Figure()
    for (key, name), color in zip(names.items(), colors):
        fig.add_bar(x=prompts, y=[r["speedup"][key] for r in cs["rows"]], name=name, marker={"color": color})
    fig.add_hline(y=1, line={"color": "gray", "width": 1})
    fig.update_layout(**layout(f"Code prompts, greedy, k={cs['k']}: speedup over each library's own target-only run",
                               "prompt", "speedup ×", barmode="group"))
    return fig


# ---------------------------------------------------------------- exactness figures


def fig_exactness(a) -> go.Figure:
    e = a["exactness"]
    n = 40
    seqs = e["sequences"][:n]
    fig = go.Figure()
    fig.add_bar(x=seqs, y=e["exact"][:n], name="exact target distribution", marker={"color": "#607d8b"})
    for rule, color in (("correct", "#4caf50"), ("naive_residual", "#f44336")):
        r = e["rules"][rule]
        fig.add_scatter(x=seqs, y=r["empirical"][:n], mode="markers", name=f"{rule.replace('_', ' ')}: {r['samples']} samples",
                        marker={"color": color, "size": 8, "symbol": "diamond" if rule == "correct" else "x"})
    fig.update_layout(**layout(f"The {n} most likely 3-token sequences: exact vs sampled", "sequence (token ids)",
                               "probability", xaxis={"type": "category", "title": {"text": "sequence (token ids)"}}))
    return fig


def fig_counterexample(a) -> go.Figure:
    c = a["exactness"]["counterexample"]
    tokens = [f"token {i}" for i in range(len(c["p"]))]
    fig = go.Figure()
    for key, name, color in (("p", "target p", "#607d8b"), ("q", "draft q", "#ff9800"),
                             ("correct", "output, norm(max(0, p − q))", "#4caf50"),
                             ("naive_residual", "output, norm(max(0, p − α·q))", "#f44336")):
        fig.add_bar(x=tokens, y=c[key], name=name, marker={"color": color})
    fig.update_layout(**layout("The counterexample, enumerated exactly through verify_draft (k = 1)", "", "probability",
                               barmode="group"))
    return fig


# ---------------------------------------------------------------- values quoted in the text


def fmt(x, digits=2):
    return f"{x:.{digits}f}"


def values(a) -> dict:
    b, t, e = a["benchmark"], a["traces"], a["exactness"]
    meta = b["metadata"]
    v = {
        "device": meta["device"]["name"], "device_type": meta["device"]["type"], "threads": meta["device"]["threads"],
        "dtype": meta["dtype"], "kernels": meta.get("kernels", "default"), "date": meta["date"][:10],
        "torch": meta["versions"]["torch"], "transformers": meta["versions"]["transformers"],
        "python": meta["versions"]["python"], "specdec": meta["versions"]["specdec"],
        "target": meta["models"]["target"]["upstream"], "draft": meta["models"]["draft"]["upstream"],
        "target_sha": meta["models"]["target"].get("gguf_sha256", "-")[:16],
        "draft_sha": meta["models"]["draft"].get("gguf_sha256", "-")[:16],
        "command": meta["command"], "seed": meta["seed"], "draft_variant": b["draft_variant"],
        "code_sha": meta["code_sha256"][:16],
        "build_minutes": fmt(sum(x["metadata"]["seconds"] for x in a.values()) / 60, 1),
        "reps": len(b["sweeps"][0]["target_only"]["seconds"]["values"]),
        "sweep_tokens": b["sweeps"][0]["new_tokens"],
        "sampled_temperature": pick(b["sweeps"], "code", "sampled")["sampling"]["temperature"],
    }
    ks = [r["k"] for r in b["sweeps"][0]["spec"]]  # every sweep runs the same k values
    v["sweep_k_range"] = f"{ks[0]} … {ks[-1]}"
    for s in b["sweeps"]:
        key = f"{s['domain']}_{s['mode']}"
        best = max(s["spec"], key=lambda r: r["speedup"]["median"])
        v[f"{key}_best_k"] = best["k"]
        v[f"{key}_best_speedup"] = fmt(best["speedup"]["median"])
        v[f"{key}_best_alpha"] = fmt(best["alpha"])
        v[f"{key}_best_c"] = fmt(best["c"], 3)
        v[f"{key}_best_verify_cost"] = fmt(best["verify_cost"])
        v[f"{key}_best_tpp"] = fmt(best["tokens_per_target_pass"])
        v[f"{key}_best_predicted"] = fmt(best["predicted_speedup_with_verify_cost"])
        v[f"{key}_best_predicted_leviathan"] = fmt(best["predicted_speedup"])
        v[f"{key}_best_measured_over_predicted"] = fmt(best["speedup"]["median"] / best["predicted_speedup_with_verify_cost"])
        v[f"{key}_best_expected_tpp"] = fmt(best["expected_tokens_per_pass"])
        v[f"{key}_best_predicted_tpp"] = fmt(predicted_from_tpp(best))
        v[f"{key}_best_measured_over_predicted_tpp"] = fmt(best["speedup"]["median"] / predicted_from_tpp(best))
        v[f"{key}_target_tps"] = fmt(s["target_only"]["tokens_per_second"])
        v[f"{key}_best_tps"] = fmt(best["tokens_per_second"])
        k1, kmax = s["spec"][0], s["spec"][-1]
        v[f"{key}_k1"] = k1["k"]
        v[f"{key}_k1_speedup"] = fmt(k1["speedup"]["median"])
        v[f"{key}_kmax"] = kmax["k"]
        v[f"{key}_kmax_speedup"] = fmt(kmax["speedup"]["median"])
        v[f"{key}_kmax_verify_cost"] = fmt(kmax["verify_cost"])
        v[f"{key}_kmax_alpha"] = fmt(kmax["alpha"])
        if s["greedy_equal_all"] is not None:
            v[f"{key}_greedy_equal"] = f"{s['greedy_runs_checked']} of {s['greedy_runs_checked']}" if s["greedy_equal_all"] else "NOT ALL"
    cs = b["code_set"]
    v["set_k"] = cs["k"]
    v["set_prompts"] = len(cs["rows"])
    v["set_tokens"] = cs["new_tokens"]
    for key, sm in cs["summary"].items():
        if isinstance(sm, dict):
            v[f"set_{key}_median"] = fmt(sm["median"])
            v[f"set_{key}_best"] = fmt(sm["best"])
            v[f"set_{key}_worst"] = fmt(sm["worst"])
        else:
            v[f"set_{key}"] = fmt(sm)
    for d in cs["drafts"]:
        v[f"set_alpha_{d}_median"] = fmt(statistics.median([r["alpha"][d] for r in cs["rows"]]))
    same = [ok for r in cs["rows"] for ok in r["same_output_as_target"].values()]
    v["set_same_output"] = f"{sum(same)} of {len(same)}"
    greedy_runs = [r for r in t["runs"] if r["mode"] == "greedy"]
    v["trace_greedy_equal"] = f"{sum(bool(r['equals_target_greedy']) for r in greedy_runs)} of {len(greedy_runs)}"
    v["trace_k"] = t["runs"][0]["trace"]["k"]
    v["trace_runs"] = len(t["runs"])
    for rule, r in e["rules"].items():
        v[f"exact_{rule}_tv"] = fmt(r["tv_distance"], 4)
        v[f"exact_{rule}_p"] = f"{r['p_value']:.3g}"
        v[f"exact_{rule}_samples"] = f"{r['samples']:,}"
    c = e["counterexample"]
    for key in ("correct", "naive_residual"):
        v[f"cx_{key}"] = "(" + ", ".join(f"{x:.4g}" for x in c[key]) + ")"
    v["exact_sequences"] = len(e["sequences"])
    v["exact_vocab"] = e["setup"]["vocab"]
    v["exact_new_tokens"] = e["setup"]["new_tokens"]
    v["exact_k"] = e["setup"]["k"]
    v["exact_temperature"] = e["setup"]["temperature"]
    return v


# ---------------------------------------------------------------- visualizer data


def visualizer(a) -> list:
    keep = ("id", "domain", "mode", "prompt", "sampling", "vocab", "equals_target_greedy")
    return [{**{k: r[k] for k in keep}, "trace": r["trace"]} for r in a["traces"]["runs"]]


FIGURES = {name.removeprefix("fig_"): fn for name, fn in globals().items() if name.startswith("fig_")}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="which artifact folder under docs/data to plot")
    parser.add_argument("--data", default=None, help="artifact folder (default docs/data/<device>)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "figures"))
    args = parser.parse_args(argv)
    data_dir = Path(args.data) if args.data else ROOT / "docs" / "data" / args.device
    out = Path(args.out)
    artifacts = load(data_dir)

    def rel(path: Path) -> str:
        path = path.resolve()
        return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)

    sources = {rel(data_dir / f"{s}.json"): sha256(data_dir / f"{s}.json") for s in artifacts}
    for name, fn in FIGURES.items():
        fig = json.loads(fn(artifacts).to_json())
        fig["layout"].pop("template", None)  # the site themes figures itself (light/dark)
        write_json_atomic(out / f"{name}.json", {"sources": sources, "plotly_version": plotly.__version__,
                                                 "title": fig["layout"]["title"]["text"], "figure": fig})
    write_json_atomic(out / "values.json", {"sources": sources, "plotly_version": plotly.__version__,
                                            "values": values(artifacts)})
    write_json_atomic(out / "visualizer.json", {"sources": sources, "runs": visualizer(artifacts)})
    print(f"[figures] wrote {len(FIGURES)} figures, values.json and visualizer.json to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
