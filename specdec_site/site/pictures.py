"""Pictures that teach a rule on one recorded step: a token tree whose accepted path leaves the draft's first choices,
and block verification against the token rule on the same drafts. Each picture's step is chosen by a function here
(tree_example, block_examples) that the page's values call too, so the caption and the picture show the same step.

Model text is untrusted: a token's text reaches Plotly only HTML-escaped (Plotly reads a subset of HTML in strings).
"""

from __future__ import annotations

import html

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specdec.theory import expected_accepted_block, expected_accepted_token
from specdec_site.site.chart import PALETTE, layout

ORDINALS = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth"}


def token_text(run: dict, token: int, escape: bool = True) -> str:
    """A token as the pages show it: its text with a space as ␣ and a line break as ↵; HTML-escaped for Plotly
    (escape=False for a page value, which the hook escapes)."""
    text = run["vocab"].get(str(token), f"#{token}").replace(" ", "␣").replace("\n", "↵")
    return html.escape(text, quote=True) if escape else text


# ---------------------------------------------------------------- a token tree


def children(parents: list[int]) -> dict[int, list[int]]:
    """Each node's children in rank order (-1: the prefix), as the tree drafter lists them: the draft's first choice
    first."""
    out: dict[int, list[int]] = {}
    for node, parent in enumerate(parents):
        out.setdefault(parent, []).append(node)
    return out


def first_choice_chain(parents: list[int]) -> list[int]:
    """The chain inside the tree: from the prefix, the first child at every depth (what a chain drafter proposes)."""
    kids, chain, node = children(parents), [], -1
    while kids.get(node):
        node = kids[node][0]
        chain.append(node)
    return chain


def tree_example(traces: dict) -> tuple[dict, dict] | None:
    """(run, step): the first step of the greedy tree runs whose accepted path goes through a node that is not its
    parent's first child, the step where a tree keeps more than the chain inside it; None if no step does."""
    for run in traces["runs"]:
        trace = run["trace"]
        if trace.get("drafter") != "tree" or run["mode"] != "greedy":
            continue
        for step in trace["steps"]:
            parents, path = step.get("parents") or [], step.get("path") or []
            chain = first_choice_chain(parents)
            if path and path[: len(chain)] != chain[: len(path)]:
                return run, step
    return None


def largest_tree_step(traces: dict) -> tuple[dict, dict] | None:
    """(run, step): the greedy tree step that kept the most drafts (the first such), for a build where no step took
    another branch than the draft's first choices; None if no greedy tree step has a node."""
    steps = [(len(step.get("path") or []), run, step) for run in traces["runs"]
             if run["trace"].get("drafter") == "tree" and run["mode"] == "greedy"
             for step in run["trace"]["steps"] if step.get("parents")]
    if not steps:
        return None
    best = max(kept for kept, _, _ in steps)
    return next((run, step) for kept, run, step in steps if kept == best)


def tree_example_facts(run: dict, step: dict, escape: bool = True) -> dict:
    """What the caption says about the example: the step (counted from 1, as the Step Visualizer does), the tokens the
    chain keeps and the tree keeps, the branch's token and the draft's probability of it and of its first choice
    there (branch_rank None, and no branch, for a step whose path is the chain of first choices)."""
    parents, path = step["parents"], step["path"]
    chain, kids = first_choice_chain(parents), children(parents)
    kept_by_chain = next((i for i, node in enumerate(path) if i >= len(chain) or chain[i] != node), None)
    if kept_by_chain is None:
        return {"run": run["id"], "step": step["step"] + 1, "nodes": len(parents), "tree_kept": len(path),
                "chain_kept": len(path), "branch_rank": None}
    branch = path[kept_by_chain]
    first = kids[parents[branch]][0]
    return {"run": run["id"], "step": step["step"] + 1, "nodes": len(parents), "tree_kept": len(path),
            "chain_kept": kept_by_chain, "branch_rank": kids[parents[branch]].index(branch) + 1,
            "branch_token": token_text(run, step["draft_tokens"][branch], escape), "branch_q": step["q_draft_tokens"][branch],
            "first_token": token_text(run, step["draft_tokens"][first], escape), "first_q": step["q_draft_tokens"][first]}


def _tree_positions(parents: list[int]) -> dict[int, tuple[int, float]]:
    """(depth, row) of every node: leaves one row apart in rank order, a parent at the middle of its children."""
    kids, pos, next_row = children(parents), {}, [0.0]

    def place(node: int, depth: int) -> float:
        if not kids.get(node):
            row, next_row[0] = next_row[0], next_row[0] + 1
        else:
            rows = [place(child, depth + 1) for child in kids[node]]
            row = (rows[0] + rows[-1]) / 2
        pos[node] = (depth, row)
        return row

    place(-1, 0)
    return pos


def fig_tree_example(a) -> go.Figure:
    """One recorded tree step, drawn: every node the draft proposed, the path the target accepted, and the chain of
    first choices inside the tree, which stops where the path takes another branch."""
    found = tree_example(a["traces"])
    fig = go.Figure()
    if found is None:  # no step took another branch (a small or --quick build): the greedy tree step that kept most
        found = largest_tree_step(a["traces"])
        if found is None:
            fig.add_scatter(x=[0], y=[0], mode="markers+text", text=["prefix"], hoverinfo="skip", showlegend=False)
            fig.update_layout(**layout("No greedy tree run was recorded in this build", "depth", ""))
            return fig
    run, step = found
    facts = tree_example_facts(run, step)
    parents, path = step["parents"], set(step["path"])
    chain = set(first_choice_chain(parents))
    pos = _tree_positions(parents)
    for node, parent in enumerate(parents):  # the edges, the accepted ones thick
        on_path = node in path and (parent == -1 or parent in path)
        fig.add_scatter(x=[pos[parent][0], pos[node][0]], y=[pos[parent][1], pos[node][1]], mode="lines",
                        line={"color": PALETTE["accept"] if on_path else "#9e9e9e", "width": 4 if on_path else 1},
                        hoverinfo="skip", showlegend=False)
    groups = {"accepted: the target's path": (lambda n: n in path, PALETTE["accept"]),
              "the draft's first choices, not accepted": (lambda n: n in chain and n not in path, PALETTE["q"]),
              "other branches, not accepted": (lambda n: n not in path and n not in chain, PALETTE["unevaluated"])}
    for name, (member, color) in groups.items():
        nodes = [n for n in range(len(parents)) if member(n)]
        fig.add_scatter(x=[pos[n][0] for n in nodes], y=[pos[n][1] for n in nodes], mode="markers+text", name=name,
                        text=[token_text(run, step["draft_tokens"][n]) for n in nodes], textposition="top center",
                        marker={"color": color, "size": 12, "line": {"color": "#ffffff", "width": 1}},
                        customdata=[step["q_draft_tokens"][n] for n in nodes],
                        hovertemplate="%{text}: q = %{customdata:.3f}<extra>" + name + "</extra>")
    fig.add_scatter(x=[0], y=[pos[-1][1]], mode="markers+text", text=["prefix"], textposition="middle left",
                    marker={"color": PALETTE["target_only"], "size": 12, "symbol": "square"}, hoverinfo="skip",
                    showlegend=False)
    depth = max(d for d, _ in pos.values())
    rows = max(r for _, r in pos.values())
    if facts["branch_rank"] is None:
        title = (f"No recorded tree step took a branch past the draft's first choices; the step that kept most "
                 f"({facts['tree_kept']} drafts)")
    else:
        title = (f"One tree step: the target's path takes the draft's "
                 f"{ORDINALS.get(facts['branch_rank'], str(facts['branch_rank']) + 'th')} choice "
                 f"({facts['tree_kept']} drafts kept; the chain of first choices: {facts['chain_kept']})")
    fig.update_layout(**layout(
        title, "depth in the tree (draft position)", "",
        height=220 + 34 * (rows + 1),
        xaxis={"range": [-0.6, depth + 0.5], "dtick": 1, "zeroline": False},
        yaxis={"visible": False, "autorange": "reversed"}))
    return fig


# ---------------------------------------------------------------- block verification on one step's drafts


def kept_distribution(step: dict, rule: str) -> list[float]:
    """P(the rule keeps exactly i of the step's drafts), i = 0..k, given its drafts: the token rule from min(1, p/q)
    along the chain, block verification from its h_i (The Math, eq. (16)): prefix i is kept with probability
    h_i times the chance that no longer prefix was."""
    k = step["k"]
    if rule == "token":
        out, survive = [], 1.0
        for a in step["accept_probs"]:
            out.append(survive * (1 - a))
            survive *= a
        return out + [survive]
    h = step["stop_probs"]
    out, none_longer = [0.0] * (k + 1), 1.0
    for i in range(k, 0, -1):
        out[i] = h[i - 1] * none_longer
        none_longer *= 1 - h[i - 1]
    out[0] = none_longer
    return out


def block_examples(traces: dict) -> tuple[dict, dict, dict] | None:
    """(run, the step where block verification expects the most more drafts kept than the token rule, the step where
    it expects the most fewer), over the recorded block-verification runs; None without one."""
    steps = [(run, s) for run in traces["runs"] if run["trace"].get("verify") == "block" for s in run["trace"]["steps"]
             if s["k"] > 0 and s.get("stop_probs")]
    if not steps:
        return None

    def gain(item):
        s = item[1]
        return expected_accepted_block(s["stop_probs"]) - expected_accepted_token(s["accept_probs"])

    best, worst = max(steps, key=gain), min(steps, key=gain)
    return best[0], best[1], worst[1]


def block_step_facts(step: dict) -> dict:
    """A block step's number (from 1, as the Step Visualizer counts), k, each rule's expected drafts kept, its ratios
    min(1, p/q) and block verification's running weights."""
    return {"step": step["step"] + 1, "k": step["k"], "token": expected_accepted_token(step["accept_probs"]),
            "block": expected_accepted_block(step["stop_probs"]), "ratios": step["accept_probs"],
            "weights": step["block_weights"]}


def fig_block_example(a) -> go.Figure:
    """Two recorded steps of a block-verification run, each rule's chance of keeping 0..k of the same drafts: the
    step where block verification expects the most over the token rule, and the step where it expects the least."""
    found = block_examples(a["traces"])
    if found is None:
        fig = go.Figure()
        fig.update_layout(**layout("No block-verification run was recorded", "drafts kept", ""))
        return fig
    run, best, worst = found
    titles = [f"step {s['step'] + 1}: expected kept, token rule {expected_accepted_token(s['accept_probs']):.2f}, block "
              f"{expected_accepted_block(s['stop_probs']):.2f}" for s in (best, worst)]
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, shared_yaxes=True, horizontal_spacing=0.08)
    for col, step in enumerate((best, worst), start=1):
        kept = list(range(step["k"] + 1))
        for rule, name, color in (("token", "token rule", PALETTE["p"]), ("block", "block verification", PALETTE["accept"])):
            fig.add_bar(x=kept, y=kept_distribution(step, rule), name=name, marker={"color": color},
                        showlegend=col == 1, legendgroup=rule,
                        hovertemplate="keeps %{x}: %{y:.3f}<extra>" + name + "</extra>", row=1, col=col)
    fig.update_layout(**layout(f"Same drafts, two rules ({html.escape(run['id'])}): the chance of keeping 0 to "
                               "k drafts at the two steps where the rules differ most",
                               "drafts kept", "probability", barmode="group", height=440))
    fig.update_xaxes(dtick=1, title={"text": "drafts kept"})
    fig.update_annotations(font={"size": 12})
    return fig
