"""What a build runs: one typed config for the full and the quick build."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from specdec_site.prompts import PROMPTS


@dataclass(frozen=True)
class BuildConfig:
    # the traces stage's prompt table, domain -> [{"id", "kind", "text"}]: prompts.PROMPTS, or the user's (--prompts)
    prompts: dict = field(default_factory=lambda: PROMPTS)
    trace_prompts: dict = field(default_factory=lambda: {"code": 3, "prose": 3})  # prompts per domain with traces
    trace_tokens: int = 48  # new tokens per recorded trace (stops early at end-of-turn)
    trace_k: int = 4  # k of the fixed-k traces
    adaptive_trace_k: int = 16  # the cap of the adaptive-policy traces (variable draft lengths)
    trace_tree: tuple | None = (2, 3)  # (width, depth) of the token-tree traces (the full tree: 14 nodes); None: none
    # the k values of the fixed-k sweep, run greedily in the policies stage on the matrix's prompts (policy_tokens
    # each; the k = fixed_k run is the fixed variant's, and the target-only run is the prompt's one)
    sweep_ks: tuple = (1, 2, 3, 4, 6, 8)
    fixed_k: int = 4  # k of the policies stage's fixed-k variant and of Hugging Face's constant schedule
    exact_samples: int = 10_000  # sampled sequences per rule in the exactness stage
    mutation_sampled_runs: int = 2000  # sampled sequences of the mutation table's statistical check, per variant
    audit_samples: int = 4000  # continuations per row of the exactness audit (specdec_site.exactness.audit), every implementation
    # the mutation table's wrong variants and the audit's rows, by name (specdec_site.exactness.mutants.MUTANTS,
    # specdec_site.exactness.audit.audit_rows); None: all of them. The quick build runs a few of each, end to end: the fast tier
    # runs every variant against its checks (tests/test_mutants.py) and every row (tests/test_audit.py)
    mutation_variants: tuple | None = None
    audit_rows: tuple | None = None
    # public prompts per domain, the full matrix (public_prompts.SOURCES: HumanEval, the Language Reference, ChatterBot,
    # Jane Austen's novels); the narrative set runs in this stage only (issue 47): the trees and block stages keep
    # three sets, so that the full build stays within its time
    policy_prompts: dict = field(default_factory=lambda: {"code": 4, "prose": 4, "dialogue": 4, "narrative": 4})
    # public prompts per domain, the core set (the matrix's first); 12, not 20: with the matrix, the k sweep and the
    # best drafter's runs, 20 made the full CPU build of two domains take 57-69 min here, over its 60 (issue 24)
    core_prompts: dict = field(default_factory=lambda: {"code": 12, "prose": 12, "dialogue": 12, "narrative": 12})
    policy_prompt_start: int = 0  # index of the first public prompt used
    policy_tokens: int = 48  # new tokens per policies-stage run
    # None: whole prompts; N: each policies-stage prompt cut to its last N tokens (the quick build: there a run makes
    # only policy_tokens = 8 tokens, and a code prompt's prefill of ~110 tokens was most of the stage's time)
    policy_prompt_cap: int | None = None
    # the trees stage (trees_stage.py): its benchmark prompts per domain (the core set's first: the matrix's prompts), the rows of its cost
    # curves (a pass of the target and of the draft), repetitions per row count, and the design prompts per domain
    # (prompts.PROMPTS) with the tokens per prompt that its acceptance-by-rank model is fitted on
    tree_prompts: dict = field(default_factory=lambda: {"code": 4, "prose": 4, "dialogue": 4})
    tree_rows: tuple = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
    tree_cost_reps: int = 5
    tree_design_prompts: int = 4
    tree_design_tokens: int = 48
    # the block stage (block_stage.py): block verification against the token rule, fixed k = fixed_k, per
    # (temperature, public prompts per domain): at the sampled mode's 0.7 the core set, at 1.0 the matrix's prompts
    block_runs: tuple = ((0.7, {"code": 12, "prose": 12, "dialogue": 12}), (1.0, {"code": 4, "prose": 4, "dialogue": 4}))
    sampled_temperature: float = 0.7  # temperature of the "sampled" mode
    quick: bool = False  # a small end-to-end run (CI), never committed

    @property
    def modes(self) -> dict:
        """Sampling mode name -> sampling arguments."""
        return {"greedy": {"temperature": 0.0}, "sampled": {"temperature": self.sampled_temperature}}

    def to_dict(self) -> dict:
        return {**asdict(self), "sweep_ks": list(self.sweep_ks), "tree_rows": list(self.tree_rows),
                "trace_tree": list(self.trace_tree) if self.trace_tree else None,
                "mutation_variants": None if self.mutation_variants is None else list(self.mutation_variants),
                "audit_rows": None if self.audit_rows is None else list(self.audit_rows),
                "block_runs": [[t, dict(per_set)] for t, per_set in self.block_runs], "modes": self.modes}


FULL = BuildConfig()
QUICK = BuildConfig(
    trace_prompts={"code": 1, "prose": 1}, trace_tokens=4, adaptive_trace_k=4,
    sweep_ks=(1, 2), fixed_k=2, exact_samples=100, mutation_sampled_runs=60, audit_samples=30, policy_prompts={"code": 1, "prose": 1, "dialogue": 1, "narrative": 1},
    core_prompts={"code": 2, "prose": 2, "dialogue": 2, "narrative": 2}, policy_tokens=8,
    tree_prompts={"code": 1, "prose": 1, "dialogue": 1}, tree_rows=(1, 2, 4, 8), tree_cost_reps=1, tree_design_prompts=1,
    tree_design_tokens=8, policy_prompt_cap=12, block_runs=((0.7, {"code": 1, "prose": 1, "dialogue": 1}),),
    mutation_variants=("wrong_residual", "rollback_off_by_one"),  # a bug in the rule, one in the decoder's cache
    audit_rows=("specdec-fixed-model", "hf-assistant-defaults", "control-alpha-residual", "eagle-tree-sampling"),
    quick=True,
)


def build_config(quick: bool, k: int | None = None, temperature: float | None = None,
                 prompts: dict | None = None) -> BuildConfig:
    """FULL or QUICK with the command line's overrides (a new object: nothing global changes). `prompts`, the user's
    prompt table, replaces the traces stage's: every prompt of it gets traces."""
    cfg = QUICK if quick else FULL
    if prompts is not None:
        cfg = replace(cfg, prompts=prompts, trace_prompts={domain: len(rows) for domain, rows in prompts.items()})
    if k is not None:
        cfg = replace(cfg, trace_k=k, fixed_k=k)
    if temperature is not None:
        cfg = replace(cfg, sampled_temperature=temperature)
    return cfg
