"""Plotly figures from the build artifacts: one `fig_<what>` per figure, listed in the FIGURES table.

Each takes the loaded artifacts {"traces", "policies", "exactness"} and returns a plotly Figure; the
writer (`specdec_site.site.files`) serialises them in the format of `contract`. Colours live in PALETTE,
shared with the Step Visualizer (which reads them from visualizer.json).
"""

from __future__ import annotations

import statistics

import plotly.graph_objects as go

from specdec.theory import speedup_from_tokens_per_pass
from specdec_site.acceptance import draft_yield, tested_acceptance, theory
from specdec_site.site import pictures
from specdec_site.site.chart import (  # noqa: F401 (the names other modules import from here)
    CHART_LAYOUT,
    DASH,
    FEW_PROMPTS,
    PALETTE,
    chain_runs,
    interval_label,
    interval_name,
    label,
    layout,
    set_name,
)

# ---------------------------------------------------------------- benchmark figures


def fig_speedup_vs_k(a) -> go.Figure:
    fig = go.Figure()
    for s in a["policies"]["sweeps"]:
        ks = [r["k"] for r in s["spec"]]
        med = [r["speedup"]["median"] for r in s["spec"]]
        color, dash = PALETTE[s["domain"]], DASH[s["mode"]]
        fig.add_scatter(x=ks, y=med, name=f"measured: {label(s)}", mode="lines+markers", legendgroup=label(s),
                        line={"color": color, "dash": dash},
                        error_y={"type": "data", "symmetric": False,
                                 "array": [r["speedup"]["max"] - m for r, m in zip(s["spec"], med)],
                                 "arrayminus": [m - r["speedup"]["min"] for r, m in zip(s["spec"], med)]})
        fig.add_scatter(x=ks, y=[theory(r)["speedup_eq8"] for r in s["spec"]], mode="lines",
                        name=f"eq. (8) at â, c, verify cost: {label(s)}", legendgroup=label(s),
                        line={"color": color, "dash": "dot", "width": 2})  # opaque: at 0.7, faint on the dark scheme
    fig.add_hline(y=1, line={"color": "gray", "width": 1})
    # the title says where each set's median peaks (the finding), computed from the sweep as the page's value is
    best = []
    for s in a["policies"]["sweeps"]:
        medians = {r["k"]: r["speedup"]["median"] for r in s["spec"]}
        k = max(medians, key=medians.get)
        best.append(f"{set_name(s['domain'])} {'still rising at' if k == max(medians) else 'best at'} k = {k}")
    fig.update_layout(**layout("Speedup over the target alone against k (median, min–max over prompts): "
                               + ", ".join(best), "k (draft tokens per step)", "speedup ×"))
    return fig


def predicted_from_tpp(r: dict) -> float:
    """Eq. (8) with the measured tokens per pass (no i.i.d. assumption), for one sweep row."""
    return speedup_from_tokens_per_pass(r["tokens_per_target_pass"], r["k"], r["c"], r["verify_cost"])


def fig_acceptance_vs_k(a) -> go.Figure:
    fig = go.Figure()
    for s in a["policies"]["sweeps"]:
        ks = [r["k"] for r in s["spec"]]
        fig.add_scatter(x=ks, y=[tested_acceptance(r) for r in s["spec"]], name=f"â, accepted ÷ tested: {label(s)}",
                        mode="lines+markers", line={"color": PALETTE[s["domain"]]}, legendgroup=label(s))
        fig.add_scatter(x=ks, y=[draft_yield(r) for r in s["spec"]], name=f"draft yield, accepted ÷ drafted: {label(s)}",
                        mode="lines", line={"color": PALETTE[s["domain"]], "dash": "dot", "width": 1.5},
                        legendgroup=label(s))
    # the title's numbers: how far â moves from the smallest k to the largest, and how far the yield falls, per set
    moved = max(abs(tested_acceptance(s["spec"][-1]) - tested_acceptance(s["spec"][0])) for s in a["policies"]["sweeps"])
    fell = max(draft_yield(s["spec"][0]) - draft_yield(s["spec"][-1]) for s in a["policies"]["sweeps"])
    ks = [r["k"] for r in a["policies"]["sweeps"][0]["spec"]]
    fig.update_layout(**layout(f"From k = {ks[0]} to k = {ks[-1]}, the tested acceptance â moves by at most {moved:.2f}; "
                               f"the draft yield falls by up to {fell:.2f}, by truncation",
                               "k", "fraction", yaxis={"range": [0, 1.02], "title": {"text": "fraction"}}))
    return fig


def fig_tokens_per_pass(a) -> go.Figure:
    fig = go.Figure()
    for s in a["policies"]["sweeps"]:
        ks = [r["k"] for r in s["spec"]]
        fig.add_scatter(x=ks, y=[r["tokens_per_target_pass"] for r in s["spec"]], name=f"measured: {label(s)}",
                        mode="lines+markers", line={"color": PALETTE[s["domain"]], "dash": DASH[s["mode"]]})
        fig.add_scatter(x=ks, y=[theory(r)["tokens_per_pass"] for r in s["spec"]], name=f"eq. (6) at â: {label(s)}",
                        mode="lines", line={"color": PALETTE[s["domain"]], "dash": "dash", "width": 1.5})
    # the largest miss, measured ÷ predicted − 1, as the page's value theory_tpp_worst_miss takes it
    miss = max(abs(r["tokens_per_target_pass"] / theory(r)["tokens_per_pass"] - 1)
               for s in a["policies"]["sweeps"] for r in s["spec"])
    fig.update_layout(**layout(f"Tokens per target pass: the measured (solid) within {100 * miss:.1f}% of eq. (6) at "
                               "the tested acceptance â (dashed) at every k", "k", "tokens per target pass"))
    return fig


def pick(sweeps, domain, mode):
    return next(s for s in sweeps if s["domain"] == domain and s["mode"] == mode)


def at_k(sweep, k):
    return next(r for r in sweep["spec"] if r["k"] == k)


def histogram_row(a, domain: str) -> dict:
    """The sweep row the accepted-length histogram draws for a domain (greedy): the traces' k, or the sweep's largest
    below it. The Benchmark's caption quotes the same row (values.py)."""
    k = chain_runs(a["traces"])[0]["trace"]["k"]
    s = pick(a["policies"]["sweeps"], domain, "greedy")
    return at_k(s, min(k, max(x["k"] for x in s["spec"])))


def fig_accepted_length_histogram(a) -> go.Figure:
    fig = go.Figure()
    for domain in a["policies"]["domains"]:
        r = histogram_row(a, domain)
        total = sum(r["accepted_length_histogram"]) or 1
        fig.add_bar(x=list(range(len(r["accepted_length_histogram"]))), y=[h / total for h in r["accepted_length_histogram"]],
                    name=f"{set_name(domain)}, greedy, k={r['k']}", marker={"color": PALETTE[domain]})
    fig.update_layout(**layout("How many drafts a step accepts", "accepted draft tokens in a step", "fraction of steps",
                               barmode="group"))
    return fig


def fig_per_position_acceptance(a) -> go.Figure:
    fig = go.Figure()
    for s in a["policies"]["sweeps"]:
        r = s["spec"][-1]
        fig.add_scatter(x=list(range(1, r["k"] + 1)), y=r["per_position_acceptance"], name=f"{label(s)}, k={r['k']}",
                        mode="lines+markers", line={"color": PALETTE[s["domain"]], "dash": DASH[s["mode"]]})
    fig.update_layout(**layout("Acceptance by draft position (given all earlier drafts were accepted)", "draft position",
                               "P(accept)", yaxis={"range": [0, 1.02], "title": {"text": "P(accept)"}}))
    return fig


def seconds_per_token(sweep: dict, row: dict | None, what: str = "target") -> float:
    """Seconds per generated token of a sweep: the target alone's (row None), or a row's draft or verify seconds over
    every token its runs generated. The time breakdown draws these; the Benchmark's caption quotes them."""
    if row is None:
        return sweep["target_only"]["seconds"]["median"] / sweep["new_tokens"]
    return row[f"{what}_seconds"] / (sweep["new_tokens"] * len(sweep["target_only"]["seconds"]["values"]))


def fig_time_breakdown(a) -> go.Figure:
    fig = go.Figure()
    s = pick(a["policies"]["sweeps"], "code", "greedy")
    ks = [str(r["k"]) for r in s["spec"]]
    fig.add_bar(x=["target only", *ks], y=[seconds_per_token(s, None)] + [None] * len(ks),
                name="target only", marker={"color": PALETTE["target_only"]})
    fig.add_bar(x=["target only", *ks], y=[None] + [seconds_per_token(s, r, "draft") for r in s["spec"]], name="draft",
                marker={"color": PALETTE["q"]})
    fig.add_bar(x=["target only", *ks], y=[None] + [seconds_per_token(s, r, "verify") for r in s["spec"]],
                name="verify (target pass + rule)", marker={"color": PALETTE["p"]})
    fig.update_layout(**layout("Where the time goes (code, greedy): seconds per generated token", "k", "seconds per token",
                               barmode="stack", xaxis={"type": "category", "dtick": None}))
    return fig


def _category_axis(labels: list[str]) -> dict:
    """A y axis of numbered rows named by labels, the first on top: dots of several series can then sit side by side
    in a row (at row ± an offset) without covering each other."""
    return {"tickvals": list(range(len(labels))), "ticktext": labels, "range": [len(labels) - 0.5, -0.5],
            "title": {"text": ""}, "zeroline": False, "showgrid": False}


def fig_hf_ratios(a) -> go.Figure:
    """Per public prompt, specdec ÷ Hugging Face's defaults with the same draft object, one dot a prompt, for the
    adaptive policy and for a fixed k: the median and its interval beside the dots. Where the two rows part is the
    draft-length policy's doing; the decoders are level where fixed k sits at 1."""
    pol = a["policies"]
    k = pol["variants"]["fixed"]["k"]
    series = {"adaptive": ("adaptive ÷ HF defaults", PALETTE["p"], -0.17),
              "fixed": (f"fixed k = {k} ÷ HF defaults", PALETTE["q"], 0.17)}
    sets = list(pol["domains"])
    fig = go.Figure()
    for variant, (name, color, offset) in series.items():
        ys, xs, prompts = [], [], []
        for row, d in enumerate(sets):
            for r in pol["domains"][d]["rows"]:
                v = r["variants"]
                if variant in v and "hf_default" in v:
                    ys.append(row + offset)
                    xs.append(v[variant]["speedup"] / v["hf_default"]["speedup"])
                    prompts.append(r["prompt"])
        fig.add_scatter(x=xs, y=ys, mode="markers", name=f"{name}, a prompt", legendgroup=variant,
                        marker={"color": color, "size": 7, "opacity": 0.5}, text=prompts,
                        hovertemplate="%{text}: %{x:.2f}<extra>" + name + "</extra>")
        medians = [pol["domains"][d]["summary"][variant]["over_hf_default"] for d in sets]
        fig.add_scatter(x=[m["median"] for m in medians], y=[row + offset for row in range(len(sets))], mode="markers",
                        name=f"{name}, median ({interval_label(medians)})", legendgroup=variant,
                        marker={"color": color, "size": 13, "symbol": "diamond", "line": {"color": "#ffffff", "width": 1}},
                        error_x={"type": "data", "symmetric": False, "color": color, "thickness": 2,
                                 "array": [m["ci95"][1] - m["median"] for m in medians],
                                 "arrayminus": [m["median"] - m["ci95"][0] for m in medians]},
                        hovertemplate="median %{x:.2f}<extra>" + name + "</extra>")
    fig.add_vline(x=1, line={"color": "gray", "width": 1})
    fig.update_layout(**layout(f"specdec ÷ Hugging Face, same {pol['draft_variant']} draft, same target, greedy: "
                               "right of 1, specdec was faster", "ratio of speedups (per prompt)", "",
                               height=200 + 80 * len(sets), yaxis=_category_axis([set_name(d) for d in sets])))
    return fig


def fig_verify_cost(a) -> go.Figure:
    """Home's "why it is nearly free": what scoring k + 1 tokens in one target pass cost, in single-token target
    passes, against the k + 1 passes that decoding them one at a time takes."""
    fig = go.Figure()
    ks = sorted({r["k"] for s in a["policies"]["sweeps"] for r in s["spec"]})
    fig.add_scatter(x=ks, y=[k + 1 for k in ks], mode="lines", name="k + 1 tokens one at a time: k + 1 passes",
                    line={"color": PALETTE["target_only"], "dash": "dash"})
    for s in a["policies"]["sweeps"]:
        fig.add_scatter(x=[r["k"] for r in s["spec"]], y=[r["verify_cost"] for r in s["spec"]], mode="lines+markers",
                        name=f"one verify pass of k + 1 tokens: {set_name(s['domain'])}", line={"color": PALETTE[s["domain"]]})
    fig.update_layout(**layout("Checking k drafts costs about one target pass", "k (drafts checked in one pass)",
                               "cost in single-token target passes", yaxis={"rangemode": "tozero"}))
    return fig


# ---------------------------------------------------------------- exactness figures


def fig_exactness(a) -> go.Figure:
    e = a["exactness"]
    n = 40
    seqs = e["sequences"][:n]
    fig = go.Figure()
    fig.add_bar(x=seqs, y=e["exact"][:n], name="exact target distribution", marker={"color": PALETTE["target_only"]})
    for rule, color, symbol in (("correct", PALETTE["accept"], "diamond"), ("block", PALETTE["p"], "circle-open"),
                                ("naive_residual", PALETTE["reject"], "x")):
        r = e["rules"].get(rule)
        if r is None:
            continue
        label = {"correct": "token rule", "block": "block verification", "naive_residual": "naive residual"}[rule]
        fig.add_scatter(x=seqs, y=r["empirical"][:n], mode="markers", name=f"{label}: {r['samples']} samples",
                        marker={"color": color, "size": 8, "symbol": symbol})
    fig.update_layout(**layout(f"The {n} most likely 3-token sequences: exact vs sampled", "sequence (token ids)",
                               "probability", xaxis={"type": "category", "title": {"text": "sequence (token ids)"}}))
    return fig


def fig_counterexample(a) -> go.Figure:
    c = a["exactness"]["counterexample"]
    tokens = [f"token {i}" for i in range(len(c["p"]))]
    fig = go.Figure()
    for key, name, color in (("p", "target p", PALETTE["target_only"]), ("q", "draft q", PALETTE["q"]),
                             ("correct", "output, norm(max(0, p − q))", PALETTE["accept"]),
                             ("naive_residual", "output, norm(max(0, p − a·q))", PALETTE["reject"])):
        fig.add_bar(x=tokens, y=c[key], name=name, marker={"color": color})
    fig.update_layout(**layout("The counterexample, enumerated exactly through verify_draft (k = 1)", "", "probability",
                               barmode="group"))
    return fig


def fig_overlap(a) -> go.Figure:
    """The Math's picture of eqs. (3)-(5), on the counterexample's p and q: p split into min(p, q), the mass that
    an accepted draft delivers, and max(0, p − q), the mass the residual delivers; q beside it."""
    c = a["exactness"]["counterexample"]
    tokens = [f"token {i}" for i in range(len(c["p"]))]
    accepted = [min(p, q) for p, q in zip(c["p"], c["q"])]
    residual = [max(0.0, p - q) for p, q in zip(c["p"], c["q"])]
    fig = go.Figure()
    fig.add_bar(x=tokens, y=accepted, name="min(p, q): from an accepted draft", marker={"color": PALETTE["accept"]},
                offsetgroup="p")
    fig.add_bar(x=tokens, y=residual, name="max(0, p − q): from the residual", marker={"color": PALETTE["residual"]},
                offsetgroup="p", base=accepted)
    fig.add_bar(x=tokens, y=c["q"], name="q, the draft", marker={"color": "rgba(0,0,0,0)", "line": {"color": PALETTE["q"],
                                                                                                "width": 3}},
                offsetgroup="q")
    fig.update_layout(**layout(f"p = {tuple(c['p'])} as two parts, beside q = {tuple(c['q'])}", "", "probability",
                               barmode="group"))
    return fig


# ---------------------------------------------------------------- choosing k (policies stage)


POLICY_LABELS = {  # {k}: the policies stage's fixed k
    "hf_default": "HF assisted, defaults", "hf_constant": "HF assisted, constant k = {k}",
    "hf_default_fp32": "HF assisted, defaults, fp32 draft",
    "adaptive_fp32": "adaptive (cap 16), fp32 draft",
    "hf_prompt_lookup": "HF prompt lookup (no model)", "fixed": "fixed k = {k}",
    "confidence": "confidence (cap 16)",
    "heuristic": "heuristic (cap 16)", "adaptive": "adaptive (cap 16)", "adaptive_ngram": "adaptive, n-gram drafter",
    "adaptive_hybrid": "adaptive, hybrid drafter",
}


def policy_label(a, name: str) -> str:
    return POLICY_LABELS[name].format(k=a["policies"]["variants"]["fixed"]["k"])


def two_lines(label: str, width: int = 26) -> str:
    """A long category label on two lines (at the last ", " that keeps the first line short), so that a bar's label
    takes half the axis margin on a phone."""
    if len(label) <= width or ", " not in label:
        return label
    cut = max((i for i in range(len(label)) if label.startswith(", ", i) and i <= width), default=label.index(", "))
    return label[: cut + 1] + "<br>" + label[cut + 2:]


def fig_choosing_k(a) -> go.Figure:
    fig = go.Figure()
    domains = a["policies"]["domains"]
    temperature = a["policies"]["sampled_temperature"]
    order = []
    for domain, d in domains.items():
        # greedy variants, then the sampled ones; each over the prompts that ran it (the core set's variants on
        # every prompt, the rest on the matrix's), against the same greedy target-only run of each prompt
        def ran(n, sampled=False, rows=d["rows"]):
            variants = (r["sampled"]["variants"] if sampled else r["variants"] for r in rows)
            return [v[n]["oracle_speedup"] for v in variants if n in v]

        # a row is a variant; how many prompts ran it can differ by domain (each domain's best drafter runs on its
        # whole core set, another drafter on the matrix alone), so the count goes in the hover, not in the row's name
        entries = [(policy_label(a, n), d["summary"][n], None if n.startswith("hf_") else ran(n)) for n in d["summary"]]
        entries += [(f"{policy_label(a, n)}, sampled T = {temperature}", d["sampled_summary"][n], ran(n, sampled=True))
                    for n in d["sampled_summary"]]
        labels = [two_lines(e[0]) for e in entries]
        # the categories run bottom to top: the first domain's first variant on top; the domains share the rows, and a
        # row only a later domain has goes at the bottom
        order = [x for x in labels[::-1] if x not in order] + order
        med = [e[1]["median"] for e in entries]
        counts = [e[1]["prompts"] for e in entries]
        fig.add_bar(y=labels, x=med, name=f"measured: {set_name(domain)}", orientation="h", marker={"color": PALETTE[domain]},
                    error_x={"type": "data", "symmetric": False,
                             "array": [e[1]["ci95"][1] - m for e, m in zip(entries, med)],
                             "arrayminus": [m - e[1]["ci95"][0] for e, m in zip(entries, med)]},
                    customdata=counts, hovertemplate="%{y}: %{x:.2f}× (%{customdata} prompts)<extra>" + domain + "</extra>")
        oracle = [statistics.median(e[2]) if e[2] else None for e in entries]
        fig.add_scatter(y=labels, x=oracle, mode="markers", name=f"oracle bound: {set_name(domain)}",
                        marker={"color": PALETTE[domain], "symbol": "line-ns-open", "size": 16, "line": {"width": 3}},
                        hovertemplate="%{y}: oracle %{x:.2f}×<extra>" + domain + "</extra>")
    fig.add_vline(x=1, line={"color": "gray", "width": 1})
    fig.update_layout(**layout("Speedup over target-only by draft-length policy (median, 95% CI; hover: N prompts)",
                               "speedup (× target-only)", "", barmode="group",
                               height=160 + (18 + 12 * len(domains)) * len(order), bargap=0.2,
                               yaxis={"type": "category", "categoryorder": "array", "categoryarray": order,
                                      "title": {"text": ""}}))
    return fig


def fig_policy_draft_lengths(a) -> go.Figure:
    d = a["policies"]["domains"]["code"]
    row = d["rows"][0]
    fig = go.Figure()
    for name, color in (("fixed", PALETTE["unevaluated"]), ("confidence", PALETTE["q"]),
                        ("heuristic", PALETTE["prose"]), ("adaptive", PALETTE["p"])):
        ks = [s["k"] for s in row["variants"][name]["steps"]]
        fig.add_scatter(x=list(range(1, len(ks) + 1)), y=ks, mode="lines+markers", name=policy_label(a, name),
                        line={"color": color, "shape": "hv"})
    lengths = row["variants"]["adaptive"]["oracle"]["lengths"]
    fig.add_scatter(x=list(range(2, len(lengths) + 2)), y=lengths, mode="markers", name="oracle (from the adaptive run)",
                    marker={"color": PALETTE["accept"], "symbol": "star", "size": 9})
    fig.update_layout(**layout(f"Draft length chosen at each step: {row['prompt']}, greedy", "step", "tokens drafted"))
    return fig


# ---------------------------------------------------------------- token trees (the trees stage)

TREE_COLORS = {"chain": PALETTE["q"], "adaptive": PALETTE["p"], "tree": PALETTE["accept"],
               "tree_gpu_like": PALETTE["residual"], "dynamic_tree": PALETTE["dialogue"]}


def tree_variant_names(trees: dict) -> dict:
    """Each trees-stage variant's label, with the shape the cost model chose for it."""
    c = trees["choice"]
    return {"chain": f"the cost model's chain (k = {c['chain']['depth']})",
            "adaptive": "adaptive chain (cap 16)",
            "tree": f"tree for this CPU ({c['tree']['nodes']} nodes, depth {c['tree']['depth']})",
            "tree_gpu_like": f"tree for an H200 ({c['tree_gpu_like']['nodes']} nodes, depth "
                             f"{c['tree_gpu_like']['depth']})",
            "dynamic_tree": f"dynamic tree (EAGLE-2: {c['tree_gpu_like']['nodes']} nodes, width "
                            f"{trees['dynamic_width']})"}


def fig_tree_cost_curve(a) -> go.Figure:
    """What one pass costs against the rows it scores, relative to one row: the target and the draft measured here,
    and an H200's roofline for these architectures (a model, dashed)."""
    t = a["trees"]
    fig = go.Figure()
    for role, color in (("target", PALETTE["p"]), ("draft", PALETTE["q"])):
        c = t["cost_curves"][role]
        fig.add_scatter(x=c["rows"], y=[s / c["seconds"][0] for s in c["seconds"]], mode="lines+markers",
                        name=f"{role}, this CPU (measured)", line={"color": color},
                        customdata=[s * 1e3 for s in c["seconds"]],
                        hovertemplate="%{x} rows: %{y:.2f}× one row (%{customdata:.0f} ms)<extra>" + role + "</extra>")
    g = t["gpu_like_curves"]["target"]
    fig.add_scatter(x=g["rows"], y=[s / g["seconds"][0] for s in g["seconds"]], mode="lines",
                    name="either model, H200 roofline (a model, not a measurement)",
                    line={"color": PALETTE["target_only"], "dash": "dash"},
                    hovertemplate="%{x} rows: %{y:.2f}× one row<extra>H200 roofline</extra>")
    fig.update_layout(**layout("One forward pass against the rows it scores", "rows scored in one pass",
                               "time ÷ a one-row pass", xaxis={"type": "log", "tickvals": t["cost_curves"]["target"]["rows"]},
                               yaxis={"rangemode": "tozero"}))
    return fig


def fig_tree_draft_passes(a) -> go.Figure:
    """Drafting a depth of L nodes: one draft pass of L rows with the tree mask (what the tree drafter does), or L
    passes of one row, from the draft's measured curve."""
    c = a["trees"]["cost_curves"]["draft"]
    fig = go.Figure()
    fig.add_scatter(x=c["rows"], y=[s * 1e3 for s in c["seconds"]], mode="lines+markers", name="one pass of L rows",
                    line={"color": PALETTE["q"]}, hovertemplate="L = %{x}: %{y:.0f} ms<extra>one pass</extra>")
    fig.add_scatter(x=c["rows"], y=[n * c["seconds"][0] * 1e3 for n in c["rows"]], mode="lines",
                    name="L passes of one row", line={"color": PALETTE["target_only"], "dash": "dash"},
                    hovertemplate="L = %{x}: %{y:.0f} ms<extra>L passes</extra>")
    fig.update_layout(**layout("Drafting L nodes of one depth: one pass, or one per node (the draft, this CPU)",
                               "L (nodes fed)", "milliseconds", xaxis={"type": "log", "tickvals": c["rows"]},
                               yaxis={"rangemode": "tozero"}))
    return fig


def _tree_bars(a, what: str, title: str, x: str) -> go.Figure:
    """Per domain and mode, each variant's median over the prompts, its 95% interval as the error bar: horizontal
    bars, a row per domain and mode (its name reads across, never rotated under a narrow plot), the first on top."""
    t = a["trees"]
    names = tree_variant_names(t)
    cats = [f"{set_name(d)}, {m}" for d in t["domains"] for m in ("greedy", "sampled")]
    fig = go.Figure()
    for variant, name in reversed(names.items()):
        ys, xs, lo, hi = [], [], [], []
        for d in t["domains"]:
            for m in ("greedy", "sampled"):
                entry = t["domains"][d]["summary"][m].get(variant)
                if entry is None:
                    continue
                e = entry[what]
                ys.append(f"{set_name(d)}, {m}")  # the row's category, as `cats` names it (an unnamed row is empty)
                xs.append(e["median"])
                lo.append(e["median"] - e["ci95"][0])
                hi.append(e["ci95"][1] - e["median"])
        fig.add_bar(y=ys, x=xs, name=name, orientation="h", marker={"color": TREE_COLORS[variant]},
                    error_x={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo},
                    hovertemplate="%{y}: %{x:.2f}<extra>" + name + "</extra>")
    if what == "speedup":
        fig.add_vline(x=1, line={"color": "gray", "width": 1})
    fig.update_layout(**layout(title, x, "", barmode="group", height=160 + 80 * len(cats), bargap=0.2,
                               legend={"traceorder": "reversed"}, xaxis={"rangemode": "tozero"},
                               yaxis={"type": "category", "categoryorder": "array", "categoryarray": cats[::-1],
                                      "title": {"text": ""}}))
    return fig


def _tree_entries(a, what: str) -> list[dict]:
    t = a["trees"]
    return [e[what] for d in t["domains"] for m in ("greedy", "sampled")
            for e in t["domains"][d]["summary"][m].values() if isinstance(e, dict) and what in e]


def fig_tree_tokens_per_pass(a) -> go.Figure:
    t = a["trees"]
    return _tree_bars(a, "tokens_per_target_pass", f"Tokens per target pass, {t['new_tokens']} tokens per prompt "
                      f"(median, {interval_label(_tree_entries(a, 'tokens_per_target_pass'))})", "tokens per target pass")


def fig_tree_speedup(a) -> go.Figure:
    t = a["trees"]
    return _tree_bars(a, "speedup", f"Speedup over the target alone on this CPU, {t['new_tokens']} tokens per prompt "
                      f"(median, {interval_label(_tree_entries(a, 'speedup'))})", "speedup (× target-only)")


BLOCK_RATIOS = {"tokens_per_pass_ratio": ("tokens per pass, measured", PALETTE["p"]),
                "expected_ratio": ("tokens per pass, expected on the same drafts", PALETTE["accept"]),
                "speed_ratio": ("wall clock (token time / block time)", PALETTE["target_only"])}


def _block_cats(b) -> list[tuple[str, str, dict]]:
    """(label, domain, summary) per temperature and domain of the block stage, in the order run."""
    return [(f"{set_name(d)}, T = {t['temperature']:g}", d, t["domains"][d]["summary"]) for t in b["temperatures"]
            for d in t["domains"]]


def _ratio_dots(fig, rows: int, values, name, color, fmt=".2f", offset: float = 0.0):
    """Medians of paired ratios as dots with their intervals, one per row (at row + offset): around 1, on an axis
    that spans the intervals, so that a difference of a few percent shows."""
    fig.add_scatter(y=[row + offset for row in range(rows)], x=[e["median"] for e in values], name=name, mode="markers",
                    marker={"color": color, "size": 11, "symbol": "diamond"},
                    error_x={"type": "data", "symmetric": False, "color": color, "thickness": 2,
                             "array": [e["ci95"][1] - e["median"] for e in values],
                             "arrayminus": [e["median"] - e["ci95"][0] for e in values]},
                    hovertemplate="%{x:" + fmt + "}<extra>" + name + "</extra>")


def fig_block_ratio(a) -> go.Figure:
    """Block verification / the token rule per prompt, then the median with its 95% interval: tokens per pass as
    measured, tokens per pass expected on the same drafts (no accept-draw noise), and wall clock."""
    b = a["block"]
    cats = _block_cats(b)
    labels = [c[0] for c in cats]
    fig = go.Figure()
    entries = [c[2][key] for c in cats for key in BLOCK_RATIOS]
    for n, (key, (name, color)) in enumerate(BLOCK_RATIOS.items()):
        _ratio_dots(fig, len(cats), [c[2][key] for c in cats], name, color, ".3f", offset=0.22 * (n - 1))
    fig.add_vline(x=1, line={"color": "gray", "width": 1})
    # the axis spans the intervals and 1, with a margin: ratios of 0.98-1.06 drawn from 0 looked all alike
    low = min([1.0] + [e["ci95"][0] for e in entries])
    high = max([1.0] + [e["ci95"][1] for e in entries])
    pad = 0.05 * (high - low or 0.1)
    intervals = " or ".join(dict.fromkeys(interval_label([e]) for e in sorted(entries, key=lambda e: -e["prompts"])))
    fig.update_layout(**layout(f"Block verification ÷ token rule, paired per prompt: the median and its {intervals}",
                               "block ÷ token (> 1: block ahead)", "",
                               height=160 + 80 * len(cats),
                               xaxis={"range": [low - pad, high + pad]}, yaxis=_category_axis(labels)))
    return fig


# The table of figures: marker name -> builder. A page's [[fig:NAME]] must name one of these.
FIGURES = {
    "speedup_vs_k": fig_speedup_vs_k,
    "acceptance_vs_k": fig_acceptance_vs_k,
    "tokens_per_pass": fig_tokens_per_pass,
    "accepted_length_histogram": fig_accepted_length_histogram,
    "per_position_acceptance": fig_per_position_acceptance,
    "time_breakdown": fig_time_breakdown,
    "hf_ratios": fig_hf_ratios,
    "exactness": fig_exactness,
    "counterexample": fig_counterexample,
    "overlap": fig_overlap,
    "verify_cost": fig_verify_cost,
    "choosing_k": fig_choosing_k,
    "policy_draft_lengths": fig_policy_draft_lengths,
    "tree_cost_curve": fig_tree_cost_curve,
    "tree_draft_passes": fig_tree_draft_passes,
    "tree_tokens_per_pass": fig_tree_tokens_per_pass,
    "tree_speedup": fig_tree_speedup,
    "block_ratio": fig_block_ratio,
    "tree_example": pictures.fig_tree_example,
    "block_example": pictures.fig_block_example,
}
