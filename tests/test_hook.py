"""The MkDocs hook's marker handling, without a browser: code is never scanned for figures, values in code
spans are inserted raw (Markdown escapes them once), [[!...]] escapes a marker, and a malformed figure file
fails with its path."""

from __future__ import annotations

import importlib.util
import json

import pytest
from browser import ROOT
from mkdocs.exceptions import PluginError


@pytest.fixture()
def hook(monkeypatch, tmp_path):
    spec = importlib.util.spec_from_file_location("specdec_hook_under_test", ROOT / "docs" / "hooks" / "specdec_hook.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    values = {"command": "python scripts/build_data.py --stages 'traces'", "html": "<b>&"}

    def load_checked(name):
        if name == "values":
            return {"values": values}
        return module.__dict__["_real_load_checked"](name)

    module._real_load_checked = module.load_checked
    monkeypatch.setattr(module, "load_checked", load_checked)
    return module


def sub(hook, text):
    used = set()
    return hook.substitute(text, "page.md", used), used


def test_fenced_code_is_never_a_marker(hook):
    text = "Before\n\n```python\nx = torch.tensor([[0, 3, 5]])\n[[fig:nope]]\n```\n\n~~~~\n[[val:html]]\n~~~~\nafter [[val:html]]\n"
    out, used = sub(hook, text)
    assert "torch.tensor([[0, 3, 5]])" in out and "[[fig:nope]]" in out and "\n[[val:html]]\n" in out
    assert out.endswith("after &lt;b&gt;&amp;\n") and used == {"val"}


def test_code_span_takes_values_raw_and_ignores_other_brackets(hook):
    out, _ = sub(hook, "run `[[val:command]]` or ``a[[0]]`` and `m[[1, 2]]`; text [[val:command]]\n")
    assert "`python scripts/build_data.py --stages 'traces'`" in out  # Markdown escapes code once, not twice
    assert "``a[[0]]``" in out and "`m[[1, 2]]`" in out
    assert "text python scripts/build_data.py --stages &#x27;traces&#x27;" in out


def test_unmatched_backtick_is_text(hook):
    out, _ = sub(hook, "a ` lone backtick and [[val:html]]\n")
    assert out == "a ` lone backtick and &lt;b&gt;&amp;\n"


def test_escape_renders_a_marker_literally(hook):
    out, used = sub(hook, "write [[!fig:NAME]] in a page\n")
    assert out == "write [[fig:NAME]] in a page\n" and used == set()


def test_unknown_marker_outside_code_still_fails(hook):
    with pytest.raises(PluginError, match=r"page.md: unknown marker \[\[0, 3\]\]"):
        sub(hook, "x = [[0, 3]]\n")
    with pytest.raises(PluginError, match="unknown value marker"):
        sub(hook, "`[[val:nope]]`\n")


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

    plain = hook.on_page_markdown("just text [[val:html]]\n", page=Page(), config=None, files=None)
    assert "data-specdec-plotly" not in plain
    marked = hook.on_page_markdown("[[playground:rule]]\n", page=Page(), config=None, files=None)
    assert 'data-specdec-plotly="../assets/vendor/plotly.js-basic-' in marked


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

    big = ".jp-Cell{a:1}" + ".jp-Absent{b:2}" * 5000
    output = f'<html><style type="text/css">{big}</style><div class="jp-Cell"></div><style>.x{{c:3}}</style></html>'
    pruned = hook.on_post_page(output, page=Page(), config=None)
    assert '<style type="text/css">.jp-Cell{a:1}</style>' in pruned and "jp-Absent" not in pruned
    assert "<style>.x{c:3}</style>" in pruned  # small blocks are left as they are
    File.src_path = "math.md"
    assert hook.on_post_page(output, page=Page(), config=None) == output
