"""Decode a code prompt with the default pair; print the speedup measured side by side.

    python scripts/demo.py [--k 4] [--new 48] [--reps 3]

Greedy, so the speculative output must equal the target's own output token for token (checked).
Speed is reported as ratios to the target-only run in this process, medians of --reps runs,
interleaved so that machine noise hits every variant alike.
"""

import argparse
import statistics
import time

import torch

from specdec import autoregressive_generate, load_pair, pack_linear_layers, quantize_draft, speculative_generate

PROMPT = 'def merge_sorted(a: list[int], b: list[int]) -> list[int]:\n    """Merge two sorted lists into one sorted list."""\n'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=4, help="draft tokens per step (Leviathan's gamma)")
    parser.add_argument("--new", type=int, default=48, help="new tokens to generate")
    parser.add_argument("--reps", type=int, default=3, help="timed repetitions of each variant (median reported)")
    args = parser.parse_args()

    target, draft = load_pair()
    tok = target.tokenizer
    ids = tok(PROMPT, return_tensors="pt").input_ids[0]
    drafts = {"int8 draft": quantize_draft(draft.model)}  # from the unpacked fp32 weights
    # oneDNN-packed float32 kernels (specdec/fast.py) for the target, its baseline and the fp32 draft alike
    pack_linear_layers(target.model)
    drafts["fp32 draft"] = pack_linear_layers(draft.model)

    def run(name):
        gen = torch.Generator().manual_seed(0)
        start = time.perf_counter()
        if name == "target only":
            out, trace = autoregressive_generate(target.model, ids, max_new_tokens=args.new, temperature=0, generator=gen), None
        else:
            out, trace = speculative_generate(target.model, drafts[name], ids, max_new_tokens=args.new, k=args.k,
                                              temperature=0, generator=gen, record=True)
        return time.perf_counter() - start, out, trace

    names = ["target only", "fp32 draft", "int8 draft"]
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
    print(f"{'variant':<12} {'median s':>9} {'speedup':>8} {'accept':>7} {'tok/pass':>9} {'same output':>12}")
    for name in names:
        med = statistics.median(times[name])
        tr = traces[name]
        same = outputs[name].tolist() == outputs["target only"].tolist()
        alpha = f"{tr.acceptance_rate:.2f}" if tr else "-"
        tpp = f"{tr.tokens_per_target_pass:.2f}" if tr else "1.00"
        print(f"{name:<12} {med:>9.2f} {base / med:>7.2f}x {alpha:>7} {tpp:>9} {str(same):>12}")
    print(f"\nk={args.k}, {args.new} new tokens, greedy, median of {args.reps} runs, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU")


if __name__ == "__main__":
    main()
