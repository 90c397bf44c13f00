"""The anchors readers cite are complete: every numbered equation and statement of The Math and Choosing k, by its
numbered anchor and its named one, is listed in Reproduce & cite's table (the browser tier checks each listed
anchor is an id on its built page: tests/test_site.py)."""

from __future__ import annotations

import re

from specdec_site.paths import ROOT

PAGES = ("math.md", "choosing-k.md")


def anchors_on(page: str) -> set[str]:
    """The ids a page gives its numbered equations and statements: the anchor div's id and the named ids in it."""
    text = (ROOT / "docs" / page).read_text()
    found = set()
    for block in re.findall(r'<div class="eq-anchor"[^\n]*</div>', text):
        found.update(re.findall(r'id="((?:eq|stmt)-[a-z0-9-]+)"', block))
    return found


def listed() -> set[tuple[str, str]]:
    table = (ROOT / "docs" / "reproduce.md").read_text().split("### Equation anchors", 1)[1]
    return set(re.findall(r"\(((?:math|choosing-k)\.md)#([a-z0-9-]+)\)", table))


def test_every_numbered_equation_and_statement_is_in_the_anchor_table():
    table = listed()
    missing = sorted(f"{page}#{a}" for page in PAGES for a in anchors_on(page) if (page, a) not in table
                     and a != "eq-alpha")  # eq-alpha: (4)'s earlier name, named in the table's text
    assert not missing, f"anchors on the pages but not in Reproduce & cite's table: {missing}"
    assert {("math.md", f"stmt-{n}") for n in range(1, 5)} <= table
    assert {("math.md", f"eq-{n}") for n in (15, 16, 17)} <= table


def test_statements_are_numbered_in_order_with_a_named_anchor_each():
    text = (ROOT / "docs" / "math.md").read_text()
    numbers = [int(n) for n in re.findall(r'id="stmt-(\d+)"', text)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 4
    for n in numbers:
        block = re.search(rf'<div class="eq-anchor" id="stmt-{n}"[^\n]*</div>', text).group(0)
        assert re.search(r'<a id="stmt-[a-z-]+">', block), f"statement {n} has no named anchor"
        assert f"**Statement {n} (" in text, f"statement {n} is not stated under its anchor"
