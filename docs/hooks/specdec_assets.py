"""The page's weight and its HTML after render: plotly.js and KaTeX loaded on demand, the notebook's CSS pruned.

Here because these change what a page carries, not what it says: plotly.js (the vendored basic bundle, which draws
the scatter and bar traces the site uses) is loaded only by pages with a figure, the visualizer or the playground,
and KaTeX only by pages with math: the hook marks them for assets/specdec.js (mark_page_weight). The notebook page's
inlined JupyterLab stylesheet (575 KB) is pruned to the rules that can match an element of the page
(prune_notebook_styles, prune_css). And Material's skip link, which the notebook page's ids can break, is mended.

Loaded by docs/hooks/specdec_hook.py (load_sibling), which sets `hook`: the hook's names (load_checked, DOCS, the
page being rendered) are read through it, when used.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from typing import Any

import tinycss2
from mkdocs.exceptions import PluginError
from mkdocs.utils import get_relative_url

__all__ = ["PLOTLY_BUNDLE", "NEEDS_PLOTLY", "KATEX_DIR", "PRUNE_STYLE_ABOVE", "STYLE", "check_vendored",
           "mark_page_weight", "prune_notebook_styles", "SKIP_LINK", "HTML_ID", "FIRST_HEADING", "mend_skip_link",
           "SEARCH_DIALOG", "name_search_dialog",
           "plotly_bundle", "page_classes", "prune_css"]

hook: Any = None  # the hook module's names, read when used (specdec_hook.load_sibling sets it)

# The vendored plotly.js bundle: the smallest official one that draws every trace type the figures use.
PLOTLY_BUNDLE = "assets/vendor/plotly.js-basic-{version}/plotly-basic.min.js"
NEEDS_PLOTLY = ("fig", "visualizer", "playground")
# The vendored KaTeX (loaded by pages whose HTML has arithmatex math).
KATEX_DIR = "assets/vendor/katex-0.16.22/"
# A <style> this large on a notebook page is mkdocs-jupyter's JupyterLab stylesheet: pruned.
PRUNE_STYLE_ABOVE = 50_000
STYLE = re.compile(r"(<style[^>]*>)(.*?)(</style>)", re.S)


# ---------------------------------------------------------------- what is vendored (on_config)


def check_vendored() -> None:
    """The figures were written by the installed plotly, whose plotly.js and KaTeX are vendored: else the build stops."""
    import plotly
    from plotly.offline import get_plotlyjs_version

    written_by = hook.load_checked("values")["plotly_version"]
    if written_by != plotly.__version__:
        raise PluginError(f"the figures were written by plotly {written_by}, but plotly {plotly.__version__} is installed "
                          f"(its plotly.js would render them): install plotly=={written_by} or {hook.FIX}")
    bundle = hook.DOCS / plotly_bundle()
    if not bundle.is_file():
        raise PluginError(f"plotly {plotly.__version__} draws with plotly.js {get_plotlyjs_version()}, but "
                          f"{bundle.relative_to(hook.DOCS.parent)} is not vendored: put the npm package "
                          f"plotly.js-basic-dist-min@{get_plotlyjs_version()} there (with its LICENSE)")
    for name in ("katex.min.js", "katex.min.css", "contrib/auto-render.min.js"):
        if not (hook.DOCS / KATEX_DIR / name).is_file():
            missing = (hook.DOCS / KATEX_DIR / name).relative_to(hook.DOCS.parent)
            raise PluginError(f"KaTeX is not vendored: {missing} is missing")


# ---------------------------------------------------------------- loaded on demand (on_page_content)


def mark_page_weight(html_text: str, url: str) -> str:
    """The page's HTML with the marks that make assets/specdec.js load plotly.js and KaTeX, where it needs them."""
    if hook._page["used"] & set(NEEDS_PLOTLY):
        # Where the page's scripts find plotly.js (loaded on demand, also under instant navigation).
        html_text += f'\n<div hidden data-specdec-plotly="{html.escape(get_relative_url(plotly_bundle(), url))}"></div>\n'
    if 'class="arithmatex"' in html_text:
        # Where the page's scripts find KaTeX (loaded on demand, like plotly.js). Its stylesheet is a link in the
        # page's content, not one added to <head> by a script: Material's instant navigation replaces the head on
        # every navigation, same-page anchors included, and took an added stylesheet with it (the formulas lost
        # their styles after a click on an equation reference); the content it swaps in brings this link back.
        katex = get_relative_url(KATEX_DIR + "katex.min.js", url).removesuffix("katex.min.js")
        html_text += (f'\n<link rel="stylesheet" href="{html.escape(katex)}katex.min.css" data-specdec-katex-css>'
                      f'\n<div hidden data-specdec-katex="{html.escape(katex)}"></div>\n')
    return html_text


# ---------------------------------------------------------------- the page's HTML (on_post_page)


def prune_notebook_styles(output: str) -> str:
    """A notebook page's HTML with its large <style>s (the JupyterLab stylesheet) pruned to the page's classes."""
    classes = page_classes(output)
    return STYLE.sub(lambda m: m.group(1) + prune_css(m.group(2), classes) + m.group(3)
                     if len(m.group(2)) > PRUNE_STYLE_ABOVE else m.group(0), output)


SKIP_LINK = re.compile(r'<a href="#([^"]*)" class="md-skip">')
HTML_ID = re.compile(r'\sid="([^"]+)"')
FIRST_HEADING = re.compile(r'<h1[^>]*\sid="([^"]+)"')


def mend_skip_link(output: str, page_path: str) -> str:
    """Material's "Skip to content" link targets the id of the page's first TOC entry; mkdocs-jupyter computes
    that id its own way ("...-with" for a heading whose id ends "...-with-specdec"), so on the Notebook the link
    led nowhere. A target the page lacks is replaced by the page's h1; a page with neither fails the build."""
    link = SKIP_LINK.search(output)
    if link is None or link.group(1) in HTML_ID.findall(output):
        return output
    heading = FIRST_HEADING.search(output)
    if heading is None:
        raise PluginError(f"{page_path}: the skip link points to #{link.group(1)}, which the page lacks, and the page "
                          "has no h1 to point it to")
    return output[:link.start(1)] + heading.group(1) + output[link.end(1):]

# Material's search is a dialog with no name (WCAG 4.1.2; Lighthouse's aria-dialog-name, on every page).
SEARCH_DIALOG = '<div class="md-search" data-md-component="search" role="dialog">'


def name_search_dialog(output: str, page_path: str) -> str:
    """The search dialog named "Search" (aria-label); a page with Material's header but not its dialog as written here
    fails the build (a theme whose markup moved would otherwise leave it nameless again, unseen)."""
    if 'class="md-header' in output and SEARCH_DIALOG not in output:
        raise PluginError(f"{page_path}: Material's search dialog ({SEARCH_DIALOG}) is not in the page: name it where "
                          "the theme now writes it (docs/hooks/specdec_assets.py)")
    return output.replace(SEARCH_DIALOG, SEARCH_DIALOG[:-1] + ' aria-label="Search">', 1)


# ---------------------------------------------------------------- helpers


def plotly_bundle() -> str:
    from plotly.offline import get_plotlyjs_version

    return PLOTLY_BUNDLE.format(version=get_plotlyjs_version())

# ---------------------------------------------------------------- CSS pruning


class _ClassCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.classes: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "class" and value:
                self.classes.update(value.split())


def page_classes(html_text: str) -> set[str]:
    """Every class name on an element of the page."""
    collector = _ClassCollector()
    collector.feed(html_text)
    collector.close()
    return collector.classes


def prune_css(css: str, classes: set[str]) -> str:
    """The stylesheet less the selectors that name a class no element of the page has.

    Conservative: a selector is dropped only when a class outside any :not()/:is()/... and outside
    [attribute] brackets is absent, so no rule that could match is lost; @media/@supports/@layer are
    pruned inside; every other at-rule (@font-face, @keyframes, ...) is kept whole.
    """
    rules = tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True)
    return "".join(_pruned_rules(rules, classes))


def _pruned_rules(rules, classes: set[str]):
    for rule in rules:
        if rule.type == "qualified-rule":
            kept = [sel for sel in _split_selectors(rule.prelude) if _may_match(sel, classes)]
            if kept:
                yield ",".join(tinycss2.serialize(sel).strip() for sel in kept) + "{" + tinycss2.serialize(rule.content) + "}"
        elif rule.type == "at-rule" and rule.content is not None and rule.lower_at_keyword in ("media", "supports", "layer"):
            inner = "".join(_pruned_rules(tinycss2.parse_blocks_contents(rule.content, skip_comments=True,
                                                                         skip_whitespace=True), classes))
            if inner:
                yield f"@{rule.at_keyword}{tinycss2.serialize(rule.prelude)}{{{inner}}}"
        elif rule.type == "at-rule":
            yield rule.serialize()
        # parse errors are dropped, as a browser drops them


def _split_selectors(prelude) -> list[list]:
    """A selector list split at its top-level commas (commas inside :is(...) are nested tokens)."""
    out: list[list] = [[]]
    for token in prelude:
        if token.type == "literal" and token.value == ",":
            out.append([])
        else:
            out[-1].append(token)
    return [sel for sel in out if any(t.type not in ("whitespace", "comment") for t in sel)]


def _may_match(selector: list, classes: set[str]) -> bool:
    for before, token in zip(selector, selector[1:]):
        if before.type == "literal" and before.value == "." and token.type == "ident" and token.value not in classes:
            return False
    return True
