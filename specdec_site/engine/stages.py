"""The stages of a data build, one module and one artifact each, all with one signature: run(ctx, cfg) -> dict.

  traces     recorded speculative_generate runs (every step: drafts, q, p, draws, fates, top-10s, timings),
             fixed k and the adaptive policy (stages/traces.py)
  policies   the fixed-k sweep (k = 1..8) and each draft-length policy and drafter vs HF at equal draft vs the
             oracle, on public prompts, one target-only run per prompt for all of them (stages/policies.py)
  trees      token trees against chains: the cost curves, the cost model's tree, static and dynamic trees vs the
             best chain and the adaptive policy on public prompts (stages/trees.py)
  block      block verification against the token rule, sampled, on public prompts (stages/block.py)
  exactness  empirical vs exact distributions of tiny models, correct rule vs naive residual, the mutation table
             (stages/exactness.py)
  notebook   executes notebooks/walkthrough.ipynb (the site shows the executed copy; stages/notebook.py)

A stage's code digest (freshness.py) covers its module and what it imports, so this table imports each stage
module only to name its `run`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from specdec_site.paths import DEFAULT_CPU_OUT, NOTEBOOK_SOURCE, notebook_path  # noqa: F401 (DEFAULT_CPU_OUT: for tests)
from specdec_site.stages import block, exactness, notebook, policies, traces, trees

# ---------------------------------------------------------------- the table of stages


def _json_path(name: str) -> Callable[[Path], Path]:
    return lambda out: out / f"{name}.json"


def _embed_top(data: dict, meta: dict) -> dict:
    return {"metadata": meta, **data}


def _embed_notebook(nb: dict, meta: dict) -> dict:
    nb["metadata"]["specdec"] = {"metadata": meta}
    return nb


def _meta_top(data: dict) -> dict:
    return data["metadata"]


def _meta_notebook(data: dict) -> dict:
    return data["metadata"]["specdec"]["metadata"]


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable  # run(ctx, cfg) -> dict: the artifact's content
    path: Callable[[Path], Path]  # artifact folder -> the file it writes
    embed: Callable[[dict, dict], dict] = _embed_top  # (content, metadata) -> the JSON written
    read_meta: Callable[[dict], dict] = _meta_top  # written JSON -> its metadata
    models: bool = True  # needs the real pair (loaded on first use)
    on_build_device: bool = True  # runs on --device (False: on the CPU, as its metadata then says)
    inputs: tuple = ()  # files whose sha256 enters the config hash
    code_inputs: tuple = ()  # paths (from the root) of inputs that run code, a notebook: their imports enter the code digest


STAGES = {
    "traces": Stage("traces", traces.run, _json_path("traces")),
    "policies": Stage("policies", policies.run, _json_path("policies")),
    "trees": Stage("trees", trees.run, _json_path("trees")),
    "block": Stage("block", block.run, _json_path("block")),
    # tiny random models, on the CPU whatever the build's device (too small for a GPU to help)
    "exactness": Stage("exactness", exactness.run, _json_path("exactness"), models=False, on_build_device=False),
    # the walkthrough loads the default pair itself, on the CPU (a reader runs it on a laptop)
    "notebook": Stage("notebook", notebook.run, notebook_path, _embed_notebook, _meta_notebook, models=False,
                      on_build_device=False, inputs=(NOTEBOOK_SOURCE,), code_inputs=("notebooks/walkthrough.ipynb",)),
}
# stage -> its module, the root of its code digest (freshness.stage_files)
STAGE_MODULES = {name: stage.run.__module__.replace(".", "/") + ".py" for name, stage in STAGES.items()}
