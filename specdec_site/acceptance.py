"""The acceptance rate a run is compared with the theory through: one estimator, named and defined once.

Eqs. (6)-(8) of The Math (Leviathan et al. 2022, arXiv 2211.17192, eq. (1) and Thm 3.8) take α, the probability
that a *tested* draft is accepted. A run drafts k tokens a step, but the rule tests them only up to the first
rejection; the drafts after it are never tested. So:

- the tested acceptance â = accepted ÷ (accepted + rejections): each tested draft is either accepted or is the
  step's one rejection. It estimates α, and it is what the site compares the theory with;
- the draft yield = accepted ÷ drafted: the share of the drafting work that became output. It counts the untested
  drafts as failures, so it falls with k by truncation alone (at α = 0.9 and k = 8 its expectation is α(1 − α^k) / ((1 − α) k) = 0.64),
  and it is no estimate of α. The artifacts' sweep rows call it "alpha" (specdec_site/stages/sweep.py, from before this
  module); the pages call it the draft yield and never α.

For a run that sampled, the mean of min(1, p(x)/q(x)) over its tested drafts estimates E[β] = E[Σ min(p, q)]
(eq. 4) with less noise: x ~ q, so E_x[min(1, p(x)/q(x))] = Σ_x min(p(x), q(x)) = β at each position.

These functions read a sweep row of docs/data/<device>/policies.json (its accepted_length_histogram counts the steps
that drafted the row's full k: the k of a step cut short by max_new_tokens is smaller, and its drafts are left out
of the histogram, so every step counted had k chances).
"""

from __future__ import annotations

from specdec.theory import expected_tokens_per_pass, leviathan_speedup


def tested_acceptance(row: dict) -> float:
    """â = accepted ÷ (accepted + rejections) over the row's full-k steps: a step that accepted n < k drafts
    tested n + 1 of them and rejected one; a step that accepted all k tested k."""
    hist, k = row["accepted_length_histogram"], row["k"]
    accepted = sum(n * count for n, count in enumerate(hist))
    rejections = sum(count for n, count in enumerate(hist) if n < k)
    tested = accepted + rejections
    if not tested:
        raise ValueError(f"sweep row k={k} has no full-k step: its acceptance cannot be estimated")
    return accepted / tested


def accepted_and_rejected(steps: list[dict]) -> tuple[int, int]:
    """(accepted drafts, rejections) over recorded steps (a trace's): a step rejects at most one draft, the first
    after its accepted ones."""
    return sum(s["n_accepted"] for s in steps), sum(s["n_accepted"] < s["k"] for s in steps)


def tested_acceptance_of_steps(steps: list[dict]) -> float | None:
    """â over recorded steps rather than a sweep row's histogram; None where no draft was tested."""
    accepted, rejected = accepted_and_rejected(steps)
    return accepted / (accepted + rejected) if accepted + rejected else None


def draft_yield(row: dict) -> float:
    """Accepted ÷ drafted over every step of the row (the artifact's "alpha" field): not an estimate of α."""
    return row["alpha"]


def expected_from_beta(steps: list[dict]) -> float | None:
    """E[β] from a sampled run's steps: the mean of min(1, p/q) (accept_probs) over its tested drafts (those up to
    and including each step's first rejection). None for a run with no tested draft."""
    probs = [a for s in steps for a in s["accept_probs"][:min(s["n_accepted"] + 1, s["k"])]]
    return sum(probs) / len(probs) if probs else None


def theory(row: dict) -> dict:
    """The theory at the row's k, c and verify cost, with α = â: eq. (6) tokens per pass, eq. (7), eq. (8)."""
    a, k = tested_acceptance(row), row["k"]
    return {"alpha_hat": a, "tokens_per_pass": expected_tokens_per_pass(a, k),
            "speedup_eq7": leviathan_speedup(a, k, row["c"]),
            "speedup_eq8": leviathan_speedup(a, k, row["c"], row["verify_cost"])}
