"""Replay draft-length policies on recorded chains without a model (`replay`): each policy's choices at a fixed
cost per draft token and per verify pass, against the oracle (eq. 13) and two reference points."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from specdec_site.design.chains import Costs, domain_costs, load_chains, provenance
from specdec_site.paths import ROOT


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
    """The library's earlier adaptive rule (before the prior and the rate test), for comparison: a flat prior (one pseudo-observation per confidence bin
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


SIGNALS = {"margins": lambda v: min(4, int(v * 5)), "entropies": lambda v: min(4, int(v)),
           "lookup": lambda v: v, "depth": lambda v: 0 if v == 1 else 1 if v <= 3 else 2 if v <= 7 else 3}


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
    flat one), the earlier rule, and (signals) the adaptive rule with one more signal, each with a prior
    fitted on the other prompts."""
    from specdec.policies import AdaptivePolicy, make_policy

    out = {name: (lambda name=name: make_policy(name, k if name != "fixed" else 4)) for name in
           ("fixed", "confidence", "heuristic", "adaptive")}
    out["adaptive, flat prior"] = lambda: AdaptivePolicy(k, prior=False)
    out["adaptive, earlier rule"] = lambda: previous_adaptive(k)
    if signals:
        others = [p for p in prompts if p["id"] != prompt["id"]]
        for signal in (None, *SIGNALS):
            name = f"adaptive + {signal}" if signal else "adaptive"
            out[f"{name}, prior without this prompt"] = lambda s=signal: signal_policy(k, s, others)
    return out


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
                                           zip(runs["adaptive, earlier rule"], runs["adaptive"]))
        cap = statistics.median(oracle / oracle_plus_one(p["chains"], cost, k) for p, oracle in zip(prompts, oracles))
        references[domain] = (*hindsight_threshold(prompts, oracles, cost, k), cap)
        sensitivity[domain] = prior_sensitivity(prompts, cost, k, runs["adaptive"])
    domains = sorted({d for row in table.values() for d in row})
    counts = {d: sum(p["domain"] == d for p in data["prompts"]) for d in domains}
    print(f"\nmedians over the design prompts ({', '.join(f'{d} {n}' for d, n in counts.items())})")
    print(f"{'policy':<40}" + "".join(f"{d + ' speedup':>18}{d + ' /oracle':>18}" for d in domains))
    for name, row in table.items():
        print(f"{name:<40}" + "".join(f"{row[d][0]:>18.3f}{row[d][1]:>18.3f}" for d in domains))
    print("\nadaptive (shipped prior) over the earlier rule, per prompt, median: " +
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
            **provenance("replay", args.chains),
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
