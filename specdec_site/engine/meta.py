"""Provenance of an artifact: which models, code, versions, device, seed and command produced it."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import os
import platform
import shlex
import sys
from pathlib import Path

from specdec_site.paths import ROOT

SCHEMA_VERSION = 8  # 8: each step records its fates (fates, extra_fate); 7: metadata.git (the commit); 6: the k sweep is in the policies artifact (no benchmark artifact)


def config_hash(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def hash_paths(paths, root: Path | None = None) -> str:
    """sha256 over files, each its path relative to `root` (ROOT) then its code (code_tokens), in sorted order: the
    one definition of a code digest (freshness.py's per stage, and its global one over all of them)."""
    root = root or ROOT
    digest = hashlib.sha256()
    for path in sorted(set(paths)):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + code_tokens(path) + b"\0")
    return digest.hexdigest()


def code_tokens(path: Path) -> bytes:
    """What a file computes, without its prose: for Python (a .py file, a notebook's code cells), its tokens less
    comments, blank lines, line breaks inside brackets and string statements (docstrings, and a string standing alone
    as a statement), so that a docstring or comment edit reruns no stage while any code edit does; any other file,
    its bytes. Text that is not valid Python is hashed as bytes (the stage then fails on it anyway)."""
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text())["cells"]
        source = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        # IPython's magics and shell lines are not Python: kept as text lines
        magics = [line for line in source.splitlines() if line.lstrip().startswith(("%", "!"))]
        source = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    elif path.suffix == ".py":
        source, magics = path.read_text(), []
    else:
        return path.read_bytes()
    tokens = _python_tokens(source)
    return path.read_bytes() if tokens is None else "\n".join(magics + tokens).encode()


@functools.lru_cache(maxsize=512)
def _python_tokens(source: str) -> list[str] | None:
    """code_tokens' part for a Python text, cached on the text (a build and the guards' tests digest the same
    unchanged files many times); None where the text is not Python."""
    import io
    import tokenize

    try:
        prose = _string_statements(source)
        out = []
        skipping_newline = False
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING):
                continue
            if tok.type == tokenize.STRING and any(start <= tok.start and tok.end <= end for start, end in prose):
                skipping_newline = True  # a string statement: its NEWLINE goes with it
                continue
            if skipping_newline and tok.type == tokenize.NEWLINE:
                skipping_newline = False
                continue
            skipping_newline = False
            out.append(f"{tok.type}:{tok.string}")
    except (SyntaxError, tokenize.TokenError, ValueError):
        return None
    return out


def _string_statements(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The (start, end) positions of every statement that is a string alone (a docstring, an attribute's note)."""
    import ast

    return [((node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)]


DATA_CODE = ("specdec", "specdec_site", "scripts", "pyproject.toml")  # what `git.clean` looks at


def git_state() -> dict:
    """The commit checked out when the stage ran, and whether the data code then matched it (`clean`: no change
    under DATA_CODE, committed or not). Both None outside a git checkout (e.g. an unpacked release)."""
    import subprocess

    def git(*args) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--", *DATA_CODE) if commit else None
    return {"commit": commit.strip() if commit else None, "clean": None if status is None else status.strip() == ""}


def device_name(device) -> str:
    if device.type == "cuda":
        import torch

        return torch.cuda.get_device_name(device)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() + f" ({os.cpu_count()} cores)"
    except OSError:
        pass
    return platform.processor() or "cpu"


def entry_point() -> str:
    """How the running build was started, as a user would type it: `python -m specdec_site` for the package's entry
    (its argv[0] is the file specdec_site/__main__.py), `python scripts/build_data.py` for the script."""
    entry = "-m specdec_site" if sys.argv[0].endswith("__main__.py") else shlex.quote(os.path.relpath(sys.argv[0], ROOT))
    return f"python {entry}"


def command_line() -> str:
    """The command that is running, as a user would type it again: its entry point and its arguments."""
    return " ".join([entry_point(), *(shlex.quote(a) for a in sys.argv[1:])])


def metadata(ctx, stage: str, config: dict, with_models: bool, on_build_device: bool = True) -> dict:
    """The artifact's provenance. A stage that does not run on the build's device (tiny models, the notebook's
    default pair) records where it did run: the CPU, in float32."""
    import torch
    import transformers

    import specdec

    device = ctx.device if on_build_device else torch.device("cpu")
    dtype = ctx.dtype if on_build_device else torch.float32

    models = None
    if with_models:
        models = {"target": ctx.target.info | {"name": ctx.target.name},
                  "draft": ctx.draft.info | {"name": ctx.draft.name}}
    return {
        "schema_version": SCHEMA_VERSION,
        "stage": stage,
        "config_hash": config_hash(config),
        "config": config,
        "models": models,
        "versions": {"specdec": specdec.__version__, "torch": torch.__version__,
                     "transformers": transformers.__version__, "python": platform.python_version()},
        "device": {"type": device.type, "name": device_name(device), "threads": torch.get_num_threads(),
                   "platform": platform.platform(),
                   # the instruction set PyTorch's CPU kernels dispatch to (e.g. AVX512): one CPU name can hide
                   # two hosts whose speed and near-ties differ
                   "capability": torch.backends.cpu.get_cpu_capability()},
        "dtype": str(dtype).removeprefix("torch."),
        "kernels": ctx.kernels,
        "draft_variant": ctx.default_draft_name,
        "seed": ctx.seed,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command_line(),
        "git": git_state(),
        "code_sha256": None,  # cli.py: freshness.code_hash(), over every stage's code
        "seconds": None,
        "peak_rss_gb": None,
    }


def peak_rss_gb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)


def _tree_rss_bytes(root: int) -> int:
    """Resident memory of a process and all its descendants (Linux /proc; 0 elsewhere)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            children.setdefault(int(fields[1]), []).append(int(entry.name))
            rss[int(entry.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


class MemorySampler:
    """Peak resident memory of the build AND its child processes (the notebook's kernel), sampled by a
    background thread every `interval` seconds: what the machine must hold, not only this process."""

    def __init__(self, interval: float = 0.5):
        import threading

        self.interval, self.peak = interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _tree_rss_bytes(os.getpid()))
            self._stop.wait(self.interval)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def peak_gb(self) -> float:
        """The sampled peak, and never less than this process's own exact peak."""
        return round(max(self.peak / 2**30, peak_rss_gb()), 2)
