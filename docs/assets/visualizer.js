/* specdec Step Visualizer: the recorded steps of a run (docs/figures/visualizer.json, through the page), or of a
 * trace file the reader opens (read in the browser, checked before anything of it is drawn). Its own file, so that
 * the tree view has a home; the helpers it shares with the figures and the Playground come from specdec.js
 * (window.specdecSite), which loads first. Model text only reaches the DOM through textContent. */
(function () {
  "use strict";

  const site = window.specdecSite;
  const dark = site.dark, tone = site.tone, themed = site.themed, titled = site.titled, el = site.el, esc = site.esc,
    visible = site.visible, fmt = site.fmt, textWidth = site.textWidth, configFor = site.configFor,
    noTabStops = site.noTabStops;

  // Plotly.react, one call at a time per chart: a call made while the chart's last one is still drawing waits for
  // it. Two runs rendered in one JavaScript task, a token-tree run then a chain run, otherwise left Plotly laying out
  // a chart forever (layoutStyles, in a later task): the accept chart is hidden for the tree and shown again.
  function react(div, data, layout, config) {
    const drawn = (div._specdecDrawn || Promise.resolve()).catch(function () {}).then(function () {
      return Plotly.react(div, data, layout, config);
    });
    div._specdecDrawn = drawn;
    return drawn;
  }

  // Each drafted token's fate and the fate of the step's own extra token, as the decoder recorded them
  // (specdec.trace.step_fates, once, when the step ran; the site's files and the Playground's race read the same). A
  // trace file written before they were recorded (schema 7 and older) gets them from its counts by the decoder's
  // rule (derivedFates); a file that records fates contradicting its counts is refused (checkStep).
  function stepFates(s) {
    if (Array.isArray(s.fates)) return { fates: s.fates, extra_fate: s.extra_fate === undefined ? null : s.extra_fate };
    return derivedFates(s);
  }
  function derivedFates(s) {
    if (isTree(s)) return treeFates(s);
    const n = s.n_accepted;
    const fates = s.draft_tokens.map(function (_, j) { return j < n ? "accepted" : (j === n ? "rejected" : "not evaluated"); });
    // no extra token when the output was cut at an end-of-sequence token inside the accepted prefix
    const extra = s.emitted.length <= n ? null : (s.bonus_token !== null ? "bonus" : "resampled");
    return { fates: fates, extra_fate: extra };
  }
  // A token-tree step (specdec/tree.py) lists each node's parent and the accepted path, root to leaf: the path's
  // nodes are accepted, the children of its last node (which the target's draw missed) rejected, every other node
  // never evaluated; the step's own token is a bonus where the path ends at a leaf, else drawn from what the missed
  // children left (specdec.trace.step_fates).
  function isTree(s) { return s.parents !== undefined && s.parents !== null; }
  function treeFates(s) {
    const last = s.path.length ? s.path[s.path.length - 1] : -1;
    const fates = s.parents.map(function (parent, j) {
      return s.path.indexOf(j) >= 0 ? "accepted" : (parent === last ? "rejected" : "not evaluated");
    });
    const extra = s.emitted.length <= s.n_accepted ? null : (s.bonus_token !== null ? "bonus" : "resampled");
    return { fates: fates, extra_fate: extra };
  }
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
  function withFates(run) {
    const steps = run.trace.steps.map(function (s) { return Object.assign({}, s, stepFates(s)); });
    return Object.assign({}, run, { trace: Object.assign({}, run.trace, { steps: steps }) });
  }

  // ------------------------------------------------------------------ a trace file the reader opens
  // The file is read in the browser (nothing is uploaded) and checked against the traces artifact's shape
  // (docs/data/schema.json) before anything of it is shown; its text reaches the page only as text.
  const MAX_TRACE_BYTES = 64 * 1024 * 1024;
  function isInt(x) { return Number.isInteger(x); }
  function isProb(x) { return typeof x === "number" && isFinite(x) && x >= 0 && x <= 1 + 1e-6; }
  // What a trace file may hold, far above what the build and the trace command write (top-10 lists, k <= 64, a few
  // thousand tokens): a file past these is refused before anything is drawn (a 200,000-id list overflowed the
  // stack, a 2,000-id one froze the page for 40 s in the label fitting, k = 100,000 never finished).
  const LIMITS = { k: 64, nodes: 256, top: 64, steps: 20000, runs: 200, id: 2147483647, text: 1 << 20 };
  function isId(x) { return isInt(x) && x >= 0 && x <= LIMITS.id; }
  function isText(x, max) { return typeof x === "string" && x.length <= (max || LIMITS.text); }
  function checkTop(t, where, vocab) {
    if (!t || !Array.isArray(t.ids) || !Array.isArray(t.probs) || t.ids.length !== t.probs.length ||
        !t.ids.every(isId) || !t.probs.every(isProb)) throw new Error(where + ": a top list needs ids and probs of one length");
    if (t.ids.length > LIMITS.top) throw new Error(where + ": a top list of " + t.ids.length + " ids (a trace file's have at most " + LIMITS.top + ")");
    t.ids.forEach(function (id) { inVocab(id, vocab, where); });
  }
  function inVocab(id, vocab, where) {
    if (!Object.prototype.hasOwnProperty.call(vocab, String(id))) throw new Error(where + ": token id " + id + " is not in the run's vocab");
  }
  // A step must agree with itself, not only have the right shape: every fate, count and token the widget shows is
  // derived from these fields, and a contradiction would be drawn as it is ("0 of 4 accepted" beside "bonus token").
  function checkStep(s, i, vocab, rule) {
    const where = "step " + (i + 1);
    if (!s || typeof s !== "object") throw new Error(where + " is not an object");
    if (isTree(s)) { checkTreeStep(s, where, vocab); return; }
    if (!isInt(s.k) || s.k < 0 || s.k > LIMITS.k) throw new Error(where + ": k must be an integer in [0, " + LIMITS.k + "]");
    if (!Array.isArray(s.draft_tokens) || s.draft_tokens.length !== s.k || !s.draft_tokens.every(isId))
      throw new Error(where + ": k and draft_tokens disagree");
    if (!isInt(s.n_accepted) || s.n_accepted < 0 || s.n_accepted > s.k) throw new Error(where + ": n_accepted is not in [0, k]");
    ["q_draft_tokens", "p_draft_tokens", "accept_probs", "uniforms"].forEach(function (key) {
      if (!Array.isArray(s[key]) || s[key].length !== s.k || !s[key].every(isProb)) throw new Error(where + ": " + key + " needs k numbers in [0, 1]");
    });
    if (!Array.isArray(s.emitted) || !s.emitted.every(isId) || s.emitted.length > s.k + 1) throw new Error(where + ": emitted is not a list of ids");
    if (!(s.bonus_token === null || isId(s.bonus_token)) || !(s.resampled_token === null || isId(s.resampled_token)))
      throw new Error(where + ": bonus_token and resampled_token must be ids or null");
    if (!Array.isArray(s.top_p) || s.top_p.length !== s.k + 1 || !Array.isArray(s.top_q) || s.top_q.length !== s.k)
      throw new Error(where + ": needs k + 1 top_p lists and k top_q lists");
    s.top_p.concat(s.top_q).forEach(function (t) { checkTop(t, where, vocab); });
    if (s.top_residual !== null && s.top_residual !== undefined) checkTop(s.top_residual, where, vocab);
    s.draft_tokens.concat(s.emitted).forEach(function (id) { inVocab(id, vocab, where); });
    const n = s.n_accepted;
    // the extra token: a bonus after all k accepted, a resampled token after a rejection; the emitted tokens are the
    // accepted drafts, then that token (unless the output ended at an end-of-sequence token among the accepted)
    if (n === s.k ? s.resampled_token !== null : s.bonus_token !== null)
      throw new Error(where + ": " + (n === s.k ? "all drafts accepted, yet a resampled token" : "a draft rejected, yet a bonus token"));
    const extra = n === s.k ? s.bonus_token : s.resampled_token;
    for (let j = 0; j < Math.min(n, s.emitted.length); j++) {
      if (s.emitted[j] !== s.draft_tokens[j]) throw new Error(where + ": emitted token " + (j + 1) + " is not the accepted draft");
    }
    if (s.emitted.length === n + 1 && s.emitted[n] !== extra)
      throw new Error(where + ": the last emitted token is not the step's " + (n === s.k ? "bonus" : "resampled") + " token");
    if (s.emitted.length === n + 1 ? extra === null : s.emitted.length < 1)
      throw new Error(where + ": emitted " + s.emitted.length + " tokens, but no " + (n === s.k ? "bonus" : "resampled") + " token");
    if (extra !== null) inVocab(extra, vocab, where);
    if (s.fates !== undefined) {  // recorded fates (schema 8) must be the ones its counts give
      const derived = derivedFates(s);
      if (!Array.isArray(s.fates) || s.fates.length !== s.k || s.fates.some(function (f, j) { return f !== derived.fates[j]; }) ||
          (s.extra_fate === undefined ? null : s.extra_fate) !== derived.extra_fate)
        throw new Error(where + ": the recorded fates contradict n_accepted and the emitted tokens");
    }
    // block verification's terms (a chain step records them under either rule): k numbers in [0, 1], the weights the
    // running product of p/q capped at 1, h_k = w_k
    const block = s.stop_probs !== undefined && s.stop_probs !== null;
    if (block || rule === "block") {
      if (!Array.isArray(s.stop_probs) || s.stop_probs.length !== s.k || !s.stop_probs.every(isProb) ||
          !Array.isArray(s.block_weights) || s.block_weights.length !== s.k || !s.block_weights.every(isProb))
        throw new Error(where + ": stop_probs and block_weights need k numbers in [0, 1]");
      let w = 1;
      for (let j = 0; j < s.k; j++) {
        w = s.q_draft_tokens[j] > 0 ? Math.min(1, w * s.p_draft_tokens[j] / s.q_draft_tokens[j]) : 1;
        if (Math.abs(w - s.block_weights[j]) > 1e-3 * Math.max(1, w))
          throw new Error(where + ": block_weights[" + j + "] is " + s.block_weights[j] + ", not the capped product of p/q = " + w.toFixed(4));
      }
      if (s.k > 0 && Math.abs(s.stop_probs[s.k - 1] - s.block_weights[s.k - 1]) > 1e-6)
        throw new Error(where + ": the last h is not the last weight");
    }
    for (let j = 0; j < s.k; j++) {
      const p = s.p_draft_tokens[j], q = s.q_draft_tokens[j];
      const a = q > 0 ? Math.min(1, p / q) : 1;
      if (Math.abs(a - s.accept_probs[j]) > 1e-3)
        throw new Error(where + ": accept_probs[" + j + "] is " + s.accept_probs[j] + ", not min(1, p/q) = " + a.toFixed(4));
      if (rule === "block") {
        // block verification: the kept prefix n is the longest i with eta_i < h_i
        if (j === n - 1 && !(s.uniforms[j] < s.stop_probs[j])) throw new Error(where + ": prefix " + n + " is counted kept, but its draw is not below h");
        if (j >= n && !(s.uniforms[j] >= s.stop_probs[j])) throw new Error(where + ": prefix " + (j + 1) + " is longer than the kept one, but its draw is below h");
        continue;
      }
      // the token rule: each acceptance is min(1, p/q), the accepted drafts drew r below it, the first rejected one not
      if (j < n && !(s.uniforms[j] < s.accept_probs[j])) throw new Error(where + ": draft " + (j + 1) + " is counted accepted, but its draw r is not below min(1, p/q)");
      if (j === n && !(s.uniforms[j] >= s.accept_probs[j])) throw new Error(where + ": draft " + (j + 1) + " is the first rejected, but its draw r is below min(1, p/q)");
    }
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
  // A tree step (schema 8's optional parents and path): the same care, by the tree rule's own terms
  // (verify.verify_tree, sample and match): the path descends from the prefix child by child, one draw per node it
  // visits, and the fates, the emitted tokens and the step's own token are the ones that path gives.
  function checkTreeStep(s, where, vocab) {
    const k = s.k;
    if (!isInt(k) || k < 1 || k > LIMITS.nodes) throw new Error(where + ": a tree step has 1 to " + LIMITS.nodes + " nodes");
    if (!Array.isArray(s.parents) || s.parents.length !== k ||
        !s.parents.every(function (a, j) { return isInt(a) && a >= -1 && a < j; }))
      throw new Error(where + ": parents must list, for each node, -1 or an earlier node");
    if (!Array.isArray(s.draft_tokens) || s.draft_tokens.length !== k || !s.draft_tokens.every(isId))
      throw new Error(where + ": k and draft_tokens disagree");
    ["q_draft_tokens", "p_draft_tokens", "accept_probs"].forEach(function (key) {
      if (!Array.isArray(s[key]) || s[key].length !== k || !s[key].every(isProb)) throw new Error(where + ": " + key + " needs k numbers in [0, 1]");
    });
    const path = s.path;
    if (!Array.isArray(path) || !path.every(function (j, i) { return isInt(j) && j >= 0 && j < k && s.parents[j] === (i ? path[i - 1] : -1); }))
      throw new Error(where + ": the path must descend from the prefix, each node a child of the one before");
    if (s.n_accepted !== path.length) throw new Error(where + ": n_accepted is not the path's length");
    if (!Array.isArray(s.uniforms) || s.uniforms.length !== path.length + 1 || !s.uniforms.every(isProb))
      throw new Error(where + ": needs one draw per node the rule visited (the path's length + 1)");
    if (!Array.isArray(s.top_p) || s.top_p.length !== k + 1 || !Array.isArray(s.top_q))
      throw new Error(where + ": needs k + 1 top_p lists");
    s.top_p.concat(s.top_q).forEach(function (t) { checkTop(t, where, vocab); });
    if (s.top_residual !== null && s.top_residual !== undefined) checkTop(s.top_residual, where, vocab);
    if (!Array.isArray(s.emitted) || !s.emitted.every(isId) || s.emitted.length > path.length + 1 || s.emitted.length < 1)
      throw new Error(where + ": emitted is not a list of ids");
    s.draft_tokens.concat(s.emitted).forEach(function (id) { inVocab(id, vocab, where); });
    const last = path.length ? path[path.length - 1] : -1;
    const leaf = s.parents.indexOf(last) < 0;  // no node is a child of the path's last node
    if (leaf ? s.resampled_token !== null : s.bonus_token !== null)
      throw new Error(where + ": " + (leaf ? "the path ends at a leaf, yet a resampled token" : "the path ends above a child, yet a bonus token"));
    const extra = leaf ? s.bonus_token : s.resampled_token;
    path.forEach(function (j, i) {
      if (i < s.emitted.length && s.emitted[i] !== s.draft_tokens[j]) throw new Error(where + ": emitted token " + (i + 1) + " is not the path's node");
    });
    if (s.emitted.length === path.length + 1 && s.emitted[path.length] !== extra)
      throw new Error(where + ": the last emitted token is not the step's " + (leaf ? "bonus" : "resampled") + " token");
    if (!leaf && extra !== null && s.parents.some(function (a, j) { return a === last && s.draft_tokens[j] === extra; }))
      throw new Error(where + ": the resampled token is one of the children the draw missed");
    if (extra !== null) inVocab(extra, vocab, where);
    if (s.fates !== undefined) {
      const derived = treeFates(s);
      if (!Array.isArray(s.fates) || s.fates.length !== k || s.fates.some(function (f, j) { return f !== derived.fates[j]; }) ||
          (s.extra_fate === undefined ? null : s.extra_fate) !== derived.extra_fate)
        throw new Error(where + ": the recorded fates contradict the path and the emitted tokens");
    }
  }
  const RUN_TEXT = ["domain", "policy", "id"];
  function checkTraceFile(doc) {
    if (!doc || typeof doc !== "object" || !Array.isArray(doc.runs) || doc.runs.length === 0)
      throw new Error("it has no runs (a trace file is what `python -m specdec_site trace` or the build's traces stage writes)");
    if (doc.runs.length > LIMITS.runs) throw new Error("it has " + doc.runs.length + " runs (at most " + LIMITS.runs + ")");
    doc.runs.forEach(function (r, n) {
      const where = "run " + (n + 1);
      if (!r || typeof r !== "object" || !r.prompt || !isText(r.prompt.text) || !isText(r.prompt.id, 200))
        throw new Error(where + ": no prompt with an id and a text");
      RUN_TEXT.forEach(function (key) {  // shown as text: a non-string here (an object) used to wipe the widget
        if (r[key] !== undefined && r[key] !== null && !isText(r[key], 200)) throw new Error(where + ": " + key + " must be a string");
      });
      if (r.mode !== "greedy" && r.mode !== "sampled") throw new Error(where + ": mode must be greedy or sampled");
      if (!r.vocab || typeof r.vocab !== "object" || Array.isArray(r.vocab) ||
          !Object.keys(r.vocab).every(function (key) { return /^\d{1,10}$/.test(key) && isText(r.vocab[key], 1000); }))
        throw new Error(where + ": vocab must map ids to token text");
      if (!r.trace || !isInt(r.trace.k) || !Array.isArray(r.trace.steps) || r.trace.steps.length === 0)
        throw new Error(where + ": no trace with k and steps");
      if (r.trace.steps.length > LIMITS.steps) throw new Error(where + ": " + r.trace.steps.length + " steps (at most " + LIMITS.steps + ")");
      if (r.trace.verify !== undefined && r.trace.verify !== "token" && r.trace.verify !== "block")
        throw new Error("run " + (n + 1) + ": trace.verify must be \"token\" or \"block\"");
      r.trace.steps.forEach(function (s, i) { checkStep(s, i, r.vocab, r.trace.verify || "token"); });
    });
  }
  function metaText(x) { return typeof x === "string" || typeof x === "number" ? String(x) : "?"; }
  function describeFile(name, doc) {
    const m = doc.metadata && typeof doc.metadata === "object" ? doc.metadata : {};
    const models = m.models && typeof m.models === "object"
      ? Object.keys(m.models).map(function (role) { return role + " " + metaText((m.models[role] || {}).name); }).join(", ") : "models not recorded";
    const device = m.device && typeof m.device === "object" ? metaText(m.device.type) + (m.device.name ? " (" + metaText(m.device.name) + ")" : "") : "device not recorded";
    return "Opened " + name + ": " + doc.runs.length + " run" + (doc.runs.length === 1 ? "" : "s") + "; " + models + "; " +
      device + (m.dtype ? ", " + metaText(m.dtype) : "") + (m.date ? "; recorded " + metaText(m.date) : "") + ". Read in your browser; nothing was uploaded.";
  }

  // Colours come from visualizer.json (figures.PALETTE); fates are the recorded ones (stepFates).
  function Visualizer(root, data) {
    this.root = root;
    this.runs = data.runs.map(withFates);
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
      (r.trace.verify === "block" ? "|block" : "");
  };

  Visualizer.prototype.tok = function (id) {
    const t = this.run.vocab[String(id)];
    return t === undefined ? "#" + id : t;
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
      const policy = tree ? "token tree, " + r.trace.steps[0].k + " nodes, depth ≤ " + r.trace.k
        : (r.policy === "fixed" ? "k = " + r.trace.k : r.policy + " policy, k ≤ " + r.trace.k) +
          (r.trace.verify === "block" ? ", block verification" : "");
      promptSel.appendChild(el("option", { value: key }, r.domain + ": " + r.prompt.id + " (" + policy + ")"));
    });
    const modeSel = el("select", { "aria-label": "Sampling mode", id: "sv-mode" });
    ["greedy", "sampled"].filter(function (m) { return self.runs.some(function (r) { return r.mode === m; }); })
      .forEach(function (m) { modeSel.appendChild(el("option", { value: m }, m)); });
    const prev = el("button", { type: "button", class: "md-button", id: "sv-prev", "aria-label": "Previous step" }, "\u25c0 prev");
    const next = el("button", { type: "button", class: "md-button", id: "sv-next", "aria-label": "Next step" }, "next \u25b6");
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
    root.appendChild(el("div", { class: "sv-strip", role: "list", "aria-label": "Generated tokens by step" }));
    root.appendChild(el("div", { class: "sv-detail" }));
    const charts = el("div", { class: "sv-charts" });
    charts.append(el("div", { class: "sv-chart", id: "sv-chart-pq" }), el("div", { class: "sv-chart", id: "sv-chart-accept" }));
    root.appendChild(charts);
    const mask = el("div", { class: "sv-mask" });
    mask.style.display = "none";
    root.appendChild(mask);
    root.appendChild(el("div", { class: "sv-chart", id: "sv-chart-residual" }));

    function pick() {
      const found = self.runs.find(function (r) { return self.runKey(r) === promptSel.value && r.mode === modeSel.value; });
      if (found) { self.run = found; self.step = 0; self.pos = openingPosition(found.trace.steps[0]); self.renderRun(); }
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

  // A trace file: checked, then its runs replace the page's (the selectors list the file's runs); a bad file
  // leaves the page's runs as they were and says why.
  Visualizer.prototype.openFile = function (file) {
    const self = this;
    const status = function (text, bad) {
      const p = self.root.querySelector(".sv-file-status");
      p.textContent = text;
      p.classList.toggle("sv-file-error", !!bad);
    };
    if (file.size > MAX_TRACE_BYTES) { status("Not opened: " + file.name + " is larger than 64 MB.", true); return; }
    file.text().then(function (text) {
      let doc;
      try { doc = JSON.parse(text); } catch (err) { throw new Error("it is not JSON (" + err.message + ")"); }
      checkTraceFile(doc);
      const message = describeFile(file.name, doc);
      self.runs = doc.runs.map(withFates);
      self.run = self.runs[0];
      self.step = 0;
      self.pos = 0;
      self.build();
      status(message, false);
    }).catch(function (err) {
      status("Not opened: " + file.name + " is not a specdec trace file: " + err.message, true);
    });
  };

  // The position a step opens on: its rejected draft, where the rule had something to decide, else the first.
  function openingPosition(s) {
    if (isTree(s)) {  // the first child the draw missed, else the path's last node
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
  Visualizer.prototype.tokenButton = function (id, fate, step) {
    const self = this;
    const text = this.tok(id);
    const b = el("span", { role: "button", tabindex: "0", class: "sv-tok sv-" + fate,
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
    const table = this.startStep(s.k === 0 ? "no drafts" : s.n_accepted + " of " + s.k + " draft" + (s.k === 1 ? "" : "s") +
      (blockRun ? " kept by block verification" : " accepted"), "sv-table",
      ["pos", "draft token x", "q(x)", "p(x)", "min(1, p/q)"].concat(blockRun ? ["h (keep prefix)", "draw η", "fate"] : ["draw r", "fate"]));
    const detail = this.root.querySelector(".sv-detail");
    s.draft_tokens.forEach(function (t, j) {
      const fate = blockRun && j >= s.n_accepted ? "not kept" : s.fates[j];
      const row = el("tr", { class: "sv-row" + (j === self.pos ? " sv-row-current" : ""), tabindex: "0" });
      [String(j + 1), visible(self.tok(t)), fmt(s.q_draft_tokens[j]), fmt(s.p_draft_tokens[j]), fmt(s.accept_probs[j])]
        .concat(blockRun ? [fmt(s.stop_probs[j]), fmt(s.uniforms[j]), fate]
          : [fate === "not evaluated" ? "–" : fmt(s.uniforms[j]), fate]).forEach(function (c) { row.appendChild(el("td", {}, c)); });
      function choose() { self.pos = j; self.renderStep(); }
      row.addEventListener("click", choose);
      row.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { choose(); e.preventDefault(); } });
      table.appendChild(row);
    });
    const extra = s.k === 0
      ? "No drafts this step (its budget was 0: the last token before max_new_tokens, or no n-gram match): the target " +
        "pass emitted " + visible(this.tok(s.emitted[0])) + " from its own p, as plain decoding would."
      : s.bonus_token !== null
      ? (s.k === 1 ? "The draft was accepted" : "All " + s.k + " drafts accepted") + ": bonus token " +
        visible(this.tok(s.bonus_token)) + " drawn from the target's next distribution p."
      : blockRun
      ? "Block verification kept " + s.n_accepted + " draft" + (s.n_accepted === 1 ? "" : "s") + ": token " +
        visible(this.tok(s.resampled_token)) + " drawn from that prefix's residual norm(max(0, w\u00b7p \u2212 q)), w = " +
        (s.n_accepted ? fmt(s.block_weights[s.n_accepted - 1]) : "1") + "."
      : "Rejected at position " + (s.n_accepted + 1) + ": token " + visible(this.tok(s.resampled_token)) +
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
      (blockRun ? "block" : "token") + " rule; the " + other + "'s count is what it would have kept with the same draws)."));
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

  // A tree step: the tree as an indented table (depth-first, each node's q and its p at its parent, the path
  // marked), the rule's draws down it, the mask and positions of the target's one pass, p at the chosen node's parent
  // with the drafted children marked, and the distribution the step's own token came from.
  Visualizer.prototype.renderTreeStep = function (s) {
    const self = this;
    const depths = nodeDepths(s.parents);
    const depth = Math.max.apply(null, depths);
    const first = this.run.trace.prompt_length + s.position;  // the slot of the step's first new token
    const table = this.startStep("a tree of " + s.k + " nodes, " + depth + " deep; " + s.n_accepted + " accepted on its path",
      "sv-table sv-tree", ["node", "token x (indented by depth)", "q(x)", "p(x) at its parent", "position", "fate"]);
    const detail = this.root.querySelector(".sv-detail");
    treeOrder(s.parents).forEach(function (j) {
      const row = el("tr", { class: "sv-row" + (j === self.pos ? " sv-row-current" : "") + (s.fates[j] === "accepted" ? " sv-on-path" : ""), tabindex: "0" });
      const indent = "\u2003".repeat(depths[j] - 1) + (depths[j] > 1 ? "\u2514 " : "");
      [String(j + 1), indent + visible(self.tok(s.draft_tokens[j])), fmt(s.q_draft_tokens[j]), fmt(s.p_draft_tokens[j]),
       String(first + depths[j] - 1), s.fates[j]].forEach(function (c) { row.appendChild(el("td", {}, c)); });
      function choose() { self.pos = j; self.renderStep(); }
      row.addEventListener("click", choose);
      row.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { choose(); e.preventDefault(); } });
      table.appendChild(row);
    });
    const wrap = el("div", { class: "sv-mask-scroll" });  // wider than a phone: it scrolls, the page does not
    detail.replaceChild(wrap, table);
    wrap.appendChild(table);
    // the draws, root to the emitted token: each at the node the rule stood on, y ~ p there
    const draws = s.uniforms.map(function (r, i) {
      const at = i === 0 ? "After the prefix" : "at node " + (s.path[i - 1] + 1);
      if (i < s.path.length) return at + " (r = " + fmt(r) + "): " + visible(self.tok(s.draft_tokens[s.path[i]])) + ", node " + (s.path[i] + 1) + ": descend";
      if (i >= s.emitted.length) return at + " (r = " + fmt(r) + "): cut by the end-of-sequence token";
      return at + " (r = " + fmt(r) + "): " + visible(self.tok(s.emitted[i])) +
        (s.bonus_token !== null ? ", a leaf's bonus token from p" : ", not a child: emitted (drawn from p with the missed children removed)");
    });
    detail.appendChild(el("p", { class: "sv-extra" }, "Sample and match: draw y ~ p at a node; if y is a child, descend to it, " +
      "else emit y. " + draws.join("; ") + ". The q column is the draft's own probability of each node's token; its " +
      "children are its top-ranked tokens, chosen, not drawn, so the rule needs only p."));
    this.renderTreeCharts(s, depths, first);
  };

  Visualizer.prototype.renderTreeCharts = function (s, depths, first) {
    const self = this;
    const layoutBase = this.chartLayout;
    const pal = this.palette;
    const j = this.pos;
    const parent = s.parents[j];
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
      const fit = self.fitTokens(ids, width, s.draft_tokens[j], s.draft_tokens[j]);
      const axis = self.tokenAxis(fit.ids, s.draft_tokens[j]);
      const where = parent < 0 ? "after the prefix" : "at node " + (parent + 1);
      return react(pq, [
        { type: "bar", name: "p (target), a drafted child", x: axis.x, hovertext: axis.hover, hoverinfo: "text+y+name", marker: { color: pal.accept },
          y: fit.ids.map(function (id) { return childTokens.indexOf(id) >= 0 ? (pv[id] || 0) : null; }) },
        { type: "bar", name: "p (target), not drafted", x: axis.x, hovertext: axis.hover, hoverinfo: "text+y+name", marker: { color: tone(pal.p) },
          y: fit.ids.map(function (id) { return childTokens.indexOf(id) < 0 ? (pv[id] || 0) : null; }) },
      ], themed(titled(pq, "p " + where + ": the draw picks a child with this mass (\u25c0 node " + (j + 1) + ")",
        Object.assign({}, layoutBase, { barmode: "overlay", legend: LEGEND_BELOW(-0.14), xaxis: axis.layout, yaxis: { title: { text: "probability" }, range: [0, 1] } }))), configFor(pq)).then(noTabStops);
    }
    refit(pq, drawP);
    // the mask of the target's pass, as a grid (node i's row marks the nodes it sees: itself and its ancestors;
    // every node also sees the whole prefix), each node at position prefix + its depth - 1
    const maskDiv = this.root.querySelector(".sv-mask");
    maskDiv.textContent = "";
    maskDiv.appendChild(el("p", { class: "sv-mask-title" }, "The target's one pass over the " + s.k + " nodes: a row's \u25a0 marks " +
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
    maskDiv.appendChild(scroller);
    // where the step's own token came from: p with the missed children removed, or p at the leaf (the bonus)
    const last = s.path.length ? s.path[s.path.length - 1] : -1;
    const top = s.top_residual || s.top_p[last + 1];
    const kept = top.ids.map(function (_, i) { return i; }).filter(function (i) { return top.probs[i] >= 1e-3; });
    const res = { ids: kept.map(function (i) { return top.ids[i]; }), probs: kept.map(function (i) { return top.probs[i]; }) };
    const title = s.top_residual ? "p at node " + (last + 1 || "root") + " with the missed children removed: the emitted token's distribution"
      : "p at the leaf: the bonus token's distribution";
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
      const fateName = blockRun ? { accepted: "kept", rejected: "not kept", "not evaluated": "not kept, later" } : {};
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
    site.withPlotly(renderVisualizer);
  }
  // Material's instant navigation swaps pages without a reload: document$ emits on every page.
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(init);
  } else {
    document.addEventListener("DOMContentLoaded", init);
  }
  // Re-theme the charts when the palette toggle changes the colour scheme.
  new MutationObserver(function () {
    const root = document.getElementById("specdec-visualizer");
    if (window.Plotly && root && root._specdec) root._specdec.renderStep();
  }).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
})();
