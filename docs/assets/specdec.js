/* specdec site, every page: KaTeX math and Plotly figures on demand (light/dark, instant navigation), Home's strip,
 * focusable scroll regions, and the loader of a page's widget script (visualizer.js, playground.js: data-specdec-script).
 * Model text is untrusted: it only ever reaches the DOM through textContent, and Plotly labels are
 * entity-escaped (Plotly interprets a subset of HTML in strings). */
(function () {
  "use strict";

  // ------------------------------------------------------------------ theme
  function dark() {
    return document.body.getAttribute("data-md-color-scheme") === "slate";
  }
  function themed(layout) {
    const fg = dark() ? "#e2e4e9" : "#1f2430";
    const grid = dark() ? "rgba(255,255,255,0.12)" : "rgba(0,0,0,0.10)";
    const out = Object.assign({}, layout, {
      paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "rgba(0,0,0,0)",
      font: Object.assign({}, layout.font || {}, { color: fg }),
    });
    for (const key of Object.keys(out)) {
      if (/^[xy]axis\d*$/.test(key)) {
        out[key] = Object.assign({}, out[key], { gridcolor: grid, zerolinecolor: grid, linecolor: grid });
      }
    }
    if (out.legend) out.legend = Object.assign({}, out.legend, { bgcolor: "rgba(0,0,0,0)" });
    return out;
  }
  const PLOT_CONFIG = { responsive: true, displaylogo: false };
  // Trace colours too dark for the slate background (WCAG AA asks 3:1 for graphics): the indigo of code and of p is
  // 2.3:1 there (its light tone 6.5:1), the purple of the residual 2.6:1 (6.7:1). tests/test_build_data.py computes
  // every colour of the palette against the slate background.
  const DARK_TONES = { "#3f51b5": "#8c9eff", "#9c27b0": "#ce93d8" };
  function tone(color) {
    return dark() && DARK_TONES[color] ? DARK_TONES[color] : color;
  }
  function tonedTraces(data) {
    return data.map(function (t) {
      const out = Object.assign({}, t);
      ["marker", "line", "error_y"].forEach(function (key) {
        if (out[key] && typeof out[key].color === "string") out[key] = Object.assign({}, out[key], { color: tone(out[key].color) });
      });
      return out;
    });
  }

  // ------------------------------------------------------------------ figures that fit their width
  // The figures' JSON is laid out for a wide page (specdec_site/site/figures.py). At the width a figure actually has: its
  // title goes above it as HTML (titleAbove), and on a narrow screen (a phone) the fonts shrink and the toolbar is
  // left out (its hidden buttons would take Tab stops; the figure still zooms and pans by touch). Re-fitted when the
  // width class changes.
  const NARROW = 600;
  function fitted(layout, width) {
    const narrow = width < NARROW;
    const out = Object.assign({}, layout);
    if (narrow) {
      out.font = Object.assign({}, out.font || {}, { size: 10 });
      if (out.legend) out.legend = Object.assign({}, out.legend, { font: { size: 10 } });
      out.margin = Object.assign({}, out.margin || {}, { l: Math.min((out.margin || {}).l || 60, 44), r: 8 });
    }
    return out;
  }
  // A static figure's title is HTML above the plot, not Plotly's: it wraps at any width, and the toolbar (inside the
  // plot, top right) can never cover it. The figure keeps its name for screen readers (aria-label).
  function titleAbove(div, layout) {
    const text = layout.title && layout.title.text ? String(layout.title.text).replace(/<br>/g, " ") : "";
    let caption = div.previousElementSibling;
    if (!caption || !caption.classList.contains("specdec-figure-title")) {
      caption = el("p", { class: "specdec-figure-title" });
      div.parentNode.insertBefore(caption, div);
    }
    caption.textContent = text;
    const out = Object.assign({}, layout, { title: { text: "" } });
    out.margin = Object.assign({}, out.margin || {}, { t: 28 });  // room for the toolbar only
    return out;
  }
  function plotConfig(width) {
    // the toolbar only while the pointer is over the plot ("hover"), and never on a phone
    return Object.assign({}, PLOT_CONFIG, { displayModeBar: width >= NARROW ? "hover" : false });
  }
  // The width in px of `text` in the page's font at `px` px (one canvas, reused): chart titles and tick labels.
  let measureCanvas = null;
  function textWidth(text, px) {
    measureCanvas = measureCanvas || document.createElement("canvas").getContext("2d");
    measureCanvas.font = px + "px " + getComputedStyle(document.body).fontFamily;
    return measureCanvas.measureText(text).width;
  }
  // A chart's own title (the visualizer's, the Playground's), wrapped into lines that fit the chart's width (Plotly
  // does not wrap titles: one line ran off a phone's screen), with the top margin grown to hold them.
  function titled(div, text, layout) {
    const room = Math.max(120, ((div && div.clientWidth) || 320) - 24);
    const lines = [];
    String(text).split(" ").forEach(function (word) {
      const last = lines.length ? lines[lines.length - 1] + " " + word : word;
      if (lines.length && textWidth(last, 13) * 1.08 <= room) lines[lines.length - 1] = last;
      else lines.push(word);
    });
    const margin = Object.assign({}, layout.margin || {});
    margin.t = Math.max(margin.t || 0, 24 + 17 * lines.length);
    return Object.assign({}, layout, { margin: margin, title: { text: lines.join("<br>"), font: { size: 13 }, x: 0.01, xanchor: "left" } });
  }
  function configFor(div) {
    return plotConfig((div && div.clientWidth) || window.innerWidth);
  }
  function noTabStops(div) {
    // The toolbar shows on hover only: its buttons are reached by the mouse, not by Tab.
    div.querySelectorAll(".modebar-btn").forEach(function (b) { b.setAttribute("tabindex", "-1"); });
  }

  // ------------------------------------------------------------------ plotly.js and KaTeX, on demand
  // Only the pages that need them load them: the hook marks pages with a figure with
  // data-specdec-plotly (the bundle's URL) and pages with math with data-specdec-katex (KaTeX's folder).
  // Each library is loaded once per visit, also across instant navigation; fn runs once it is there.
  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      const script = document.createElement("script");
      script.src = src;
      script.onload = resolve;
      script.onerror = function () { reject(new Error(src + " failed to load")); };
      document.head.appendChild(script);
    });
  }
  function onDemand(ready, attribute, load) {
    let loading = null;
    return function (fn) {
      if (ready()) { fn(); return; }
      const mark = document.querySelector("[" + attribute + "]");
      if (!mark) return;
      if (!loading) {
        loading = load(mark.getAttribute(attribute)).catch(function (err) { loading = null; throw err; });
      }
      loading.then(fn, function (err) { console.error(err.message); });
    };
  }
  const withPlotly = onDemand(function () { return !!window.Plotly; }, "data-specdec-plotly", loadScript);
  // the Step Visualizer's checks on trace files (tracefile.js): its page alone loads them
  const withTraceFile = onDemand(function () { return !!window.specdecTraceFile; }, "data-specdec-tracefile", loadScript);
  const withKatex = onDemand(function () { return typeof window.renderMathInElement === "function"; },
    "data-specdec-katex", function (base) {
      // the stylesheet is the page's own <link> (the hook's): a stylesheet added to <head> here was lost at the
      // next instant navigation, same-page anchors included
      return loadScript(base + "katex.min.js").then(function () { return loadScript(base + "contrib/auto-render.min.js"); });
    });

  // ------------------------------------------------------------------ math
  // A formula is typeset when it comes within a screen of the view, not all at load: the Math page's 214 formulas
  // typeset in one task blocked a phone for a second, and typeset in slices each slice made Material's sidebar lay the
  // whole page out again. drawAll (printing, tests) typesets every formula at once. A page left by instant navigation
  // leaves its observer (mathObserver is replaced).
  const MATH_NEAR = "100% 0px";
  let mathObserver = null, mathAtOnce = false;
  function typeset(el) {
    if (el._specdecTypeset) return;
    el._specdecTypeset = true;
    renderMathInElement(el, {
      delimiters: [
        { left: "\\(", right: "\\)", display: false },
        { left: "\\[", right: "\\]", display: true },
      ],
      throwOnError: false,
    });
  }
  function typesetAll() {
    document.querySelectorAll(".arithmatex").forEach(typeset);
    focusableScrollers();
  }
  function renderMath() {
    if (mathObserver) mathObserver.disconnect();
    mathObserver = null;
    if (mathAtOnce || !("IntersectionObserver" in window)) { typesetAll(); return; }
    let settle = null;
    mathObserver = new IntersectionObserver(function (entries, observer) {
      entries.forEach(function (entry) {
        if (!entry.isIntersecting) return;
        observer.unobserve(entry.target);
        typeset(entry.target);
      });
      clearTimeout(settle);
      settle = setTimeout(focusableScrollers, 200);  // a typeset equation may now scroll sideways
    }, { rootMargin: MATH_NEAR });
    document.querySelectorAll(".arithmatex").forEach(function (el) { mathObserver.observe(el); });
  }

  // ------------------------------------------------------------------ static figures
  // A figure is drawn when it comes into view (Distill's way), not all at load: a page of sixteen figures drew
  // them in one 3.9 s task before the reader could scroll. plotly.js itself loads when the first figure comes into
  // view: its parse is one task of about a second on a phone, which a page that shows no figure on its first screen
  // no longer pays before the reader can scroll. Each figure's height is reserved by the hook (min-height), so
  // drawing it moves nothing below it. Printing, or a test, draws them all (drawAll).
  const IN_VIEW = "0px";
  function drawFigure(template) {
    const div = document.getElementById(template.dataset.for);
    if (!div) return Promise.resolve();
    const fig = JSON.parse(template.content.textContent);
    const width = div.clientWidth || window.innerWidth;
    div.dataset.narrow = String(width < NARROW);
    div._specdecDrawn = true;
    return Plotly.react(div, tonedTraces(fig.data), themed(fitted(titleAbove(div, fig.layout || {}), width)), plotConfig(width)).then(noTabStops);
  }
  function figureTemplates(drawnOnly) {
    return Array.from(document.querySelectorAll("template.specdec-figure-data")).filter(function (t) {
      const div = document.getElementById(t.dataset.for);
      return div && (!drawnOnly || div._specdecDrawn);
    });
  }
  let figureObserver = null;
  function renderFigures() {
    // on a page's first visit and after instant navigation: the previous page's observer watches nothing here
    if (figureObserver) figureObserver.disconnect();
    const templates = figureTemplates(false);
    if (!templates.length) return;
    if (!("IntersectionObserver" in window)) { withPlotly(function () { templates.forEach(drawFigure); }); return; }
    figureObserver = new IntersectionObserver(function (entries, observer) {
      entries.forEach(function (entry) {
        if (!entry.isIntersecting) return;
        observer.unobserve(entry.target);
        const template = document.querySelector('template.specdec-figure-data[data-for="' + entry.target.id + '"]');
        if (template) withPlotly(function () { drawFigure(template); });
      });
    }, { rootMargin: IN_VIEW });
    templates.forEach(function (t) { figureObserver.observe(document.getElementById(t.dataset.for)); });
  }
  function redrawFigures() {
    // a re-theme or a change of width class: the figures already drawn, again (the others draw when seen)
    figureTemplates(true).forEach(drawFigure);
  }
  function drawAll() {
    // every figure now, whether seen or not (printing; tests that read every figure), and every widget chart
    everyChart = true;
    waitingCharts.forEach(function (release) { release(); });
    mathAtOnce = true;
    document.documentElement.classList.add("specdec-everything");  // the Source page's listings laid out too
    if (typeof window.renderMathInElement === "function" && document.querySelector(".arithmatex")) typesetAll();
    return new Promise(function (resolve) {
      const templates = figureTemplates(false);
      if (!templates.length) { resolve(); return; }
      withPlotly(function () { Promise.all(templates.map(drawFigure)).then(resolve, resolve); });
    });
  }
  window.addEventListener("beforeprint", drawAll);
  let resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      if (!window.Plotly) return;
      const changed = Array.from(document.querySelectorAll(".specdec-figure")).some(function (div) {
        return div._specdecDrawn && div.dataset.narrow !== String((div.clientWidth || window.innerWidth) < NARROW);
      });
      if (changed) redrawFigures();
    }, 200);
  });

  // ------------------------------------------------------------------ widget charts, drawn when seen
  // The Step Visualizer's and the Playground's charts are drawn through drawChart: one drawing at a time per chart,
  // in the order asked (a call made while the chart's last one is still drawing waits for it: two runs rendered in
  // one task once left Plotly laying out a chart forever), and the first only once the chart comes into view, with
  // plotly.js loaded then. The widgets build their text, controls and tables at once, without plotly.js. drawAll
  // draws every chart now (printing, tests). div._specdecDrawn is the promise of the chart's last drawing.
  let everyChart = false;
  const waitingCharts = new Set();
  let chartObserver = null;
  function seen(div) {
    if (everyChart || !("IntersectionObserver" in window)) return Promise.resolve();
    if (!div._specdecSeen) {
      div._specdecSeen = new Promise(function (resolve) {
        function release() {
          waitingCharts.delete(release);
          if (chartObserver) chartObserver.unobserve(div);
          resolve();
        }
        div._specdecRelease = release;
        waitingCharts.add(release);
        chartObserver = chartObserver || new IntersectionObserver(function (entries) {
          entries.forEach(function (e) { if (e.isIntersecting && e.target._specdecRelease) e.target._specdecRelease(); });
        }, { rootMargin: IN_VIEW });
        chartObserver.observe(div);
      });
    }
    return div._specdecSeen;
  }
  function plotlyLoaded() {
    return new Promise(function (resolve) { withPlotly(resolve); });
  }
  function drawChart(div, draw) {
    const drawn = (div._specdecDrawn || Promise.resolve()).catch(function () {})
      .then(function () { return seen(div); }).then(plotlyLoaded).then(draw);
    div._specdecDrawn = drawn;
    return drawn;
  }
  function react(div, data, layout, config) {  // Plotly.react through the queue: the widgets' one way to draw
    return drawChart(div, function () { return Plotly.react(div, data, layout, config); });
  }

  // ------------------------------------------------------------------ helpers of the widgets
  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }
  function visible(s) {
    return String(s).replace(/\n/g, "\u21b5").replace(/\t/g, "\u21e5").replace(/ /g, "\u2423");
  }
  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function fmt(x) {
    return x === null || x === undefined ? "–" : Number(x).toFixed(3);
  }

  // Shared with the Step Visualizer (visualizer.js) and the Playground (playground.js), which load after this file.
  window.specdecSite = { dark: dark, tone: tone, themed: themed, titled: titled, el: el, esc: esc, visible: visible,
    fmt: fmt, textWidth: textWidth, configFor: configFor, noTabStops: noTabStops, withPlotly: withPlotly,
    withTraceFile: withTraceFile, drawAll: drawAll, drawChart: drawChart, react: react };

  // ------------------------------------------------------------------ Home's strip: a recorded run, step by step
  // Leviathan et al.'s Figure 1 from this site's data: each step's accepted drafts, the rejected one (struck
  // through) and the target's own token. It plays itself once (a step every STRIP_MS), unless the reader asked
  // for reduced motion, then shows the whole run; Play / Step / Restart drive it. Token text goes in as text.
  const STRIP_MS = 550;
  const STRIP_WORDS = { accepted: "accepted draft", rejected: "rejected draft", resampled: "the target's token in its place",
    bonus: "bonus token (all k accepted)" };
  function Strip(root, run, palette) {
    this.root = root; this.run = run; this.shown = 0; this.timer = null;
    root.textContent = "";
    ["accepted", "rejected", "resampled", "bonus"].forEach(function (f) { root.style.setProperty("--sv-" + f, palette[f]); });
    const legend = el("div", { class: "sv-legend", "aria-hidden": "true" });
    ["accepted", "rejected", "resampled", "bonus"].forEach(function (f) {
      legend.appendChild(el("span", { class: "sv-tok sv-" + f }, STRIP_WORDS[f]));
    });
    const controls = el("div", { class: "sv-controls" });
    this.play = el("button", { type: "button", class: "md-button", id: "strip-play" }, "Pause");
    this.step = el("button", { type: "button", class: "md-button", id: "strip-step" }, "Next step");
    this.restart = el("button", { type: "button", class: "md-button", id: "strip-restart" }, "Restart");
    controls.append(this.play, this.step, this.restart);
    this.status = el("p", { class: "strip-status", id: "strip-status", role: "status", "aria-live": "polite" });
    this.text = el("div", { class: "strip-text", id: "strip-text" });
    this.text.appendChild(el("span", { class: "strip-prompt" }, run.prompt));
    this.steps = run.steps.map(function (s, i) {
      // a step not yet shown keeps its place (strip-later: visibility hidden), so the text below never moves
      const span = el("span", { class: "strip-step strip-later", "data-step": String(i) });
      s.accepted.forEach(function (t) { span.appendChild(el("span", { class: "sv-tok sv-accepted" }, t)); });
      if (s.rejected !== null) span.appendChild(el("span", { class: "sv-tok sv-rejected" }, visibleIfBlank(s.rejected)));
      if (s.extra !== null) span.appendChild(el("span", { class: "sv-tok sv-" + s.extra_fate }, s.extra));
      return span;
    });
    const text = this.text;
    this.steps.forEach(function (span) { text.appendChild(span); });
    root.append(controls, this.status, this.text, legend);
    const self = this;
    this.reserve();
    let resized = null;
    this.onResize = function () { clearTimeout(resized); resized = setTimeout(function () { self.reserve(); }, 200); };
    window.addEventListener("resize", this.onResize);
    this.play.addEventListener("click", function () { self.timer ? self.pause() : self.start(); });
    this.step.addEventListener("click", function () { self.pause(); self.show(self.shown + 1); });
    this.restart.addEventListener("click", function () { self.show(0); self.start(); });
    const still = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    if (still) { this.show(run.steps.length); this.pause(); } else { this.show(0); this.start(); }
  }
  // a rejected whitespace token would be invisible when struck through: shown as the visualizer shows it
  function visibleIfBlank(t) { return t.trim() ? t : visible(t); }
  Strip.prototype.show = function (n) {
    const total = this.run.steps.length;
    this.shown = Math.max(0, Math.min(n, total));
    const shown = this.shown;
    this.steps.forEach(function (span, i) {
      span.classList.toggle("strip-later", i >= shown);
      span.classList.toggle("strip-current", i === shown - 1);
    });
    this.status.textContent = this.statusText(shown);
    if (shown >= total) this.pause();
  };
  Strip.prototype.statusText = function (shown) {
    return shown === 0 ? "The prompt (" + this.run.label + "); press Next step or Play." : this.describe(shown - 1);
  };
  // The status line's height is that of its longest text at the strip's width (measured on a hidden copy, which no
  // screen reader hears), so that a longer step's words push nothing down as the strip plays (Home's CLS was 0.22).
  Strip.prototype.reserve = function () {
    const copy = el("p", { class: "strip-status", "aria-hidden": "true" });
    copy.style.cssText = "position:absolute;visibility:hidden;min-height:0;width:" + this.status.clientWidth + "px";
    this.root.appendChild(copy);
    let tallest = 0;
    for (let n = 0; n <= this.run.steps.length; n++) {
      copy.textContent = this.statusText(n);
      tallest = Math.max(tallest, copy.offsetHeight);
    }
    copy.remove();
    this.status.style.minHeight = tallest + "px";
  };
  // What step i did, by its own drafts (a step near the end drafts fewer than the run's k), then the running count:
  // the tokens so far against the target passes they took, and the passes the target alone would have taken.
  function plural(n, one, many) { return n + " " + (n === 1 ? one : many); }
  function stepTokens(s) { return s.accepted.length + (s.extra !== null ? 1 : 0); }
  Strip.prototype.describe = function (i) {
    const s = this.run.steps[i], n = s.accepted.length;
    let what = "Step " + (i + 1) + " of " + this.run.steps.length + ": ";
    if (s.rejected !== null) {
      what += (n === 0 ? "the draft's first guess was rejected" : plural(n, "guess", "guesses") +
        " accepted, the next rejected") + (s.extra !== null ? ", and the target wrote its own token in its place." : ".");
    } else if (n === 0) {  // a step with no room for a guess (the run's last token): the target alone
      what += "no guesses (one token left to write), so the target wrote it alone.";
    } else {
      what += (n === 1 ? "its one guess accepted" : "all " + n + " guesses accepted") +
        (s.extra !== null ? ", plus a bonus token from the same target pass." : ".");
    }
    const tokens = this.run.steps.slice(0, i + 1).reduce(function (sum, t) { return sum + stepTokens(t); }, 0);
    return what + " " + plural(stepTokens(s), "token", "tokens") + " for one pass of the target. So far: " +
      plural(tokens, "token", "tokens") + " in " + plural(i + 1, "target pass", "target passes") +
      " (the target alone: " + plural(tokens, "pass", "passes") + ").";
  };
  Strip.prototype.start = function () {
    const self = this;
    if (this.shown >= this.run.steps.length) this.show(0);
    clearInterval(this.timer);
    this.timer = setInterval(function () { self.show(self.shown + 1); }, STRIP_MS);
    this.play.textContent = "Pause";
  };
  Strip.prototype.pause = function () {
    clearInterval(this.timer);
    this.timer = null;
    this.play.textContent = this.shown >= this.run.steps.length ? "Play again" : "Play";
  };
  let currentStrip = null;
  function renderStrip() {
    if (currentStrip) {  // the page before instant navigation
      currentStrip.pause();
      window.removeEventListener("resize", currentStrip.onResize);
      currentStrip = null;
    }
    const root = document.getElementById("specdec-strip");
    const data = document.getElementById("specdec-strip-data");
    if (!root || !data) return;
    const payload = JSON.parse(data.content.textContent);
    currentStrip = root._specdec = new Strip(root, payload.run, payload.palette);
  }

  function rerenderThemed() {
    if (!window.Plotly) return;
    redrawFigures();
  }

  // A widget's script (visualizer.js, playground.js) is loaded by the pages that show the widget (the hook's
  // data-specdec-script mark), once per visit: it subscribes to document$, which replays the current page to it.
  const loadedWidgets = {};
  function loadWidgets() {
    document.querySelectorAll("[data-specdec-script]").forEach(function (mark) {
      const src = new URL(mark.getAttribute("data-specdec-script"), document.baseURI).href;
      if (loadedWidgets[src]) return;
      loadedWidgets[src] = loadScript(src).catch(function (err) { delete loadedWidgets[src]; console.error(err.message); });
    });
  }

  // A block that scrolls sideways is reached by keyboard too (WCAG 2.1.1; axe's scrollable-region-focusable): the
  // BibTeX entry (a code span laid out as a block), and, where the screen is too narrow for them, a wide table or
  // equation. Material's code blocks focus themselves. Checked again when the window's width changes.
  function focusableScrollers() {
    document.querySelectorAll(".bibtex code").forEach(function (code) {
      code.setAttribute("tabindex", "0");
      code.setAttribute("aria-label", "BibTeX entry");
    });
    // a notebook's code cell (.highlight-ipynb) and output scroll sideways too
    document.querySelectorAll(".md-typeset__scrollwrap, .katex-display, .highlight-ipynb, .jp-OutputArea-output pre").forEach(function (box) {
      const scrolls = box.scrollWidth > box.clientWidth + 1;
      const focusable = box.querySelector("a, button, input, select, textarea, [tabindex]");
      if (scrolls && !focusable) {
        box.setAttribute("tabindex", "0");
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", box.classList.contains("katex-display") ? "equation (scrolls sideways)"
          : box.classList.contains("highlight-ipynb") ? "code cell (scrolls sideways)"
          : box.tagName === "PRE" ? "cell output (scrolls sideways)" : "table (scrolls sideways)");
      } else if (!scrolls && box.getAttribute("role") === "region") {
        ["tabindex", "role", "aria-label"].forEach(function (a) { box.removeAttribute(a); });
      }
    });
  }
  let scrollersTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(scrollersTimer);
    scrollersTimer = setTimeout(focusableScrollers, 200);
  });

  function init() {
    loadWidgets();
    focusableScrollers();
    renderStrip();
    if (mathObserver) { mathObserver.disconnect(); mathObserver = null; }  // the page before instant navigation
    withKatex(renderMath);
    renderFigures();
  }

  // Material's instant navigation swaps pages without a reload: document$ emits on every page.
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(init);
  } else {
    document.addEventListener("DOMContentLoaded", init);
  }
  // Re-theme figures when the palette toggle changes the colour scheme.
  new MutationObserver(rerenderThemed).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
})();
