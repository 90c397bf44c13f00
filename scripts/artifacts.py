"""Writing artifacts: atomically, and only JSON that reads back. No heavy imports (the site build uses it)."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_json_atomic(path: Path, data) -> None:
    """Write to a temporary file in the same folder, then rename: never a half-written artifact."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=1, allow_nan=False)  # NaN/Infinity are not JSON: refuse them
    json.loads(text)
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
