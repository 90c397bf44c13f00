"""Block verification's values: the block stage's runs against the token rule (per temperature and public set:
block ÷ token in tokens per pass measured, expected on the same drafts, and wall clock, each with its interval;
each rule's own median), the exactness stage's block rule against the target, and the worked example of Sun et
al.'s two-token blocks.

From the block stage's artifact (block_stage.py: "temperatures", each with its "domains" and their "summary") and
the exactness stage's ("rules" -> "block", "block_example"). The per-set ratios are made for each (temperature,
sets) the stage runs (config.FULL.block_runs: a set or temperature added there gets its rows with no edit here).
"""

from __future__ import annotations

from collections.abc import Callable

from specdec_site.engine.config import FULL
from specdec_site.public_prompts import LABELS
from specdec_site.site.values.common import NotRun, ci, fmt, fmt_p, listed

CORE_T = 0.7  # the sampled mode's temperature, where the block stage runs the core set: each rule's own median too


class BlockNotRun(NotRun):
    """A temperature or prompt set the block stage did not run in this build (a --quick build runs T = 0.7 alone)."""


def _block_at(a, temperature: float) -> dict:
    """The block stage's runs at one temperature (BlockNotRun where this build made none)."""
    for t in a["block"]["temperatures"]:
        if t["temperature"] == temperature:
            return t
    raise BlockNotRun(f"block stage at T = {temperature}")


def _block_summary(temperature: float, domain: str) -> Callable:
    def get(a):
        domains = _block_at(a, temperature)["domains"]
        if domain not in domains:
            raise BlockNotRun(f"block stage at T = {temperature}, {domain}")
        return domains[domain]["summary"]
    return get


def _block_median(temperature: float, domain: str, *keys: str) -> Callable:
    def get(a):
        e = _block_summary(temperature, domain)(a)
        for key in keys:
            e = e[key]
        return fmt(e["median"], 3 if keys[-1].endswith("ratio") else 2)
    return get


def _block_ci(temperature: float, domain: str, key: str) -> Callable:
    return lambda a: ci(_block_summary(temperature, domain)(a)[key], 3)


def _block_ahead(a) -> str:
    """The measured per-prompt ratio block / token (tokens per pass) at T = 0.7, its median per set: where it is at
    least 1 and where below, with the values."""
    t = _block_at(a, CORE_T)
    med = {d: v["summary"]["tokens_per_pass_ratio"]["median"] for d, v in t["domains"].items()}
    ahead, behind = [d for d in med if med[d] >= 1], [d for d in med if med[d] < 1]
    said = ", ".join(f"{d} {fmt(med[d], 3)}" for d in med)
    if not behind:
        return f"at least 1 on every set ({said})"
    return (f"at least 1 on {len(ahead)} of {len(med)} sets and below 1 on {', '.join(behind)} ({said})")


def _block_expected_ahead(a) -> str:
    """On which sets at T = 0.7 the paired expected tokens per pass puts block verification ahead: the median of
    block / token above 1 and the interval's lower end at least 1."""
    t = _block_at(a, CORE_T)
    ahead = [d for d, v in t["domains"].items() if v["summary"]["expected_ratio"]["median"] > 1
             and v["summary"]["expected_ratio"]["ci95"][0] >= 1]
    return (f"on every set ({len(ahead)} of {len(t['domains'])}), each interval's lower end at 1 or above"
            if len(ahead) == len(t["domains"])
            else f"on {len(ahead)} of {len(t['domains'])} sets ({', '.join(LABELS.get(d, d) for d in ahead) or 'none'}) with the interval's "
                 "lower end at 1 or above")


def _block_expected_gains(a) -> str:
    """The paired expected gain of block verification at T = 0.7, per set, from the smallest to the largest: "+0.7%
    (dialogue) to +3.1% (code)" (a loss is written with its minus sign)."""
    t = _block_at(a, CORE_T)
    gains = sorted((v["summary"]["expected_ratio"]["median"] - 1, d) for d, v in t["domains"].items())
    said = [f"{g * 100:+.1f}% ({LABELS.get(d, d)})" for g, d in gains]
    return said[0] if len(said) == 1 else f"{said[0]} to {said[-1]}"


def _block_measured_intervals(a) -> str:
    """Whether the measured block ÷ token intervals hold 1, per (set, temperature): tokens per pass and wall clock.
    The sentence names every pair whose interval does not hold 1, with its median and its interval."""
    said = []
    for key, what in (("tokens_per_pass_ratio", "tokens per pass"), ("speed_ratio", "wall clock")):
        pairs = [(t["temperature"], d, v["summary"][key]) for t in a["block"]["temperatures"]
                 for d, v in t["domains"].items()]
        out = [(T, d, e) for T, d, e in pairs if not e["ci95"][0] <= 1 <= e["ci95"][1]]
        if not out:
            said.append(f"in {what}, every one of the {len(pairs)} intervals holds 1")
        else:
            said.append(f"in {what}, {len(pairs) - len(out)} of the {len(pairs)} intervals hold 1, but not "
                        + listed([f"{LABELS.get(d, d)} at T = {T:g} ({fmt(e['median'], 3)}, {ci(e, 3, named=True)})"
                                  for T, d, e in out]))
    return "; ".join(said)


def _block_equal_prompts(a) -> str:
    """How many prompts at T = 0.7 the two rules' runs kept the same tokens per pass, of how many."""
    t = _block_at(a, CORE_T)
    rows = [r for v in t["domains"].values() for r in v["rows"]]
    same = sum(r["block"]["tokens_per_target_pass"] == r["token"]["tokens_per_target_pass"] for r in rows)
    return f"{same} of {len(rows)}"


def _block_example(key: str) -> Callable:
    """A total of the worked example as a fraction over 9, the paper's way of writing it."""
    return lambda a: f"{round(a['exactness']['block_example'][key] * 9)}/9"


def _block_example_row(block: str, rule: str) -> Callable:
    """Expected accepted drafts of one block of the worked example under a rule ("token" or "block_rule")."""
    return lambda a: fmt(next(b for b in a["exactness"]["block_example"]["blocks"] if b["block"] == block)[rule])


def _block_temperature(i: int) -> Callable:
    """The block stage's i-th temperature, as the pages write it."""
    def get(a):
        temperatures = a["block"]["temperatures"]
        if i >= len(temperatures):
            raise BlockNotRun(f"block stage's temperature {i + 1}")
        return fmt(temperatures[i]["temperature"], 1)
    return get


def set_rows(temperature: float, d: str) -> dict[str, Callable]:
    """A set's ratios at one temperature, block_<T × 10>_<set>_...: block ÷ token in tokens per pass measured, expected
    on the same drafts, and wall clock, each with its interval; at CORE_T also each rule's own median tokens per
    pass."""
    t = f"{round(temperature * 10):02d}"  # 0.7 -> "07", 1.0 -> "10"
    rows = {
        f"block_{t}_{d}_tpp": _block_median(temperature, d, "tokens_per_pass_ratio"),
        f"block_{t}_{d}_tpp_ci": _block_ci(temperature, d, "tokens_per_pass_ratio"),
        f"block_{t}_{d}_expected": _block_median(temperature, d, "expected_ratio"),
        f"block_{t}_{d}_expected_ci": _block_ci(temperature, d, "expected_ratio"),
        f"block_{t}_{d}_speed": _block_median(temperature, d, "speed_ratio"),
        f"block_{t}_{d}_speed_ci": _block_ci(temperature, d, "speed_ratio"),
    }
    if temperature == CORE_T:
        rows |= {
            f"block_{t}_{d}_token_tpp": _block_median(temperature, d, "token", "tokens_per_target_pass"),
            f"block_{t}_{d}_block_tpp": _block_median(temperature, d, "block", "tokens_per_target_pass"),
        }
    return rows


def block_values() -> dict[str, Callable]:
    """Every value the block-verification sections quote (The Math, the Benchmark, Exactness), spelled out: the
    stage's setup and findings, the worked example, the exactness stage's block rule, the temperatures, and each
    (temperature, set) the stage runs (config.FULL.block_runs), set_rows."""
    return {
        "block_k": lambda a: a["block"]["k"],
        "block_new_tokens": lambda a: a["block"]["new_tokens"],
        "block_runs": lambda a: "; ".join(f"T = {t['temperature']:g}: " + ", ".join(
            f"{len(d['prompts'])} {LABELS.get(name, name)}" for name, d in t["domains"].items())
            for t in a["block"]["temperatures"]),
        "block_ahead": _block_ahead,
        "block_expected_ahead": _block_expected_ahead,
        "block_equal_prompts": _block_equal_prompts,
        "block_expected_gains": _block_expected_gains,
        "block_measured_intervals": _block_measured_intervals,
        "block_example_token": _block_example("token"),
        "block_example_block": _block_example("block"),
        "block_example_ideal": _block_example("ideal"),
        # the exactness stage's block rule against the target
        "exact_block_p": lambda a: fmt_p(a["exactness"]["rules"]["block"]["p_value"], 3),
        "exact_block_tv": lambda a: fmt(a["exactness"]["rules"]["block"]["tv_distance"], 4),
        "exact_block_samples": lambda a: f"{a['exactness']['rules']['block']['samples']:,}",
        # the temperatures, and the worked example's rows: expected accepted drafts per block under each rule
        "block_temperature": _block_temperature(0),
        "block_temperature_high": _block_temperature(1),
        "block_example_aa_token": _block_example_row("AA", "token"),
        "block_example_aa_block": _block_example_row("AA", "block_rule"),
        "block_example_ab_token": _block_example_row("AB", "token"),
        "block_example_ab_block": _block_example_row("AB", "block_rule"),
        "block_example_ba_token": _block_example_row("BA", "token"),
        "block_example_ba_block": _block_example_row("BA", "block_rule"),
        "block_example_bb_token": _block_example_row("BB", "token"),
        "block_example_bb_block": _block_example_row("BB", "block_rule"),
        # each (temperature, set) the stage runs
        **{name: fn for temperature, sets in FULL.block_runs for d in sets
           for name, fn in set_rows(temperature, d).items()},
    }
