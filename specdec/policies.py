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
  expected tokens it adds, per unit of its cost, exceed the step's tokens per unit of cost so far. The
  acceptance estimate is learned online from this run's steps as a function of the draft's confidence
  (in the spirit of SpecDec++, Huang et al. 2024, arXiv 2405.19715, and DISCO, Mamou et al. 2024,
  arXiv 2405.04304, without a trained head); the costs are the run's own timings. Pass
  `AdaptivePolicy(k, draft_cost=..., verify_slope=...)` to pin the costs (then a run replays exactly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .checks import ArgumentError, as_count, as_real
from .theory import should_draft_more

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


@dataclass
class _Calibration:
    """P(accept | confidence bin), with a prior of one pseudo-observation at the bin's centre."""

    bins: int = 10
    tried: list[float] = field(default_factory=list)
    accepted: list[float] = field(default_factory=list)

    def __post_init__(self):
        self.tried = [1.0] * self.bins
        self.accepted = [(b + 0.5) / self.bins for b in range(self.bins)]

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

    def __init__(self, draft_cost: float | None, verify_slope: float | None):
        self.pinned = draft_cost is not None
        self.draft = draft_cost if draft_cost is not None else 0.25  # prior, in verify passes, until measured
        self.slope = verify_slope if verify_slope is not None else 0.05
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

    def __init__(self, k: int = 16, *, draft_cost: float | None = None, verify_slope: float | None = None):
        """draft_cost, verify_slope: pin the costs (per draft token, and per extra token verified, both in
        units of one verify pass) instead of measuring them; None measures them as the run goes."""
        super().__init__(k)
        rule = "{} must be a finite number >= 0 or None"
        draft_cost, verify_slope = (None if v is None else as_real(v, rule.format(name))
                                    for name, v in (("draft_cost", draft_cost), ("verify_slope", verify_slope)))
        for name, value in (("draft_cost", draft_cost), ("verify_slope", verify_slope)):
            if value is not None and not (value >= 0 and math.isfinite(value)):
                raise ArgumentError(f"{rule.format(name)}, got {value!r}")
        self.needs_timing = draft_cost is None or verify_slope is None
        self._pins = (draft_cost, verify_slope)
        self.costs: dict[str, _Costs] = {}
        self.accept: dict[str, _Calibration] = {}  # P(token accepted | reached, its confidence)
        self.survival = 1.0  # pi_i: estimated P(all drafts so far accepted), eq. (10)
        self.expected = 1.0  # E_i: expected tokens of the step so far (the target pass adds one)

    def _costs(self, source: str) -> _Costs:
        if source not in self.costs:
            pinned = self._pins[0] if self._pins[0] is not None else (0.0 if source == "ngram" else None)
            self.costs[source] = _Costs(pinned, self._pins[1])
        return self.costs[source]

    def budget(self) -> int:
        self.survival, self.expected = 1.0, 1.0
        return self.k

    def keep_drafting(self, n_drafted: int, confidence: float, source: str) -> bool:
        calibration = self.accept.setdefault(source, _Calibration())
        # Eq. (10): the drafted token survives with the calibrated acceptance of its confidence; the next
        # one is predicted at the same confidence (confidence changes slowly along a draft).
        a = calibration(confidence)
        self.survival *= a
        self.expected += self.survival
        per_token, intercept, slope = self._costs(source).current()
        cost_so_far = n_drafted * per_token + intercept + slope * n_drafted
        # Eq. (11): one more draft pays per_token + slope and adds survival * a expected tokens.
        return should_draft_more(self.survival * a, self.expected, cost_so_far, per_token + slope)

    def observe(self, outcome: StepOutcome) -> None:
        calibration = self.accept.setdefault(outcome.source, _Calibration())
        for i, confidence in enumerate(outcome.confidences):
            if i > outcome.n_accepted:
                break  # never evaluated: the step stopped at the first rejection
            calibration.add(confidence, i < outcome.n_accepted)
        self._costs(outcome.source).add(outcome)


_BY_NAME = {"fixed": FixedPolicy, "confidence": ConfidencePolicy, "heuristic": HeuristicPolicy,
            "adaptive": AdaptivePolicy}


def make_policy(policy: str | DraftPolicy, k: int) -> DraftPolicy:
    """A policy object from a name (a new one per call) or the object itself (its state carries over)."""
    if isinstance(policy, DraftPolicy):
        return policy
    if policy not in _BY_NAME:
        raise ValueError(f"unknown draft-length policy {policy!r}; choose one of {', '.join(POLICIES)}")
    return _BY_NAME[policy](k)
