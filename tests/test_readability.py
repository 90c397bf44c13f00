"""Every figure readable, measured in a real browser at 1400 px and 375 px, in light and dark: no two tick labels
of one axis overlap, a figure's title and legend stay inside the figure and off its plot area, a time-breakdown bar
is drawn for every category it names, no axis title is cut at the figure's edge, and no numbered equation's "(n)"
tag sits on its formula.

What a reader saw before these checks (each fails against the site as it was): titles cut at both ends and rotated
prompt names under a legend on "Choosing k" and the HF comparison, the target-only bar missing from "Where the time
goes", the toolbar over titles on a phone, and ten of the Math page's fourteen equations wider than a phone with
their tag drawn over the formula.
"""

from __future__ import annotations

import contextlib

import pytest
from browser import charts_drawn, load_all_runs, needs_chromium, open_page, settle, shot

pytestmark = [needs_chromium, pytest.mark.browser]

FIGURE_PAGES = ["", "benchmark/", "benchmark-details/", "math/", "exactness/"]
WIDTHS = [1400, 375]
SCHEMES = ["default", "slate"]

# Boxes of what a reader must be able to read, per static figure (client coordinates, CSS px).
MEASURE = """(sel) => Array.from(document.querySelectorAll(sel || '.specdec-figure.js-plotly-plot')).map(div => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const ticks = sel => Array.from(div.querySelectorAll(sel)).filter(t => t.textContent.trim() && t.getAttribute('opacity') !== '0').map(box);
  const axes = {};
  div.querySelectorAll('g.xaxislayer-above, g.yaxislayer-above').forEach((g, i) => {
    axes[(g.classList.contains('xaxislayer-above') ? 'x' : 'y') + i] = Array.from(g.querySelectorAll('.xtick text, .ytick text'))
      .filter(t => t.textContent.trim()).map(box);
  });
  // the title: HTML just above the plot (specdec.js), or Plotly's own if a figure keeps one
  const above = div.previousElementSibling && div.previousElementSibling.classList.contains('specdec-figure-title')
    ? div.previousElementSibling : null;
  const inner = div.querySelector('.g-gtitle .gtitle');
  const title = above && above.textContent.trim() ? above : (inner && inner.textContent.trim() ? inner : null);
  const legend = div.querySelector('g.legend');
  const plots = Array.from(div.querySelectorAll('.nsewdrag')).map(box);
  const page = [0, -1e9, document.documentElement.clientWidth, 1e9];
  const axisTitles = Array.from(div.querySelectorAll('.g-xtitle text, .g-ytitle text, .g-y2title text'))
    .filter(t => t.textContent.trim()).map(t => [t.textContent, box(t)]);
  return {id: div.id, figure: box(div), axes: axes, axisTitles: axisTitles, title: title ? box(title) : null, titleOutside: !!(title && title === above),
          page: page, legend: legend ? box(legend) : null, plots: plots,
          modebar: Array.from(div.querySelectorAll('.modebar')).filter(m => m.offsetParent !== null).length};
})"""


def overlap(a, b, slack: float = 0.5) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > slack and min(a[3], b[3]) - max(a[1], b[1]) > slack


def inside(inner, outer, slack: float = 1.0) -> bool:
    return (inner[0] >= outer[0] - slack and inner[1] >= outer[1] - slack and inner[2] <= outer[2] + slack
            and inner[3] <= outer[3] + slack)


@contextlib.contextmanager
def scheme_put_back(page):
    """The page's colour scheme as it was after the block: a page shared by the tests that read it (conftest's
    loaded) is left as the next test expects it."""
    first = page.evaluate("() => document.body.getAttribute('data-md-color-scheme')")
    assert first, "the theme set no colour scheme"
    try:
        yield
    finally:
        set_scheme(page, first)


def set_scheme(page, scheme):
    """The colour scheme the palette toggle sets; the figures re-render on the change (a MutationObserver)."""
    page.evaluate(f"() => document.body.setAttribute('data-md-color-scheme', '{scheme}')")
    settle(page)  # the figures re-render, margins settle


def figure_problems(fig: dict, width: int, where: str = "") -> list[str]:
    """What keeps a reader from reading one measured figure (MEASURE's record of it)."""
    name = fig["id"] + (f" ({where})" if where else "")
    problems = []
    for axis, boxes in fig["axes"].items():
        clashes = [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes)) if overlap(boxes[i], boxes[j])]
        if clashes:
            problems.append(f"{name}: {len(clashes)} overlapping tick labels on axis {axis}")
    for part in ("title", "legend"):
        if fig[part] is None:
            if part == "title":
                problems.append(f"{name}: no title")
            continue
        if not inside(fig[part], fig["page"] if part == "title" and fig["titleOutside"] else fig["figure"]):
            problems.append(f"{name}: the {part} leaves the figure ({fig[part]} not in {fig['figure']})")
        if any(overlap(fig[part], plot, slack=2) for plot in fig["plots"]):
            problems.append(f"{name}: the {part} covers the plot area")
    for text, title in fig.get("axisTitles", []):  # "target-onl": an axis title cut at the figure's edge
        if not inside(title, fig["figure"]):
            problems.append(f"{name}: the axis title {text!r} leaves the figure ({title} not in {fig['figure']})")
    if width < 600 and fig["modebar"]:
        problems.append(f"{name}: the toolbar is shown on a phone (it covers the title)")
    if fig["figure"][2] > fig["page"][2] + 1 or fig["figure"][0] < -1:
        problems.append(f"{name}: the figure is wider than the page ({fig['figure']})")
    return problems


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", FIGURE_PAGES, ids=lambda p: p or "home")
def test_every_figure_is_readable(loaded, path, width):
    """In each colour scheme, on one load of the page (shared: conftest's loaded): the scheme toggle re-renders every
    figure, as a reader's click on the palette does."""
    page, log = loaded(path, width)
    page.wait_for_function("document.querySelectorAll('.specdec-figure.js-plotly-plot').length > 0", timeout=15000)
    problems = []
    with scheme_put_back(page):
        for scheme in SCHEMES:
            set_scheme(page, scheme)
            problems += [f"{scheme}: {p}" for fig in page.evaluate(MEASURE) for p in figure_problems(fig, width)]
            shot(page, f"read-{(path.strip('/') or 'home')}-{width}-{scheme}.png")
    assert problems == [], problems
    assert log["errors"] == [], log["errors"]


# Steps of a run worth reading: the first, the one whose p/q chart has the most tokens, a rejection, a step that
# drafted nothing (k = 0), the last.
VISUALIZER_STEPS = """() => {
  const vis = document.getElementById('specdec-visualizer')._specdec;
  return vis.runs.map((run, r) => {
    const steps = run.trace.steps;
    const width = i => { const s = steps[i]; if (!s.k) return 0;
      return new Set(s.top_p[0].ids.concat((s.top_q[0] || {ids: []}).ids)).size; };  // a tree step has no top_q
    const all = steps.map((_, i) => i);
    const picks = [0, steps.length - 1, all.reduce((a, b) => width(b) > width(a) ? b : a, 0)];
    const rejected = all.find(i => steps[i].k > 0 && steps[i].bonus_token === null);
    const none = all.find(i => steps[i].k === 0);
    [rejected, none].forEach(i => { if (i !== undefined) picks.push(i); });
    return [r, Array.from(new Set(picks))];
  });
}"""
SHOW_STEP = """([r, i]) => {
  const vis = document.getElementById('specdec-visualizer')._specdec;
  if (vis.run !== vis.runs[r]) { vis.run = vis.runs[r]; vis.step = 0; vis.pos = 0; vis.renderRun(); }
  vis.go(i);
}"""


@pytest.mark.parametrize("width", WIDTHS)
def test_step_visualizer_charts_are_readable_on_every_run(site, browser, width):
    """The visualizer's three charts, for every recorded run, at the steps that crowd them most, in each colour
    scheme, on one load of the page (the scheme toggle re-renders the charts, as a reader's click on the palette
    does)."""
    page, log = open_page(browser, site + "visualizer/", width=width, height=900)
    page.wait_for_function("document.getElementById('specdec-visualizer') && "
                           "document.getElementById('specdec-visualizer')._specdec", timeout=15000)
    problems, seen = [], {scheme: 0 for scheme in SCHEMES}
    load_all_runs(page)
    picks = page.evaluate(VISUALIZER_STEPS)
    for scheme in SCHEMES:
        set_scheme(page, scheme)
        for r, steps in picks:
            for i in steps:
                page.evaluate(SHOW_STEP, [r, i])
                charts_drawn(page)
                # a token-tree step shows its mask as a grid where a chain step has its draws chart (hidden, not purged)
                tree = page.evaluate("() => document.querySelector('.sv-mask').style.display !== 'none'")
                figs = page.evaluate(MEASURE, "#specdec-visualizer .js-plotly-plot:not([style*='display: none'])")
                assert len(figs) == (2 if tree else 3), (scheme, figs)
                seen[scheme] += 1
                problems += [f"{scheme}: {p}" for fig in figs
                             for p in figure_problems(fig, width, f"run {r}, step {i + 1}")]
    assert len(picks) >= 8 and min(seen.values()) >= 2 * len(picks) and problems == [], problems[:10]
    assert log["errors"] == [], log["errors"]
    page.close()


SET = """([sel, value, event]) => { const e = document.querySelector(sel); e.value = String(value);
  e.dispatchEvent(new Event(event, {bubbles: true})); }"""


@pytest.mark.parametrize("width", WIDTHS)
def test_playground_charts_are_readable_with_every_control(site, browser, width):
    """The Playground's two charts after every preset and rule (sampled, so the histogram is drawn) and along
    each of the calculator's sliders, from one end to the other, in each colour scheme, on one load of the page."""
    page, log = open_page(browser, site + "playground/", width=width, height=900)
    page.wait_for_function("document.querySelectorAll('#pg-rule-chart.js-plotly-plot, #pg-speedup-chart.js-plotly-plot')"
                           ".length === 2", timeout=15000)
    problems = []
    page.evaluate(SET, ["#pg-n", 2000, "input"])
    presets = page.evaluate("() => document.querySelectorAll('#pg-preset option').length")
    for scheme in SCHEMES:
        set_scheme(page, scheme)
        problems += [f"{scheme}: {p}" for p in playground_problems(page, width, presets)]
    assert presets >= 2 and problems == [], problems[:10]
    assert log["errors"] == [], log["errors"]
    page.close()


def playground_problems(page, width: int, presets: int) -> list[str]:
    """What figure_problems finds in the Playground's charts after each preset and rule, and at each end of each
    of the calculator's sliders."""
    problems = []
    for preset in range(presets):
        for rule in ("correct", "naive"):
            page.evaluate(SET, ["#pg-preset", preset, "change"])
            page.evaluate(SET, ["#pg-rule", rule, "change"])
            page.click("#pg-sample")
            page.wait_for_function("document.getElementById('pg-sample-result').textContent.trim() !== ''")
            figs = page.evaluate(MEASURE, "#pg-rule-chart.js-plotly-plot")
            problems += [p for fig in figs for p in figure_problems(fig, width, f"preset {preset}, {rule}")]
    for slider in ("#pg-alpha", "#pg-c", "#pg-k", "#pg-v"):
        low, high = page.evaluate(f"() => [document.querySelector('{slider}').min, document.querySelector('{slider}').max]")
        for value in (low, high):
            page.evaluate(SET, [slider, value, "input"])
            page.wait_for_timeout(30)
            figs = page.evaluate(MEASURE, "#pg-speedup-chart.js-plotly-plot")
            assert len(figs) == 1
            problems += [p for fig in figs for p in figure_problems(fig, width, f"{slider} = {value}")]
    return problems


def test_time_breakdown_draws_the_target_only_bar(loaded):
    page, _ = loaded("benchmark-details/")
    page.wait_for_function("document.getElementById('fig-time_breakdown') && "
                           "document.getElementById('fig-time_breakdown').classList.contains('js-plotly-plot')")
    bars = page.evaluate("""() => Array.from(document.querySelectorAll('#fig-time_breakdown .trace.bars'))
        .map(t => Array.from(t.querySelectorAll('.point path')).filter(p => {
            const r = p.getBoundingClientRect(); return r.height > 0.5 && r.width > 0.5; }).length)""")
    assert len(bars) == 3 and bars[0] == 1, f"bars drawn per trace (target only, draft, verify): {bars}"


# The numbered equations of each page with math: The Math has (1)-(9), Choosing k continues with (10)-(14), and
# The Math's block verification has (15)-(17).
EQUATIONS = {"math/": [*range(1, 10), *range(15, 18)], "choosing-k/": range(10, 15)}
# Every numbered anchor of a page in reading order: its equations and its numbered statements (The Math's 1-4)
ANCHORS = {"math/": [*(f"eq-{n}" for n in range(1, 10)), "stmt-1", "stmt-2", "stmt-3", "eq-15", "eq-16", "eq-17",
                     "stmt-4"], "choosing-k/": [f"eq-{n}" for n in range(10, 15)]}


@pytest.mark.parametrize("path", EQUATIONS)
@pytest.mark.parametrize("width", WIDTHS)
def test_numbered_equations_fit_and_their_tags_stay_off_the_formula(loaded, width, path):
    """Every numbered equation keeps to the text column: at 375 px one wider than the column wraps between its
    top-level terms (the theme's narrow layout had put every term on a line of its own, at the screen's edge), and
    only (5), an aligned block that cannot wrap, scrolls, from the column's left edge (a centred block that
    overflows would hide its start where no scrolling reaches)."""
    page, _ = loaded(path, width)
    count = len(EQUATIONS[path])
    page.wait_for_function(f"document.querySelectorAll('.katex-display .tag').length >= {count}", timeout=15000)
    found = page.evaluate("""() => Array.from(document.querySelectorAll('.katex-display')).filter(d => d.querySelector('.tag')).map(d => {
        const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
        const tag = d.querySelector('.tag');
        return {tag: tag.textContent, tagBox: box(tag), bases: Array.from(d.querySelectorAll('.katex-html > .base')).map(box),
                column: box(d.closest('article').querySelector('p')), page: document.documentElement.clientWidth,
                right: box(d)[2], scrolls: d.scrollWidth > d.clientWidth + 1};
    })""")
    assert len(found) == count
    for eq in found:
        assert not any(overlap(eq["tagBox"], b, slack=1) for b in eq["bases"]), f"tag {eq['tag']} on its formula"
        assert eq["right"] <= eq["page"] + 1, f"equation {eq['tag']} runs off the page"
        left, right = eq["column"][0], eq["column"][2]
        assert min(b[0] for b in eq["bases"]) >= left - 1, f"equation {eq['tag']} starts left of the text column"
        if not eq["scrolls"]:
            assert max(b[2] for b in [*eq["bases"], eq["tagBox"]]) <= right + 1, f"equation {eq['tag']} past the column"
    assert [eq["tag"] for eq in found if eq["scrolls"]] == []  # every numbered equation fits a phone (eq. (5) in p, q)


@pytest.mark.parametrize("path", EQUATIONS)
def test_every_numbered_equation_has_a_visible_link_and_references_link_to_it(loaded, path):
    page, _ = loaded(path)
    links = page.evaluate("""() => Array.from(document.querySelectorAll('.eq-anchor')).map(a => ({
        id: a.id, href: a.querySelector('a.eq-link').getAttribute('href'), text: a.innerText.trim(),
        visible: a.querySelector('a.eq-link').getBoundingClientRect().height > 0}))""")
    assert [x["id"] for x in links] == ANCHORS[path]
    assert all(x["href"].endswith(f"#{x['id']}") and x["visible"] and x["text"].startswith("¶") for x in links)
    refs = page.evaluate("""() => Array.from(document.querySelectorAll('article a[href*="#eq-"]'))
        .filter(a => !a.classList.contains('eq-link') && a.pathname === location.pathname)
        .map(a => '#' + a.getAttribute('href').split('#')[1])""")  # this page's own equations
    assert len(refs) >= len(EQUATIONS[path]) and all(page.locator(h).count() == 1 for h in set(refs)), refs
    if path == "math/":
        assert page.locator("#eq-speedup").count() == 1, "the named anchors cited before stay"
        # the anchors of (10)-(14), cited before they moved to Choosing k, stay here as links to their new place
        moved = page.evaluate("() => Array.from(document.querySelectorAll('.eq-moved p')).map(p => p.id)")
        assert moved == [f"eq-{n}" for n in EQUATIONS["choosing-k/"]]


# ---------------------------------------------------------------- Home, as a newcomer reads it (issue 43)

# Terms Home may use only where they are defined: the first time each appears it must be a link to its definition
# (the glossary or The Math). And terms of the Benchmark's machinery that Home must not use at all.
HOME_TERMS = {"draft": "glossary", "target": "glossary", "k": "glossary", "residual": "glossary",
              "bonus token": "glossary", "acceptance rate": "glossary", "draft cost": "glossary"}
HOME_NOT_USED = ["core set", "matrix", "oracle", "draft yield", "â", "HumanEval-"]


@pytest.mark.parametrize("width", WIDTHS)
def test_home_has_no_clipped_label_and_no_term_before_its_definition(loaded, width):
    """In each colour scheme, on one load of the page (shared: conftest's loaded; the palette toggle changes the
    scheme in place)."""
    page, log = loaded("", width)
    page.wait_for_selector("#strip-status")
    with scheme_put_back(page):
        for scheme in SCHEMES:
            set_scheme(page, scheme)
            check_home(page, width, scheme)
    assert log["errors"] == []


def check_home(page, width, scheme):
    # every box of the step diagram and the strip keeps its text inside it, at a readable size
    found = page.evaluate("""() => {
        const out = [];
        const article = document.querySelector('article').getBoundingClientRect();
        document.querySelectorAll('.sd-flow .sd-box, .sd-flow figcaption, .sd-flow b, .sd-flow span, #specdec-strip *').forEach(e => {
            const r = e.getBoundingClientRect(), css = getComputedStyle(e);
            if (!r.width) return;
            out.push({what: e.className || e.tagName, text: e.textContent.slice(0, 40), size: parseFloat(css.fontSize),
                      overflow: e.scrollWidth > e.clientWidth + 1 && css.overflowX === 'visible' && e.clientWidth > 0,
                      outside: r.left < article.left - 1 || r.right > article.right + 1});
        });
        return out;
    }""")
    assert found
    bad = [f for f in found if f["overflow"] or f["outside"] or f["size"] < 11]
    assert not bad, bad[:5]
    # terms: defined (linked) at their first use, and the Benchmark's machinery not used
    text = page.inner_text("article")
    for term in HOME_NOT_USED:
        assert term not in text, f"Home uses {term!r}, which it never defines (it belongs on the Benchmark)"
    first = page.evaluate("""(terms) => {
        const article = document.querySelector('article');
        const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
        const out = {};
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            if (node.parentElement.closest('pre, code, template, #specdec-strip, .specdec-figure, .sd-flow figcaption')) continue;
            const em = node.parentElement.closest('em');  // a figure's caption: a paragraph of italics alone
            if (em && !em.closest('a') && em.parentElement.children.length === 1) continue;
            for (const term of terms) {
                if (term in out) continue;
                const re = new RegExp('(^|[^A-Za-z])' + term.replace(/ /g, '\\\\s+') + '($|[^A-Za-z])', 'i');
                if (re.test(node.textContent)) {
                    const link = node.parentElement.closest('a');
                    out[term] = link ? link.getAttribute('href') : null;
                }
            }
        }
        return out;
    }""", list(HOME_TERMS))
    for term, where in HOME_TERMS.items():
        assert term in first, f"Home never uses {term!r} (update HOME_TERMS)"
        assert first[term] and where in first[term], f"Home's first {term!r} is not a link to its definition: {first[term]}"
    shot(page, f"home-{width}-{scheme}.png")
