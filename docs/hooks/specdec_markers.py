"""The markers as the Markdown parser finds them: the [[...]] pattern, the page being rendered, and the checks.

Here because finding a marker is the parser's work, apart from what a marker renders (specdec_renderers.py): an
inline pattern that runs after code spans, escapes and math are taken (MarkerInline), so code is never scanned; a
tree pass for [[val:...]] inside code spans (ValuesInCode); and a pass over the page's HTML for a marker the parser
left unrendered or put in a heading (MarkerPlacement). Every error names the page and line (where).

Loaded by docs/hooks/specdec_hook.py (load_sibling), which sets `hook`: the renderers (render_marker, lookup_value)
are read through it, when used.
"""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as etree
from typing import Any

from markdown import Extension
from markdown.inlinepatterns import InlineProcessor
from markdown.postprocessors import Postprocessor
from markdown.treeprocessors import Treeprocessor
from markdown.util import AtomicString
from mkdocs.exceptions import PluginError

__all__ = ["MARKER", "VAL_IN_CODE", "MARKER_PRIORITY", "_page", "start_page", "where", "MarkerInline",
           "ValuesInCode", "NOT_TEXT", "LEFT_OVER", "HEADING", "BLOCK_MARKER", "MarkerPlacement", "MarkerExtension"]

hook: Any = None  # the hook module's names, read when used (specdec_hook.load_sibling sets it)

# "[[" then a body without brackets or newlines, then "]]"; without the closing "]]" it is a malformed marker
MARKER = r"\[\[([^\[\]\n]*)(\]\])?"
VAL_IN_CODE = re.compile(r"\[\[val:([^\[\]\n]*)\]\]")
# after code spans (190), math (189.9) and backslash escapes (180); before references and links (170, 160)
MARKER_PRIORITY = 175
# the page being rendered (on_page_markdown): its path and source, the kinds of marker it used, the copies of each
# figure (for their ids) and of each marker text met so far (for the line of an error)
_page: dict = {"path": "?", "source": "", "used": set(), "ids": {}, "seen": {}}


# ---------------------------------------------------------------- the page being rendered


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


# ---------------------------------------------------------------- the parser's passes


class MarkerInline(InlineProcessor):
    """[[...]] in text that the parser has not taken as code or math: the rendered marker, stashed as raw HTML
    (a figure alone in a paragraph replaces the paragraph: the stash unwraps block-level HTML)."""

    def handleMatch(self, m: re.Match, data: str):
        _page["seen"][m.group(0)] = _page["seen"].get(m.group(0), 0) + 1
        if m.group(2) is None:
            raise PluginError(f"{where(m.group(0), malformed=True)}: malformed marker {m.group(0)!r}: a marker is [[kind:NAME]] on one "
                              f"line (write [[!...]] for the literal text, or put code in backticks)")
        return self.md.htmlStash.store(hook.render_marker(m.group(1).strip())), m.start(0), m.end(0)


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
        return str(hook.lookup_value(m.group(1).strip(), m.group(0)))


# ---------------------------------------------------------------- the page's HTML, checked


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
