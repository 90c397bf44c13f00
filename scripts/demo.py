"""Decode a code prompt with the default pair; print every policy and drafter side by side.

    python scripts/demo.py [--k 4] [--cap 16] [--new 48] [--reps 3]

Greedy, so every speculative output must equal the target's own output token for token (checked).
Speed is reported as ratios to the target-only run in this process, medians of --reps runs,
interleaved so that machine noise hits every variant alike.
"""

import argparse
import statistics
import time

import torch

from specdec import (
    HybridDrafter,
    NgramDrafter,
    autoregressive_generate,
    load_pair,
    prepare_cpu_drafts,
    speculative_generate,
)
from specdec_site.numbers import integer

PROMPT = 'def merge_sorted(a: list[int], b: list[int]) -> list[int]:\n    """Merge two sorted lists into one sorted list."""\n'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=integer, default=4, help="k of the fixed policy (Leviathan's gamma)")
    parser.add_argument("--cap", type=integer, default=16, help="the most drafts per step for the other policies")
    parser.add_argument("--new", type=integer, default=48, help="new tokens to generate")
    parser.add_argument("--reps", type=integer, default=3, help="timed repetitions of each variant (median reported)")
    args = parser.parse_args()
    if min(args.k, args.cap, args.new, args.reps) < 1:
        parser.error("--k, --cap, --new and --reps must be >= 1")

    target, draft = load_pair()
    tok = target.tokenizer
    ids = tok(PROMPT, return_tensors="pt").input_ids[0]
    drafts = prepare_cpu_drafts(target.model, draft.model)  # packed kernels for target and fp32 draft; int8 copy
    # variant name -> (draft or drafter factory, policy, k)
    variants = {
        "fixed k, fp32 draft": (lambda: drafts["fp32"], "fixed", args.k),
        "fixed k, int8 draft": (lambda: drafts["int8"], "fixed", args.k),
        "confidence, int8": (lambda: drafts["int8"], "confidence", args.cap),
        "heuristic, int8": (lambda: drafts["int8"], "heuristic", args.cap),
        "adaptive, int8": (lambda: drafts["int8"], "adaptive", args.cap),
        "adaptive, n-gram": (NgramDrafter, "adaptive", args.cap),
        "adaptive, hybrid": (lambda: HybridDrafter(drafts["int8"]), "adaptive", args.cap),
    }

    def run(name):
        gen = torch.Generator().manual_seed(0)
        start = time.perf_counter()
        if name == "target only":
            out = autoregressive_generate(target.model, ids, max_new_tokens=args.new, temperature=0, generator=gen)
            return time.perf_counter() - start, out, None
        make, policy, k = variants[name]
        out, trace = speculative_generate(target.model, make(), ids, max_new_tokens=args.new, k=k, policy=policy,
                                          temperature=0, generator=gen, record=True)
        return time.perf_counter() - start, out, trace

    names = ["target only", *variants]
    for name in names:  # warm-up
        run(name)
    times = {n: [] for n in names}
    outputs, traces = {}, {}
    for _ in range(args.reps):
        for name in names:
            seconds, outputs[name], traces[name] = run(name)
            times[name].append(seconds)
    base = statistics.median(times["target only"])
    print(f"prompt: {PROMPT!r}\noutput: {tok.decode(outputs['target only'])!r}\n")
    print(f"{'variant':<22} {'median s':>9} {'speedup':>8} {'accept':>7} {'drafts/step':>12} {'tok/pass':>9} {'same output':>12}")
    for name in names:
        med = statistics.median(times[name])
        tr = traces[name]
        same = outputs[name].tolist() == outputs["target only"].tolist()
        alpha = f"{tr.acceptance_rate:.2f}" if tr and tr.n_drafted else "-"
        per_step = f"{tr.n_drafted / len(tr.steps):.2f}" if tr else "-"
        tpp = f"{tr.tokens_per_target_pass:.2f}" if tr else "1.00"
        print(f"{name:<22} {med:>9.2f} {base / med:>7.2f}x {alpha:>7} {per_step:>12} {tpp:>9} {str(same):>12}")
    print(f"\nfixed k={args.k}, other policies capped at {args.cap}; {args.new} new tokens, greedy, median of "
          f"{args.reps} runs, torch {torch.__version__}, {torch.get_num_threads()} threads, CPU")


if __name__ == "__main__":
    main()
