"""The MkDocs hook's markers, without a browser, rendered by Python-Markdown with the site's own extensions (as
mkdocs.yml lists them) plus the hook's: code is never scanned for figures (the parser decides what is code: fenced,
indented inside admonitions and lists, spans, escaped backticks), values in code spans are inserted raw (escaped
once), [[!...]] escapes a marker, every malformed marker fails naming the page and line, a figure may appear twice,
and a malformed figure file fails with its path."""

from __future__ import annotations

import importlib.util
import json
import re
import types

import markdown
import pytest
from browser import ROOT
from mkdocs.exceptions import PluginError
from mkdocs.utils.yaml import yaml_load

FIGURE = {"kind": "figure", "title": "A <title>", "figure": {"data": [], "layout": {}}}


@pytest.fixture()
def hook(monkeypatch, tmp_path):
    spec = importlib.util.spec_from_file_location("specdec_hook_under_test", ROOT / "docs" / "hooks" / "specdec_hook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    values = {"command": "python scripts/build_data.py --stages 'traces'", "html": "<b>&"}

    def load_checked(name):
        if name == "values":
            return {"values": values}
        if name == "speedup_vs_k":
            return FIGURE
        if name == "tables":
            return {"tables": {"audit": {"columns": ["row", "<b>"], "rows": [["a<script>", 0.5], ["[[val:html]]", 1], ["`a-b<`", "`"]]}}}
        return module.__dict__["_real_load_checked"](name)

    module._real_load_checked = module.load_checked
    monkeypatch.setattr(module, "load_checked", load_checked)
    return module


def site_extensions() -> tuple[list, dict]:
    """mkdocs.yml's markdown_extensions: (names, their configs)."""
    names, configs = [], {}
    with open(ROOT / "mkdocs.yml") as f:
        config = yaml_load(f)  # mkdocs's own loader: it reads the !ENV tags
    for entry in config["markdown_extensions"]:
        name, config = next(iter(entry.items())) if isinstance(entry, dict) else (entry, None)
        names.append(name)
        if config:
            configs[name] = config
    return names, configs


def render(hook, text, page="page.md"):
    """The page's HTML as the site renders it, and which kinds of marker it used."""
    names, configs = site_extensions()
    hook.start_page(page, text)
    html = markdown.Markdown(extensions=[*names, hook.MarkerExtension()], extension_configs=configs).convert(text)
    return html, hook._page["used"]


def text_of(html_text: str) -> str:
    """The text of some HTML (code highlighting splits code into spans)."""
    import html

    return html.unescape(re.sub(r"<[^>]+>", "", html_text))


def test_fenced_code_is_never_a_marker(hook):
    text = "Before\n\n```python\nx = torch.tensor([[0, 3, 5]])\n[[fig:nope]]\n```\n\n~~~~\n[[val:html]]\n~~~~\n\nafter [[val:html]]\n"
    out, used = render(hook, text)
    code = text_of(out)
    assert "torch.tensor([[0, 3, 5]])" in code and "[[fig:nope]]" in code and "[[val:html]]" in code
    assert "<p>after &lt;b&gt;&amp;</p>" in out and used == set()


@pytest.mark.parametrize("text", [
    '!!! note\n\n    Inside an admonition:\n\n    ```python\n    x = [[0, 3]]\n    [[fig:nope]]\n    ```\n',
    "- a list item\n\n    ```\n    [[fig:nope]] and [[val:\n    ```\n",
    "Text.\n\n    an indented code block [[fig:nope]]\n    [[val:html]]\n",
])
def test_code_blocks_indented_in_admonitions_and_lists_are_code(hook, text):
    out, used = render(hook, text)
    assert "[[fig:nope]]" in text_of(out) and used == set()


def test_code_span_takes_values_raw_and_ignores_other_brackets(hook):
    out, _ = render(hook, "run `[[val:command]]` or ``a[[0]]`` and `m[[1, 2]]`; text [[val:command]]\n")
    assert "<code>python scripts/build_data.py --stages 'traces'</code>" in out  # escaped once, by Markdown
    assert "<code>a[[0]]</code>" in out and "<code>m[[1, 2]]</code>" in out
    assert "text python scripts/build_data.py --stages &#x27;traces&#x27;" in out


def test_unmatched_backtick_is_text(hook):
    out, _ = render(hook, "a ` lone backtick and [[val:html]]\n")
    assert out == "<p>a ` lone backtick and &lt;b&gt;&amp;</p>"


def test_escape_renders_a_marker_literally(hook):
    out, used = render(hook, "write [[!fig:NAME]] in a page\n")
    # the brackets as character references: the page shows [[fig:NAME]], and no left-over check mistakes it
    assert out == "<p>write &#91;&#91;fig:NAME]] in a page</p>" and used == set()
    assert text_of(out) == "write [[fig:NAME]] in a page"


@pytest.mark.parametrize("text,line,what", [
    ("x = [[0, 3]]\n", 1, r"unknown marker \[\[0, 3\]\]"),
    ("ok\n\nsee `[[val:nope]]`\n", 3, "unknown value marker"),
    ("one\n\ntwo [[val:html and more\n", 3, "malformed marker"),  # never closed
    ("a `b\n\n[[oops]] c` d\n", 3, r"unknown marker \[\[oops\]\]"),  # backticks do not pair across paragraphs
    ("an \\`escaped [[oops]]\\` backtick\n", 1, r"unknown marker \[\[oops\]\]"),  # escaped backticks are no code
    ("[[fig:]]\n", 1, r"unknown marker \[\[fig:\]\]"),
    ("[[fig:/etc/passwd]]\n", 1, "names no figure"),
    ("[[fig:values]]\n", 1, "names no figure"),
    ("[[fig:visualizer]]\n", 1, "names no figure"),
    ("[[fig:no_such_figure]]\n", 1, "is missing"),
    ("[[visualizer]]\n\n[[visualizer]]\n", 3, "a second"),
    ("| a | b |\n|---|---|\n| 1 | [[val:nope]] |\n", 3, "unknown value marker"),
    # issue 34: a malformed marker is found where the source holds it malformed, not at an earlier good [[val:
    ("a [[val:html]]\n\n" + "text\n\n" * 3 + "nested [[val:[[val:html]]]]\n", 9, "malformed marker '\\[\\[val:'"),
    # a block marker in a heading would become the heading's id and its table-of-contents entry
    ("# Title\n\n## Heading [[fig:speedup_vs_k]]\n", 3, r"\[\[fig:speedup_vs_k\]\] in a heading"),
    ("text\n\n### [[playground:rule]]\n", 3, "in a heading"),
    # raw HTML and math are not scanned by the parser: a marker there would stay literal text
    ("one\n\n<div>\nbefore [[val:no_such_value]] after\n</div>\n", 4, r"\[\[val:no_such_value\]\]' was not rendered"),
    ("one\n\n<div class=\"x\">\n<p>[[fig:speedup_vs_k]]</p>\n</div>\n", 4, "inside raw HTML or math"),
    ("the rule $p = [[val:html]]$ here\n", 1, "inside raw HTML or math"),
    ("$$\n[[val:html]] + 1\n$$\n", 2, "inside raw HTML or math"),
    # look-alike brackets: probably a typo for a marker
    ("a\n\nsee ［［val:html］］ here\n", 3, "look-alike brackets"),
    ("see ⟦val:html⟧\n", 1, "look-alike brackets"),
])
def test_every_malformed_marker_fails_naming_the_page_and_line(hook, monkeypatch, text, line, what):
    if "visualizer]]" in text:
        monkeypatch.setattr(hook, "load_checked", lambda name: {"runs": [], "palette": {}, "layout": {}})
    with pytest.raises(PluginError, match=what) as err:
        render(hook, text, page="dir/page.md")
    assert f"dir/page.md:{line}" in str(err.value)


def test_an_unknown_value_names_the_nearest_known_ones(hook):
    """A typo in a value's name is answered with the names it is closest to (difflib), not the whole table."""
    with pytest.raises(PluginError, match=r"unknown value marker \[\[val:htm\]\]: did you mean \[\[val:html\]\]\?") as err:
        render(hook, "see [[val:htm]]\n")
    assert "python -m specdec_site.site.values" in str(err.value) and "command" not in str(err.value)
    with pytest.raises(PluginError, match=r"\[\[val:zzzzzz\]\] \(`python -m specdec_site.site.values` lists") as err:
        render(hook, "see [[val:zzzzzz]]\n")
    assert "did you mean" not in str(err.value)


def test_a_figure_may_appear_twice_on_a_page(hook):
    out, used = render(hook, "[[fig:speedup_vs_k]]\n\nagain:\n\n[[fig:speedup_vs_k]]\n")
    assert used == {"fig"}
    assert out.count('class="specdec-figure"') == 2 and "<p><div" not in out  # a block, not inside a paragraph
    assert 'id="fig-speedup_vs_k"' in out and 'id="fig-speedup_vs_k-2"' in out
    assert 'data-for="fig-speedup_vs_k"' in out and 'data-for="fig-speedup_vs_k-2"' in out
    assert 'aria-label="A &lt;title&gt;"' in out


@pytest.mark.parametrize("content,what", [
    ('{"kind": "figure", "title": "x", "sources"', "JSONDecodeError"),
    ('{"kind": "figure"}', "malformed"),
    ('[1, 2]', "malformed"),
])
def test_malformed_figure_file_names_its_path(hook, monkeypatch, tmp_path, content, what):
    (tmp_path / "broken.json").write_text(content)
    monkeypatch.setattr(hook, "FIGURES", tmp_path)
    monkeypatch.setattr(hook, "DOCS", tmp_path.parent)
    with pytest.raises(PluginError) as err:
        hook._real_load_checked("broken")
    assert f"{tmp_path.name}/broken.json" in str(err.value) and what in str(err.value)


def test_pages_with_figures_are_marked_for_plotly_and_others_not(hook):
    class File:
        src_path = "p.md"

    class Page:
        file = File()
        url = "benchmark/"

    html, _ = render(hook, "just text [[val:html]]\n")
    assert "data-specdec-plotly" not in hook.on_page_content(html, page=Page(), config=None, files=None)
    html, _ = render(hook, "[[playground:rule]]\n")
    assert 'data-specdec-plotly="../assets/vendor/plotly.js-basic-' in hook.on_page_content(html, page=Page(),
                                                                                            config=None, files=None)


def test_vendored_plotly_bundle_matches_the_plotly_package():
    from plotly.offline import get_plotlyjs_version

    folder = ROOT / "docs" / "assets" / "vendor" / f"plotly.js-basic-{get_plotlyjs_version()}"
    head = (folder / "plotly-basic.min.js").read_text()[:200]
    assert f"v{get_plotlyjs_version()}" in head and (folder / "LICENSE").is_file()
    assert json.loads((folder / "package.json").read_text())["version"] == get_plotlyjs_version()


def test_pages_with_math_are_marked_for_katex_and_others_not(hook):
    class File:
        src_path = "math.md"

    class Page:
        file = File()
        url = "math/"

    assert "data-specdec-katex" not in hook.on_page_content("<p>no math</p>", page=Page(), config=None, files=None)
    marked = hook.on_page_content('<p><span class="arithmatex">\\(p\\)</span></p>', page=Page(), config=None, files=None)
    assert 'data-specdec-katex="../assets/vendor/katex-0.16.22/"' in marked


def test_css_pruning_drops_only_selectors_naming_absent_classes(hook):
    css = """@charset "UTF-8";
    .wrap{--c: red}
    .used .absent, .used > p{color:var(--c)}
    .absent{color:blue}
    a.absent:hover{x:1}
    p:not(.absent){margin:0}
    [class~="absent"], div[data-x=".absent"]{y:2}
    :is(.absent, .used){z:3}
    @media (max-width: 10px){.absent{a:1} .used{b:2}}
    @media print{.absent{c:3}}
    @font-face{font-family:F;src:url(f.woff)}
    @keyframes spin{from{transform:rotate(0)}to{transform:rotate(1turn)}}
    body{margin:0}"""
    pruned = hook.prune_css(css, {"wrap", "used"})
    assert ".wrap{--c: red}" in pruned and ".used > p{color:var(--c)}" in pruned
    assert ".used .absent" not in pruned and ".absent{color:blue}" not in pruned and "a.absent" not in pruned
    # classes inside :not(), :is() and attribute brackets are not required
    for kept in ("p:not(.absent){margin:0}", '[class~="absent"],div[data-x=".absent"]{y:2}', ":is(.absent, .used){z:3}",
                 "@media (max-width: 10px){.used{b:2}}", "@font-face", "@keyframes spin", "body{margin:0}", "@charset"):
        assert kept in pruned, (kept, pruned)
    assert "@media print" not in pruned


def test_notebook_css_is_pruned_in_place_and_other_pages_untouched(hook):
    class File:
        src_path = "notebooks/walkthrough.ipynb"

    class Page:
        file = File()
        url = "notebooks/walkthrough/"

    big = ".jp-Cell{a:1}" + ".jp-Absent{b:2}" * 5000
    output = f'<html><style type="text/css">{big}</style><div class="jp-Cell"></div><style>.x{{c:3}}</style></html>'
    pruned = hook.on_post_page(output, page=Page(), config=None)
    assert '<style type="text/css">.jp-Cell{a:1}</style>' in pruned and "jp-Absent" not in pruned
    assert "<style>.x{c:3}</style>" in pruned  # small blocks are left as they are
    File.src_path = "math.md"
    assert hook.on_post_page(output, page=Page(), config=None) == output


def test_a_skip_link_to_a_missing_id_is_pointed_at_the_h1(hook):
    """The Notebook's skip link pointed to #...-with while its heading's id is ...-with-specdec."""
    page = ('<a href="#walkthrough-with" class="md-skip">Skip</a><article><h1 id="walkthrough-with-specdec">W</h1>'
            '<h2 id="x">x</h2></article>')
    mended = hook.mend_skip_link(page, "notebooks/walkthrough.ipynb")
    assert '<a href="#walkthrough-with-specdec" class="md-skip">' in mended
    good = '<a href="#x" class="md-skip">Skip</a><h1 id="t">T</h1><h2 id="x">x</h2>'
    assert hook.mend_skip_link(good, "p.md") == good
    with pytest.raises(hook.PluginError, match="p.md: the skip link points to #gone"):
        hook.mend_skip_link('<a href="#gone" class="md-skip">Skip</a><p>no heading</p>', "p.md")


def test_the_visualizer_gets_its_chart_layout(hook, monkeypatch):
    """visualizer.json's layout (the charts' margins and height) reaches the page: the widget read it from the page's
    data, which had only the runs and the palette, so every chart fell back to Plotly's defaults (a legend beside the
    plot took a third of a phone's width)."""
    data = {"runs": [{"id": "r"}], "palette": {"p": "#000"}, "layout": {"margin": {"t": 40}, "height": 340}}
    monkeypatch.setattr(hook, "load_checked", lambda name: data)
    out, _ = render(hook, "[[visualizer]]\n")
    payload = re.search(r'<template id="specdec-visualizer-data" data-search-exclude>(.*?)</template>', out, re.S)
    assert payload and json.loads(payload.group(1))["layout"] == data["layout"]


def test_values_in_headings_and_brackets_in_math_and_code_are_fine(hook):
    """What the placement check must let through: a value in a heading (text, so a good id), math with single or
    escaped brackets, code that holds [[, and a value that itself holds [[ (rendered as references)."""
    hook_values = hook.load_checked("values")["values"]
    hook_values["brackets"] = "x[[0]]"
    text = ("## Run `[[val:command]]` with [[val:html]]\n\n$$\n[a, b] + \\left[ x \\right]\n$$\n\n"
            "inline $f[x]$ and `m[[1]]`\n\n```\n[[0, 1]]\n```\n\nvalue [[val:brackets]]\n")
    out, _ = render(hook, text)
    assert "<h2" in out and "&lt;b&gt;&amp;" in out and text_of(out).count("x[[0]]") == 1


def test_a_value_in_a_code_span_of_a_heading_is_filled_in_the_table_of_contents_too(hook):
    names, configs = site_extensions()
    hook.start_page("page.md", "")
    md = markdown.Markdown(extensions=[*names, hook.MarkerExtension()], extension_configs=configs)
    md.convert("## Run `[[val:command]]`\n")
    assert md.toc_tokens[0]["name"] == "Run python scripts/build_data.py --stages 'traces'"


PAGE = '<html><body><div class="md-content"><article class="md-content__inner md-typeset"><h1>T</h1></article></div></body></html>'


@pytest.mark.parametrize("copies,here,url,links", [
    ("cpu=,cuda=cuda/", "cpu", "", {"cuda": "cuda/"}),
    ("cpu=,cuda=cuda/", "cpu", "math/", {"cuda": "../cuda/math/"}),
    ("cpu=,cuda=cuda/", "cuda", "", {"cpu": "../"}),
    ("cpu=,cuda=cuda/", "cuda", "notebooks/walkthrough/", {"cpu": "../../../notebooks/walkthrough/"}),
    ("cuda=,cpu=cpu/", "cpu", "math/", {"cuda": "../../math/"}),  # a site built with --device cuda
])
def test_the_device_switch_links_the_same_page_in_the_other_copy(hook, monkeypatch, copies, here, url, links):
    monkeypatch.setenv("SPECDEC_SITE_COPIES", copies)
    monkeypatch.setenv("SPECDEC_SITE_COPY", here)
    out = hook.add_device_switch(PAGE, url)
    switch = re.search(r'<nav class="specdec-device-switch".*?</nav>', out).group(0)
    assert dict(re.findall(r'href="([^"]+)"[^>]*data-specdec-device="(\w+)"', switch)) == {v: k for k, v in links.items()}
    assert f'aria-current="page">{here.upper()}<' in switch
    assert out.index("<article") < out.index(switch) < out.index("<h1>")  # inside the article: instant navigation swaps it
    assert hook.add_device_switch(PAGE, "404.html") == PAGE  # served at any path: no relative link would hold


def test_one_copy_has_no_switch_and_a_malformed_copy_list_stops_the_build(hook, monkeypatch):
    monkeypatch.delenv("SPECDEC_SITE_COPIES", raising=False)
    assert hook.add_device_switch(PAGE, "math/") == PAGE
    for copies, here in (("cpu=,cuda=cuda", "cpu"), ("cpu=,cuda=cuda/", "tpu"), ("cpu=cpu/,cuda=cuda/", "cpu"),
                         ("cpu=,cpu=cuda/", "cpu"), ("cpu=,cuda=../x/", "cpu"), ('cpu=,"><x=x/', "cpu")):
        monkeypatch.setenv("SPECDEC_SITE_COPIES", copies)
        monkeypatch.setenv("SPECDEC_SITE_COPY", here)
        with pytest.raises(PluginError, match="SPECDEC_SITE_COPIES"):
            hook.add_device_switch(PAGE, "math/")
    monkeypatch.setenv("SPECDEC_SITE_COPIES", "cpu=,cuda=cuda/")
    monkeypatch.setenv("SPECDEC_SITE_COPY", "cpu")
    with pytest.raises(PluginError, match="device switch"):
        hook.add_device_switch("<html>no article</html>", "math/")


def test_a_table_marker_renders_its_rows_escaped_and_an_unknown_table_fails(hook):
    html, used = render(hook, "Intro\n\n[[table:audit]]\n")
    assert "<th>&lt;b&gt;</th>" in html and "<td>a&lt;script&gt;</td>" in html and "<script>" not in html
    assert "<td>&#91;&#91;val:html]]</td>" in html  # a cell is text: no marker inside it is filled
    assert "<td><code>a-b&lt;</code></td><td>`</td>" in html  # backticks: code, still escaped
    assert html.count("<tr>") == 4 and "<p><" not in html and "table" in used
    with pytest.raises(PluginError, match="no table 'nope'"):
        render(hook, "[[table:nope]]\n")
    with pytest.raises(PluginError, match="in a heading"):
        render(hook, "## A [[table:audit]]\n")


# ---------------------------------------------------------------- fields only a build knows (issue 43: citing)


def test_build_fields_fill_the_bibtex_and_drop_what_is_unknown(hook, monkeypatch):
    entry = "@software{x,\n  url = {@SITE_URL@},\n  commit = {@DOCS_COMMIT@},\n  howpublished = {\\url{@SOURCE_URL@}}\n}"
    monkeypatch.setattr(hook, "docs_commit", lambda: "a" * 40)
    monkeypatch.delenv("SPECDEC_SITE_URL", raising=False)
    monkeypatch.delenv("SPECDEC_REPO_URL", raising=False)
    hook._cache.clear()
    out = hook.fill_build_fields(entry)
    assert out == "@software{x,\n  commit = {" + "a" * 40 + "}\n}", out  # no URL set: those lines left out
    monkeypatch.setenv("SPECDEC_SITE_URL", "https://example.org/specdec/")
    monkeypatch.setenv("SPECDEC_REPO_URL", "https://example.org/code/")
    hook._cache.clear()
    out = hook.fill_build_fields(entry)
    assert "url = {https://example.org/specdec/}" in out and "@" not in out.replace("@software", "")
    assert "howpublished = {\\url{https://example.org/code/tree/" + "a" * 40 + "}}" in out


def test_the_docs_commit_is_this_checkout_head(hook):
    import subprocess

    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    commit = hook.docs_commit()
    assert commit is not None and commit.split()[0] == head


def test_the_committed_bibtex_has_one_commit_field_to_fill():
    values = json.loads((ROOT / "docs" / "figures" / "values.json").read_text())["values"]
    entry = values["cite_bibtex"]
    # the pages' commit in the note, which classic BibTeX prints (a `commit` field it dropped), beside the data's
    assert re.search(r"^\s*note\s*= \{Version [^,]+, pages at git commit @DOCS_COMMIT@; data built .* at git commit ",
                     entry, re.M), entry
    assert entry.count("@DOCS_COMMIT@") == 1 and entry.startswith("@misc{")


def test_the_visualizer_page_carries_its_opening_run_whole_and_the_others_as_files(hook, monkeypatch, tmp_path):
    """All 22 runs in the page made its HTML 1.16 MB, 98% of it runs a reader never opened: the page carries the
    opening run (the first sampled one, as visualizer.js opens) whole, and each other run as a line with its file's
    URL and what the prompt selector says of it; on_post_build writes those files, each the run as recorded."""
    def run(mode, drafter, steps):
        return {"mode": mode, "vocab": {"1": "a"}, "trace": {"drafter": drafter, "k": 3, "steps": steps}}

    runs = [run("greedy", "model", [{"k": 3}]), run("sampled", "model", [{"k": 3}]),
            run("sampled", "tree", [{"k": 0}, {"k": 7, "tree_rule": "rejection"}])]
    data = {"runs": runs, "palette": {"p": "#000"}, "layout": {"height": 340}}
    monkeypatch.setattr(hook, "load_checked", lambda name: data)
    hook._renderers.RUN_FILES.clear()
    out, _ = render(hook, "[[visualizer]]\n", page="visualizer.md")
    payload = json.loads(re.search(r'<template id="specdec-visualizer-data" data-search-exclude>(.*?)</template>',
                                   out, re.S).group(1))["runs"]
    assert payload[1] == runs[1]  # the opening run, whole
    for i in (0, 2):
        line = payload[i]
        assert "vocab" not in line and "steps" not in line["trace"] and line["mode"] == runs[i]["mode"]
        assert line["file"] == f"../assets/visualizer-runs/{i}.json"
    assert (payload[0]["nodes"], payload[0]["rejection"]) == (3, False)
    assert (payload[2]["nodes"], payload[2]["rejection"]) == (7, True)
    hook.on_post_build(config=types.SimpleNamespace(site_dir=str(tmp_path)))
    for i in (0, 2):
        assert json.loads((tmp_path / "assets" / "visualizer-runs" / f"{i}.json").read_text()) == runs[i]
    assert not (tmp_path / "assets" / "visualizer-runs" / "1.json").exists()


def test_the_search_dialog_is_named_on_every_page_and_a_moved_one_fails_the_build(hook):
    """Lighthouse's aria-dialog-name failed on every page: Material's search dialog had no accessible name."""
    page = f'<header class="md-header">{hook.SEARCH_DIALOG}<input></div></header>'
    assert f'{hook.SEARCH_DIALOG[:-1]} aria-label="Search">' in hook.name_search_dialog(page, "p.md")
    assert hook.on_post_template(page, template_name="404.html", config=None).count('aria-label="Search"') == 1
    with pytest.raises(hook.PluginError, match="p.md: Material's search dialog"):
        hook.name_search_dialog('<header class="md-header"><div class="md-search" role="dialog"></div></header>', "p.md")
