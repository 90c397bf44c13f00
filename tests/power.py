"""How many sampled sequences a chi-square test of exactness needs: computed from the exact distributions, not guessed.

A rule's output distribution over every continuation of a few tokens from tiny models is enumerated here, step by
step as Algorithm 1 runs (Leviathan et al. 2022): draft k_step = min(k, left - 1) tokens from q (the decoder's cap,
`decoding._step_budget`), accept each with min(1, p/q), on the first rejection draw from the rule's residual, and
after k_step acceptances draw the bonus from p. With the exact residual norm(max(0, p - q)) this is the target's own
distribution (checked by tests/test_statistical.py); with the naive residual norm(max(0, p - a q))
(specdec_site.exactness.exact.naive_residual, the function `mutants.naive_rule()` puts in the decoder) it is the wrong
distribution the decoder samples under that rule (also checked there, by sampling).

The Pearson chi-square statistic of N draws from a distribution pi, binned as the test bins them against the exact
p (cells of expected count >= 5, the rest pooled), is approximately noncentral chi-square with bins - 1 degrees of
freedom and noncentrality N * sum_b (pi_b - p_b)^2 / p_b (Cochran; the audit's detectable TV uses the same, see
specdec_site/exactness/audit.py). `smallest_n` is the least N at which a test at level alpha rejects pi with the stated power;
where pi cannot be enumerated (a policy with state), `smallest_n_measured` starts from a measured noncentrality.
"""

from __future__ import annotations

import numpy as np
import torch

# The probability with which each chi-square test of the slow tier (tests/test_statistical.py, test_policies.py,
# test_decoding.py, test_audit.py) catches the wrong residual under its own settings, at the level it asserts
POWER = 0.99


def model_probs(model, prompt: torch.Tensor, contexts: list[tuple], config, width: int) -> dict[tuple, torch.Tensor]:
    """{context: (width,) float64 probabilities of the next token after prompt + context} under `config`, zero past
    the model's own head (a smaller draft head proposes none of those ids): one batched forward pass per context
    length, no KV cache (so it shares nothing with the decoder it checks)."""
    from specdec.sampling import probs_from_logits

    out = {}
    for length in sorted({len(c) for c in contexts}):
        batch_contexts = [c for c in contexts if len(c) == length]
        batch = torch.stack([torch.cat([prompt, torch.tensor(c, dtype=torch.int64)]) for c in batch_contexts])
        with torch.inference_mode():
            probs = probs_from_logits(model(input_ids=batch).logits[:, -1], config).double()
        probs = torch.nn.functional.pad(probs, (0, width - probs.shape[-1]))
        out.update({c: probs[i] for i, c in enumerate(batch_contexts)})
    return out


def exact_residual(p_row: torch.Tensor, q_row: torch.Tensor, x: int) -> torch.Tensor:
    """Algorithm 1's residual norm(max(0, p - q)), whatever token was rejected."""
    r = (p_row - q_row).clamp_min(0.0)
    return r / r.sum()


def speculative_distribution(target, draft, prompt: torch.Tensor, n_new: int, k: int, config,
                             residual=exact_residual) -> dict[tuple, float]:
    """Exact P(y_1..y_n_new) of speculative sampling with drafts of up to k from `draft`, verified against `target`
    with `residual` on a rejection: every branch of every step enumerated (tiny vocabularies only)."""
    vocab = target.config.vocab_size
    contexts = [()]
    for _ in range(n_new - 1):  # a step never emits past n_new, so no context of n_new tokens is ever scored
        contexts += [c + (y,) for c in contexts if len(c) == len(contexts[-1]) for y in range(vocab)]
    p_of = model_probs(target, prompt, contexts, config, vocab)
    q_of = model_probs(draft, prompt, contexts, config, vocab)
    p_list = {c: row.tolist() for c, row in p_of.items()}  # Python floats: the walk below reads them one by one
    q_list = {c: row.tolist() for c, row in q_of.items()}

    def add(blocks: dict, prefix: tuple, weight: float, row: list[float]):
        for y, py in enumerate(row):
            if py > 0:
                blocks[prefix + (y,)] = blocks.get(prefix + (y,), 0.0) + weight * py

    def step(ctx: tuple, k_step: int) -> dict[tuple, float]:
        """{emitted block: probability} of one step from ctx: accepted drafts, then a resampled or bonus token."""
        blocks: dict[tuple, float] = {}

        def walk(accepted: tuple, weight: float):
            here = ctx + accepted
            p_row = p_list[here]
            if len(accepted) == k_step:  # all accepted: the bonus token from p
                add(blocks, accepted, weight, p_row)
                return
            q_row = q_list[here]
            for x, qx in enumerate(q_row):
                if qx == 0.0:
                    continue
                a = min(1.0, p_row[x] / qx)
                if a > 0:
                    walk(accepted + (x,), weight * qx * a)
                if a < 1:  # rejected: the rest of the draft is discarded, one token from the residual
                    add(blocks, accepted, weight * qx * (1 - a), residual(p_of[here], q_of[here], x).tolist())

        walk((), 1.0)
        return blocks

    dist: dict[tuple, float] = {}

    def run(ctx: tuple, weight: float):
        left = n_new - len(ctx)
        if left == 0:
            dist[ctx] = dist.get(ctx, 0.0) + weight
            return
        for block, w in step(ctx, min(k, left - 1)).items():
            run(ctx + block, weight * w)

    run((), 1.0)
    return dist


def deviations(exact: dict[tuple, float], wrong: dict[tuple, float]) -> tuple[np.ndarray, np.ndarray]:
    """(p, pi - p) over the sequences the target makes, most likely first. Sequences the target never makes are
    left out: a draw of one fails the test outright (exact.chi_square_test), so leaving them out only understates
    the power."""
    pairs = sorted(((p, wrong.get(s, 0.0) - p) for s, p in exact.items() if p > 0), reverse=True)
    return np.array([p for p, _ in pairs]), np.array([d for _, d in pairs])


def chi_square_bins(n: int, p: np.ndarray, min_expected: float = 5.0) -> tuple[int, int]:
    """(how many sequences stand alone, degrees of freedom) of the chi-square test of n draws against p (sorted
    descending), binned as exact.pooled_bins bins it: a cell per sequence expected >= min_expected times, the rest
    pooled into one."""
    alone = int(np.searchsorted(-p, -min_expected / n, side="right"))
    return alone, alone + (alone < len(p)) - 1


def noncentrality(n: int, p: np.ndarray, d: np.ndarray) -> tuple[float, int]:
    """(noncentrality, degrees of freedom) of the chi-square test of n draws from p + d against p (`deviations`), on
    the test's own bins at this n."""
    alone, df = chi_square_bins(n, p)
    lam = float(np.sum(d[:alone] ** 2 / p[:alone]))
    if alone < len(p):
        lam += float(d[alone:].sum() ** 2 / p[alone:].sum())
    return n * lam, df


def rejection_probability(lam: float, df: int, alpha: float) -> float:
    """The probability that a chi-square test at level alpha rejects, its statistic noncentral chi-square(df, lam)."""
    from scipy.stats import chi2, ncx2

    return float(ncx2.sf(chi2.isf(alpha, df), df, lam))


def power(n: int, exact: dict, wrong: dict, alpha: float) -> float:
    """The probability that the test at level alpha rejects n draws from `wrong`."""
    return rejection_probability(*noncentrality(n, *deviations(exact, wrong)), alpha)


def smallest_n(exact: dict, wrong: dict, alpha: float, target_power: float, step: int = 50, cap: int = 5000) -> int:
    """The least n (a multiple of `step`) from which on, up to `cap`, the test rejects `wrong` with `target_power`."""
    prepared = deviations(exact, wrong)
    ns = range(step, cap + step, step)
    ok = [rejection_probability(*noncentrality(n, *prepared), alpha) >= target_power for n in ns]
    if not ok[-1]:
        raise ValueError(f"power {target_power} not reached by n = {cap}")
    i = len(ok) - 1
    while i > 0 and ok[i - 1]:
        i -= 1
    return ns[i]


def measured_noncentrality(test: dict, z: float = 2.0) -> float:
    """A lower bound on the per-draw noncentrality of a rule, from one chi-square test of its draws (exact.
    chi_square_test's result): E[X^2] = df + lambda and Var[X^2] = 2 (df + 2 lambda), so lambda is estimated by
    X^2 - df, less z standard deviations; for a rule whose law cannot be enumerated (a policy with state, the hybrid
    drafter), its power at another n is computed from this."""
    df, x2, n = test["bins"] - 1, test["chi_square"], test["samples"]
    lam = max(0.0, x2 - df)
    return max(0.0, lam - z * (2 * (df + 2 * lam)) ** 0.5) / n


def smallest_n_measured(per_draw: float, exact: dict, alpha: float, target_power: float, step: int = 50,
                        cap: int = 20_000) -> int:
    """The least n (a multiple of `step`) at which a deviation of per-draw noncentrality `per_draw`, on the test's
    bins at n (their count from `exact`), is found at level alpha with `target_power`."""
    p = np.array(sorted((v for v in exact.values() if v > 0), reverse=True))
    for n in range(step, cap + step, step):
        if rejection_probability(per_draw * n, chi_square_bins(n, p)[1], alpha) >= target_power:
            return n
    raise ValueError(f"power {target_power} not reached by n = {cap}")
