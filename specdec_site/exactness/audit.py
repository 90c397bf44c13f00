"""Exactness audit: is a speculative decoder lossless? Put any implementation through it (issue 38).

Speculative decoding is lossless when its output is distributed exactly as the target's own sampling under the same
settings (Leviathan et al. 2022, Thm 3.5). The audit checks that claim where it can be checked exactly: on a pair of
tiny random transformers whose every continuation of a few tokens can be enumerated, it draws `n` continuations from
the implementation, computes the target's exact distribution over them under the same temperature, top-k and top-p,
and compares the two with a Pearson chi-square test.

    from specdec_site.exactness.audit import Sampling, audit

    def my_sample(target, draft, prompt, new_tokens, sampling, generator):
        # return the new_tokens token ids your decoder emits after `prompt` (a 1-D int64 tensor)
        ...

    result = audit(my_sample, sampling=Sampling(temperature=0.7, top_k=50), n=4000)
    print(result["verdict"], result["p_value"], result["tv_detectable"])

A verdict is only as strong as the test's power, so each result says how large a deviation the test would have found:
`tv_detectable`, the total variation distance from the target's distribution (over the test's bins) that the test
detects with 80% probability at this n, whatever the direction of the deviation. An implementation that "passes" has
shown no deviation that large; it has not been proved exact. A test too weak to see a deviation of MAX_PASS_TV
(0.2) is "inconclusive", whatever its p-value. One that "fails" (p < ALPHA) is not lossless, unless this
one test was the 1-in-1000 chance.

The vocabulary (64) is larger than 50, so transformers' default top_k=50 truncates it; three new tokens with drafts
of up to two, from a draft flatter than the target, make rejections, resampled tokens and bonus tokens common.
`audit_rows()` is the table the exactness stage records for the Exactness page: specdec in every policy and drafter,
transformers' candidate generators that can be built on tiny models, and two known-inexact controls that must fail.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import torch

ALPHA = 1e-3  # significance level: a p-value below it fails the row
POWER = 0.8  # the power tv_detectable is stated at
# A verdict of "passes" claims that a deviation of this total variation (or more) would have been seen with
# probability POWER. At a smaller n the test cannot see that much (tv_detectable is larger), and a p-value above
# ALPHA says nothing either way: the row is "inconclusive". (A known-wrong tree sampler "passed" at n = 40 and 80,
# tv_detectable 0.33 and 0.25; the build's n = 4000 gives 0.04 to 0.06.)
MAX_PASS_TV = 0.2
MIN_EXPECTED = 5.0  # sequences expected fewer times than this are pooled into one bin (the chi-square's rule)
MAX_CONTINUATIONS = 1_000_000  # the most continuations AuditSetup lets the audit enumerate (64 ** 3 = 262,144)


@dataclass(frozen=True)
class Sampling:
    temperature: float = 1.0  # > 0: the audit is of sampling (greedy output is checked token for token elsewhere)
    top_k: int | None = None  # None: no top-k (transformers: top_k=0)
    top_p: float | None = None  # None: no top-p (transformers: top_p=1.0)

    def __post_init__(self):
        # checked here, in one line each, before any model is built (a top-p that rounds to 0 in float32 used to
        # end the audit in a RuntimeError from the sampler)
        t, k, top_p = self.temperature, self.top_k, self.top_p
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
            raise ValueError(f"Sampling.temperature must be a finite number > 0, got {t!r} (greedy decoding is checked "
                             "token for token, not by the audit)")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(f"Sampling.top_k must be None or an integer >= 1, got {k!r}")
        if top_p is not None and (isinstance(top_p, bool) or not isinstance(top_p, (int, float))
                                  or not math.isfinite(top_p) or not 0 < top_p <= 1):
            raise ValueError(f"Sampling.top_p must be None or a number in (0, 1], got {top_p!r}")
        if top_p is not None and float(torch.tensor(top_p, dtype=torch.float32)) <= 0:
            raise ValueError(f"Sampling.top_p = {top_p!r} is 0 in float32, where the probabilities are summed: "
                             "no token could be kept; use a top-p of at least 1e-38")

    def label(self) -> str:
        parts = [f"T = {self.temperature:g}"]
        parts += [f"top-k = {self.top_k}"] if self.top_k else []
        parts += [f"top-p = {self.top_p:g}"] if self.top_p else []
        return ", ".join(parts)


@dataclass(frozen=True)
class AuditSetup:
    vocab: int = 64  # > 50, so that transformers' default top_k=50 takes effect
    new_tokens: int = 3  # continuations of this length are enumerated: vocab ** new_tokens of them
    prompt: tuple[int, ...] = (0, 3, 5, 3, 5)  # it repeats, so that prompt lookup and n-gram drafts find matches
    target_seed: int = 21  # the tiny target's construction seed (specdec_site.exactness.exact.make_tiny_lm)
    draft_seed: int = 22  # the tiny draft's
    target_scale: float = 0.7  # init range: the target's next-token distributions are peaked enough to test ...
    draft_scale: float = 0.4  # ... and the draft's flatter, so that drafts are often rejected
    k: int = 2  # drafts per step for the implementations that take a k

    def __post_init__(self):
        # the target's distribution is enumerated: vocab ** new_tokens continuations, capped so that a setup cannot
        # start an enumeration of hours with no word (64 ** 4 is 16.8 million)
        for name in ("vocab", "new_tokens", "k"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"AuditSetup.{name} must be an integer >= 1, got {value!r}")
        if self.vocab ** self.new_tokens > MAX_CONTINUATIONS:
            raise ValueError(f"AuditSetup(vocab={self.vocab}, new_tokens={self.new_tokens}) has "
                             f"{self.vocab ** self.new_tokens:,} continuations to enumerate, more than "
                             f"{MAX_CONTINUATIONS:,}: use fewer new tokens or a smaller vocabulary")
        if not self.prompt or not all(isinstance(t, int) and 0 <= t < self.vocab for t in self.prompt):
            raise ValueError(f"AuditSetup.prompt must be a non-empty tuple of ids in [0, {self.vocab}), got {self.prompt!r}")


def tiny_pair(setup: AuditSetup = AuditSetup()):
    """(target, draft): random Llama-style models with the setup's vocabulary and no EOS token (a continuation is
    always new_tokens long)."""
    from specdec_site.exactness.exact import make_tiny_lm

    models = (make_tiny_lm(setup.target_seed, setup.vocab, setup.target_scale),
              make_tiny_lm(setup.draft_seed, setup.vocab, setup.draft_scale))
    for model in models:
        model.config.eos_token_id = None
        model.generation_config.eos_token_id = None
        model.generation_config.pad_token_id = 0  # transformers asks for one; with no EOS it is never written
    return models


# ---------------------------------------------------------------- the target's exact distribution


def specdec_probs(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """Next-token probabilities as specdec samples them (specdec.sampling.probs_from_logits)."""
    from specdec import SamplingConfig
    from specdec.sampling import probs_from_logits

    return probs_from_logits(logits, SamplingConfig(sampling.temperature, sampling.top_k, sampling.top_p))


def transformers_probs(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """Next-token probabilities as transformers samples them: its own warpers, in the order `generate` applies them
    (temperature, top-k, top-p), then softmax."""
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    scores = logits.float()
    ids = torch.zeros(scores.shape[0], 1, dtype=torch.int64)  # the warpers do not read the ids
    if sampling.temperature != 1.0:
        scores = TemperatureLogitsWarper(sampling.temperature)(ids, scores)
    if sampling.top_k:
        scores = TopKLogitsWarper(sampling.top_k)(ids, scores)
    if sampling.top_p is not None and sampling.top_p < 1.0:
        scores = TopPLogitsWarper(sampling.top_p)(ids, scores)
    return scores.softmax(dim=-1)


REFERENCES = {"specdec": specdec_probs, "transformers": transformers_probs}


@torch.inference_mode()
def target_distribution(target, prompt: torch.Tensor, new_tokens: int, sampling: Sampling,
                        reference: str = "specdec") -> dict[tuple[int, ...], float]:
    """P(y_1..y_n | prompt) for every continuation, sampling the target alone under `sampling` as `reference` does
    (its logits processing). One batched forward pass without a KV cache per length: it shares nothing with the
    decoders it checks."""
    probs_of = REFERENCES[reference]
    probs: dict[tuple[int, ...], float] = {(): 1.0}
    for _ in range(new_tokens):
        prefixes = [c for c, p in probs.items() if p > 0]
        batch = torch.stack([torch.cat([prompt, torch.tensor(c, dtype=torch.int64)]) for c in prefixes])
        step = probs_of(target(input_ids=batch).logits[:, -1], sampling).double()
        nonzero = step > 0
        probs = {c + (int(y),): probs[c] * float(step[i, y])
                 for i, c in enumerate(prefixes) for y in nonzero[i].nonzero().flatten().tolist()}
    return probs


# ---------------------------------------------------------------- the test and its power


def detectable_tv(n: int, bins: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The smallest total variation distance the chi-square test (bins cells, level alpha) detects with probability
    `power` at n samples, for a deviation in any direction.

    A deviation d from the exact p has noncentrality n * sum(d^2 / p), and by Cauchy-Schwarz
    (2 TV)^2 = (sum |d|)^2 <= sum(d^2 / p) * sum(p); so any deviation with TV >= sqrt(lambda / n) / 2 has
    noncentrality >= lambda, where lambda gives the test its power."""
    from scipy.optimize import brentq
    from scipy.stats import chi2, ncx2

    df = bins - 1
    if df < 1:
        return float("nan")
    critical = chi2.isf(alpha, df)
    lam = brentq(lambda x: ncx2.sf(critical, df, x) - power, 1e-9, 1e5)
    return 0.5 * math.sqrt(lam / n)


def chi_square(counts: dict[tuple, int], exact: dict[tuple, float]) -> dict:
    """Pearson chi-square of the sampled counts against the exact distribution on bins of expected count >= 5 (the
    rest pooled into one), the TV distance over those bins, what sampling noise alone gives there (its expectation
    under exactness, de Moivre's mean absolute deviation of a binomial, normal approximation), and the power."""
    from scipy.stats import chisquare

    from specdec_site.exactness.exact import pooled_bins

    n = sum(counts.values())
    impossible = sorted(s for s in counts if exact.get(s, 0.0) <= 0.0)
    # a continuation the target never makes: in the pooled bin
    observed, expected = pooled_bins(counts, exact, MIN_EXPECTED, extra_pooled=sum(counts[s] for s in impossible))
    if min(expected) <= 0:  # only impossible continuations in the pooled bin: an infinite statistic (null in JSON)
        statistic, p_value = None, 0.0
    elif len(observed) < 2:  # one bin: no test at this n (scipy's p would be NaN, and NaN < ALPHA is False)
        statistic, p_value = None, None
    else:
        result = chisquare(observed, expected)
        statistic, p_value = float(result.statistic), float(result.pvalue)
    noise = sum(math.sqrt(max(0.0, 2 * e * (1 - e / n) / math.pi)) for e in expected) / (2 * n)
    return {
        "samples": n,
        "bins": len(observed),
        "chi_square": statistic,
        "p_value": p_value,
        "tv_bins": 0.5 * sum(abs(o - e) for o, e in zip(observed, expected)) / n,
        "tv_noise": noise,
        "tv_detectable": detectable_tv(n, len(observed)) if len(observed) > 1 else None,
        "impossible": len(impossible),
    }


def audit(sample: Callable, *, n: int = 4000, sampling: Sampling = Sampling(), setup: AuditSetup = AuditSetup(),
          reference: str = "specdec", seed: int = 0, models=None) -> dict:
    """Audit one implementation: n continuations from `sample` against the target's exact distribution.

    sample(target, draft, prompt, new_tokens, sampling, generator) returns the new_tokens token ids it emits after
    `prompt` (1-D int64 tensor); `generator` is a seeded torch.Generator to draw from, and the global torch RNG is
    seeded too (for implementations that read it, as transformers' generate does), restored afterwards.
    `reference` says whose logits processing defines "the target's distribution under `sampling`": "specdec"
    (specdec.sampling.probs_from_logits) or "transformers" (its warpers). `models`: a (target, draft) pair of the
    setup's vocabulary, if not the setup's tiny pair.
    Returns the chi-square test (chi_square), the verdict ("passes" or "fails" at ALPHA) and what was audited."""
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {sorted(REFERENCES)}, got {reference!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0 (the audit is replayable from it), got {seed!r}")
    if not isinstance(sampling, Sampling) or not isinstance(setup, AuditSetup):
        raise TypeError("sampling must be an audit.Sampling and setup an audit.AuditSetup")
    target, draft = models if models is not None else tiny_pair(setup)
    prompt = torch.tensor(setup.prompt, dtype=torch.int64)
    exact = target_distribution(target, prompt, setup.new_tokens, sampling, reference)
    counts: dict[tuple[int, ...], int] = {}
    generator = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]), torch.inference_mode():
        torch.manual_seed(seed)
        for _ in range(n):
            tokens = checked_ids(sample(target, draft, prompt, setup.new_tokens, sampling, generator), setup)
            counts[tokens] = counts.get(tokens, 0) + 1
    test = chi_square(counts, exact)
    return {**test, "verdict": verdict(test), "alpha": ALPHA, "power": POWER,
            "sampling": asdict(sampling), "reference": reference, "seed": seed}


def checked_ids(output, setup: AuditSetup) -> tuple[int, ...]:
    """The ids a sampler returned, as a tuple; an output that is not new_tokens integer ids of the vocabulary is an
    error that names it (a float id was truncated and counted before)."""
    out = torch.as_tensor(output)
    if out.is_floating_point() or out.is_complex() or out.dtype == torch.bool:
        raise ValueError(f"the sampler returned {out.dtype} values, not token ids (an integer tensor): "
                         f"{out.flatten().tolist()[:8]}")
    tokens = tuple(int(t) for t in out.flatten().tolist())
    if len(tokens) != setup.new_tokens:
        raise ValueError(f"the sampler returned {len(tokens)} tokens, not new_tokens = {setup.new_tokens}: {tokens}")
    if not all(0 <= t < setup.vocab for t in tokens):
        raise ValueError(f"the sampler returned ids outside the vocabulary [0, {setup.vocab}): {tokens}")
    return tokens


def verdict(test: dict) -> str:
    """"fails" at p < ALPHA (or a continuation the target never makes); "inconclusive" when the draws fill fewer
    than two bins, so that there is no test (p is NaN: n is too small), or when the test's power is too low for a
    pass to mean anything (tv_detectable above MAX_PASS_TV); else "passes". The same rule for every row."""
    if test["impossible"] or (test["p_value"] is not None and test["p_value"] < ALPHA):
        return "fails"
    if test["bins"] < 2 or test["p_value"] is None or not math.isfinite(test["p_value"]):
        return "inconclusive"
    detectable = test.get("tv_detectable")
    if detectable is None or not math.isfinite(detectable) or detectable > MAX_PASS_TV:
        return "inconclusive"
    return "passes"


# ---------------------------------------------------------------- samplers: specdec and transformers


def specdec_sampler(policy: str = "fixed", drafter: str = "model", k: int = 2, verify: str = "token") -> Callable:
    """specdec.speculative_generate with a policy, a drafter (model, ngram, hybrid; or a token tree of depth k:
    tree, every node with its top-2 children; dynamic_tree, EAGLE-2's, width 2 and 4 nodes; sampled_tree, two
    children drawn without replacement), k and a chain's verification rule (token, block)."""
    from specdec import HybridDrafter, NgramDrafter, TreeDrafter, TreeShape, speculative_generate

    def sample(target, draft, prompt, new_tokens, sampling, generator):
        proposer = {"model": lambda: draft, "ngram": NgramDrafter, "hybrid": lambda: HybridDrafter(draft),
                    "tree": lambda: TreeDrafter(draft, TreeShape.full(2, k)),
                    "dynamic_tree": lambda: TreeDrafter(draft, width=2, depth=k, nodes=2 * k),
                    "sampled_tree": lambda: TreeDrafter(draft, TreeShape.full(2, k), sampled=True)}[drafter]()
        return speculative_generate(target, proposer, prompt, max_new_tokens=new_tokens, k=k, policy=policy,
                                    temperature=sampling.temperature, top_k=sampling.top_k, top_p=sampling.top_p,
                                    generator=generator, verify=verify)
    return sample


def transformers_sampler(mode: str, defaults: bool = False, **generate_kwargs) -> Callable:
    """transformers' `generate(do_sample=True)` with a candidate generator: mode "assistant" (the draft model as
    assistant_model), "prompt_lookup", "early_exit" (the target's first layer drafts) or "plain" (no speculation).
    defaults=True passes no sampling setting (the row audits transformers' defaults, temperature 1 and top_k=50)."""
    def sample(target, draft, prompt, new_tokens, sampling, generator):
        kwargs = dict(generate_kwargs)
        if not defaults:
            kwargs.update(temperature=sampling.temperature, top_k=sampling.top_k or 0, top_p=sampling.top_p or 1.0)
        if mode == "assistant":
            kwargs["assistant_model"] = draft
        elif mode == "prompt_lookup":
            kwargs["prompt_lookup_num_tokens"] = 2
        elif mode == "early_exit":
            kwargs["assistant_early_exit"] = 1
        ids = prompt[None]  # an explicit mask: transformers would infer padding where a prompt token equals pad_token_id
        out = target.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True, max_new_tokens=new_tokens,
                              **kwargs)
        return out[0, prompt.numel():]
    return sample


# ---------------------------------------------------------------- the Exactness page's table


@dataclass(frozen=True)
class AuditRow:
    name: str  # id
    implementation: str  # what is audited, in words
    sampling: Sampling  # the settings, as the reference applies them
    reference: str  # "specdec" or "transformers": whose logits processing defines the target's distribution
    control: bool  # a known-inexact rule: it must fail
    sampler: Callable[[], Callable]  # builds the sample function (in the process that runs the row)
    alpha_residual: bool = False  # run with specdec's verify_draft using norm(max(0, p - alpha q)) (specdec_site.exactness.mutants)
    family: str | None = None  # the page's group of the row; None: "control" for a control, else the reference


HF_DEFAULTS = Sampling(1.0, 50, None)  # what transformers samples with when given no setting (GenerationConfig)


def audit_rows() -> list[AuditRow]:
    """The Exactness page's table, one AuditRow per implementation and setting audited."""
    from specdec.policies import POLICIES
    from specdec_site.exactness.eagle import eagle_sampler

    rows = [AuditRow(f"specdec-{policy}-{drafter}", f"specdec, {policy} policy, {drafter} drafter", Sampling(),
                     "specdec", False, lambda p=policy, d=drafter: specdec_sampler(p, d))
            for policy in POLICIES for drafter in ("model", "ngram", "hybrid")]
    rows.append(AuditRow("specdec-fixed-model-sampling", "specdec, fixed policy, model drafter",
                         Sampling(0.7, 5, 0.9), "specdec", False, lambda: specdec_sampler()))
    trees = [("tree", "token tree, top-2 children to depth 2, sample and match"),
             ("dynamic_tree", "dynamic token tree (EAGLE-2), width 2, 4 nodes, sample and match"),
             ("sampled_tree", "token tree, 2 children drawn without replacement, recursive rejection sampling")]
    rows += [AuditRow(f"specdec-{drafter}" + ("-sampling" if sampling != Sampling() else ""), f"specdec, {what}",
                      sampling, "specdec", False, lambda d=drafter: specdec_sampler(drafter=d))
             for drafter, what in trees for sampling in (Sampling(), Sampling(0.7, 5, 0.9))]
    # block verification (Sun et al. 2025): k = 3, so that a prefix's weight below 1 and its residual matter
    rows += [AuditRow("specdec-block" + ("-sampling" if sampling != Sampling() else ""),
                      "specdec, fixed policy, model drafter, k = 3, block verification", sampling, "specdec", False,
                      lambda: specdec_sampler(k=3, verify="block"))
             for sampling in (Sampling(), Sampling(0.7, 5, 0.9))]
    hf = [("hf-assistant-defaults", "transformers, assistant model, its defaults", HF_DEFAULTS, "assistant", True),
          ("hf-assistant-temperature", "transformers, assistant model", Sampling(0.7, None, None), "assistant", False),
          ("hf-assistant-top-k", "transformers, assistant model", Sampling(1.0, 5, None), "assistant", False),
          ("hf-assistant-top-p", "transformers, assistant model", Sampling(1.0, None, 0.8), "assistant", False),
          ("hf-prompt-lookup", "transformers, prompt lookup", HF_DEFAULTS, "prompt_lookup", True),
          ("hf-early-exit", "transformers, early exit (layer 1 of the target drafts)", HF_DEFAULTS, "early_exit", True)]
    rows += [AuditRow(name, what, sampling, "transformers", False, lambda m=mode, d=defaults: transformers_sampler(m, d))
             for name, what, sampling, mode, defaults in hf]
    rows += [
        AuditRow("control-ensemble", "transformers, assistant model, assistant_ensemble_weight = 0.5 (documented "
                 "as biased)", HF_DEFAULTS, "transformers", True,
                 lambda: transformers_sampler("assistant", True, assistant_ensemble_weight=0.5)),
        AuditRow("control-alpha-residual", "specdec with the residual norm(max(0, p − a·q))", Sampling(), "specdec",
                 True, lambda: specdec_sampler(), alpha_residual=True),
    ]
    # EAGLE's published tree rule (eagle-llm's evaluate_posterior, run by specdec_site.exactness.eagle), last so that the rows
    # above keep their seeds (seed + place in the table). It processes logits with transformers' warpers, so
    # transformers' reference; with a temperature, its draw after an accepted path is known to skip them
    eagle = "EAGLE's tree rule (eagle-llm 1.2.1, evaluate_posterior), 7 nodes of its mc_sim_7b_63 tree"
    rows += [AuditRow("eagle-tree", eagle, Sampling(), "transformers", False, lambda: eagle_sampler(), family="eagle"),
             AuditRow("eagle-tree-sampling", eagle + "; its draw after an accepted path without temperature and top-p",
                      Sampling(0.7, None, 0.9), "transformers", True, lambda: eagle_sampler(), family="eagle"),
             AuditRow("eagle-tree-sampling-repaired", eagle + ", that one draw given the processed distribution",
                      Sampling(0.7, None, 0.9), "transformers", False, lambda: eagle_sampler(repaired=True),
                      family="eagle")]
    return rows


# transformers' candidate generators that the audit cannot build on a tiny random pair, and why.
NOT_BUILT = {
    "SinglePositionMultiTokenCandidateGenerator": "needs a Gemma 4 or Gemma 3n target and a Gemma 4 assistant that "
    "reads the target's shared key/value states; no tiny pair of these ships with transformers' tests here",
    "MTPCandidateGenerator": "needs a target with trained multi-token-prediction layers (num_mtp_layers in its config)",
    "DFlashTokenCandidateGenerator": "needs a DFlash draft model trained on the target's hidden states",
    "AssistedCandidateGeneratorDifferentTokenizers / UniversalSpeculativeDecodingGenerator": "need two tokenizers "
    "(text in, text out); the tiny pair shares token ids and has none",
}


def run_row(name: str, n: int, seed: int, setup: AuditSetup = AuditSetup()) -> dict:
    """One row of the table, in its own process when the stage runs rows side by side (one torch thread). The
    reproducer of a row: `python -m specdec_site.exactness.audit ROW --n N --seed SEED`."""
    import warnings

    from specdec_site.exactness.exact import one_thread
    from specdec_site.exactness.mutants import naive_rule

    row = {r.name: r for r in audit_rows()}[name]
    with one_thread(), warnings.catch_warnings(), naive_rule() if row.alpha_residual else contextlib.nullcontext():
        warnings.simplefilter("ignore")  # transformers' deprecation notices, once per generate call
        result = audit(row.sampler(), n=n, sampling=row.sampling, setup=setup, reference=row.reference, seed=seed)
    defaults = row.reference == "transformers" and row.sampling == HF_DEFAULTS  # given no setting (transformers_sampler)
    return {"name": row.name, "implementation": row.implementation,
            "settings": row.sampling.label() + (" (transformers' defaults)" if defaults else ""),
            "control": row.control, "family": row.family or ("control" if row.control else row.reference), **result}


def audit_table(n: int, seed: int, workers: int = 1, progress=None, names: Sequence[str] | None = None) -> dict:
    """Every row (or those named), each with its own seed (seed + its index in audit_rows()), in `workers`
    processes."""
    import transformers

    import specdec

    rows = [r for r in audit_rows() if names is None or r.name in names]
    index = {r.name: i for i, r in enumerate(audit_rows())}  # a row's seed does not depend on which rows run
    jobs = [(r.name, n, seed + index[r.name]) for r in rows]
    if workers > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(run_row, *job) for job in jobs]
            done = (f.result() for f in futures)
            results = list(progress(done, total=len(jobs), desc="audit", unit="row") if progress else done)
    else:
        results = [run_row(*job) for job in (progress(jobs, desc="audit", unit="row") if progress else jobs)]
    return {"setup": {**asdict(AuditSetup()), "alpha": ALPHA, "power": POWER, "samples": n},
            "versions": {"specdec": specdec.__version__, "transformers": transformers.__version__,
                         "torch": torch.__version__},
            "rows": results, "not_built": NOT_BUILT}


def main(argv=None) -> int:
    """Rerun rows of the audit table: `python -m specdec_site.exactness.audit [ROW ...] [--n N] [--seed S]`."""
    import argparse
    import json

    from specdec_site.numbers import integer

    names = [r.name for r in audit_rows()]
    parser = argparse.ArgumentParser(prog="python -m specdec_site.exactness.audit", description=main.__doc__.split(":")[0])
    parser.add_argument("rows", nargs="*", metavar="ROW", help=f"rows to run (default all): {', '.join(names)}")
    parser.add_argument("--n", type=integer, default=4000, help="continuations per row (default 4000, the build's; a "
                        "row whose draws fill fewer than two bins is 'inconclusive')")
    parser.add_argument("--seed", type=integer, default=0, help="seed of the first row; row i uses seed + i (default 0)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.rows) - set(names))
    if unknown or args.n < 1 or args.seed < 0:
        parser.error(f"unknown rows {', '.join(unknown)[:200]}" if unknown else
                     "--n must be >= 1" if args.n < 1 else "--seed must be >= 0")
    seeds = {name: args.seed + i for i, name in enumerate(names)}  # the seeds audit_table gives the full table
    for name in args.rows or names:
        print(json.dumps(run_row(name, args.n, seeds[name]), allow_nan=False), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
