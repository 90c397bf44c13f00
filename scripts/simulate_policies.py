"""Replay draft-length policies offline on recorded greedy draft chains: a design tool, not a benchmark.

At T = 0 every correct run emits the target's greedy continuation, and a step that starts after t emitted
tokens sees the draft's greedy chain from the target's own prefix. So one pass over a prompt records all a
policy can ever see: for every start t, the draft's chain of up to K tokens with its confidences, and how
many of them the target accepts. Any causal policy then replays on these chains without a model, at a
fixed cost per draft token and a verify pass of k drafts costed at the median the committed policies stage
measured for that k (the line a + b k fitted to the same steps where too few had that k; `--verify-cost line`
uses the line throughout), with the oracle (eq. 13) as the ceiling. No timing noise: two policies differ only
by their choices.

    python scripts/simulate_policies.py collect --start 6 --count 6 --out /tmp/chains.json   # models, ~20 min
    python scripts/simulate_policies.py replay /tmp/chains.json                               # seconds

Use prompts the benchmark does not use (the policies stage uses the first 6 of each set) to design on.
`replay` also prints two bounds on measured / oracle: the best rule that sees only the draft's confidence, its
calibration and threshold fitted in hindsight on the prompts it is scored on, and the cap of a rule that drafts
the accepted run plus the rejected token.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


# ---------------------------------------------------------------- collect (needs the real pair)


def record_chains(target, draft, ids, n: int, k: int, vocab_size: int | None = None) -> list[dict]:
    """For each start t of the target's greedy continuation of ids (n tokens): the draft's greedy chain of
    up to k tokens from the target's prefix, its confidences, and how many the target accepts."""
    import torch

    from specdec import autoregressive_generate
    from specdec.cache import CachedLM
    from specdec.decoding import resolve_vocab_size
    from specdec.drafters import draft_confidence
    from specdec.sampling import SamplingConfig

    V = resolve_vocab_size(target, draft, vocab_size)
    cont = autoregressive_generate(target, ids, max_new_tokens=n, temperature=0.0, vocab_size=V,
                                   generator=torch.Generator().manual_seed(0)).tolist()
    padded = cont + [0] * k
    seq = torch.cat([ids, torch.tensor(padded)])[None]  # (1, n_prompt + n + k)
    lm, n0, chains, greedy = CachedLM(draft, V, "draft"), ids.shape[0], [], SamplingConfig(0.0)
    for t in range(len(cont)):
        start = n0 + t
        lm.rollback(start - 1)  # as the decoder leaves it: every final token but the last one cached
        tokens, confidences = [], []
        for i in range(min(k, len(cont) - t)):
            logits = lm.logits(seq[:, : start + i], 1)[0]  # (V,)
            tokens.append(int(logits.argmax()))
            confidences.append(draft_confidence(logits, None, greedy))
            seq[0, start + i] = tokens[-1]  # the chain goes on from its own token, as a draft does
        accepted = 0
        while accepted < len(tokens) and tokens[accepted] == cont[t + accepted]:
            accepted += 1
        chains.append({"confidences": [round(c, 5) for c in confidences], "accepted": accepted})
        seq[0, start:start + k] = torch.tensor(padded[t:t + k])  # back to the target's tokens
    return chains


def collect(args) -> None:
    from specdec_site.cli import make_context, parse_args
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
    Path(args.out).write_text(json.dumps(out))


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
    """The committed adaptive runs' costs: medians over the prompts of each run's draft seconds per token and
    verify line, and (per_k) the median verify seconds of every step after the first (the prefill) at each k
    drafted by at least MIN_STEPS of them. Measured verify time need not be a straight line in k: the padded
    kernels (specdec.kernels.MIN_ROWS) score the 2 to 4 rows of k = 1 to 3 in one time."""
    if data is None:
        data = json.loads((ROOT / "docs" / "data" / "cpu" / "policies.json").read_text())
    runs = [r["variants"]["adaptive"] for r in data["domains"][domain]["rows"]]
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
            if not policy.keep_drafting(drafted, chain["confidences"][drafted - 1], "model"):
                break
        accepted = min(drafted, chain["accepted"])
        step_seconds = (drafted * cost.draft, cost.verify(drafted))
        policy.observe(StepOutcome("model", drafted, accepted, chain["confidences"][:drafted], *step_seconds,
                                   first=t == 0))
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


def hindsight_calibration(prompts: list[dict], bins: int = 40):
    """The adaptive policy's own calibration, P(accepted | reached, confidence bin), fed every reached draft of
    ALL the chains given, the ones it is then scored on: no causal policy knows it, so a rule that uses it is
    an optimistic bound for confidence-only rules."""
    from specdec.policies import _Calibration

    calibration = _Calibration(bins=bins)
    for p in prompts:
        for chain in p["chains"]:
            for i, confidence in enumerate(chain["confidences"][: chain["accepted"] + 1]):
                calibration.add(confidence, i < chain["accepted"])
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


def hindsight_bound(prompts: list[dict], oracles: list[float], cost: Costs, k: int) -> tuple[float, float]:
    """(median over prompts of oracle / seconds, tau) of the best survival threshold, both the calibration and
    tau chosen on the prompts it is scored on: what a stop rule that sees only the draft's confidence could
    reach at most, short of a better signal. oracles: oracle_one of each prompt."""
    calibration = hindsight_calibration(prompts)

    def score(tau):
        return statistics.median(oracle / replay_one(p["chains"], hindsight_policy(calibration, k, tau), cost)[0]
                                 for p, oracle in zip(prompts, oracles))

    return max((score(tau), tau) for tau in TAUS)


def study() -> dict:
    """name -> factory(k): variants of the adaptive rule under study. Two choices, each one way in the
    library's AdaptivePolicy (eqs. 10-11 of the math page):
    - rate: compare the next draft's expected tokens per unit of cost with the step's own rate so far
      ("step", eq. 11) or with the run's tokens per second so far ("long_run": renewal-reward, where the
      optimal stopping threshold is the long-run rate);
    - next: predict the next draft's acceptance at the current token's calibrated acceptance ("same"), or
      through a second calibration learned on (this token's confidence -> the next token's fate)."""
    from specdec.policies import AdaptivePolicy, StepOutcome, _Calibration

    class Variant(AdaptivePolicy):
        rate, next_token = "step", "same"

        def __init__(self, k):
            super().__init__(k)
            self.emitted, self.seconds, self.next = 0, 0.0, _Calibration()

        def keep_drafting(self, n_drafted, confidence, source):
            a = self.accept.setdefault(source, _Calibration())(confidence)
            self.survival *= a
            self.expected += self.survival
            a_next = a if self.next_token == "same" else self.next(confidence)
            per_token, intercept, slope = self._costs(source).current()
            step_rate = self.expected / (n_drafted * per_token + intercept + slope * n_drafted)
            rate = self.emitted / self.seconds if self.rate == "long_run" and self.seconds > 0 else step_rate
            return self.survival * a_next > rate * (per_token + slope)

        def observe(self, outcome: StepOutcome):
            super().observe(outcome)
            c = outcome.confidences
            for i in range(1, min(len(c), outcome.n_accepted + 1)):  # token i was evaluated: i - 1 accepted
                self.next.add(c[i - 1], i < outcome.n_accepted)
            if not outcome.first and outcome.draft_seconds is not None:
                self.emitted += outcome.n_accepted + 1
                self.seconds += outcome.draft_seconds + outcome.verify_seconds

    def variant(rate, next_token):
        return type(f"Variant_{rate}_{next_token}", (Variant,), {"rate": rate, "next_token": next_token})

    return {"long_run_rate": variant("long_run", "same"), "next_token": variant("step", "calibrated"),
            "both": variant("long_run", "calibrated")}


def candidates(k: int) -> dict:
    """Policy name -> factory: the library's policies, plus study()'s variants."""
    from specdec.policies import make_policy

    out = {name: (lambda name=name: make_policy(name, k if name != "fixed" else 4)) for name in
           ("fixed", "confidence", "heuristic", "adaptive")}
    out.update({name: (lambda f=f: f(k)) for name, f in study().items()})
    return out


def replay(args) -> None:
    data = json.loads(Path(args.chains).read_text())
    k = args.k or data["k"]
    if not 1 <= k <= data["k"]:
        sys.exit(f"--k {k}: the chains in {args.chains} were recorded with up to {data['k']} drafts "
                 f"(collect --k {k} records longer ones)")
    policies = candidates(k)
    table, bounds = {}, {}
    for domain in sorted({p["domain"] for p in data["prompts"]}):
        cost = costs(domain, per_k=args.verify_cost == "per-k")
        ks = ", ".join(f"{k}: {v:.3f}" for k, v in cost.per_k.items()) or "none"
        print(f"{domain}: draft {cost.draft:.4f} s per token; verify line {cost.intercept:.3f} + {cost.slope:.4f} k s; "
              f"measured verify medians (k: s) {ks}")
        prompts = [p for p in data["prompts"] if p["domain"] == domain]
        oracles = [oracle_one(p["chains"], cost) for p in prompts]
        for name, factory in policies.items():
            ratios, rates = [], []
            for p, oracle in zip(prompts, oracles):
                seconds, steps = replay_one(p["chains"], factory(), cost)
                ratios.append(oracle / seconds)
                # over target-only at one verify pass (a) per token: the decoding steps only, no prefill
                rates.append(len(p["chains"]) * cost.intercept / seconds)
            table.setdefault(name, {})[domain] = (statistics.median(rates), statistics.median(ratios))
        cap = statistics.median(oracle / oracle_plus_one(p["chains"], cost, k) for p, oracle in zip(prompts, oracles))
        bounds[domain] = (*hindsight_bound(prompts, oracles, cost, k), cap)
    domains = sorted({d for row in table.values() for d in row})
    print(f"{'policy':<24}" + "".join(f"{d + ' speedup':>16}{d + ' /oracle':>16}" for d in domains))
    for name, row in table.items():
        print(f"{name:<24}" + "".join(f"{row[d][0]:>16.3f}{row[d][1]:>16.3f}" for d in domains))
    print("\n/oracle bounds (medians over the same prompts):")
    for d, (bound, tau, cap) in bounds.items():
        print(f"  {d}: best confidence-only rule in hindsight {bound:.3f} (survival >= {tau:.2f}, calibration and tau "
              f"fitted on these prompts); drafting the accepted run plus the rejected token (structural cap) {cap:.3f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect", help="record greedy draft chains with the real pair")
    c.add_argument("--domains", nargs="+", default=["code", "prose"], choices=["code", "prose"])
    c.add_argument("--start", type=int, default=6, help="first public prompt (the benchmark uses 0-5)")
    c.add_argument("--count", type=int, default=6)
    c.add_argument("--tokens", type=int, default=48)
    c.add_argument("--k", type=int, default=16, help="the longest chain recorded (the policies' cap)")
    c.add_argument("--out", required=True)
    r = sub.add_parser("replay", help="replay the policies on recorded chains")
    r.add_argument("chains")
    r.add_argument("--k", type=int, default=None)
    r.add_argument("--verify-cost", choices=["per-k", "line"], default="per-k",
                   help="cost a verify pass of k drafts at the committed runs' median for that k (the line where too "
                        "few steps had it), or at their line a + b k throughout")
    args = parser.parse_args(argv)
    if args.cmd == "collect":
        # before any model loads: a negative --start would silently index the sets from their end
        bad = [f"--{name} {getattr(args, name)} (must be >= {low})" for name, low in
               (("start", 0), ("count", 1), ("tokens", 1), ("k", 1)) if getattr(args, name) < low]
        if bad:
            c.error("; ".join(bad))
    collect(args) if args.cmd == "collect" else replay(args)


if __name__ == "__main__":
    main()
