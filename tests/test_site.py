"""The site in a real browser: Debian's Chromium driven by Playwright, serving the built site on localhost.

Builds the site from the committed artifacts (`mkdocs build --strict`), then on every page checks that the
figures render with data, KaTeX rendered the math, there are no console errors and no request leaves
localhost; clicks through the Step Visualizer; and feeds hostile token strings through it. With
SPECDEC_SCREENSHOTS=1, screenshots go to test-artifacts/screenshots/ (not committed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from browser import ROOT, SHOTS, build_site, charts_drawn, load_all_runs, needs_chromium, open_page, serve, shot
from entry import run_entries

PAGES = ["", "visualizer/", "playground/", "benchmark/", "benchmark-details/", "math/", "choosing-k/", "exactness/", "notebooks/walkthrough/",
         "reproduce/",
         "source/"]

pytestmark = [needs_chromium, pytest.mark.browser]


def markers(name: str) -> int:
    """How many figures the page's Markdown asks for (the test does not trust the HTML for this)."""
    source = {"": "index.md"}.get(name, name.rstrip("/") + ".md")
    path = ROOT / "docs" / source
    return path.read_text().count("[[fig:") if path.exists() else 0


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p or "home")
def test_page_renders_figures_math_and_stays_local(site, loaded, path):
    """At 1400 px, on its load (shared with the other checks that read the page at that width: conftest's loaded):
    the figures drawn with data, the math typeset, nothing left of a marker, a working "Skip to content", no console
    error, no failed or foreign request, the page's weight, and no table wider than its column (check_tables)."""
    page, log = loaded(path)
    expected = markers(path)
    if expected:
        page.wait_for_function(f"document.querySelectorAll('.specdec-figure.js-plotly-plot').length === {expected}",
                               timeout=15000)
        counts = page.evaluate("""() => Array.from(document.querySelectorAll('.specdec-figure'))
            .map(d => (d.data || []).reduce((n, t) => n + ((t.y || t.x || []).length), 0))""")
        assert len(counts) == expected and all(c > 0 for c in counts), counts
    text = page.inner_text("article")
    assert not any(m in text for m in ("[[fig:", "[[val:", "[[visualizer")), "an unreplaced marker reached the page"
    if path == "math/":
        assert page.locator(".katex").count() > 20
        assert page.locator(".katex-display .tag").count() >= 9, "numbered equations"
        assert page.locator("#eq-speedup").count() == 1
    assert "$$" not in text and "\\[" not in text and "\\(" not in text, "raw math left on the page"
    skip = page.get_attribute("a.md-skip", "href")  # "Skip to content" must lead somewhere (the Notebook's did not)
    target = skip.split("#", 1)[1] if "#" in skip else ""
    assert target and page.locator(f"[id='{target}']").count() == 1, skip
    assert log["errors"] == [], log["errors"]
    assert log["failed"] == [], log["failed"]
    foreign = [u for u in log["requests"] if not u.startswith(site) and not u.startswith("data:")]
    assert foreign == [], foreign
    check_page_weight(page, log, path)
    if path != "notebooks/walkthrough/":
        check_tables(page)
    shot(page, f"{(path.strip('/') or 'home').replace('/', '_')}.png")


def check_page_weight(page, log, path):
    """Every byte the page loaded (HTML, CSS, JS, fonts, data) on this first visit, in a context of its own (an
    empty cache): plotly.js (the vendored basic bundle) only on pages that draw, KaTeX only on pages with math, a
    page without figures under 1 MB. The weights are reported in test-artifacts/page-weights/."""
    page.wait_for_timeout(500)  # a request the page makes late
    sizes = {}
    for response in log["responses"]:
        try:
            sizes[response.url] = len(response.body())
        except Exception:  # redirects and aborted requests have no body
            sizes.setdefault(response.url, 0)
    urls = [r.url for r in log["responses"]]
    total = sum(sizes.values())
    plotly = [u for u in urls if "plotly" in u]
    katex = [u for u in urls if "/katex" in u]
    weight = {"bytes": total, "plotly": bool(plotly), "katex": bool(katex), "requests": len(urls)}
    folder = SHOTS.parent / "page-weights"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{(path.strip('/') or 'home').replace('/', '_')}.json").write_text(json.dumps(weight))
    print(f"\npage weight of {path or 'home'}: {weight}")
    assert bool(katex) == has_math(path), f"{path}: KaTeX must load on the pages with math only: {katex}"
    if needs_plotly(path):
        assert plotly and all("plotly.js-basic-" in u for u in plotly), (path, plotly)
    else:
        assert not plotly, f"{path} loads plotly.js without a figure: {plotly}"
        assert total < 1_000_000, f"{path} weighs {total} bytes without a figure"


def chart_data(page, div_id):
    return page.evaluate(f"() => JSON.stringify(document.getElementById('{div_id}').data)")


def test_step_visualizer_clicks_keys_and_selectors(site, browser):
    page, log = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    label = page.inner_text(".sv-step-label")
    before = chart_data(page, "sv-chart-accept")
    n_steps = page.locator(".sv-step").count()
    assert n_steps >= 3, "the recorded run should have several steps"
    # click a token of another step
    page.locator(".sv-step[data-step='1'] .sv-tok").first.click()
    assert page.inner_text(".sv-step-label") != label
    assert page.inner_text(".sv-step-label").startswith("step 2 /")
    assert chart_data(page, "sv-chart-accept") != before
    # keyboard: arrow keys move between steps
    page.locator(".sv-step[data-step='1'] .sv-tok").first.focus()
    page.keyboard.press("ArrowRight")
    assert page.inner_text(".sv-step-label").startswith("step 3 /")
    page.keyboard.press("ArrowLeft")
    assert page.inner_text(".sv-step-label").startswith("step 2 /")
    # prev/next buttons and the slider
    page.click("#sv-next")
    assert page.inner_text(".sv-step-label").startswith("step 3 /")
    page.fill("#sv-slider", "0")
    assert page.inner_text(".sv-step-label").startswith("step 1 /")
    # a table row selects a draft position for the p/q chart
    pq = chart_data(page, "sv-chart-pq")
    rows = page.locator(".sv-row")
    if rows.count() > 1:
        rows.nth(1).click()
        assert chart_data(page, "sv-chart-pq") != pq
    # the prompt and mode selectors switch runs
    strip = page.inner_text(".sv-strip")
    assert page.input_value("#sv-mode") == "sampled"
    page.select_option("#sv-mode", "greedy")
    # the chosen run is fetched from its file (Visualizer.loadRun), then drawn: wait for the strip to change
    page.wait_for_function("s => document.querySelector('.sv-strip').innerText !== s", arg=strip, timeout=15_000)
    options = page.eval_on_selector_all("#sv-prompt option", "os => os.map(o => o.value)")
    page.select_option("#sv-prompt", options[-1])
    assert page.input_value("#sv-prompt") == options[-1]
    assert log["errors"] == []
    page.close()


def test_palette_toggle_rethemes_figures(site, browser):
    page, _ = open_page(browser, site + "benchmark/")
    page.wait_for_selector(".specdec-figure .main-svg")
    color = lambda: page.evaluate("() => document.querySelector('.specdec-figure')._fullLayout.font.color")  # noqa: E731
    first = color()
    page.click("label.md-header__button[for^='__palette']:visible")
    page.wait_for_function(f"document.querySelector('.specdec-figure')._fullLayout.font.color !== {json.dumps(first)}")
    assert color() != first
    page.close()


def test_instant_navigation_renders_figures(site, browser):
    page, log = open_page(browser, site)
    page.evaluate("() => { window.__probe = 1; }")
    page.click("a.md-nav__link[href$='benchmark/']")
    page.wait_for_url("**/benchmark/")
    assert page.evaluate("() => window.__probe") == 1, "the click reloaded the page: instant navigation is off"
    # a figure draws as the reader scrolls to it (the Results' first is a screen or two down)
    scroll_through(page)
    page.wait_for_function(f"document.querySelectorAll('.specdec-figure.js-plotly-plot').length === {markers('benchmark/')}",
                           timeout=15000)
    # KaTeX, loaded on demand, also renders a page reached without a reload (and from a page without math)
    page.click("a.md-nav__link[href$='math/']")
    page.wait_for_url("**/math/")
    page.wait_for_function("document.querySelectorAll('.katex-display .tag').length >= 9", timeout=15000)
    assert log["errors"] == []
    page.close()


def scroll_through(page) -> None:
    """Scroll from the top of the page to its bottom as a reader would, a screen at a time."""
    page.evaluate("""async () => {
      for (let y = 0; y < document.documentElement.scrollHeight; y += window.innerHeight / 2) {
        window.scrollTo(0, y);
        await new Promise(r => setTimeout(r, 60));
      }
    }""")


def test_a_figure_is_drawn_when_it_nears_the_viewport_in_the_space_kept_for_it(site, browser):
    """The Results page at 1400 px: at load only the figures near the first screen are drawn; a figure far below is
    drawn when scrolled to, in the height the page reserved for it (nothing below it moves: no layout shift)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(site + "benchmark/", wait_until="load")
    page.wait_for_function("() => !!window.specdecSite", timeout=15000)
    page.wait_for_timeout(1500)
    states = page.evaluate("""() => Array.from(document.querySelectorAll('.specdec-figure')).map(d => ({
        drawn: d.classList.contains('js-plotly-plot'), top: d.getBoundingClientRect().top + window.scrollY,
        height: d.getBoundingClientRect().height}))""")
    assert not states[-1]["drawn"] and states[-1]["top"] > 3000, states[-1]
    last = len(states) - 1
    page.evaluate(f"document.querySelectorAll('.specdec-figure')[{last}].scrollIntoView()")
    page.wait_for_function(f"document.querySelectorAll('.specdec-figure')[{last}].classList.contains('js-plotly-plot')",
                           timeout=15000)
    after = page.evaluate(f"""() => {{ const d = document.querySelectorAll('.specdec-figure')[{last}];
        return {{height: d.getBoundingClientRect().height, top: d.getBoundingClientRect().top + window.scrollY}}; }}""")
    assert abs(after["height"] - states[-1]["height"]) < 2 and abs(after["top"] - states[-1]["top"]) < 2, (states[-1], after)
    page.close()


CLS = """window.__cls = 0; new PerformanceObserver(list => { for (const e of list.getEntries())
  if (!e.hadRecentInput) window.__cls += e.value; }).observe({type: 'layout-shift', buffered: true});"""


def test_a_widget_page_on_a_phone_loads_plotly_only_when_a_chart_comes_into_view(site, browser):
    """On a phone the Step Visualizer's and the Playground's charts are below the first screen: the widgets' text,
    controls and tables are built at load without plotly.js (its parse was a one-second task on a phone), and a chart
    is drawn, plotly.js loaded, when the reader scrolls to it."""
    for path, chart in (("visualizer/", "sv-chart-pq"), ("playground/", "pg-rule-chart")):
        page = browser.new_page(viewport={"width": 412, "height": 823})
        requests = []
        page.on("request", lambda r, seen=requests: seen.append(r.url))
        page.goto(site + path, wait_until="load")
        page.wait_for_function("() => !!(document.getElementById('specdec-visualizer') || {})._specdec"
                               " || !!window.specdecPlayground", timeout=15000)
        page.wait_for_timeout(1500)
        state = page.evaluate(f"""() => ({{plotly: !!window.Plotly, top: document.getElementById('{chart}').getBoundingClientRect().top,
            drawn: document.getElementById('{chart}').classList.contains('js-plotly-plot'),
            buttons: document.querySelectorAll('#specdec-visualizer button, .specdec-playground button, [id^=pg-] button').length}})""")
        assert state["top"] > 823 and not state["plotly"] and not state["drawn"] and state["buttons"] > 0, (path, state)
        assert not any("plotly" in url for url in requests), path
        page.evaluate(f"document.getElementById('{chart}').scrollIntoView()")
        page.wait_for_function(f"document.getElementById('{chart}').classList.contains('js-plotly-plot')", timeout=15000)
        page.close()


def test_homes_strip_is_laid_out_before_any_script_and_moves_nothing_as_it_plays(site, browser):
    """Home's strip was built by its script only and grew as it played: the text below it moved (a layout shift of
    0.22, then 0.37 with every step's place kept). The page now carries it whole: its height is the same without
    scripts, and playing it shifts nothing, at a phone's width and a laptop's."""
    for width, height in ((375, 700), (412, 823), (1400, 900)):
        heights = []
        for scripts in (False, True):
            context = browser.new_context(viewport={"width": width, "height": height}, java_script_enabled=scripts)
            page = context.new_page()
            page.add_init_script(CLS)
            page.goto(site, wait_until="load")
            if scripts:
                page.wait_for_function("() => !!(document.getElementById('specdec-strip') || {})._specdec", timeout=15000)
                page.wait_for_timeout(2500)  # a few steps played
                assert page.evaluate("() => window.__cls") < 0.01, width
                shown = page.evaluate("() => document.querySelectorAll('.strip-step:not(.strip-later)').length")
                assert shown >= 2, shown
            heights.append(page.evaluate("() => document.getElementById('specdec-strip').getBoundingClientRect().height"))
            context.close()
        assert abs(heights[0] - heights[1]) < 1, (width, heights)


def test_math_is_typeset_as_it_comes_near_and_all_of_it_for_print(site, browser):
    """The Math page typeset its 214 formulas in one task at load (a second on a phone): a formula is typeset when it
    comes within a screen of the view, so one far below waits until the reader scrolls there; drawAll (printing)
    typesets every one."""
    page = browser.new_page(viewport={"width": 412, "height": 823})
    page.goto(site + "math/", wait_until="load")
    page.wait_for_function("() => !!document.querySelector('.arithmatex .katex')", timeout=15000)
    page.wait_for_timeout(500)
    count = """() => { const all = Array.from(document.querySelectorAll('.arithmatex'));
        return [all.filter(e => e.querySelector('.katex')).length, all.length]; }"""
    done, total = page.evaluate(count)
    assert 0 < done < total / 2, (done, total)
    page.evaluate(f"document.querySelectorAll('.arithmatex')[{total - 1}].scrollIntoView()")
    page.wait_for_function("() => { const all = document.querySelectorAll('.arithmatex');"
                           " return !!all[all.length - 1].querySelector('.katex'); }", timeout=15000)
    page.evaluate("() => window.specdecSite.drawAll()")
    assert page.evaluate(count) == [total, total]
    page.close()


def test_every_figure_carries_its_data_as_a_table(loaded):
    """A reader who cannot see a plot gets its numbers: each figure is followed by a closed <details> whose table
    holds a row per plotted point of its named series."""
    page, _ = loaded("benchmark/")
    found = page.evaluate("""() => Array.from(document.querySelectorAll('.specdec-figure')).map(d => {
        const t = d.nextElementSibling && d.nextElementSibling.nextElementSibling;
        const points = (d.data || []).filter(tr => tr.name && Array.isArray(tr.x) && Array.isArray(tr.y))
          .reduce((n, tr) => n + Math.min(tr.x.length, tr.y.length), 0);
        return [d.id, t && t.tagName, t && t.querySelectorAll('tbody tr').length, points];
    })""")
    assert found and all(tag == "DETAILS" and rows == points > 0 for _, tag, rows, points in found), found


def test_the_keyboard_keeps_its_place_in_the_visualizer(site, browser):
    """Enter on a row of the step's table chooses it and the focus stays on that row (the table is rebuilt: the focus
    fell to <body>); in the token strip, → moves to the next step and the focus follows it."""
    page, _ = open_page(browser, site + "visualizer/")
    page.focus(".sv-detail tr.sv-row:nth-of-type(3)")
    pos = page.evaluate("() => document.activeElement.dataset.pos")
    page.keyboard.press("Enter")
    assert page.evaluate("() => [document.activeElement.tagName, document.activeElement.dataset.pos]") == ["TR", pos]
    page.focus(".sv-strip .sv-tok[tabindex='0']")
    step = page.evaluate("() => document.activeElement.closest('.sv-step').dataset.step")
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"document.activeElement.closest('.sv-step') && "
                           f"document.activeElement.closest('.sv-step').dataset.step === '{int(step) + 1}'", timeout=5000)
    page.close()


def has_math(path: str) -> bool:
    source = ROOT / "docs" / {"": "index.md"}.get(path, path.rstrip("/") + ".md")
    return source.is_file() and any(m in source.read_text() for m in ("$$", "\\("))


MATH_PAGES = [p for p in PAGES if has_math(p)]
KATEX_STYLED = """() => {
    const math = Array.from(document.querySelectorAll('.katex'));
    const sheet = document.querySelector('link[href*="katex.min.css"]');
    // styled: the MathML copy is visually hidden and the HTML rendering is not shown as plain text
    const hidden = math.every(m => !m.querySelector('.katex-mathml')
                              || getComputedStyle(m.querySelector('.katex-mathml')).position === 'absolute');
    return math.length > 0 && !!sheet && hidden;
}"""


def katex_intact(page) -> bool:
    page.wait_for_timeout(300)  # Material swaps the page in after the click; the check runs on what it left
    return page.evaluate(KATEX_STYLED)


@pytest.mark.parametrize("path", MATH_PAGES, ids=lambda p: p or "home")
def test_katex_survives_in_page_links_and_history(site, browser, path):
    """After a click on a table-of-contents link, an equation reference and a ¶ link, and after back and forward,
    every formula is still styled (the stylesheet was lost at the first same-page link: issue 43)."""
    page, log = open_page(browser, site + path)
    page.wait_for_function(KATEX_STYLED, timeout=15000)
    clicks = {"table of contents": ".md-nav--secondary a.md-nav__link[href*='#']",
              "equation reference": "article a[href*='#eq-']:not(.eq-link)",
              "¶ link": "article a.headerlink, article a.eq-link"}
    clicked = 0
    for what, selector in clicks.items():
        if page.locator(selector).count() == 0:
            continue
        # the element may sit in a collapsed sidebar or show on hover only: a click on it as a reader's would land
        page.eval_on_selector(selector, "a => a.click()")
        clicked += 1
        assert katex_intact(page), f"{path}: formulas unstyled after a click on a {what}"
    assert clicked >= 2, f"{path}: found fewer than two kinds of same-page link to click"
    page.go_back()
    assert katex_intact(page), f"{path}: formulas unstyled after going back"
    page.go_forward()
    assert katex_intact(page), f"{path}: formulas unstyled after going forward"
    assert log["errors"] == [], log["errors"]
    page.close()


HOSTILE = ["<script>window.__xss = 1</script>", "<img src=x onerror=\"window.__xss = 1\">",
           "</script><script>window.__xss = 1</script>", "&lt;b&gt;"]


def test_hostile_token_strings_are_escaped(tmp_path, browser):
    """Token text is untrusted: feed <script>/<img onerror> tokens through the visualizer."""
    work = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", work / "docs", ignore=shutil.ignore_patterns("figures"))
    for package in ("specdec", "specdec_site"):  # the Source page includes files of both
        shutil.copytree(ROOT / package, work / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "mkdocs.yml", work / "mkdocs.yml")
    traces_path = work / "docs" / "data" / "cpu" / "traces.json"
    traces = json.loads(traces_path.read_text())
    for run in traces["runs"]:  # every token of every run: whatever a page opens on shows them
        for n, key in enumerate(sorted(run["vocab"])):
            run["vocab"][key] = HOSTILE[n % len(HOSTILE)]
        run["prompt"]["text"] = HOSTILE[1]
    traces_path.write_text(json.dumps(traces))
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_figures.py"), "--data",
                             str(work / "docs" / "data" / "cpu"), "--out", str(work / "docs" / "figures")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    build_site(work, tmp_path / "site")
    server, url = serve(tmp_path / "site")
    try:
        page, log = open_page(browser, url + "visualizer/")
        page.wait_for_selector("#sv-chart-pq .main-svg")
        page.locator(".sv-step[data-step='0'] .sv-tok").first.click()
        assert page.evaluate("() => window.__xss") is None
        assert page.locator("#specdec-visualizer img").count() == 0
        assert page.locator("#specdec-visualizer script").count() == 0
        assert "onerror" in page.inner_text("#specdec-visualizer")  # shown as text, not run
        svg_text = page.evaluate("() => document.getElementById('sv-chart-pq').textContent")
        # a label (cut to 6 characters, a space shown as ␣) shows its "<" or "&" as text, whichever hostile string
        # the run's top tokens drew
        assert any(h[:4] in svg_text for h in HOSTILE), svg_text
        assert page.locator("#sv-chart-pq img, #sv-chart-pq script").count() == 0
        assert log["errors"] == []
        shot(page, "visualizer_hostile.png")
        page.close()
        # The Playground shows recorded token text too: its real-position preset and the race.
        page, log = open_page(browser, url + "playground/")
        page.wait_for_selector("#pg-rule-chart .main-svg")
        page.select_option("#pg-preset", "3")
        page.select_option("#pg-race-speed", "4")
        page.click("#pg-race-play")
        page.wait_for_timeout(1500)
        assert page.evaluate("() => window.__xss") is None
        assert page.locator(".pg-panel img, .pg-panel script").count() == 0
        assert log["errors"] == []
        page.close()
    finally:
        server.shutdown()


def test_missing_or_stale_figure_fails_the_build(tmp_path):
    work = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", work / "docs")
    shutil.copy(ROOT / "mkdocs.yml", work / "mkdocs.yml")
    for package in ("specdec", "specdec_site"):  # the Source page includes files of both
        shutil.copytree(ROOT / package, work / package, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}

    def build():
        return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(work / "mkdocs.yml"),
                               "-d", str(tmp_path / "out")], capture_output=True, text=True, cwd=work, env=env)

    (work / "docs" / "figures" / "hf_ratios.json").unlink()
    result = build()
    assert result.returncode != 0 and "figure 'hf_ratios' is missing" in result.stderr
    shutil.copy(ROOT / "docs" / "figures" / "hf_ratios.json", work / "docs" / "figures" / "hf_ratios.json")
    bench = work / "docs" / "data" / "cpu" / "policies.json"
    bench.write_text(bench.read_text().replace('"seed": 0', '"seed": 1', 1))
    result = build()
    assert result.returncode != 0 and "is stale" in result.stderr
    bench.write_text((ROOT / "docs" / "data" / "cpu" / "policies.json").read_text())
    (work / "docs" / "index.md").write_text("[[fig:no_such_figure]]\n")
    result = build()
    assert result.returncode != 0 and "figure 'no_such_figure' is missing" in result.stderr
    (work / "docs" / "index.md").write_text("[[bogus marker]]\n")
    result = build()
    assert result.returncode != 0 and "unknown marker" in result.stderr


def needs_plotly(name: str) -> bool:
    """Does the page's Markdown ask for anything drawn with plotly.js?"""
    source = {"": "index.md"}.get(name, name.rstrip("/") + ".md")
    path = ROOT / "docs" / source
    text = path.read_text() if path.exists() else ""
    return any(m in text for m in ("[[fig:", "[[visualizer]]", "[[playground:"))


def test_some_pages_draw_and_some_do_not():
    """The page-weight checks of test_page_renders_figures_math_and_stays_local cover both kinds of page."""
    assert any(needs_plotly(p) for p in PAGES) and not all(needs_plotly(p) for p in PAGES)


def test_notebook_css_pruning_changes_no_computed_style(site, browser):
    """The hook prunes mkdocs-jupyter's inlined JupyterLab stylesheet (575 KB) to the rules that can match.
    Put the whole stylesheet back in the page: no element's computed style (nor its ::before/::after) changes.

    The page is live (Material's scripts toggle classes, transitions run) and a full-stylesheet snapshot takes
    tens of seconds on a loaded CI machine, so a style may change on its own between two snapshots (CI once saw one
    element differ). Hence three snapshots: pruned, whole, pruned again. A rule the pruning lost makes the whole
    snapshot differ from BOTH pruned ones; a change on its own makes it equal one of them."""
    import mkdocs_jupyter

    full = (Path(mkdocs_jupyter.__file__).parent / "templates" / "mkdocs_html" / "assets" / "index.css").read_text()
    page, log = open_page(browser, site + "notebooks/walkthrough/")
    # The snapshots stay in the page (window.__snaps) and are compared there: each is thousands of rows of a few
    # hundred properties, tens of MB that need not be sent to Python (the test took 117 s on CI before; 74 s on this machine after;
    # 77 s -> 14 s here with the unrendered pseudo-elements reduced to their content).
    snapshot = """(name) => {
        const out = [];
        for (const el of document.querySelectorAll('body *')) {
            for (const pseudo of [null, '::before', '::after']) {
                const cs = getComputedStyle(el, pseudo);
                // A ::before/::after whose content is none is not rendered: its other properties cannot show, so
                // only its content is compared (a rule that gives it content still shows). Ten times faster.
                const unrendered = pseudo && ['none', 'normal'].includes(cs.content);
                let row = unrendered ? 'content:' + cs.content + ';' : '';
                for (let i = 0; !unrendered && i < cs.length; i++) row += cs[i] + ':' + cs.getPropertyValue(cs[i]) + ';';
                out.push([el.tagName + '.' + el.className + (pseudo || ''), row]);
            }
        }
        (window.__snaps = window.__snaps || {})[name] = out;
        return out.length;
    }"""
    compare = """() => {
        const [a, b, c] = ['pruned', 'whole', 'pruned_again'].map(n => window.__snaps[n]);
        const diff = (x, y) => { const sx = new Set(x.split(';')), sy = new Set(y.split(';'));
            return [...sx].filter(v => !sy.has(v)).concat([...sy].filter(v => !sx.has(v))).sort().slice(0, 6); };
        const drifted = [], lost = [];
        a.forEach((row, i) => {
            if (row[1] !== c[i][1]) drifted.push(row[0]);
            if (b[i][1] !== row[1] && b[i][1] !== c[i][1]) lost.push([row[0], diff(row[1], b[i][1])]);
        });
        return {sizes: [a.length, b.length, c.length], drifted: drifted, lost: lost};
    }"""
    swap = """(css) => {
        const style = Array.from(document.querySelectorAll('style')).find(s => s.textContent.includes('.jupyter-wrapper{--md-red-50'));
        if (!style) return 0;
        const before = style.textContent.length;
        style.textContent = css;
        return before;
    }"""
    page.evaluate(snapshot, "pruned")
    pruned_css = page.evaluate("""() => Array.from(document.querySelectorAll('style'))
        .find(s => s.textContent.includes('.jupyter-wrapper{--md-red-50')).textContent""")
    swapped = page.evaluate(swap, full)
    assert 0 < swapped < len(full) / 3, (swapped, len(full))
    page.evaluate(snapshot, "whole")
    assert page.evaluate(swap, pruned_css) == len(full)
    page.evaluate(snapshot, "pruned_again")
    result = page.evaluate(compare)
    n = result["sizes"][0]
    assert result["sizes"] == [n, n, n] and n > 300, result["sizes"]
    drifted = result["drifted"]
    assert len(drifted) <= 3, f"{len(drifted)} computed styles changed on their own: {drifted}"
    lost = result["lost"]
    assert lost == [], f"{len(lost)} computed styles differ from the pruned stylesheet's: {dict(lost[:3])}"
    assert log["errors"] == [], log["errors"]
    page.close()


def test_tokens_with_the_same_text_keep_separate_bars(site, browser):
    """The p/q chart is keyed by token id: two ids whose text is equal are two bars, both labelled."""
    page, log = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    page.evaluate("""() => {
        const vis = document.getElementById('specdec-visualizer')._specdec;
        const s = vis.run.trace.steps[vis.step];
        const j = Math.min(vis.pos, s.k - 1);
        const ids = s.top_p[j].ids.slice(0, 2);
        ids.forEach(id => { vis.run.vocab[String(id)] = 'same'; });
        window.__sameIds = ids;
        vis.renderStep();
    }""")
    bars = page.evaluate("""() => {
        const d = document.getElementById('sv-chart-pq').data[0];
        return {n: d.x.length, distinct: new Set(d.x).size, hover: d.hovertext};
    }""")
    assert bars["n"] == bars["distinct"], bars
    assert sum(1 for h in bars["hover"] if h == "same") == 2, bars
    assert log["errors"] == [], log["errors"]
    page.close()


# ---------------------------------------------------------------- the Step Visualizer as a reader uses it (issue 26)


def test_visualizer_arrow_keys_work_before_focusing_the_widget(site, browser):
    """The intro promises ← and →: they step through the run wherever the focus is (not in a form control)."""
    page, _ = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    step = int(page.inner_text(".sv-step-label").split()[1])  # it opens on the run's first rejection
    page.keyboard.press("ArrowRight")
    assert page.inner_text(".sv-step-label").startswith(f"step {step + 1} /")
    page.keyboard.press("ArrowLeft")
    assert page.inner_text(".sv-step-label").startswith(f"step {step} /")
    page.focus("#sv-mode")  # a select keeps its own arrows
    page.keyboard.press("ArrowRight")
    assert page.inner_text(".sv-step-label").startswith(f"step {step} /")
    page.close()


def test_a_step_without_drafts_shows_no_stale_chart(site, browser):
    """A step with k = 0 (the last token before max_new_tokens) drew nothing: its draft charts say so instead of
    showing the previous step's, and its text does not claim "All 0 drafts accepted"."""
    visualizer = json.loads((ROOT / "docs" / "figures" / "visualizer.json").read_text())
    found = [(i, j) for i, run in enumerate(visualizer["runs"]) for j, s in enumerate(run["trace"]["steps"]) if s["k"] == 0]
    assert found, "no recorded step with k = 0: nothing to test against"
    page, log = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    run, step = found[0]
    load_all_runs(page)
    page.evaluate(f"""() => {{ const v = document.getElementById('specdec-visualizer')._specdec;
        v.run = v.runs[{run}]; v.renderRun(); v.go({step}); }}""")
    assert ": no drafts" in page.inner_text(".sv-step-label")  # not "0 of 0 accepted" (issue 36)
    assert "All 0 drafts" not in page.inner_text(".sv-detail")
    assert "No drafts this step" in page.inner_text(".sv-detail")
    for div in ("sv-chart-pq", "sv-chart-accept"):
        assert page.evaluate(f"() => document.getElementById('{div}').data.length") == 0
        assert "No drafts in this step" in page.inner_text(f"#{div}")
    assert log["errors"] == []
    page.close()


def test_accept_chart_legend_colours_are_the_bars_colours(site, browser):
    page, _ = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-accept .main-svg")
    traces = page.evaluate("() => document.getElementById('sv-chart-accept').data")
    bars = [t for t in traces if t["type"] == "bar"]
    assert bars and all(isinstance(t["marker"]["color"], str) for t in bars), "one colour per legend entry"
    palette = json.loads((ROOT / "docs" / "figures" / "visualizer.json").read_text())["palette"]
    fate_colour = {"accepted": palette["accept"], "rejected": palette["reject"], "not evaluated": palette["unevaluated"]}
    for t in bars:
        fate = t["name"].split(": ", 1)[1]
        assert t["marker"]["color"] == fate_colour[fate], t["name"]
    page.close()


def test_pq_chart_labels_only_as_many_tokens_as_its_width_can_hold(site, browser):
    page, _ = open_page(browser, site + "visualizer/", width=375, height=800)
    page.wait_for_selector("#sv-chart-pq .main-svg")
    for step in range(page.locator(".sv-step").count()):
        page.evaluate(f"() => document.getElementById('specdec-visualizer')._specdec.go({step})")
        width = page.evaluate("() => document.getElementById('sv-chart-pq').clientWidth")
        if page.evaluate("() => document.getElementById('sv-chart-pq').data.length") == 0:
            continue  # a step without drafts
        charts_drawn(page)  # the chart is drawn, then redrawn for its plot area's measured width
        boxes = page.evaluate("""() => Array.from(document.querySelectorAll('#sv-chart-pq .xtick text'))
            .filter(t => t.textContent.trim()).map(t => { const r = t.getBoundingClientRect(); return [r.left, r.right]; })""")
        ticks = page.evaluate("() => document.getElementById('sv-chart-pq').layout.xaxis.ticktext.length")
        assert len(boxes) == ticks >= 1, (step, boxes, ticks)
        clashes = [(a, b) for a, b in zip(boxes, boxes[1:]) if a[1] > b[0] + 0.5]  # labels left to right
        assert clashes == [], (step, width, clashes)
    page.close()


def committed_trace_file(tmp_path, runs=2, edit=None) -> Path:
    """A trace file as the trace command writes it (the traces artifact's format), from the committed traces."""
    doc = json.loads((ROOT / "docs" / "data" / "cpu" / "traces.json").read_text())
    doc["runs"] = doc["runs"][:runs]
    if edit:
        edit(doc)
    path = tmp_path / "my-trace.json"
    path.write_text(json.dumps(doc))
    return path


def open_trace(page, path) -> str:
    """Opens a trace file in the visualizer and returns what its status line says once the file is read. The line is
    emptied first, so a second open waits for its own message, not the previous file's (openFile reads the file
    asynchronously, saying "Reading ..." meanwhile, with aria-busy on the line)."""
    page.evaluate("() => { document.querySelector('.sv-file-status').textContent = ''; }")
    page.set_input_files("#sv-file", str(path))
    page.wait_for_function("() => { const p = document.querySelector('.sv-file-status'); "
                           "return p.textContent.length > 0 && p.getAttribute('aria-busy') !== 'true'; }")
    return page.inner_text(".sv-file-status")


def test_a_trace_file_opens_in_the_visualizer_and_steps_through(site, browser, tmp_path):
    def edit(doc):
        doc["runs"][0]["prompt"]["id"] = "my-own-prompt"
        doc["metadata"]["models"]["target"]["name"] = "some/other-target"

    path = committed_trace_file(tmp_path, edit=edit)
    page, log = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    status = open_trace(page, path)
    assert status.startswith("Opened my-trace.json: 2 runs; target some/other-target") and "nothing was uploaded" in status
    options = page.eval_on_selector_all("#sv-prompt option", "os => os.map(o => o.textContent)")
    assert any("my-own-prompt" in o for o in options) and len(options) <= 2
    page.wait_for_selector("#sv-chart-pq .main-svg")
    n_steps = page.locator(".sv-step").count()
    assert n_steps == len(json.loads(path.read_text())["runs"][0]["trace"]["steps"])
    page.click("#sv-next")
    assert page.inner_text(".sv-step-label").startswith(f"step 2 / {n_steps}")
    page.keyboard.press("ArrowRight")
    assert page.inner_text(".sv-step-label").startswith(f"step 3 / {n_steps}")
    assert log["errors"] == []
    shot(page, "visualizer_opened_file.png")
    page.close()


MALFORMED_FILES = [
    ("not json at all", "is not JSON"),
    (json.dumps({"runs": []}), "it has no runs"),
    (json.dumps([1, 2]), "it has no runs"),
    (json.dumps({"runs": [{"prompt": {"id": "x", "text": "y"}, "mode": "greedy", "vocab": {}, "trace": {"k": 2, "steps": [
        {"k": 2, "draft_tokens": [1], "n_accepted": 0}]}}]}), "step 1: k and draft_tokens disagree"),
]


def test_a_malformed_trace_file_is_refused_with_a_message(site, browser, tmp_path):
    """Each of MALFORMED_FILES, opened one after the other in one page: refused with its message, the page's runs
    kept (as test_trace_files_that_contradict_themselves_are_refused_at_once does for files that parse)."""
    page, log = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    strip = page.inner_text(".sv-strip")
    path = tmp_path / "bad.json"
    for content, message in MALFORMED_FILES:
        path.write_text(content)
        status = open_trace(page, path)
        assert status.startswith("Not opened: bad.json is not a specdec trace file") and message in status, status
        assert page.inner_text(".sv-strip") == strip, (message, "the page's runs are gone")
    assert log["errors"] == []
    page.close()


def _step(doc, run=0, where=None):
    """The first step of the run that satisfies `where` (default: a step with a rejection)."""
    steps = doc["runs"][run]["trace"]["steps"]
    return next(s for s in steps if (where or (lambda s: s["n_accepted"] < s["k"]))(s))


def _set(target, **fields):
    target.update(fields)


def _zero_draws(step):
    step["uniforms"] = [0.0] * step["k"]


# Files that pass the shape checks but cannot be drawn, or contradict themselves (issue 48, cases 14-17): each is
# refused with a message, the page's runs stay, and the page answers at once.
HOSTILE_FILES = {
    "policy as an object": (lambda d: _set(d["runs"][0], policy={"toString": 1}), "policy must be a string"),
    "domain as an object": (lambda d: _set(d["runs"][0], domain={"toString": 1}), "domain must be a string"),
    "a 200,000-id top list": (lambda d: _set(_step(d)["top_p"][0], ids=list(range(200000)), probs=[0.0] * 200000),
                              "a top list of 200000 ids"),
    "a 2,000-id top list": (lambda d: _set(_step(d)["top_q"][0], ids=list(range(2000)), probs=[0.0] * 2000),
                            "a top list of 2000 ids"),
    "k = 100,000": (lambda d: _set(_step(d), k=100000), "k must be an integer in [0, 64]"),
    "0 accepted with a bonus": (lambda d: _set(_step(d, where=lambda s: s["n_accepted"] == s["k"] > 0), n_accepted=0),
                                "yet a bonus token"),
    "all accepted with no bonus": (lambda d: _set(_step(d), n_accepted=_step(d)["k"]), "yet a resampled token"),
    "a rejection drawn below min(1, p/q)": (lambda d: _zero_draws(_step(d, run=1, where=lambda s: s["n_accepted"] < s["k"]
                                                                     and s["accept_probs"][s["n_accepted"]] > 0.01)),
                                            "its draw r is below min(1, p/q)"),
    "an accept probability that is not min(1, p/q)": (lambda d: _step(d)["accept_probs"].__setitem__(0, 0.5 if
                                                      _step(d)["accept_probs"][0] < 0.4 else 0.0), "not min(1, p/q)"),
    "an id outside the vocab": (lambda d: _step(d)["draft_tokens"].__setitem__(0, 10 ** 9), "is not in the run's vocab"),
    "a negative id": (lambda d: _step(d)["emitted"].__setitem__(0, -1), "emitted is not a list of ids"),
    "an id of 1e300": (lambda d: _set(_step(d), resampled_token=1e300), "must be ids or null"),
    "recorded fates that contradict the counts": (lambda d: _step(d)["fates"].__setitem__(_step(d)["n_accepted"], "accepted"),
                                                  "the recorded fates contradict"),
    # token-tree steps, checked by the tree rule's own terms (the committed traces' tree runs)
    "a chain step given parents": (lambda d: _set(_step(d), parents=[-1] * _step(d)["k"]), "the path must descend"),
    "a tree path that skips a level": (lambda d: _set(_tree_step(d), path=_tree_step(d)["path"][1:]),
                                       "the path must descend"),
    "a tree of 257 nodes": (lambda d: _set(_tree_step(d), k=257), "a tree step has 0 to 256 nodes"),
    "a tree of -1 nodes": (lambda d: _set(_tree_step(d), k=-1), "a tree step has 0 to 256 nodes"),
    "a tree of 0 nodes that lists one": (lambda d: _set(_tree_step(d), k=0), "parents must list"),
    "a tree node whose parent comes after it": (lambda d: _tree_step(d)["parents"].__setitem__(0, 5),
                                                "parents must list"),
    "a tree step with a draw too few": (lambda d: _tree_step(d)["uniforms"].pop(), "one draw per node"),
    "a tree's resampled token that is a missed child": (lambda d: _missed_child(_tree_step(d, rejected=True)),
                                                        "is one of the children the draw missed"),
    # block verification's steps (the committed traces' block runs), checked by its own terms
    "a block weight that is not the capped product of p/q": (
        lambda d: _block_step(d)["block_weights"].__setitem__(0, 0.5 if _block_step(d)["block_weights"][0] < 0.4
                                                               else 0.01), "not the capped product of p/q"),
    "a block step that keeps a shorter prefix than its draws": (
        lambda d: _block_step(d, longer=True)["uniforms"].__setitem__(-1, 0.0), "but its draw is below h"),
    "an unknown verification rule": (lambda d: (_block_step(d), _set(_block_run(d)["trace"], verify="blocky")),
                                     "trace.verify must be"),
    # either tree rule's probabilities, checked as a chain's are (the target cannot draw a token of p = 0; a node's
    # children are distinct tokens; sample and match accepts a child with p(x) at its parent)
    "a sample-and-match path node of p = 0": (lambda d: _on_path(_tree_step(d), p=0.0), "yet its p(x) is 0"),
    "a sampled-children path node of p = 0": (lambda d: _on_path(_rejection_step(d, "leaf"), p=0.0), "yet its p(x) is 0"),
    "two ranked children of one node with one token": (lambda d: _same_token(_tree_step(d)),
                                                        "are children of one node with one token id"),
    "two sampled children of one node with one token": (lambda d: _same_token(_rejection_step(d, "children rejected")),
                                                         "are children of one node with one token id"),
    "a sample-and-match accept prob that is not p(x)": (
        lambda d: _tree_step(d)["accept_probs"].__setitem__(1, 0.5 if _tree_step(d)["p_draft_tokens"][1] < 0.4 else 0.0),
        "not the node's p(x)"),
    # recursive rejection sampling ("sampled children", tree_rule "rejection"), by its own terms: the nodes it tried,
    # one draw each in that order and one for the step's own token, the first child's min(1, p/q)
    "an accepted sampled child whose draw is above its accept prob": (
        lambda d: _rejection_step(d, "leaf")["uniforms"].__setitem__(1, 0.9), "node 2 is accepted, but its draw r is not below"),
    "a rejected sampled child whose draw is below its accept prob": (
        lambda d: _rejection_step(d, "root rejected")["uniforms"].__setitem__(1, 0.1), "node 2 is rejected, but its draw r is below"),
    "an untried node with an accept prob": (lambda d: _rejection_step(d, "leaf")["accept_probs"].__setitem__(2, 0.5),
                                            "node 3 was never tried, yet accept_probs[2] is a number"),
    "a tried node with a null accept prob": (lambda d: _rejection_step(d, "leaf")["accept_probs"].__setitem__(0, None),
                                             "the rule tried node 1, yet accept_probs[0] is null"),
    "a chain step with a null accept prob": (lambda d: _step(d)["accept_probs"].__setitem__(0, None),
                                             "accept_probs needs k numbers"),
    "a sampled-children step with a draw too many": (lambda d: _rejection_step(d, "root rejected")["uniforms"].append(0.5),
                                                     "one draw per node the rule tried"),
    "a sampled-children step with a draw too few": (lambda d: _rejection_step(d, "children rejected")["uniforms"].pop(),
                                                    "one draw per node the rule tried"),
    "a first sampled child whose accept prob is not min(1, p/q)": (
        lambda d: _rejection_step(d, "leaf")["accept_probs"].__setitem__(0, 0.25), "not min(1, p/q) = 0.2000"),
    "a first sampled child of a path node whose accept prob is not min(1, p/q)": (
        lambda d: _rejection_step(d, "children rejected")["accept_probs"].__setitem__(2, 0.7), "not min(1, p/q) = 0.7500"),
    "a first sampled child of q = 0": (lambda d: _rejection_step(d, "leaf")["q_draft_tokens"].__setitem__(0, 0.0),
                                      "was drawn from q, yet its q(x) is 0"),
    "sampled-children fates that contradict the nodes tried": (
        lambda d: _rejection_step(d, "children rejected")["fates"].__setitem__(1, "rejected"), "the recorded fates contradict"),
    "sampled-children fates with an untried node rejected": (
        lambda d: _rejection_step(d, "leaf")["fates"].__setitem__(3, "rejected"), "the recorded fates contradict"),
    "an unknown tree rule": (lambda d: _set(_rejection_step(d, "leaf"), tree_rule="rejections"), "tree_rule must be"),
    "a chain step with the rejection tree rule": (lambda d: _set(_step(d), tree_rule="rejection"), "tree_rule must be"),
    # every field a renderer reads, of its type and range (a string position drew "NaN")
    "prompt_length as an object": (lambda d: _set(d["runs"][0]["trace"], prompt_length={"valueOf": 1}),
                                   "trace.prompt_length must be a non-negative integer"),
    "prompt_length as a string": (lambda d: _set(d["runs"][0]["trace"], prompt_length="28"),
                                  "trace.prompt_length must be a non-negative integer"),
    "a negative prompt_length": (lambda d: _set(d["runs"][0]["trace"], prompt_length=-3),
                                 "trace.prompt_length must be a non-negative integer"),
    "a tree run without prompt_length": (lambda d: (_tree_step(d), _tree_run(d)["trace"].pop("prompt_length")),
                                         "trace.prompt_length must be a non-negative integer"),
    "a chain step's position as a string": (lambda d: _set(_step(d), position="3"), "position must be a non-negative integer"),
    "a tree step's position as an object": (lambda d: _set(_tree_step(d), position={"valueOf": 1}),
                                            "position must be a non-negative integer"),
    "a tree step without a position": (lambda d: _tree_step(d).pop("position"), "position must be a non-negative integer"),
    "a negative trace k": (lambda d: _set(d["runs"][0]["trace"], k=-1), "trace.k must be an integer in [0, 256]"),
    "a budget as a string": (lambda d: _set(_step(d), budget="4"), "budget must be a non-negative integer"),
    "a step index as a fraction": (lambda d: _set(_step(d), step=1.5), "step must be a non-negative integer"),
    "a source as an object": (lambda d: _set(_step(d), source={"toString": 1}), "source must be a string"),
    "draft seconds as a string": (lambda d: _set(_step(d), draft_seconds="0.1"), "draft_seconds must be a number of seconds"),
    "a drafter as an object": (lambda d: _set(d["runs"][0]["trace"], drafter={"toString": 1}), "trace.drafter must be a string"),
    "a trace's policy as a list": (lambda d: _set(d["runs"][0]["trace"], policy=["fixed"]), "trace.policy must be a string"),
    # a key that reaches a prototype, wherever it is: refused, whatever it holds (it had made a missing field read
    # from it: a step's fates, a run's policy)
    "a __proto__ key in the file": (lambda d: _set(d, __proto__={"runs": d.pop("runs")}), "a key named __proto__"),
    "a __proto__ key in a run": (lambda d: _set(d["runs"][0], __proto__={"policy": d["runs"][0].pop("policy")}),
                                 "a key named __proto__"),
    "a __proto__ key in a trace": (lambda d: _set(d["runs"][0]["trace"], __proto__={"verify": "block"}), "a key named __proto__"),
    "a __proto__ key in a step": (lambda d: _set(_step(d), __proto__={"fates": _step(d).pop("fates")}), "a key named __proto__"),
    "a constructor key in the metadata": (lambda d: _set(d["metadata"], constructor={"name": "x"}), "a key named constructor"),
    "a prototype key in a top list": (lambda d: _set(_step(d)["top_p"][0], prototype={}), "a key named prototype"),
}


def _block_run(doc):
    """The file's first block-verification run, the committed traces' block runs added if it has none."""
    if not any(run["trace"].get("verify") == "block" for run in doc["runs"]):
        committed = json.loads((ROOT / "docs" / "data" / "cpu" / "traces.json").read_text())["runs"]
        doc["runs"] += [run for run in committed if run["trace"].get("verify") == "block"]
    return next(run for run in doc["runs"] if run["trace"].get("verify") == "block")


def _block_step(doc, longer=False):
    """The first step of the file's first block run with drafts (with longer: one that kept fewer than k and whose
    last prefix has h above 0.01, so that a draw of 0 there claims a longer prefix)."""
    for s in _block_run(doc)["trace"]["steps"]:
        if s["k"] and (not longer or (s["n_accepted"] < s["k"] and s["stop_probs"][-1] > 0.01)):
            return s
    raise AssertionError("no such block step in the committed traces")


def _tree_step(doc, rejected=False):
    """The first token-tree step of the file (with rejected: one whose path ends above a child), whose runs get the
    committed traces' tree runs first if they have none."""
    if not any(run["trace"].get("drafter") == "tree" for run in doc["runs"]):
        committed = json.loads((ROOT / "docs" / "data" / "cpu" / "traces.json").read_text())["runs"]
        doc["runs"] += [run for run in committed if run["trace"].get("drafter") == "tree"]
    for run in doc["runs"]:
        for s in run["trace"]["steps"]:
            if s.get("parents") and (not rejected or s["resampled_token"] is not None):
                return s
    raise AssertionError("no token-tree step in the committed traces")


def _tree_run(doc):
    """The file's first token-tree run (after _tree_step has added the committed ones if it had none)."""
    return next(run for run in doc["runs"] if run["trace"].get("drafter") == "tree")


def _on_path(step, p):
    step["p_draft_tokens"][step["path"][0]] = p


def _same_token(step):
    """Gives a node the token of its first sibling (two children of one node: the prefix's, or a node's)."""
    j = next(j for j in range(step["k"]) if step["parents"][j] in step["parents"][:j])
    sibling = step["parents"].index(step["parents"][j])
    step["draft_tokens"][j] = step["draft_tokens"][sibling]


NE = "not evaluated"


def _zero_node_step(token, rule=None) -> dict:
    """A tree step of 0 nodes, as the decoder writes one when a step's node budget is 0 (one token left before
    max_new_tokens, or a tree shape whose ranks all lie past the vocabulary): nothing drafted, the target's one draw
    (`token`) the step's bonus."""
    step = {"step": 0, "position": 0, "k": 0, "draft_tokens": [], "q_draft_tokens": [], "p_draft_tokens": [],
            "accept_probs": [], "uniforms": [0.37], "accepted": [], "n_accepted": 0, "resampled_token": None,
            "bonus_token": token, "emitted": [token], "top_p": [{"ids": [token], "probs": [1.0]}], "top_q": [],
            "top_residual": None, "draft_seconds": 0.0, "verify_seconds": 0.01, "source": "model", "budget": 0,
            "fates": [], "extra_fate": "bonus", "parents": [], "path": []}
    if rule:
        step["tree_rule"] = rule
    return step


def _numbered(steps):
    """Steps given their index and position (the index among the new tokens of the first token each emits)."""
    position = 0
    for i, step in enumerate(steps):
        step["step"], step["position"] = i, position
        position += len(step["emitted"])
    return steps


# Hand-made steps of recursive rejection sampling ("sampled children", tree_rule "rejection"): 4 nodes, two children
# of the prefix (nodes 1, 2) and two of node 1 (nodes 3, 4), drawn from q; p and q of each node's token, so that the
# first child tried at the prefix is accepted with min(1, 0.1/0.5) = 0.2 and at node 1 with min(1, 0.3/0.4) = 0.75
# (a later sibling's probability comes from a residual: any number). Each: its path, accept_probs (None: not tried),
# the draws in the order tried then the step's own token's, the fates, and whether that token is a bonus.
REJECTION_STEPS = {
    # node 1 rejected (0.9 >= 0.2), node 2 accepted (0.3 < 0.75), a leaf: a bonus
    "leaf": ([1], [0.2, 0.75, None, None], [0.9, 0.3, 0.42], ["rejected", "accepted", NE, NE], True),
    # both children of the prefix rejected: the step's token drawn from the residual
    "root rejected": ([], [0.2, 0.75, None, None], [0.9, 0.8, 0.5], ["rejected", "rejected", NE, NE], False),
    # node 1 accepted (0.1 < 0.2), both of its children rejected (0.8 >= 0.75, 0.9 >= 0.5): resampled
    "children rejected": ([0], [0.2, None, 0.75, 0.5], [0.1, 0.8, 0.9, 0.33], ["accepted", NE, "rejected", "rejected"], False),
}


def _rejection_steps(run) -> list[dict]:
    """REJECTION_STEPS, then a sampled-children step of 0 nodes, with token ids of the run's vocab."""
    t0, t1, t2, t3, y = sorted(int(i) for i in run["vocab"])[:5]
    tokens = [t0, t1, t2, t3]

    def top(*pairs):
        return {"ids": [i for i, _ in pairs], "probs": [v for _, v in pairs]}

    tops = [top((t1, 0.6), (y, 0.3), (t0, 0.1)), top((y, 0.5), (t2, 0.3), (t3, 0.2)), top((y, 0.7), (t0, 0.3)),
            top((y, 1.0)), top((y, 1.0))]
    steps = []
    for path, accept, uniforms, fates, bonus in REJECTION_STEPS.values():
        steps.append({"step": 0, "position": 0, "k": 4, "draft_tokens": list(tokens), "q_draft_tokens": [0.5, 0.3, 0.4, 0.1],
                      "p_draft_tokens": [0.1, 0.6, 0.3, 0.2], "accept_probs": list(accept), "uniforms": list(uniforms),
                      "accepted": [j in path for j in range(4)], "n_accepted": len(path),
                      "resampled_token": None if bonus else y, "bonus_token": y if bonus else None,
                      "emitted": [tokens[j] for j in path] + [y], "top_p": [dict(t) for t in tops], "top_q": [],
                      "top_residual": None if bonus else top((y, 1.0)), "draft_seconds": 0.01, "verify_seconds": 0.02,
                      "source": "model", "budget": 4, "fates": list(fates), "extra_fate": "bonus" if bonus else "resampled",
                      "parents": [-1, -1, 0, 0], "path": list(path), "tree_rule": "rejection"})
    return _numbered(steps + [_zero_node_step(y, rule="rejection")])


def _rejection_run(doc):
    """The file's sampled-children run (a committed sampled tree run whose steps are _rejection_steps), added if the
    file has none."""
    for run in doc["runs"]:
        if run["id"].endswith("-rejection"):
            return run
    committed = json.loads((ROOT / "docs" / "data" / "cpu" / "traces.json").read_text())["runs"]
    run = next(r for r in committed if r["trace"]["drafter"] == "tree" and r["mode"] == "sampled")
    run["id"] += "-rejection"
    run["trace"]["steps"] = _rejection_steps(run)
    doc["runs"].append(run)
    return run


def _rejection_step(doc, name):
    return _rejection_run(doc)["trace"]["steps"][list(REJECTION_STEPS).index(name)]


def _missed_child(step):
    last = step["path"][-1] if step["path"] else -1
    child = next(j for j, a in enumerate(step["parents"]) if a == last)
    step["resampled_token"] = step["draft_tokens"][child]
    if len(step["emitted"]) == len(step["path"]) + 1:
        step["emitted"][-1] = step["draft_tokens"][child]


def test_trace_files_that_contradict_themselves_are_refused_at_once(site, browser, tmp_path):
    page, log = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    strip = page.inner_text(".sv-strip")
    for name, (edit, message) in HOSTILE_FILES.items():
        path = committed_trace_file(tmp_path, edit=edit)
        started = __import__("time").perf_counter()
        status = open_trace(page, path)
        took = __import__("time").perf_counter() - started
        assert status.startswith("Not opened: my-trace.json is not a specdec trace file") and message in status, (name, status)
        assert took < 5, f"{name}: {took:.1f} s to refuse"
        assert page.inner_text(".sv-strip") == strip, f"{name}: the page's own runs are gone"
    assert log["errors"] == [], log["errors"]
    page.close()


def _no_bad_numbers(page):
    text = page.inner_text(".sv-detail")
    assert "NaN" not in text and "null" not in text and "undefined" not in text and "Infinity" not in text, text


def test_tree_steps_of_0_nodes_and_sampled_children_open_and_draw(site, browser, tmp_path):
    """Real steps the checks refused or the renderers could not draw: a token tree's step of 0 nodes (its budget was
    0), first and last in a run, and recursive rejection sampling's steps (tree_rule "rejection": a leaf accepted,
    every child of the prefix rejected, a node accepted and its children rejected, 0 nodes), whose untried nodes have
    no acceptance probability: each file opens, each step draws with no page error and no "NaN" or "null", an untried
    node's probability reads "not tried". A token whose text is "__proto__" is text like any other."""
    def zero_nodes(doc):
        run = next(r for r in json.loads((ROOT / "docs" / "data" / "cpu" / "traces.json").read_text())["runs"]
                   if r["trace"]["drafter"] == "tree")
        steps = run["trace"]["steps"]
        first, last = steps[0]["emitted"][0], steps[-1]["emitted"][-1]
        run["vocab"][str(last)] = "__proto__"
        run["trace"]["steps"] = _numbered([_zero_node_step(first)] + steps + [_zero_node_step(last)])
        doc["runs"] = [run]

    def sampled_children(doc):
        doc["runs"] = [_rejection_run(doc)]

    page, log = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    # the tree run with a step of 0 nodes first and last: it opens on the first
    path = committed_trace_file(tmp_path, edit=zero_nodes)
    n_steps = len(json.loads(path.read_text())["runs"][0]["trace"]["steps"])
    assert open_trace(page, path).startswith("Opened my-trace.json: 1 run")
    for step in range(n_steps):
        if step:
            page.click("#sv-next")
        label = page.inner_text(".sv-step-label")
        assert label.startswith(f"step {step + 1} / {n_steps}: "), label
        if step in (0, n_steps - 1):
            assert ": no drafts (a tree of 0 nodes)" in label, label
            assert "No nodes this step" in page.inner_text(".sv-extra") and page.locator(".sv-tree .sv-row").count() == 0
            assert "No nodes this step" in page.inner_text(".sv-mask")
        _no_bad_numbers(page)
    charts_drawn(page)
    assert "__proto__" in page.inner_text(".sv-strip")
    # the sampled-children run: each step by its own rule
    path = committed_trace_file(tmp_path, edit=sampled_children)
    steps = json.loads(path.read_text())["runs"][0]["trace"]["steps"]
    assert open_trace(page, path).startswith("Opened my-trace.json: 1 run")
    assert "sampled children" in page.eval_on_selector("#sv-prompt", "s => s.selectedOptions[0].textContent")
    for i, step in enumerate(steps):
        if i:
            page.click("#sv-next")
        extra = page.inner_text(".sv-extra")
        if step["k"]:
            assert extra.startswith("Recursive rejection sampling") and extra.count("(r = ") == len(step["uniforms"]), extra
            cells = page.eval_on_selector_all(".sv-tree .sv-row", "rows => rows.map(r => r.children[4].textContent)")
            assert cells.count("not tried") == step["accept_probs"].count(None) > 0, cells
            fates = page.eval_on_selector_all(".sv-tree .sv-row", "rows => rows.map(r => r.lastElementChild.textContent)")
            assert sorted(fates) == sorted(step["fates"]), fates
        else:
            assert extra.startswith("No nodes this step"), extra
        _no_bad_numbers(page)
        charts_drawn(page)
    assert log["errors"] == [], log["errors"]
    page.close()


def test_a_file_says_it_is_read_at_once_and_a_failed_draw_keeps_the_page(site, browser, tmp_path):
    """A big file says "Reading NAME (size)..." before anything else (a 52 MB one took 14.5 s before its first word);
    a file the page fails to draw (a renderer made to throw once) is refused with the page's runs drawn as they were;
    a __proto__ key written with an escape is the key it spells."""
    page, log = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    strip, label = page.inner_text(".sv-strip"), page.inner_text(".sv-step-label")
    options = page.eval_on_selector_all("#sv-prompt option", "os => os.map(o => o.value)")
    path = committed_trace_file(tmp_path)
    path.write_text(path.read_text().replace('"prompt_length"', '"\\u005f_proto__": {"verify": "block"}, "prompt_length"', 1))
    assert '"\\u005f_proto__"' in path.read_text()
    status = open_trace(page, path)
    assert status.startswith("Not opened: my-trace.json is not a specdec trace file: it has a key named __proto__"), status
    assert page.inner_text(".sv-strip") == strip
    # a renderer that throws while the file's runs are drawn: the page's come back, drawn at the step they were on
    page.evaluate("""() => { const v = document.getElementById('specdec-visualizer')._specdec;
        v.renderRun = function () { delete v.renderRun; throw new Error('a renderer that throws'); }; }""")
    status = open_trace(page, committed_trace_file(tmp_path))
    assert status == ("Not opened: my-trace.json could not be drawn (a renderer that throws); the page's runs are kept"), status
    assert page.inner_text(".sv-strip") == strip and page.inner_text(".sv-step-label") == label
    assert page.eval_on_selector_all("#sv-prompt option", "os => os.map(o => o.value)") == options
    page.click("#sv-next")  # the widget still answers
    assert page.inner_text(".sv-step-label").startswith(f"step {int(label.split()[1]) + 1} /")
    # a 20 MB file (its metadata padded): "Reading", then its own message
    path = committed_trace_file(tmp_path, edit=lambda d: _set(d["metadata"], notes="x" * 20_000_000))
    page.evaluate("""() => { window.svStatuses = []; new MutationObserver(() => {
        const p = document.querySelector('.sv-file-status'), t = p ? p.textContent : '';
        if (t && t !== window.svStatuses[window.svStatuses.length - 1]) window.svStatuses.push(t);
      }).observe(document.getElementById('specdec-visualizer'), { subtree: true, childList: true, characterData: true }); }""")
    assert open_trace(page, path).startswith("Opened my-trace.json: 2 runs")
    statuses = page.evaluate("() => window.svStatuses")
    size = round(path.stat().st_size / 2 ** 20)
    assert statuses[0] == f"Reading my-trace.json ({size} MB)\u2026" and statuses[-1].startswith("Opened"), statuses
    assert log["errors"] == [], log["errors"]
    page.close()


def test_a_hostile_trace_file_shows_its_text_and_runs_nothing(site, browser, tmp_path):
    def edit(doc):
        for run in doc["runs"]:
            for n, key in enumerate(sorted(run["vocab"])):
                run["vocab"][key] = HOSTILE[n % len(HOSTILE)]
            run["prompt"]["text"] = HOSTILE[1]
            run["prompt"]["id"] = HOSTILE[0]
        doc["metadata"]["models"]["target"]["name"] = HOSTILE[1]

    page, log = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    assert open_trace(page, committed_trace_file(tmp_path, edit=edit)).startswith("Opened")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    page.locator(".sv-step[data-step='0'] .sv-tok").first.click()
    assert page.evaluate("() => window.__xss") is None
    assert page.locator("#specdec-visualizer img, #specdec-visualizer script").count() == 0
    assert "onerror" in page.inner_text("#specdec-visualizer")
    assert log["errors"] == []
    page.close()


def test_the_visualizer_fates_are_the_race_fates_on_every_committed_step(loaded):
    """stepFates (the visualizer's script) and site_files.step_fates (the Playground's race) are one rule."""
    from specdec_site.site.files import step_fates

    page, _ = loaded("visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    load_all_runs(page)
    runs = page.evaluate("() => document.getElementById('specdec-visualizer')._specdec.runs")
    expected = json.loads((ROOT / "docs" / "data" / "cpu" / "traces.json").read_text())["runs"]
    for run, committed in zip(runs, expected, strict=True):
        for step, raw in zip(run["trace"]["steps"], committed["trace"]["steps"], strict=True):
            assert {"fates": step["fates"], "extra_fate": step["extra_fate"]} == step_fates(raw)


def test_under_a_sub_path_the_404_page_works_and_navigation_is_instant(site, site_folder, browser):
    """Project pages are served at /<repo>/: site_url (from SPECDEC_SITE_URL, as the Pages workflow sets it) gives
    the 404 page its links and turns on Material's instant navigation and the sitemap. The session's site is built
    and served so (tests/conftest.py), the one build every test of the site shares."""
    url = site
    assert url.endswith("/specdec/")
    assert f"<loc>{url}benchmark/</loc>" in (site_folder / "sitemap.xml").read_text()
    # the 404 page; every page is loaded, with no failed request and no console error, by
    # test_page_renders_figures_math_and_stays_local on this same sub-path
    for path in ["no-such-page/"]:
        page, log = open_page(browser, url + path)
        page.wait_for_timeout(200)
        failed = [f for f in log["failed"] if not (path == "no-such-page/" and f == f"404 {url}{path}")]
        errors = [e for e in log["errors"] if not (path == "no-such-page/" and "status of 404" in e)]
        assert failed == [] and errors == [], (path, failed, errors)
        if path == "no-such-page/":
            links = page.eval_on_selector_all("a[href]", "as => as.map(a => a.href)")
            local = sorted({link.split("#")[0] for link in links if link.startswith(url)})
            assert len(local) >= 10
            for link in local:  # every link of the 404 page leads to a page
                assert page.request.get(link).status == 200, link
        page.close()
    # instant navigation: a click swaps the page without a reload (the window keeps its state)
    page, log = open_page(browser, url)
    page.evaluate("() => { window.__probe = 1; }")
    page.click("a.md-nav__link[href$='benchmark/']")
    page.wait_for_url("**/specdec/benchmark/")
    scroll_through(page)  # a figure is drawn as it nears the viewport
    page.wait_for_selector(".specdec-figure .main-svg")
    assert page.evaluate("() => window.__probe") == 1, "the click reloaded the page: instant navigation is off"
    assert log["errors"] == [] and log["failed"] == []
    page.close()



@pytest.mark.build
def test_the_trace_command_writes_a_trace_the_visualizer_opens(site, browser, tmp_path, tiny_qwen_pair):
    """A new prompt, a pair of the default pair's architecture and tokenizer (tests/tiny_qwen.py; the real pair's
    decoding is test_real_pair.py's), one trace file in the artifact format, opened in the built site's Step
    Visualizer and stepped through."""
    import time

    import jsonschema

    out, tree_out = tmp_path / "my-trace.json", tmp_path / "my-tree.json"
    sampled_out, zero_out = tmp_path / "my-sampled-tree.json", tmp_path / "my-short-tree.json"
    target, draft = tiny_qwen_pair
    prompt = "def word_count(text: str) -> dict:"
    trace = ["trace", "--prompt", prompt, "--target", str(target), "--draft", str(draft)]
    # `python -m specdec_site trace` four times, a chain and token trees of the same pair (--tree: chosen children;
    # --tree-sampled: drawn ones; a run short enough that its last steps have no room for a node), in one process
    # (tests/entry.py: torch imported once)
    start = time.perf_counter()
    result = run_entries(ROOT / "specdec_site" / "__main__.py", [
        [*trace, "--max-new-tokens", "24", "--out", str(out)],
        [*trace, "--max-new-tokens", "12", "--tree", "2x2", "--out", str(tree_out)],
        [*trace, "--max-new-tokens", "12", "--tree", "2x2", "--tree-sampled", "--temperature", "0.7",
         "--out", str(sampled_out)],
        [*trace, "--max-new-tokens", "5", "--tree", "2x3", "--out", str(zero_out)]],
        cwd=ROOT, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    seconds = time.perf_counter() - start
    assert result.returncode == 0, result.stderr[-3000:]
    assert seconds < 180, f"the four trace commands took {seconds:.0f} s"
    doc = json.loads(out.read_text())
    schema = json.loads((ROOT / "docs" / "data" / "schema.json").read_text())
    jsonschema.validate(doc, {**schema, "$ref": "#/$defs/traces"})
    run = doc["runs"][0]
    assert doc["metadata"]["stage"] == "trace" and run["prompt"]["text"] == prompt
    assert run["equals_target_greedy"] is True and run["trace"]["n_emitted"] == 24
    page, log = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    target_name = doc["metadata"]["models"]["target"]["name"]
    assert open_trace(page, out).startswith(f"Opened my-trace.json: 1 run; target {target_name}"), target_name
    n_steps = len(run["trace"]["steps"])
    assert page.locator(".sv-step").count() == n_steps
    for step in range(2, min(n_steps, 4) + 1):
        page.click("#sv-next")
        assert page.inner_text(".sv-step-label").startswith(f"step {step} / {n_steps}")
    # the token tree, opened and drawn as a tree
    tree_doc = json.loads(tree_out.read_text())
    jsonschema.validate(tree_doc, {**schema, "$ref": "#/$defs/traces"})
    tree_run = tree_doc["runs"][0]
    assert tree_run["equals_target_greedy"] is True and tree_run["trace"]["drafter"] == "tree"
    assert all(s["parents"] == [-1, -1, 0, 0, 1, 1] for s in tree_run["trace"]["steps"][:1])
    assert open_trace(page, tree_out).startswith("Opened my-tree.json: 1 run")
    page.wait_for_selector(".sv-mask-grid")
    assert page.inner_text(".sv-step-label").startswith(f"step 1 / {len(tree_run['trace']['steps'])}: a tree of 6 nodes")
    assert page.locator(".sv-tree .sv-row").count() == 6
    # every tree file the command writes opens: drawn children (recursive rejection sampling, strict JSON) and a
    # run whose last steps had no room for a node (0-node steps), each stepped through to its end
    for path, check in ((sampled_out, lambda s: s["tree_rule"] == "rejection"), (zero_out, lambda s: s["k"] == 0)):
        text = path.read_text()
        assert "NaN" not in text and "Infinity" not in text, path.name
        doc = json.loads(text)
        jsonschema.validate(doc, {**schema, "$ref": "#/$defs/traces"})
        steps = doc["runs"][0]["trace"]["steps"]
        assert any(check(s) for s in steps), path.name
        assert open_trace(page, path).startswith(f"Opened {path.name}: 1 run"), path.name
        for step in range(2, len(steps) + 1):
            page.click("#sv-next")
            assert page.inner_text(".sv-step-label").startswith(f"step {step} / {len(steps)}"), (path.name, step)
    assert log["errors"] == []
    page.close()


def test_a_token_tree_step_is_drawn_as_a_tree(site, browser):
    """The committed token-tree traces: each step's nodes depth-first under their parents, the path marked, the
    draws down it, the mask of the target's pass (a node sees its ancestors and itself, never a sibling), and p at
    the chosen node's parent."""
    runs = json.loads((ROOT / "docs" / "data" / "cpu" / "traces.json").read_text())["runs"]
    tree_runs = [r for r in runs if r["trace"]["drafter"] == "tree"]
    assert tree_runs
    page, log = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    for run in tree_runs:
        step = run["trace"]["steps"][0]
        key = run["prompt"]["id"] + "|fixed|tree"
        page.select_option("#sv-prompt", key)
        page.select_option("#sv-mode", run["mode"])
        page.wait_for_selector(".sv-mask-grid")
        assert page.locator(".sv-tree .sv-row").count() == step["k"]
        assert page.locator(".sv-tree .sv-on-path").count() == len(step["path"])
        extra = page.inner_text(".sv-extra")
        assert extra.startswith("Sample and match") and extra.count("(r = ") == len(step["uniforms"])
        z = page.evaluate("() => Array.from(document.querySelectorAll('.sv-mask-grid tr')).slice(1).map("
                          "r => Array.from(r.querySelectorAll('td')).slice(2).map(c => c.textContent === '\u25a0'))")
        for i in range(step["k"]):
            ancestors = set()
            a = i
            while a >= 0:
                ancestors.add(a)
                a = step["parents"][a]
            assert [j for j, v in enumerate(z[i]) if v] == sorted(ancestors), (i, z[i])
        page.locator(".sv-tree .sv-row").last.click()  # another node: p at its parent
        title = page.evaluate("() => document.getElementById('sv-chart-pq').layout.title.text")
        assert title.startswith("p at node") or title.startswith("p after the prefix"), title
    assert log["errors"] == []
    page.close()


def test_a_block_verification_step_shows_both_rules(site, browser):
    """The committed block-verification traces (sampled, the real pair): the table compares each prefix's draw with
    h_i, and the side table puts h_i beside the token rule's chance of keeping the prefix, with what either rule
    keeps with the step's own draws; a token-rule run's sampled step shows the same comparison the other way."""
    runs = json.loads((ROOT / "docs" / "data" / "cpu" / "traces.json").read_text())["runs"]
    block_runs = [r for r in runs if r["trace"].get("verify") == "block"]
    assert block_runs and all(r["mode"] == "sampled" for r in block_runs)
    page, log = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    for run in block_runs:
        page.select_option("#sv-prompt", run["prompt"]["id"] + "|" + run["policy"] + "|chain|block")
        page.select_option("#sv-mode", "sampled")
        steps = run["trace"]["steps"]
        i = next(i for i, s in enumerate(steps) if 0 < s["n_accepted"] < s["k"] or s["k"] > 1)
        page.locator(f".sv-step[data-step='{i}'] .sv-tok").first.click()
        step = steps[i]
        page.wait_for_selector(".sv-block-table")
        head = page.inner_text(".sv-detail .sv-table >> nth=0")
        assert "h (keep prefix)" in head and "draw \u03b7" in head, head
        assert page.locator(".sv-block-table tr").count() == step["k"] + 1
        token = next((j for j in range(step["k"]) if not step["uniforms"][j] < step["accept_probs"][j]), step["k"])
        note = page.inner_text(".sv-block-note")
        assert f"the token rule keeps {token} and block verification keeps {step['n_accepted']} of {step['k']}" in note
        title = page.evaluate("() => document.getElementById('sv-chart-accept').layout.title.text")
        assert "block verification" in title.replace("<br>", " "), title
    chain = next(r for r in runs if r["mode"] == "sampled" and r["trace"].get("drafter") != "tree"
                 and r["trace"].get("verify", "token") == "token" and r["policy"] == "fixed")
    page.select_option("#sv-prompt", chain["prompt"]["id"] + "|fixed|chain")
    page.select_option("#sv-mode", "sampled")
    i = next(i for i, s in enumerate(chain["trace"]["steps"]) if s["k"])
    page.locator(f".sv-step[data-step='{i}'] .sv-tok").first.click()
    assert "this run used the token rule" in page.inner_text(".sv-block-note")
    assert log["errors"] == [], log["errors"]
    page.close()


def test_a_tree_run_then_a_chain_run_in_one_task_draws_and_returns(site, browser):
    """Rendered in one JavaScript task, a token-tree run and then a chain run left Plotly laying out a chart forever
    (the accept chart, hidden for the tree and shown again in the same task): the page never answered again. Each
    chart's draws now wait for its last (visualizer.js, react)."""
    page, log = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    load_all_runs(page)
    page.evaluate("""() => { window.specdecTestDone = false; setTimeout(() => {
        const v = document.getElementById('specdec-visualizer')._specdec;
        const tree = v.runs.findIndex(r => r.trace.drafter === 'tree'), chain = v.runs.findIndex(r => r.trace.drafter !== 'tree');
        [tree, chain].forEach(n => { const r = v.runs[n]; v.run = r; v.step = 0; v.pos = 0; v.renderRun();
                                     r.trace.steps.forEach((s, i) => v.go(i)); });
        setTimeout(() => { window.specdecTestDone = true; }, 500); }, 0); }""")
    page.wait_for_function("() => window.specdecTestDone === true", timeout=20_000)  # a hung page never gets here
    page.wait_for_function("""() => { const a = document.getElementById('sv-chart-accept');
        return a.style.display !== 'none' && a.querySelector('.main-svg') && a.getBoundingClientRect().width > 0; }""",
                           timeout=20_000)
    assert log["errors"] == []
    page.close()


def test_the_step_label_counts_drafts_with_the_right_plural(site, browser):
    page, log = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    # one run per call, as a reader's selection renders one run per event (two in one task:
    # test_a_tree_run_then_a_chain_run_in_one_task_draws_and_returns)
    n_runs = load_all_runs(page)
    labels = []
    # renderStep writes the label and the note, then draws the three charts: the charts are left out here (this
    # instance's draw functions do nothing while the labels are read; the readability and click tests draw them)
    page.evaluate("""() => { const v = document.getElementById('specdec-visualizer')._specdec;
        v.renderCharts = v.renderTreeCharts = function () {}; }""")
    for n in range(n_runs):
        labels += page.evaluate("""n => { const v = document.getElementById('specdec-visualizer')._specdec, out = [];
            const r = v.runs[n]; v.run = r; v.step = 0; v.pos = 0; v.renderRun();
            r.trace.steps.forEach(function (s, i) { v.go(i);
              const t = s.k === 0 ? s.emitted[0] : (s.bonus_token !== null ? s.bonus_token : s.resampled_token);
              out.push([s.k, document.querySelector('.sv-step-label').textContent,
                        document.querySelector('.sv-extra').textContent, t === null ? null : v.tok(t)]); });
            return out; }""", n)
    page.evaluate("() => { const v = document.getElementById('specdec-visualizer')._specdec; delete v.renderCharts; "
                  "delete v.renderTreeCharts; }")
    for k, label, extra, token in labels:
        if "a tree of" in label:  # a token-tree step: test_a_token_tree_step_is_drawn_as_a_tree
            continue
        if k == 1:
            assert " of 1 draft accepted" in label, label
        assert " 1 drafts" not in label and "All 1 drafts" not in extra and "0 of 0" not in label
        if token is not None:  # tokens shown as the strip shows them (␣ for a space), not as JSON strings
            shown = token.replace("\n", "↵").replace("\t", "⇥").replace(" ", "␣")
            assert f" \u201c{shown}\u201d " in extra, (extra, shown)  # quoted: a token "1" is no count
    assert {k for k, *_ in labels} >= {0, 1}, "the committed runs have steps of 0 and of 1 draft"
    assert log["errors"] == []
    page.close()


def check_tables(page):
    """No table is wider than the text column at 1400 px: a wide one scrolls sideways, prose columns and all (the
    benchmark's tables, with code and prose side by side, were 1134 and 1334 px in a 720 px column): one table per
    domain. On the render test's load of each page (test_page_renders_figures_math_and_stays_local)."""
    wide = page.evaluate("""() => Array.from(document.querySelectorAll('.md-content table')).map(t => {
        const column = document.querySelector('.md-content__inner').getBoundingClientRect().width;
        return [t.getBoundingClientRect().width, column, (t.querySelector('th') || t).textContent.slice(0, 40)];
      }).filter(([w, column]) => w > column + 1)""")
    assert wide == [], wide


def test_every_documented_equation_anchor_exists(site):
    """Reproduce & cite lists each equation's numbered and named anchors: each is an id on its page (issue 43)."""
    import re
    import urllib.request

    table = (ROOT / "docs" / "reproduce.md").read_text().split("### Equation anchors", 1)[1]
    anchors = re.findall(r"\(((?:math|choosing-k)\.md)#([a-z0-9-]+)\)", table) + \
        [("math.md", "eq-alpha")] + [("math.md", f"eq-{n}") for n in range(10, 15)]
    assert len(anchors) >= 28
    html = {}
    for page, anchor in anchors:
        if page not in html:
            with urllib.request.urlopen(site + page.removesuffix(".md") + "/") as response:
                html[page] = response.read().decode()
        assert f'id="{anchor}"' in html[page], f"{page}#{anchor} is documented but not on the page"


def test_the_visualizer_page_carries_one_run_and_fetches_the_others(site, site_folder, browser):
    """The Visualizer's HTML carried every run (1.16 MB); now the opening run alone, the others in files of the built
    site, each the run as recorded, fetched when a reader chooses it: choosing another prompt draws it, and its token
    strip is one Tab stop."""
    html_bytes = (site_folder / "visualizer" / "index.html").stat().st_size
    assert html_bytes < 100_000, html_bytes
    runs = json.loads((ROOT / "docs" / "figures" / "visualizer.json").read_text())["runs"]
    files = sorted((site_folder / "assets" / "visualizer-runs").glob("*.json"))
    assert len(files) == len(runs) - 1
    for path in files:
        assert json.loads(path.read_text()) == runs[int(path.stem)]
    page, log = open_page(browser, site + "visualizer/")
    page.wait_for_selector("#sv-chart-pq .main-svg")
    fetched = []
    page.on("request", lambda request: fetched.append(request.url) if "visualizer-runs" in request.url else None)
    options = page.eval_on_selector_all("#sv-prompt option", "os => os.map(o => o.value)")
    chosen = page.eval_on_selector("#sv-prompt", "s => s.value")
    other = next(o for o in options if o != chosen)
    page.select_option("#sv-prompt", other)
    page.wait_for_function("""() => { const v = document.getElementById('specdec-visualizer')._specdec;
        return v.run && !v.run.file && v.runKey(v.run) === document.getElementById('sv-prompt').value; }""")
    page.wait_for_selector("#sv-chart-pq .main-svg")  # the chosen run, drawn
    assert len(fetched) == 1, fetched
    assert page.inner_text(".sv-file-status") == "" and log["errors"] == [] and log["failed"] == []
    assert page.evaluate("() => document.querySelectorAll('.sv-strip [tabindex=\"0\"]').length") == 1  # one Tab stop
    page.close()
