"""MkDocs hook: inject measured figures and numbers into pages; fail loudly on anything missing or stale.

Markers in the Markdown pages:
    [[fig:NAME]]      the Plotly figure docs/figures/NAME.json, rendered by assets/specdec.js
    [[val:NAME]]      a number or string from docs/figures/values.json (HTML-escaped; inside a `code span`
                      it is inserted raw, since Markdown escapes code itself)
    [[visualizer]]    the Step Visualizer with the recorded traces (docs/figures/visualizer.json), drawn by assets/visualizer.js
    [[playground:PART]]  a Playground panel (rule, speedup, race), or its data (docs/figures/playground.json)
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
format that `specdec_site.contract` defines; each records the sha256 of the artifacts it was built from.
A marker with no file, a file that breaks the contract, a file built from artifacts that have changed
since, or a plotly.js of another version than the one that wrote the JSON stops the build with an error
that says which and how to fix it.

The site can be built more than once, one copy per device with data (scripts/build_site.py): each copy reads the
figures of its own run (SPECDEC_FIGURES, default docs/figures) and, when there are several (SPECDEC_SITE_COPIES,
"cpu=,cuda=cuda/": each device and its folder below the site's top; SPECDEC_SITE_COPY, this one), every page but
the 404 page opens with a switch that links the same page in the other copies.
"""

from __future__ import annotations

import difflib
import html
import json
import os
import re
import subprocess
import xml.etree.ElementTree as etree
from html.parser import HTMLParser
from pathlib import Path

import tinycss2
from markdown import Extension
from markdown.inlinepatterns import InlineProcessor
from markdown.postprocessors import Postprocessor
from markdown.treeprocessors import Treeprocessor
from markdown.util import AtomicString
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url

from specdec.fileio import sha256_file
from specdec_site import contract

DOCS = Path(__file__).resolve().parents[1]
FIGURES = DOCS / "figures"  # the figures a plain build reads; SPECDEC_FIGURES names another folder (figures_dir)
# "[[" then a body without brackets or newlines, then "]]"; without the closing "]]" it is a malformed marker
MARKER = r"\[\[([^\[\]\n]*)(\]\])?"
VAL_IN_CODE = re.compile(r"\[\[val:([^\[\]\n]*)\]\]")
FIGURE_NAME = re.compile(r"[a-z0-9_]+")
# after code spans (190), math (189.9) and backslash escapes (180); before references and links (170, 160)
MARKER_PRIORITY = 175
PLAYGROUND_PANELS = ("rule", "block", "speedup", "race")
# The vendored plotly.js bundle: the smallest official one that draws every trace type the figures use.
PLOTLY_BUNDLE = "assets/vendor/plotly.js-basic-{version}/plotly-basic.min.js"
PLOTLY_BASIC_TRACES = {"scatter", "bar", "pie"}
NEEDS_PLOTLY = ("fig", "visualizer", "playground")
# The vendored KaTeX (loaded by pages whose HTML has arithmatex math).
KATEX_DIR = "assets/vendor/katex-0.16.22/"
# A <style> this large on a notebook page is mkdocs-jupyter's JupyterLab stylesheet: pruned.
PRUNE_STYLE_ABOVE = 50_000
STYLE = re.compile(r"(<style[^>]*>)(.*?)(</style>)", re.S)
FIX = "run `python scripts/build_figures.py` (or `bash scripts/site.sh`)"

_cache: dict = {}
# the page being rendered (on_page_markdown): its path and source, the kinds of marker it used, the copies of each
# figure (for their ids) and of each marker text met so far (for the line of an error)
_page: dict = {"path": "?", "source": "", "used": set(), "ids": {}, "seen": {}}


# ---------------------------------------------------------------- hooks


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    _cache.clear()
    config.markdown_extensions.append(MarkerExtension())
    import plotly
    from plotly.offline import get_plotlyjs_version

    site_copies()  # a malformed SPECDEC_SITE_COPIES stops the build before any page
    written_by = load_checked("values")["plotly_version"]
    if written_by != plotly.__version__:
        raise PluginError(f"the figures were written by plotly {written_by}, but plotly {plotly.__version__} is installed "
                          f"(its plotly.js would render them): install plotly=={written_by} or {FIX}")
    bundle = DOCS / plotly_bundle()
    if not bundle.is_file():
        raise PluginError(f"plotly {plotly.__version__} draws with plotly.js {get_plotlyjs_version()}, but "
                          f"{bundle.relative_to(DOCS.parent)} is not vendored: put the npm package "
                          f"plotly.js-basic-dist-min@{get_plotlyjs_version()} there (with its LICENSE)")
    for name in ("katex.min.js", "katex.min.css", "contrib/auto-render.min.js"):
        if not (DOCS / KATEX_DIR / name).is_file():
            raise PluginError(f"KaTeX is not vendored: {(DOCS / KATEX_DIR / name).relative_to(DOCS.parent)} is missing")
    return config


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    start_page(page.file.src_path, markdown, page.url)  # the markers are replaced while Markdown renders it (MarkerExtension)
    return markdown


def on_page_content(html_text: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    if _page["used"] & set(NEEDS_PLOTLY):
        # Where the page's scripts find plotly.js (loaded on demand, also under instant navigation).
        html_text += f'\n<div hidden data-specdec-plotly="{html.escape(get_relative_url(plotly_bundle(), page.url))}"></div>\n'
    if 'class="arithmatex"' in html_text:
        # Where the page's scripts find KaTeX (loaded on demand, like plotly.js). Its stylesheet is a link in the
        # page's content, not one added to <head> by a script: Material's instant navigation replaces the head on
        # every navigation, same-page anchors included, and took an added stylesheet with it (the formulas lost
        # their styles after a click on an equation reference); the content it swaps in brings this link back.
        url = get_relative_url(KATEX_DIR + "katex.min.js", page.url).removesuffix("katex.min.js")
        html_text += (f'\n<link rel="stylesheet" href="{html.escape(url)}katex.min.css" data-specdec-katex-css>'
                      f'\n<div hidden data-specdec-katex="{html.escape(url)}"></div>\n')
    return html_text


def on_post_page(output: str, *, page: Page, config: MkDocsConfig) -> str:
    output = mend_skip_link(output, page.file.src_path)
    output = add_device_switch(output, page.url)
    if not page.file.src_path.endswith(".ipynb"):
        return output
    classes = page_classes(output)
    return STYLE.sub(lambda m: m.group(1) + prune_css(m.group(2), classes) + m.group(3)
                     if len(m.group(2)) > PRUNE_STYLE_ABOVE else m.group(0), output)


ARTICLE = '<article class="md-content__inner md-typeset">'
COPY = re.compile(r"([a-z0-9]+)=((?:[a-z0-9]+/)?)")


def site_copies() -> tuple[dict[str, str], str]:
    """({device: its copy's folder below the site's top}, this copy's device) from SPECDEC_SITE_COPIES and
    SPECDEC_SITE_COPY; ({}, "") for a site of one copy."""
    spec, here = os.environ.get("SPECDEC_SITE_COPIES", ""), os.environ.get("SPECDEC_SITE_COPY", "")
    if not spec:
        return {}, ""
    items = [COPY.fullmatch(item) for item in spec.split(",")]
    copies = {m.group(1): m.group(2) for m in items if m}
    if None in items or len(copies) != len(items) or here not in copies or list(copies.values()).count("") != 1:
        raise PluginError(f"SPECDEC_SITE_COPIES={spec!r} with SPECDEC_SITE_COPY={here!r}: expected device=folder/ "
                          "pairs, one device with the empty folder (the site's top), and this copy's device among them "
                          "(scripts/build_site.py sets both)")
    return copies, here


def add_device_switch(output: str, url: str) -> str:
    """The switch between the site's copies at the top of the page's article: this copy's device, and a link to the
    same page in each other copy (relative, so the site works under any sub-path). The 404 page, served at any
    path, gets none. Inside the article, so that instant navigation, which swaps the article, swaps it too."""
    copies, here = site_copies()
    if not copies or url == "404.html":
        return output
    if output.count(ARTICLE) != 1:
        raise PluginError(f"{url or 'index'}: the device switch goes after {ARTICLE}, which the page has "
                          f"{output.count(ARTICLE)} times")
    # from the page to the site's top: up to this copy's top, then out of this copy's folder
    top = "../" * (url.count("/") + copies[here].count("/"))
    parts = []
    for device, folder in copies.items():
        label = html.escape(device.upper())
        if device == here:
            parts.append(f'<span class="specdec-device-current" aria-current="page">{label}</span>')
        else:
            href = html.escape((top + folder + url) or "./")
            parts.append(f'<a href="{href}" hreflang="en" data-specdec-device="{html.escape(device)}">{label}</a>')
    switch = ('<nav class="specdec-device-switch" aria-label="Which run the page shows">'
              '<span class="specdec-device-label">Measured on</span> ' + " ".join(parts) + "</nav>")
    return output.replace(ARTICLE, ARTICLE + switch)


def figures_dir() -> Path:
    """The figures this build reads: SPECDEC_FIGURES (a copy's own, scripts/build_site.py), else docs/figures."""
    return Path(os.environ["SPECDEC_FIGURES"]) if os.environ.get("SPECDEC_FIGURES") else FIGURES


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


def plotly_bundle() -> str:
    from plotly.offline import get_plotlyjs_version

    return PLOTLY_BUNDLE.format(version=get_plotlyjs_version())


# ---------------------------------------------------------------- the markers, found by the Markdown parser


def start_page(page_path: str, markdown: str, url: str | None = None) -> None:
    """The page the next Markdown render is of: for error messages (file and line), what it uses, and its URL (for
    relative links; by default the directory URL mkdocs gives the file)."""
    if url is None:
        stem = page_path.removesuffix(".md")
        url = "" if stem == "index" else (stem.removesuffix("/index") + "/")
    _page.update(path=page_path, source=markdown, used=set(), ids={}, seen={}, url=url)


def where(text: str, malformed: bool = False) -> str:
    """page.md:LINE of `text` in the page's source: its n-th occurrence when the parser has met it n times (an
    occurrence inside code, which the parser skips, can shift this by one copy); page.md alone if not found. A
    malformed marker ("[[val:" never closed) counts only where the source holds it malformed too: the same text
    opens every well-formed [[val:...]] before it."""
    n = max(1, _page["seen"].get(text, 0))
    source = _page["source"]
    starts = [m.start() for m in re.finditer(MARKER, source) if m.group(0) == text] if malformed else []
    if not malformed:
        at = -1
        while (at := source.find(text, at + 1)) >= 0:
            starts.append(at)
    if not starts:
        return _page["path"]
    at = starts[min(n, len(starts)) - 1]
    return f"{_page['path']}:{source.count(chr(10), 0, at) + 1}"


class MarkerInline(InlineProcessor):
    """[[...]] in text that the parser has not taken as code or math: the rendered marker, stashed as raw HTML
    (a figure alone in a paragraph replaces the paragraph: the stash unwraps block-level HTML)."""

    def handleMatch(self, m: re.Match, data: str):
        _page["seen"][m.group(0)] = _page["seen"].get(m.group(0), 0) + 1
        if m.group(2) is None:
            raise PluginError(f"{where(m.group(0), malformed=True)}: malformed marker {m.group(0)!r}: a marker is [[kind:NAME]] on one "
                              f"line (write [[!...]] for the literal text, or put code in backticks)")
        return self.md.htmlStash.store(render_marker(m.group(1).strip())), m.start(0), m.end(0)


class ValuesInCode(Treeprocessor):
    """[[val:NAME]] inside a code span gets the value as code text (escaped once, by the serializer); code blocks
    (<pre>) are left as they are."""

    def run(self, root: etree.Element) -> None:
        in_blocks = {id(code) for pre in root.iter("pre") for code in pre.iter("code")}
        for code in root.iter("code"):
            if id(code) not in in_blocks and code.text and "[[val:" in code.text:
                code.text = AtomicString(VAL_IN_CODE.sub(self.value, code.text))

    @staticmethod
    def value(m: re.Match) -> str:
        _page["seen"][m.group(0)] = _page["seen"].get(m.group(0), 0) + 1
        return str(lookup_value(m.group(1).strip(), m.group(0)))


# Where the parser left a marker unrendered or put one where it breaks the page, checked on the page's HTML:
# - what the parser does not scan: raw HTML blocks, math ($...$) -- a marker there would show as literal text;
# - look-alike brackets (fullwidth, mathematical): a typo that would show as literal text too;
# - a block marker (figure, visualizer, playground) in a heading: its HTML would become the heading's id and TOC entry.
# Scripts, templates (the figures' JSON), code blocks and code spans are not page text and are not searched. The escape
# [[!...]] and values render their brackets as character references, so nothing the hook wrote is found.
NOT_TEXT = re.compile(r"<(script|template|pre|code)\b[^>]*>.*?</\1>", re.S | re.I)
LEFT_OVER = re.compile(r"(?<!\\)\[\[|［［|⟦|〚")
HEADING = re.compile(r"<(h[1-6])\b[^>]*>(.*?)</\1>", re.S | re.I)
BLOCK_MARKER = re.compile(r'data-specdec-marker="([^"]+)"')


class MarkerPlacement(Postprocessor):
    def run(self, text: str) -> str:
        for heading in HEADING.finditer(text):
            block = BLOCK_MARKER.search(heading.group(0))
            if block:
                marker = f"[[{html.unescape(block.group(1))}]]"
                raise PluginError(f"{where(marker)}: {marker} in a heading: a figure, the visualizer or a playground "
                                  "panel is a block of its own (its HTML would become the heading's id and its entry "
                                  "in the table of contents); put it on a line of its own below the heading")
        page_text = NOT_TEXT.sub("", text)
        left = LEFT_OVER.search(page_text)
        if left:
            snippet = page_text[left.start(): left.start() + 60].split("\n")[0]
            found = html.unescape(snippet.split("]]")[0] + "]]" if "]]" in snippet else snippet)
            if left.group(0) != "[[":
                raise PluginError(f"{where(left.group(0))}: {found!r} has look-alike brackets, probably a typo for a "
                                  "marker: a marker is [[kind:NAME]] with ASCII brackets")
            raise PluginError(f"{where(found.split(']]')[0])}: {found!r} was not rendered: a marker inside raw HTML or "
                              "math stays literal text (in HTML give the block the markdown attribute; in math, put "
                              "the value outside the $...$); write [[!...]] for the literal text")
        return text


class MarkerExtension(Extension):
    def extendMarkdown(self, md) -> None:
        md.inlinePatterns.register(MarkerInline(MARKER, md), "specdec-marker", MARKER_PRIORITY)
        # after the inline patterns (20), before the table of contents (5) copies a heading's text
        md.treeprocessors.register(ValuesInCode(md), "specdec-values-in-code", 15)
        # after the raw HTML (30) and the escapes (20) are back in the page text
        md.postprocessors.register(MarkerPlacement(md), "specdec-marker-placement", 5)


def lookup_value(name: str, marker: str):
    values = load_checked("values")["values"]
    if name not in values:
        near = difflib.get_close_matches(name, values, n=3)  # the nearest known names: most unknowns are typos
        hint = ": did you mean " + " or ".join(f"[[val:{n}]]" for n in near) + "?" if near else ""
        raise PluginError(f"{where(marker)}: unknown value marker [[val:{name}]]{hint} (`python -m specdec_site.values` "
                          "lists every value)")
    value = values[name]
    return fill_build_fields(value) if isinstance(value, str) and "@" in value else value


def docs_commit() -> str | None:
    """The commit of the pages being built (`git rev-parse HEAD`), marked when docs/ or mkdocs.yml differ from it;
    None outside a git checkout."""
    root = str(DOCS.parent)
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "docs", "mkdocs.yml"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + (" (with uncommitted changes to the pages)" if dirty.stdout.strip() else "")


def build_fields() -> dict[str, str | None]:
    """The fields only a build knows, which values.json holds as @NAME@ (a value written before the site is built
    cannot hold the commit that will contain it): the pages' commit, and the site's and its source's URLs where the
    environment names them (SPECDEC_SITE_URL, SPECDEC_REPO_URL: the Pages workflow sets both)."""
    if "build_fields" not in _cache:
        commit = docs_commit()
        repo = (os.environ.get("SPECDEC_REPO_URL") or "").rstrip("/")
        clean = commit.split()[0] if commit and " " not in commit else None
        _cache["build_fields"] = {"@DOCS_COMMIT@": commit, "@SITE_URL@": os.environ.get("SPECDEC_SITE_URL") or None,
                                  "@SOURCE_URL@": f"{repo}/tree/{clean}" if repo and clean else None}
    return _cache["build_fields"]


def fill_build_fields(text: str) -> str:
    """text with each @NAME@ of build_fields() filled in; a line whose field has no value here is left out."""
    fields = build_fields()
    lines = []
    for line in text.split("\n"):
        names = [name for name in fields if name in line]
        if any(fields[name] is None for name in names):
            continue
        for name in names:
            line = line.replace(name, fields[name])
        lines.append(line)
    # a dropped last field leaves the entry's last kept line with a trailing comma before "}": take it off
    out = "\n".join(lines)
    return out.replace(",\n}", "\n}")


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


# ---------------------------------------------------------------- helpers


def load_checked(name: str) -> dict:
    """A figure/values/visualizer file, checked against the contract and the artifacts it was built from."""
    if name in _cache:
        return _cache[name]
    path = figures_dir() / f"{name}.json"
    shown = path.relative_to(DOCS.parent) if path.is_relative_to(DOCS.parent) else path
    if not path.is_file():
        raise PluginError(f"figure '{name}' is missing ({shown}): {FIX}")
    try:
        data = json.loads(path.read_text())
        contract.check(name, data)
        sources = dict(data["sources"])
        traces = {t.get("type", "scatter") for t in data["figure"]["data"]} if "figure" in data else set()
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise PluginError(f"{shown} is malformed ({type(err).__name__}: {err}); {FIX}") from err
    if traces - PLOTLY_BASIC_TRACES:
        raise PluginError(f"{shown} uses trace types {sorted(traces - PLOTLY_BASIC_TRACES)}, which the vendored "
                          f"plotly.js basic bundle cannot draw: vendor a larger official bundle")
    for source, digest in sources.items():
        artifact = DOCS / source
        if not artifact.is_file():
            raise PluginError(f"figure '{name}' was built from {source}, which is missing")
        if sha256_file(artifact) != digest:
            raise PluginError(f"figure '{name}' is stale: {source} changed after it was built; {FIX}")
    _cache[name] = data
    return data


def data_folder() -> str:
    """The artifact folder the site's values were built from, relative to docs/ (where values.json's traces.json is)."""
    sources = load_checked("values")["sources"]
    folders = {source.rsplit("/", 1)[0] for source in sources if source.endswith("traces.json")}
    folder = folders.pop() if len(folders) == 1 else ""
    if not folder or folder.startswith("..") or not (DOCS / folder).is_dir():
        raise PluginError(f"the figures were built from {sorted(sources)}: the site serves its artifacts from one folder "
                          f"under docs/ (copy them to docs/data/<name>/ and {FIX} --data docs/data/<name>)")
    return folder


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
    n = _page["ids"][name] = _page["ids"].get(name, 0) + 1
    return f"fig-{name}" if n == 1 else f"fig-{name}-{n}"


def render_marker(marker: str) -> str:
    """The HTML of one marker's body (what stood between [[ and ]]): one renderer per kind (RENDERERS), loud on any
    other."""
    text = f"[[{marker}]]"
    if marker.startswith("!"):
        return page_text(f"[[{marker[1:]}]]")
    kind, _, name = marker.partition(":")
    renderer = RENDERERS.get(kind)
    if renderer is None or (name == "") != (kind in WHOLE_MARKERS):
        known = ", ".join(f"[[{k}]]" if k in WHOLE_MARKERS else f"[[{k}:NAME]]" for k in RENDERERS)
        raise PluginError(f"{where(text)}: unknown marker {text} (expected one of {known}; [[!...]] for the literal text)")
    return renderer(name, text, marker)


def render_figure(name: str, text: str, marker: str) -> str:
    if not FIGURE_NAME.fullmatch(name) or name in contract.SPECIAL:
        raise PluginError(f"{where(text)}: [[fig:{name}]] names no figure (a figure's name is lowercase letters, "
                          f"digits and _, the stem of a docs/figures/*.json figure file)")
    try:
        fig = load_checked(name)
    except PluginError as err:
        raise PluginError(f"{where(text)}: {err}") from err
    _page["used"].add("fig")
    div = html.escape(figure_id(name))
    return (f'<div class="specdec-figure" id="{div}" role="img" aria-label="{html.escape(fig["title"])}" '
            f'data-specdec-marker="{html.escape(marker)}"></div>\n'
            f'<template class="specdec-figure-data" data-for="{div}" data-search-exclude>{script_json(fig["figure"])}</template>')


def render_value(name: str, text: str, marker: str) -> str:
    return page_text(str(lookup_value(name, text)))


def render_table(name: str, text: str, marker: str) -> str:
    tables = load_checked("tables")["tables"]
    if name not in tables:
        raise PluginError(f"{where(text)}: [[table:{name}]]: tables.json has no table {name!r} (it has "
                          f"{', '.join(sorted(tables))}); {FIX}")
    _page["used"].add("table")
    table = tables[name]
    head = "".join(f"<th>{page_text(c)}</th>" for c in table["columns"])
    body = "".join("<tr>" + "".join(f"<td>{table_cell(c)}</td>" for c in row) + "</tr>" for row in table["rows"])
    # In Material's own wrappers (its script wraps only the tables Markdown makes), so that a phone scrolls it
    # sideways; no class on the <table>, which Material's table style requires.
    return (f'<div class="md-typeset__scrollwrap"><div class="md-typeset__table">'
            f'<table id="table-{html.escape(name)}" data-specdec-marker="{html.escape(marker)}">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div></div>")


def render_data_link(name: str, text: str, marker: str) -> str:
    folder = data_folder()
    if not FIGURE_NAME.fullmatch(name.replace(".", "_").replace("-", "_")) or not (DOCS / folder / name).is_file():
        raise PluginError(f"{where(text)}: [[data:{name}]]: docs/{folder}/{name} is not a file of the artifact folder "
                          "the figures were built from")
    href = get_relative_url(f"{folder}/{name}", _page["url"])
    return f'<a href="{html.escape(href)}"><code>{page_text(f"docs/{folder}/{name}")}</code></a>'


def render_visualizer(name: str, text: str, marker: str) -> str:
    if "visualizer" in _page["used"]:
        raise PluginError(f"{where(text)}: a second [[visualizer]] on one page (it is one widget with fixed ids)")
    _page["used"].add("visualizer")
    data = load_checked("visualizer")
    payload = {"runs": data["runs"], "palette": data["palette"], "layout": data["layout"]}  # the charts' margins, height
    # the widget's script and its trace-file checks load on this page alone (specdec.js: loadWidgets, withTraceFile)
    checks = html.escape(get_relative_url("assets/tracefile.js", _page["url"]))
    return ('<div id="specdec-visualizer" class="specdec-visualizer" data-specdec-marker="visualizer"></div>\n'
            f'{widget_script("assets/visualizer.js")}<div hidden data-specdec-tracefile="{checks}"></div>\n'
            f'<template id="specdec-visualizer-data" data-search-exclude>{script_json(payload)}</template>')


def widget_script(path: str) -> str:
    """The mark that makes specdec.js load a widget's script (a file under docs/assets/) on this page: a widget's
    script is loaded by the pages that show the widget, not by every page (mkdocs.yml's extra_javascript)."""
    return f'<div hidden data-specdec-script="{html.escape(get_relative_url(path, _page["url"]))}"></div>\n'


def render_playground(name: str, text: str, marker: str) -> str:
    if name not in (*PLAYGROUND_PANELS, "data"):
        raise PluginError(f"{where(text)}: unknown marker {text} (a Playground marker is "
                          f"[[playground:{'|'.join(PLAYGROUND_PANELS + ('data',))}]])")
    _page["used"].add("playground")
    if name in PLAYGROUND_PANELS:
        return f'<div id="pg-{name}-panel" class="pg-panel" data-specdec-marker="{html.escape(marker)}"></div>'
    data = load_checked("playground")
    payload = {key: data[key] for key in ("rule", "block", "speedup", "race", "palette")}
    return (widget_script("assets/playground.js") + f'<template id="specdec-playground-data" data-search-exclude '
            f'data-specdec-marker="{html.escape(marker)}">{script_json(payload)}</template>')


def render_strip(name: str, text: str, marker: str) -> str:
    """Home's strip of a recorded run, played step by step (specdec.js); no Plotly."""
    if "strip" in _page["used"]:
        raise PluginError(f"{where(text)}: a second [[strip]] on one page (it is one widget with fixed ids)")
    _page["used"].add("strip")
    data = load_checked("strip")
    return ('<div id="specdec-strip" class="specdec-strip" data-specdec-marker="strip"></div>\n'
            f'<template id="specdec-strip-data" data-search-exclude>{script_json({"run": data["run"], "palette": data["palette"]})}</template>')


# The marker kinds: [[kind:NAME]] -> its renderer; the kinds in WHOLE_MARKERS take no name ([[visualizer]]).
RENDERERS = {"fig": render_figure, "val": render_value, "table": render_table, "data": render_data_link,
             "visualizer": render_visualizer, "playground": render_playground, "strip": render_strip}
WHOLE_MARKERS = ("visualizer", "strip")
