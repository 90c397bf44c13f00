"""Where things are: the repository root and the fixed places the build and the site share. One definition each;
every module and script that needs the root imports it from here."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CPU_OUT = ROOT / "docs" / "data" / "cpu"  # the committed CPU artifacts
NOTEBOOK_SOURCE = ROOT / "notebooks" / "walkthrough.ipynb"
NOTEBOOK_SITE_COPY = ROOT / "docs" / "notebooks" / "walkthrough.ipynb"  # the executed copy the site shows


def notebook_path(out: Path) -> Path:
    """The executed notebook goes to the site for the default folder, beside the artifacts otherwise."""
    return NOTEBOOK_SITE_COPY if out.resolve() == DEFAULT_CPU_OUT.resolve() else out / "walkthrough.ipynb"
