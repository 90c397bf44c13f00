"""`python -m specdec_site trace`: one prompt, one recorded speculative run, one trace file.

    python -m specdec_site trace --prompt "def add(a, b):" --out my-trace.json
    python -m specdec_site trace --prompt-file story.txt --temperature 0.7 --policy adaptive --k 16 --out t.json
    python -m specdec_site trace --prompt "def add(a, b):" --tree 2x3 --out tree.json       (a token tree)

The file has the traces artifact's format (docs/data/schema.json, `traces`: metadata, draft_variant, runs) with one
run, recorded by the traces stage's own `record_run`: every step's drafts, q, p, draws, fates, top-10s and
timings, and the run's metadata (models, versions, device, dtype, seed, date). The Step Visualizer opens it ("Open
a trace file"): the browser reads it, nothing is uploaded. Any pair, device and prompt: seconds once the pair is
loaded. The arguments are checked, and both models found, before anything loads.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy

from specdec.fileio import write_json_atomic
from specdec_site.engine.context import BuildError
from specdec_site.engine.meta import MemorySampler, metadata
from specdec_site.engine.options import (
    MAX_K,
    MAX_PROMPT_BYTES,
    MAX_SEED,
    OneLineParser,
    add_model_options,
    committed_file_problem,
    make_context,
    out_problem,
    prompts_past_context,
    prove_file_writable,
    resolve_models,
)
from specdec_site.numbers import integer, parse_integer, quoted, real
from specdec_site.prompts import PROMPT_ID, USER_DOMAIN

DRAFTERS = ("model", "ngram", "hybrid")
MAX_NEW_TOKENS = 4096  # a trace file holds the top-10 of p and q at every position: ~1 KB per token


def parse_args(argv, prog: str) -> argparse.Namespace:
    from specdec.policies import POLICIES

    parser = OneLineParser(prog=f"{prog} trace", description=__doc__.split("\n\n")[0].split(": ", 1)[1],
                           epilog=__doc__.split("\n\n")[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--prompt", metavar="TEXT", help="the prompt")
    source.add_argument("--prompt-file", metavar="FILE", help="the prompt: the whole text of a UTF-8 file")
    parser.add_argument("--chat", action="store_true",
                        help="give the prompt through the target's chat template (as a user turn)")
    parser.add_argument("--out", required=True, metavar="FILE", help="the trace file to write (JSON)")
    parser.add_argument("--domain", default=USER_DOMAIN, help=f"the run's domain label (default {USER_DOMAIN})")
    parser.add_argument("--policy", default="fixed", choices=POLICIES, help="draft-length policy (default fixed)")
    parser.add_argument("--drafter", default="model", choices=DRAFTERS,
                        help="where drafts come from: the draft model, prompt lookup, or lookup else the model")
    parser.add_argument("--k", type=integer, default=4, help=f"draft tokens per step, the policy's cap (1..{MAX_K}; default 4)")
    parser.add_argument("--temperature", type=real, default=0.0, help="0 (default) is greedy")
    parser.add_argument("--top-k", type=integer, default=None, help="keep the k most likely tokens (both models)")
    parser.add_argument("--top-p", type=real, default=None, help="nucleus sampling mass in (0, 1] (both models)")
    parser.add_argument("--verify", default="token", choices=("token", "block"),
                        help="a chain's verification rule: token (Algorithm 1, default) or block (block verification, "
                             "Sun et al. 2025; the same tokens at temperature 0)")
    parser.add_argument("--max-new-tokens", type=integer, default=48, help=f"1..{MAX_NEW_TOKENS} (default 48)")
    tree = parser.add_mutually_exclusive_group()
    tree.add_argument("--tree", metavar="WxD",
                      help="draft a token tree, every node's W most probable tokens as its children, D deep (2x3: 14 "
                           "nodes); with --tree-nodes N, EAGLE-2's dynamic tree instead (of everything W x D drafts, "
                           "the N most probable nodes). The tree's depth is each step's most drafts (--k is not used) "
                           "and the policy is fixed")
    tree.add_argument("--tree-paths", metavar="PATHS",
                      help="a static token tree as rank paths, Medusa's medusa_choices: '0;1;0,0;0,1;0,0,0' is the "
                           "top two after the prefix, the top two after the first, and the top one after that")
    parser.add_argument("--tree-nodes", type=integer, metavar="N", help="with --tree: the dynamic tree's node budget")
    parser.add_argument("--tree-sampled", action="store_true",
                        help="with a static tree (--tree WxD or --tree-paths): each node's children drawn from the draft's "
                             "q without replacement (SpecInfer), verified by recursive rejection sampling, instead of "
                             "its most probable tokens verified by sample and match")
    parser.add_argument("--no-compare", action="store_true",
                        help="at temperature 0, skip the target-only run that checks greedy equality")
    add_model_options(parser)
    args = parser.parse_args(argv)
    problem = argument_problem(args)
    if problem:
        parser.exit(2, f"{parser.prog}: error: {problem}\n")
    resolve_models(parser, args)
    return args


def argument_problem(args) -> str | None:
    """What is wrong with the arguments, before anything loads (the sampling rules are the library's own); the output
    file is written to once here, so that a run is never lost to a path that cannot take it."""
    from specdec import SamplingConfig
    from specdec.limits import MIN_TEMPERATURE

    args.notes = []
    if args.prompt_file is not None:
        try:
            raw = Path(args.prompt_file).expanduser().read_bytes()
        except OSError as err:
            return f"--prompt-file {args.prompt_file}: cannot read it ({err.strerror or err})"
        if len(raw) > MAX_PROMPT_BYTES:
            return (f"--prompt-file {args.prompt_file} is {len(raw):,} bytes, over the {MAX_PROMPT_BYTES:,} a prompt may "
                    "have (a model's context holds far less): give a shorter one")
        try:
            args.prompt = raw.decode("utf-8")  # as the file has it: CRLF line ends stay CRLF
        except UnicodeDecodeError as err:
            return f"--prompt-file {args.prompt_file}: not UTF-8 text ({err})"
        if args.prompt.startswith("\ufeff"):
            args.prompt = args.prompt[1:]
            args.notes.append("the prompt file's UTF-8 byte-order mark was left out of the prompt")
        if "\r\n" in args.prompt:
            args.notes.append("the prompt keeps the file's CRLF line ends")
    if len(args.prompt.encode()) > MAX_PROMPT_BYTES:
        return (f"the prompt is {len(args.prompt.encode()):,} bytes, over the {MAX_PROMPT_BYTES:,} a prompt may have "
                "(a model's context holds far less)")
    if not args.prompt.strip():
        return "the prompt is empty"
    if not PROMPT_ID.fullmatch(args.domain) or not any(c.isalnum() for c in args.domain):
        return f"--domain must be 1-80 letters, digits, '.', '_' or '-', with a letter or digit, got {quoted(args.domain)}"
    if not 1 <= args.k <= MAX_K:
        return f"--k must be in [1, {MAX_K}], got {args.k}"
    problem = tree_problem(args)
    if problem:
        return problem
    if args.verify != "token" and (args.tree is not None or args.tree_paths is not None):
        return f"--verify {args.verify} verifies a chain; a token tree has its own rule: leave out --verify"
    if not 1 <= args.max_new_tokens <= MAX_NEW_TOKENS:
        return f"--max-new-tokens must be in [1, {MAX_NEW_TOKENS}], got {args.max_new_tokens}"
    if not 0 <= args.seed <= MAX_SEED:
        return f"--seed must be in [0, 2**63 - 2**20], got {args.seed}"
    if not math.isfinite(args.temperature) or args.temperature < 0:
        return f"--temperature must be a finite number >= 0, got {args.temperature}"
    if 0 < args.temperature < MIN_TEMPERATURE:
        return f"--temperature {args.temperature} is too small to sample from (the least is {MIN_TEMPERATURE}); 0 is greedy"
    if args.top_k is not None and args.top_k < 1:
        return f"--top-k must be an integer >= 1 (leave it out for no top-k), got {args.top_k}"
    if args.top_p is not None and not (math.isfinite(args.top_p) and 0 < args.top_p <= 1):
        return f"--top-p must be in (0, 1] (leave it out for no top-p), got {args.top_p}"
    if args.top_p is not None and float(numpy.float32(args.top_p)) <= 0:
        return (f"--top-p {args.top_p} is 0 in float32, where the probabilities are summed: no token could be kept; "
                "use at least 1e-38")
    try:
        SamplingConfig(args.temperature, args.top_k, args.top_p)
    except ValueError as err:
        return "--" + str(err).replace("_", "-", 1).replace(" or None", "")
    if not args.out.strip():
        return "--out is empty: give the trace file's path"
    if args.out.strip() == "-":
        return "--out -: the trace is written to a file, not to standard output: give the file's path"
    out = Path(args.out).expanduser()
    if out.is_dir():
        return f"--out {args.out} is a folder: give the trace file's path"
    return committed_file_problem(out) or out_problem(out.parent) or prove_file_writable(out)


MAX_TREE_SIDE = 16  # the most children per node and the deepest tree --tree takes


def tree_problem(args) -> str | None:
    """What is wrong with the tree options; sets args.tree_shape (a TreeShape, or None for no tree or a dynamic
    tree) and args.tree_depth."""
    args.tree_shape, args.tree_depth = None, None
    if args.tree is None and args.tree_paths is None:
        if args.tree_sampled:
            return "--tree-sampled needs a static tree: --tree WxD or --tree-paths PATHS"
        return "--tree-nodes needs --tree WxD (the dynamic tree's width and depth)" if args.tree_nodes is not None else None
    from specdec.drafters import MAX_TREE_NODES
    from specdec.tree import TreeShape
    if args.policy != "fixed" or args.drafter != "model":
        return "a token tree drafts with the draft model to a fixed depth: leave out --policy and --drafter"
    if args.tree is not None:
        parts = [parse_integer(p) for p in args.tree.lower().split("x")]
        if len(parts) != 2 or None in parts:
            return (f"--tree must be WxD, two integers in ASCII digits (2x3: two children per node, three deep), got "
                    f"{quoted(args.tree)}")
        width, depth = parts
        if not (1 <= width <= MAX_TREE_SIDE and 1 <= depth <= MAX_TREE_SIDE):
            return f"--tree {quoted(args.tree)}: width and depth must be in [1, {MAX_TREE_SIDE}]"
        full = sum(width ** d for d in range(1, depth + 1))  # the full tree's nodes
        if args.tree_nodes is not None:
            if args.tree_sampled:
                return "--tree-sampled needs a static tree; --tree-nodes makes a dynamic one (leave one out)"
            if not 1 <= args.tree_nodes <= MAX_TREE_NODES:
                return f"--tree-nodes must be in [1, {MAX_TREE_NODES}], got {args.tree_nodes}"
        elif full > MAX_TREE_NODES:
            return (f"--tree {width}x{depth} has {full:,} nodes, over the {MAX_TREE_NODES} a step may propose: a "
                    "smaller tree, or --tree-nodes N for a dynamic one")
        else:
            args.tree_shape = TreeShape.full(width, depth)
        args.tree_width, args.tree_depth = width, depth
        return sampled_shape_problem(args)
    if args.tree_nodes is not None:
        return "--tree-nodes goes with --tree WxD (a dynamic tree), not with --tree-paths"
    paths = []
    for path in (p for p in args.tree_paths.split(";") if p.strip()):
        ranks = [parse_integer(r) for r in path.split(",")]
        if None in ranks:
            return (f"--tree-paths: each path is ranks in ASCII digits separated by commas, paths by semicolons "
                    f"('0;1;0,0'), got the path {quoted(path)}")
        paths.append(tuple(ranks))
        if len(paths) > MAX_TREE_NODES:
            return f"--tree-paths has over {MAX_TREE_NODES} paths, the most a tree may have"
    try:
        args.tree_shape = TreeShape(tuple(paths))
    except ValueError as err:
        return f"--tree-paths: {err}"
    args.tree_depth = args.tree_shape.depth
    return sampled_shape_problem(args)


def sampled_shape_problem(args) -> str | None:
    """With --tree-sampled, the shape must be one whose children can be draws (TreeDrafter's own check, made here on
    a stand-in model so that it fails before the pair loads)."""
    if not args.tree_sampled:
        return None
    import torch

    from specdec import TreeDrafter

    try:
        TreeDrafter(torch.nn.Module(), args.tree_shape, sampled=True)
    except ValueError as err:
        return f"--tree-sampled: {err}"
    return None


def make_drafter(ctx, args):
    """The run's drafter: None (the default draft model, a chain), prompt lookup, the hybrid, or a token tree."""
    from specdec import HybridDrafter, NgramDrafter, TreeDrafter

    if args.tree_shape is not None:
        return TreeDrafter(ctx.default_draft, args.tree_shape, sampled=args.tree_sampled)
    if args.tree_depth is not None:
        return TreeDrafter(ctx.default_draft, width=args.tree_width, depth=args.tree_depth, nodes=args.tree_nodes)
    return {"model": lambda: None, "ngram": NgramDrafter, "hybrid": lambda: HybridDrafter(ctx.default_draft)}[args.drafter]()


def with_progress(policy, bar):
    """The policy, its observe() also moving a progress bar by the tokens each step adds (an attribute of this one
    object: its name, k and decisions are unchanged, to the decoder and to the recorded trace)."""
    observe = policy.observe

    def observe_and_count(outcome) -> None:
        observe(outcome)
        bar.update(min(outcome.n_accepted + 1, bar.total - bar.n))

    policy.observe = observe_and_count
    return policy


def main(argv, prog: str) -> int:
    from tqdm.auto import tqdm

    from specdec.policies import make_policy
    from specdec_site.stages.traces import record_run

    args = parse_args(argv, prog)
    ctx = make_context(args)
    start = time.perf_counter()
    with MemorySampler() as memory:
        drafter = make_drafter(ctx, args)
        k = args.tree_depth or args.k  # a tree's depth is its steps' most drafts
        sampling = {"temperature": args.temperature, **({"top_k": args.top_k} if args.top_k is not None else {}),
                    **({"top_p": args.top_p} if args.top_p is not None else {})}
        mode = "greedy" if args.temperature == 0 else "sampled"
        prompt = {"id": "prompt", "kind": "chat" if args.chat else "completion", "text": args.prompt}
        ctx.target  # noqa: B018 (load the pair before the bar starts)
        problem = prompts_past_context(ctx, {args.domain: [prompt]}, args.max_new_tokens)
        if problem:
            raise BuildError(problem)
        with tqdm(total=args.max_new_tokens, desc="trace", unit="tok") as bar:
            policy = with_progress(make_policy(args.policy, k), bar)
            run = record_run(ctx, args.domain, prompt, mode, sampling, policy, k, args.max_new_tokens,
                             drafter=drafter, compare_greedy=not args.no_compare, verify=args.verify)
        config = {"prompt": prompt, "domain": args.domain, "mode": mode, "sampling": sampling, "policy": args.policy,
                  "drafter": args.drafter, "k": k, "verify": args.verify, "tree": args.tree, "tree_paths": args.tree_paths,
                  "tree_nodes": args.tree_nodes, "tree_sampled": args.tree_sampled, "max_new_tokens": args.max_new_tokens,
                  "target": args.target, "draft": args.draft, "device": ctx.device.type,
                  "dtype": str(ctx.dtype), "int8": ctx.int8, "packed": ctx.packed, "seed": args.seed}
        meta = metadata(ctx, "trace", config, with_models=True)
        meta["seconds"] = round(time.perf_counter() - start, 1)
        meta["peak_rss_gb"] = memory.peak_gb()
    out = Path(args.out).expanduser()
    try:
        write_json_atomic(out, {"metadata": meta, "draft_variant": ctx.default_draft_name, "runs": [run]})
    except OSError as err:  # checked before the run (prove_file_writable), but a disk can fill up meanwhile
        raise BuildError(f"--out {out}: the run finished but could not be written ({err.strerror or err}); "
                         "nothing was written there") from err
    for note in args.notes:
        print(f"[trace] note: {note}")
    trace = run["trace"]
    equal = {None: "", True: "; identical to the target's greedy output", False: "; DIFFERS from the target's greedy"
             " output (a near-tie? see the math page's note)"}[run["equals_target_greedy"]]
    print(f"[trace] {trace['n_emitted']} tokens in {trace['n_steps']} target passes, acceptance "
          f"{trace['acceptance_rate'] if trace['acceptance_rate'] is not None else 'n/a'}{equal}; wrote {out} "
          "(open it in the Step Visualizer)")
    return 0

