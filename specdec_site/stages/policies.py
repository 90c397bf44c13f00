"""Stage `policies`: choosing k. Fixed k vs each draft-length policy vs the oracle, on public prompt sets.

Per prompt, interleaved, the same packed target object for every variant, one greedy target-only run as
the baseline of every variant of that prompt (target-only decoding makes the same forward passes whatever
the sampling). Two sets of prompts per domain:

- the matrix (cfg.policy_prompts, the first prompts of each set), greedy: Hugging Face assisted generation
  with the same draft objects (int8 and fp32; its default settings, and a constant k equal to specdec's
  fixed k), Hugging Face prompt lookup (no model), specdec with each policy and each drafter, and the fixed-k
  sweep (k in cfg.sweep_ks with the default draft; its k = cfg.fixed_k run is the fixed variant's run, and
  a one-token target run per prompt gives the target's cost of a decoding step: sweep.py);
- the core set (cfg.core_prompts, the matrix's prompts and the next ones): on the prompts past the
  matrix, only Hugging Face's default with the int8 draft, specdec's fixed k (the default) and adaptive
  policy with the int8 draft, and specdec's best drafter with the adaptive policy (the best median on the matrix's prompts of that
  domain, chosen before the core prompts run).

Sampled (T = cfg.sampled_temperature), on every prompt: specdec's adaptive policy (and the best drafter if it
is another), same seed. For every specdec run the oracle bound (eq. 13 of the math page) is computed from its
recorded steps, at its own costs and the verify-time slope of all the prompt's specdec runs (oracle).
"""

from __future__ import annotations

from specdec.theory import VerifyCost, oracle_steps
from specdec_site.policy_variants import (  # noqa: F401
    BEST_DRAFTER_CANDIDATES,
    CORE_HF,
    CORE_SPECDEC,
    HF_ASSISTED,
    HF_VARIANTS,
    SAME_DRAFT_AS_HF,
    VARIANTS,
    best_drafter,
    over_hf_key,
    summarize,
)
from specdec_site.prompts import prompt_ids
from specdec_site.public_prompts import SOURCES, passed_over, public_prompts
from specdec_site.stages.hf import HF_DEFAULT_DESCRIPTION, HF_PROMPT_LOOKUP, HF_SCHEDULES, hf_assisted, hf_prompt_lookup
from specdec_site.stages.sweep import summarize_sweep


def make_drafter(ctx, name: str):
    from specdec import HybridDrafter, NgramDrafter

    model = ctx.default_draft
    return {"int8": lambda: model, "fp32": lambda: ctx.drafts["fp32"], "ngram": NgramDrafter,
            "hybrid": lambda: HybridDrafter(model)}[name]()


def verify_slope(traces) -> float:
    """b of the verify-time line a + b k, fitted on the steps (after the first) of every specdec run of one prompt,
    greedy and sampled: one target and one prompt, so one cost per extra draft. A single run's steps can span too
    few k for a slope (an adaptive run that drafts 1 at almost every step): there, one slow step once made the slope
    0.54 s per token, and the run's oracle 2.2 times slower than the run itself."""
    points = [(s.k, s.verify_seconds) for trace in traces for s in trace.steps[1:]]
    return VerifyCost([k for k, _ in points], [v for _, v in points]).slope if points else 0.0


def draft_costs(steps) -> dict[str, float]:
    """The run's own draft seconds per drafted token, per source ("model", "ngram"), over its steps that drafted."""
    out = {}
    for source in {s.source for s in steps if s.k > 0}:
        mine = [s for s in steps if s.k > 0 and s.source == source]
        out[source] = sum(s.draft_seconds for s in mine) / sum(s.k for s in mine)
    return out


def oracle(trace, seconds: float, slope: float) -> dict:
    """The run's time with each step (after the first) drafting exactly what gets accepted (eq. 13).

    The first step (prefill) and everything outside the steps keep their measured time. The other steps are
    re-costed on a model that gives back the run's own step time at its own draft lengths:
    1. verify: the line a + b k with b = `slope` (verify_slope, the prompt's) and the run's own a, the mean of
       v - b k over its steps, so the line sums to the run's measured verify time. (An a taken from the prompt's
       other runs carries their level of host speed: it once made n-gram runs' oracles up to 4% slower than them.)
    2. draft: each token at the run's own cost per token of the source that proposed it (draft_costs): a hybrid
       run's n-gram tokens at the n-gram's cost, not the model's.
    3. agreement: a drafted token that was accepted agrees; so does a bonus token after a drafted block (the draft
       was never asked: this can only make the oracle faster); a token of a step that drafted nothing (no n-gram
       match) does not.
    4. the oracle drafts an agreed token where drafting it (t_d + b) costs less than a target pass (a), else ends
       the step there; a disagreeing token ends a step. The run itself is one such choice plus its rejected drafts,
       so, on this model, no run is faster than its oracle.
    """
    steps = trace.steps[1:]
    if not steps:
        return {"lengths": [], "seconds": seconds, "draft_seconds_per_token": 0.0,
                "verify_intercept": None, "verify_slope": None}
    intercept = sum(s.verify_seconds - slope * s.k for s in steps) / len(steps)
    per_source = draft_costs(steps)
    agree, cost = [], []  # per emitted token: agreement (3), and its draft cost if the oracle drafts it (2)
    for s in steps:
        d = per_source.get(s.source, 0.0)
        agree += [True] * s.n_accepted + [s.bonus_token is not None and s.k > 0] * (len(s.emitted) > s.n_accepted)
        cost += [d] * len(s.emitted)
    drafted = [a and d + slope < intercept for a, d in zip(agree, cost)]  # (4)
    if drafted and drafted[-1]:
        drafted[-1] = False  # the stream's last token comes from the last step's target pass
    lengths = oracle_steps(drafted)
    draft_seconds = sum(d for drafted_here, d in zip(drafted, cost) if drafted_here)
    step_time = sum(s.draft_seconds + s.verify_seconds for s in steps)
    oracle_time = seconds - step_time + draft_seconds + sum(intercept + slope * n for n in lengths)
    # the oracle's mean draft cost per token: oracle_seconds(lengths, it, line) is its step time (values.py re-costs
    # the steps held to a cap at it)
    per_token = draft_seconds / sum(lengths) if sum(lengths) else 0.0
    return {"lengths": lengths, "seconds": oracle_time, "draft_seconds_per_token": per_token,
            "verify_intercept": intercept, "verify_slope": slope}


def add_oracles(runs: list[tuple]) -> None:
    """Each (entry, trace, base_seconds) of one prompt gets its oracle bound (eq. 13), at the prompt's verify slope."""
    slope = verify_slope([trace for _, trace, _ in runs])
    for entry, trace, base_seconds in runs:
        bound = oracle(trace, entry["seconds"], slope)
        entry.update(oracle_speedup=base_seconds / bound["seconds"],
                     measured_over_oracle=bound["seconds"] / entry["seconds"], oracle=bound)


def step_summary(trace) -> list[dict]:
    return [{"k": s.k, "budget": s.budget, "n_accepted": s.n_accepted, "source": s.source,
             "draft_seconds": s.draft_seconds, "verify_seconds": s.verify_seconds} for s in trace.steps]


def run_variant(ctx, cfg, ids, n, name, sampling, base_seconds, reference, runs: list, traces=None) -> dict:
    """One specdec run of VARIANTS[name], timed, with its step summary; (entry, trace, base_seconds) goes to `runs`, for the oracle
    bound (add_oracles, once the prompt's runs are done). `traces` (a dict), if given, keeps the run's (seconds,
    tokens, trace) under the variant's name."""
    drafter, policy, k = VARIANTS[name]
    k = cfg.fixed_k if k is None else k
    # record_top=0: the steps' numbers and timings, without top-10 lists (they would cost time here)
    seconds, (tokens, trace) = ctx.run_spec(make_drafter(ctx, drafter), ids, n, k, sampling, ctx.seed, policy=policy,
                                            record_top=0)
    if traces is not None:
        traces[name] = (seconds, tokens, trace)
    entry = {
        "seconds": seconds, "speedup": base_seconds / seconds,
        "same_output": tokens.tolist() == reference.tolist() if reference is not None else None,
        "alpha": trace.n_accepted / trace.n_drafted if trace.n_drafted else None,
        "tokens_per_target_pass": trace.tokens_per_target_pass, "drafts_per_step": trace.n_drafted / len(trace.steps),
        "steps": step_summary(trace),
    }
    runs.append((entry, trace, base_seconds))
    return entry


def run_hf(ctx, cfg, ids, n, name):
    """(seconds, new tokens) of one Hugging Face variant."""
    if name == "hf_prompt_lookup":
        return hf_prompt_lookup(ctx, ids, n)
    schedule, drafter = HF_ASSISTED[name]
    return hf_assisted(ctx, ids, n, cfg.fixed_k if schedule else None, schedule, make_drafter(ctx, drafter))


def run_sweep(ctx, cfg, ids, n, reference, traces) -> dict:
    """The fixed-k sweep on one prompt, with the default draft: {k: (seconds, tokens, trace)}; the k of the fixed
    variant is its run (traces["fixed"]), the others run here. Also "first": the target's time for one token."""
    greedy = cfg.modes["greedy"]
    runs = {}
    for k in cfg.sweep_ks:
        if k == cfg.fixed_k and "fixed" in traces:
            runs[k] = traces["fixed"]
            continue
        seconds, (tokens, trace) = ctx.run_spec(ctx.default_draft, ids, n, k, greedy, ctx.seed, record_top=0)
        runs[k] = (seconds, tokens, trace)
    runs["first"] = ctx.run_target(ids, 1, greedy, ctx.seed)[0]  # prefill + first token
    return runs


def run_prompt(ctx, cfg, prompt, hf_names, names, sampled_names, prompt_set, sweep: bool = False) -> dict:
    """One prompt, interleaved: the target-only run, then each named HF and specdec variant, greedy, then (with
    `sweep`) the fixed-k sweep, then the sampled variants. Every speedup divides the same target-only run (greedy;
    sampling adds no forward pass). With `sweep`, the row's "sweep_runs" (not written: run() summarizes them)."""
    ids = prompt_ids(ctx, cfg, prompt)
    n, greedy, sampled = cfg.policy_tokens, cfg.modes["greedy"], cfg.modes["sampled"]
    base_seconds, reference = ctx.run_target(ids, n, greedy, ctx.seed)
    row = {"prompt": prompt["id"], "set": prompt_set, "prompt_tokens": int(ids.shape[0]),
           "target_seconds": base_seconds, "variants": {}}
    for name in hf_names:
        seconds, out = run_hf(ctx, cfg, ids, n, name)
        row["variants"][name] = {"seconds": seconds, "speedup": base_seconds / seconds,
                                 "same_output": out.tolist() == reference.tolist()}
    traces, runs = {}, []
    for name in names:
        row["variants"][name] = run_variant(ctx, cfg, ids, n, name, greedy, base_seconds, reference, runs, traces)
    if sweep:
        row["sweep_runs"] = {**run_sweep(ctx, cfg, ids, n, reference, traces), "reference": reference}
    # Sampled: the output is a sample, so not compared token by token (the exactness stage tests its distribution).
    row["sampled"] = {"temperature": sampled["temperature"], "target_seconds": base_seconds,
                      "variants": {name: run_variant(ctx, cfg, ids, n, name, sampled, base_seconds, None, runs)
                                   for name in sampled_names}}
    add_oracles(runs)
    return row


def run(ctx, cfg) -> dict:
    from transformers import GenerationConfig

    models = {"int8": ctx.default_draft, "fp32": ctx.drafts["fp32"]}
    if models["int8"] is models["fp32"]:
        # No int8 draft (CUDA, or --no-int8): the default draft is the fp32 one, and the rows named for the default
        # draft are its rows (the artifact's draft_variant says which); the fp32 duplicates are not run.
        del models["fp32"]
    drafters = {*models, "ngram", "hybrid"}
    variants = [name for name, (drafter, _, _) in VARIANTS.items() if drafter in drafters]
    hf_variants = [name for name in HF_VARIANTS if name not in HF_ASSISTED or HF_ASSISTED[name][1] in drafters]
    saved = {name: getattr(m, "generation_config", None) for name, m in models.items()}
    for m in models.values():
        m.generation_config = GenerationConfig()  # transformers' assisted-generation defaults, one per draft object
    try:
        warm = prompt_ids(ctx, cfg, public_prompts("code", 0, 1)[0])
        for drafter in models:
            ctx.run_spec(make_drafter(ctx, drafter), warm, 4, 16, cfg.modes["greedy"], 0, record=False,
                         policy="adaptive")
        for name in hf_variants:
            run_hf(ctx, cfg, warm, 4, name)
        domains, sweeps = {}, []
        for domain, count in cfg.core_prompts.items():
            n_matrix = cfg.policy_prompts[domain]
            if count < n_matrix:
                raise ValueError(f"core_prompts[{domain!r}] = {count} < policy_prompts = {n_matrix}: the core set "
                                 "starts with the matrix's prompts")
            prompts = public_prompts(domain, cfg.policy_prompt_start, count)
            rows, best, core, sampled_core = [], None, None, None
            for i, p in enumerate(ctx.tqdm(prompts, desc=f"policies {domain}", unit="prompt")):
                if i < n_matrix:
                    rows.append(run_prompt(ctx, cfg, p, hf_variants, variants, ("adaptive",), "matrix", sweep=True))
                    continue
                if best is None:  # chosen on the matrix's prompts, before any core prompt runs
                    best = best_drafter(summarize(rows, ctx.seed))
                    sampled_core = list(dict.fromkeys(("adaptive", best)))
                    core = list(dict.fromkeys((*CORE_SPECDEC, best)))
                rows.append(run_prompt(ctx, cfg, p, CORE_HF, core, sampled_core, "core"))
            best = best or best_drafter(summarize(rows, ctx.seed))
            sweeps.append(sweep_of(cfg, domain, [r.pop("sweep_runs") for r in rows if "sweep_runs" in r],
                                   [r for r in rows if r["set"] == "matrix"]))
            sampled = [{"prompt": r["prompt"], "variants": r["sampled"]["variants"]} for r in rows]
            domains[domain] = {"source": SOURCES[domain], "prompts": prompts, "matrix_prompts": n_matrix,
                               "skipped_indices": passed_over(prompts, cfg.policy_prompt_start),
                               "best_drafter": best, "rows": rows,
                               "summary": summarize(rows, ctx.seed), "sampled_summary": summarize(sampled, ctx.seed)}
    finally:
        for name, m in models.items():
            m.generation_config = saved[name]
    hf_settings = {name: HF_SCHEDULES[schedule](cfg.fixed_k) if schedule else None
                   for name, (schedule, _) in HF_ASSISTED.items() if name in hf_variants}
    return {"draft_variant": ctx.default_draft_name, "new_tokens": cfg.policy_tokens, "mode": "greedy",
            "baseline": "one greedy target-only run per prompt, shared by every variant of that prompt, sampled too",
            "variants": {name: {"drafter": d, "policy": p, "k": cfg.fixed_k if k is None else k}
                         for name, (d, p, k) in VARIANTS.items() if name in variants},
            "core_variants": ["target_only", *CORE_HF, *CORE_SPECDEC, "the domain's best_drafter"],
            "sampled_variants": ["adaptive", "the domain's best_drafter"], "sampled_temperature": cfg.sampled_temperature,
            "hf": {**{name: (HF_DEFAULT_DESCRIPTION if schedule is None else
                             f"num_assistant_tokens={cfg.fixed_k}, constant schedule, no confidence stop")
                      + f"; the same {drafter} draft object" for name, (schedule, drafter) in HF_ASSISTED.items()
                      if name in hf_variants},
                   "hf_prompt_lookup": "prompt lookup, no draft model: transformers' n-gram matcher, "
                                       + ", ".join(f"{k}={v}" for k, v in HF_PROMPT_LOOKUP.items()),
                   "settings": {**hf_settings, "hf_prompt_lookup": HF_PROMPT_LOOKUP}},
            "same_draft_as_hf": [name for name in SAME_DRAFT_AS_HF if name in variants],
            "domains": domains, "sweeps": sweeps}


def sweep_of(cfg, domain: str, sweep_runs: list[dict], matrix_rows: list[dict]) -> dict:
    """The k sweep of a domain from its matrix rows' runs (sweep.summarize_sweep), greedy."""
    runs = {k: ([r[k][0] for r in sweep_runs], [r[k][2] for r in sweep_runs]) for k in cfg.sweep_ks}
    equal = [r[k][1].tolist() == r["reference"].tolist() for r in sweep_runs for k in cfg.sweep_ks]
    return summarize_sweep(domain, cfg.modes["greedy"], cfg.policy_tokens, [r["prompt"] for r in matrix_rows],
                           [r["target_seconds"] for r in matrix_rows], [r["first"] for r in sweep_runs], runs, equal)
