"""Stage `notebook`: executes notebooks/walkthrough.ipynb (the site shows the executed copy)."""

from __future__ import annotations

from .meta import ROOT

NOTEBOOK_SOURCE = ROOT / "notebooks" / "walkthrough.ipynb"
NOTEBOOK_SITE_COPY = ROOT / "docs" / "notebooks" / "walkthrough.ipynb"


def run(ctx, cfg) -> dict:
    """Execute the walkthrough in a fresh kernel (which loads the models itself: ours are freed first)."""
    import nbformat
    from nbconvert.preprocessors import ExecutePreprocessor

    ctx.release()
    nb = nbformat.read(NOTEBOOK_SOURCE, as_version=4)
    ExecutePreprocessor(timeout=1200, kernel_name="python3").preprocess(nb, {"metadata": {"path": str(ROOT)}})
    return dict(nb)
