"""WCAG 2.1 A and AA on every page, light and dark, at a laptop's width and a phone's: axe-core (the npm package,
package.json) injected by Playwright into the built site once every figure, formula and widget has drawn.

axe-core checks what a machine can: contrast, names, roles, focusable scroll regions, links told from text. What it
cannot (a keyboard walk, what a screen reader says of a figure) is in tests/test_site.py and test_readability.py.
"""

from __future__ import annotations

import json

import pytest
from browser import needs_chromium, open_page

from specdec_site.paths import ROOT

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
PAGES = ["", "visualizer/", "playground/", "benchmark/", "benchmark-details/", "math/", "choosing-k/", "exactness/",
         "notebooks/walkthrough/", "reproduce/", "glossary/", "source/", "404.html"]
VIEWS = [(1400, "light"), (1400, "dark"), (375, "light"), (375, "dark")]

pytestmark = [needs_chromium, pytest.mark.browser]


def axe_violations(page) -> list[dict]:
    """axe-core's WCAG 2.1 A/AA violations on the page as it is now: rule, impact, and the first nodes' selectors."""
    assert AXE.exists(), f"{AXE.relative_to(ROOT)} is missing: run `bash scripts/install.sh` (npm ci installs axe-core)"
    page.add_script_tag(content=AXE.read_text())
    result = page.evaluate("tags => axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})",
                           TAGS)
    return [{"rule": v["id"], "impact": v["impact"], "nodes": len(v["nodes"]),
             "where": [n["target"] for n in v["nodes"][:3]], "why": v["nodes"][0]["failureSummary"][:300]}
            for v in result["violations"]]


def set_scheme(page, scheme: str) -> None:
    """The reader's palette toggle, as Material keeps it: the body's scheme, the figures re-themed after it."""
    if scheme == "dark":
        page.evaluate("document.body.setAttribute('data-md-color-scheme', 'slate')")
        page.wait_for_timeout(400)  # specdec.js re-themes the figures on the attribute's change


def test_every_page_meets_wcag_21_aa_in_both_schemes_and_widths(site, browser):
    """One test, every page and view, so that a failure lists them all at once (each page opened once per view)."""
    found = {}
    for path in PAGES:
        for width, scheme in VIEWS:
            page, _ = open_page(browser, site + path, width=width, height=900 if width == 1400 else 800)
            try:
                set_scheme(page, scheme)
                violations = axe_violations(page)
            finally:
                page.close()
            if violations:
                found[f"{path or 'home'} at {width} px, {scheme}"] = violations
    summary = "; ".join(f"{where}: " + ", ".join(f"{v['rule']} ({v['nodes']})" for v in vs) for where, vs in found.items())
    assert not found, summary + "\n" + json.dumps(found, indent=1, ensure_ascii=False)[:6000]


def test_the_checker_has_power(site, browser):
    """axe-core as injected here finds what it should: text of too low contrast and an image with no name."""
    page, _ = open_page(browser, site, width=1400, height=900)
    try:
        page.evaluate("""() => {
          const p = document.createElement('p'); p.textContent = 'faint'; p.style.color = '#bbbbbb';
          p.style.background = '#ffffff'; document.querySelector('.md-content').prepend(p);
          const d = document.createElement('div'); d.setAttribute('role', 'img');
          document.querySelector('.md-content').prepend(d);
        }""")
        rules = {v["rule"] for v in axe_violations(page)}
    finally:
        page.close()
    assert {"color-contrast", "role-img-alt"} <= rules, rules
