"""Which code and which settings each stage's artifact depends on, so that a change reruns only the stages it touches.

Each artifact records (cli.py) a digest of the code its stage runs and of the settings it reads; the build reruns the
stages whose digests changed. The code a stage runs is found, not listed: its module (stages.STAGE_MODULES) and
everything it imports inside this repository, followed through the library (`specdec/`, whose lazy `from specdec
import X` names resolve through its export table) and the build package, plus the entry points and the model
context every stage goes through (ENTRY). So an edit to the exactness stage's module reruns that stage alone, an
edit to `specdec/verify.py` every stage, and an edit to `specdec/models.py` the stages that load models.

Kept honest two ways:
- tests/test_guards.py edits a copy of the tree and checks which stages' digests change;
- cli.py runs each stage with a recording config (RecordedConfig) and refuses to write an artifact whose stage read a
  setting that STAGE_CONFIG does not list for it; config.py is in no code digest: what it holds reaches a stage only
  as the settings below, which are hashed by value.
An artifact written before these digests existed carries only the global code_sha256 and is judged by it.
"""

from __future__ import annotations

import ast
import functools
import json
from pathlib import Path

from specdec_site.engine.meta import ROOT, hash_paths

# What every stage runs besides its own module: the entry points and the table of stages, hashed but not followed
# (they import the command line, and the table names every stage's run), and the metadata writer, followed.
ENTRY = ("scripts/build_data.py", "specdec_site/__init__.py", "specdec_site/__main__.py", "specdec_site/engine/stages.py")
FOLLOWED_ENTRY = ("specdec_site/engine/meta.py",)
MODEL_ENTRY = ("specdec_site/engine/context.py",)  # and the model context, for the stages that load the pair
# Never in a code digest: the command line and this module decide what runs, not what a stage computes, and the
# settings (config.py) reach a stage only as values, hashed as such (STAGE_CONFIG).
NOT_CODE = ("specdec_site/engine/cli.py", "specdec_site/engine/freshness.py", "specdec_site/engine/config.py")
PACKAGES = ("specdec", "specdec_site")

# The BuildConfig fields (to_dict keys) each stage reads; "quick" for all: a quick artifact is never a full one.
STAGE_CONFIG = {
    "traces": ("quick", "prompts", "trace_prompts", "trace_tokens", "trace_k", "adaptive_trace_k", "trace_tree", "modes", "sampled_temperature"),
    "policies": ("quick", "fixed_k", "sweep_ks", "policy_prompts", "core_prompts", "policy_prompt_start",
                 "policy_tokens", "policy_prompt_cap", "modes", "sampled_temperature"),
    "trees": ("quick", "tree_prompts", "tree_rows", "tree_cost_reps", "tree_design_prompts", "tree_design_tokens",
              "core_prompts", "policy_prompt_start", "policy_tokens", "policy_prompt_cap", "modes", "sampled_temperature"),
    "block": ("quick", "block_runs", "fixed_k", "policy_prompt_start", "policy_tokens", "policy_prompt_cap"),
    "exactness": ("quick", "exact_samples", "mutation_sampled_runs", "audit_samples", "mutation_variants", "audit_rows"),
    "notebook": ("quick",),
}
# `modes` is derived from sampled_temperature, so reading it counts as reading that too.
DERIVED = {"modes": ("sampled_temperature",)}


def _module_path(name: str) -> Path | None:
    """The file of a module of this repository's packages (dotted name), None for anything else."""
    if name.split(".")[0] not in PACKAGES:
        return None
    base = ROOT.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return path
    return None


@functools.cache
def _specdec_exports() -> dict:
    """specdec/__init__.py's _EXPORTS (public name -> submodule), read from the source: `from specdec import X`."""
    tree = ast.parse((ROOT / "specdec" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in targets):
                return ast.literal_eval(node.value)
    return {}


def _source(path: Path) -> str:
    """A file's Python source; for a notebook, its code cells (what its kernel runs)."""
    if path.suffix != ".ipynb":
        return path.read_text()
    cells = json.loads(path.read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    return "\n".join(line for cell in code for line in cell.splitlines() if not line.lstrip().startswith(("%", "!")))


def imported_files(path: Path) -> set[Path]:
    """The repository modules one file (or notebook) imports, anywhere in it (function-level imports too)."""
    names, from_specdec = _imported_names(_source(path), tuple(path.relative_to(ROOT).parts[:-1]))
    lazy = _specdec_exports()  # specdec's lazy public names: `from specdec import X` runs specdec/<lazy[X]>.py
    names = names | {parent for alias in from_specdec if alias in lazy for parent in _with_parents(f"specdec.{lazy[alias]}")}
    return {_module_path(name) for name in names} - {None, path}


@functools.cache
def _imported_names(source: str, package: tuple) -> tuple[frozenset[str], frozenset[str]]:
    """(the dotted module names a source imports, each package above a module too; the names it imports `from
    specdec`), parsed once per text: the guards' tests and a build ask for the same unchanged file many times (an
    edited file is a new key; the paths and specdec's export table are looked up afresh by imported_files)."""
    found, from_specdec = set(), set()
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            module = ".".join(filter(None, (base, node.module)))
            names = [module, *(f"{module}.{alias.name}" for alias in node.names)]  # `from package import module`
            if module == "specdec":
                from_specdec.update(alias.name for alias in node.names)
        for name in names:
            found.update(_with_parents(name))
    return frozenset(found), frozenset(from_specdec)


def _with_parents(name: str) -> list[str]:
    """A dotted module name and every package above it (a package's __init__ runs too): a.b.c -> a, a.b, a.b.c."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def stage_files(stage: str) -> list[Path]:
    """The files whose bytes make a stage's code digest, sorted: its module, the entry points, the code it runs from
    its inputs (the notebook's cells), and every repository module they import, transitively (stages.py's own
    imports, the other stages, are not followed)."""
    from specdec_site.engine.stages import STAGE_MODULES, STAGES

    followed = [ROOT / f for f in (STAGE_MODULES[stage], *STAGES[stage].code_inputs, *FOLLOWED_ENTRY)]
    if STAGES[stage].models:
        followed += [ROOT / f for f in MODEL_ENTRY]
    return followed_files(followed, hashed=[ROOT / f for f in ENTRY])


def followed_files(followed: list[Path], hashed: list[Path] = ()) -> list[Path]:
    """`followed` and every repository module they import, transitively (NOT_CODE left out), with `hashed` (files
    hashed but not followed), sorted: the files of one code digest."""
    excluded = {ROOT / f for f in NOT_CODE}
    seen, todo = {*followed, *hashed}, list(followed)
    while todo:
        for path in imported_files(todo.pop()) - seen - excluded:
            seen.add(path)
            todo.append(path)
    return sorted(seen)


# The design tool's artifacts (docs/data/design-*.json): each records the digest of the code its command runs, from
# the tool's module, and the sha256 of the chains files it read; tests/test_guards.py holds them to this checkout.
DESIGN_TOOLS = {"replay": "specdec_site/design/replay.py", "probe": "specdec_site/design/probe.py"}


def tool_code_hash(tool: str) -> str:
    """sha256 over the code a design command runs (its module and what it imports), as stage_code_hash for a stage."""
    return hash_paths(followed_files([ROOT / DESIGN_TOOLS[tool]]))


@functools.cache
def stage_code_hash(stage: str) -> str:
    """sha256 over the code a stage runs, read once per build (edits during a long build are not attributed)."""
    return hash_paths(stage_files(stage))


def data_code() -> list[Path]:
    """Every file some stage runs: the global code digest of an artifact (code_hash) covers these."""
    from specdec_site.engine.stages import STAGES

    return sorted({p for name in STAGES for p in stage_files(name)})


@functools.cache
def code_hash() -> str:
    """sha256 over all of the data code, read once at start: an artifact's code_sha256 (older artifacts, which
    carry no per-stage digest, are judged by it)."""
    return hash_paths(data_code())


def stage_settings(stage: str, config: dict) -> dict:
    """The part of a build's settings (cli's per-stage config dict) that the stage's digest covers: every entry that
    is not a BuildConfig field (models, device, dtype, seed, prompts, input files...), and its own fields."""
    from specdec_site.engine.config import FULL

    fields = set(FULL.to_dict())
    return {key: value for key, value in config.items() if key not in fields or key in STAGE_CONFIG[stage]}


class UndeclaredSetting(RuntimeError):
    """A stage read a setting that STAGE_CONFIG does not list for it."""


class RecordedConfig:
    """A read-only view of a BuildConfig that notes which fields a stage reads. Given the stage, it refuses a field
    that STAGE_CONFIG does not list for it at the first read, before the stage has spent its minutes (the trees
    stage once ran 12 min to be refused at the end)."""

    def __init__(self, cfg, stage: str | None = None):
        object.__setattr__(self, "_cfg", cfg)
        object.__setattr__(self, "read", set())
        object.__setattr__(self, "stage", stage)

    def __getattr__(self, name):
        self.read.add(name)
        for source in DERIVED.get(name, ()):
            self.read.add(source)
        if self.stage is not None and self.undeclared(self.stage):
            raise UndeclaredSetting(f"the {self.stage} stage read settings {self.undeclared(self.stage)} that "
                                    "freshness.STAGE_CONFIG does not list for it (a change to them would not rerun "
                                    "it): add them there; nothing was written for this stage")
        return getattr(self._cfg, name)

    def __setattr__(self, name, value):
        raise AttributeError("the build config is read-only")

    def undeclared(self, stage: str) -> list[str]:
        """Fields read that STAGE_CONFIG does not list for the stage (their change would not rerun it)."""
        return sorted(self.read - set(STAGE_CONFIG[stage]))
