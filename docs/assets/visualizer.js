/* specdec Step Visualizer: the recorded steps of a run (docs/figures/visualizer.json, through the page), or of a
 * trace file the reader opens (read in the browser, checked before anything of it is drawn: tracefile.js,
 * window.specdecTraceFile, loaded on this page alone before the widget is built). Its own file, so that the tree view has a home; the helpers it shares
 * with the figures and the Playground come from specdec.js (window.specdecSite), which loads first too. Model text
 * only reaches the DOM through textContent. */
(function () {
  "use strict";

  const site = window.specdecSite;
  const dark = site.dark, tone = site.tone, themed = site.themed, titled = site.titled, el = site.el, esc = site.esc,
    visible = site.visible, fmt = site.fmt, textWidth = site.textWidth, configFor = site.configFor,
    noTabStops = site.noTabStops;

  // Plotly.react through the page's chart queue (specdec.js drawChart): one drawing at a time per chart, the first
  // once the chart comes into view
  const react = site.react;

  // The trace files' checks and the fates the renderers draw (tracefile.js, which loads first): a step's fates are
  // the recorded ones, or those its counts give; a tree step's nodes, and the ones its rule tried.
  // tracefile.js is loaded on demand, on the Visualizer's page alone (site.withTraceFile, before the widget is built)
  let traceFile = null;
  function isTree(s) { return traceFile.isTree(s); }
  function withFates(run) { return traceFile.withFates(run); }

  // A token's text in quotes, so that a token "1" is never read as a count ("token 1 drawn")
  function quoted(text) { return "\u201c" + visible(text) + "\u201d"; }

  function nodeDepths(parents) {
    const depths = [];
    parents.forEach(function (parent) { depths.push(parent < 0 ? 1 : depths[parent] + 1); });
    return depths;
  }
  // The nodes depth-first (children in the order drafted, the draft's rank order): the order a tree reads in.
  function treeOrder(parents) {
    const children = {};
    parents.forEach(function (parent, j) { (children[parent] = children[parent] || []).push(j); });
    const out = [];
    (function walk(node) { (children[node] || []).forEach(function (c) { out.push(c); walk(c); }); })(-1);
    return out;
  }

  // What either rule keeps with a chain step's own draws: the token rule the prefix before the first r >= min(1, p/q),
  // block verification the longest prefix i with eta_i < h_i
  function keptBy(s) {
    let token = 0;
    while (token < s.k && s.uniforms[token] < s.accept_probs[token]) token++;
    let block = 0;
    for (let i = s.k; i >= 1; i--) if (s.uniforms[i - 1] < s.stop_probs[i - 1]) { block = i; break; }
    return { token: token, block: block };
  }

  // Colours come from visualizer.json (figures.PALETTE); fates are the recorded ones (tracefile.js, stepFates).
  function Visualizer(root, data) {
    this.root = root;
    // the opening run comes whole; the others as a line each, with the URL of their file (fetched when chosen)
    this.runs = data.runs.map(function (r) { return r.file ? r : withFates(r); });
    this.palette = data.palette;
    this.chartLayout = data.layout;
    const runs = this.runs;
    // Start on a sampled run: its p and q are real distributions (greedy ones are one-hot).
    this.run = runs.find(function (r) { return r.mode === "sampled"; }) || runs[0];
    // ...at its first step with a rejection: where the rule has something to show (a first step of four accepted
    // drafts at p ≈ q ≈ 0.99 showed nothing)
    const steps = this.run.trace.steps;
    this.step = Math.max(0, steps.findIndex(function (s) { return s.n_accepted < s.k; }));
    this.pos = openingPosition(steps[this.step]);
    this.build();
  }

  // A token axis: positions as x (equal labels never merge), short horizontal tick labels with visible
  // whitespace, the full token text on hover. Labels are entity-escaped (Plotly reads a subset of HTML).
  Visualizer.prototype.shortLabel = function (id, marked) {
    const t = visible(this.tok(id));
    return (t.length > 6 ? t.slice(0, 5) + "\u2026" : t) + (id === marked ? " \u25c0" : "");
  };

  // The first tokens of `ids` whose labels fit side by side, unrotated, on a plot area `width` px wide: a category
  // axis gives every label the same slot, as wide as the widest label (measured) plus a gap. `keep` stays.
  Visualizer.prototype.fitTokens = function (ids, width, marked, keep) {
    const self = this;
    const plot = Math.max(60, width || 240);  // the plot area's width (refit measures it)
    let n = ids.length, shown = ids.slice();
    for (; n >= 1; n--) {
      shown = ids.slice(0, n);
      if (keep !== undefined && keep !== null && shown.indexOf(keep) < 0) shown[n - 1] = keep;
      const widest = Math.max.apply(null, shown.map(function (id) { return textWidth(self.shortLabel(id, marked), 12); }));
      if (n * (widest * 1.1 + 14) <= plot) break;
    }
    return { ids: shown, cut: ids.length - shown.length };
  };

  // Draw a token chart for a guessed plot width (the last one measured, else the chart's less its margins), then,
  // once Plotly has laid it out, again for the plot area's measured width if that differs.
  function refit(div, draw) {
    const guess = div._specdecPlotWidth || (div.clientWidth || 320) - 75;  // the last measured width, if any
    draw(guess).then(function () {
      const area = div.querySelector(".nsewdrag");
      const width = area ? area.getBoundingClientRect().width : 0;
      if (width > 0) div._specdecPlotWidth = width;
      if (width > 0 && Math.abs(width - guess) > 1) return draw(width);
    });
  }

  Visualizer.prototype.tokenAxis = function (ids, marked) {
    const self = this;
    const full = ids.map(function (id) { return visible(self.tok(id)); });
    const short = ids.map(function (id) { return esc(self.shortLabel(id, marked)); });
    const x = ids.map(function (_, i) { return i; });
    return { x: x, hover: full.map(esc), layout: { tickmode: "array", tickvals: x, ticktext: short, tickangle: 0, automargin: true } };
  };

  // A run's place in the prompt selector: its prompt, policy and drafter (a prompt's chain and tree runs share a
  // policy, fixed)
  Visualizer.prototype.runKey = function (r) {
    return r.prompt.id + "|" + r.policy + "|" + (r.trace.drafter === "tree" ? "tree" : "chain") +
      (r.trace.verify === "block" ? "|block" : "") + (sampledChildren(r) ? "|rejection" : "");
  };
  // A token-tree run verified by recursive rejection sampling (its children drawn from q), beside the same prompt's
  // sample-and-match one
  function sampledChildren(r) { return r.file ? !!r.rejection : r.trace.steps.some(traceFile.isRejection); }

  Visualizer.prototype.tok = function (id) {
    const vocab = this.run.vocab, key = String(id);
    return Object.prototype.hasOwnProperty.call(vocab, key) ? vocab[key] : "#" + id;
  };

  Visualizer.prototype.build = function () {
    const self = this;
    const root = this.root;
    root.textContent = "";
    ["accepted", "rejected", "resampled", "bonus"].forEach(function (fate) {
      root.style.setProperty("--sv-" + fate, self.palette[fate]);
    });
    const controls = el("div", { class: "sv-controls" });
    // prompt and mode selectors
    const promptSel = el("select", { "aria-label": "Prompt", id: "sv-prompt" });
    const seen = {};
    this.runs.forEach(function (r) {
      const key = self.runKey(r);
      if (seen[key]) return;
      seen[key] = true;
      const tree = r.trace.drafter === "tree";
      // the tree's size: its largest step's (a step of 0 nodes, near max_new_tokens, may come first)
      const nodes = r.file ? r.nodes : r.trace.steps.reduce(function (most, s) { return Math.max(most, s.k); }, 0);
      const policy = tree ? "token tree" + (sampledChildren(r) ? " (sampled children)" : "") + ", " + nodes + " nodes, depth ≤ " + r.trace.k
        : (r.policy === "fixed" ? "k = " + r.trace.k : r.policy + " policy, k ≤ " + r.trace.k) +
          (r.trace.verify === "block" ? ", block verification" : "");
      promptSel.appendChild(el("option", { value: key }, r.domain + ": " + r.prompt.id + " (" + policy + ")"));
    });
    const modeSel = el("select", { "aria-label": "Sampling mode", id: "sv-mode" });
    ["greedy", "sampled"].filter(function (m) { return self.runs.some(function (r) { return r.mode === m; }); })
      .forEach(function (m) { modeSel.appendChild(el("option", { value: m }, m)); });
    // named by their visible text (an aria-label that differs from it, "Previous step" on "◀ prev", fails WCAG 2.5.3)
    const prev = el("button", { type: "button", class: "md-button", id: "sv-prev", title: "Previous step" }, "\u25c0 prev step");
    const next = el("button", { type: "button", class: "md-button", id: "sv-next", title: "Next step" }, "next step \u25b6");
    const slider = el("input", { type: "range", min: "0", value: "0", id: "sv-slider", "aria-label": "Step" });
    const label = el("span", { class: "sv-step-label", "aria-live": "polite" });
    const nav = el("div", { class: "sv-nav" });
    nav.append(prev, slider, next);
    const promptLabel = el("label", { for: "sv-prompt" }, "Prompt ");
    const modeLabel = el("label", { for: "sv-mode" }, " Mode ");
    const fileInput = el("input", { type: "file", accept: ".json,application/json", id: "sv-file", class: "sv-file-input" });
    const fileLabel = el("label", { for: "sv-file", class: "md-button sv-file" }, "Open a trace file");
    controls.append(promptLabel, promptSel, modeLabel, modeSel, fileInput, fileLabel);
    root.appendChild(controls);
    root.appendChild(el("p", { class: "sv-file-status", role: "status", "aria-live": "polite" }));
    fileInput.addEventListener("change", function () { if (fileInput.files[0]) self.openFile(fileInput.files[0]); fileInput.value = ""; });
    root.addEventListener("dragover", function (e) { e.preventDefault(); root.classList.add("sv-dragging"); });
    root.addEventListener("dragleave", function () { root.classList.remove("sv-dragging"); });
    root.addEventListener("drop", function (e) {
      e.preventDefault();
      root.classList.remove("sv-dragging");
      if (e.dataTransfer && e.dataTransfer.files[0]) self.openFile(e.dataTransfer.files[0]);
    });
    root.appendChild(nav);
    root.appendChild(label);
    root.appendChild(el("p", { class: "sv-prompt-text" }));
    const legend = el("div", { class: "sv-legend" });
    [["accepted", "accepted draft"], ["rejected", "rejected draft"], ["resampled", "resampled from residual"],
     ["bonus", "bonus token"]].forEach(function (pair) {
      legend.appendChild(el("span", { class: "sv-tok sv-" + pair[0] }, pair[1]));
    });
    root.appendChild(legend);
    root.appendChild(el("div", { class: "sv-strip", role: "list",
      "aria-label": "Generated tokens by step: one Tab stop, ← and → move between steps" }));
    root.appendChild(el("div", { class: "sv-detail" }));
    const charts = el("div", { class: "sv-charts" });
    // each chart named for a screen reader (role "figure": Plotly's toolbar buttons are inside); the step's table
    // below holds the same numbers as text
    charts.append(el("div", { class: "sv-chart", id: "sv-chart-pq", role: "figure",
                              "aria-label": "p and q of each drafted token at this step (the table below lists them)" }),
                  el("div", { class: "sv-chart", id: "sv-chart-accept", role: "figure",
                              "aria-label": "Each draft's acceptance probability against its uniform draw (the table below lists them)" }));
    root.appendChild(charts);
    const mask = el("div", { class: "sv-mask" });
    mask.style.display = "none";
    root.appendChild(mask);
    root.appendChild(el("div", { class: "sv-chart", id: "sv-chart-residual", role: "figure",
                                 "aria-label": "The residual the extra token is drawn from, at a rejection" }));

    function pick() {
      const found = self.runs.find(function (r) { return self.runKey(r) === promptSel.value && r.mode === modeSel.value; });
      if (!found) return;
      self.loadRun(found).then(function (run) {
        if (!run) return;
        self.run = run; self.step = 0; self.pos = openingPosition(run.trace.steps[0]); self.renderRun();
      });
    }
    promptSel.addEventListener("change", pick);
    modeSel.addEventListener("change", pick);
    prev.addEventListener("click", function () { self.go(self.step - 1); });
    next.addEventListener("click", function () { self.go(self.step + 1); });
    slider.addEventListener("input", function () { self.go(parseInt(slider.value, 10)); });
    // ←/→ step through the run wherever the focus is on the page (the intro promises it), except in a form
    // control, whose own arrows they are. One listener per page: instant navigation re-creates the widget.
    if (window._specdecKeys) document.removeEventListener("keydown", window._specdecKeys);
    window._specdecKeys = function (e) {
      if (!document.body.contains(root) || e.altKey || e.ctrlKey || e.metaKey) return;
      const tag = (e.target && e.target.tagName) || "";
      if (tag === "SELECT" || tag === "INPUT" || tag === "TEXTAREA" || (e.target && e.target.isContentEditable)) return;
      if (e.key === "ArrowRight") { self.go(self.step + 1); e.preventDefault(); }
      if (e.key === "ArrowLeft") { self.go(self.step - 1); e.preventDefault(); }
    };
    document.addEventListener("keydown", window._specdecKeys);
    this.renderRun();
  };

  // A run of the page that came as a line (its file's URL): fetched once, then whole in this.runs. The status line
  // says what is loading, and why a run could not be (the page's other runs stay).
  Visualizer.prototype.loadRun = function (r) {
    const self = this;
    if (!r.file) return Promise.resolve(r);
    const status = this.root.querySelector(".sv-file-status");
    const ticket = this.loading = (this.loading || 0) + 1;  // a run chosen later wins over one still loading
    status.textContent = "Loading the run\u2026";
    status.setAttribute("aria-busy", "true");
    return fetch(r.file).then(function (response) {
      if (!response.ok) throw new Error("HTTP " + response.status);
      return response.json();
    }).then(function (full) {
      const run = withFates(full);
      const i = self.runs.indexOf(r);
      if (i >= 0) self.runs[i] = run;
      status.setAttribute("aria-busy", "false");
      if (ticket !== self.loading) return null;
      status.textContent = "";
      status.classList.remove("sv-file-error");
      return run;
    }).catch(function (err) {
      status.setAttribute("aria-busy", "false");
      status.classList.add("sv-file-error");
      status.textContent = "Could not load this run (" + err.message + "); reload the page to try again.";
      return null;
    });
  };

  // A trace file: read, parsed and checked (tracefile.js), then drawn; its runs replace the page's only once they are
  // drawn (the selectors list the file's runs). A bad file, or one the page fails to draw, leaves the page's runs as
  // they were and says why. A big file says so at once: a 52 MB one took 14.5 s before its first word.
  Visualizer.prototype.openFile = function (file) {
    const self = this;
    const name = traceFile.short(file.name, 80);
    const ticket = this.opening = (this.opening || 0) + 1;  // a file opened later wins over one still being read
    const status = function (text, bad, busy) {
      const p = self.root.querySelector(".sv-file-status");
      p.textContent = text;
      p.classList.toggle("sv-file-error", !!bad);
      p.setAttribute("aria-busy", busy ? "true" : "false");
    };
    if (file.size > traceFile.MAX_BYTES) { status("Not opened: " + name + " is larger than 64 MB.", true); return; }
    status("Reading " + name + " (" + sizeText(file.size) + ")\u2026", false, true);
    file.text().then(function (text) {
      if (ticket !== self.opening) return;
      let doc;
      try {
        doc = traceFile.parse(text);
        traceFile.check(doc);
      } catch (err) {
        throw new Error("is not a specdec trace file: " + err.message);
      }
      const message = traceFile.describe(name, doc);
      self.replaceRuns(doc.runs.map(withFates));
      status(message, false);
    }).catch(function (err) {
      if (ticket === self.opening) status("Not opened: " + name + " " + traceFile.short(err.message, 240), true);
    });
  };
  function sizeText(bytes) {
    if (bytes >= 1024 * 1024) return (bytes / 1024 / 1024).toFixed(bytes >= 10 * 1024 * 1024 ? 0 : 1) + " MB";
    return bytes >= 1024 ? Math.round(bytes / 1024) + " KB" : bytes + " bytes";
  }

  // The file's runs, drawn in full before they are the page's: when drawing throws (a renderer's bug the checks did
  // not foresee), the page's runs, run, step and position come back and are drawn again, and the file is refused;
  // the page was left half-drawn, its own runs gone until a reload.
  Visualizer.prototype.replaceRuns = function (runs) {
    const before = { runs: this.runs, run: this.run, step: this.step, pos: this.pos };
    try {
      this.runs = runs;
      this.run = runs[0];
      this.step = 0;
      this.pos = openingPosition(runs[0].trace.steps[0]);
      this.build();
    } catch (err) {
      this.runs = before.runs;
      this.run = before.run;
      this.step = before.step;
      this.pos = before.pos;
      this.build();
      throw new Error("could not be drawn (" + err.message + "); the page's runs are kept");
    }
  };

  // The position a step opens on: its rejected draft, where the rule had something to decide, else the first.
  function openingPosition(s) {
    if (isTree(s)) {  // the first child the rule rejected, else the path's last node; none in a tree of 0 nodes
      if (s.k === 0) return -1;
      const missed = s.fates.indexOf("rejected");
      return missed >= 0 ? missed : (s.path.length ? s.path[s.path.length - 1] : 0);
    }
    return s.n_accepted < s.k ? s.n_accepted : 0;
  }
  Visualizer.prototype.go = function (i) {
    const n = this.run.trace.steps.length;
    this.step = Math.max(0, Math.min(n - 1, i));
    this.pos = openingPosition(this.run.trace.steps[this.step]);
    this.renderStep();
  };

  Visualizer.prototype.renderRun = function () {
    const self = this;
    const run = this.run;
    this.root.querySelector("#sv-prompt").value = this.runKey(run);
    this.root.querySelector("#sv-mode").value = run.mode;
    this.root.querySelector("#sv-slider").max = String(run.trace.steps.length - 1);
    this.root.querySelector(".sv-prompt-text").textContent = "Prompt: " + run.prompt.text;
    const strip = this.root.querySelector(".sv-strip");
    strip.textContent = "";
    run.trace.steps.forEach(function (s, i) {
      const group = el("span", { class: "sv-step", role: "listitem", "data-step": String(i) });
      // a chain: its drafts up to the first rejection; a tree: its path (the other branches are in the step's view)
      const shown = isTree(s) ? s.path : s.draft_tokens.map(function (_, j) { return j; });
      shown.forEach(function (j) {
        if (s.fates[j] === "not evaluated") return;  // drafts after the first rejection
        group.appendChild(self.tokenButton(s.draft_tokens[j], s.fates[j], i));
      });
      if (s.extra_fate) group.appendChild(self.tokenButton(s.bonus_token !== null ? s.bonus_token : s.resampled_token, s.extra_fate, i));
      strip.appendChild(group);
    });
    this.renderStep();
  };

  // A token of the strip: its text as written, so that code keeps its layout (spaces as spaces, a newline ends the
  // line after a ↵ that shows it; ␣/↵ for every character had made code unreadable). Inline, so that the text
  // flows; a button to the keyboard and to screen readers.
  // The table is rebuilt when a row is chosen: the focus goes back to that row, not to the page's <body>.
  Visualizer.prototype.focusRow = function (j) {
    const row = this.root.querySelector('.sv-detail tr[data-pos="' + j + '"]');
    if (row) row.focus();
  };

  Visualizer.prototype.tokenButton = function (id, fate, step) {
    const self = this;
    const text = this.tok(id);
    const b = el("span", { role: "button", tabindex: "-1", class: "sv-tok sv-" + fate,
                          title: fate + " (step " + (step + 1) + "): " + visible(text) },
      text.replace(/\n/g, "\u21b5\n").replace(/\t/g, "\u21e5\t") || "\u2205");
    b.addEventListener("click", function () { self.go(step); });
    b.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { self.go(step); e.preventDefault(); } });
    return b;
  };

  // A step's common frame: the slider, the label, the strip's current step, and an empty detail with the step's
  // table (its header row) in it, which is returned.
  Visualizer.prototype.startStep = function (label, cls, headers) {
    const self = this;
    this.root.querySelector("#sv-slider").value = String(this.step);
    this.root.querySelector(".sv-step-label").textContent =
      "step " + (this.step + 1) + " / " + this.run.trace.steps.length + ": " + label;
    this.root.querySelectorAll(".sv-step").forEach(function (g) {
      g.classList.toggle("sv-current", g.dataset.step === String(self.step));
    });
    // The strip is one Tab stop (a roving tabindex): the current step's first token; ←/→ move between steps, and
    // the focus follows the step when it was in the strip.
    const active = document.activeElement;
    const inStrip = !!(active && active.classList && active.classList.contains("sv-tok") && this.root.contains(active));
    this.root.querySelectorAll(".sv-tok[tabindex='0']").forEach(function (b) { b.setAttribute("tabindex", "-1"); });
    const current = this.root.querySelector('.sv-step[data-step="' + this.step + '"] .sv-tok');
    if (current) {
      current.setAttribute("tabindex", "0");
      if (inStrip) current.focus();
    }
    const detail = this.root.querySelector(".sv-detail");
    detail.textContent = "";
    const table = el("table", { class: cls });
    const head = el("tr");
    headers.forEach(function (h) { head.appendChild(el("th", {}, h)); });
    table.appendChild(head);
    detail.appendChild(table);
    return table;
  };

  Visualizer.prototype.renderStep = function () {
    const self = this;
    const s = this.run.trace.steps[this.step];
    if (isTree(s)) { this.renderTreeStep(s); return; }
    const blockRun = this.run.trace.verify === "block";
    // the step's table: every draft position, with its numbers (under block verification: the kept prefix, every
    // prefix's draw eta compared with its h_i, and the drafts past the kept prefix not kept)
    // the label is a live region: a screen reader hears what the step did (its count, where it stopped, its own token)
    const own = s.bonus_token !== null && s.bonus_token !== undefined
      ? "; bonus token " + quoted(this.tok(s.bonus_token))
      : s.resampled_token !== null && s.resampled_token !== undefined
        ? (blockRun ? "; then " : "; rejected at position " + (s.n_accepted + 1) + ", resampled ") + quoted(this.tok(s.resampled_token))
        : "";
    const table = this.startStep(s.k === 0 ? "no drafts" + own : s.n_accepted + " of " + s.k + " draft" + (s.k === 1 ? "" : "s") +
      (blockRun ? " kept by block verification" : " accepted") + own, "sv-table",
      ["pos", "draft token x", "q(x)", "p(x)", "min(1, p/q)"].concat(blockRun ? ["h (keep prefix)", "draw η", "fate"] : ["draw r", "fate"]));
    const detail = this.root.querySelector(".sv-detail");
    s.draft_tokens.forEach(function (t, j) {
      // one vocabulary for every step: block verification decides every draft past its kept prefix, so those are
      // rejected (not "not evaluated", as after a token-rule rejection)
      const fate = blockRun && j >= s.n_accepted ? "rejected" : s.fates[j];
      const row = el("tr", { class: "sv-row" + (j === self.pos ? " sv-row-current" : ""), tabindex: "0", "data-pos": String(j) });
      [String(j + 1), visible(self.tok(t)), fmt(s.q_draft_tokens[j]), fmt(s.p_draft_tokens[j]), fmt(s.accept_probs[j])]
        .concat(blockRun ? [fmt(s.stop_probs[j]), fmt(s.uniforms[j]), fate]
          : [fate === "not evaluated" ? "–" : fmt(s.uniforms[j]), fate]).forEach(function (c) { row.appendChild(el("td", {}, c)); });
      function choose() { self.pos = j; self.renderStep(); self.focusRow(j); }
      row.addEventListener("click", choose);
      row.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { choose(); e.preventDefault(); } });
      table.appendChild(row);
    });
    const extra = s.k === 0
      ? "No drafts this step (its budget was 0: the last token before max_new_tokens, or no n-gram match): the target " +
        "pass emitted " + quoted(this.tok(s.emitted[0])) + " from its own p, as plain decoding would."
      : s.bonus_token !== null
      ? (s.k === 1 ? "The draft was accepted" : "All " + s.k + " drafts accepted") + ": bonus token " +
        quoted(this.tok(s.bonus_token)) + " drawn from the target's next distribution p."
      : blockRun
      ? "Block verification kept " + s.n_accepted + " draft" + (s.n_accepted === 1 ? "" : "s") + ": token " +
        quoted(this.tok(s.resampled_token)) + " drawn from that prefix's residual norm(max(0, w\u00b7p \u2212 q)), w = " +
        (s.n_accepted ? fmt(s.block_weights[s.n_accepted - 1]) : "1") + "."
      : "Rejected at position " + (s.n_accepted + 1) + ": token " + quoted(this.tok(s.resampled_token)) +
        " resampled from norm(max(0, p \u2212 q)).";
    detail.appendChild(el("p", { class: "sv-extra" }, extra));
    if (s.k > 0 && Array.isArray(s.stop_probs) && this.run.mode === "sampled") this.renderBlockTable(s, blockRun);
    this.renderCharts(s);
  };

  // Block verification beside the token rule on this step's drafts (Sun et al. 2025; the math page's eq. of h_i):
  // each prefix's weight w_i (the running product of p/q, capped at 1), the token rule's chance of keeping it
  // (the product of min(1, p/q) up to it) and block verification's h_i, and what either keeps with the step's draws.
  Visualizer.prototype.renderBlockTable = function (s, blockRun) {
    const detail = this.root.querySelector(".sv-detail");
    const kept = keptBy(s);
    const other = blockRun ? "token rule" : "block verification";
    detail.appendChild(el("p", { class: "sv-extra sv-block-note" }, "The same drafts under both rules. With this step's draws the token rule keeps " +
      kept.token + " and block verification keeps " + kept.block + " of " + s.k + " (this run used the " +
      (blockRun ? "block" : "token") + " rule; the " + other + "'s count is what it would have kept with the same draws)." +
      blockNotice(s, kept)));
    const table = el("table", { class: "sv-table sv-block-table" });
    const head = el("tr");
    ["prefix i", "w_i = min(1, w_{i\u22121} p/q)", "token rule: \u220f min(1, p/q)", "block: h_i", "draw"].forEach(function (h) { head.appendChild(el("th", {}, h)); });
    table.appendChild(head);
    let survive = 1;
    for (let i = 0; i < s.k; i++) {
      survive *= s.accept_probs[i];
      const row = el("tr");
      [String(i + 1), fmt(s.block_weights[i]), fmt(survive), fmt(s.stop_probs[i]), fmt(s.uniforms[i])].forEach(function (c) { row.appendChild(el("td", {}, c)); });
      table.appendChild(row);
    }
    detail.appendChild(table);
  };

  // A tree step shows its mask where a chain step shows its draws against min(1, p/q) (hidden, not purged: a purge
  // races Plotly's pending redraws)
  function showTreeView(root, tree) {
    root.querySelector("#sv-chart-accept").style.display = tree ? "none" : "";
    root.querySelector(".sv-mask").style.display = tree ? "" : "none";
  }

  // A tree step: the tree as an indented table (depth-first, each node's q and its p at its parent, under recursive
  // rejection sampling its acceptance probability and draw where the rule tried it, the path marked), the rule's
  // draws down it, the mask and positions of the target's one pass, p at the chosen node's parent with the drafted
  // children marked, and the distribution the step's own token came from. A tree of 0 nodes (a budget of 0) has no
  // rows, no mask and no chosen node: the target's one draw is the step's token.
  Visualizer.prototype.renderTreeStep = function (s) {
    const self = this;
    const rejection = traceFile.isRejection(s);
    const depths = nodeDepths(s.parents);
    const depth = depths.reduce(function (most, d) { return Math.max(most, d); }, 0);
    const first = this.run.trace.prompt_length + s.position;  // the slot of the step's first new token
    // under rejection, each tried node's draw (in the order tried); an untried node has none, and no acceptance
    // probability (null: "not tried", never "NaN")
    const draw = s.parents.map(function () { return null; });
    if (rejection) traceFile.triedNodes(s).forEach(function (j, t) { draw[j] = s.uniforms[t]; });
    const table = this.startStep(s.k === 0 ? "no drafts (a tree of 0 nodes)" : "a tree of " + s.k + " nodes, " + depth + " deep; " +
      s.n_accepted + " accepted on its path", "sv-table sv-tree", ["node", "token x (indented by depth)", "q(x)", "p(x) at its parent"]
      .concat(rejection ? ["accept prob", "draw r"] : [], ["position", "fate"]));
    const detail = this.root.querySelector(".sv-detail");
    treeOrder(s.parents).forEach(function (j) {
      const row = el("tr", { class: "sv-row" + (j === self.pos ? " sv-row-current" : "") + (s.fates[j] === "accepted" ? " sv-on-path" : ""), tabindex: "0", "data-pos": String(j) });
      const indent = "\u2003".repeat(depths[j] - 1) + (depths[j] > 1 ? "\u2514 " : "");
      [String(j + 1), indent + visible(self.tok(s.draft_tokens[j])), fmt(s.q_draft_tokens[j]), fmt(s.p_draft_tokens[j])]
        .concat(rejection ? [s.accept_probs[j] === null ? "not tried" : fmt(s.accept_probs[j]), fmt(draw[j])] : [],
          [String(first + depths[j] - 1), s.fates[j]]).forEach(function (c) { row.appendChild(el("td", {}, c)); });
      function choose() { self.pos = j; self.renderStep(); self.focusRow(j); }
      row.addEventListener("click", choose);
      row.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { choose(); e.preventDefault(); } });
      table.appendChild(row);
    });
    const wrap = el("div", { class: "sv-mask-scroll" });  // wider than a phone: it scrolls, the page does not
    detail.replaceChild(wrap, table);
    wrap.appendChild(table);
    detail.appendChild(el("p", { class: "sv-extra" }, s.k === 0 ? this.noNodesText(s)
      : (rejection ? this.rejectionText(s) : this.matchText(s)) + branchNotice(s)));
    this.renderTreeCharts(s, depths, first);
  };

  // What to notice on a block step where the two rules part. Block verification keeps more in expectation over the
  // drafts, not on every step: after a low first ratio its weights w_i are small, and where p ≈ q after it the
  // residual mass m_i is near 0, so h_i is near 0 below k: the block is kept whole (h_k = w_k) or hardly at all.
  function blockNotice(s, kept) {
    if (kept.block === kept.token) return "";
    const h = s.stop_probs.map(function (x) { return fmt(x); }).join(", ");
    if (kept.block > kept.token)
      return " What to notice: block verification kept more. The token rule stopped at a draft whose ratio p/q was " +
        "below 1; the block rule weighed the prefix as a whole, and the drafts after it, which the target likes more " +
        "than the draft does, paid for it (w carries that surplus forward). h = " + h + ".";
    return " What to notice: block verification kept fewer. It is ahead in expectation over the drafts, not on every " +
      "step: here h = " + h + ". A low ratio early makes the weights w small; where p and q are close after it, the " +
      "residual mass m_i is near 0, so h_i is near 0 for the shorter prefixes and the block is kept whole (with " +
      "probability h_k = w_k) or hardly at all.";
  }

  // A token tree's path through a child that is not its parent's first: where a chain of the draft's first choices
  // would have stopped and the tree went on (what a tree is for)
  function branchNotice(s) {
    const depth = s.path.findIndex(function (j) {
      const siblings = s.parents.map(function (a, i) { return a === s.parents[j] ? i : -1; }).filter(function (i) { return i >= 0; });
      return siblings.indexOf(j) > 0;
    });
    if (depth < 0) return "";
    const j = s.path[depth];
    const siblings = s.parents.filter(function (a) { return a === s.parents[j]; }).length;
    const rank = s.parents.slice(0, j).filter(function (a) { return a === s.parents[j]; }).length + 1;
    return " What to notice: at depth " + (depth + 1) + " the target's draw matched node " + (j + 1) + ", the draft's choice #" +
      rank + " of " + siblings + " there, not its first. A chain of the draft's first choices would have stopped after " +
      depth + " accepted token" + (depth === 1 ? "" : "s") + "; the tree kept going and this step wrote " + s.emitted.length +
      " tokens for one target pass.";
  }

  // A tree of 0 nodes: nothing drafted, the target's pass drew the step's token from its own p
  Visualizer.prototype.noNodesText = function (s) {
    return "No nodes this step (its budget was 0: the last token before max_new_tokens, or a tree shape whose ranks " +
      "all lie past the vocabulary): the target pass emitted " + quoted(this.tok(s.emitted[0])) + " (r = " + fmt(s.uniforms[0]) +
      ") from its own p, as plain decoding would.";
  };

  // Sample and match's draws, root to the emitted token: each at the node the rule stood on, y ~ p there
  Visualizer.prototype.matchText = function (s) {
    const self = this;
    const draws = s.uniforms.map(function (r, i) {
      const at = i === 0 ? "After the prefix" : "at node " + (s.path[i - 1] + 1);
      if (i < s.path.length) return at + " (r = " + fmt(r) + "): " + visible(self.tok(s.draft_tokens[s.path[i]])) + ", node " + (s.path[i] + 1) + ": descend";
      if (i >= s.emitted.length) return at + " (r = " + fmt(r) + "): cut by the end-of-sequence token";
      return at + " (r = " + fmt(r) + "): " + visible(self.tok(s.emitted[i])) +
        (s.bonus_token !== null ? ", a leaf's bonus token from p" : ", not a child: emitted (drawn from p with the missed children removed)");
    });
    return "Sample and match: draw y ~ p at a node; if y is a child, descend to it, else emit y. " + draws.join("; ") +
      ". The q column is the draft's own probability of each node's token; its children are its top-ranked tokens, " +
      "chosen, not drawn, so the rule needs only p.";
  };

  // Recursive rejection sampling's draws, in the order tried: each child tried at a node against its acceptance
  // probability, then the draw of the step's own token
  Visualizer.prototype.rejectionText = function (s) {
    const self = this;
    const tried = traceFile.triedNodes(s);
    const draws = tried.map(function (j, t) {
      const on = s.path.indexOf(j) >= 0;
      return (s.parents[j] < 0 ? "after the prefix" : "at node " + (s.parents[j] + 1)) + ", node " + (j + 1) + " " +
        visible(self.tok(s.draft_tokens[j])) + " (r = " + fmt(s.uniforms[t]) + (on ? " < " : " \u2265 ") + fmt(s.accept_probs[j]) +
        "): " + (on ? "accepted, descend" : "rejected");
    });
    const last = s.path.length ? s.path[s.path.length - 1] : -1;
    const at = (last < 0 ? "after the prefix" : "at node " + (last + 1)) + " (r = " + fmt(s.uniforms[tried.length]) + "): ";
    draws.push(s.emitted.length <= s.path.length ? at + "cut by the end-of-sequence token"
      : at + visible(this.tok(s.emitted[s.path.length])) + (s.bonus_token !== null ? ", a leaf's bonus token from p"
        : ", every child rejected: drawn from the residual they left"));
    const text = draws.join("; ");
    return "Recursive rejection sampling: a node's children were drawn from q without replacement and are tried in " +
      "order, child c accepted iff r < its acceptance probability (the first child's min(1, p/q), a later one's from " +
      "the residual the rejected ones left); after an acceptance, descend; when every child is rejected, emit a token " +
      "from the residual; at a leaf, a bonus token from p. " + text.charAt(0).toUpperCase() + text.slice(1) + ".";
  };

  Visualizer.prototype.renderTreeCharts = function (s, depths, first) {
    const self = this;
    const layoutBase = this.chartLayout;
    const pal = this.palette;
    const rejection = traceFile.isRejection(s);
    const j = s.k === 0 ? -1 : Math.max(0, Math.min(this.pos, s.k - 1));  // the chosen node; none in a tree of 0 nodes
    const chosen = j < 0 ? null : s.draft_tokens[j];
    const parent = j < 0 ? -1 : s.parents[j];
    const siblings = s.parents.map(function (a, i) { return a === parent ? i : -1; }).filter(function (i) { return i >= 0; });
    const childTokens = siblings.map(function (i) { return s.draft_tokens[i]; });
    // p at the chosen node's parent (top_p[0]: after the prefix; top_p[1 + i]: after node i), the children marked
    const p = s.top_p[parent + 1];
    const pv = {};
    p.ids.forEach(function (id, i) { pv[id] = p.probs[i]; });
    const ids = Array.from(new Set(p.ids.concat(childTokens))).filter(function (id) { return (pv[id] || 0) > 0 || childTokens.indexOf(id) >= 0; });
    ids.sort(function (a, b) { return (pv[b] || 0) - (pv[a] || 0); });
    const pq = document.getElementById("sv-chart-pq");
    showTreeView(this.root, true);
    function drawP(width) {
      const fit = self.fitTokens(ids, width, chosen, chosen);
      const axis = self.tokenAxis(fit.ids, chosen);
      const where = parent < 0 ? "after the prefix" : "at node " + (parent + 1);
      const title = j < 0 ? "p after the prefix: nothing drafted, the step's token was drawn from it"
        : "p " + where + (rejection ? ": its children were drawn from q and tried in order" : ": the draw picks a child with this mass") +
          " (\u25c0 node " + (j + 1) + ")";
      return react(pq, [
        { type: "bar", name: "p (target), a drafted child", x: axis.x, hovertext: axis.hover, hoverinfo: "text+y+name", marker: { color: pal.accept },
          y: fit.ids.map(function (id) { return childTokens.indexOf(id) >= 0 ? (pv[id] || 0) : null; }) },
        { type: "bar", name: "p (target), not drafted", x: axis.x, hovertext: axis.hover, hoverinfo: "text+y+name", marker: { color: tone(pal.p) },
          y: fit.ids.map(function (id) { return childTokens.indexOf(id) < 0 ? (pv[id] || 0) : null; }) },
      ], themed(titled(pq, title,
        Object.assign({}, layoutBase, { barmode: "overlay", legend: LEGEND_BELOW(-0.14), xaxis: axis.layout, yaxis: { title: { text: "probability" }, range: [0, 1] } }))), configFor(pq)).then(noTabStops);
    }
    refit(pq, drawP);
    // the mask of the target's pass, as a grid (node i's row marks the nodes it sees: itself and its ancestors;
    // every node also sees the whole prefix), each node at position prefix + its depth - 1
    const maskDiv = this.root.querySelector(".sv-mask");
    maskDiv.textContent = "";
    if (s.k === 0) {
      maskDiv.appendChild(el("p", { class: "sv-mask-title" }, "No nodes this step: the target's one pass read the prefix only."));
    } else {
      maskDiv.appendChild(this.maskGrid(s, depths, first));
    }
    // where the step's own token came from: p with the rejected children removed, or p at the leaf (the bonus)
    const last = s.path.length ? s.path[s.path.length - 1] : -1;
    const top = s.top_residual || s.top_p[last + 1];
    const kept = top.ids.map(function (_, i) { return i; }).filter(function (i) { return top.probs[i] >= 1e-3; });
    const res = { ids: kept.map(function (i) { return top.ids[i]; }), probs: kept.map(function (i) { return top.probs[i]; }) };
    const title = s.top_residual ? "p at node " + (last + 1 || "root") + " with the " + (rejection ? "rejected" : "missed") +
        " children removed: the emitted token's distribution"
      : (s.k === 0 ? "p after the prefix: the distribution this step's token was drawn from" : "p at the leaf: the bonus token's distribution");
    const resDiv = document.getElementById("sv-chart-residual");
    function drawResidual(width) {
      const fit = self.fitTokens(res.ids, width, null, null);
      const axis = self.tokenAxis(fit.ids, null);
      return react(resDiv, [
        { type: "bar", name: s.top_residual ? "residual" : "p", x: axis.x, y: res.probs.slice(0, fit.ids.length), hovertext: axis.hover, hoverinfo: "text+y", marker: { color: tone(s.top_residual ? pal.residual : pal.p) } },
      ], themed(titled(resDiv, title + (fit.cut > 0 ? "; top " + fit.ids.length + " of " + res.ids.length : ""),
        Object.assign({}, layoutBase, { xaxis: axis.layout, yaxis: { range: [0, 1], title: { text: "probability" } } }))), configFor(resDiv)).then(noTabStops);
    }
    refit(resDiv, drawResidual);
  };

  // The mask of a tree's one target pass, its title and its grid (in a scroller: wider than a phone)
  Visualizer.prototype.maskGrid = function (s, depths, first) {
    const self = this;
    const out = document.createDocumentFragment();
    out.appendChild(el("p", { class: "sv-mask-title" }, "The target's one pass over the " + s.k + " nodes: a row's \u25a0 marks " +
      "the nodes it attends to (itself and its ancestors, never a sibling); every node also attends to the whole prefix, " +
      "and sits at position prefix + its depth."));
    const grid = el("table", { class: "sv-table sv-mask-grid" });
    const header = el("tr");
    ["node", "position"].concat(s.draft_tokens.map(function (_, c) { return String(c + 1); })).forEach(function (h) { header.appendChild(el("th", {}, h)); });
    grid.appendChild(header);
    for (let i = 0; i < s.k; i++) {
      const seen = {};
      for (let a = i; a >= 0; a = s.parents[a]) seen[a] = true;
      const row = el("tr", { class: s.fates[i] === "accepted" ? "sv-on-path" : "" });
      row.appendChild(el("td", {}, (i + 1) + " " + visible(self.tok(s.draft_tokens[i]))));
      row.appendChild(el("td", {}, String(first + depths[i] - 1)));
      for (let c = 0; c < s.k; c++) {
        row.appendChild(el("td", { class: seen[c] ? "sv-sees" : "", title: "node " + (i + 1) + (seen[c] ? " sees" : " does not see") + " node " + (c + 1) },
          seen[c] ? "\u25a0" : "\u00b7"));
      }
      grid.appendChild(row);
    }
    const scroller = el("div", { class: "sv-mask-scroll" });
    scroller.appendChild(grid);
    out.appendChild(scroller);
    return out;
  };

  // The legend under the plot, in rows, so that the plot keeps the chart's whole width for its labels (beside it,
  // it took a third of a phone's width). `y`: below the tick labels (and the axis title, if any).
  function LEGEND_BELOW(y) {
    return { orientation: "h", x: 0, xanchor: "left", y: y, yanchor: "top" };
  }

  Visualizer.prototype.renderCharts = function (s) {
    const self = this;
    showTreeView(this.root, false);
    const j = Math.min(this.pos, s.k - 1);
    const layoutBase = this.chartLayout;
    const pal = this.palette;
    const pq = document.getElementById("sv-chart-pq"), accept = document.getElementById("sv-chart-accept");
    if (s.k === 0) {
      // nothing was drafted: no p and q of a draft, no draws; say so instead of leaving the last step's charts
      // (an empty chart with a note, not a purge: a purge races Plotly's pending redraws)
      [[pq, "p and q at the drafted positions"], [accept, "accept iff r < min(1, p/q)"]].forEach(function (pair) {
        const div = pair[0];
        react(div, [], themed(titled(div, pair[1], Object.assign({}, layoutBase, { xaxis: { visible: false },
          yaxis: { visible: false }, annotations: [{ text: "No drafts in this step: nothing to compare or accept.",
            showarrow: false, xref: "paper", yref: "paper", x: 0.5, y: 0.5 }] }))), configFor(div)).then(noTabStops);
      });
    } else {
      // p and q over the union of their top tokens at the chosen position, as many as the chart's width can
      // label (fitTokens), by p then q
      const p = s.top_p[j], q = s.top_q[j];
      const pv = {}, qv = {};
      p.ids.forEach(function (id, i) { pv[id] = p.probs[i]; });
      q.ids.forEach(function (id, i) { qv[id] = q.probs[i]; });
      // tokens with mass under p or q (a greedy step's top-10 lists zeros after its one-hot token); the drafted one stays
      let ids = Array.from(new Set(p.ids.concat(q.ids))).filter(function (id) {
        return (pv[id] || 0) > 0 || (qv[id] || 0) > 0 || id === s.draft_tokens[j];
      });
      ids.sort(function (a, b) { return ((pv[b] || 0) - (pv[a] || 0)) || ((qv[b] || 0) - (qv[a] || 0)); });
      const all = ids;
      function drawPQ(width) {  // the drafted token stays among the labelled ones
        const fit = self.fitTokens(all, width, s.draft_tokens[j], s.draft_tokens[j]);
        const shown = fit.ids, axis = self.tokenAxis(shown, s.draft_tokens[j]);
        const title = "p and q at position " + (j + 1) + " (\u25c0 drafted)" + (fit.cut > 0 ? "; top " + shown.length + " of " + all.length : "");
        return react(pq, [
          { type: "bar", name: "p (target)", x: axis.x, y: shown.map(function (id) { return pv[id] === undefined ? null : pv[id]; }), hovertext: axis.hover, hoverinfo: "text+y+name", marker: { color: tone(pal.p) } },
          { type: "bar", name: "q (draft)", x: axis.x, y: shown.map(function (id) { return qv[id] === undefined ? null : qv[id]; }), hovertext: axis.hover, hoverinfo: "text+y+name", marker: { color: pal.q } },
        ], themed(titled(pq, title, Object.assign({}, layoutBase, { barmode: "group", legend: LEGEND_BELOW(-0.14), xaxis: axis.layout, yaxis: { title: { text: "probability" }, range: [0, 1] } }))), configFor(pq)).then(noTabStops);
      }
      refit(pq, drawPQ);
      // acceptance probability vs the uniform draw, per position; one trace per fate, so the legend's colours
      // are the bars'
      // draft positions on a numeric axis: Plotly thins its ticks to the width (16 "pos n" categories overlapped)
      const pos = s.draft_tokens.map(function (_, i) { return i + 1; });
      const blockRun = this.run.trace.verify === "block";
      const fates = [["accepted", pal.accept], ["rejected", pal.reject], ["not evaluated", pal.unevaluated]];
      // under block verification the bars are the token rule's numbers, for comparison: kept or not is the block's
      const fateName = blockRun ? { "not evaluated": "rejected (decided with the block)" } : {};
      const bars = fates.filter(function (f) { return s.fates.indexOf(f[0]) >= 0; }).map(function (f) {
        return { type: "bar", name: "min(1, p/q): " + (fateName[f[0]] || f[0]), x: pos, marker: { color: f[1] },
                 y: s.accept_probs.map(function (a, i) { return s.fates[i] === f[0] ? a : null; }) };
      });
      const hMarks = Array.isArray(s.stop_probs) && this.run.mode === "sampled"
        ? [{ type: "scatter", mode: "markers", name: "block verification's h_i", x: pos, y: s.stop_probs,
             marker: { symbol: "diamond", size: 11, color: tone(pal.residual) } }] : [];
      const acceptTitle = blockRun ? "keep the longest prefix i with \u03b7_i < h_i (block verification)" : "accept iff r < min(1, p/q)";
      react(accept, bars.concat(hMarks, [
        // r only where it decided something: past the first rejection no draw was compared (block verification
        // compares every prefix's)
        { type: "scatter", mode: "markers", name: blockRun ? "draw \u03b7" : "draw r", x: pos, y: s.uniforms.map(function (r, i) { return !blockRun && s.fates[i] === "not evaluated" ? null : r; }), marker: { symbol: "line-ew-open", size: 28, line: { width: 3 }, color: dark() ? "#fff" : "#000" } },
      ]), themed(titled(accept, acceptTitle, Object.assign({}, layoutBase, { barmode: "overlay", legend: LEGEND_BELOW(-0.36),
        margin: Object.assign({}, layoutBase.margin, { b: 110 }), xaxis: { title: { text: "draft position" }, range: [0.4, s.k + 0.6], tickformat: "d", dtick: s.k <= 8 ? 1 : undefined }, yaxis: { range: [0, 1.05], title: { text: "probability" } } }))), configFor(accept)).then(noTabStops);
    }
    // the residual at a rejection, or the bonus distribution
    // tokens whose bar would be visible (at least 0.1% of the axis): a token with no mass, or a sliver of it, gets
    // no label of its own
    const top = s.top_residual || s.top_p[s.k];
    const kept = top.ids.map(function (_, i) { return i; }).filter(function (i) { return top.probs[i] >= 1e-3; });
    const res = { ids: kept.map(function (i) { return top.ids[i]; }), probs: kept.map(function (i) { return top.probs[i]; }) };
    const title = s.top_residual
      ? (this.run.trace.verify === "block" ? "residual norm(max(0, w\u00b7p \u2212 q)) after the kept prefix, w = " +
        (s.n_accepted ? fmt(s.block_weights[s.n_accepted - 1]) : "1") : "residual norm(max(0, p \u2212 q)) at the rejected position")
      : (s.k === 0 ? "p: the distribution this step's token was drawn from" : "p after the last draft: the bonus token's distribution");
    const resDiv = document.getElementById("sv-chart-residual");
    function drawResidual(width) {
      const fit = self.fitTokens(res.ids, width, null, null);
      const axis = self.tokenAxis(fit.ids, null);
      const text = title + (fit.cut > 0 ? "; top " + fit.ids.length + " of " + res.ids.length : "");
      return react(resDiv, [
        { type: "bar", name: s.top_residual ? "residual" : "p", x: axis.x, y: res.probs.slice(0, fit.ids.length), hovertext: axis.hover, hoverinfo: "text+y", marker: { color: tone(s.top_residual ? pal.residual : pal.p) } },
      ], themed(titled(resDiv, text, Object.assign({}, layoutBase, { xaxis: axis.layout, yaxis: { range: [0, 1], title: { text: "probability" } } }))), configFor(resDiv)).then(noTabStops);
    }
    refit(resDiv, drawResidual);
  };


  function renderVisualizer() {
    const root = document.getElementById("specdec-visualizer");
    const data = document.getElementById("specdec-visualizer-data");
    if (!root || !data) return;
    const vis = new Visualizer(root, JSON.parse(data.content.textContent));
    root._specdec = vis;
  }

  function init() {
    if (!document.getElementById("specdec-visualizer")) return;
    site.withTraceFile(function () {
      traceFile = window.specdecTraceFile;
      renderVisualizer();  // its charts load plotly.js when they come into view (react)
    });
  }
  // Material's instant navigation swaps pages without a reload: document$ emits on every page.
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(init);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();  // loaded on demand (specdec.js loadWidgets), after the page was parsed
  }
  // Re-theme the charts when the palette toggle changes the colour scheme.
  new MutationObserver(function () {
    const root = document.getElementById("specdec-visualizer");
    if (root && root._specdec) root._specdec.renderStep();
  }).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
})();
