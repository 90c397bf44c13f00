"""The data build's command line: which stages are stale, then run them and write their artifacts."""

from __future__ import annotations

import argparse
import json
import math
import time
from datetime import datetime, timezone
from pathlib import Path

from specdec.fileio import sha256_file, write_json_atomic
from specdec_site.engine.config import build_config
from specdec_site.engine.context import BuildError
from specdec_site.engine.freshness import RecordedConfig, UndeclaredSetting, code_hash, stage_code_hash, stage_settings
from specdec_site.engine.meta import (
    ROOT,
    SCHEMA_VERSION,
    MemorySampler,
    command_line,
    config_hash,
    entry_point,
    git_state,
    metadata,
)

# re-exported (scripts and tests import them from the build's module)
from specdec_site.engine.options import (  # noqa: F401
    MAX_K,
    MAX_PROMPT_BYTES,
    MAX_SEED,
    OneLineParser,
    add_model_options,
    committed_folder_problem,
    device_choices,
    hold_build_lock,
    make_context,
    out_problem,
    prompts_past_context,
    prove_writable,
    resolve_models,
)
from specdec_site.engine.stages import STAGES
from specdec_site.numbers import integer, real
from specdec_site.prompts import PromptError, user_prompts

EXAMPLES = """examples:
  %(prog)s                                 every stale stage, the default pair, CPU -> docs/data/cpu/
  %(prog)s trace --prompt "def add(a, b):" --out my-trace.json   one prompt, one trace file (trace --help)
  %(prog)s --device cuda                   the same on a GPU -> docs/data/cuda/
  %(prog)s --quick --out /tmp/quick        a small end-to-end run, never over the committed data
  %(prog)s --stages exactness --force      redo one stage
  %(prog)s --target Qwen/Qwen2.5-Coder-7B-Instruct --out /tmp/7b   another pair (hub id or local folder)
"""


def parse_args(argv=None, prog: str | None = None) -> argparse.Namespace:
    parser = OneLineParser(prog=prog or entry_point(), epilog=EXAMPLES,
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           description="Regenerate the site's data by running the decoder on a real model pair. "
                                       "Only stale stages run (each artifact records the code and settings that "
                                       "built it).")
    add_model_options(parser)
    parser.add_argument("--out", default=None,
                        help="artifact folder (default docs/data/<device>, the committed data: only a run of the "
                             "committed configuration may write there, so any other option needs --out)")
    parser.add_argument("--quick", action="store_true",
                        help="a small end-to-end run (CI): about 3 to 10 min on a 2-core CPU; the full build takes about "
                             "65 to 75 min there")
    parser.add_argument("--force", action="store_true", help="redo stages whose artifacts are up to date")
    parser.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated subset of {','.join(STAGES)}")
    parser.add_argument("--k", type=integer, default=None, help="k of the fixed-k traces, of the fixed-k policy and of HF's constant schedule (default 4)")
    parser.add_argument("--temperature", type=real, default=None, help="temperature of the sampled mode (default 0.7)")
    parser.add_argument("--prompt", action="append", default=[], metavar="TEXT",
                        help="a prompt of your own for the traces stage (a completion in the domain 'custom'); "
                             "repeat it for more. With --prompt or --prompts the traces are of your prompts only")
    parser.add_argument("--prompts", action="append", default=[], metavar="FILE",
                        help="prompts from a file: .jsonl, one {\"text\", \"domain\"?, \"kind\"?: "
                             "completion|chat, \"id\"?} per line; any other file is one completion prompt")
    args = parser.parse_args(argv)
    problem = argument_problem(args)
    if problem:
        parser.exit(2, f"{parser.prog}: error: {problem}\n")  # one line, before any model is loaded
    args.stages = ",".join(dict.fromkeys(args.stages.split(",")))  # each stage once, in the order given
    resolve_models(parser, args)
    return args


# the options of a run of the committed configuration: any other value makes other data, which needs --out
COMMITTED_CONFIG = {"target": None, "draft": None, "dtype": None, "seed": 0, "quick": False, "k": None,
                    "temperature": None, "no_int8": False, "no_packed": False}


def argument_problem(args) -> str | None:
    """What is wrong with the arguments, checked before anything slow; None if nothing."""
    from specdec.limits import MIN_TEMPERATURE

    if args.k is not None and not 1 <= args.k <= MAX_K:
        return f"--k must be in [1, {MAX_K}], got {args.k}"
    if args.temperature is not None and not (math.isfinite(args.temperature) and args.temperature >= 0):
        return f"--temperature must be a finite number >= 0, got {args.temperature}"
    if args.temperature is not None and 0 < args.temperature < MIN_TEMPERATURE:
        return (f"--temperature {args.temperature} is too small to sample from (the least is {MIN_TEMPERATURE}); "
                "0 is greedy")
    if not 0 <= args.seed <= MAX_SEED:
        return f"--seed must be in [0, 2**63 - 2**20], got {args.seed}"
    names = [name.strip() for name in args.stages.split(",")]
    if not all(names):
        return f"--stages {args.stages!r} has an empty name; give a comma-separated subset of {','.join(STAGES)}"
    unknown = set(names) - set(STAGES)
    if unknown:
        return f"unknown stage(s) {', '.join(sorted(unknown))}; choose from {', '.join(STAGES)}"
    args.stages = ",".join(names)
    changed = [option for option, value in COMMITTED_CONFIG.items() if getattr(args, option) != value]
    problem = prompt_files_problem(args.prompts)
    if problem:
        return problem
    try:
        args.prompt_table = user_prompts(args.prompt, args.prompts)
    except PromptError as err:
        return str(err)
    problem = prompt_table_problem(args.prompt_table)
    if problem:
        return problem
    if args.prompt_table is not None:
        changed.append("prompt(s)")
    flags = ", ".join("--" + option.replace("_", "-") for option in changed)
    if args.out is None:
        if changed:
            return (f"{flags} make(s) data other than the committed configuration's: give --out FOLDER (the default, "
                    "docs/data/<device>, is the committed data)")
        return None
    if not args.out.strip():
        return "--out is empty: give the artifact folder (leave --out out for the default docs/data/<device>)"
    if "\0" in args.out:
        return "--out holds a NUL character"
    committed = {(ROOT / "docs" / "data" / device).resolve() for device in ("cpu", "cuda")}
    out = Path(args.out).expanduser()
    if out.resolve() in committed:
        if changed:
            return (f"--out {args.out} is the committed data, which only a run of the committed configuration writes "
                    f"(this run sets {flags}): choose another folder")
    else:
        problem = committed_folder_problem(out)  # docs/figures, docs/notebooks, the library: never an --out
        if problem:
            return problem
    return out_problem(out)


def prompt_files_problem(files: list[str]) -> str | None:
    """--prompts files that would be read as something else than they are: an empty or blank file (it was taken as
    "no prompts", and the run became the committed configuration), a .JSONL name that the reader takes for one text
    prompt (it reads lines of JSON from a lowercase .jsonl only)."""
    for name in files:
        path = Path(name).expanduser()
        if path.suffix.lower() == ".jsonl" and path.suffix != ".jsonl":
            return (f"--prompts {name}: a JSON-lines file must end in lowercase .jsonl to be read as one prompt per "
                    "line (rename it; any other name is read as one text prompt)")
        try:
            if path.is_file() and not path.read_text(encoding="utf-8", errors="replace").strip():
                return f"--prompts {name} is empty: give it at least one prompt (or leave --prompts out)"
        except OSError:
            pass  # user_prompts says why it cannot be read
    return None


def prompt_table_problem(table: dict | None) -> str | None:
    """Domains that are no names ('.', '..': a domain names the run on every page) and prompts too long to be
    prompts; and, for a large table, what it will cost is printed (a 10,000-prompt file started without a word)."""
    if table is None:
        return None
    for domain, prompts in table.items():
        if not any(c.isalnum() for c in domain):
            return f"prompt domain {domain!r} has no letter or digit: name the domain (for example 'stories')"
        for prompt in prompts:
            size = len(prompt["text"].encode())
            if size > MAX_PROMPT_BYTES:
                return (f"prompt {prompt['id']!r} is {size:,} bytes, over the {MAX_PROMPT_BYTES:,} a prompt may have "
                        "(a model's context holds far less): shorten it")
    n = sum(len(p) for p in table.values())
    if n > 20:
        print(f"[build] {n} prompts: the traces stage decodes each one in each mode (greedy and sampled) and the "
              "target alone besides; on a 2-core CPU the default pair takes about 30 s a prompt and mode, so about "
              f"{n * 2 * 30 / 60:.0f} min (Ctrl-C stops it; nothing half-written is kept)", flush=True)
    return None


def staleness(stage, path: Path, config: dict) -> str | None:
    """Why the stage's artifact must be rebuilt (None: it is up to date): missing, other settings, or produced by
    other code than the repository's now. `config` is the stage's full settings dict. An artifact that records
    per-stage digests (freshness.py) is judged on the code its stage runs and the settings it reads; an older one on
    all of the data code (freshness.code_hash) and all of the settings."""
    try:
        meta = stage.read_meta(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "missing or unreadable"
    if meta.get("schema_version") != SCHEMA_VERSION:
        return f"schema {meta.get('schema_version')} != {SCHEMA_VERSION}"
    if "stage_code_sha256" in meta:
        if meta.get("stage_config_hash") != config_hash(stage_settings(stage.name, config)):
            return "built with other settings"
        if meta["stage_code_sha256"] != stage_code_hash(stage.name):
            return "built by other code (the decoder or this stage's build code changed since)"
        return None
    if meta.get("config_hash") != config_hash(config):
        return "built with other settings"
    if meta.get("code_sha256") != code_hash():
        return "built by other code (the decoder or the data build changed since)"
    return None


def main(argv=None, prog: str | None = None) -> int:
    args = parse_args(argv, prog)
    code_hash()  # read the code now: edits during a long build must not be attributed to it
    for name in STAGES:
        stage_code_hash(name)  # the same, per stage
    ctx = make_context(args)
    cfg = build_config(args.quick, args.k, args.temperature, args.prompt_table)
    out = ROOT / "docs" / "data" / ctx.device.type if args.out is None else Path(args.out).expanduser()
    prove_writable(out)
    lock = hold_build_lock(out)  # noqa: F841  (held until the build ends): a second build of `out` stops here
    stages = [STAGES[s] for s in args.stages.split(",")]

    # The build's own log, beside its artifacts: what ran, when, at which commit, how long, peak memory. Appended,
    # so that artifacts built by several runs have every run's lines (the Reproduce page links it). A run that builds
    # nothing leaves it as it is: its lines are held until a stage is to be built (`bash scripts/site.sh` with
    # up-to-date data must not change a committed file).
    log_path = out / "build-log.txt"
    held: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        held.append(line)
        if todo:
            with open(log_path, "a", encoding="utf-8") as log:
                log.write("".join(f"{x}\n" for x in held))
            held.clear()

    todo = []

    say(f"[build] {datetime.now(timezone.utc).isoformat(timespec='seconds')} {command_line()} at git commit "
        f"{git_state()['commit'] or 'unknown'}{'' if git_state()['clean'] else ' (uncommitted changes)'}")
    # Which stages are stale? Decided before loading any model (a no-op run takes a second).
    base = {"target": args.target, "draft": args.draft, "device": ctx.device.type, "dtype": str(ctx.dtype),
            "seed": args.seed, "int8": ctx.int8, "packed": ctx.packed, "schema": SCHEMA_VERSION,
            **cfg.to_dict()}
    configs = {s.name: {**base, "stage": s.name, **{f"sha256:{p.name}": sha256_file(p) for p in s.inputs}} for s in stages}
    for s in stages:
        reason = "--force" if args.force else staleness(s, s.path(out), configs[s.name])
        if reason is None:
            say(f"[build] {s.name}: up to date ({s.path(out)}), skipped (--force to redo)")
        else:
            todo.append(s)
            say(f"[build] {s.name}: to build ({reason})")
    if args.prompt_table is not None and any(s.name == "traces" for s in todo):
        # the user's prompts against the target's context, once the pair is loaded and before any decoding (a
        # 10k-token prompt ran past a 2,048-token context with no word)
        problem = prompts_past_context(ctx, args.prompt_table, cfg.trace_tokens)
        if problem:
            raise BuildError(problem + "; nothing was run")
    t0 = time.perf_counter()
    summary = []
    with MemorySampler() as memory:
        for stage in todo:
            start = time.perf_counter()
            meta = metadata(ctx, stage.name, configs[stage.name], with_models=stage.models,
                            on_build_device=stage.on_build_device)
            # The per-stage digests that staleness() reads (freshness.py): this stage's code and settings.
            meta["code_sha256"] = code_hash()
            meta["stage_code_sha256"] = stage_code_hash(stage.name)
            meta["stage_config_hash"] = config_hash(stage_settings(stage.name, configs[stage.name]))
            recorded = RecordedConfig(cfg, stage.name)
            try:
                data = stage.run(ctx, recorded)
            except UndeclaredSetting as err:  # raised at the first unlisted read (RecordedConfig)
                raise BuildError(str(err)) from None
            meta["seconds"] = round(time.perf_counter() - start, 1)
            meta["peak_rss_gb"] = memory.peak_gb()  # so far, this process and its children together
            write_json_atomic(stage.path(out), stage.embed(data, meta))
            summary.append((stage.name, meta["seconds"]))
            say(f"[build] {stage.name}: wrote {stage.path(out)} in {meta['seconds']:.0f} s "
                f"(peak memory so far {meta['peak_rss_gb']} GB, with child processes)")
    if todo:
        say("[build] summary: " + ", ".join(f"{s} {sec:.0f} s" for s, sec in summary)
              + f"; total {time.perf_counter() - t0:.0f} s; peak memory {memory.peak_gb()} GB "
              "(this process and its child processes, e.g. the notebook's kernel)")
    return 0


def entry(argv=None, prog: str | None = None) -> int:
    """main() with the user-facing failures turned into one line and an exit code."""
    import sys

    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv[:1] == ["trace"]:
            from specdec_site.trace_command import main as trace_main

            return trace_main(argv[1:], prog or entry_point())
        return main(argv, prog)
    except BuildError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        trace = argv[:1] == ["trace"]
        print("interrupted: " + ("nothing was written" if trace else
                                 "artifacts already written are complete; the others are unchanged"), file=sys.stderr)
        return 130
