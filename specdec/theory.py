"""The cost model of speculative decoding, as plain functions (no torch): one home for every formula.

Leviathan et al. 2022 (arXiv 2211.17192): eq. (1) of Sec. 3.3 (expected tokens per step) and Thm 3.8
(walltime speedup). The math page numbers them (6), (7), (8); the adaptive draft-length rule, (10)-(12),
and the oracle bound, (13), with its cap, (14), are derived there too. The build script and the figures both call these.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def expected_tokens_per_pass(alpha: float, k: int) -> float:
    """Eq. (6): (1 - a^(k+1)) / (1 - a), tokens per step when each draft is accepted w.p. a independently."""
    if alpha >= 1.0:
        return k + 1.0
    return (1 - alpha ** (k + 1)) / (1 - alpha)


def leviathan_speedup(alpha: float, k: int, c: float, verify_cost: float = 1.0) -> float:
    """Eq. (7), Thm 3.8: tokens per step over the cost of a step, k c + verify_cost (target-step units).

    With verify_cost = 1 this is Leviathan's (1 - a^(k+1)) / ((1 - a)(c k + 1)); eq. (8) passes the
    measured cost of scoring k+1 tokens relative to one.
    """
    return expected_tokens_per_pass(alpha, k) / (c * k + verify_cost)


def speedup_from_tokens_per_pass(tokens_per_pass: float, k: float, c: float, verify_cost: float) -> float:
    """Eq. (8) with the measured tokens per pass in place of (1 - a^(k+1))/(1 - a) (no i.i.d. assumption)."""
    return tokens_per_pass / (k * c + verify_cost)


def best_k(alpha: float, c: float, k_max: int = 16, verify_slope: float = 0.0) -> int:
    """The k in 1..k_max that maximises eq. (8) with verify cost 1 + verify_slope * k."""
    return max(range(1, k_max + 1), key=lambda k: leviathan_speedup(alpha, k, c, 1 + verify_slope * k))


def worth_drafting(survival_next: float, rate: float, marginal_cost: float) -> bool:
    """Eq. (11): draft one more token iff the tokens it is expected to add, per unit of its cost, are at least
    the run's rate.

    survival_next = P(drafts 1..i+1 all accepted) is what drafting token i+1 adds in expectation;
    marginal_cost is one draft token plus the verify pass's extra cost for it; rate is the run's tokens per unit
    cost (eq. 12). A step is a renewal cycle: stopping starts the next step, which earns the run's rate, so a step
    should grow while its next token earns more than that (the renewal-reward theorem; at the best fixed k, eq. (8)'s
    maximum, the marginal rate crosses the average one).
    """
    return survival_next >= rate * marginal_cost


def run_rate(prior_rate: float, prior_weight: float, emitted: float, steps: int, drafted: int, intercept: float,
             per_draft: float) -> float:
    """Eq. (12): the run's tokens per unit cost, its steps costed on the current cost model (steps * v0 +
    drafted * (t_d + v1)), starting from prior_rate tokens per verify pass counted as prior_weight steps."""
    return (prior_rate * prior_weight + emitted) / ((prior_weight + steps) * intercept + drafted * per_draft)


def oracle_steps(agree: Sequence[bool]) -> list[int]:
    """Eq. (13): the draft lengths an oracle would choose for a token stream.

    agree[t] says whether the drafter's proposal for emitted token t would have been accepted. The oracle
    drafts exactly the run of accepted tokens before each rejection, and the target pass adds one token,
    so a run of L agreements followed by one disagreement is one step of draft length L. A stream that
    ends inside a run closes with a step that drafts the rest.
    """
    lengths, run, t = [], 0, 0
    while t < len(agree):
        if agree[t]:
            run += 1
            t += 1
            if t == len(agree):  # the last emitted token came from the step's target pass
                lengths.append(run - 1)
        else:
            lengths.append(run)
            run = 0
            t += 1
    return lengths


def split_at_cap(lengths: Sequence[int], k: int) -> list[int]:
    """Eq. (14): the oracle's steps (eq. 13) held to at most k drafts each. A run of L agreed drafts and the
    target's own token, L + 1 tokens, takes ceil((L + 1) / (k + 1)) steps of k drafts but the last."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    out = []
    for length in lengths:
        n_steps = -(-(length + 1) // (k + 1))
        out += [k] * (n_steps - 1) + [length - (n_steps - 1) * (k + 1)]
    return out


def oracle_seconds(lengths: Sequence[int], draft_seconds_per_token: float, verify_seconds: VerifyCost) -> float:
    """Wall time of the oracle's steps at the run's measured cost per draft token and per verify pass."""
    return sum(n * draft_seconds_per_token + verify_seconds(n) for n in lengths)


class VerifyCost:
    """The verify pass's wall time as a line in the number of drafts, a + b k, fitted by least squares."""

    def __init__(self, ks: Sequence[int], seconds: Sequence[float]):
        if not seconds:
            raise ValueError("no verify timings to fit")
        mean_k, mean_s = statistics.fmean(ks), statistics.fmean(seconds)
        var_k = sum((k - mean_k) ** 2 for k in ks)
        slope = sum((k - mean_k) * (s - mean_s) for k, s in zip(ks, seconds)) / var_k if var_k > 0 else 0.0
        self.slope = max(0.0, slope)  # scoring more tokens never costs less
        self.intercept = mean_s - self.slope * mean_k

    def __call__(self, k: float) -> float:
        return self.intercept + self.slope * k


def bootstrap_median_ci(values: Sequence[float], n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> tuple:
    """Percentile bootstrap interval of the median (resampling the prompts), deterministic for a seed."""
    import random

    if not values:
        raise ValueError("no values")
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(n_boot))
    lo = medians[int((1 - level) / 2 * n_boot)]
    hi = medians[min(n_boot - 1, int((1 + level) / 2 * n_boot))]
    return lo, hi


# ---------------------------------------------------------------- block verification against the token rule


def expected_accepted_token(accept_probs: Sequence[float]) -> float:
    """Expected accepted drafts of one chain step under the token rule (Algorithm 1), given its drafts: the prefix
    i is kept with probability min(1, p/q) multiplied along it, so E = sum_i prod_(j <= i) a_j."""
    total, survive = 0.0, 1.0
    for a in accept_probs:
        survive *= a
        total += survive
    return total


def expected_accepted_block(stop_probs: Sequence[float]) -> float:
    """Expected accepted drafts of one chain step under block verification (Sun et al. 2025), given its drafts:
    stop_probs h_1..h_k (verify.block_terms); going back from the longest prefix, prefix i is the one kept with
    probability h_i prod_(j > i) (1 - h_j)."""
    total, none_longer = 0.0, 1.0
    for i in range(len(stop_probs), 0, -1):
        h = stop_probs[i - 1]
        total += i * h * none_longer
        none_longer *= 1.0 - h
    return total


# ---------------------------------------------------------------- token trees (Sequoia's dynamic programme)


def tree_expected_accepted(paths: Sequence[Sequence[int]], accept_by_rank: Sequence[float]) -> float:
    """Expected accepted nodes per step of a static tree (rank paths, as tree.TreeShape), greedily: a node is
    accepted when the target's token at each step of its path is the draft's token of that rank, each with the
    probability accept_by_rank[rank], independently (Sequoia's positional acceptance model). A step emits one token
    more."""
    total = 0.0
    for path in paths:
        prob = 1.0
        for rank in path:
            prob *= accept_by_rank[rank] if rank < len(accept_by_rank) else 0.0
        total += prob
    return total


def best_tree(accept_by_rank: Sequence[float], nodes: int, max_depth: int) -> tuple[float, list[tuple[int, ...]]]:
    """The static tree of at most `nodes` nodes and `max_depth` levels with the most expected accepted nodes under
    the positional model of tree_expected_accepted: Sequoia's dynamic programme (Chen et al. 2024, arXiv
    2402.12374). Returns (expected accepted nodes, its rank paths). A node's value is a_r (1 + value of the forest
    below it); a forest of n nodes under one parent spends them on children of ranks r, r + 1, ... .

    best_forest(d, n, r): the best forest of at most n nodes, at most d levels deep, from children of ranks >= r."""
    import functools

    a = [float(x) for x in accept_by_rank]
    if nodes < 0 or max_depth < 0 or any(not 0.0 <= x <= 1.0 for x in a):
        raise ValueError("need nodes >= 0, max_depth >= 0 and acceptance probabilities in [0, 1]")

    @functools.cache
    def forest(d: int, n: int, r: int) -> tuple[float, tuple]:
        if d == 0 or n == 0 or r >= len(a):
            return 0.0, ()
        best = forest(d, n, r + 1)  # no child of rank r (nor of any higher rank, which would be worth no more)
        for m in range(1, n + 1):  # the rank-r child's subtree takes m nodes, itself included
            below, shape = forest(d - 1, m - 1, 0)
            rest, others = forest(d, n - m, r + 1)
            value = a[r] * (1.0 + below) + rest
            if value > best[0] + 1e-15:
                best = value, ((r, shape),) + others
        return best

    value, shape = forest(max_depth, nodes, 0)

    def paths(forest_shape, prefix=()):
        for rank, below in forest_shape:
            yield prefix + (rank,)
            yield from paths(below, prefix + (rank,))

    return value, list(paths(shape))
