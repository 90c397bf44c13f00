/* specdec Playground: the verification rule on a small vocabulary, the speedup calculator, and a race
 * replayed at measured speed. All client-side; the data (presets from a recorded trace, measured points,
 * race timings) comes from docs/figures/playground.json through the page. Model text only reaches the DOM
 * through textContent. The rule here is verify_draft's (specdec/verify.py), steps numbered alike; the
 * browser tests check it against the Python on the same inputs. */
(function () {
  "use strict";

  // ------------------------------------------------------------------ the rule (pure functions)

  // The palette with specdec.js's dark-scheme tones (WCAG AA on the slate background)
  function tonedPalette(palette) {
    const out = {};
    Object.keys(palette).forEach(function (key) { out[key] = window.specdecSite.tone(palette[key]); });
    return out;
  }
  function normalize(v) {
    const s = v.reduce(function (a, b) { return a + b; }, 0);
    return s > 0 ? v.map(function (x) { return x / s; }) : null;
  }
  // min(1, p(x)/q(x)) for a drafted token (q(x) > 0 whenever x was drawn)
  function acceptProb(px, qx) {
    return qx > 0 ? Math.min(1, px / qx) : 0;
  }
  // norm(max(0, p - q)); falls back to p when empty (rejection then has probability 0)
  function residual(p, q) {
    return normalize(p.map(function (pi, i) { return Math.max(0, pi - q[i]); })) || p.slice();
  }
  // WRONG on purpose: norm(max(0, p - a q)), a = min(1, p(x)/q(x)) of the rejected token x
  function naiveResidual(p, q, x) {
    const a = acceptProb(p[x], q[x]);
    return normalize(p.map(function (pi, i) { return Math.max(0, pi - a * q[i]); })) || p.slice();
  }
  function residualFor(rule, p, q, x) {
    return rule === "naive" ? naiveResidual(p, q, x) : residual(p, q);
  }
  // inverse-CDF draw from probs with a uniform u in [0, 1)
  function drawIndex(probs, u) {
    let acc = 0;
    for (let i = 0; i < probs.length; i++) {
      acc += probs[i];
      if (u < acc) return i;
    }
    for (let i = probs.length - 1; i >= 0; i--) if (probs[i] > 0) return i;  // rounding at the top end
    return probs.length - 1;
  }
  // Algorithm 1's verification: pRows (k+1) x V, qRows k x V, drafts (k), uniforms (k), uExtra: the
  // uniform of the resampled or bonus token's inverse-CDF draw.
  function verify(pRows, qRows, drafts, uniforms, uExtra, rule) {
    const k = drafts.length;
    let n = 0;
    const acceptProbs = [];
    // 1-3. p(x), q(x), min(1, p/q), accept iff r < min(1, p/q); 4. n = accepted prefix
    for (let i = 0; i < k; i++) acceptProbs.push(acceptProb(pRows[i][drafts[i]], qRows[i][drafts[i]]));
    while (n < k && uniforms[n] < acceptProbs[n]) n++;
    let extra, res = null;
    if (n < k) {  // 5a. resample from the residual at the first rejection
      res = residualFor(rule, pRows[n], qRows[n], drafts[n]);
      extra = drawIndex(res, uExtra);
    } else {  // 5b. all accepted: the bonus token from p after the last draft
      extra = drawIndex(pRows[k], uExtra);
    }
    return { n_accepted: n, tokens: drafts.slice(0, n).concat([extra]), accept_probs: acceptProbs, residual: res };
  }
  // Block verification (Sun et al. 2025; specdec/verify.py block_terms and verify_block, steps numbered alike):
  // 2. w_i = min(1, w_(i-1) p(x_i)/q(x_i)), w_0 = 1; h_i = m_i / (m_i + 1 - w_i) with m_i = sum max(0, w_i p - q)
  // after prefix i, h_k = w_k (1 where the denominator is 0: never reached in exact arithmetic).
  function blockTerms(pRows, qRows, drafts) {
    const k = drafts.length, w = [1], h = [1];
    for (let i = 1; i <= k; i++) w.push(Math.min(1, w[i - 1] * pRows[i - 1][drafts[i - 1]] / qRows[i - 1][drafts[i - 1]]));
    for (let i = 1; i < k; i++) {
      const m = pRows[i].reduce(function (a, pi, y) { return a + Math.max(0, w[i] * pi - qRows[i][y]); }, 0);
      h.push(m + 1 - w[i] > 0 ? m / (m + 1 - w[i]) : 1);
    }
    h.push(w[k]);
    return { weights: w, stopProbs: h };
  }
  // 3-5. eta_i per prefix; tau = the longest prefix with eta_tau < h_tau (0 if none); the extra token from
  // norm(max(0, w_tau p - q)) at tau < k, else the bonus from p after the last draft.
  function verifyBlock(pRows, qRows, drafts, uniforms, uExtra) {
    const k = drafts.length, t = blockTerms(pRows, qRows, drafts);
    let tau = 0;
    for (let i = k; i >= 1; i--) if (uniforms[i - 1] < t.stopProbs[i]) { tau = i; break; }
    let extra, res = null;
    if (tau < k) {
      res = normalize(pRows[tau].map(function (pi, y) { return Math.max(0, t.weights[tau] * pi - qRows[tau][y]); })) || pRows[tau].slice();
      extra = drawIndex(res, uExtra);
    } else {
      extra = drawIndex(pRows[k], uExtra);
    }
    return { n_accepted: tau, tokens: drafts.slice(0, tau).concat([extra]), weights: t.weights, stop_probs: t.stopProbs, residual: res };
  }
  // Expected accepted drafts given the drafts: the token rule's sum_i prod_(j <= i) a_j; block verification's
  // sum_i i h_i prod_(j > i) (1 - h_j) (specdec/theory.py)
  function expectedToken(acceptProbs) {
    let total = 0, survive = 1;
    acceptProbs.forEach(function (a) { survive *= a; total += survive; });
    return total;
  }
  function expectedBlock(stopProbs) {
    let total = 0, noneLonger = 1;
    for (let i = stopProbs.length - 1; i >= 1; i--) { total += i * stopProbs[i] * noneLonger; noneLonger *= 1 - stopProbs[i]; }
    return total;
  }
  // Every block of k i.i.d. draft tokens (p and q the same at each position): its q, the token rule's and block
  // verification's per-prefix numbers and expected accepted drafts; and an ideal verifier's total, the sum over
  // prefix lengths of the overlap sum_x min(p(x_1..x_i), q(x_1..x_i)) of the two joint distributions.
  function blockTable(p, q, k) {
    const V = p.length, rows = [], pRows = [], qRows = [];
    for (let i = 0; i <= k; i++) pRows.push(p);
    for (let i = 0; i < k; i++) qRows.push(q);
    let token = 0, block = 0, ideal = 0;
    const total = Math.pow(V, k);
    for (let b = 0; b < total; b++) {
      const drafts = [];
      for (let i = 0, r = b; i < k; i++, r = Math.floor(r / V)) drafts.unshift(r % V);
      const qb = drafts.reduce(function (a, x) { return a * q[x]; }, 1);
      if (qb <= 0) continue;
      const a = drafts.map(function (x) { return acceptProb(p[x], q[x]); });
      const t = blockTerms(pRows, qRows, drafts);
      const row = { drafts: drafts, q: qb, accept: a, weights: t.weights.slice(1), stop: t.stopProbs.slice(1),
        token: expectedToken(a), block: expectedBlock(t.stopProbs) };
      token += qb * row.token;
      block += qb * row.block;
      rows.push(row);
    }
    for (let i = 1; i <= k; i++) {
      const n = Math.pow(V, i);
      for (let b = 0; b < n; b++) {
        let pp = 1, qq = 1;
        for (let j = 0, r = b; j < i; j++, r = Math.floor(r / V)) { pp *= p[r % V]; qq *= q[r % V]; }
        ideal += Math.min(pp, qq);
      }
    }
    return { rows: rows, token: token, block: block, ideal: ideal };
  }
  // N steps of k i.i.d. drafts through one rule: the accepted drafts per step, and the first k + 1 tokens of each
  // (the step's, then the target's own draws) as one index in [0, V^(k+1)) for a chi-square against p x ... x p
  function sampleBlockSteps(p, q, k, n, seed, rule) {
    const rand = mulberry32(seed), V = p.length, pRows = [], qRows = [];
    for (let i = 0; i <= k; i++) pRows.push(p);
    for (let i = 0; i < k; i++) qRows.push(q);
    const counts = new Array(Math.pow(V, k + 1)).fill(0);
    let accepted = 0;
    for (let s = 0; s < n; s++) {
      const drafts = [];
      for (let i = 0; i < k; i++) drafts.push(drawIndex(q, rand()));
      const uniforms = drafts.map(function () { return rand(); });
      const out = rule === "block" ? verifyBlock(pRows, qRows, drafts, uniforms, rand())
        : verify(pRows, qRows, drafts, uniforms, rand(), "correct");
      accepted += out.n_accepted;
      const seq = out.tokens.slice();
      while (seq.length < k + 1) seq.push(drawIndex(p, rand()));
      counts[seq.reduce(function (a, x) { return a * V + x; }, 0)]++;
    }
    return { counts: counts, accepted: accepted / n };
  }
  function productDistribution(p, length) {
    let out = [1];
    for (let i = 0; i < length; i++) {
      const next = [];
      out.forEach(function (a) { p.forEach(function (pi) { next.push(a * pi); }); });
      out = next;
    }
    return out;
  }
  // Exact distribution of the emitted token for k = 1: sum_x q(x) [a(x) delta_x + (1 - a(x)) r_x]
  function exactOutput(p, q, rule) {
    const out = p.map(function () { return 0; });
    q.forEach(function (qx, x) {
      if (qx <= 0) return;
      const a = acceptProb(p[x], qx);
      out[x] += qx * a;
      if (a < 1) {
        const r = residualFor(rule, p, q, x);
        r.forEach(function (ry, y) { out[y] += qx * (1 - a) * ry; });
      }
    });
    return out;
  }

  // What a rejection resamples from, averaged over the rejected token x (weight q(x)(1 - min(1, p/q))): for the
  // correct rule that is norm(max(0, p - q)) whatever x was; the wrong rule's residual depends on x.
  function resampledFrom(p, q, rule) {
    if (rule !== "naive") return residual(p, q);
    const mix = p.map(function () { return 0; });
    q.forEach(function (qx, x) {
      const w = qx > 0 ? qx * (1 - acceptProb(p[x], qx)) : 0;
      if (w > 0) naiveResidual(p, q, x).forEach(function (r, y) { mix[y] += w * r; });
    });
    return normalize(mix) || residual(p, q);
  }

  // ------------------------------------------------------------------ seeded PRNG and chi-square
  function mulberry32(seed) {
    let a = seed >>> 0;
    return function () {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  function logGamma(x) {
    const c = [76.18009172947146, -86.50532032941677, 24.01409824083091, -1.231739572450155,
      0.1208650973866179e-2, -0.5395239384953e-5];
    let y = x, tmp = x + 5.5, ser = 1.000000000190015;
    tmp -= (x + 0.5) * Math.log(tmp);
    for (let j = 0; j < 6; j++) ser += c[j] / ++y;
    return -tmp + Math.log(2.5066282746310005 * ser / x);
  }
  // upper regularized gamma Q(a, x), Numerical Recipes' series / continued fraction
  function gammaQ(a, x) {
    if (x <= 0) return 1;
    if (x < a + 1) {
      let sum = 1 / a, del = sum, ap = a;
      for (let n = 0; n < 1000; n++) { ap += 1; del *= x / ap; sum += del; if (Math.abs(del) < Math.abs(sum) * 1e-15) break; }
      return Math.max(0, 1 - sum * Math.exp(-x + a * Math.log(x) - logGamma(a)));
    }
    let b = x + 1 - a, c = 1 / 1e-300, d = 1 / b, h = d;
    for (let i = 1; i < 1000; i++) {
      const an = -i * (i - a);
      b += 2;
      d = an * d + b; if (Math.abs(d) < 1e-300) d = 1e-300;
      c = b + an / c; if (Math.abs(c) < 1e-300) c = 1e-300;
      d = 1 / d;
      const del = d * c;
      h *= del;
      if (Math.abs(del - 1) < 1e-15) break;
    }
    return Math.exp(-x + a * Math.log(x) - logGamma(a)) * h;
  }
  // Pearson chi-square of counts against probabilities (bins with zero expectation must be empty)
  function chiSquare(counts, probs) {
    const n = counts.reduce(function (a, b) { return a + b; }, 0);
    let stat = 0, bins = 0;
    for (let i = 0; i < probs.length; i++) {
      const e = n * probs[i];
      if (e <= 0) { if (counts[i] > 0) return { stat: Infinity, df: 0, p: 0 }; continue; }
      stat += (counts[i] - e) * (counts[i] - e) / e;
      bins++;
    }
    const df = bins - 1;
    return { stat: stat, df: df, p: df > 0 ? gammaQ(df / 2, stat / 2) : 1 };
  }
  function sampleRule(p, q, n, seed, rule) {
    const rand = mulberry32(seed);
    const counts = p.map(function () { return 0; });
    const residuals = {};
    for (let i = 0; i < n; i++) {
      const x = drawIndex(q, rand());  // the draft proposes x ~ q
      if (rand() < acceptProb(p[x], q[x])) { counts[x]++; continue; }
      if (!residuals[x]) residuals[x] = residualFor(rule, p, q, x);
      counts[drawIndex(residuals[x], rand())]++;
    }
    return counts;
  }

  // ------------------------------------------------------------------ theory (specdec/theory.py)
  function tokensPerPass(alpha, k) {
    return alpha >= 1 ? k + 1 : (1 - Math.pow(alpha, k + 1)) / (1 - alpha);
  }
  function speedup(alpha, k, c, verifyCost) {
    return tokensPerPass(alpha, k) / (c * k + verifyCost);
  }

  // ------------------------------------------------------------------ DOM helpers
  // Theme and DOM helpers come from specdec.js (loaded first): one home for the site's look.
  const el = window.specdecSite.el;
  const dark = window.specdecSite.dark;
  const themed = window.specdecSite.themed;
  const configFor = window.specdecSite.configFor, noTabStops = window.specdecSite.noTabStops, titled = window.specdecSite.titled;
  // Plotly through the page's chart queue (specdec.js drawChart): one drawing at a time per chart, the first once the
  // chart comes into view, with plotly.js loaded then; the panels' text, inputs and tables are built at once
  const react = window.specdecSite.react;
  function purge(div) {
    return window.specdecSite.drawChart(div, function () { Plotly.purge(div); });
  }
  function f3(x) { return Number(x).toFixed(3); }
  function slider(id, label, min, max, step, value, hint) {
    const wrap = el("div", { class: "pg-slider" });
    const lab = el("label", { for: id }, label + " ");
    const input = el("input", { type: "range", id: id, min: String(min), max: String(max), step: String(step), value: String(value) });
    const out = el("output", { for: id, id: id + "-out" }, String(value));
    wrap.append(lab, input, out);
    if (hint) wrap.appendChild(el("span", { class: "pg-hint" }, hint));
    return { wrap: wrap, input: input, out: out };
  }

  // ------------------------------------------------------------------ 1. the rule
  function RulePanel(root, data) {
    const self = this;
    this.root = root;
    this.data = data;
    this.palette = data.palette;
    this.presets = data.rule.presets;
    root.textContent = "";
    const top = el("div", { class: "pg-row" });
    const presetSel = el("select", { id: "pg-preset", "aria-label": "Preset" });
    this.presets.forEach(function (pr, i) { presetSel.appendChild(el("option", { value: String(i) }, pr.name)); });
    const ruleSel = el("select", { id: "pg-rule", "aria-label": "Residual rule" });
    ruleSel.append(el("option", { value: "correct" }, "correct residual norm(max(0, p − q))"),
      el("option", { value: "naive" }, "wrong residual norm(max(0, p − a·q))"));
    top.append(el("label", { for: "pg-preset" }, "Preset "), presetSel, el("label", { for: "pg-rule" }, " Rule "), ruleSel);
    root.appendChild(top);
    root.appendChild(el("p", { class: "pg-hint", id: "pg-preset-hint" }));
    const grid = el("div", { class: "pg-grid", id: "pg-sliders" });
    root.appendChild(grid);
    this.message = el("p", { class: "pg-message", id: "pg-rule-message", role: "status", "aria-live": "polite" });
    root.appendChild(this.message);
    this.table = el("div", { class: "pg-table-wrap" });
    root.appendChild(this.table);
    root.appendChild(el("div", { class: "pg-chart", id: "pg-rule-chart", role: "figure",
      "aria-label": "p, q, the residual and the rule's exact output (the numbers are in the table below)" }));
    const sample = el("div", { class: "pg-row" });
    const nInput = el("input", { type: "number", id: "pg-n", min: "1000", max: "100000", step: "1000", value: "100000" });
    const seedInput = el("input", { type: "number", id: "pg-seed", min: "0", step: "1", value: "1" });
    const button = el("button", { type: "button", class: "md-button", id: "pg-sample" }, "Sample");
    sample.append(el("label", { for: "pg-n" }, "N draws "), nInput, el("label", { for: "pg-seed" }, " seed "), seedInput, button);
    root.appendChild(sample);
    this.result = el("p", { class: "pg-result", id: "pg-sample-result", role: "status", "aria-live": "polite" });
    root.appendChild(this.result);
    root.appendChild(el("p", { class: "pg-hint" }, "Try this: pick the counterexample, sample with the correct rule (the chi-square p-value is large), then switch to the wrong residual and sample again: the histogram leaves p and the p-value collapses."));
    this.sampled = null;
    presetSel.addEventListener("change", function () { self.load(parseInt(presetSel.value, 10)); });
    ruleSel.addEventListener("change", function () { self.clearSample(); self.render(); });
    button.addEventListener("click", function () { self.sample(); });
    this.ruleSel = ruleSel;
    this.nInput = nInput;
    this.seedInput = seedInput;
    this.load(0);
  }
  RulePanel.prototype.load = function (i) {
    const self = this;
    const pr = this.presets[i];
    this.labels = pr.labels;
    this.p = pr.p.slice();
    this.q = pr.q.slice();
    if (this.result) this.clearSample(); else this.sampled = null;
    this.root.querySelector("#pg-preset-hint").textContent = pr.hint;
    const grid = this.root.querySelector("#pg-sliders");
    grid.textContent = "";
    grid.appendChild(el("span", { class: "pg-grid-head" }, "token"));
    grid.appendChild(el("span", { class: "pg-grid-head" }, "target p"));
    grid.appendChild(el("span", { class: "pg-grid-head" }, "draft q"));
    this.inputs = { p: [], q: [] };
    this.labels.forEach(function (lab, t) {
      grid.appendChild(el("span", { class: "pg-token" }, lab));
      ["p", "q"].forEach(function (which) {
        const input = el("input", { type: "range", min: "0", max: "1", step: "0.01", value: String(self[which][t]),
          id: "pg-" + which + "-" + t, "aria-label": which + " of token " + lab });
        input.addEventListener("input", function () { self.set(which, t, parseFloat(input.value)); });
        grid.appendChild(input);
        self.inputs[which].push(input);
      });
    });
    this.render();
  };
  // Move one token's probability; the others are rescaled so that the row still sums to 1.
  RulePanel.prototype.set = function (which, t, value) {
    const row = this[which];
    const rest = row.reduce(function (a, b, i) { return i === t ? a : a + b; }, 0);
    const target = Math.min(1, Math.max(0, value));
    for (let i = 0; i < row.length; i++) {
      if (i === t) continue;
      row[i] = rest > 0 ? row[i] * (1 - target) / rest : (1 - target) / (row.length - 1);
    }
    row[t] = target;
    this.clearSample();
    this.render();
  };
  RulePanel.prototype.problem = function () {
    const sp = this.p.reduce(function (a, b) { return a + b; }, 0);
    const sq = this.q.reduce(function (a, b) { return a + b; }, 0);
    if (!(sp > 0)) return "p has no mass: give some token a probability.";
    if (!(sq > 0)) return "q has no mass: the draft cannot propose anything. Give some token a probability.";
    return null;
  };
  RulePanel.prototype.render = function () {
    const self = this;
    this.inputs.p.forEach(function (input, i) { input.value = String(self.p[i]); });
    this.inputs.q.forEach(function (input, i) { input.value = String(self.q[i]); });
    const problem = this.problem();
    this.message.textContent = problem || "";
    this.table.textContent = "";
    if (problem) { purge(document.getElementById("pg-rule-chart")); return; }
    const p = normalize(this.p), q = normalize(this.q), rule = this.ruleSel.value;
    const beta = p.reduce(function (a, pi, i) { return a + Math.min(pi, q[i]); }, 0);
    const res = resampledFrom(p, q, rule);
    const out = exactOutput(p, q, rule);
    const table = el("table", { class: "pg-table" });
    const head = el("tr");
    ["token", "p", "q", "min(1, p/q)", rule === "naive" ? "resampled (wrong rule)" : "residual", "exact output"].forEach(function (h) { head.appendChild(el("th", {}, h)); });
    table.appendChild(head);
    this.labels.forEach(function (lab, i) {
      const row = el("tr");
      [lab, f3(p[i]), f3(q[i]), q[i] > 0 ? f3(Math.min(1, p[i] / q[i])) : "– (never drafted)", f3(beta < 1 - 1e-12 ? res[i] : 0), f3(out[i])]
        .forEach(function (c) { row.appendChild(el("td", {}, c)); });
      table.appendChild(row);
    });
    this.table.appendChild(table);
    const tv = 0.5 * out.reduce(function (a, o, i) { return a + Math.abs(o - p[i]); }, 0);
    this.table.appendChild(el("p", { id: "pg-beta" }, "β = Σ min(p, q) = " + f3(beta) + " = 1 − TV(p, q): the chance a draft is accepted. " +
      (beta > 1 - 1e-12 ? "p = q: every draft is accepted, no residual is needed. " : "") +
      "Distance of the exact output from p: TV = " + tv.toExponential(2) + (rule === "naive" ? " (the wrong rule)." : ".")));
    const pal = tonedPalette(this.palette);  // light tones on the dark scheme (specdec.js)
    const traces = [
      { type: "bar", name: "target p", x: this.labels, y: p, marker: { color: pal.p } },
      { type: "bar", name: "draft q", x: this.labels, y: q, marker: { color: pal.q } },
      { type: "bar", name: rule === "naive" ? "resampled after a rejection, wrong rule" : "residual norm(max(0, p − q))", x: this.labels, y: beta < 1 - 1e-12 ? res : res.map(function () { return 0; }), marker: { color: rule === "naive" ? pal.reject : pal.residual, opacity: rule === "naive" ? 0.6 : 1 } },
      { type: "bar", name: "exact output (" + (rule === "naive" ? "wrong rule" : "correct rule") + ")", x: this.labels, y: out, marker: { color: rule === "naive" ? pal.reject : pal.accept } },
    ];
    if (this.sampled) {
      traces.push({ type: "scatter", mode: "markers", name: "sampled (" + this.sampled.n + " draws)", x: this.labels,
        y: this.sampled.freq, marker: { symbol: "diamond", size: 11, color: dark() ? "#fff" : "#000" } });
    }
    const ruleDiv = document.getElementById("pg-rule-chart");
    react(ruleDiv, traces, themed(titled(ruleDiv, "p, q, the residual and what the rule outputs", { barmode: "group", height: 360, margin: { t: 30, r: 10, b: 40, l: 45 },
      legend: { orientation: "h", y: -0.15 }, yaxis: { title: { text: "probability" }, range: [0, 1] } })), configFor(ruleDiv)).then(noTabStops);
  };
  RulePanel.prototype.clearSample = function () {
    // a result belongs to the rule, p and q it was drawn with: any change takes it off the screen
    this.sampled = null;
    this.result.textContent = "";
    delete this.result.dataset.pvalue;
  };
  RulePanel.prototype.sample = function () {
    const problem = this.problem();
    const n = Number(this.nInput.value), seed = Number(this.seedInput.value);
    if (problem) { this.result.textContent = problem; return; }
    if (!Number.isInteger(n) || n < 1000 || n > 100000) {
      this.result.textContent = "N must be a whole number from 1 000 to 100 000 (got " + this.nInput.value + ").";
      return;
    }
    if (!Number.isInteger(seed) || seed < 0) { this.result.textContent = "The seed must be a whole number ≥ 0."; return; }
    const p = normalize(this.p), q = normalize(this.q), rule = this.ruleSel.value;
    const counts = sampleRule(p, q, n, seed, rule);
    const test = chiSquare(counts, p);
    this.sampled = { n: n, counts: counts, freq: counts.map(function (c) { return c / n; }), test: test };
    this.render();
    const which = n + " draws (seed " + seed + ", " + (rule === "naive" ? "wrong" : "correct") + " rule)";
    if (test.df < 1 && isFinite(test.stat)) {
      // p on one token: no test to run (0 degrees of freedom); the evidence is that every draw is that token
      const only = p.findIndex(function (x) { return x > 0; });
      this.result.textContent = which + ": p puts all its mass on " + this.labels[only] + ", so every draw must be " +
        this.labels[only] + "; " + counts[only] + " of " + n + " were (a chi-square test has no degrees of freedom here).";
      this.result.dataset.pvalue = String(counts[only] === n ? 1 : 0);
      return;
    }
    this.result.textContent = which + " against p: chi-square " +
      (isFinite(test.stat) ? test.stat.toFixed(1) : "∞") + " on " + test.df + " degrees of freedom, p-value " + (test.p === 0 ? "< 1e-300" : test.p.toPrecision(3)) +
      (test.p < 1e-3 ? ": the samples are not distributed as p." : ": consistent with p.");
    this.result.dataset.pvalue = String(test.p);
  };

  // ------------------------------------------------------------------ 1b. the token rule or block verification
  function BlockPanel(root, data) {
    const self = this;
    this.root = root;
    this.presets = data.block.presets;
    this.k = data.block.k;
    this.palette = data.palette;
    root.textContent = "";
    const top = el("div", { class: "pg-row" });
    const presetSel = el("select", { id: "pg-block-preset", "aria-label": "Preset" });
    this.presets.forEach(function (pr, i) { presetSel.appendChild(el("option", { value: String(i) }, pr.name)); });
    const ruleSel = el("select", { id: "pg-block-rule", "aria-label": "Verification rule" });
    ruleSel.append(el("option", { value: "token" }, "token rule (Algorithm 1)"),
      el("option", { value: "block" }, "block verification (Sun et al. 2025)"));
    top.append(el("label", { for: "pg-block-preset" }, "Preset "), presetSel, el("label", { for: "pg-block-rule" }, " Rule "), ruleSel);
    root.appendChild(top);
    this.hint = el("p", { class: "pg-hint", id: "pg-block-hint" });
    root.appendChild(this.hint);
    this.summary = el("p", { class: "pg-result", id: "pg-block-summary", role: "status", "aria-live": "polite" });
    root.appendChild(this.summary);
    // both rules' expected accepted drafts, paired, per draft block and over all of them (the table has the numbers)
    root.appendChild(el("div", { class: "pg-chart", id: "pg-block-chart", role: "figure",
      "aria-label": "Expected accepted drafts, token rule beside block verification, per draft block" }));
    this.table = el("div", { class: "pg-table-wrap", id: "pg-block-table" });
    root.appendChild(this.table);
    const sample = el("div", { class: "pg-row" });
    const nInput = el("input", { type: "number", id: "pg-block-n", min: "1000", max: "100000", step: "1000", value: "100000" });
    const seedInput = el("input", { type: "number", id: "pg-block-seed", min: "0", step: "1", value: "1" });
    const button = el("button", { type: "button", class: "md-button", id: "pg-block-sample" }, "Sample");
    sample.append(el("label", { for: "pg-block-n" }, "N steps "), nInput, el("label", { for: "pg-block-seed" }, " seed "), seedInput, button);
    root.appendChild(sample);
    this.result = el("p", { class: "pg-result", id: "pg-block-result", role: "status", "aria-live": "polite" });
    root.appendChild(this.result);
    presetSel.addEventListener("change", function () { self.load(parseInt(presetSel.value, 10)); });
    ruleSel.addEventListener("change", function () { self.result.textContent = ""; self.render(); });
    button.addEventListener("click", function () { self.sample(); });
    this.ruleSel = ruleSel;
    this.nInput = nInput;
    this.seedInput = seedInput;
    this.load(0);
  }
  BlockPanel.prototype.load = function (i) {
    const pr = this.presets[i];
    this.labels = pr.labels;
    this.p = normalize(pr.p);
    this.q = normalize(pr.q);
    this.hint.textContent = pr.hint;
    this.result.textContent = "";
    this.render();
  };
  BlockPanel.prototype.render = function () {
    const self = this, rule = this.ruleSel.value, k = this.k;
    const t = blockTable(this.p, this.q, k);
    this.summary.textContent = "Expected accepted drafts per step (k = " + k + "): token rule " + f3(t.token) +
      ", block verification " + f3(t.block) + ", an ideal verifier that knows the joint probabilities " + f3(t.ideal) +
      ". Showing the " + (rule === "block" ? "block verification" : "token rule") + "'s numbers per draft block.";
    this.summary.dataset.token = String(t.token);
    this.summary.dataset.block = String(t.block);
    this.summary.dataset.ideal = String(t.ideal);
    const table = el("table", { class: "pg-table" });
    const head = el("tr");
    const cols = ["drafts", "q(drafts)"];
    for (let i = 1; i <= k; i++) cols.push(rule === "block" ? "w" + i + " / h" + i : "min(1, p/q) at " + i);
    cols.push("expected accepted");
    cols.forEach(function (h) { head.appendChild(el("th", {}, h)); });
    table.appendChild(head);
    t.rows.forEach(function (r) {
      const tr = el("tr");
      const cells = [r.drafts.map(function (x) { return self.labels[x]; }).join(" "), f3(r.q)];
      for (let i = 0; i < k; i++) cells.push(rule === "block" ? f3(r.weights[i]) + " / " + f3(r.stop[i]) : f3(r.accept[i]));
      cells.push(f3(rule === "block" ? r.block : r.token));
      cells.forEach(function (c) { tr.appendChild(el("td", {}, c)); });
      table.appendChild(tr);
    });
    this.table.textContent = "";
    this.table.appendChild(table);
    this.chart(t);
  };
  BlockPanel.prototype.chart = function (t) {
    // Paired bars: per draft block (the most probable first, at most 8, then "all blocks", weighted by q), each
    // rule's expected accepted drafts. Where block verification's bar is taller, the block as a whole was worth more
    // than its weakest draft.
    const self = this, pal = tonedPalette(this.palette);
    const rows = t.rows.slice().sort(function (a, b) { return b.q - a.q; }).slice(0, 8);
    const x = rows.map(function (r) { return r.drafts.map(function (d) { return self.labels[d]; }).join(" "); }).concat(["all blocks"]);
    const traces = [
      { type: "bar", name: "token rule", x: x, y: rows.map(function (r) { return r.token; }).concat([t.token]),
        marker: { color: pal.p }, hovertemplate: "%{x}: %{y:.3f}<extra>token rule</extra>" },
      { type: "bar", name: "block verification", x: x, y: rows.map(function (r) { return r.block; }).concat([t.block]),
        marker: { color: pal.accept }, hovertemplate: "%{x}: %{y:.3f}<extra>block verification</extra>" },
    ];
    const div = document.getElementById("pg-block-chart");
    react(div, traces, themed(titled(div, "Expected accepted drafts, by draft block (the likeliest) and over all",
      { barmode: "group", height: 320, margin: { t: 30, r: 10, b: 60, l: 45 }, legend: { orientation: "h", y: -0.3 },
        xaxis: { title: { text: "draft block" }, type: "category" },
        yaxis: { title: { text: "accepted drafts" }, range: [0, this.k] } })), configFor(div)).then(noTabStops);
  };
  BlockPanel.prototype.sample = function () {
    const n = Number(this.nInput.value), seed = Number(this.seedInput.value), rule = this.ruleSel.value, k = this.k;
    if (!Number.isInteger(n) || n < 1000 || n > 100000) {
      this.result.textContent = "N must be a whole number from 1 000 to 100 000 (got " + this.nInput.value + ").";
      return;
    }
    if (!Number.isInteger(seed) || seed < 0) { this.result.textContent = "The seed must be a whole number ≥ 0."; return; }
    const out = sampleBlockSteps(this.p, this.q, k, n, seed, rule);
    const test = chiSquare(out.counts, productDistribution(this.p, k + 1));
    const exact = blockTable(this.p, this.q, k)[rule];
    this.result.textContent = n + " steps (seed " + seed + ", " + (rule === "block" ? "block verification" : "token rule") +
      "): " + f3(out.accepted) + " accepted drafts per step (exact " + f3(exact) + "); the first " + (k + 1) +
      " tokens against the target's: chi-square " + (isFinite(test.stat) ? test.stat.toFixed(1) : "∞") + " on " + test.df +
      " degrees of freedom, p-value " + (test.p === 0 ? "< 1e-300" : test.p.toPrecision(3)) +
      (test.p < 1e-3 ? ": not distributed as the target's." : ": consistent with the target's.");
    this.result.dataset.pvalue = String(test.p);
    this.result.dataset.accepted = String(out.accepted);
  };

  // ------------------------------------------------------------------ 2. speedup calculator
  function SpeedupPanel(root, data) {
    const self = this;
    this.data = data.speedup;
    this.palette = data.palette;
    root.textContent = "";
    const grid = el("div", { class: "pg-controls" });
    const d = this.data.defaults;
    // Presets: the hardware this site's data measured (per domain), and "your own": the sliders as you set them
    const presetRow = el("div", { class: "pg-row" });
    const preset = el("select", { id: "pg-speedup-preset", "aria-label": "Calculator preset" });
    (this.data.presets || []).forEach(function (p, i) { preset.appendChild(el("option", { value: String(i) }, p.label)); });
    preset.appendChild(el("option", { value: "own" }, "your own (α, c, k and verify cost as you set them)"));
    presetRow.append(el("label", { for: "pg-speedup-preset" }, "Preset "), preset);
    root.appendChild(presetRow);
    this.preset = preset;
    this.alpha = slider("pg-alpha", "acceptance rate α (tested: â)", 0, 0.99, 0.01, d.alpha, "Try this: raise α toward 1: the best k grows without bound.");
    // step 0.001: the measured c (values.json, three decimals) is a slider position, not snapped to another number
    this.c = slider("pg-c", "draft cost c (× target pass)", 0, 1, 0.001, d.c, "Try this: c = 0 (a free draft, like prompt lookup): long drafts only cost verify time.");
    this.k = slider("pg-k", "k (drafts per step)", 1, 16, 1, d.k, "Your k: marked on the curves.");
    this.v = slider("pg-v", "verify cost per extra token (× target pass)", 0, 0.3, 0.005, d.verify_slope, "Measured here: scoring k+1 tokens costs 1 + this × k passes.");
    [this.alpha, this.c, this.k, this.v].forEach(function (s) {
      grid.appendChild(s.wrap);
      s.input.addEventListener("input", function () { self.preset.value = "own"; self.render(); });
    });
    preset.addEventListener("change", function () {
      const p = self.data.presets[parseInt(preset.value, 10)];
      if (!p) return;  // "your own": keep the sliders
      self.alpha.input.value = p.alpha; self.c.input.value = p.c; self.k.input.value = p.k; self.v.input.value = p.verify_slope;
      self.render();
    });
    // the defaults are the first preset's numbers (code, greedy): it starts selected when they agree
    const first = (this.data.presets || [])[0];
    preset.value = first && first.alpha === d.alpha && first.c === d.c && first.k === d.k && first.verify_slope === d.verify_slope ? "0" : "own";
    root.appendChild(grid);
    this.readout = el("p", { class: "pg-result", id: "pg-speedup-readout", role: "status", "aria-live": "polite" });
    root.appendChild(this.readout);
    root.appendChild(el("div", { class: "pg-chart", id: "pg-speedup-chart", role: "figure",
      "aria-label": "Speedup against k: the theory for these numbers beside the measured sweep (the readout beside it says it in words)" }));
    this.render();
  }
  function bestOf(values) {
    let best = 0;
    values.forEach(function (v, i) { if (v > values[best]) best = i; });
    return best;
  }
  // The preset's domain: its measured speedups are the markers (one domain at a time keeps the legend short);
  // "your own" keeps the last preset's.
  SpeedupPanel.prototype.domain = function () {
    const p = (this.data.presets || [])[parseInt(this.preset.value, 10)];
    if (p) this.lastDomain = p.domain;
    return this.lastDomain || ((this.data.presets || [])[0] || {}).domain;
  };
  SpeedupPanel.prototype.render = function () {
    const a = parseFloat(this.alpha.input.value), c = parseFloat(this.c.input.value);
    const k = parseInt(this.k.input.value, 10), slope = parseFloat(this.v.input.value);
    [this.alpha, this.c, this.k, this.v].forEach(function (s) { s.out.textContent = s.input.value; });
    const ks = []; for (let i = 1; i <= 16; i++) ks.push(i);
    const eq7 = ks.map(function (i) { return speedup(a, i, c, 1); });
    const eq8 = ks.map(function (i) { return speedup(a, i, c, 1 + slope * i); });
    const tpp = ks.map(function (i) { return tokensPerPass(a, i); });
    const best = bestOf(eq8) + 1;
    const pal = tonedPalette(this.palette);  // light tones on the dark scheme (specdec.js)
    const domain = this.domain();
    const measured = this.data.measured.filter(function (m) { return m.domain === domain; });
    const traces = [
      { type: "scatter", mode: "lines", name: "eq. (7): free verify", x: ks, y: eq7, line: { color: pal.target_only, dash: "dash" } },
      { type: "scatter", mode: "lines", name: "eq. (8): with the verify cost", x: ks, y: eq8, line: { color: pal.target_only } },
      { type: "scatter", mode: "markers", name: "best k of eq. (8)", x: [best], y: [eq8[best - 1]], marker: { color: pal.accept, size: 14, symbol: "star" } },
      { type: "scatter", mode: "markers", name: "your k", x: [k], y: [eq8[k - 1]], marker: { color: pal.q, size: 11 } },
    ];
    measured.forEach(function (m) {
      traces.push({ type: "scatter", mode: "markers", name: "measured here: " + m.label, x: m.k, y: m.speedup,
        marker: { color: pal[m.domain], symbol: "circle-open", size: 10, line: { width: 2 } } });
    });
    const speedDiv = document.getElementById("pg-speedup-chart");
    react(speedDiv, traces, themed(titled(speedDiv, "Speedup over the target alone: the theory for these numbers and the measured " + domain + " sweep", {
      height: 440, margin: { t: 30, r: 10, b: 20, l: 50 },
      // every k on a wide screen; every other one on a phone
      xaxis: { title: { text: "k" }, range: [0.5, 16.5], tick0: 1, dtick: speedDiv.clientWidth < 600 ? 2 : 1, automargin: true },
      yaxis: { title: { text: "speedup (× target-only)" }, automargin: true, rangemode: "tozero" },
      legend: { orientation: "h", x: 0, xref: "container", y: 0, yref: "container", yanchor: "bottom" } })), configFor(speedDiv)).then(noTabStops);
    const theory = eq8[best - 1] <= 1
      ? "Eq. (8): speculation does not pay here (at best " + eq8[best - 1].toFixed(2) + "× at k = " + best + ": below 1 is slower than the target alone)."
      : "Eq. (8): " + (best === ks.length && eq8[best - 1] > eq8[best - 2]
        ? "the speedup still rises at k = " + best + ", the largest k drawn here (it would take a longer draft), "
        : "its best k is " + best + ", ") + eq8[best - 1].toFixed(2) + "× (" + tpp[best - 1].toFixed(2) + " tokens per target pass, eq. (6)).";
    const told = measured.map(function (m) {
      const i = bestOf(m.speedup);
      return m.label + ", largest median at k = " + m.k[i] + ", " + m.speedup[i].toFixed(2) + "× (medians over a few prompts: " +
        "the neighbouring k are not told apart, the Results say which)";
    }).join("; ");
    // the measured sweep is the last preset's: with "your own" numbers it is not a measurement of them
    const own = this.preset.value === "own";
    this.readout.textContent = "With α = " + a.toFixed(2) + ", c = " + c.toFixed(3) + " and a verify pass of 1 + " + slope.toFixed(3) +
      " × k (a straight line in k; the Results' eq. (8) takes each k's measured verify pass, so the two differ a little). " +
      theory + " At your k = " + k + ": " + eq8[k - 1].toFixed(2) + "×, " + tpp[k - 1].toFixed(2) + " tokens per target pass. " +
      (own ? "For comparison, the last preset's measured sweep (its own α, c and verify cost, not yours): "
           : "Measured: ") + told + ".";
  };

  // ------------------------------------------------------------------ 3. the race
  function RacePanel(root, data) {
    const self = this;
    root._specdec = this;  // for the browser tests, as the visualizer's
    this.runs = data.race.runs;
    this.palette = data.palette;
    root.textContent = "";
    const row = el("div", { class: "pg-row" });
    const runSel = el("select", { id: "pg-race-run", "aria-label": "Recorded run" });
    this.runs.forEach(function (r, i) { runSel.appendChild(el("option", { value: String(i) }, r.label)); });
    const play = el("button", { type: "button", class: "md-button", id: "pg-race-play" }, "Play");
    const speed = el("select", { id: "pg-race-speed", "aria-label": "Playback speed" });
    ["0.25", "0.5", "1", "2", "4"].forEach(function (s) { speed.appendChild(el("option", { value: s }, s + "×")); });
    speed.value = "1";
    row.append(el("label", { for: "pg-race-run" }, "Run "), runSel, play, el("label", { for: "pg-race-speed" }, " speed "), speed);
    root.appendChild(row);
    this.lanes = {};
    [["target", "target alone"], ["spec", "speculative decoding"]].forEach(function (pair) {
      const lane = el("div", { class: "pg-lane" });
      const head = el("div", { class: "pg-lane-head" });
      head.append(el("strong", {}, pair[1]), el("span", { class: "pg-clock", id: "pg-clock-" + pair[0] }, "0.00 s"));
      lane.append(head, el("div", { class: "pg-lane-text", id: "pg-lane-" + pair[0] }));
      root.appendChild(lane);
      self.lanes[pair[0]] = lane;
    });
    this.status = el("p", { class: "pg-result", id: "pg-race-status", role: "status", "aria-live": "polite" });
    root.appendChild(this.status);
    root.appendChild(el("p", { class: "pg-hint" }, "Try this: play at 0.25×: speculative decoding emits tokens in bursts, one burst per target pass; green tokens were drafted and accepted, blue is the bonus token, purple was resampled after a rejection. Times are the recorded wall-clock times of this run."));
    runSel.addEventListener("change", function () { self.load(parseInt(runSel.value, 10)); });
    play.addEventListener("click", function () { self.toggle(); });
    speed.addEventListener("change", function () { self.speed = parseFloat(speed.value); });
    this.speed = 1;
    this.playBtn = play;
    this.load(0);
  }
  RacePanel.prototype.load = function (i) {
    this.stop();
    this.run = this.runs[i];
    this.t = 0;
    this.draw();
  };
  RacePanel.prototype.toggle = function () {
    if (this.timer) { this.stop(); return; }
    const self = this;
    const end = Math.max(this.run.target_seconds, this.run.spec_seconds);  // the race ends when both lanes have
    if (this.t >= end) this.t = 0;
    let last = performance.now();
    this.playBtn.textContent = "Pause";
    this.draw();  // a replay clears the finished race at once, not at the first tick
    this.timer = window.setInterval(function () {
      const now = performance.now();
      self.t += (now - last) / 1000 * self.speed;
      last = now;
      if (self.t >= end) { self.t = end; self.stop(); }
      self.draw();
    }, 40);
  };
  RacePanel.prototype.stop = function () {
    if (this.timer) window.clearInterval(this.timer);
    this.timer = null;
    if (this.playBtn) this.playBtn.textContent = "Play";
  };
  RacePanel.prototype.draw = function () {
    const self = this, r = this.run, t = this.t;
    const target = this.lanes.target.querySelector(".pg-lane-text");
    const spec = this.lanes.spec.querySelector(".pg-lane-text");
    const nTarget = Math.min(r.tokens.length, Math.floor(t / r.target_seconds * r.tokens.length + 1e-9));
    target.textContent = "";
    r.tokens.slice(0, nTarget).forEach(function (tok) { target.appendChild(el("span", { class: "pg-tok" }, tok)); });
    spec.textContent = "";
    let shown = 0;
    r.steps.forEach(function (s) {
      if (s.end > t) return;
      s.tokens.forEach(function (tok, j) {
        const span = el("span", { class: "pg-tok", title: s.fates[j] }, tok);
        span.style.background = self.palette[s.fates[j]];
        span.style.color = "#111";
        spec.appendChild(span);
        shown++;
      });
    });
    const specDone = Math.min(t, r.spec_seconds);
    this.lanes.target.querySelector(".pg-clock").textContent = Math.min(t, r.target_seconds).toFixed(2) + " s, " + nTarget + " tokens";
    this.lanes.spec.querySelector(".pg-clock").textContent = specDone.toFixed(2) + " s, " + shown + " tokens";
    // A recorded run where speculation was slower is replayed as it was: the race lasts until both lanes are done.
    if (t >= r.target_seconds && t >= r.spec_seconds) {
      const ratio = r.target_seconds / r.spec_seconds;
      this.status.textContent = "Speculative decoding took " + r.spec_seconds.toFixed(2) + " s, the target alone " +
        r.target_seconds.toFixed(2) + " s: " + ratio.toFixed(2) + "× as measured in this recorded run" +
        (ratio < 1 ? " (speculation was slower here)." : ".");
    } else if (t >= r.spec_seconds) {
      this.status.textContent = "Speculative decoding finished in " + r.spec_seconds.toFixed(2) + " s; the target alone is still writing.";
    } else if (t >= r.target_seconds) {
      this.status.textContent = "The target alone finished in " + r.target_seconds.toFixed(2) + " s; speculative decoding is still writing.";
    } else {
      this.status.textContent = "";
    }
  };

  // ------------------------------------------------------------------ wiring
  function init() {
    if (!document.getElementById("specdec-playground-data")) return;
    build();  // its charts load plotly.js when they come into view (react)
  }
  function build() {
    const template = document.getElementById("specdec-playground-data");  // a <template>: specdec_hook.script_json
    if (!template) return;
    const data = JSON.parse(template.content.textContent);
    const panels = [];
    const rule = document.getElementById("pg-rule-panel");
    const speed = document.getElementById("pg-speedup-panel");
    const race = document.getElementById("pg-race-panel");
    const block = document.getElementById("pg-block-panel");
    if (rule) panels.push(new RulePanel(rule, data));
    if (block) panels.push(new BlockPanel(block, data));
    if (speed) panels.push(new SpeedupPanel(speed, data));
    if (race) panels.push(new RacePanel(race, data));
    window.specdecPlayground = { panels: panels, verify: verify, exactOutput: exactOutput, residual: residual,
      naiveResidual: naiveResidual, drawIndex: drawIndex, sampleRule: sampleRule, chiSquare: chiSquare,
      blockTerms: blockTerms, verifyBlock: verifyBlock, blockTable: blockTable };
  }
  function rerender() {
    const pg = window.specdecPlayground;
    if (!pg) return;
    pg.panels.forEach(function (panel) { if (panel.render) panel.render(); });
  }
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(init);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();  // loaded on demand (specdec.js loadWidgets), after the page was parsed
  }
  new MutationObserver(rerender).observe(document.body, { attributes: true, attributeFilter: ["data-md-color-scheme"] });
})();
