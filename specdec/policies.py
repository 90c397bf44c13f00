"""How many tokens to draft in a step: the draft-length policies of `speculative_generate(policy=...)`.

A policy decides, before the target runs, how many tokens the drafter proposes: a budget at the start of
the step, then, after each drafted token, whether to draft another. It sees only the draft side (the
draft's confidence, timings) and the outcomes of earlier steps, never the target's p at this step nor the
uniform draws, so verification is unchanged and every policy is exact (math page, "Choosing k").
The draft's confidence is its top probability at the drafted position (`drafters.draft_confidence`): the
top of q, or at T = 0, where q is one-hot, the top of its plain softmax.

- "fixed": k every step (Leviathan Algorithm 1; the default).
- "confidence": stop once the draft's top probability falls below a threshold (transformers'
  `assistant_confidence_threshold`, 0.4 by default; transformers also re-tunes it across calls, which
  this fixed rule does not).
- "heuristic": transformers' "heuristic" schedule: +2 after a step that accepted everything, -1 otherwise.
- "adaptive": this project's rule, eqs. (10)-(12) of the math page: draft one more token while the
  expected tokens it adds, per unit of its cost, are at least the run's own tokens per unit of cost (a step is a
  renewal cycle: stopping starts the next one, which earns the run's rate). The acceptance estimate is a function
  of the draft's confidence (in the spirit of SpecDec++, Huang et al. 2024, arXiv 2405.19715, and DISCO, Mamou et
  al. 2024, arXiv 2405.04304, without a trained head). It starts from a shipped prior, `specdec.prior`: acceptance
  per confidence bin, the costs and the rate, fitted on recorded greedy chains of design prompts that the benchmark
  does not use (`scripts/simulate_policies.py fit`); the run's own drafts and timings then update all three.
  Pass `AdaptivePolicy(k, prior=False)` for the flat start (one pseudo-observation per bin at its centre), and
  `AdaptivePolicy(k, draft_cost=..., verify_slope=...)` to pin the costs (then a run replays exactly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from . import prior as shipped
from .checks import ArgumentError, as_count, as_real
from .theory import run_rate, worth_drafting

POLICIES = ("fixed", "confidence", "heuristic", "adaptive")


@dataclass
class StepOutcome:
    source: str  # which proposer drafted the step ("model" or "ngram")
    n_drafted: int  # tokens drafted
    n_accepted: int  # leading drafts the target accepted
    confidences: list[float]  # the draft's top probability at each drafted token (1.0 for n-gram proposals)
    draft_seconds: float | None  # wall time of the drafting, None when not measured
    verify_seconds: float | None  # wall time of the target pass and the rule, None when not measured
    first: bool  # the first step of a sequence (its passes include the prompt's prefill)


class DraftPolicy:
    """Base: draft the budget every step. Subclasses override what they decide."""

    name = "fixed"
    needs_confidence = False  # keep_drafting reads the draft's confidence (one host sync per draft token)
    needs_timing = False  # observe() reads wall times (the decoder then times every step)

    def __init__(self, k: int):
        self.k = as_count(k, "k (the most draft tokens in one step, Leviathan's gamma) must be >= 1", 1)

    def budget(self) -> int:
        """The most tokens to draft this step (the decoder also clamps it near max_new_tokens)."""
        return self.k

    def keep_drafting(self, n_drafted: int, confidence: float, source: str) -> bool:
        """After the n_drafted-th token of this step: draft another?"""
        return True

    def observe(self, outcome: StepOutcome) -> None:
        """The step's outcome, after verification: learn from it."""


class FixedPolicy(DraftPolicy):
    name = "fixed"


class ConfidencePolicy(DraftPolicy):
    name = "confidence"
    needs_confidence = True

    def __init__(self, k: int, threshold: float = 0.4):
        super().__init__(k)
        value = as_real(threshold, "threshold must be a number in [0, 1]")
        if not 0.0 <= value <= 1.0:
            raise ArgumentError(f"threshold must be in [0, 1], got {threshold!r}")
        self.threshold = value  # transformers' default assistant_confidence_threshold

    def keep_drafting(self, n_drafted: int, confidence: float, source: str) -> bool:
        return confidence >= self.threshold


class HeuristicPolicy(DraftPolicy):
    name = "heuristic"

    def __init__(self, k: int, start: int = 5):
        super().__init__(k)
        start = as_count(start, "start (the first step's budget) must be an integer >= 1", 1)
        self.current = min(start, self.k)  # transformers' original num_assistant_tokens = 5

    def budget(self) -> int:
        return self.current

    def observe(self, outcome: StepOutcome) -> None:
        if outcome.n_drafted == 0:
            return
        all_accepted = outcome.n_accepted == outcome.n_drafted
        self.current = max(1, min(self.k, self.current + 2 if all_accepted else self.current - 1))


@dataclass(frozen=True)
class _Prior:
    """What an adaptive run believes before it has seen a step (in verify passes where a cost)."""

    acceptance: list[float] | None  # P(accept) per confidence bin; None: flat (each bin at its centre)
    strength: float  # pseudo-observations per bin that the acceptance counts as
    draft_cost: float  # seconds of one draft token / seconds of one verify pass, until measured
    verify_slope: float  # extra verify seconds per drafted token / seconds of one verify pass, until measured
    rate: float  # tokens per verify pass, the run's rate before its own steps (eq. 12)
    rate_weight: float  # steps of the run that the prior rate counts as


def shipped_prior() -> _Prior:
    """specdec.prior's values, read when a policy is made (the design tool swaps them to replay a refit)."""
    return _Prior(shipped.ACCEPTANCE, shipped.STRENGTH, shipped.DRAFT_COST, shipped.VERIFY_SLOPE, shipped.RATE,
                  shipped.RATE_WEIGHT)


# The flat start (AdaptivePolicy(prior=False)), the policy before its prior was fitted: no acceptance curve, a draft
# token a quarter of a verify pass, and one token per pass.
FLAT_PRIOR = _Prior(acceptance=None, strength=1.0, draft_cost=0.25, verify_slope=0.05, rate=1.0, rate_weight=2)


@dataclass
class _Tally:
    """One proposer's part of the run so far, for its rate (eq. 12)."""

    emitted: float = 0.0  # tokens its steps emitted
    steps: int = 0  # its steps
    drafted: int = 0  # tokens it drafted


@dataclass
class _Calibration:
    """P(accept | confidence bin) as counts: a prior's pseudo-observations plus the run's own drafts."""

    bins: int = 10
    tried: list[float] = field(default_factory=list)
    accepted: list[float] = field(default_factory=list)

    def __post_init__(self):
        # the flat start: one pseudo-observation per bin, accepted at the bin's centre
        self.tried = [1.0] * self.bins
        self.accepted = [(b + 0.5) / self.bins for b in range(self.bins)]

    @classmethod
    def informed(cls, acceptance: list[float] | None, strength: float) -> _Calibration:
        """Start from a prior: `strength` pseudo-observations per bin, accepted at the prior's rate (None: flat)."""
        if acceptance is None:
            return cls()
        calibration = cls(bins=len(acceptance))
        calibration.tried = [float(strength)] * len(acceptance)
        calibration.accepted = [strength * a for a in acceptance]
        return calibration

    def bin(self, confidence: float) -> int:
        return min(self.bins - 1, max(0, int(confidence * self.bins))) if confidence == confidence else 0

    def add(self, confidence: float, accepted: bool) -> None:
        b = self.bin(confidence)
        self.tried[b] += 1
        self.accepted[b] += accepted

    def __call__(self, confidence: float) -> float:
        b = self.bin(confidence)
        return self.accepted[b] / self.tried[b]


class _Costs:
    """Running wall-time costs of one proposer: seconds per draft token, and the verify pass as a + b k."""

    def __init__(self, draft_cost: float | None, verify_slope: float | None, prior: _Prior):
        self.pinned = draft_cost is not None
        self.draft = draft_cost if draft_cost is not None else prior.draft_cost  # in verify passes, until measured
        self.slope = verify_slope if verify_slope is not None else prior.verify_slope
        self.fixed_slope = verify_slope is not None
        self.n = 0
        self.sums = [0.0] * 6  # drafted, draft seconds, sum k, sum k^2, sum v, sum k v

    def add(self, outcome: StepOutcome) -> None:
        if self.pinned or outcome.first or outcome.draft_seconds is None or outcome.verify_seconds is None:
            return
        k, v = outcome.n_drafted, outcome.verify_seconds
        for i, x in enumerate((k, outcome.draft_seconds, k, k * k, v, k * v)):
            self.sums[i] += x
        self.n += 1

    def current(self) -> tuple[float, float, float]:
        """(draft seconds per token, verify intercept, verify slope), in seconds or in verify passes."""
        if self.pinned or self.n == 0:
            return self.draft, 1.0, self.slope
        drafted, draft_s, sk, skk, sv, skv = self.sums
        var = skk / self.n - (sk / self.n) ** 2
        slope = (skv / self.n - sk * sv / self.n**2) / var if var > 1e-9 else None
        mean_v = sv / self.n
        if slope is None or self.fixed_slope:
            slope = self.slope * mean_v
        slope = max(0.0, slope)
        intercept = max(1e-9, mean_v - slope * sk / self.n)
        per_token = draft_s / drafted if drafted else self.draft * intercept
        return per_token, intercept, slope


class AdaptivePolicy(DraftPolicy):
    name = "adaptive"
    needs_confidence = True

    def __init__(self, k: int = 16, *, draft_cost: float | None = None, verify_slope: float | None = None,
                 prior: bool = True):
        """draft_cost, verify_slope: pin the costs (per draft token, and per extra token verified, both in
        units of one verify pass) instead of measuring them; None measures them as the run goes.
        prior: start from the shipped prior (specdec.prior) rather than a flat one."""
        super().__init__(k)
        rule = "{} must be a finite number >= 0 or None"
        draft_cost, verify_slope = (None if v is None else as_real(v, rule.format(name))
                                    for name, v in (("draft_cost", draft_cost), ("verify_slope", verify_slope)))
        for name, value in (("draft_cost", draft_cost), ("verify_slope", verify_slope)):
            if value is not None and not (value >= 0 and math.isfinite(value)):
                raise ArgumentError(f"{rule.format(name)}, got {value!r}")
        if not isinstance(prior, bool):
            raise ArgumentError(f"prior must be True (the shipped prior) or False (a flat start), got {prior!r}")
        self.needs_timing = draft_cost is None or verify_slope is None
        self._pins = (draft_cost, verify_slope)
        self.prior = prior
        self.start = shipped_prior() if prior else FLAT_PRIOR
        self.costs: dict[str, _Costs] = {}
        self.accept: dict[str, _Calibration] = {}  # P(token accepted | reached, its confidence)
        self.survival = 1.0  # pi_i: estimated P(all drafts so far accepted), eq. (10)
        self.tally: dict[str, _Tally] = {}  # the run so far, per proposer, for its rate (eq. 12)

    def _calibration(self, source: str) -> _Calibration:
        if source not in self.accept:
            # the prior's acceptance is the draft model's; n-gram proposals start flat
            acceptance = self.start.acceptance if source == "model" else None
            self.accept[source] = _Calibration.informed(acceptance, self.start.strength)
        return self.accept[source]

    def _costs(self, source: str) -> _Costs:
        if source not in self.costs:
            pinned = self._pins[0] if self._pins[0] is not None else (0.0 if source == "ngram" else None)
            self.costs[source] = _Costs(pinned, self._pins[1], self.start)
        return self.costs[source]

    def budget(self) -> int:
        self.survival = 1.0
        return self.k

    def keep_drafting(self, n_drafted: int, confidence: float, source: str) -> bool:
        # Eq. (10): the drafted token survives with the calibrated acceptance of its confidence; the next
        # one is predicted at the same confidence (confidence changes slowly along a draft).
        a = self._calibration(source)(confidence)
        self.survival *= a
        per_token, intercept, slope = self._costs(source).current()
        # Eq. (12): the run's tokens per unit cost, its steps costed on the current cost model.
        run = self.tally.get(source, _Tally())
        rate = run_rate(self.start.rate, self.start.rate_weight, run.emitted, run.steps, run.drafted, intercept,
                        per_token + slope)
        # Eq. (11): one more draft pays per_token + slope and adds survival * a expected tokens.
        return worth_drafting(self.survival * a, rate, per_token + slope)

    def observe(self, outcome: StepOutcome) -> None:
        calibration = self._calibration(outcome.source)
        for i, confidence in enumerate(outcome.confidences):
            if i > outcome.n_accepted:
                break  # never evaluated: the step stopped at the first rejection
            calibration.add(confidence, i < outcome.n_accepted)
        self._costs(outcome.source).add(outcome)
        run = self.tally.setdefault(outcome.source, _Tally())
        run.emitted += outcome.n_accepted + 1
        run.steps += 1
        run.drafted += outcome.n_drafted


_BY_NAME = {"fixed": FixedPolicy, "confidence": ConfidencePolicy, "heuristic": HeuristicPolicy,
            "adaptive": AdaptivePolicy}


def make_policy(policy: str | DraftPolicy, k: int) -> DraftPolicy:
    """A policy object from a name (a new one per call) or the object itself (its state carries over)."""
    if isinstance(policy, DraftPolicy):
        return policy
    if policy not in _BY_NAME:
        raise ValueError(f"unknown draft-length policy {policy!r}; choose one of {', '.join(POLICIES)}")
    return _BY_NAME[policy](k)
