"""The stages of a data build, one artifact each, all with one signature: run(ctx, cfg) -> dict.

  traces     recorded speculative_generate runs (every step: drafts, q, p, draws, fates, top-10s, timings),
             fixed k and the adaptive policy
  benchmark  fixed-k sweep vs target-only on the public prompts (benchmark.py)
  policies   each draft-length policy and drafter vs HF at equal draft vs the oracle, public prompts (policies_stage.py)
  exactness  empirical vs exact distributions of tiny models, correct rule vs naive residual
  notebook   executes notebooks/walkthrough.ipynb (the site shows the executed copy)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import benchmark, policies_stage
from .meta import ROOT
from .prompts import PROMPTS, encode, eos_ids

NOTEBOOK_SOURCE = ROOT / "notebooks" / "walkthrough.ipynb"
NOTEBOOK_SITE_COPY = ROOT / "docs" / "notebooks" / "walkthrough.ipynb"
DEFAULT_CPU_OUT = ROOT / "docs" / "data" / "cpu"


# ---------------------------------------------------------------- traces


def token_texts(tokenizer, ids: list[int]) -> list[str]:
    """Each token's own text (bytes of partial UTF-8 characters shown as the replacement char)."""
    return [tokenizer.decode([i]) for i in ids]


def trace_vocab(tokenizer, ids, tokens, record: dict) -> dict:
    """Text of every token id the visualizer can show for a run."""
    vocab = set(ids.tolist()) | set(tokens.tolist())
    for s in record["steps"]:
        vocab |= set(s["draft_tokens"])
        for top in s["top_p"] + s["top_q"] + ([s["top_residual"]] if s["top_residual"] else []):
            vocab |= set(top["ids"])
    return {str(i): t for i, t in zip(sorted(vocab), token_texts(tokenizer, sorted(vocab)))}


def trace_jobs(cfg) -> list[tuple]:
    """(domain, prompt, mode, policy, k): fixed k on every trace prompt, the adaptive policy on the first."""
    jobs = [(domain, p, mode, "fixed", cfg.trace_k) for domain in PROMPTS
            for p in PROMPTS[domain][: cfg.trace_prompts[domain]] for mode in cfg.modes]
    jobs += [(domain, PROMPTS[domain][0], mode, "adaptive", cfg.adaptive_trace_k) for domain in PROMPTS
             for mode in cfg.modes]
    return jobs


def run_traces(ctx, cfg) -> dict:
    tok = ctx.target.tokenizer
    eos = eos_ids(tok)  # traces stop at the end-of-turn token, as a user's generation would
    runs = []
    for domain, prompt, mode, policy, k in ctx.tqdm(trace_jobs(cfg), desc="traces", unit="run"):
        ids = encode(tok, prompt, ctx.device)
        sampling = cfg.modes[mode]
        seconds, (tokens, trace) = ctx.run_spec(ctx.default_draft, ids, cfg.trace_tokens, k, sampling, ctx.seed,
                                                eos=eos, policy=policy)
        record = trace.to_dict()
        greedy_equal, target_seconds = None, None
        if mode == "greedy":
            target_seconds, reference = ctx.run_target(ids, cfg.trace_tokens, sampling, ctx.seed, eos=eos)
            greedy_equal = reference.tolist() == tokens.tolist()
        suffix = "" if policy == "fixed" else f"-{policy}"
        runs.append({
            "id": f"{prompt['id']}-{mode}{suffix}", "domain": domain, "mode": mode, "policy": policy,
            "prompt": prompt, "sampling": sampling, "prompt_tokens": ids.tolist(), "prompt_text": tok.decode(ids),
            "tokens": tokens.tolist(), "text": tok.decode(tokens), "seconds": seconds,
            "target_seconds": target_seconds, "eos_token_ids": eos, "equals_target_greedy": greedy_equal,
            "vocab": trace_vocab(tok, ids, tokens, record), "trace": record,
        })
    return {"draft_variant": ctx.default_draft_name, "runs": runs}


# ---------------------------------------------------------------- exactness


EXACT_SETUP = {"vocab": 8, "new_tokens": 3, "prompt": [0, 3, 5], "k": 2, "temperature": 1.0,
               "target_seed": 11, "draft_seed": 12, "init_scale": 0.5}


def run_exactness(ctx, cfg) -> dict:
    """Tiny random transformers: empirical vs exact sequence distributions, correct rule vs naive residual."""
    import torch

    from specdec import SamplingConfig
    from specdec.exact import (
        chi_square_test,
        counterexample,
        first_token_distribution,
        make_tiny_lm,
        naive_residual,
        sample_sequence_counts,
        sequence_distribution,
    )

    s = EXACT_SETUP
    prompt = torch.tensor(s["prompt"])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: threads cost more than they save
    try:
        target = make_tiny_lm(s["target_seed"], s["vocab"], s["init_scale"])
        draft = make_tiny_lm(s["draft_seed"], s["vocab"], s["init_scale"])
        exact = sequence_distribution(target, prompt, s["new_tokens"], SamplingConfig(s["temperature"]))
        order = sorted(exact, key=exact.get, reverse=True)
        rules = {}
        for rule, fn in ctx.tqdm([("correct", None), ("naive_residual", naive_residual)], desc="exactness", unit="rule"):
            counts = sample_sequence_counts(target, draft, prompt, s["new_tokens"], cfg.exact_samples, seed=ctx.seed,
                                            k=s["k"], temperature=s["temperature"], **({"residual_fn": fn} if fn else {}))
            rules[rule] = {**chi_square_test(counts, exact),
                           "empirical": [counts.get(q, 0) / cfg.exact_samples for q in order]}
    finally:
        torch.set_num_threads(threads)
    # Known wrong variants of the rule against the quick exactness checks (the tests run the same).
    from specdec.mutants import mutation_table

    mutants = mutation_table(sampled_runs=cfg.mutation_sampled_runs, progress=ctx.tqdm)
    # The counterexample of the math page, enumerated exactly through verify_draft.
    p, q = counterexample()
    return {
        "setup": {**s, "models": f"random LlamaForCausalLM (specdec.exact.make_tiny_lm), 2 layers, hidden 16, "
                                 f"init range {s['init_scale']}, seeds {s['target_seed']} (target) / {s['draft_seed']} (draft)"},
        "sequences": ["".join(map(str, seq)) for seq in order],
        "exact": [exact[seq] for seq in order],
        "rules": rules,
        "mutants": mutants,
        "counterexample": {"p": p[0].tolist(), "q": q[0].tolist(), "correct": first_token_distribution(p, q).tolist(),
                           "naive_residual": first_token_distribution(p, q, naive_residual).tolist()},
    }


# ---------------------------------------------------------------- notebook


def run_notebook(ctx, cfg) -> dict:
    """Execute the walkthrough in a fresh kernel (which loads the models itself: ours are freed first)."""
    import nbformat
    from nbconvert.preprocessors import ExecutePreprocessor

    ctx.release()
    nb = nbformat.read(NOTEBOOK_SOURCE, as_version=4)
    ExecutePreprocessor(timeout=1200, kernel_name="python3").preprocess(nb, {"metadata": {"path": str(ROOT)}})
    return dict(nb)


# ---------------------------------------------------------------- the table of stages


def _json_path(name: str) -> Callable[[Path], Path]:
    return lambda out: out / f"{name}.json"


def _notebook_path(out: Path) -> Path:
    """The executed notebook goes to the site for the default folder, beside the artifacts otherwise."""
    return NOTEBOOK_SITE_COPY if out.resolve() == DEFAULT_CPU_OUT.resolve() else out / "walkthrough.ipynb"


def _embed_top(data: dict, meta: dict) -> dict:
    return {"metadata": meta, **data}


def _embed_notebook(nb: dict, meta: dict) -> dict:
    nb["metadata"]["specdec"] = {"metadata": meta}
    return nb


def _meta_top(data: dict) -> dict:
    return data["metadata"]


def _meta_notebook(data: dict) -> dict:
    return data["metadata"]["specdec"]["metadata"]


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable  # run(ctx, cfg) -> dict: the artifact's content
    path: Callable[[Path], Path]  # artifact folder -> the file it writes
    embed: Callable[[dict, dict], dict] = _embed_top  # (content, metadata) -> the JSON written
    read_meta: Callable[[dict], dict] = _meta_top  # written JSON -> its metadata
    models: bool = True  # needs the real pair (loaded on first use)
    inputs: tuple = ()  # files whose sha256 enters the config hash


STAGES = {
    "traces": Stage("traces", run_traces, _json_path("traces")),
    "benchmark": Stage("benchmark", benchmark.run, _json_path("benchmark")),
    "policies": Stage("policies", policies_stage.run, _json_path("policies")),
    "exactness": Stage("exactness", run_exactness, _json_path("exactness"), models=False),
    "notebook": Stage("notebook", run_notebook, _notebook_path, _embed_notebook, _meta_notebook, models=False,
                      inputs=(NOTEBOOK_SOURCE,)),
}
