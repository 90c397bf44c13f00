"""Files the project writes and checks: sha256 of a file, and atomic JSON writes. Standard library only.

The model loader (`models.py`), the build (`specdec_site`) and the MkDocs hook all use these, so that a
hash means the same thing everywhere and no artifact is ever half-written.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path


def sha256_file(path: Path, chunk: int = 1 << 24) -> str:
    """Hex sha256 of a file, read in chunks (model files are gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def write_json_atomic(path: Path, data) -> None:
    """Write JSON atomically (write_text_atomic); NaN and Infinity are refused, not written."""
    write_text_atomic(path, json.dumps(data, indent=1, allow_nan=False))  # NaN/Infinity are not JSON


def write_text_atomic(path: Path, text: str) -> None:
    """Write to a temporary file in the same folder, then rename: never a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
