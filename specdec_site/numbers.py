"""One reading of a number on every command line (the build, the trace command, the audit): ASCII digits only.

argparse's `type=int` and `type=float` take whatever Python's int() and float() take: full-width and Arabic-Indic
digits, underscores ("1_000"), "nan", "inf", and, through str.isdigit(), superscripts that int() then refuses with a
traceback ("--tree ²x2"). These two readers take plain decimal numbers and say so in one message, the same everywhere.
Torch-free: the arguments are read before anything loads.
"""

from __future__ import annotations

import argparse
import math
import re

_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_REAL = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?", re.ASCII)
MAX_SHOWN = 40  # the most characters of a bad argument an error quotes


def quoted(text: str, limit: int = MAX_SHOWN) -> str:
    """repr(text), cut to `limit` characters: an error message quotes an argument, it does not repeat 100 kB of it."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "\u2026"


def parse_integer(text: str) -> int | None:
    """The integer `text` spells in ASCII decimal digits (an optional sign, surrounding spaces allowed), else None."""
    text = text.strip()
    return int(text) if len(text) <= 40 and _INTEGER.fullmatch(text) else None


def integer(text: str) -> int:
    """argparse type: an integer written in ASCII digits."""
    value = parse_integer(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"expected an integer in ASCII digits (such as 4), got {quoted(text)}")
    return value


def real(text: str) -> float:
    """argparse type: a finite decimal number written in ASCII (0.7, 1e-3); no nan, inf or other digits."""
    stripped = text.strip()
    value = float(stripped) if len(stripped) <= 40 and _REAL.fullmatch(stripped) else None
    if value is None or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number in ASCII digits (such as 0.7), got {quoted(text)}")
    return value
