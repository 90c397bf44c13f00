"""Trees and blocks from a hostile user's side: every input class refused in one short line, or run exactly.

Each class is tested as variants of the class, not one reported input: numbers on the command lines (one ASCII
reader, specdec_site.numbers), values that start with a dash, arguments of 100 kB quoted in an error, tree shapes and
tree drafters that would exhaust memory, the exported rules given rows that are not distributions, ids outside the
vocabulary, draws outside [0, 1), malformed parents or no generator, the record of a sampled-children tree, and the
audit's verdict at a power too low to mean "passes". (The Step Visualizer's side is tests/test_site.py.)
"""

from __future__ import annotations

import json
import math
import time

import pytest
import torch

from specdec import (
    TreeDrafter,
    TreeShape,
    speculative_generate,
    verify_block,
    verify_draft,
    verify_tree,
    verify_tree_sampled,
)
from specdec.checks import ArgumentError
from specdec_site.exactness.exact import make_tiny_lm

MAX_ERROR_BYTES = 500


def one_short_line(message: str) -> bool:
    text = message.rstrip("\n")
    return "\n" not in text and len(text.encode()) < MAX_ERROR_BYTES


# ---------------------------------------------------------------- the command lines: numbers, dashes, long values

# What Python's int() and float() take and a person may paste, and what str.isdigit() takes and int() refuses.
NOT_ASCII_INTEGERS = ["²", "2¹", "４", "٣", "1_0", "0x10", "1e3", "4.0", "", " ", "+-1", "nan", "一"]
NOT_FINITE_REALS = ["nan", "NaN", "inf", "-inf", "Infinity", "０.７", "0,7", "1_0.5", "", "0.7.1", "٠.٧"]


def trace_error(capsys, *argv) -> str:
    from specdec_site.trace_command import parse_args

    with pytest.raises(SystemExit) as exit_info:
        parse_args(["--prompt", "def f():", "--out", "/tmp/specdec-hostile-never-written.json", *argv], "specdec")
    assert exit_info.value.code == 2, argv
    return capsys.readouterr().err


def build_error(capsys, *argv) -> str:
    from specdec_site.engine.cli import parse_args

    with pytest.raises(SystemExit) as exit_info:
        parse_args(list(argv), "build")
    assert exit_info.value.code == 2, argv
    return capsys.readouterr().err


@pytest.mark.parametrize("option", ["--k", "--top-k", "--max-new-tokens", "--seed", "--tree-nodes"])
def test_every_integer_option_of_the_trace_command_reads_ascii_digits_only(capsys, option):
    for text in NOT_ASCII_INTEGERS:
        err = trace_error(capsys, f"{option}={text}")
        assert "expected an integer in ASCII digits" in err and one_short_line(err), (option, text, err)


@pytest.mark.parametrize("option", ["--temperature", "--top-p"])
def test_every_real_option_of_the_trace_command_is_a_finite_ascii_number(capsys, option):
    for text in NOT_FINITE_REALS:
        err = trace_error(capsys, f"{option}={text}")
        assert "expected a finite number in ASCII digits" in err and one_short_line(err), (option, text, err)


def test_the_build_reads_its_numbers_the_same_way(capsys):
    for option, bad, message in [("--k", "²", "an integer in ASCII"), ("--seed", "٣", "an integer in ASCII"),
                                 ("--temperature", "inf", "a finite number in ASCII")]:
        err = build_error(capsys, f"{option}={bad}")
        assert message in err and one_short_line(err), (option, err)


@pytest.mark.parametrize("tree", ["²x2", "2x¹", "４x2", "2x3x4", "x", "2x", "axb", "2×3", "1_0x2", "-1x2", "0x3", "17x1"])
def test_a_tree_shape_argument_is_checked_before_anything_loads(capsys, tree):
    err = trace_error(capsys, "--tree", tree)  # "-1x2" given as its own word: a value, not an option
    assert "--tree" in err and one_short_line(err) and "Traceback" not in err, err
    assert "expected one argument" not in err, err


def test_values_that_start_with_a_dash_reach_their_own_check(capsys):
    assert "--k must be in [1, 64], got -1" in trace_error(capsys, "--k", "-1")
    assert "--tree-paths" in trace_error(capsys, "--tree-paths", "-1")
    assert "--domain must be" in trace_error(capsys, "--domain", "-!")
    assert "--max-new-tokens must be in" in trace_error(capsys, "--max-new-tokens", "-5")


def test_an_error_quotes_a_huge_argument_in_one_short_line(capsys):
    huge_paths = ";".join(["0," * 40 + "x"] * 1200)  # ~100 kB
    for argv in (["--tree-paths", huge_paths], ["--tree-paths", ";".join(["0"] * 5000)], ["--domain", "é" * 50000],
                 ["--tree", "2x" + "9" * 60000], ["--k", "7" * 100000]):
        err = trace_error(capsys, *argv)
        assert one_short_line(err), (argv[0], len(err.encode()), err[:200])


def test_tree_sampled_needs_a_static_tree_of_draws(capsys):
    assert "needs a static tree" in trace_error(capsys, "--tree-sampled")
    assert "needs a static tree" in trace_error(capsys, "--tree", "2x2", "--tree-nodes", "3", "--tree-sampled")
    assert "draws 0, 1" in trace_error(capsys, "--tree-paths", "0;1;1,3", "--tree-sampled")


# ---------------------------------------------------------------- tree shapes and drafters: refused before built

BAD_SHAPES = {
    "a float rank": lambda: TreeShape(((1.5,),)),
    "a whole float rank": lambda: TreeShape(((1.0,),)),
    "a string rank": lambda: TreeShape((("0",),)),
    "a path as a string": lambda: TreeShape(("01",)),
    "paths as a string": lambda: TreeShape("0"),
    "a NaN rank": lambda: TreeShape(((math.nan,),)),
    "an inf rank": lambda: TreeShape(((math.inf,),)),
    "a None rank": lambda: TreeShape(((None,),)),
    "a bool rank": lambda: TreeShape(((True,),)),
    "a negative rank": lambda: TreeShape(((-1,),)),
    "an empty path": lambda: TreeShape(((),)),
    "no paths": lambda: TreeShape(()),
    "a path twice": lambda: TreeShape(((0,), (0,))),
    "a missing parent": lambda: TreeShape(((0, 1),)),
    "257 paths": lambda: TreeShape(tuple((r,) for r in range(257))),
    "a million paths, lazily": lambda: TreeShape((r,) for r in range(10 ** 6)),
    "a path a million deep": lambda: TreeShape(((0,) * 10 ** 6,)),
    "full(1000, 3)": lambda: TreeShape.full(1000, 3),
    "full(2, 10**9)": lambda: TreeShape.full(2, 10 ** 9),
    "full(10**9, 1)": lambda: TreeShape.full(10 ** 9, 1),
    "full(2.0, 2)": lambda: TreeShape.full(2.0, 2),
    "chain(10**6)": lambda: TreeShape.chain(10 ** 6),
    "chain(0)": lambda: TreeShape.chain(0),
    "chain('3')": lambda: TreeShape.chain("3"),
    "a rank of 10**5000": lambda: TreeShape(((10 ** 5000,), (-(10 ** 5000),))),
}


@pytest.mark.parametrize("name", BAD_SHAPES)
def test_a_bad_tree_shape_is_one_short_error_at_once(name):
    started = time.perf_counter()
    with pytest.raises(ArgumentError) as err:
        BAD_SHAPES[name]()
    assert time.perf_counter() - started < 1.0, name
    assert one_short_line(str(err.value)), (name, str(err.value)[:300])


def test_a_shape_of_whole_ranks_is_still_a_shape():
    assert TreeShape([[1], [0], [0, 0]]).parents == [-1, -1, 0]
    assert len(TreeShape.full(2, 7).paths) == 254 and len(TreeShape.chain(256).paths) == 256


@pytest.mark.parametrize("kwargs", [dict(width=10 ** 9, depth=2, nodes=4), dict(width=2, depth=10 ** 9, nodes=4),
                                    dict(width=256, depth=256, nodes=256), dict(width=64, depth=64, nodes=10),
                                    dict(width=2, depth=2, nodes=10 ** 6), dict(width=2.0, depth=2, nodes=4)])
def test_a_dynamic_tree_too_large_to_draft_is_refused_when_built(kwargs):
    with pytest.raises(ArgumentError) as err:
        TreeDrafter(torch.nn.Module(), **kwargs)
    assert one_short_line(str(err.value))


# ---------------------------------------------------------------- the exported rules, called directly

V = 6


def dist(rows: int, seed: int = 0) -> torch.Tensor:
    return torch.softmax(torch.randn(rows, V, generator=torch.Generator().manual_seed(seed)) * 2, -1)


def chain_args(k: int = 3):
    q = dist(k, 1)
    tokens = q.argmax(-1)
    return tokens, q, dist(k + 1, 2)


def tree_args():
    tokens = torch.tensor([0, 1, 2, 3])
    parents = [-1, -1, 0, 0]
    q = dist(1, 3).expand(4, V).clone()
    return tokens, parents, q, dist(5, 4)


def spoiled(rows: torch.Tensor, how: str) -> torch.Tensor:
    rows = rows.clone()
    if how == "zero row":
        rows[0] = 0.0
    elif how == "NaN":
        rows[0, 1] = math.nan
    elif how == "+inf":
        rows[0, 1] = math.inf
    elif how == "negative entry":
        rows[0, 1] = -0.25
        rows[0, 2] += 0.25
    elif how == "not summing to 1":
        rows[0] *= 3.0
    return rows


ROW_SPOILS = ["zero row", "NaN", "+inf", "negative entry", "not summing to 1"]
RULES = {
    "verify_draft": lambda t, p, q, gen, u=None: verify_draft(t, q, p, gen, uniforms=u),
    "verify_block": lambda t, p, q, gen, u=None: verify_block(t, q, p, gen, uniforms=u),
}


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("how", ROW_SPOILS)
def test_a_chain_rule_refuses_a_p_or_q_that_is_not_a_distribution(rule, how):
    tokens, q, p = chain_args()
    for p_, q_ in ((spoiled(p, how), q), (p, spoiled(q, how))):
        with pytest.raises(ArgumentError):
            RULES[rule](tokens, p_, q_, torch.Generator())


@pytest.mark.parametrize("rule", RULES)
def test_a_chain_rule_refuses_bad_ids_draws_and_generators(rule):
    tokens, q, p = chain_args()
    verify = RULES[rule]
    cases = {
        "an id of V": (tokens.clone().index_fill_(0, torch.tensor([0]), V), None, torch.Generator()),
        "a negative id": (tokens.clone().index_fill_(0, torch.tensor([0]), -1), None, torch.Generator()),
        "float ids": (tokens.float(), None, torch.Generator()),
        "a draw below 0": (tokens, torch.tensor([-0.1, 0.5, 0.5]), torch.Generator()),
        "a draw above 1": (tokens, torch.tensor([0.5, 1.5, 0.5]), torch.Generator()),
        "a NaN draw": (tokens, torch.tensor([0.5, math.nan, 0.5]), torch.Generator()),
        "a draw too few": (tokens, torch.tensor([0.5, 0.5]), torch.Generator()),
        "one draw broadcast": (tokens, torch.tensor([0.5]), torch.Generator()),
        "draws as a list": (tokens, [0.5, 0.5, 0.5], torch.Generator()),
        "no generator": (tokens, torch.tensor([0.5, 0.5, 0.5]), None),
        "the global RNG module": (tokens, None, torch),
    }
    for name, (t, u, gen) in cases.items():
        with pytest.raises(ArgumentError) as err:
            verify(t, p, q, gen, u)
        assert one_short_line(str(err.value)), (rule, name)
    # a draft its own q gives probability 0 (a q row of zeros at it): never "kept always"
    q0 = q.clone()
    q0[0, int(tokens[0])] = 0.0
    q0[0] /= q0[0].sum()
    with pytest.raises(ArgumentError, match="probability 0"):
        verify(tokens, p, q0, torch.Generator())


TREE_RULES = {
    "verify_tree": lambda t, par, q, p, gen, u=None: verify_tree(t, par, p, gen, uniforms=u),
    "verify_tree_sampled": lambda t, par, q, p, gen, u=None: verify_tree_sampled(t, par, q, p, gen, uniforms=u),
}


@pytest.mark.parametrize("rule", TREE_RULES)
@pytest.mark.parametrize("how", ROW_SPOILS)
def test_a_tree_rule_refuses_a_p_or_q_that_is_not_a_distribution(rule, how):
    tokens, parents, q, p = tree_args()
    spoils = [(q, spoiled(p, how))] + ([(spoiled(q, how), p)] if rule == "verify_tree_sampled" else [])
    for q_, p_ in spoils:
        with pytest.raises(ArgumentError):
            TREE_RULES[rule](tokens, parents, q_, p_, torch.Generator())


@pytest.mark.parametrize("rule", TREE_RULES)
def test_a_tree_rule_refuses_bad_parents_ids_draws_and_generators(rule):
    tokens, parents, q, p = tree_args()
    verify = TREE_RULES[rule]
    cases = {
        "parents too short": (tokens, parents[:-1], None, torch.Generator()),
        "a parent after its child": (tokens, [-1, 2, 0, 0], None, torch.Generator()),
        "a parent of -2": (tokens, [-2, -1, 0, 0], None, torch.Generator()),
        "a float parent": (tokens, [-1, -1, 0.0, 0], None, torch.Generator()),
        "a bool parent": (tokens, [-1, -1, False, 0], None, torch.Generator()),
        "parents as a tensor": (tokens, torch.tensor(parents), None, torch.Generator()),
        "two siblings with one token": (torch.tensor([0, 1, 2, 2]), parents, None, torch.Generator()),
        "an id of V": (torch.tensor([0, 1, 2, V]), parents, None, torch.Generator()),
        "a draw of 1 that picks a token": (tokens, parents, torch.tensor([1.0] * 6), torch.Generator()),
        "a draw below 0": (tokens, parents, torch.tensor([-0.5] * 6), torch.Generator()),
        "a NaN draw": (tokens, parents, torch.tensor([math.nan] * 6), torch.Generator()),
        "no draws left": (tokens, parents, torch.tensor([], dtype=torch.float64), torch.Generator()),
        "no generator": (tokens, parents, None, None),
    }
    for name, (t, par, u, gen) in cases.items():
        with pytest.raises(ArgumentError) as err:
            verify(t, par, q, p, gen, u)
        assert one_short_line(str(err.value)), (rule, name)


def test_no_rule_ever_returns_a_token_outside_the_vocabulary_or_of_probability_zero():
    """Any valid input, draws at the edges of [0, 1) included: every emitted token is an id the target gives p > 0
    at its position (a row with zeros in it, the ids past them, a draw of 0 and one just below 1)."""
    gen = torch.Generator().manual_seed(5)
    edges = [0.0, 1.0 - 2 ** -53, 0.5]
    for trial in range(60):
        p = dist(5, 100 + trial)
        p[:, -2:] = 0.0  # the last ids impossible: an inverse CDF run off the end would land there
        p /= p.sum(-1, keepdim=True)
        tokens, parents, q, _ = tree_args()
        for u in edges:
            draws = torch.full((8,), u, dtype=torch.float64)
            for result in (verify_tree(tokens, parents, p, gen, uniforms=draws),
                           verify_tree_sampled(tokens, parents, q, p, gen, uniforms=draws)):
                rows = [0] + [node + 1 for node in result.path]
                for token, row in zip(result.tokens.tolist(), rows):
                    assert 0 <= token < V and float(p[row, token]) > 0, (trial, u, result.tokens, result.path)
        ctokens, cq, cp = chain_args()
        cp = p[:4]
        for u in edges:
            draws = torch.full((3,), u)
            for result in (verify_draft(ctokens, cq, cp, gen, uniforms=draws), verify_block(ctokens, cq, cp, gen, uniforms=draws)):
                kept = result.tokens.tolist()
                assert all(0 <= t < V for t in kept)
                assert float(cp[len(kept) - 1, kept[-1]]) > 0 or result.n_accepted < len(kept) - 1


# ---------------------------------------------------------------- what a sampled-children tree records

@pytest.fixture(scope="module")
def tiny_pair():
    return make_tiny_lm(1, 16, 0.6), make_tiny_lm(2, 16, 0.6)


def test_a_sampled_tree_record_says_which_siblings_were_tried_in_strict_json(tiny_pair):
    target, draft = tiny_pair
    tested_siblings = 0
    for seed in range(12):
        _, trace = speculative_generate(target, TreeDrafter(draft, TreeShape.full(2, 2), sampled=True),
                                        torch.tensor([1, 2, 3]), max_new_tokens=7, k=2, temperature=1.0,
                                        generator=torch.Generator().manual_seed(seed), record=True)
        json.dumps(trace.to_dict(), allow_nan=False)  # strict JSON: no NaN anywhere
        for s in trace.steps:
            assert s.tree_rule == "rejection"
            tried = [j for j, a in enumerate(s.accept_probs) if a is not None]
            assert len(s.uniforms) == len(tried) + 1  # one draw per node tested, one for the step's own token
            assert {j for j, f in enumerate(s.fates) if f != "not evaluated"} == set(tried)
            assert all(s.fates[j] == "accepted" for j in s.path)
            last = s.path[-1] if s.path else -1
            tested_siblings += sum(1 for j in tried if j not in s.path and s.parents[j] != last)
            for j in tried:  # each tested node's draw decides it: below its acceptance probability iff on the path
                order = tried.index(j)
                assert (s.uniforms[order] < s.accept_probs[j]) == (j in s.path), (seed, s.step, j)
    assert tested_siblings > 0  # siblings tried and rejected above the last node, once "not evaluated"


def test_a_match_tree_records_its_rule_and_a_zero_node_step_is_a_plain_target_pass(tiny_pair):
    target, draft = tiny_pair
    _, trace = speculative_generate(target, TreeDrafter(draft, TreeShape.full(2, 3)), torch.tensor([1, 2, 3]),
                                    max_new_tokens=5, k=3, temperature=0.0, generator=torch.Generator(), record=True)
    steps = [s.to_dict() for s in trace.steps]
    assert all(s["tree_rule"] == "match" for s in steps)
    zero = [s for s in steps if s["k"] == 0]
    assert zero and zero[-1]["parents"] == [] and zero[-1]["path"] == [] and len(zero[-1]["uniforms"]) == 1
    assert zero[-1]["extra_fate"] == "bonus" and len(zero[-1]["emitted"]) == 1


# ---------------------------------------------------------------- the audit's verdict and its power

def test_a_test_too_weak_to_see_the_bar_is_inconclusive_never_passes():
    from specdec_site.exactness import audit as A

    base = {"impossible": 0, "p_value": 0.5, "bins": 6}
    assert A.verdict({**base, "tv_detectable": A.MAX_PASS_TV / 2}) == "passes"
    for weak in (A.MAX_PASS_TV * 1.01, 0.25, 0.33, math.nan, None):
        assert A.verdict({**base, "tv_detectable": weak}) == "inconclusive", weak
    assert A.verdict({**base, "tv_detectable": 0.33, "p_value": 1e-5}) == "fails"  # a failure needs no power
    assert A.verdict({**base, "tv_detectable": 0.33, "impossible": 1}) == "fails"


@pytest.mark.parametrize("n", [40, 80])
def test_a_known_wrong_tree_sampler_does_not_pass_at_low_power(n):
    """The tree sampler whose residual keeps the tried children, audited at n = 40 and 80: it "passed" there; at
    that power the audit now says inconclusive (or fails), never passes."""
    from specdec_site.exactness import audit as A
    from specdec_site.exactness.mutants import BY_NAME, mutated

    with mutated(BY_NAME["tree_residual_keeps_tried"]):
        result = A.audit(A.specdec_sampler(drafter="sampled_tree"), n=n, seed=0)
    assert result["verdict"] != "passes", result
    assert result["verdict"] == "fails" or result["tv_detectable"] is None or result["tv_detectable"] > A.MAX_PASS_TV
