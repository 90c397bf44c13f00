"""The cost curve of the pair's architectures on another device: one forward pass against the rows it scores.

    python scripts/measure_cost_curve.py --device cuda --out docs/data/cuda/cost-curve.json

A pass's time depends on the architecture, the dtype, the device and the rows, not on the weights' values, so this
builds the target's and the draft's architectures (their config.json) with random weights and times them as the trees
stage times the real pair (specdec_site.cost_curve.measure_pass_seconds: the decoder's own cached pass with the tree
mask, rows interleaved, medians of repetitions). The Benchmark's Trees section puts the curve beside this machine's
and runs the cost model on it with the acceptance measured on the real pair. It is a timing, not a build stage: its
file records that the weights were random. By default the architectures are those the trees stage recorded
(docs/data/cpu/trees.json); --target-config / --draft-config take a config.json each instead.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from specdec_site.numbers import integer
from specdec_site.paths import ROOT


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="torch device (default cuda)")
    parser.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--trees", default=str(ROOT / "docs/data/cpu/trees.json"),
                        help="a trees artifact whose recorded architectures to time (default the committed CPU one)")
    parser.add_argument("--target-config", help="the target's config.json (instead of --trees)")
    parser.add_argument("--draft-config", help="the draft's config.json (instead of --trees)")
    parser.add_argument("--reps", type=integer, default=20, help="timed repetitions per row count (default 20)")
    parser.add_argument("--prefix", type=integer, default=128, help="cached prefix tokens before each pass (default 128)")
    return parser.parse_args(argv)


def architectures(args) -> dict:
    if args.target_config or args.draft_config:
        if not (args.target_config and args.draft_config):
            raise SystemExit("give both --target-config and --draft-config, or neither")
        return {role: json.loads(Path(path).read_text()) for role, path in
                (("target", args.target_config), ("draft", args.draft_config))}
    return json.loads(Path(args.trees).read_text())["architectures"]


def random_model(config: dict, dtype, device):
    import torch
    import transformers

    config = {k: v for k, v in config.items() if k not in ("dtype", "torch_dtype", "_name_or_path")}
    cfg = transformers.AutoConfig.for_model(config.pop("model_type"), **config)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype)
    return model.eval()


def main(argv=None) -> int:
    args = parse_args(argv)
    import datetime
    import platform

    import torch
    import transformers

    from specdec_site.cost_curve import ROWS, measure_pass_seconds
    from specdec_site.engine.meta import device_name, git_state

    arch = architectures(args)
    device, dtype = torch.device(args.device), getattr(torch, args.dtype)
    out = {"metadata": {"kind": "cost curve", "weights": "random (a pass's time does not depend on the weights' "
                                                          "values): timing only",
                        "device": device_name(device), "device_type": device.type, "dtype": args.dtype,
                        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                                     "python": platform.python_version()},
                        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                        "git": git_state(), "command": " ".join(["python scripts/measure_cost_curve.py", *sys.argv[1:]]),
                        "reps": args.reps, "n_prefix": args.prefix},
           "architectures": {role: {k: arch[role].get(k) for k in ("model_type", "hidden_size", "num_hidden_layers",
                                                                   "intermediate_size", "num_attention_heads",
                                                                   "num_key_value_heads", "vocab_size")}
                             for role in ("target", "draft")},
           "cost_curves": {}}
    for role in ("target", "draft"):
        t0 = time.perf_counter()
        model = random_model(arch[role], dtype, device)
        with torch.inference_mode():
            curve = measure_pass_seconds(model, model.config.vocab_size, ROWS, n_prefix=args.prefix, reps=args.reps,
                                         device=device)
        out["cost_curves"][role] = curve
        print(f"{role}: " + ", ".join(f"{n} rows {s * 1e3:.2f} ms" for n, s in zip(curve["rows"], curve["seconds"]))
              + f" ({time.perf_counter() - t0:.0f} s)", flush=True)
        del model
    from specdec.fileio import write_json_atomic

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(Path(args.out), out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
