"""The summary of a benchmark's per-prompt values that the pages quote: the median with its 95% bootstrap interval."""

from __future__ import annotations

import statistics

from specdec.theory import bootstrap_median_ci


def median_ci(values: list[float], seed: int) -> dict:
    """{"median", "ci95": [low, high], "prompts"}: the median of per-prompt values, its percentile bootstrap
    interval (theory.bootstrap_median_ci, seeded: a rebuild gives the same interval) and how many values."""
    return {"median": statistics.median(values), "ci95": list(bootstrap_median_ci(values, seed=seed)),
            "prompts": len(values)}
