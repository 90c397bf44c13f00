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

import pytest
from browser import SHOTS, needs_chromium, open_page

pytestmark = [needs_chromium, pytest.mark.browser]

FIGURE_PAGES = ["", "benchmark/", "exactness/"]
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


def open_themed(browser, url, width, scheme):
    page, log = open_page(browser, url, width=width, height=900)
    page.evaluate(f"() => document.body.setAttribute('data-md-color-scheme', '{scheme}')")
    page.wait_for_timeout(800)  # the figures re-render on the scheme change (MutationObserver), margins settle
    return page, log


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


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("path", FIGURE_PAGES, ids=lambda p: p or "home")
def test_every_figure_is_readable(site, browser, path, width, scheme):
    page, log = open_themed(browser, site + path, width, scheme)
    page.wait_for_function("document.querySelectorAll('.specdec-figure.js-plotly-plot').length > 0", timeout=15000)
    problems = [p for fig in page.evaluate(MEASURE) for p in figure_problems(fig, width)]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"read-{(path.strip('/') or 'home')}-{width}-{scheme}.png"), full_page=True)
    assert problems == [], problems
    assert log["errors"] == [], log["errors"]
    page.close()


# Steps of a run worth reading: the first, the one whose p/q chart has the most tokens, a rejection, a step that
# drafted nothing (k = 0), the last.
VISUALIZER_STEPS = """() => {
  const vis = document.getElementById('specdec-visualizer')._specdec;
  return vis.runs.map((run, r) => {
    const steps = run.trace.steps;
    const width = i => { const s = steps[i]; if (!s.k) return 0;
      return new Set(s.top_p[0].ids.concat(s.top_q[0].ids)).size; };
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


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("width", WIDTHS)
def test_step_visualizer_charts_are_readable_on_every_run(site, browser, width, scheme):
    """The visualizer's three charts, for every recorded run, at the steps that crowd them most."""
    page, log = open_themed(browser, site + "visualizer/", width, scheme)
    page.wait_for_function("document.getElementById('specdec-visualizer') && "
                           "document.getElementById('specdec-visualizer')._specdec", timeout=15000)
    problems, seen = [], 0
    picks = page.evaluate(VISUALIZER_STEPS)
    for r, steps in picks:
        for i in steps:
            page.evaluate(SHOW_STEP, [r, i])
            page.wait_for_timeout(30)
            figs = page.evaluate(MEASURE, "#specdec-visualizer .js-plotly-plot")
            assert len(figs) == 3, figs
            seen += 1
            problems += [p for fig in figs for p in figure_problems(fig, width, f"run {r}, step {i + 1}")]
    assert len(picks) >= 8 and seen >= 2 * len(picks) and problems == [], problems[:10]
    assert log["errors"] == [], log["errors"]
    page.close()


SET = """([sel, value, event]) => { const e = document.querySelector(sel); e.value = String(value);
  e.dispatchEvent(new Event(event, {bubbles: true})); }"""


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("width", WIDTHS)
def test_playground_charts_are_readable_with_every_control(site, browser, width, scheme):
    """The Playground's two charts after every preset and rule (sampled, so the histogram is drawn) and along
    each of the calculator's sliders, from one end to the other."""
    page, log = open_themed(browser, site + "playground/", width, scheme)
    page.wait_for_function("document.querySelectorAll('#pg-rule-chart.js-plotly-plot, #pg-speedup-chart.js-plotly-plot')"
                           ".length === 2", timeout=15000)
    problems = []
    page.evaluate(SET, ["#pg-n", 2000, "input"])
    presets = page.evaluate("() => document.querySelectorAll('#pg-preset option').length")
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
    assert presets >= 2 and problems == [], problems[:10]
    assert log["errors"] == [], log["errors"]
    page.close()


def test_time_breakdown_draws_the_target_only_bar(site, browser):
    page, _ = open_page(browser, site + "benchmark/")
    page.wait_for_function("document.getElementById('fig-time_breakdown') && "
                           "document.getElementById('fig-time_breakdown').classList.contains('js-plotly-plot')")
    bars = page.evaluate("""() => Array.from(document.querySelectorAll('#fig-time_breakdown .trace.bars'))
        .map(t => Array.from(t.querySelectorAll('.point path')).filter(p => {
            const r = p.getBoundingClientRect(); return r.height > 0.5 && r.width > 0.5; }).length)""")
    assert len(bars) == 3 and bars[0] == 1, f"bars drawn per trace (target only, draft, verify): {bars}"
    page.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_numbered_equations_fit_and_their_tags_stay_off_the_formula(site, browser, width):
    """Every numbered equation keeps to the text column: at 375 px one wider than the column wraps between its
    top-level terms (the theme's narrow layout had put every term on a line of its own, at the screen's edge), and
    only (5), an aligned block that cannot wrap, scrolls, from the column's left edge (a centred block that
    overflows would hide its start where no scrolling reaches)."""
    page, _ = open_page(browser, site + "math/", width=width)
    page.wait_for_function("document.querySelectorAll('.katex-display .tag').length >= 14", timeout=15000)
    found = page.evaluate("""() => Array.from(document.querySelectorAll('.katex-display')).filter(d => d.querySelector('.tag')).map(d => {
        const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
        const tag = d.querySelector('.tag');
        return {tag: tag.textContent, tagBox: box(tag), bases: Array.from(d.querySelectorAll('.katex-html > .base')).map(box),
                column: box(d.closest('article').querySelector('p')), page: document.documentElement.clientWidth,
                right: box(d)[2], scrolls: d.scrollWidth > d.clientWidth + 1};
    })""")
    assert len(found) == 14
    for eq in found:
        assert not any(overlap(eq["tagBox"], b, slack=1) for b in eq["bases"]), f"tag {eq['tag']} on its formula"
        assert eq["right"] <= eq["page"] + 1, f"equation {eq['tag']} runs off the page"
        left, right = eq["column"][0], eq["column"][2]
        assert min(b[0] for b in eq["bases"]) >= left - 1, f"equation {eq['tag']} starts left of the text column"
        if not eq["scrolls"]:
            assert max(b[2] for b in [*eq["bases"], eq["tagBox"]]) <= right + 1, f"equation {eq['tag']} past the column"
    narrow = width < 720  # the theme's narrow layout, below 44.984375em (specdec.css)
    assert [eq["tag"] for eq in found if eq["scrolls"]] == (["(5)"] if narrow else [])
    page.close()


def test_every_numbered_equation_has_a_visible_link_and_references_link_to_it(site, browser):
    page, _ = open_page(browser, site + "math/")
    links = page.evaluate("""() => Array.from(document.querySelectorAll('.eq-anchor')).map(a => ({
        id: a.id, href: a.querySelector('a.eq-link').getAttribute('href'), text: a.innerText.trim(),
        visible: a.querySelector('a.eq-link').getBoundingClientRect().height > 0}))""")
    assert [x["id"] for x in links] == [f"eq-{n}" for n in range(1, 15)]
    assert all(x["href"].endswith(f"#{x['id']}") and x["visible"] and x["text"].startswith("¶") for x in links)
    refs = page.evaluate("""() => Array.from(document.querySelectorAll('article a[href*="#eq-"]'))
        .filter(a => !a.classList.contains('eq-link')).map(a => '#' + a.getAttribute('href').split('#')[1])""")
    assert len(refs) >= 15 and all(page.locator(h).count() == 1 for h in set(refs)), refs
    assert page.locator("#eq-speedup").count() == 1, "the named anchors cited before stay"
    page.close()
