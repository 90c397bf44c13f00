/* specdec trace files: what the Step Visualizer (visualizer.js, which loads after this file) opens, and the fates it
 * draws. A file the reader opens is parsed with no key that could reach a prototype, every object of it made without
 * one, and checked against the traces artifact's shape (docs/data/schema.json) and against itself before anything
 * of it is drawn: every field a renderer reads is the file's own, of its type and range, or absent with its
 * documented default. Its own file, so that the checks have a home; window.specdecTraceFile. */
(function () {
  "use strict";

  // What a trace file may hold, far above what the build and the trace command write (top-10 lists, k <= 64, a few
  // thousand tokens): a file past these is refused before anything is drawn (a 200,000-id list overflowed the
  // stack, a 2,000-id one froze the page for 40 s in the label fitting, k = 100,000 never finished).
  const MAX_BYTES = 64 * 1024 * 1024;
  const LIMITS = { k: 64, nodes: 256, top: 64, steps: 20000, runs: 200, id: 2147483647, text: 1 << 20 };
  function has(o, key) { return Object.prototype.hasOwnProperty.call(o, key); }
  function isInt(x) { return Number.isInteger(x); }
  function isProb(x) { return typeof x === "number" && isFinite(x) && x >= 0 && x <= 1 + 1e-6; }
  function isId(x) { return isInt(x) && x >= 0 && x <= LIMITS.id; }  // also a count or a position
  function isText(x, max) { return typeof x === "string" && x.length <= (max || LIMITS.text); }
  function isObject(x) { return x !== null && typeof x === "object" && !Array.isArray(x); }
  function isSeconds(x) { return typeof x === "number" && isFinite(x) && x >= 0; }
  function absent(x) { return x === undefined || x === null; }
  // A value from the file in a message: one line, at most `n` characters (a status line, not the file).
  function short(x, n) {
    const text = String(x).replace(/\s+/g, " ").trim();
    return text.length > (n || 80) ? text.slice(0, (n || 80) - 1) + "\u2026" : text;
  }

  // ------------------------------------------------------------------ parsing
  // A "__proto__" key is an own property after JSON.parse, which a copy made with Object.assign turns into the copy's
  // prototype (its [[Set]]), and a field the file leaves out was then read from it; "constructor" and "prototype"
  // are the other names a prototype is reached by. No trace file has such a key: one is refused, whatever its
  // value. Every object is also made anew without a prototype, so that a field the file leaves out reads as
  // undefined (never Object.prototype's), and the checks and the renderers read the file's own fields only.
  const BANNED = ["__proto__", "constructor", "prototype"];
  function parse(text) {
    let banned = null;
    try {
      return JSON.parse(text, function (key, value) {
        if (BANNED.indexOf(key) >= 0) { banned = key; throw new Error(key); }
        return isObject(value) ? Object.assign(Object.create(null), value) : value;
      });
    } catch (err) {
      if (banned !== null) throw new Error("it has a key named " + banned + " (a trace file has none: it could change what the page shows)");
      if (err instanceof RangeError) throw new Error("it is nested too deeply to read");
      throw new Error("it is not JSON (" + short(err.message, 100) + ")");
    }
  }

  // ------------------------------------------------------------------ fates
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
  // A token-tree step (specdec/tree.py) lists each node's parent and the accepted path, root to leaf; its rule is
  // sample and match (tree_rule absent or "match": y ~ p at a node, descend if y is a child) or recursive rejection
  // sampling ("rejection": children drawn from q, tried in sibling order, each accepted with its own probability).
  // The path's nodes are accepted. Sample and match: the children of the path's last node (which the target's draw
  // missed) rejected, every other node never evaluated. Rejection: the nodes the rule tried and did not accept
  // rejected (triedNodes), the others never evaluated. The step's own token is a bonus where the path ends at a
  // leaf, else drawn from what the rejected children left (specdec.trace.step_fates).
  function isTree(s) { return s.parents !== undefined && s.parents !== null; }
  function isRejection(s) { return s.tree_rule === "rejection"; }
  function treeFates(s) {
    const last = s.path.length ? s.path[s.path.length - 1] : -1;
    const tried = isRejection(s) ? triedMarks(s) : null;
    const fates = s.parents.map(function (parent, j) {
      if (s.path.indexOf(j) >= 0) return "accepted";
      return (tried ? tried[j] : parent === last) ? "rejected" : "not evaluated";
    });
    const extra = s.emitted.length <= s.n_accepted ? null : (s.bonus_token !== null ? "bonus" : "resampled");
    return { fates: fates, extra_fate: extra };
  }
  // Each node's children in sibling (index) order, the prefix's at 0 and node i's at i + 1.
  function childrenOf(parents) {
    const out = [[]];
    parents.forEach(function (parent, j) { out.push([]); out[parent + 1].push(j); });
    return out;
  }
  // The nodes recursive rejection sampling tried, in the order it tried them (one draw each): at the prefix and at
  // each node of the path, its children in sibling order up to the accepted one, the next on the path; at the
  // path's last node, every child (all rejected; none at a leaf).
  function triedNodes(s) {
    const children = childrenOf(s.parents);
    const out = [];
    let at = -1;
    for (let d = 0; d <= s.path.length; d++) {
      const next = d < s.path.length ? s.path[d] : -1;
      const kids = children[at + 1];
      for (let c = 0; c < kids.length; c++) {
        out.push(kids[c]);
        if (kids[c] === next) break;
      }
      at = next;
    }
    return out;
  }
  function triedMarks(s) {
    const marks = s.parents.map(function () { return false; });
    triedNodes(s).forEach(function (j) { marks[j] = true; });
    return marks;
  }
  // A run's steps with their fates, in copies without a prototype (the page's own runs and a file's alike), a run's
  // text fields absent given their documented defaults (the trace command's: domain "custom", policy "fixed"; a
  // trace's drafter "model" and rule "token").
  function bare(o, extra) { return Object.assign(Object.create(null), o, extra); }
  function withFates(run) {
    const steps = run.trace.steps.map(function (s) { return bare(s, stepFates(s)); });
    const trace = bare(run.trace, { steps: steps, drafter: absent(run.trace.drafter) ? "model" : run.trace.drafter,
                                    verify: absent(run.trace.verify) ? "token" : run.trace.verify });
    return bare(run, { trace: trace, prompt: bare(run.prompt), vocab: bare(run.vocab),
                       domain: absent(run.domain) ? "custom" : run.domain, policy: absent(run.policy) ? "fixed" : run.policy });
  }

  // ------------------------------------------------------------------ checks
  function checkTop(t, where, vocab) {
    if (!isObject(t) || !Array.isArray(t.ids) || !Array.isArray(t.probs) || t.ids.length !== t.probs.length ||
        !t.ids.every(isId) || !t.probs.every(isProb)) throw new Error(where + ": a top list needs ids and probs of one length");
    if (t.ids.length > LIMITS.top) throw new Error(where + ": a top list of " + t.ids.length + " ids (a trace file's have at most " + LIMITS.top + ")");
    t.ids.forEach(function (id) { inVocab(id, vocab, where); });
  }
  function inVocab(id, vocab, where) {
    if (!has(vocab, String(id))) throw new Error(where + ": token id " + id + " is not in the run's vocab");
  }
  // The fields of a step that no rule derives: its place (a tree step's nodes are drawn at prompt_length + position
  // + depth - 1), its budget, source and timings, and its rule's name. A string position had drawn "NaN".
  function checkStepFields(s, where, tree) {
    if (tree ? !isId(s.position) : !(s.position === undefined || isId(s.position)))
      throw new Error(where + ": position must be a non-negative integer");
    ["step", "budget"].forEach(function (key) {
      if (s[key] !== undefined && !isId(s[key])) throw new Error(where + ": " + key + " must be a non-negative integer");
    });
    if (!absent(s.source) && !isText(s.source, 200)) throw new Error(where + ": source must be a string");
    ["draft_seconds", "verify_seconds"].forEach(function (key) {
      if (s[key] !== undefined && !isSeconds(s[key])) throw new Error(where + ": " + key + " must be a number of seconds");
    });
    if (!absent(s.tree_rule) && s.tree_rule !== "match" && !(tree && s.tree_rule === "rejection"))
      throw new Error(where + ": tree_rule must be \"match\" or \"rejection\" (a tree step's)");
  }
  // A step must agree with itself, not only have the right shape: every fate, count and token the widget shows is
  // derived from these fields, and a contradiction would be drawn as it is ("0 of 4 accepted" beside "bonus token").
  function checkStep(s, i, vocab, rule) {
    const where = "step " + (i + 1);
    if (!isObject(s)) throw new Error(where + " is not an object");
    if (isTree(s)) { checkTreeStep(s, where, vocab); return; }
    checkStepFields(s, where, false);
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
    if (!absent(s.top_residual)) checkTop(s.top_residual, where, vocab);
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
    const block = !absent(s.stop_probs);
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
  // A tree step (schema 8's optional parents and path): the same care, by its rule's own terms (verify.verify_tree):
  // the path descends from the prefix child by child, the rule's draws are the ones its nodes took, and the fates,
  // the emitted tokens and the step's own token are the ones that path gives. 0 nodes is a real step: a budget of 0
  // (one token left before max_new_tokens, or a shape whose ranks all lie past the vocabulary) drafts nothing, and
  // the target's one draw is the step's token, a bonus.
  function checkTreeStep(s, where, vocab) {
    const k = s.k;
    if (!isInt(k) || k < 0 || k > LIMITS.nodes) throw new Error(where + ": a tree step has 0 to " + LIMITS.nodes + " nodes");
    checkStepFields(s, where, true);
    const rejection = isRejection(s);
    if (!Array.isArray(s.parents) || s.parents.length !== k ||
        !s.parents.every(function (a, j) { return isInt(a) && a >= -1 && a < j; }))
      throw new Error(where + ": parents must list, for each node, -1 or an earlier node");
    if (!Array.isArray(s.draft_tokens) || s.draft_tokens.length !== k || !s.draft_tokens.every(isId))
      throw new Error(where + ": k and draft_tokens disagree");
    ["q_draft_tokens", "p_draft_tokens"].forEach(function (key) {
      if (!Array.isArray(s[key]) || s[key].length !== k || !s[key].every(isProb)) throw new Error(where + ": " + key + " needs k numbers in [0, 1]");
    });
    // an acceptance probability per node; under rejection, null for a node the rule never tried
    if (!Array.isArray(s.accept_probs) || s.accept_probs.length !== k ||
        !s.accept_probs.every(function (a) { return isProb(a) || (rejection && a === null); }))
      throw new Error(where + ": accept_probs needs k numbers in [0, 1]" + (rejection ? " (null: a node never tried)" : ""));
    const path = s.path;
    if (!Array.isArray(path) || !path.every(function (j, i) { return isInt(j) && j >= 0 && j < k && s.parents[j] === (i ? path[i - 1] : -1); }))
      throw new Error(where + ": the path must descend from the prefix, each node a child of the one before");
    if (s.n_accepted !== path.length) throw new Error(where + ": n_accepted is not the path's length");
    if (!Array.isArray(s.top_p) || s.top_p.length !== k + 1 || !Array.isArray(s.top_q) || s.top_q.length > k + 1)
      throw new Error(where + ": needs k + 1 top_p lists");
    s.top_p.concat(s.top_q).forEach(function (t) { checkTop(t, where, vocab); });
    if (!absent(s.top_residual)) checkTop(s.top_residual, where, vocab);
    if (!Array.isArray(s.emitted) || !s.emitted.every(isId) || s.emitted.length > path.length + 1 || s.emitted.length < 1)
      throw new Error(where + ": emitted is not a list of ids");
    if (!(s.bonus_token === null || isId(s.bonus_token)) || !(s.resampled_token === null || isId(s.resampled_token)))
      throw new Error(where + ": bonus_token and resampled_token must be ids or null");
    s.draft_tokens.concat(s.emitted).forEach(function (id) { inVocab(id, vocab, where); });
    checkTreeProbs(s, where);
    if (rejection) checkRejectionDraws(s, where);
    else if (!Array.isArray(s.uniforms) || s.uniforms.length !== path.length + 1 || !s.uniforms.every(isProb))
      throw new Error(where + ": needs one draw per node the rule visited (the path's length + 1)");
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
        throw new Error(where + ": the recorded fates contradict the " + (rejection ? "nodes the rule tried" : "path") + " and the emitted tokens");
    }
  }
  // Either tree rule's probabilities, checked as a chain's are: the target cannot draw (or accept) a token of
  // probability 0, so a node on the path has p > 0; a node's children are distinct tokens (ranked, or drawn without
  // replacement); and sample and match accepts a child exactly when y ~ p at its parent is that child, with
  // probability p(x) at the parent: its accept_probs are its p_draft_tokens.
  function checkTreeProbs(s, where) {
    s.path.forEach(function (j) {
      if (!(s.p_draft_tokens[j] > 0)) throw new Error(where + ": node " + (j + 1) + " is on the path, yet its p(x) is 0 (the target cannot draw it)");
    });
    const first = {};
    s.parents.forEach(function (parent, j) {
      const key = parent + " " + s.draft_tokens[j];
      if (has(first, key)) throw new Error(where + ": nodes " + (first[key] + 1) + " and " + (j + 1) + " are children of one node with one token id");
      first[key] = j;
    });
    if (isRejection(s)) return;
    s.accept_probs.forEach(function (a, j) {
      if (Math.abs(a - s.p_draft_tokens[j]) > 1e-3)
        throw new Error(where + ": accept_probs[" + j + "] is " + a + ", not the node's p(x) = " + s.p_draft_tokens[j].toFixed(4) + " (sample and match)");
    });
  }
  // Recursive rejection sampling's draws: one per node it tried (triedNodes), in that order, then one for the step's
  // own token. A tried node has an acceptance probability and an untried one none (null); a tried node is accepted
  // iff its draw is below it; the first child tried at a node is accepted with min(1, p/q) (a later sibling with a
  // residual's, which the step does not record).
  function checkRejectionDraws(s, where) {
    const tried = triedNodes(s);
    const marks = triedMarks(s);
    s.accept_probs.forEach(function (a, j) {
      if (marks[j] && a === null) throw new Error(where + ": the rule tried node " + (j + 1) + ", yet accept_probs[" + j + "] is null");
      if (!marks[j] && a !== null) throw new Error(where + ": node " + (j + 1) + " was never tried, yet accept_probs[" + j + "] is a number");
    });
    if (!Array.isArray(s.uniforms) || s.uniforms.length !== tried.length + 1 || !s.uniforms.every(isProb))
      throw new Error(where + ": needs one draw per node the rule tried and one for its own token (" + (tried.length + 1) + ")");
    tried.forEach(function (j, t) {
      const accepted = s.path.indexOf(j) >= 0, below = s.uniforms[t] < s.accept_probs[j];
      if (accepted && !below) throw new Error(where + ": node " + (j + 1) + " is accepted, but its draw r is not below its accept prob");
      if (!accepted && below) throw new Error(where + ": node " + (j + 1) + " is rejected, but its draw r is below its accept prob");
    });
    const children = childrenOf(s.parents);
    [-1].concat(s.path).forEach(function (at) {
      const j = children[at + 1][0];
      if (j === undefined) return;  // a leaf
      const p = s.p_draft_tokens[j], q = s.q_draft_tokens[j];
      if (!(q > 0)) throw new Error(where + ": node " + (j + 1) + " was drawn from q, yet its q(x) is 0");
      const a = Math.min(1, p / q);
      if (Math.abs(a - s.accept_probs[j]) > 1e-3)
        throw new Error(where + ": accept_probs[" + j + "] is " + s.accept_probs[j] + ", not min(1, p/q) = " + a.toFixed(4) + " (the first child tried)");
    });
  }
  // A run: its text fields (shown as text: a non-string here, an object, used to wipe the widget), its vocab, and
  // its trace's fields the renderers read (k in the selector, prompt_length where a tree's nodes sit), each its own.
  const RUN_TEXT = ["domain", "policy", "id"];
  function checkRun(r, n) {
    const where = "run " + (n + 1);
    if (!isObject(r) || !isObject(r.prompt) || !isText(r.prompt.text) || !isText(r.prompt.id, 200))
      throw new Error(where + ": no prompt with an id and a text");
    RUN_TEXT.forEach(function (key) {
      if (!absent(r[key]) && !isText(r[key], 200)) throw new Error(where + ": " + key + " must be a string");
    });
    if (r.mode !== "greedy" && r.mode !== "sampled") throw new Error(where + ": mode must be greedy or sampled");
    if (!isObject(r.vocab) || !Object.keys(r.vocab).every(function (key) { return /^\d{1,10}$/.test(key) && isText(r.vocab[key], 1000); }))
      throw new Error(where + ": vocab must map ids to token text");
    const trace = r.trace;
    if (!isObject(trace) || !isInt(trace.k) || !Array.isArray(trace.steps) || trace.steps.length === 0)
      throw new Error(where + ": no trace with k and steps");
    if (trace.k < 0 || trace.k > LIMITS.nodes) throw new Error(where + ": trace.k must be an integer in [0, " + LIMITS.nodes + "]");
    if (trace.steps.length > LIMITS.steps) throw new Error(where + ": " + trace.steps.length + " steps (at most " + LIMITS.steps + ")");
    if (trace.verify !== undefined && trace.verify !== "token" && trace.verify !== "block")
      throw new Error(where + ": trace.verify must be \"token\" or \"block\"");
    ["drafter", "policy"].forEach(function (key) {
      if (!absent(trace[key]) && !isText(trace[key], 200)) throw new Error(where + ": trace." + key + " must be a string");
    });
    const tree = trace.steps.some(function (s) { return isObject(s) && isTree(s); });
    if (tree ? !isId(trace.prompt_length) : !(trace.prompt_length === undefined || isId(trace.prompt_length)))
      throw new Error(where + ": trace.prompt_length must be a non-negative integer");
    trace.steps.forEach(function (s, i) { checkStep(s, i, r.vocab, trace.verify || "token"); });
  }
  function checkTraceFile(doc) {
    if (!isObject(doc) || !Array.isArray(doc.runs) || doc.runs.length === 0)
      throw new Error("it has no runs (a trace file is what `python -m specdec_site trace` or the build's traces stage writes)");
    if (doc.runs.length > LIMITS.runs) throw new Error("it has " + doc.runs.length + " runs (at most " + LIMITS.runs + ")");
    doc.runs.forEach(checkRun);
  }

  // The status line of a file that opened: its runs, models, device and date, each value cut to a short line.
  function metaText(x) { return typeof x === "string" || typeof x === "number" ? short(x, 80) : "?"; }
  function describeFile(name, doc) {
    const m = isObject(doc.metadata) ? doc.metadata : {};
    const models = isObject(m.models)
      ? Object.keys(m.models).slice(0, 4).map(function (role) {
        return short(role, 40) + " " + metaText(isObject(m.models[role]) ? m.models[role].name : undefined);
      }).join(", ") : "models not recorded";
    const device = isObject(m.device) ? metaText(m.device.type) + (m.device.name ? " (" + metaText(m.device.name) + ")" : "") : "device not recorded";
    return "Opened " + name + ": " + doc.runs.length + " run" + (doc.runs.length === 1 ? "" : "s") + "; " + models + "; " +
      device + (m.dtype ? ", " + metaText(m.dtype) : "") + (m.date ? "; recorded " + metaText(m.date) : "") + ". Read in your browser; nothing was uploaded.";
  }

  window.specdecTraceFile = { MAX_BYTES: MAX_BYTES, parse: parse, check: checkTraceFile, describe: describeFile,
    withFates: withFates, isTree: isTree, isRejection: isRejection, triedNodes: triedNodes, short: short };
})();
