"""Every number or string a page quotes, as an explicit table: marker name -> how it is computed.

A page's [[val:NAME]] must name an entry of VALUES (the hook refuses any other; `python -m specdec_site.site.values`
lists them). Values are formatted here, once, so that a page never rounds a number itself. The table is assembled
from one module per artifact, each citing where its values come from:

    provenance  the pair, its versions, each artifact's build (stage_rows: <field>_<stage>), the citation
    sweep       the k sweep per public set, the histogram, the theory's fit (policies.json "sweeps")
    policies    the length policies and drafters per public set (policies.json "domains")
    traces      the recorded runs (traces.json)
    exactness   the rules against the target, the mutation table, the audit (exactness.json)
    design      the shipped prior, the design replay and probe (docs/data/design-replay.json, design-probe.json)
    trees       token trees against the chain (trees.json)
    block       block verification against the token rule (block.json, exactness.json's block rule)

A public prompt set's rows are made by one function per module (policies.set_rows, sweep.set_rows), for every set of
public_prompts.SOURCES when the table is built (build_values): a set registered there gets its rows with no edit
here. The trees and block stages' per-set rows follow the sets those stages run (config.FULL).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from specdec_site.policy_variants import HF_VARIANTS, VARIANTS
from specdec_site.site.values import block, design, exactness, policies, provenance, sweep, traces, trees
from specdec_site.site.values.common import NOT_RUN, Artifacts, NotRecorded, NotRun, fmt, fmt_p, public_sets
from specdec_site.site.values.design import DESIGN_PROBE, DESIGN_REPLAY, design_replay, replay_tables
from specdec_site.site.values.exactness import audit_tables
from specdec_site.site.values.policies import over_capped_oracle
from specdec_site.site.values.trees import tree_set_table, tree_tables

_Artifacts = Artifacts  # the name tests and callers have imported

__all__ = ["DESIGN_PROBE", "DESIGN_REPLAY", "NOT_RUN", "PROMPT_SETS", "VALUES", "NotRecorded",
           "NotRun", "audit_tables", "build_values", "compute_values", "design_replay", "fmt", "fmt_p",
           "over_capped_oracle", "prompt_set", "replay_tables", "tree_set_table", "tree_tables", "value_or_not_run"]


def build_values() -> dict[str, Callable]:
    """The table, from each module's parts, for the public prompt sets registered now (public_sets).

    The parts are listed in the order values.json has always listed its values (one table once held them all, in
    page order), so that a rebuild from the same artifacts writes the same bytes. A name made twice is a bug: it
    raises, where a merge would keep the last silently."""
    sets = public_sets()
    parts = (
        provenance.PAIR,
        *(provenance.stage_rows(stage) for stage in ("traces", "policies", "exactness", "notebook")),
        provenance.BUILD,
        sweep.sweep_values(sets),
        policies.HF_COMPARISON,
        traces.SAMPLED_ACCEPTANCE,
        sweep.THEORY,
        policies.policy_values(sets),
        traces.TRACES,
        traces.EXAMPLES,
        exactness.EXACTNESS,
        design.DESIGN,
        exactness.SETUP,
        provenance.stage_rows("trees"),
        trees.tree_values(),
        # the block stage's rows were listed command first; kept, so that values.json keeps its bytes
        provenance.stage_rows("block", ("built", "code", "minutes", "command", "platform")),
        block.block_values(),
    )
    table: dict[str, Callable] = {}
    for part in parts:
        twice = table.keys() & part.keys()
        if twice:
            raise ValueError(f"value names made twice: {sorted(twice)}")
        table.update(part)
    return table


VALUES: dict[str, Callable] = build_values()


def compute_values(artifacts: dict, design: dict) -> dict:
    """Every value a page quotes, from the artifacts and the design replay (design_replay)."""
    a = Artifacts(artifacts)
    # The same function and seed as the stage's own summaries, over the matrix's rows: each row of the matrix
    # table then covers the same prompts.
    a.matrix_summaries = policies.matrix_summaries(a)
    a.design = design
    return {name: value_or_not_run(fn, a) for name, fn in VALUES.items()}


def value_or_not_run(fn: Callable, a) -> object:
    """fn(a), or NOT_RUN where the value is of a policies-stage variant that this build did not run (a build without
    the int8 draft runs no float-draft duplicates, say), of a prompt set it did not run, or of a part it ran only a
    few of (NotRun: the quick build's mutation table and audit). Any other missing key is a bug, and raises."""
    try:
        return fn(a)
    except NotRun:
        return NOT_RUN
    except KeyError as err:
        variant = err.args[0] if err.args else None
        known = set(VARIANTS) | set(HF_VARIANTS)
        run = set(a["policies"]["variants"]) | set(a["policies"]["hf"])
        if variant in known and variant not in run:
            return NOT_RUN
        if variant in public_sets() and variant not in a["policies"]["domains"]:
            return NOT_RUN  # a run without this prompt set (one recorded before the narrative set was added, say)
        raise


def _domain() -> str:
    """The public prompt sets' names in a value's name, as a regular expression: (code|prose|dialogue|narrative)."""
    return "(" + "|".join(public_sets()) + ")"


# The prompt sets a value can be measured over, and how a page names each (a regular expression over the page's
# Markdown): a sentence or table that quotes values of two sets must name both (tests/test_build_data.py).
PROMPT_SETS = {
    # the pages' names of the groups: "the subset" (every variant and the sweep) and "all prompts" (the headline)
    "matrix": ("the subset: the first public prompts of each set, where every variant and the fixed-k sweep run",
               r"subset|sweep|\[\[val:(sweep_reps_greedy|pol_sweep_prompts|pol_" + _domain() + r"_matrix_prompts)\]\]"),
    "core": ("all prompts of each public set: the headline's variants",
             r"all prompts|every prompt|\[\[val:pol_" + _domain() + r"_prompts\]\]"),
    "traces": ("the Step Visualizer's recorded runs", r"Step Visualizer|traces"),
    "design": ("the adaptive policy's design prompts (scripts/simulate_policies.py replay)", r"design prompts|replay"),
    "trees": ("the tree benchmark's prompts: the first public prompts of each set, the subset's",
              r"subset's prompts|tree benchmark"),
}


def prompt_set(name: str) -> str | None:
    """The prompt set value `name` is measured over (PROMPT_SETS), or None for a value that is no measurement over
    prompts (a setting, a version, a count of the prompts themselves)."""
    domain = _domain()
    if name.startswith("polm_") or re.match(domain + r"_(greedy|sampled)_", name):
        return "matrix"
    if re.fullmatch(r"pol_" + domain + r"_\w+_(median|ci|over_\w+)", name):
        return "core"
    if name.startswith("trace_"):
        return "traces"
    if name.startswith("replay_"):
        return "design"
    if re.match(r"tree_" + domain + "_", name):
        return "trees"
    return None
