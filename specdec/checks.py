"""Argument checks shared by the decoders, the drafters and the policies: one rule per kind of scalar.

An integer argument (an id, a count, k, a budget) is a Python int, a NumPy integer or a 0-d integer tensor;
a bool is not an integer here (True would silently be 1), nor is a float or a string ("12" must not be read
as the ids {1, 2}). Random draws need an explicit torch.Generator, so that every run can be replayed.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

_INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)  # what a 0-d tensor may be to count as an integer


class ArgumentError(TypeError, ValueError):
    """A bad argument: of the wrong type or out of range (either `except` clause catches it)."""


def shown(value, limit: int = 80) -> str:
    """repr(value) cut to `limit` characters, for an error message: a huge argument is quoted, not repeated whole."""
    try:
        text = repr(value)
    except ValueError:  # an int past Python's digit limit for str()
        text = f"<{type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def as_int(value, rule: str) -> int:
    """`value` as a Python int, or an ArgumentError saying `rule` (e.g. "k must be >= 1") and what was given."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, torch.Tensor) and value.dim() == 0 and value.dtype in _INT_DTYPES:
        return int(value)
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0 and value.dtype.kind in "iu":
        return int(value)
    raise ArgumentError(f"{rule}, got {type(value).__name__} {shown(value)}")


def as_real(value, rule: str) -> float:
    """`value` as a Python float: an int or float, a NumPy scalar or 0-d array, or a 0-d tensor, never a bool or a
    string ("0.5" is an ArgumentError saying `rule`). NaN and inf pass: the caller says which range it wants."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, torch.Tensor) and value.dim() == 0 and (value.dtype.is_floating_point or value.dtype in _INT_DTYPES):
        return float(value)
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0 and value.dtype.kind in "iuf":
        return float(value)
    raise ArgumentError(f"{rule}, got {type(value).__name__} {shown(value)}")


def as_count(value, rule: str, low: int, high: int | None = None) -> int:
    """An integer in [low, high] (high None: no upper bound), or an ArgumentError saying `rule`."""
    n = as_int(value, rule)
    if n < low or (high is not None and n > high):
        raise ArgumentError(f"{rule}, got {shown(n)}")
    return n


def eos_set(eos_token_id) -> set[int]:
    """None, one id, or an iterable of ids -> the set of end-of-sequence ids (never a string's characters)."""
    if eos_token_id is None:
        return set()
    if isinstance(eos_token_id, (str, bytes)):
        raise ArgumentError(f"eos_token_id must be an id or a list of ids, got the string {eos_token_id!r}")
    # a 0-d tensor or NumPy array is iterable by type but holds one id
    if isinstance(eos_token_id, Iterable) and getattr(eos_token_id, "ndim", None) != 0:
        ids = list(eos_token_id.tolist() if isinstance(eos_token_id, torch.Tensor) else eos_token_id)
        return {as_count(t, "each eos_token_id must be an id >= 0", 0) for t in ids}
    return {as_count(eos_token_id, "eos_token_id must be an id >= 0 or a list of ids", 0)}


def check_eos_ids(eos: set[int], vocab_size: int) -> None:
    """Every end-of-sequence id must be one the model can emit: an id >= V would never stop anything, silently."""
    outside = sorted(t for t in eos if t >= vocab_size)
    if outside:
        raise ArgumentError(f"eos_token_id {outside[0]} is outside the vocabulary [0, {vocab_size}): it could never be "
                            "generated, so it would never stop a sequence")


def check_generator(generator) -> torch.Generator:
    """Every draw goes through an explicit generator; None would silently use the global RNG (not replayable)."""
    if not isinstance(generator, torch.Generator):
        raise ArgumentError(f"generator must be a torch.Generator (e.g. torch.Generator().manual_seed(0)), so that the "
                        f"run can be replayed; got {type(generator).__name__}")
    return generator
