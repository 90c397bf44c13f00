"""What each marker renders: one renderer per kind, the dispatch that is loud on an unknown kind, and their HTML.

Here because a marker's HTML (a figure's <div> and its data <template>, a value, a table, a link to an artifact, the
visualizer, a Playground panel or its data, Home's strip) is apart from how the parser finds the marker
(specdec_markers.py) and from where its data comes from (specdec_files.py). The hook's RENDERERS names the renderer
of each kind, one line a kind; render_marker dispatches to it.

Loaded by docs/hooks/specdec_hook.py (load_sibling), which sets `hook`: the files (load_checked, data_folder), the page
being rendered (_page, where) and the dispatch table (RENDERERS) are read through it, when used, so that a test's
replacement of hook.load_checked is the one a renderer calls.
"""

from __future__ import annotations

import difflib
import html
import json
import re
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.utils import get_relative_url

from specdec_site.site import contract

__all__ = ["FIGURE_NAME", "PLAYGROUND_PANELS", "lookup_value", "table_cell", "page_text", "script_json", "figure_id",
           "render_marker", "render_figure", "figure_data_table", "RUN_FILES", "write_visualizer_runs", "render_value", "render_table", "render_data_link", "render_visualizer",
           "widget_script", "render_playground", "render_strip",
           "STRIP_WORDS", "strip_html"]

hook: Any = None  # the hook module's names, read when used (specdec_hook.load_sibling sets it)

FIGURE_NAME = re.compile(r"[a-z0-9_]+")
PLAYGROUND_PANELS = ("rule", "block", "speedup", "race")


# ---------------------------------------------------------------- values and HTML


def lookup_value(name: str, marker: str):
    values = hook.load_checked("values")["values"]
    if name not in values:
        near = difflib.get_close_matches(name, values, n=3)  # the nearest known names: most unknowns are typos
        hint = ": did you mean " + " or ".join(f"[[val:{n}]]" for n in near) + "?" if near else ""
        raise PluginError(f"{hook.where(marker)}: unknown value marker [[val:{name}]]{hint} (`python -m specdec_site.site.values` "
                          "lists every value)")
    value = values[name]
    return hook.fill_build_fields(value) if isinstance(value, str) and "@" in value else value


def table_cell(cell) -> str:
    """A [[table:...]] cell as HTML: its text escaped; a cell written `like this` (in backticks) is code."""
    text = str(cell)
    if len(text) > 2 and text.startswith("`") and text.endswith("`") and "`" not in text[1:-1]:
        return f"<code>{page_text(text[1:-1])}</code>"
    return page_text(text)


def page_text(text: str) -> str:
    """Text as HTML: escaped, and its square brackets as character references, so that the page shows "[[" where
    the hook put it and MarkerPlacement finds only the "[[" that no marker rendered."""
    return html.escape(text).replace("[", "&#91;")


def script_json(data) -> str:
    """JSON safe as the text of a <template>: no '<' or '&' can open a tag, a comment or a character reference.

    Data rides in a <template>, not a <script type="application/json">: Material's instant navigation re-creates
    every inline <script> of the new page with its text and none of its attributes, so a JSON script was run as
    JavaScript (a syntax error) and lost the class its reader looks for. A template's content is inert, and the
    navigation leaves it alone. `data-search-exclude` keeps it out of the search index (Material's), which reads a
    template's text as page text."""
    return json.dumps(data, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def figure_id(name: str) -> str:
    """fig-NAME, or fig-NAME-2, -3 ... for the second and later copies of one figure on a page."""
    n = hook._page["ids"][name] = hook._page["ids"].get(name, 0) + 1
    return f"fig-{name}" if n == 1 else f"fig-{name}-{n}"


# ---------------------------------------------------------------- the dispatch and one renderer per kind


def render_marker(marker: str) -> str:
    """The HTML of one marker's body (what stood between [[ and ]]): one renderer per kind (the hook's RENDERERS), loud on any
    other."""
    text = f"[[{marker}]]"
    if marker.startswith("!"):
        return page_text(f"[[{marker[1:]}]]")
    kind, _, name = marker.partition(":")
    renderer = hook.RENDERERS.get(kind)
    if renderer is None or (name == "") != (kind in hook.WHOLE_MARKERS):
        known = ", ".join(f"[[{k}]]" if k in hook.WHOLE_MARKERS else f"[[{k}:NAME]]" for k in hook.RENDERERS)
        raise PluginError(f"{hook.where(text)}: unknown marker {text} (expected one of {known}; [[!...]] for the literal text)")
    return renderer(name, text, marker)


def render_figure(name: str, text: str, marker: str) -> str:
    if not FIGURE_NAME.fullmatch(name) or name in contract.SPECIAL:
        raise PluginError(f"{hook.where(text)}: [[fig:{name}]] names no figure (a figure's name is lowercase letters, "
                          f"digits and _, the stem of a docs/figures/*.json figure file)")
    try:
        fig = hook.load_checked(name)
    except PluginError as err:
        raise PluginError(f"{hook.where(text)}: {err}") from err
    hook._page["used"].add("fig")
    div = html.escape(figure_id(name))
    height = int((fig["figure"].get("layout") or {}).get("height") or 440)
    title = html.escape(fig["title"])
    # role="figure", not "img": an img may hold no control, and Plotly's toolbar buttons are inside (axe's
    # nested-interactive); the label is the figure's title, which says what to notice. The title is HTML above the
    # plot (specdec.js keeps it), and the plot's height is reserved, so that drawing it later moves nothing (CLS).
    # Its data follows as a table in a <details>: what a sighted reader reads off the plot, as text.
    return (f'<p class="specdec-figure-title" aria-hidden="true">{title}</p>\n'
            f'<div class="specdec-figure" id="{div}" role="figure" aria-label="{title}" style="min-height: {height}px" '
            f'data-specdec-marker="{html.escape(marker)}"></div>\n'
            f'<template class="specdec-figure-data" data-for="{div}" data-search-exclude>{script_json(fig["figure"])}</template>\n'
            + figure_data_table(fig["figure"], fig["title"]))


def _cell(value) -> str:
    """A figure's number or label as table text: numbers to 4 significant digits; text as Plotly showed it (the
    figure JSON escapes model text for Plotly, so it is unescaped once and escaped once here)."""
    if isinstance(value, bool) or value is None:
        return "–" if value is None else str(value)
    if isinstance(value, (int, float)):
        return f"{value:.4g}"
    return html.escape(html.unescape(str(value)).replace("<br>", " "))


def figure_data_table(figure: dict, title: str) -> str:
    """The figure's data as a table in a closed <details>: one row per point of every named trace (its series, x, y,
    the interval where it has error bars, its label where it has text)."""
    rows = []
    for trace in figure.get("data", []):
        name = trace.get("name")
        xs, ys = trace.get("x"), trace.get("y")
        if not name or not isinstance(xs, list) or not isinstance(ys, list):
            continue  # a trace with no name draws no data a reader reads (a tree's edges, a reference line)
        texts = trace.get("text") if isinstance(trace.get("text"), list) else None
        error = trace.get("error_x") or trace.get("error_y") or {}
        plus, minus = error.get("array"), error.get("arrayminus", error.get("array"))
        along_x = "error_x" in trace
        for i, (x, y) in enumerate(zip(xs, ys)):
            interval = ""
            if isinstance(plus, list) and isinstance(minus, list) and i < len(plus) and i < len(minus):
                centre = x if along_x else y
                if isinstance(centre, (int, float)):
                    interval = f"{_cell(centre - minus[i])}–{_cell(centre + plus[i])}"
            label = _cell(texts[i]) if texts and i < len(texts) else ""
            rows.append((_cell(name), _cell(x), _cell(y), interval, label))
    if not rows:
        return ""
    layout = figure.get("layout") or {}

    def axis(key: str, fallback: str) -> str:
        text = ((layout.get(key) or {}).get("title") or {}).get("text") or ""
        return html.escape(text) or fallback
    with_interval = any(r[3] for r in rows)
    with_label = any(r[4] for r in rows)
    head = ["series", axis("xaxis", "x"), axis("yaxis", "y")] + (["interval"] if with_interval else []) + \
        (["label"] if with_label else [])
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in (r[:3] + ((r[3],) if with_interval else ())
                                                               + ((r[4],) if with_label else ()))) + "</tr>"
                   for r in rows)
    return (f'<details class="specdec-figure-table"><summary>The data of “{html.escape(title)}”</summary>'
            f'<table><thead><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr></thead><tbody>{body}</tbody></table>'
            f'</details>')


def render_value(name: str, text: str, marker: str) -> str:
    return page_text(str(lookup_value(name, text)))


def render_table(name: str, text: str, marker: str) -> str:
    tables = hook.load_checked("tables")["tables"]
    if name not in tables:
        raise PluginError(f"{hook.where(text)}: [[table:{name}]]: tables.json has no table {name!r} (it has "
                          f"{', '.join(sorted(tables))}); {hook.FIX}")
    hook._page["used"].add("table")
    table = tables[name]
    head = "".join(f"<th>{page_text(c)}</th>" for c in table["columns"])
    body = "".join("<tr>" + "".join(f"<td>{table_cell(c)}</td>" for c in row) + "</tr>" for row in table["rows"])
    # In Material's own wrappers (its script wraps only the tables Markdown makes), so that a phone scrolls it
    # sideways; no class on the <table>, which Material's table style requires.
    return (f'<div class="md-typeset__scrollwrap"><div class="md-typeset__table">'
            f'<table id="table-{html.escape(name)}" data-specdec-marker="{html.escape(marker)}">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div></div>")


def render_data_link(name: str, text: str, marker: str) -> str:
    folder = hook.data_folder()
    if not FIGURE_NAME.fullmatch(name.replace(".", "_").replace("-", "_")) or not (hook.DOCS / folder / name).is_file():
        raise PluginError(f"{hook.where(text)}: [[data:{name}]]: docs/{folder}/{name} is not a file of the artifact folder "
                          "the figures were built from")
    href = get_relative_url(f"{folder}/{name}", hook._page["url"])
    return f'<a href="{html.escape(href)}"><code>{page_text(f"docs/{folder}/{name}")}</code></a>'


def render_visualizer(name: str, text: str, marker: str) -> str:
    if "visualizer" in hook._page["used"]:
        raise PluginError(f"{hook.where(text)}: a second [[visualizer]] on one page (it is one widget with fixed ids)")
    hook._page["used"].add("visualizer")
    data = hook.load_checked("visualizer")
    # the opening run whole, the others as a line each with their file's URL (visualizer.js loadRun fetches it)
    payload = {"runs": visualizer_runs_on_page(data["runs"]), "palette": data["palette"],
               "layout": data["layout"]}  # the charts' margins, height
    # the widget's script and its trace-file checks load on this page alone (specdec.js: loadWidgets, withTraceFile)
    checks = html.escape(get_relative_url("assets/tracefile.js", hook._page["url"]))
    return ('<div id="specdec-visualizer" class="specdec-visualizer" data-specdec-marker="visualizer"></div>\n'
            f'{widget_script("assets/visualizer.js")}<div hidden data-specdec-tracefile="{checks}"></div>\n'
            f'<template id="specdec-visualizer-data" data-search-exclude>{script_json(payload)}</template>')


# The Step Visualizer's runs, one JSON file each in the built site (written by the hook's on_post_build): the page
# carries the opening run whole and the others as a line each (what the selectors show), and visualizer.js fetches a
# run's file when it is chosen. All of them in the page made its HTML 1.16 MB, 98% of it runs the reader never opened.
RUNS_FOLDER = "assets/visualizer-runs"
RUN_FILES: dict[str, str] = {}  # path under the site -> the file's JSON text, for on_post_build


def opening_run(runs: list[dict]) -> int:
    """The run the page opens on: the first sampled one (its p and q are real distributions), as visualizer.js does."""
    return next((i for i, r in enumerate(runs) if r.get("mode") == "sampled"), 0)


def visualizer_runs_on_page(runs: list[dict]) -> list[dict]:
    """The runs as the page carries them: the opening run whole; every other one without its steps and vocabulary,
    with the URL of its file (from this page) and what the prompt selector says of it (its largest tree, whether a
    tree's children were sampled)."""
    opening, out = opening_run(runs), []
    for i, run in enumerate(runs):
        if i == opening:
            out.append(run)
            continue
        path = f"{RUNS_FOLDER}/{i}.json"
        RUN_FILES[path] = json.dumps(run, separators=(",", ":"), ensure_ascii=False)
        steps = run["trace"].get("steps", [])
        out.append({**{k: v for k, v in run.items() if k != "vocab"},
                    "trace": {k: v for k, v in run["trace"].items() if k != "steps"},
                    "file": get_relative_url(path, hook._page["url"]),
                    "nodes": max((s.get("k", 0) for s in steps), default=0),
                    "rejection": any(s.get("tree_rule") == "rejection" for s in steps)})
    return out


def write_visualizer_runs(site_dir: str) -> None:
    """on_post_build: the run files the built pages point to (RUN_FILES), atomically, under the site folder."""
    from pathlib import Path

    from specdec.fileio import write_text_atomic

    for path, text in RUN_FILES.items():
        write_text_atomic(Path(site_dir) / path, text)


def widget_script(path: str) -> str:
    """The mark that makes specdec.js load a widget's script (a file under docs/assets/) on this page: a widget's
    script is loaded by the pages that show the widget, not by every page (mkdocs.yml's extra_javascript)."""
    return f'<div hidden data-specdec-script="{html.escape(get_relative_url(path, hook._page["url"]))}"></div>\n'


def render_playground(name: str, text: str, marker: str) -> str:
    if name not in (*PLAYGROUND_PANELS, "data"):
        raise PluginError(f"{hook.where(text)}: unknown marker {text} (a Playground marker is "
                          f"[[playground:{'|'.join(PLAYGROUND_PANELS + ('data',))}]])")
    hook._page["used"].add("playground")
    if name in PLAYGROUND_PANELS:
        return f'<div id="pg-{name}-panel" class="pg-panel" data-specdec-marker="{html.escape(marker)}"></div>'
    data = hook.load_checked("playground")
    payload = {key: data[key] for key in ("rule", "block", "speedup", "race", "palette")}
    return (widget_script("assets/playground.js") + f'<template id="specdec-playground-data" data-search-exclude '
            f'data-specdec-marker="{html.escape(marker)}">{script_json(payload)}</template>')


def render_strip(name: str, text: str, marker: str) -> str:
    """Home's strip of a recorded run, played step by step (specdec.js); no Plotly."""
    if "strip" in hook._page["used"]:
        raise PluginError(f"{hook.where(text)}: a second [[strip]] on one page (it is one widget with fixed ids)")
    hook._page["used"].add("strip")
    data = hook.load_checked("strip")
    return (f'{strip_html(data)}\n'
            f'<template id="specdec-strip-data" data-search-exclude>{script_json({"run": data["run"], "palette": data["palette"]})}</template>')


# The strip's words for each fate (its legend); specdec.js's STRIP_WORDS, which builds the same strip again
STRIP_WORDS = {"accepted": "accepted draft", "rejected": "rejected draft", "resampled": "the target's token in its place",
               "bonus": "bonus token (all k accepted)"}


def strip_html(data: dict) -> str:
    """The strip as specdec.js's Strip builds it before it plays (every step in place, none shown yet), so that the
    page is laid out at its final height before any script runs: built by the script only, it pushed Home's text down
    as it appeared (a layout shift of 0.37 on a phone). Token text is escaped; a blank rejected token is shown as the
    script shows it (visibleIfBlank)."""
    run, palette = data["run"], data["palette"]

    def tok(fate: str, text: str) -> str:
        return f'<span class="sv-tok sv-{fate}">{html.escape(text)}</span>'

    def blank_visible(text: str) -> str:
        return text if text.strip() else text.replace("\n", "\u21b5").replace("\t", "\u21e5").replace(" ", "\u2423")

    steps = []
    for i, s in enumerate(run["steps"]):
        parts = [tok("accepted", t) for t in s["accepted"]]
        if s["rejected"] is not None:
            parts.append(tok("rejected", blank_visible(s["rejected"])))
        if s["extra"] is not None:
            parts.append(tok(s["extra_fate"], s["extra"]))
        steps.append(f'<span class="strip-step strip-later" data-step="{i}">{"".join(parts)}</span>')
    colours = ";".join(f"--sv-{f}:{html.escape(palette[f])}" for f in STRIP_WORDS)
    buttons = "".join(f'<button type="button" class="md-button" id="strip-{b}">{label}</button>'
                      for b, label in (("play", "Pause"), ("step", "Next step"), ("restart", "Restart")))
    legend = "".join(tok(f, words) for f, words in STRIP_WORDS.items())
    return (f'<div id="specdec-strip" class="specdec-strip" data-specdec-marker="strip" style="{colours}">'
            f'<div class="sv-controls">{buttons}</div>'
            f'<p class="strip-status" id="strip-status" role="status" aria-live="polite">The prompt '
            f'({html.escape(run["label"])}); press Next step or Play.</p>'
            f'<div class="strip-text" id="strip-text"><span class="strip-prompt">{html.escape(run["prompt"])}</span>'
            f'{"".join(steps)}</div><div class="sv-legend" aria-hidden="true">{legend}</div></div>')
