"""Replay draft-length policies offline on recorded greedy draft chains: a design tool, not a benchmark.

At T = 0 every correct run emits the target's greedy continuation, and a step that starts after t emitted
tokens sees the draft's greedy chain from the target's own prefix. So one pass over a prompt records all a
policy can ever see: for every start t, the draft's chain of up to K tokens with its confidences, and how
many of them the target accepts. Any causal policy then replays on these chains without a model, at a
fixed cost per draft token and a verify pass of k drafts costed at the median the committed policies stage
measured for that k (the line a + b k fitted to the same steps where too few had that k; `--verify-cost line`
uses the line throughout), with the oracle (eq. 13) as the ceiling. No timing noise: two policies differ only
by their choices.

    python scripts/simulate_policies.py collect --start 12 --count 6 --out /tmp/chains.json  # models, ~15 min
    python scripts/simulate_policies.py replay scripts/design_chains.json.gz                 # a minute, no model
    python scripts/simulate_policies.py replay scripts/design_chains.json.gz scripts/design_chains_narrative.json.gz \
        --signals --json docs/data/design-replay.json                                        # the site's replay tables
    python scripts/simulate_policies.py fit scripts/design_chains.json.gz                    # writes specdec/prior.py

scripts/design_chains_narrative.json.gz holds the narrative set's design prompts (issue 47: recorded after the prior
was fitted, so the prior has not seen them); `replay` also reports, per set, the prior's calibration against the set's
own and how the same rule fares with one part of its prior changed (prior_sensitivity).

Use prompts the benchmark does not use (the policies stage uses the first 6 of each set) to design on.
`replay` also prints two reference points for measured / oracle (neither bounds every causal rule: the adaptive
policy beats the first on prose): a survival threshold on the draft's confidence, its calibration and threshold fitted
in hindsight on the prompts it is scored on, and a rule that drafts the accepted run plus the rejected token (it never
stops early and never drafts past the first rejection; only a rule that foresees rejections does better).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from specdec_site.numbers import integer
from specdec_site.paths import ROOT

# ---------------------------------------------------------------- collect (needs the real pair)


def record_chains(target, draft, ids, n: int, k: int, vocab_size: int | None = None) -> list[dict]:
    """For each start t of the target's greedy continuation of ids (n tokens): the draft's greedy chain of
    up to k tokens from the target's prefix, its confidences, and how many the target accepts."""
    import torch

    from specdec import autoregressive_generate
    from specdec.cache import CachedLM, resolve_vocab_size
    from specdec.drafters import NgramDrafter, draft_confidence, draft_entropy, draft_margin
    from specdec.sampling import SamplingConfig

    V = resolve_vocab_size(target, draft, vocab_size)
    cont = autoregressive_generate(target, ids, max_new_tokens=n, temperature=0.0, vocab_size=V,
                                   generator=torch.Generator().manual_seed(0)).tolist()
    padded = cont + [0] * k
    seq = torch.cat([ids, torch.tensor(padded)])[None]  # (1, n_prompt + n + k)
    lm, n0, chains, greedy = CachedLM(draft, V, "draft"), ids.shape[0], [], SamplingConfig(0.0)
    ngram = NgramDrafter()
    for t in range(len(cont)):
        start = n0 + t
        lm.rollback(start - 1)  # as the decoder leaves it: every final token but the last one cached
        tokens, confidences, margins, entropies, lookups = [], [], [], [], []
        for i in range(min(k, len(cont) - t)):
            logits = lm.logits(seq[:, : start + i], 1)[0]  # (V,)
            tokens.append(int(logits.argmax()))
            confidences.append(draft_confidence(logits, None, greedy))
            margins.append(draft_margin(logits))
            entropies.append(draft_entropy(logits))
            # what a prompt lookup would propose here: agrees (1), differs (0), or has no match (-1)
            proposal = ngram.lookup(seq[0, : start + i].tolist(), 1)
            lookups.append(-1 if not proposal else int(proposal[0] == tokens[-1]))
            seq[0, start + i] = tokens[-1]  # the chain goes on from its own token, as a draft does
        accepted = 0
        while accepted < len(tokens) and tokens[accepted] == cont[t + accepted]:
            accepted += 1
        chains.append({"confidences": [round(c, 5) for c in confidences], "margins": [round(m, 5) for m in margins],
                       "entropies": [round(e, 4) for e in entropies], "lookup": lookups, "accepted": accepted})
        seq[0, start:start + k] = torch.tensor(padded[t:t + k])  # back to the target's tokens
    return chains


def collect(args) -> None:
    from specdec.fileio import write_json_atomic
    from specdec_site.engine.cli import make_context, parse_args
    from specdec_site.prompts import encode
    from specdec_site.public_prompts import public_prompts

    ctx = make_context(parse_args(["--device", "cpu"]))
    out = {"k": args.k, "tokens": args.tokens, "prompts": []}
    for domain in args.domains:
        for prompt in public_prompts(domain, args.start, args.count):
            ids = encode(ctx.target.tokenizer, prompt, ctx.device)
            chains = record_chains(ctx.target.model, ctx.default_draft, ids, args.tokens, args.k, ctx.vocab_size)
            out["prompts"].append({"domain": domain, "id": prompt["id"], "chains": chains})
            print(f"{prompt['id']}: mean accepted run {statistics.mean(c['accepted'] for c in chains):.2f}", flush=True)
            write_json_atomic(Path(args.out), out)  # after every prompt: a killed run keeps what it recorded


# ---------------------------------------------------------------- replay (no model)


MIN_STEPS = 5  # a k is costed at its own median verify time only with at least this many recorded steps


@dataclass(frozen=True)
class Costs:
    """What a replayed step costs: `draft` seconds per draft token, and a verify pass of k drafts `per_k[k]`
    seconds, or the line intercept + slope k for a k without a measured median."""
    draft: float  # seconds per draft token
    intercept: float  # the verify line's a
    slope: float  # the verify line's b
    per_k: dict = field(default_factory=dict)  # k -> median verify seconds measured at that k

    def verify(self, k: int) -> float:
        return self.per_k.get(k, self.intercept + self.slope * k)


def costs(domain: str, per_k: bool = True, data: dict | None = None) -> Costs:
    """The committed adaptive runs' costs (of every domain, for one they lack): medians over the prompts of each
    run's draft seconds per token and
    verify line, and (per_k) the median verify seconds of every step after the first (the prefill) at each k
    drafted by at least MIN_STEPS of them. Measured verify time need not be a straight line in k: the padded
    kernels (specdec.kernels.MIN_ROWS) score the 2 to 4 rows of k = 1 to 3 in one time."""
    if data is None:
        data = json.loads((ROOT / "docs" / "data" / "cpu" / "policies.json").read_text())
    # a domain the committed runs do not have is costed on all of theirs (the target and draft are the same)
    rows = data["domains"][domain]["rows"] if domain in data["domains"] else \
        [r for d in data["domains"].values() for r in d["rows"]]
    runs = [r["variants"]["adaptive"] for r in rows]
    line = [statistics.median(run["oracle"][key] for run in runs)
            for key in ("draft_seconds_per_token", "verify_intercept", "verify_slope")]
    by_k = {}
    for run in runs:
        for step in run["steps"][1:]:
            by_k.setdefault(step["k"], []).append(step["verify_seconds"])
    medians = {k: statistics.median(v) for k, v in sorted(by_k.items()) if len(v) >= MIN_STEPS} if per_k else {}
    return Costs(*line, medians)


def replay_one(chains: list[dict], policy, cost: Costs) -> tuple[float, list[tuple[int, int]]]:
    """(seconds, [(drafted, accepted) per step]) of one policy on one prompt's chains: the decoder's loop
    (specdec.decoding.speculative_generate) without the models."""
    from specdec.policies import StepOutcome

    n, t, seconds, steps = len(chains), 0, 0.0, []
    while t < n:
        budget = min(policy.budget(), n - t - 1)
        chain = chains[t]
        drafted = 0
        while drafted < budget:
            drafted += 1
            signals = {"signal": chain[policy.signal][drafted - 1]} if getattr(policy, "signal", None) else {}
            if not policy.keep_drafting(drafted, chain["confidences"][drafted - 1], "model", **signals):
                break
        accepted = min(drafted, chain["accepted"])
        step_seconds = (drafted * cost.draft, cost.verify(drafted))
        outcome = StepOutcome("model", drafted, accepted, chain["confidences"][:drafted], *step_seconds, first=t == 0)
        if getattr(policy, "signal", None):
            outcome.signals = chain[policy.signal][:drafted]
        policy.observe(outcome)
        seconds += sum(step_seconds)
        steps.append((drafted, accepted))
        t += accepted + 1
    return seconds, steps


def oracle_one(chains: list[dict], cost: Costs) -> float:
    from specdec.theory import oracle_seconds, oracle_steps

    agree = [c["accepted"] > 0 for c in chains]
    return oracle_seconds(oracle_steps(agree), cost.draft, cost.verify)  # eq. (13) at the same verify costs


def oracle_plus_one(chains: list[dict], cost: Costs, k: int) -> float:
    """Seconds of a stop rule that never stops early and stops right after the first rejected draft: the
    accepted run plus the rejected token (at most k). A causal rule sees a draft's confidence only once it has
    drafted it, so it avoids the rejected draft only by predicting the rejection from earlier drafts; this cap
    is what it reaches when it cannot, and never stops too early."""
    n, t, seconds = len(chains), 0, 0.0
    while t < n:
        accepted = chains[t]["accepted"]
        drafted = min(k, n - t - 1, accepted + 1)
        seconds += drafted * cost.draft + cost.verify(drafted)
        t += min(drafted, accepted) + 1
    return seconds


def reached_drafts(prompts: list[dict]):
    """(chain, i, confidence, accepted) for every draft the target evaluated: those up to and including the first
    rejected one of each chain (a calibration learns P(accepted | reached) from exactly these)."""
    for p in prompts:
        for chain in p["chains"]:
            for i, confidence in enumerate(chain["confidences"][: chain["accepted"] + 1]):
                yield chain, i, confidence, i < chain["accepted"]


def replay_speedup(chains: list[dict], seconds: float, cost: Costs) -> float:
    """A replayed run's speedup over target-only at one verify pass (a) per token: the decoding steps only, no
    prefill."""
    return len(chains) * cost.intercept / seconds


def hindsight_calibration(prompts: list[dict], bins: int = 40):
    """The adaptive policy's own calibration, P(accepted | reached, confidence bin), fed every reached draft of
    ALL the chains given, the ones it is then scored on: no causal policy knows it in advance."""
    from specdec.policies import _Calibration

    calibration = _Calibration(bins=bins)
    for _, _, confidence, accepted in reached_drafts(prompts):
        calibration.add(confidence, accepted)
    return calibration


def hindsight_policy(calibration, k: int, tau: float):
    """Draft on while the calibrated P(every draft so far accepted) stays >= tau."""
    from specdec.policies import DraftPolicy

    class Hindsight(DraftPolicy):
        name = "hindsight"

        def budget(self):
            self.survival = 1.0
            return self.k

        def keep_drafting(self, n_drafted, confidence, source):
            self.survival *= calibration(confidence)
            return self.survival >= tau

    return Hindsight(k)


TAUS = tuple(t / 20 for t in range(1, 20))  # the survival thresholds the hindsight bound tries


def hindsight_threshold(prompts: list[dict], oracles: list[float], cost: Costs, k: int) -> tuple[float, float]:
    """(median over prompts of oracle / seconds, tau) of the best survival threshold, both the calibration and
    tau chosen on the prompts it is scored on: a reference for stop rules that see only the draft's confidence, not
    a bound on them (a rule that also weighs the costs and the run's rate, as the adaptive policy does, can do
    better). oracles: oracle_one of each prompt."""
    calibration = hindsight_calibration(prompts)

    def score(tau):
        return statistics.median(oracle / replay_one(p["chains"], hindsight_policy(calibration, k, tau), cost)[0]
                                 for p, oracle in zip(prompts, oracles))

    return max((score(tau), tau) for tau in TAUS)


def previous_adaptive(k: int):
    """The adaptive rule before issue 37, for comparison: a flat prior (one pseudo-observation per confidence bin
    at its centre, costs 0.25 and 0.05 of a verify pass until measured) and a step that grows while the next
    draft's tokens per unit cost beat the step's own average so far, pi_{i+1} T_i > E_i (t_d + v_1)."""
    from specdec.policies import AdaptivePolicy

    class Previous(AdaptivePolicy):
        def budget(self):
            self.expected = 1.0
            return super().budget()

        def keep_drafting(self, n_drafted, confidence, source):
            a = self._calibration(source)(confidence)
            self.survival *= a
            self.expected += self.survival
            per_token, intercept, slope = self._costs(source).current()
            return self.survival * a * (n_drafted * per_token + intercept + slope * n_drafted) > \
                self.expected * (per_token + slope)

    return Previous(k, prior=False)


# Signals besides the draft's confidence that collect records per draft token, and how a calibration bins them:
# the gap between the draft's top two probabilities, its entropy (nats), whether a prompt lookup (the n-gram
# drafter) would propose the same token there (1), another (0) or nothing (-1), and the depth in the step.
SIGNALS = {"margins": lambda v: min(4, int(v * 5)), "entropies": lambda v: min(4, int(v)),
           "lookup": lambda v: v, "depth": lambda v: 0 if v == 1 else 1 if v <= 3 else 2 if v <= 7 else 3}


def with_depth(prompts: list[dict]) -> list[dict]:
    """The chains with each draft's depth in its step as one more signal, "depth"."""
    for p in prompts:
        for chain in p["chains"]:
            chain["depth"] = list(range(1, len(chain["confidences"]) + 1))
    return prompts


def signal_policy(k: int, signal: str | None, fitted_on: list[dict]):
    """The library's adaptive rule with its calibration keyed by (confidence bin, the signal's bin) and a prior
    fitted, as `fit` fits the shipped one, on the chains of `fitted_on` (the other design prompts: no prompt is
    scored with a prior that saw it). signal None: confidence alone. Only the calibration is replaced: the rule,
    the costs and the run's rate are AdaptivePolicy's own."""
    from specdec.policies import AdaptivePolicy
    from specdec.prior import STRENGTH

    key = SIGNALS[signal] if signal else (lambda v: 0)
    table = {}  # (confidence bin, signal bin) -> [tried, accepted] of the reached drafts of fitted_on
    for chain, i, confidence, accepted in reached_drafts(fitted_on):
        cell = table.setdefault((min(9, int(confidence * 10)), key(chain[signal][i]) if signal else 0), [0, 0])
        cell[0] += 1
        cell[1] += accepted

    class Cells:
        """What AdaptivePolicy reads and feeds as its calibration (a call and `add`), keyed by the signal too. The
        signal of the token at hand is set before each call; `add` takes the step's signals in the order in which
        AdaptivePolicy.observe adds its drafts (first to last)."""

        def __init__(self):
            self.counts, self.signal, self.pending = {}, None, []  # counts: the run's own (tried, accepted) per cell

        def cell(self, confidence):
            return min(9, int(confidence * 10)), key(self.signal) if signal else 0

        def __call__(self, confidence):
            """The prior's rate in the cell (a cell it never saw: the confidence bin's centre), with the run's own."""
            cell = self.cell(confidence)
            tried, accepted = table.get(cell, (1, (cell[0] + 0.5) / 10))
            own = self.counts.get(cell, (0, 0))
            return (STRENGTH * accepted / tried + own[1]) / (STRENGTH + own[0])

        def add(self, confidence, accepted):
            self.signal = self.pending.pop(0)
            cell = self.cell(confidence)
            tried, n = self.counts.get(cell, (0, 0))
            self.counts[cell] = (tried + 1, n + accepted)

    class Signal(AdaptivePolicy):
        def __init__(self):
            super().__init__(k)
            self.signal, self.cells = signal, Cells()

        def _calibration(self, source):
            return self.cells

        def keep_drafting(self, n_drafted, confidence, source, signal=None):
            self.cells.signal = signal
            return super().keep_drafting(n_drafted, confidence, source)

        def observe(self, outcome):
            self.cells.pending = list(getattr(outcome, "signals", [None] * len(outcome.confidences)))
            super().observe(outcome)

    return Signal()


def candidates(k: int, prompt: dict, prompts: list[dict], signals: bool = False) -> dict:
    """Policy name -> factory for one prompt: the library's policies (adaptive with the shipped prior, and with a
    flat one), the rule before issue 37, and (signals) the adaptive rule with one more signal, each with a prior
    fitted on the other prompts."""
    from specdec.policies import AdaptivePolicy, make_policy

    out = {name: (lambda name=name: make_policy(name, k if name != "fixed" else 4)) for name in
           ("fixed", "confidence", "heuristic", "adaptive")}
    out["adaptive, flat prior"] = lambda: AdaptivePolicy(k, prior=False)
    out["adaptive before issue 37"] = lambda: previous_adaptive(k)
    if signals:
        others = [p for p in prompts if p["id"] != prompt["id"]]
        for signal in (None, *SIGNALS):
            name = f"adaptive + {signal}" if signal else "adaptive"
            out[f"{name}, prior without this prompt"] = lambda s=signal: signal_policy(k, s, others)
    return out


def read_chains_file(path: str) -> dict:
    """One file that `collect` wrote, or an exit in one line that says what it is instead (empty, binary, JSON of
    another shape: each gave a traceback)."""
    try:
        text = gzip.open(path, "rt").read() if str(path).endswith(".gz") else Path(path).read_text()
        data = json.loads(text)
    except (OSError, EOFError, UnicodeDecodeError, ValueError) as err:
        sys.exit(f"{path}: not a chains file written by `collect` (it is not {'gzipped ' if str(path).endswith('.gz') else ''}"
                 f"JSON: {err})")
    if not isinstance(data, dict) or not isinstance(data.get("prompts"), list) or not data["prompts"] \
            or not isinstance(data.get("k"), int):
        sys.exit(f"{path}: not a chains file written by `collect` (it needs a non-empty 'prompts' list and 'k')")
    for domain, c in (data.get("costs") or {}).items():
        numbers = [c.get("draft"), c.get("intercept"), c.get("slope")] if isinstance(c, dict) else [None]
        if not all(isinstance(x, (int, float)) and math.isfinite(x) and x >= 0 for x in numbers) or not numbers[1]:
            sys.exit(f"{path}: the costs stored for {domain} are not finite non-negative seconds with a positive "
                     f"intercept ({c!r}): record the chains again")
    return data


def load_chains(paths: list[str]) -> dict:
    """The prompts of one or more collect files, with their common cap k (the smallest) and depth as a signal."""
    files = [read_chains_file(path) for path in paths]
    prompts, stored = {}, {}
    for f in files:
        for p in f["prompts"]:
            prompts.setdefault(p["id"], p)  # a prompt recorded twice (overlapping --start ranges) counts once
        stored.update({domain: Costs(c["draft"], c["intercept"], c["slope"], {int(k): v for k, v in c["per_k"].items()})
                       for domain, c in f.get("costs", {}).items()})
    return {"k": min(f["k"] for f in files), "prompts": with_depth(list(prompts.values())), "costs": stored,
            "costs_from": "; ".join(f["costs_from"] for f in files if "costs_from" in f),
            "recorded": [f["recorded"] for f in files if "recorded" in f]}


def domain_costs(data: dict, domain: str, per_k: bool = True) -> Costs:
    """The costs the chains file stores for the domain (design_chains.json.gz keeps the ones its prior was fitted
    at, so that a rebuild of the data does not change the fit), else the committed runs' (costs)."""
    if domain in data["costs"]:
        cost = data["costs"][domain]
        return cost if per_k else Costs(cost.draft, cost.intercept, cost.slope)
    return costs(domain, per_k)


def bin_acceptance(prompts: list[dict], bins: int = 10) -> tuple[list[int], list[float | None]]:
    """(reached drafts, the share of them accepted) per confidence bin of the prompts' chains (None: an empty bin)."""
    tried, accepted = [0] * bins, [0] * bins
    for _, _, confidence, was_accepted in reached_drafts(prompts):
        b = min(bins - 1, int(confidence * bins))
        tried[b] += 1
        accepted[b] += was_accepted
    return tried, [a / t if t else None for t, a in zip(tried, accepted)]


SENSITIVITY = ("the prior's acceptance set to this set's own (hindsight)", "the prior's rate set to this set's own "
               "(hindsight)", "prior strength 5 (a quarter: the run's drafts take over sooner)",
               "prior strength 80 (four times: the prior holds longer)")


def prior_sensitivity(prompts: list[dict], cost: Costs, k: int, shipped_seconds: list[float]) -> dict:
    """Why the adaptive policy does what it does on a set: per prompt, the shipped policy's replayed seconds ÷ those of
    the same rule with one part of its prior changed (the median; above 1, the change is faster), for each change in
    SENSITIVITY. The two hindsight changes take from the prompts they are scored on what no causal run knows in
    advance: they bound what a better prior of that part could win on this set."""
    import specdec.prior as module
    from specdec.policies import AdaptivePolicy

    shipped = {key: getattr(module, name) for key, name in shipped_prior.NAMES.items()}
    _, own = bin_acceptance(prompts, len(shipped["acceptance"]))
    own_rate = statistics.median(replay_speedup(p["chains"], s, cost) for p, s in zip(prompts, shipped_seconds))
    changes = dict(zip(SENSITIVITY, (
        {"acceptance": [o if o is not None else a for o, a in zip(own, shipped["acceptance"])]},
        {"rate": own_rate}, {"strength": shipped["strength"] / 4}, {"strength": shipped["strength"] * 4})))
    out = {}
    for name, change in changes.items():
        with shipped_prior({**shipped, **change}):
            seconds = [replay_one(p["chains"], AdaptivePolicy(k), cost)[0] for p in prompts]
        out[name] = statistics.median(old / new for old, new in zip(shipped_seconds, seconds))
    return {"own_rate": own_rate, "ratios": out}


def replay(args) -> None:
    data = load_chains(args.chains)
    k = data["k"] if args.k is None else args.k
    if not 1 <= k <= data["k"]:
        sys.exit(f"--k {k}: the chains in {', '.join(args.chains)} were recorded with up to {data['k']} drafts "
                 f"(collect --k {k} records longer ones)")
    table, references, versus, sensitivity = {}, {}, {}, {}
    for domain in sorted({p["domain"] for p in data["prompts"]}):
        cost = domain_costs(data, domain, per_k=args.verify_cost == "per-k")
        ks = ", ".join(f"{k}: {v:.3f}" for k, v in cost.per_k.items()) or "none"
        print(f"{domain}: draft {cost.draft:.4f} s per token; verify line {cost.intercept:.3f} + {cost.slope:.4f} k s; "
              f"measured verify medians (k: s) {ks}")
        prompts = [p for p in data["prompts"] if p["domain"] == domain]
        oracles = [oracle_one(p["chains"], cost) for p in prompts]
        runs = {}  # policy -> seconds per prompt
        for p in prompts:
            for name, factory in candidates(k, p, data["prompts"], args.signals).items():
                runs.setdefault(name, []).append(replay_one(p["chains"], factory(), cost)[0])
        for name, seconds in runs.items():
            rates = [replay_speedup(p["chains"], s, cost) for p, s in zip(prompts, seconds)]
            table.setdefault(name, {})[domain] = (statistics.median(rates),
                                                  statistics.median(o / s for o, s in zip(oracles, seconds)))
        versus[domain] = statistics.median(old / new for old, new in
                                           zip(runs["adaptive before issue 37"], runs["adaptive"]))
        cap = statistics.median(oracle / oracle_plus_one(p["chains"], cost, k) for p, oracle in zip(prompts, oracles))
        references[domain] = (*hindsight_threshold(prompts, oracles, cost, k), cap)
        sensitivity[domain] = prior_sensitivity(prompts, cost, k, runs["adaptive"])
    domains = sorted({d for row in table.values() for d in row})
    counts = {d: sum(p["domain"] == d for p in data["prompts"]) for d in domains}
    print(f"\nmedians over the design prompts ({', '.join(f'{d} {n}' for d, n in counts.items())})")
    print(f"{'policy':<40}" + "".join(f"{d + ' speedup':>18}{d + ' /oracle':>18}" for d in domains))
    for name, row in table.items():
        print(f"{name:<40}" + "".join(f"{row[d][0]:>18.3f}{row[d][1]:>18.3f}" for d in domains))
    print("\nadaptive (shipped prior) over the rule before issue 37, per prompt, median: " +
          ", ".join(f"{d} {v:.3f}" for d, v in versus.items()))
    print("\n/oracle reference points (medians over the same prompts):")
    for d, (hindsight, tau, cap) in references.items():
        print(f"  {d}: survival threshold fitted in hindsight {hindsight:.3f} (survival >= {tau:.2f}, calibration and tau "
              f"fitted on these prompts); drafting the accepted run plus the rejected token (structural cap) {cap:.3f}")
    import specdec.prior as prior

    print(f"\nthe adaptive rule with one part of its prior changed: shipped seconds / changed seconds, per prompt, median "
          f"(the shipped prior's rate: {prior.RATE} tokens per pass, strength {prior.STRENGTH})")
    for d, sens in sensitivity.items():
        print(f"  {d} (the shipped policy's own rate here: {sens['own_rate']:.2f}): " +
              "; ".join(f"{name} {v:.3f}" for name, v in sens["ratios"].items()))
    calibration = {d: bin_acceptance([p for p in data["prompts"] if p["domain"] == d]) for d in domains}
    print("\nP(accepted | reached, confidence bin): the shipped prior, then each set's own design chains (drafts)")
    print("  prior: " + " ".join(f"{a:.2f}" for a in prior.ACCEPTANCE))
    for d, (tried, rate) in calibration.items():
        print(f"  {d}: " + " ".join("-" if r is None else f"{r:.2f}({t})" for t, r in zip(tried, rate)))
    if args.json:
        from specdec.fileio import write_json_atomic

        write_json_atomic(Path(args.json), {
            "chains": [str(Path(c).resolve().relative_to(ROOT)) if Path(c).resolve().is_relative_to(ROOT) else str(c)
                       for c in args.chains],
            "recorded": data["recorded"], "costs_from": data["costs_from"], "k": k, "verify_cost": args.verify_cost,
            "command": "python scripts/simulate_policies.py replay " + " ".join(args.argv),
            "prompts": {d: [p["id"] for p in data["prompts"] if p["domain"] == d] for d in domains},
            "policies": {name: {d: {"speedup": round(v[0], 4), "over_oracle": round(v[1], 4)} for d, v in row.items()}
                         for name, row in table.items()},
            "adaptive_over_previous": {d: round(v, 4) for d, v in versus.items()},
            "references": {d: {"hindsight": round(h, 4), "hindsight_tau": tau, "cap": round(cap, 4)}
                           for d, (h, tau, cap) in references.items()},
            "prior": {"acceptance": prior.ACCEPTANCE, "rate": prior.RATE, "strength": prior.STRENGTH},
            "calibration": {d: {"tried": tried, "acceptance": [None if r is None else round(r, 4) for r in rate]}
                            for d, (tried, rate) in calibration.items()},
            "sensitivity": {d: {"own_rate": round(sens["own_rate"], 4),
                                "ratios": {name: round(v, 4) for name, v in sens["ratios"].items()}}
                            for d, sens in sensitivity.items()}})


# ---------------------------------------------------------------- fit the shipped prior (no model)

PRIOR_STRENGTH = 20  # pseudo-observations per confidence bin: a run's own drafts outweigh the prior within a few steps
PRIOR_RATE_WEIGHT = 2  # the prior rate counts as this many steps of the run


def fit_prior(data: dict, bins: int = 10, rounds: int = 3) -> dict:
    """The adaptive policy's prior from design chains: acceptance per confidence bin (every reached draft:
    all before it accepted), the costs of the committed runs (draft seconds per token and the verify slope, each
    over the verify intercept, medians over their prompts), and the rate: tokens per verify pass that the policy
    with this prior reaches on the same chains, iterated from 2 (median over prompts, at each domain's costs)."""
    from specdec.policies import AdaptivePolicy

    prompts = data["prompts"]
    tried, accepted = [0] * bins, [0] * bins
    for _, _, confidence, was_accepted in reached_drafts(prompts):
        b = min(bins - 1, int(confidence * bins))
        tried[b] += 1
        accepted[b] += was_accepted
    acceptance = [round(a / t, 4) if t else round((b + 0.5) / bins, 4) for b, (t, a) in enumerate(zip(tried, accepted))]
    domains = sorted({p["domain"] for p in prompts})
    cost = {d: domain_costs(data, d) for d in domains}
    prior = {"acceptance": acceptance, "tried": tried, "strength": PRIOR_STRENGTH, "rate_weight": PRIOR_RATE_WEIGHT,
             "draft_cost": round(statistics.median(c.draft / c.intercept for c in cost.values()), 4),
             "verify_slope": round(statistics.median(c.slope / c.intercept for c in cost.values()), 4), "rate": 2.0}
    for _ in range(rounds):
        with shipped_prior(prior):
            rates = [replay_speedup(p["chains"], replay_one(p["chains"], AdaptivePolicy(16), cost[p["domain"]])[0],
                                    cost[p["domain"]]) for p in prompts]
        prior["rate"] = round(statistics.median(rates), 2)
    return prior


class shipped_prior:
    """Within the block, specdec.prior holds these values (fit_prior's replays of the policy it fits)."""

    NAMES = {"acceptance": "ACCEPTANCE", "strength": "STRENGTH", "rate_weight": "RATE_WEIGHT", "rate": "RATE",
             "draft_cost": "DRAFT_COST", "verify_slope": "VERIFY_SLOPE"}

    def __init__(self, prior: dict):
        self.prior = prior

    def __enter__(self):
        import specdec.prior as module

        self.saved = {name: getattr(module, name) for name in self.NAMES.values()}
        for key, name in self.NAMES.items():
            setattr(module, name, self.prior[key])

    def __exit__(self, *exc):
        import specdec.prior as module

        for name, value in self.saved.items():
            setattr(module, name, value)


def prior_module(prior: dict, prompts: list[dict], models: str, costs_from: str,
                 command: str = "python scripts/simulate_policies.py fit scripts/design_chains.json.gz",
                 which: str = "design prompts that the benchmark does not use", heading: str = "The design prompts") -> str:
    """specdec/prior.py's text for a fitted prior (or a prior module of the user's: its command, pair and prompts)."""
    ids = textwrap.fill(", ".join(json.dumps(p["id"]) for p in prompts) + ",", 116, initial_indent="    ",
                        subsequent_indent="    ", break_on_hyphens=False)
    about = textwrap.fill(
        f"Generated by `{command}` (do not edit by hand) "
        f"from greedy draft chains recorded with {models} on {len(prompts)} {which} (DESIGN_PROMPTS). The costs are those the chains file stores: {costs_from}. A run starts from these "
        f"values, and its own drafts and timings then take over: its counts add to the prior's in each confidence bin "
        f"(after STRENGTH drafts in a bin they weigh as much as the prior), its costs replace the prior's once it has "
        f"timed a step, and its own tokens per unit cost join the prior rate, which counts as RATE_WEIGHT steps.", 116)
    bins = len(prior["acceptance"])
    return f'''"""The adaptive policy's prior: what `AdaptivePolicy` believes before a run has told it anything.

{about}
"""

# P(a reached draft token is accepted | the draft's confidence in bin b), bins of width 1/{bins} from 0
ACCEPTANCE = {prior["acceptance"]!r}
TRIED = {prior["tried"]!r}  # the reached draft tokens the design chains had in each bin
STRENGTH = {prior["strength"]!r}  # pseudo-observations per bin that the prior counts as
DRAFT_COST = {prior["draft_cost"]!r}  # seconds of one draft token / seconds of one verify pass (its intercept)
VERIFY_SLOPE = {prior["verify_slope"]!r}  # extra verify seconds per drafted token / seconds of one verify pass
RATE = {prior["rate"]!r}  # tokens per verify pass that the policy reached with this prior on the design chains
RATE_WEIGHT = {prior["rate_weight"]!r}  # steps of the run that the prior rate counts as
# {heading}: the ids of the prompts whose chains the prior was fitted on
DESIGN_PROMPTS = (
{ids}
)
'''


DESIGN_CHAINS = ROOT / "scripts" / "design_chains.json.gz"  # the library's prior is fitted on these, and only these
LIBRARY_PRIOR = ROOT / "specdec" / "prior.py"
MIN_FIT_PROMPTS = 10  # fewer prompts than this fit a prior of noise (a 3-prompt file once rewrote the library's)


def fit_target(args) -> tuple[Path, bool]:
    """(where the fitted prior goes, whether it is the library's): specdec/prior.py from the design chains alone;
    any other chains file only to a file given with --out, never over the library's prior."""
    library = [Path(c).resolve() for c in args.chains] == [DESIGN_CHAINS.resolve()]
    out = Path(args.out).expanduser() if args.out else (LIBRARY_PRIOR if library else None)
    if out is None or (out.resolve() == LIBRARY_PRIOR.resolve() and not library):
        sys.exit(f"fit: the library's prior ({LIBRARY_PRIOR.relative_to(ROOT)}) is fitted on "
                 f"{DESIGN_CHAINS.relative_to(ROOT)} alone; to fit chains of your own, give --out FILE: a prior module "
                 "of your own, to read or compare (the library reads specdec/prior.py only)")
    return out, out.resolve() == LIBRARY_PRIOR.resolve()


def fit(args) -> None:
    from specdec.fileio import write_text_atomic
    from specdec.sources import DEFAULT_DRAFT, DEFAULT_TARGET

    out, library = fit_target(args)
    data = load_chains(args.chains)
    if len(data["prompts"]) < MIN_FIT_PROMPTS:
        sys.exit(f"fit: {', '.join(args.chains)} hold {len(data['prompts'])} prompts; a prior needs at least "
                 f"{MIN_FIT_PROMPTS} (record more with `collect`)")
    prior = fit_prior(data)
    costs_from = data["costs_from"] or "the committed policies stage's adaptive runs"
    if library:
        text = prior_module(prior, data["prompts"], f"{DEFAULT_TARGET} (target) and {DEFAULT_DRAFT} (draft, int8)",
                            costs_from)
    else:  # say what it came from: the pair the chains record, the command that fitted it
        pairs = {f"{r.get('target', '?')} (target) and {r.get('draft', '?')} (draft)" for r in data["recorded"]}
        models = "; ".join(sorted(pairs)) or f"the pair that recorded {', '.join(args.chains)}"
        text = prior_module(prior, data["prompts"], models, costs_from,
                            command="python scripts/simulate_policies.py fit " + " ".join(args.argv),
                            which="prompts of " + ", ".join(Path(c).name for c in args.chains), heading="The prompts")
    write_text_atomic(out, text)
    print(text)
    print(f"[fit] wrote {out}")


# ---------------------------------------------------------------- probe: a trained head? (models, then no model)

PROBE_RIDGES = (0.01, 0.1, 1.0, 10.0)  # ridge strengths on the hidden-state weights: every one is reported, none chosen
PROBE_BINS = 10  # the policy's calibration: acceptance per confidence bin (specdec.prior's bins)


def record_probe(target, draft, ids, n: int, vocab_size: int | None = None) -> dict:
    """At each position t of the target's greedy continuation of ids (n tokens): the draft's last hidden state (what
    its output head reads), its confidence, and whether its greedy token is the target's. The draft is fed one token
    per forward pass from the target's prefix, as for a step's first draft token (record_chains' first tokens)."""
    import torch

    from specdec import autoregressive_generate
    from specdec.cache import CachedLM, check_logits, resolve_vocab_size
    from specdec.drafters import draft_confidence
    from specdec.sampling import SamplingConfig

    V = resolve_vocab_size(target, draft, vocab_size)
    cont = autoregressive_generate(target, ids, max_new_tokens=n, temperature=0.0, vocab_size=V,
                                   generator=torch.Generator().manual_seed(0))
    seq = torch.cat([ids, cont])[None]  # (1, n_prompt + n)
    lm, n0, greedy = CachedLM(draft, V, "draft"), ids.shape[0], SamplingConfig(0.0)
    hidden, confidences, agree = [], [], []
    with torch.inference_mode():
        for t in range(n):
            new = seq[:, lm.cached: n0 + t]  # the prefix's tokens the cache lacks (the whole prompt at t = 0)
            out = lm.model(input_ids=new, use_cache=True, logits_to_keep=1, output_hidden_states=True,
                           **{lm.cache_kwarg: lm.cache})
            logits = out.logits[0, -1, : lm.rows].float()  # (V,) when the heads match (resolve_vocab_size)
            check_logits(logits[None], "draft")
            hidden.append(out.hidden_states[-1][0, -1].float())  # (d,): after the final norm, the head's input
            confidences.append(draft_confidence(logits, None, greedy))
            agree.append(int(logits.argmax()) == int(cont[t]))
    return {"hidden": torch.stack(hidden), "confidences": confidences, "agree": agree}


def fit_logistic(x, y, ridge: float, free: int = 1):
    """P(y = 1 | x) by logistic regression on standardized features (L-BFGS), the ridge penalty on every weight but
    the last `free` ones (the confidence's): returns the fitted predictor, x -> probabilities."""
    import torch

    mean, scale = x.mean(0), x.std(0) + 1e-3
    z = (x - mean) / scale
    w = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=300, tolerance_grad=1e-9, line_search_fn="strong_wolfe")
    penalized = slice(0, x.shape[1] - free)

    def loss():
        opt.zero_grad()
        value = torch.nn.functional.binary_cross_entropy_with_logits(z @ w + b, y) + ridge * (w[penalized] ** 2).sum()
        value.backward()
        return value

    opt.step(loss)
    w, b = w.detach(), b.detach()
    return lambda x_new: torch.sigmoid(((x_new - mean) / scale) @ w + b)


def log_loss(p, y) -> float:
    p = p.clamp(1e-6, 1 - 1e-6)
    return float(-(y * p.log() + (1 - y) * (1 - p).log()).mean())


def auc(p, y) -> float:
    """The area under the ROC curve: P(a random accepted position scores above a random rejected one), ties half."""
    pos, neg = p[y == 1], p[y == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    return float((pos[:, None] > neg[None]).double().mean() + 0.5 * (pos[:, None] == neg[None]).double().mean())


def probe_predictors(records: list[dict], ridges=PROBE_RIDGES) -> dict:
    """name -> [(record, its probabilities)]: each record's acceptance predicted by a model fitted on all the OTHER
    records (leave one prompt out), for the policy's calibration (acceptance per confidence bin), a logistic on the
    confidence, and a logistic on the hidden state and the confidence at each ridge strength."""
    import torch

    def features(r, with_hidden):
        c = torch.tensor(r["confidences"], dtype=torch.float64).clamp(1e-6, 1 - 1e-6)
        logit = (c / (1 - c)).log()[:, None]
        return torch.cat([r["hidden"].double(), logit], 1) if with_hidden else logit

    def labels(rs):
        return torch.tensor([float(a) for r in rs for a in r["agree"]], dtype=torch.float64)

    def bins(r):
        return [min(PROBE_BINS - 1, int(c * PROBE_BINS)) for c in r["confidences"]]

    out = {"confidence bins (the policy's calibration)": [], "logistic on the confidence": [],
           **{f"logistic on the hidden state and the confidence, ridge {ridge:g}": [] for ridge in ridges}}
    for i, r in enumerate(records):
        rest = records[:i] + records[i + 1:]
        tried, accepted = [1.0] * PROBE_BINS, [0.5] * PROBE_BINS  # half a pseudo-observation each way per bin
        for other in rest:
            for b, a in zip(bins(other), other["agree"]):
                tried[b] += 1
                accepted[b] += a
        names = iter(out)
        out[next(names)].append((r, torch.tensor([accepted[b] / tried[b] for b in bins(r)], dtype=torch.float64)))
        y = labels(rest)
        for name, with_hidden, ridge in [(next(names), False, 0.0), *((next(names), True, rg) for rg in ridges)]:
            x = torch.cat([features(o, with_hidden) for o in rest])
            out[name].append((r, fit_logistic(x, y, ridge)(features(r, with_hidden))))
    return out


def probe_table(records: list[dict], ridges=PROBE_RIDGES) -> dict:
    """name -> {set: {"log_loss", "auc", "positions"}}, per prompt set and over all ("all"), leave one prompt out."""
    import torch

    table = {}
    for name, predictions in probe_predictors(records, ridges).items():
        row = {}
        for domain in [*sorted({r["domain"] for r in records}), "all"]:
            mine = [(r, p) for r, p in predictions if domain in ("all", r["domain"])]
            p = torch.cat([p for _, p in mine])
            y = torch.tensor([float(a) for r, _ in mine for a in r["agree"]], dtype=torch.float64)
            row[domain] = {"log_loss": round(log_loss(p, y), 4), "auc": round(auc(p, y), 4), "positions": len(y)}
        table[name] = row
    return table


def design_prompts(data: dict) -> list[tuple[str, dict]]:
    """(set, prompt) for each prompt of a chains file, in its order: the public prompts from index 12 (collect's
    --start) whose ids the file lists."""
    from specdec_site.public_prompts import public_prompts

    out = []
    for domain in dict.fromkeys(p["domain"] for p in data["prompts"]):
        ids = [p["id"] for p in data["prompts"] if p["domain"] == domain]
        prompts = public_prompts(domain, 12, len(ids))
        if [p["id"] for p in prompts] != ids:
            sys.exit(f"the chains file's {domain} prompts are not the {len(ids)} public ones from index 12")
        out += [(domain, p) for p in prompts]
    return out


def probe(args) -> None:
    import datetime
    import platform

    import torch
    import transformers

    from specdec.fileio import write_json_atomic
    from specdec_site.engine.cli import make_context, parse_args
    from specdec_site.engine.meta import git_state
    from specdec_site.prompts import encode

    data = load_chains(args.chains)
    prompts = design_prompts(data)  # before any model loads
    ctx = make_context(parse_args(["--device", "cpu"]))
    tokens = {p["id"]: len(p["chains"]) for p in data["prompts"]}  # the continuation's length the chains were recorded at
    records = []
    for domain, prompt in prompts:
        ids = encode(ctx.target.tokenizer, prompt, ctx.device)
        record = record_probe(ctx.target.model, ctx.default_draft, ids, tokens[prompt["id"]], ctx.vocab_size)
        records.append({"domain": domain, "id": prompt["id"], **record})
        print(f"{prompt['id']}: the draft's first token agrees at {sum(record['agree'])} of {len(record['agree'])}", flush=True)
    table = probe_table(records)
    print(f"{'predictor (leave one prompt out)':<62}" + "".join(f"{d + ' log-loss · AUC':>28}" for d in table[next(iter(table))]))
    for name, row in table.items():
        print(f"{name:<62}" + "".join(f"{v['log_loss']:>19.4f} · {v['auc']:.4f}" for v in row.values()))
    write_json_atomic(Path(args.json), {
        "command": "python scripts/simulate_policies.py probe " + " ".join(args.argv),
        "recorded": {"target": ctx.target.name, "draft": f"{ctx.draft.name} ({ctx.default_draft_name})",
                     "device": str(ctx.device), "dtype": str(ctx.dtype).replace("torch.", ""), "greedy": True,
                     "new_tokens": sorted(set(tokens.values())), "hidden_size": int(records[0]["hidden"].shape[1]),
                     "torch": torch.__version__, "transformers": transformers.__version__,
                     "python": platform.python_version(), "date": datetime.date.today().isoformat(),
                     "git": git_state()},
        "prompts": {d: [r["id"] for r in records if r["domain"] == d] for d in dict.fromkeys(r["domain"] for r in records)},
        "ridges": list(PROBE_RIDGES), "bins": PROBE_BINS, "predictors": table})


def argument_problems(args) -> list[str]:
    """What would otherwise fail only after the work (probe and collect run the real pair for minutes): a chains
    file that is not there, a file to write that is a folder or whose folder cannot be written in (the build's own
    check, cli.prove_writable, which creates the folder as the atomic write would)."""
    from specdec_site.engine.cli import prove_writable
    from specdec_site.engine.context import BuildError

    problems = [f"{path}: no such file" for path in getattr(args, "chains", []) if not Path(path).is_file()]
    for flag in ("out", "json"):
        given = getattr(args, flag, None)
        if given is None:
            continue
        path = Path(given).expanduser()
        if path.is_dir():
            problems.append(f"--{flag} {given} is a folder: give a file's path")
            continue
        try:
            prove_writable(path.parent)
        except BuildError as err:
            reason = getattr(err.__cause__, "strerror", None) or err.__cause__
            problems.append(f"--{flag} {given}: cannot write in {path.parent} ({reason})")
    return problems


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect", help="record greedy draft chains with the real pair")
    c.add_argument("--domains", nargs="+", default=["code", "prose", "dialogue", "narrative"],
                   choices=["code", "prose", "dialogue", "narrative"])
    c.add_argument("--start", type=integer, default=12, help="first public prompt (the benchmark uses 0-11)")
    c.add_argument("--count", type=integer, default=6)
    c.add_argument("--tokens", type=integer, default=48)
    c.add_argument("--k", type=integer, default=16, help="the longest chain recorded (the policies' cap)")
    c.add_argument("--out", required=True)
    r = sub.add_parser("replay", help="replay the policies on recorded chains")
    r.add_argument("chains", nargs="+")
    r.add_argument("--signals", action="store_true",
                   help="also replay the adaptive rule with each recorded signal besides confidence")
    r.add_argument("--json", default=None, help="also write the table to this file (the site's: "
                                                "docs/data/design-replay.json, with --signals)")
    r.add_argument("--k", type=integer, default=None)
    r.add_argument("--verify-cost", choices=["per-k", "line"], default="per-k",
                   help="cost a verify pass of k drafts at the committed runs' median for that k (the line where too "
                        "few steps had it), or at their line a + b k throughout")
    f = sub.add_parser("fit", help="fit the adaptive policy's shipped prior (specdec/prior.py) on recorded chains")
    f.add_argument("chains", nargs="+")
    f.add_argument("--out", default=None, help="the prior module to write (default, and only for "
                                               "scripts/design_chains.json.gz: specdec/prior.py)")
    b = sub.add_parser("probe", help="score a linear head on the draft's hidden state against its confidence, as a "
                                     "predictor of acceptance on the design prompts (the real pair, about 12 minutes)")
    b.add_argument("chains", nargs="+", help="the chains file whose design prompts to use")
    b.add_argument("--json", required=True, help="where to write the table (the site's: docs/data/design-probe.json)")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[2:] if argv is None else argv[1:])
    if args.cmd == "collect":
        # before any model loads: a negative --start would silently index the sets from their end
        bad = [f"--{name} {getattr(args, name)} (must be >= {low})" for name, low in
               (("start", 0), ("count", 1), ("tokens", 1), ("k", 1)) if getattr(args, name) < low]
        if bad:
            c.error("; ".join(bad))
    if problems := argument_problems(args):
        sub.choices[args.cmd].error("; ".join(problems))
    {"collect": collect, "replay": replay, "fit": fit, "probe": probe}[args.cmd](args)


if __name__ == "__main__":
    main()
