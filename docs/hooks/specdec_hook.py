"""MkDocs hook: inject measured figures and numbers into pages; fail loudly on anything missing or stale.

Markers in the Markdown pages:
    [[fig:NAME]]      the Plotly figure docs/figures/NAME.json, rendered by assets/specdec.js
    [[val:NAME]]      a number or string from docs/figures/values.json (HTML-escaped; inside a `code span`
                      it is inserted raw, since Markdown escapes code itself)
    [[visualizer]]    the Step Visualizer with the recorded traces (docs/figures/visualizer.json), drawn by assets/visualizer.js
    [[strip]]         Home's strip of a recorded run, played step by step by assets/specdec.js (docs/figures/strip.json;
                      no Plotly)
    [[playground:PART]]  a Playground panel: rule (the token rule), block (block verification), speedup, race; or
                      [[playground:data]], the panels' data (docs/figures/playground.json) and assets/playground.js
    [[table:NAME]]    an HTML table from docs/figures/tables.json (every cell HTML-escaped; `a cell in backticks` is code)
    [[data:FILE]]     a link to FILE in the artifact folder the figures were built from (docs/data/<device>/, or the
                      folder given to build_figures.py --data): pages name no data folder themselves
    [[!TEXT]]         the literal text [[TEXT]] (the escape)
Markers are found by the Markdown parser itself (a Python-Markdown extension added to the site's own): an inline
pattern that runs after code spans, escapes and math are taken, so code blocks (fenced, or indented inside a list
or an admonition) and code spans are never scanned for figures; a [[val:...]] in a code span is filled in by a tree
pass over the <code> elements (not those of code blocks). A malformed marker (`[[val:` never closed, an unknown
kind, a figure name that is no figure) stops the build naming the page and line. A figure may appear twice on a
page: each copy gets its own element id.

Page weight: plotly.js (the vendored basic bundle, which draws the scatter and bar traces the site uses)
is loaded only by pages with a figure, the visualizer or the playground, and KaTeX only by pages with
math: the hook marks them for assets/specdec.js. The notebook page's inlined JupyterLab stylesheet
(575 KB) is pruned to the rules that can match an element of the page.

The files are written by `python scripts/build_figures.py` from the artifacts in docs/data/, in the
format that `specdec_site.site.contract` defines; each records the sha256 of the artifacts it was built from.
A marker with no file, a file that breaks the contract, a file built from artifacts that have changed
since, or a plotly.js of another version than the one that wrote the JSON stops the build with an error
that says which and how to fix it.

The site can be built more than once, one copy per device with data (scripts/build_site.py): each copy reads the
figures of its own run (SPECDEC_FIGURES, default docs/figures) and, when there are several (SPECDEC_SITE_COPIES,
"cpu=,cuda=cuda/": each device and its folder below the site's top; SPECDEC_SITE_COPY, this one), every page but
the 404 page opens with a switch that links the same page in the other copies.

This file holds the MkDocs hook functions and the marker kinds; the work is in the modules beside it, by concern:
    specdec_markers.py    the parser's side: the [[...]] pattern, the page being rendered, the placement checks
    specdec_renderers.py  one renderer per marker kind and the dispatch (render_marker), loud on an unknown kind
    specdec_files.py      loading and checking the figure/value files, the site's copies, the build fields
    specdec_assets.py     page weight: plotly.js/KaTeX marks, the notebook CSS pruning; the skip link
They are loaded by path (load_sibling), not imported by name: MkDocs puts docs/hooks/ on sys.path only while it runs
this file, and the tests load this file by path without it. Each gets a fresh copy per load of this file (its own
page and cache), and reads this file's names when it uses them, so that what a test replaces here (load_checked,
docs_commit, DOCS, FIGURES) is what every module uses. Their public names are this module's too.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

__all__ = ["PluginError"]  # with every name of the modules beside this file (load_sibling)

HOOKS = Path(__file__).resolve().parent
DOCS = HOOKS.parent
FIGURES = DOCS / "figures"  # the figures a plain build reads; SPECDEC_FIGURES names another folder (figures_dir)


# ---------------------------------------------------------------- the modules beside this file


class _HookNames:
    """This module's names, read when a module beside it uses them (module.hook.NAME): a name replaced here (a test's
    monkeypatch of load_checked) is replaced for every module."""

    def __getattr__(self, name: str):
        try:
            return globals()[name]
        except KeyError:
            raise AttributeError(name) from None


def load_sibling(name: str) -> ModuleType:
    """docs/hooks/NAME.py, loaded by path (not registered in sys.modules: each load of this hook gets its own), with
    `hook` set to this module's names and its __all__ made this module's names too."""
    spec = importlib.util.spec_from_file_location(name, HOOKS / f"{name}.py")
    if spec is None or spec.loader is None:
        raise PluginError(f"cannot load {HOOKS / f'{name}.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.hook = _HookNames()
    globals().update({key: getattr(module, key) for key in module.__all__})
    __all__.extend(module.__all__)
    return module


_files = load_sibling("specdec_files")
_assets = load_sibling("specdec_assets")
_markers = load_sibling("specdec_markers")
_renderers = load_sibling("specdec_renderers")


# ---------------------------------------------------------------- the marker kinds


# [[kind:NAME]] -> its renderer (specdec_renderers.render_marker dispatches); the kinds in WHOLE_MARKERS take no name.
RENDERERS = {
    "fig": _renderers.render_figure,  # [[fig:NAME]]
    "val": _renderers.render_value,  # [[val:NAME]]
    "table": _renderers.render_table,  # [[table:NAME]]
    "data": _renderers.render_data_link,  # [[data:FILE]]
    "visualizer": _renderers.render_visualizer,  # [[visualizer]]
    "playground": _renderers.render_playground,  # [[playground:rule|block|speedup|race|data]]
    "strip": _renderers.render_strip,  # [[strip]]
}
WHOLE_MARKERS = ("visualizer", "strip")


# ---------------------------------------------------------------- hooks


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    _files._cache.clear()
    _renderers.RUN_FILES.clear()
    config.markdown_extensions.append(_markers.MarkerExtension())
    _files.site_copies()  # a malformed SPECDEC_SITE_COPIES stops the build before any page
    _assets.check_vendored()  # the installed plotly wrote the figures; its plotly.js and KaTeX are vendored
    return config


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    _markers.start_page(page.file.src_path, markdown, page.url)  # the markers are replaced while Markdown renders it
    return markdown


def on_page_content(html_text: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    return _assets.mark_page_weight(html_text, page.url)  # plotly.js and KaTeX, loaded where the page needs them


def on_post_page(output: str, *, page: Page, config: MkDocsConfig) -> str:
    output = _assets.mend_skip_link(output, page.file.src_path)
    output = _assets.name_search_dialog(output, page.file.src_path)
    output = _files.add_device_switch(output, page.url)
    if not page.file.src_path.endswith(".ipynb"):
        return output
    return _assets.prune_notebook_styles(output)


def on_post_template(output: str, *, template_name: str, config: MkDocsConfig) -> str:
    # 404.html is a theme template, not a page: its header's search dialog is named here
    return _assets.name_search_dialog(output, template_name) if template_name == "404.html" else output


def on_post_build(*, config: MkDocsConfig) -> None:
    _renderers.write_visualizer_runs(config.site_dir)  # the Step Visualizer's runs, one file each, fetched when chosen
