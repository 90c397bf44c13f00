"""Stage `notebook`: executes notebooks/walkthrough.ipynb (the site shows the executed copy)."""

from __future__ import annotations

import os

from specdec_site.paths import NOTEBOOK_SOURCE, ROOT


def run(ctx, cfg) -> dict:
    """Execute the walkthrough in a fresh kernel (which loads the models itself: ours are freed first)."""
    import nbformat
    from nbconvert.preprocessors import ExecutePreprocessor

    ctx.release()
    nb = nbformat.read(NOTEBOOK_SOURCE, as_version=4)
    # the build's pair, not always the default one: a build of another pair shows its own notebook (the kernel
    # inherits this environment; the notebook falls back to the default pair without it)
    pair = {"SPECDEC_NOTEBOOK_TARGET": ctx.target_name, "SPECDEC_NOTEBOOK_DRAFT": ctx.draft_name}
    saved = {name: os.environ.get(name) for name in pair}
    os.environ.update(pair)
    try:
        ExecutePreprocessor(timeout=1200, kernel_name="python3").preprocess(nb, {"metadata": {"path": str(ROOT)}})
    finally:
        for name, value in saved.items():
            os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)
    return dict(nb)
