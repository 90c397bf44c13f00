"""Stage `notebook`: executes notebooks/walkthrough.ipynb (the site shows the executed copy)."""

from __future__ import annotations

from pathlib import Path

from .meta import ROOT

NOTEBOOK_SOURCE = ROOT / "notebooks" / "walkthrough.ipynb"
NOTEBOOK_SITE_COPY = ROOT / "docs" / "notebooks" / "walkthrough.ipynb"
DEFAULT_CPU_OUT = ROOT / "docs" / "data" / "cpu"


def notebook_path(out: Path) -> Path:
    """The executed notebook goes to the site for the default folder, beside the artifacts otherwise."""
    return NOTEBOOK_SITE_COPY if out.resolve() == DEFAULT_CPU_OUT.resolve() else out / "walkthrough.ipynb"


def run(ctx, cfg) -> dict:
    """Execute the walkthrough in a fresh kernel (which loads the models itself: ours are freed first)."""
    import nbformat
    from nbconvert.preprocessors import ExecutePreprocessor

    ctx.release()
    nb = nbformat.read(NOTEBOOK_SOURCE, as_version=4)
    ExecutePreprocessor(timeout=1200, kernel_name="python3").preprocess(nb, {"metadata": {"path": str(ROOT)}})
    return dict(nb)
