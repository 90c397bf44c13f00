"""Trees and blocks from a hostile user's side: the command lines. Every input class is refused in one short line
before anything loads, tested as variants of the class, not one reported input: numbers (one ASCII reader,
specdec_site.numbers), values that start with a dash, arguments of 100 kB quoted in an error, tree shapes. (The Step
Visualizer's side is tests/test_site.py.)
"""

from __future__ import annotations

import pytest

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
    from specdec_site.cli import parse_args

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
