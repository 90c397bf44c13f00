"""How long the packed target takes to score m new tokens, with and without padding to MIN_ROWS rows.

A benchmark script, not a test: it loads the default target (CPU), packs its Linear layers once, then scores
m = 1..9 new tokens after a 100-token cached prefix with the layers' min_rows set to 1 (no padding) and to
specdec's MIN_ROWS in turn, interleaved, and prints each median and their ratio (noisy machines: read the
ratio). The weights are the same object throughout; only the padding changes.

    HF_HUB_OFFLINE=1 python scripts/bench_kernels.py --reps 9
"""

from __future__ import annotations

import argparse
import statistics
import time

from specdec_site.numbers import integer


def time_forward(lm, seq, prefix: int, m: int) -> float:
    lm.rollback(prefix)
    start = time.perf_counter()
    lm.logits(seq[:, : prefix + m], m)
    return time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=integer, default=9, help="timed repetitions per row count and kernel (>= 3)")
    parser.add_argument("--rows", type=integer, nargs="+", default=list(range(1, 10)))
    args = parser.parse_args(argv)
    if args.reps < 3 or min(args.rows) < 1:
        parser.error("--reps must be >= 3 and every --rows >= 1")

    import torch

    from specdec.cache import CachedLM, resolve_vocab_size
    from specdec.kernels import MIN_ROWS, PackedLinear, pack_linear_layers
    from specdec.models import DEFAULT_TARGET, load_model

    target = pack_linear_layers(load_model(DEFAULT_TARGET).model)
    layers = [m for m in target.modules() if isinstance(m, PackedLinear)]
    lm = CachedLM(target, resolve_vocab_size(target), "target")
    prefix = 100
    seq = torch.randint(100, 5000, (1, prefix + max(args.rows)), generator=torch.Generator().manual_seed(0))
    lm.logits(seq[:, :prefix], 1)
    times = {}
    for rep in range(args.reps + 1):  # the first round warms both kernels up and is dropped
        for m in args.rows:
            for min_rows in (1, MIN_ROWS):
                for layer in layers:
                    layer.min_rows = min_rows
                elapsed = time_forward(lm, seq, prefix, m)
                if rep:
                    times.setdefault((m, min_rows), []).append(elapsed)
    print(f"{'rows':>4} {'unpadded ms':>12} {f'padded to {MIN_ROWS} ms':>16} {'unpadded / padded':>18}")
    for m in args.rows:
        plain, padded = (statistics.median(times[(m, r)]) for r in (1, MIN_ROWS))
        print(f"{m:>4} {plain * 1e3:>12.1f} {padded * 1e3:>16.1f} {plain / padded:>18.2f}")


if __name__ == "__main__":
    main()
