"""What every module of the values package shares: the number formats a page quotes (one rounding, here), the
artifacts as a value reads them, the public prompt sets whose rows are generated, and how a value says that the
build did not make what it quotes (NOT_RUN).

The prompt sets come from specdec_site.public_prompts.SOURCES, read when the table is built: registering a set there
gives it its rows (policies.set_rows, sweep.set_rows) with no edit to this package.
"""

from __future__ import annotations

from collections.abc import Callable

from specdec_site import public_prompts
from specdec_site.site.figures import FEW_PROMPTS, interval_name

# The set the pages work their examples on (the time breakdown, the histogram's k, the theory's worked row): some
# rows exist for it alone (sweep.HEADLINE_ONLY).
HEADLINE = "code"

NOT_RUN = "— (not run in this build)"  # a value of a variant that the artifacts' run did not make


def public_sets() -> tuple[str, ...]:
    """The public prompt sets, in their registry's order (public_prompts.SOURCES: the policies stage runs and sweeps
    every one), read at call time so that a newly registered set gets its rows."""
    return tuple(public_prompts.SOURCES)


def per_set(sets: tuple[str, ...], rows: Callable[[str], dict]) -> dict:
    """Each set's rows (rows(set): name -> callable), set after set in the sets' order."""
    return {name: fn for d in sets for name, fn in rows(d).items()}


def fmt(x, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def fmt_p(p, digits: int = 2) -> str:
    """A p-value to `digits` significant digits; one that underflowed to 0 as "< 1e-300" (it is not 0), and a test
    that could not be computed (too few draws: the audit's "inconclusive") as "–"."""
    if p is None:
        return "–"
    return "< 1e-300" if p == 0 else f"{p:.{digits}g}"


def ci(entry, digits: int = 2, named: bool = False) -> str:
    """A summary entry's interval, "1.02–1.31" (its 95% interval); over fewer than FEW_PROMPTS prompts, or with
    named, it says what it is ("range (n = 4) 1.02–1.31", figures.interval_name), wherever a page quotes it."""
    low, high = entry["ci95"]
    n = entry.get("prompts", FEW_PROMPTS)
    return (f"{interval_name(n)} " if named or n < FEW_PROMPTS else "") + f"{low:.{digits}f}–{high:.{digits}f}"


def listed(items: list[str]) -> str:
    """a, b and c"""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def verdict(ratio: dict) -> str:
    """How a page words a ratio's 95% interval against 1: "ahead" (all above), "behind" (all below), or neither."""
    low, high = ratio["ci95"]
    return "ahead" if low > 1 else "behind" if high < 1 else "neither ahead nor behind"


def pair_meta(a) -> dict:
    """The pair's provenance as the policies stage recorded it (device, dtype, versions, models, seed)."""
    return a["policies"]["metadata"]


class Artifacts(dict):
    """The artifacts (stage name -> its JSON), plus what compute_values derives from them once."""

    matrix_summaries: dict  # domain -> the policies stage's summary over the matrix's prompts only
    design: dict  # the design tool's replay (design.design_replay), the same for every device's artifacts


class NotRun(KeyError):
    """A part of the artifacts that this build did not make (shown as NOT_RUN): a --quick build runs a few of the
    mutation table's variants and of the audit's rows."""


class NotRecorded(NotRun):
    """A part of an artifact that a run from before it was recorded lacks (the trees stage's model per set, an audit
    row), or that a quick build left out (an audit row)."""
