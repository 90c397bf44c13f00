"""Which code and which settings each stage's artifact depends on, so that a change reruns only the stages it touches.

A full build takes about 66 min on the 2-core CPU host of the committed data (169 on a slower one), the policies
stage alone about 39. Before this table, any edit
to the data code (meta.DATA_CODE) or to any build setting made all five artifacts stale. Now each artifact records
(cli.py) a digest of the code its stage runs, SHARED_CODE plus STAGE_CODE[stage], and of the settings it reads,
STAGE_CONFIG[stage]; the build reruns the stages whose digests changed.

Kept honest three ways:
- tests/test_guards.py checks that SHARED_CODE, STAGE_CODE and config.py cover meta.DATA_CODE exactly, and that a
  stage's own module is imported only by modules of the same stage (stages.py only names `<module>.run` in its table);
- cli.py runs each stage with a recording config (RecordedConfig) and refuses to write an artifact whose stage read a
  setting that STAGE_CONFIG does not list for it;
- config.py is in no code digest: what it holds reaches a stage only as the settings above, which are hashed by value.
An artifact written before these digests existed carries only the global code_sha256 and is judged by it.
"""

from __future__ import annotations

import functools

from .meta import code_files, hash_files

# Code every stage runs: the decoder, the model context, the prompts, the stage table, the entry points.
SHARED_CODE = ("specdec/*.py", "specdec_site/__init__.py", "specdec_site/__main__.py", "specdec_site/context.py",
               "specdec_site/meta.py", "specdec_site/prompts.py", "specdec_site/stages.py", "scripts/build_data.py")
# Code only some stages run (the traces, exactness and notebook stages live in stages.py).
STAGE_CODE = {
    "traces": (),
    "benchmark": ("specdec_site/benchmark.py", "specdec_site/public_prompts.py"),
    "policies": ("specdec_site/policies_stage.py", "specdec_site/hf.py", "specdec_site/public_prompts.py"),
    "exactness": (),
    "notebook": (),
}
# The BuildConfig fields (to_dict keys) each stage reads; "quick" for all: a quick artifact is never a full one.
STAGE_CONFIG = {
    "traces": ("quick", "trace_prompts", "trace_tokens", "trace_k", "adaptive_trace_k", "modes", "sampled_temperature"),
    "benchmark": ("quick", "sweep_tokens", "sweep_ks", "reps", "policy_prompt_start", "modes",
                  "sampled_temperature"),
    "policies": ("quick", "fixed_k", "policy_prompts", "core_prompts", "policy_prompt_start", "policy_tokens", "modes",
                 "sampled_temperature"),
    "exactness": ("quick", "exact_samples", "mutation_sampled_runs"),
    "notebook": ("quick",),
}
# `modes` is derived from sampled_temperature, so reading it counts as reading that too.
DERIVED = {"modes": ("sampled_temperature",)}


def stage_files(stage: str) -> list:
    """The files whose bytes make a stage's code digest, sorted."""
    return code_files((*SHARED_CODE, *STAGE_CODE[stage]))


@functools.cache
def stage_code_hash(stage: str) -> str:
    """sha256 over the code a stage runs, read once per build (edits during a long build are not attributed)."""
    return hash_files((*SHARED_CODE, *STAGE_CODE[stage]))


def stage_settings(stage: str, config: dict) -> dict:
    """The part of a build's settings (cli's per-stage config dict) that the stage's digest covers: every entry that
    is not a BuildConfig field (models, device, dtype, seed, prompts, input files...), and its own fields."""
    from .config import FULL

    fields = set(FULL.to_dict())
    return {key: value for key, value in config.items() if key not in fields or key in STAGE_CONFIG[stage]}


class RecordedConfig:
    """A read-only view of a BuildConfig that notes which fields a stage reads."""

    def __init__(self, cfg):
        object.__setattr__(self, "_cfg", cfg)
        object.__setattr__(self, "read", set())

    def __getattr__(self, name):
        self.read.add(name)
        for source in DERIVED.get(name, ()):
            self.read.add(source)
        return getattr(self._cfg, name)

    def __setattr__(self, name, value):
        raise AttributeError("the build config is read-only")

    def undeclared(self, stage: str) -> list[str]:
        """Fields read that STAGE_CONFIG does not list for the stage (their change would not rerun it)."""
        return sorted(self.read - set(STAGE_CONFIG[stage]))
