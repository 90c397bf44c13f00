"""Mutation testing of the exactness checks: known wrong variants of the rule must fail them.

A check that never fails proves nothing. Each `Mutant` is one small edit of the library's source
(`specdec/`; the bugs peers shipped: a biased acceptance test, the wrong residual, the bonus token from the
wrong row, q not being the distribution the draft sampled from, a KV-cache rollback off by one). The harness
lives here, in the build package, so that the library carries no test machinery: `mutated` compiles the
edited source and swaps the edited function in everywhere it is referenced (every loaded module), for the
duration of a `with` block; `naive_rule()` is the wrong residual alone (the Exactness page's second rule); `CHECKS` are the quick exactness checks (exact enumeration, a one-step
statistical test through `verify_draft` alone, greedy equality and a sampled test on tiny models).
`mutation_table` runs every check on the correct code and on every mutant: the tests require the
correct code to pass all and every mutant to fail at least one; the Exactness page shows the table.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import math
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Mutant:
    name: str  # short id
    what: str  # the bug, in words
    module: str  # module of specdec holding the edited function
    function: str  # "func" or "Class.method"
    old: str  # source text replaced (must occur exactly once in the function)
    new: str  # its wrong replacement


MUTANTS = (
    Mutant("biased_acceptance", "accept with probability 0.97 min(1, p/q)", "verify", "verify_draft",
           "accepted = uniforms < accept_probs", "accepted = uniforms < accept_probs * 0.97"),
    Mutant("biased_acceptance_1pct", "accept with probability 0.99 min(1, p/q)", "verify", "verify_draft",
           "accepted = uniforms < accept_probs", "accepted = uniforms < accept_probs * 0.99"),
    Mutant("wrong_residual", "resample from norm(max(0, p - a q)), a of the rejected token", "verify",
           "verify_draft", "residual = residual_distribution(p_target[n_accepted], q_draft[n_accepted])",
           "residual = naive_residual(p_target[n_accepted], q_draft[n_accepted], draft_tokens[n_accepted])"),
    Mutant("bonus_wrong_row", "bonus token drawn from p_target[k - 1] instead of p_target[k]", "verify",
           "verify_draft", "extra = sample(p_target[k], generator)", "extra = sample(p_target[k - 1], generator)"),
    Mutant("q_not_sampled", "the draft samples at half the temperature; q is reported at the full one",
           "drafters", "ModelDrafter.propose", "seq[0, start + n] = sample(q_draft[n], generator)",
           "seq[0, start + n] = sample(probs_from_logits(logits[0] * 2, config), generator)"),
    Mutant("rollback_off_by_one", "the target's KV cache keeps one rejected position", "decoding",
           "speculative_generate", "target_lm.commit(n_new - 1, ", "target_lm.commit(n_new, "),
    # The Math's policy condition: whether to draft position i + 1 may depend on x_1..x_i and q, never on x_(i+1)
    # itself. Cutting a draft after seeing it turns its rejection branch into a bonus draw from p (there: p = (1/2,
    # 1/2), q = (0.9, 0.1), dropping a drafted B gives P(A) = 0.55).
    Mutant("draft_cut_after_seen", "a draft dropped after it was drawn, when it is token 0 (the policy read x_(i+1))",
           "decoding", "speculative_generate", "        draft_tokens = proposal.tokens  # (k_step,)",
           "        if proposal.n and int(proposal.tokens[-1]) == 0:\n"
           "            proposal = dataclasses.replace(proposal, tokens=proposal.tokens[:-1], q_draft=proposal.q_draft[:-1],\n"
           "                                           confidences=proposal.confidences[:-1])\n"
           "        draft_tokens = proposal.tokens  # (k_step,)"),
    # Token trees (tree.py, verify.verify_tree and verify_tree_sampled, cache.tree_attention): the bugs a tree adds.
    Mutant("tree_mask_sees_siblings", "a tree node attends to every earlier node, its siblings and cousins too",
           "cache", "tree_attention", "allowed[row, row] = True", "allowed[row, n_prefix:row + 1] = True"),
    Mutant("tree_positions_by_index", "a tree node's position is its index in the pass, not prefix + depth",
           "cache", "tree_attention", "positions = list(range(n_prefix)) + [n_prefix + d for d in depth]",
           "positions = list(range(n_prefix + n_nodes))"),
    Mutant("tree_leaf_bonus_unwarped", "a tree leaf's bonus token drawn from the target's plain softmax, without "
           "temperature, top-k and top-p (EAGLE's published code)", "decoding", "speculative_generate",
           "p_target = probs_from_logits(target_lm.logits(seq[:, : n + k_step], k_step + 1, proposal.parents), config)",
           "p_target = unwarped_leaves(target_lm.logits(seq[:, : n + k_step], k_step + 1, proposal.parents), config,\n"
           "                                   proposal.parents)"),
    # Block verification (verify.verify_block, block_terms): the two errors the issue names.
    Mutant("block_token_residual", "block verification resamples from the token rule's residual norm(max(0, p - q)) "
           "after it keeps a prefix shorter than k", "verify", "verify_block",
           "residual = residual_distribution(weights[n_accepted] * p_target[n_accepted], q_draft[n_accepted])",
           "residual = residual_distribution(p_target[n_accepted], q_draft[n_accepted])"),
    Mutant("block_product_uncapped", "block verification's running product of p/q not capped at 1", "verify",
           "block_terms", "weights.append(w.clamp(max=1.0) if cap else w)", "weights.append(w)"),
    Mutant("tree_residual_keeps_tried", "sampled children: q keeps the children already tried (the residual and the "
           "next test use q with them)", "verify", "verify_tree_sampled", "q_row[x] = 0.0", "pass  # q keeps x"),
)


def unwarped_leaves(logits: torch.Tensor, config, parents) -> torch.Tensor:
    """The target's p at every row, but at a tree's leaves (the rows a bonus token is drawn from) its plain
    softmax: the temperature, top-k and top-p left out (the tree_leaf_bonus_unwarped mutant's bug)."""
    from specdec.sampling import probs_from_logits

    p = probs_from_logits(logits, config)
    if parents is None:
        return p
    leaves = [i + 1 for i in range(len(parents)) if i not in set(parents)]
    p[leaves] = torch.softmax(logits[leaves].float(), dim=-1)
    return p


def _lookup(module, dotted: str):
    owner, name = module, dotted
    if "." in dotted:
        cls, name = dotted.split(".")
        owner = getattr(module, cls)
    return owner, name, getattr(owner, name)


BY_NAME = {m.name: m for m in MUTANTS}


def _compile_mutant(mutant: Mutant) -> tuple[object, str, Callable, Callable]:
    from specdec_site.exactness.exact import naive_residual

    module = importlib.import_module(f"specdec.{mutant.module}")
    owner, name, original = _lookup(module, mutant.function)
    source = textwrap.dedent(inspect.getsource(original))
    if source.count(mutant.old) != 1:
        raise ValueError(f"mutant {mutant.name}: {mutant.old!r} does not occur once in {mutant.function}")
    # the module's imports and helpers, and the wrong residual a mutant may call; the edited def is added
    namespace = {**vars(module), "naive_residual": naive_residual, "dataclasses": dataclasses,
                 "unwarped_leaves": unwarped_leaves}
    exec(compile(source.replace(mutant.old, mutant.new), f"<mutant {mutant.name}>", "exec"), namespace)
    replacement = namespace[name]
    for attr in ("__kwdefaults__", "__defaults__"):  # defaults evaluated in the module, not re-made
        setattr(replacement, attr, getattr(original, attr))
    return owner, name, original, replacement


@contextlib.contextmanager
def mutated(mutant: Mutant):
    """Within the block, `mutant.function` is the edited one wherever specdec references it."""
    owner, name, original, replacement = _compile_mutant(mutant)
    # Every reference, in any loaded module (the library's own, the build's, a test's `from specdec import ...`).
    swaps = [(owner, name, original)]
    for mod in list(sys.modules.values()):
        try:
            items = list(vars(mod).items())
        except TypeError:
            continue
        swaps += [(mod, attr, value) for attr, value in items if value is original and (mod, attr) != (owner, name)]
    try:
        for obj, attr, _ in swaps:
            setattr(obj, attr, replacement)
        yield mutant
    finally:
        for obj, attr, value in swaps:
            setattr(obj, attr, value)


def naive_rule():
    """verify_draft with the wrong residual norm(max(0, p - alpha q)), within a `with` block."""
    return mutated(BY_NAME["wrong_residual"])


# ---------------------------------------------------------------- the quick exactness checks


def check_enumeration() -> str | None:
    """Exact: the first emitted token of verify_draft is distributed as p_target[0] (boundary replays),
    and an all-accepted step's bonus comes from p_target[k]. None if it passes, else why not."""
    from specdec.verify import verify_draft
    from specdec_site.exactness.exact import COUNTEREXAMPLE_P, COUNTEREXAMPLE_Q, first_token_distribution

    gen = torch.Generator().manual_seed(7)
    cases = [(torch.tensor(COUNTEREXAMPLE_P, dtype=torch.float64), torch.tensor(COUNTEREXAMPLE_Q, dtype=torch.float64))]
    for trial in range(200):
        V, k = 2 + trial % 5, 1 + trial % 3
        cases.append((torch.softmax(torch.randn(k + 1, V, generator=gen, dtype=torch.float64) * 2, -1),
                      torch.softmax(torch.randn(k, V, generator=gen, dtype=torch.float64) * 2, -1)))
    for i, (p, q) in enumerate(cases):
        try:
            dist = first_token_distribution(p, q)
        except AssertionError as err:
            return f"case {i}: {err}"
        worst = float((dist - p[0]).abs().max())
        if worst > 1e-9:
            return f"case {i}: the first token's distribution is off p_target[0] by {worst:.3g}"
    # The bonus row: p_target[k] one-hot at token 2, every earlier row one-hot at the draft token.
    p = torch.tensor([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]])
    q = torch.tensor([[1.0, 0, 0], [0, 1.0, 0]])
    result = verify_draft(torch.tensor([0, 1]), q, p, gen)
    if result.tokens.tolist() != [0, 1, 2]:
        return f"an all-accepted step emitted {result.tokens.tolist()}, expected [0, 1, 2] (bonus from p_target[k])"
    return None


def check_acceptance_statistics(n_draws: int = 1_000_000, z_max: float = 6.0) -> str | None:
    """Statistical, one step, no model: 10^6 independent accept decisions of verify_draft (one call, k = 10^6
    positions, each drafted from its own q), binned by token; the accepted fraction must match
    min(q, p) per token within z_max standard errors. Power: a 1% bias in the comparison is > 10 sigma."""
    from specdec.verify import verify_draft

    gen = torch.Generator().manual_seed(11)
    p_row = torch.tensor([0.40, 0.30, 0.20, 0.10], dtype=torch.float64)
    q_row = torch.tensor([0.60, 0.10, 0.25, 0.05], dtype=torch.float64)
    q_draft = q_row.expand(n_draws, -1)
    p_target = p_row.expand(n_draws + 1, -1)
    draft_tokens = torch.multinomial(q_row, n_draws, replacement=True, generator=gen)
    result = verify_draft(draft_tokens, q_draft, p_target, gen)
    for x in range(len(p_row)):
        drafted = draft_tokens == x
        n_x = int(drafted.sum())
        a = min(1.0, float(p_row[x] / q_row[x]))
        got = int((result.accepted & drafted).sum())
        se = math.sqrt(max(n_x * a * (1 - a), 1e-12))
        z = (got - n_x * a) / se
        if abs(z) > z_max or (a == 1.0 and got != n_x):
            return f"token {x}: accepted {got} of {n_x} drafts, expected {n_x * a:.0f} (min(1, p/q) = {a:.4f}), z = {z:.1f}"
    return None


def _tiny_pair(vocab: int = 6, init_scale: float = 0.6):
    from specdec_site.exactness.exact import make_tiny_lm

    return make_tiny_lm(1, vocab, init_scale), make_tiny_lm(2, vocab, init_scale)


def check_greedy_equality() -> str | None:
    """Token for token: greedy speculative decoding equals greedy decoding of the target (tiny models)."""
    return _greedy_equality((1, 3, 5))


def _greedy_equality(ks: tuple[int, ...], **options) -> str | None:
    """The first greedy run of a tiny pair (4 prompts, each k in ks, 16 tokens, `options` to speculative_generate)
    that differs from the target's own greedy decoding, described; None when every run equals it."""
    from specdec import decoding

    target, draft = _tiny_pair(12)
    for seed in range(4):
        prompt = torch.randint(12, (3,), generator=torch.Generator().manual_seed(seed))
        reference = decoding.autoregressive_generate(target, prompt, max_new_tokens=16, temperature=0.0,
                                                     generator=torch.Generator())
        for k in ks:
            out = decoding.speculative_generate(target, draft, prompt, max_new_tokens=16, k=k, temperature=0.0,
                                                generator=torch.Generator(), **options)
            if out.tolist() != reference.tolist():
                return f"prompt {prompt.tolist()}, k = {k}: {out.tolist()} != target greedy {reference.tolist()}"
    return None


def check_sampled_sequences(n_runs: int = 2000, alpha: float = 1e-3) -> str | None:
    """Statistical, through the decoder: 2 tokens sampled at T = 1 with k = 1 from tiny models, chi-square against
    the exact distribution of the target's own sampling. Aimed at a wrong q: 4 ids and flat models (init range
    0.3), so that every one of the 16 sequences is a bin and a draft sampling at another temperature than the q it
    reports moves them far (p ~ 1e-10 at 1000 runs, where the earlier 3 tokens of 6 ids needed 2000 for 1e-8)."""
    from specdec.sampling import SamplingConfig
    from specdec_site.exactness.exact import chi_square_test, one_thread, sample_sequence_counts, sequence_distribution

    target, draft = _tiny_pair(4, 0.3)
    prompt = torch.tensor([1, 3])
    exact = sequence_distribution(target, prompt, 2, SamplingConfig(1.0))
    with one_thread():
        counts = sample_sequence_counts(target, draft, prompt, 2, n_runs, seed=3, k=1, temperature=1.0)
    result = chi_square_test(counts, exact)
    if result["p_value"] < alpha:
        return f"chi-square p = {result['p_value']:.2g} over {n_runs} sampled sequences (TV {result['tv_distance']:.3f})"
    return None


def check_tree_enumeration() -> str | None:
    """Exact, no model, both tree rules on random small trees and vocabularies (specdec_site.exactness.exact):
    sample and match replayed at every outcome of every draw emits the path and token drawn, from the right rows;
    recursive rejection sampling's first token, over every draw of the children without replacement and both
    branches of every comparison, is distributed as p at the root."""
    from specdec_site.exactness.exact import sampled_tree_first_token_distribution, tree_outcomes

    gen = torch.Generator().manual_seed(13)
    for trial in range(60):
        V, width = 3 + trial % 3, 1 + trial % 2
        parents = [-1] * width + [i for i in range(width) for _ in range(width)]  # two levels
        p = torch.softmax(torch.randn(len(parents) + 1, V, generator=gen, dtype=torch.float64) * 2, -1)
        tokens = torch.tensor([int(x) for x in torch.randperm(V, generator=gen)[:width]] * (1 + width))
        try:
            tree_outcomes(tokens, parents, p)
        except AssertionError as err:
            return f"sample and match, case {trial}: {err}"
        q = torch.softmax(torch.randn(V, generator=gen, dtype=torch.float64) * 2, -1)
        dist = sampled_tree_first_token_distribution(p[0], q, min(width + 1, V - 1))
        worst = float((dist - p[0]).abs().max())
        if worst > 1e-9:
            return f"recursive rejection sampling, case {trial}: the first token is off p at the root by {worst:.3g}"
    return None


def check_tree_greedy_equality() -> str | None:
    """Token for token: greedy decoding with token trees (static, dynamic, sampled children) equals greedy decoding
    of the target (tiny models), with the caches checked after every step."""
    from specdec import decoding
    from specdec.tree import TreeDrafter, TreeShape

    target, draft = _tiny_pair(12)
    drafters = {"full 2x3": lambda: TreeDrafter(draft, TreeShape.full(2, 3)),
                "dynamic": lambda: TreeDrafter(draft, width=3, depth=3, nodes=8),
                "sampled 2x2": lambda: TreeDrafter(draft, TreeShape.full(2, 2), sampled=True)}
    for seed in range(4):
        prompt = torch.randint(12, (3,), generator=torch.Generator().manual_seed(seed))
        reference = decoding.autoregressive_generate(target, prompt, max_new_tokens=16, temperature=0.0,
                                                     generator=torch.Generator())
        for name, make in drafters.items():
            out = decoding.speculative_generate(target, make(), prompt, max_new_tokens=16, k=4, temperature=0.0,
                                                generator=torch.Generator(), check_cache_invariant=True)
            if out.tolist() != reference.tolist():
                return f"prompt {prompt.tolist()}, {name} tree: {out.tolist()} != target greedy {reference.tolist()}"
    return None


def check_tree_sampled_sequences(n_runs: int = 2000, alpha: float = 1e-3) -> str | None:
    """Statistical, through the decoder: 2 tokens sampled at T = 0.7 with top-p 0.9 through a one-level tree of the
    draft's top-2 (its children are leaves: every accepted child is followed by a bonus token), chi-square against
    the exact distribution of the target's own sampling under the same settings."""
    from specdec.sampling import SamplingConfig
    from specdec.tree import TreeDrafter, TreeShape
    from specdec_site.exactness.exact import chi_square_test, one_thread, sample_sequence_counts, sequence_distribution

    target, draft = _tiny_pair(4, 0.3)
    prompt = torch.tensor([1, 3])
    config = SamplingConfig(0.7, top_p=0.9)
    exact = sequence_distribution(target, prompt, 2, config)
    with one_thread():
        counts = sample_sequence_counts(target, TreeDrafter(draft, TreeShape.full(2, 1)), prompt, 2, n_runs, seed=5,
                                        k=1, temperature=0.7, top_p=0.9)
    result = chi_square_test(counts, exact)
    if result["p_value"] < alpha:
        return f"chi-square p = {result['p_value']:.2g} over {n_runs} sampled sequences (TV {result['tv_distance']:.3f})"
    return None


def check_block_enumeration() -> str | None:
    """Exact, no model: block verification on random small context tables (3-4 ids, k = 2-3), every draft block and
    every prefix the rule can keep replayed through verify_block (specdec_site.exactness.exact.block_sequence_distribution):
    the first k + 1 tokens are distributed as the target's."""
    from specdec_site.exactness.exact import block_sequence_distribution, random_context_tables

    for trial in range(24):
        V, k = 3 + trial % 2, 2 + trial % 3 // 2
        p_of, q_of = random_context_tables(V, k, seed=100 + trial)
        try:
            got, want = block_sequence_distribution(p_of, q_of, V, k)
        except AssertionError as err:
            return f"case {trial}: {err}"
        worst = max(abs(got[s] - want[s]) for s in want)
        if worst > 1e-9:
            return f"case {trial} (V = {V}, k = {k}): a sequence's probability is off the target's by {worst:.3g}"
    return None


def check_block_greedy_equality() -> str | None:
    """Token for token: greedy decoding under block verification equals greedy decoding of the target (tiny models,
    k = 1, 3, 6), with the caches checked after every step."""
    return _greedy_equality((1, 3, 6), check_cache_invariant=True, verify="block")


CHECKS: dict[str, Callable[[], str | None]] = {
    "enumeration": check_enumeration,
    "acceptance_statistics": check_acceptance_statistics,
    "greedy_equality": check_greedy_equality,
    "sampled_sequences": check_sampled_sequences,
    "tree_enumeration": check_tree_enumeration,
    "tree_greedy_equality": check_tree_greedy_equality,
    "tree_sampled_sequences": check_tree_sampled_sequences,
    "block_enumeration": check_block_enumeration,
    "block_greedy_equality": check_block_greedy_equality,
}
SAMPLED = ("sampled_sequences", "tree_sampled_sequences")  # the checks whose size is the build's sampled runs


def run_check(name: str, sampled_runs: int = 2000) -> str | None:
    """One check: None (passed) or the reason it failed; an exception inside it is a failure too."""
    try:
        return CHECKS[name](n_runs=sampled_runs) if name in SAMPLED else CHECKS[name]()
    except Exception as err:  # a mutant may crash a check: that is a detection, recorded as such
        return f"{type(err).__name__}: {err}"


def run_checks(sampled_runs: int = 2000) -> dict[str, str | None]:
    """{check: None (passed) or the reason it failed}, every check."""
    return {name: run_check(name, sampled_runs) for name in CHECKS}


def mutation_table(mutants=MUTANTS, sampled_runs: int = 2000, progress=lambda it, **kw: it) -> list[dict]:
    """One row per variant (the correct code first): which checks fail it, and why."""
    rows = [{"variant": "correct", "what": "this repository's code", "failures": run_checks(sampled_runs)}]
    for mutant in progress(mutants, desc="mutants", unit="mutant"):
        with mutated(mutant):
            rows.append({"variant": mutant.name, "what": mutant.what, "failures": run_checks(sampled_runs)})
    return rows
