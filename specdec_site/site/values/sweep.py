"""The k sweep's values: each public set's best k, its k = 1 and longest-k rows and how the theory fits them, the
accepted-length histogram's shares, the time breakdown, and eq. (6)'s fit over every sweep row.

From the policies stage's "sweeps" (one greedy sweep per public prompt set, over the matrix's prompts:
policies_stage.sweep_of) and the theory of specdec_site.acceptance: α is always the tested acceptance â; accepted ÷
drafted is quoted only as the draft yield (tests/test_acceptance.py refuses a page that calls it α).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from specdec_site.acceptance import draft_yield, tested_acceptance, theory
from specdec_site.public_prompts import LABELS
from specdec_site.site.figures import histogram_row, pick, predicted_from_tpp, seconds_per_token
from specdec_site.site.values.common import HEADLINE, fmt, listed, per_set


def _sweep(domain: str, mode: str):
    """The stage's sweep of (domain, mode); KeyError(domain) where it swept no such set (a run from before the set
    was registered), which compute_values shows as not run."""
    def get(a):
        if not any(s["domain"] == domain for s in a["policies"]["sweeps"]):
            raise KeyError(domain)
        return pick(a["policies"]["sweeps"], domain, mode)
    return get


def _best(domain: str, mode: str, what: Callable) -> Callable:
    """A number of the sweep row with the best median speedup of (domain, mode)."""
    def value(a):
        best = max(_sweep(domain, mode)(a)["spec"], key=lambda r: r["speedup"]["median"])
        return what(best)
    return value


def _k1(domain, mode, what):
    return lambda a: what(_sweep(domain, mode)(a)["spec"][0])


def _kmax(domain, mode, what):
    return lambda a: what(_sweep(domain, mode)(a)["spec"][-1])


def sweep_peaks(a, mode: str = "greedy") -> dict[str, dict]:
    """Each swept set's k of best median speedup: {set: {"k", "speedup", "last": the largest k swept}}."""
    out = {}
    for sweep in a["policies"]["sweeps"]:
        if sweep["mode"] != mode:
            continue
        best = max(sweep["spec"], key=lambda r: r["speedup"]["median"])  # the first of equals
        out[sweep["domain"]] = {"k": best["k"], "speedup": best["speedup"]["median"], "last": sweep["spec"][-1]["k"]}
    return out


def _peaks_sentence(a) -> str:
    """Where each set's median speedup peaks, from the sweep: "code peaks at k = 4 (2.24×), ..."; a set whose best is
    the largest k swept is "still rising at k = 8". The sentence the speedup-vs-k caption states."""
    said = []
    for d, peak in sweep_peaks(a).items():
        name = LABELS.get(d, d)
        if peak["k"] == peak["last"]:
            said.append(f"{name} is still rising at the largest k run, k = {peak['k']} ({fmt(peak['speedup'])}×)")
        else:
            said.append(f"{name} peaks at k = {peak['k']} ({fmt(peak['speedup'])}×)")
    return listed(said)


def position_rise(a, d: str) -> tuple[float, float] | None:
    """(acceptance at the first draft position, at the later ones pooled) of a set's greedy sweep at its largest k;
    None where no step got past its first draft."""
    row = _sweep(d, "greedy")(a)["spec"][-1]
    hist, k = row["accepted_length_histogram"], row["k"]
    tested = [sum(hist[i:]) for i in range(k)]  # position i + 1 is tested when n >= i
    accepted = [sum(hist[i + 1:]) for i in range(k)]
    if not tested[0] or not sum(tested[1:]):
        return None
    return accepted[0] / tested[0], sum(accepted[1:]) / sum(tested[1:])


FLAT = 0.1  # a change from the first draft position to the later ones under this reads "close to flat"


def _positions_sentence(a) -> str:
    """Per set, the acceptance at the first draft position and at the later ones, and whether that rises, falls or
    is close to flat (a change under FLAT): the per-position caption's claim, largest rise first."""
    sets = (s["domain"] for s in a["policies"]["sweeps"] if s["mode"] == "greedy")
    change = {d: r for d in sets if (r := position_rise(a, d)) is not None}
    order = sorted(change, key=lambda d: -(change[d][1] - change[d][0]))
    groups = {"rising": [d for d in order if change[d][1] - change[d][0] >= FLAT],
              "falling": [d for d in order if change[d][0] - change[d][1] >= FLAT]}
    groups["close to flat"] = [d for d in order if d not in groups["rising"] + groups["falling"]]
    part = lambda ds: listed([f"{LABELS.get(d, d)} ({fmt(change[d][0])} → {fmt(change[d][1])})" for d in ds])  # noqa: E731
    said = {"rising": "rising after the first position on {}: there a step's first draft is its weakest",
            "falling": "falling after the first position on {}", "close to flat": "close to flat on {}"}
    return "; ".join(said[g].format(part(ds)) for g, ds in groups.items() if ds)


def _greedy_equal(domain):
    def value(a):
        s = _sweep(domain, "greedy")(a)
        n = s["greedy_runs_checked"]
        return f"{n} of {n}" if s["greedy_equal_all"] else "NOT ALL"
    return value


def _sweep_k_range(a):
    ks = [r["k"] for r in a["policies"]["sweeps"][0]["spec"]]  # every sweep runs the same k values
    return ", ".join(str(k) for k in ks)  # every k the sweep ran (not a range: it need not run them all)


def _speedup(r):
    return fmt(r["speedup"]["median"])


def _near_best(domain: str) -> Callable:
    """The other k that beat the k of the best median on at least one prompt (paired, prompt by prompt: the
    prompts differ far more than the k do), as "2, 3 and 6", or "none": a page names the best k with these, never
    alone, since on a handful of prompts they are not told apart from it."""
    def value(a):
        rows = _sweep(domain, "greedy")(a)["spec"]
        best = max(rows, key=lambda r: r["speedup"]["median"])
        ks = [str(r["k"]) for r in rows if r is not best
              and any(x >= b for x, b in zip(r["speedup"]["values"], best["speedup"]["values"]))]
        return "none" if not ks else ks[0] if len(ks) == 1 else ", ".join(ks[:-1]) + " and " + ks[-1]
    return value


def _over_eq8(domain: str) -> Callable:
    """Measured median speedup ÷ eq. (8) at â over the sweep's k, as a range "0.97–1.06"."""
    def value(a):
        ratios = [r["speedup"]["median"] / theory(r)["speedup_eq8"] for r in _sweep(domain, "greedy")(a)["spec"]]
        return f"{fmt(min(ratios))}–{fmt(max(ratios))}"
    return value


def _histogram_share(domain: str, which: str) -> Callable:
    """The share of the histogram's steps that accepted all k drafts ("all") or none ("none"), as a percentage."""
    def value(a):
        _sweep(domain, "greedy")(a)  # KeyError(domain) where the set was not swept
        hist = histogram_row(a, domain)["accepted_length_histogram"]
        return f"{100 * hist[-1 if which == 'all' else 0] / sum(hist):.0f}%" if sum(hist) else "– (no full step)"
    return value


def _histogram_rows(d: str) -> dict[str, Callable]:
    return {
        f"hist_{d}_all": _histogram_share(d, "all"),
        f"hist_{d}_none": _histogram_share(d, "none"),
    }


# The per-set exceptions, kept from the table as the pages quote it: the worked example (HEADLINE) also quotes its
# best row's tokens per pass and eq. (8), and its k = 1 row's k and speedup; the other sets quote their longest k's
# speedup instead, which the worked example does not.
HEADLINE_ONLY = ("best_tpp", "best_expected_tpp", "best_predicted", "k1", "k1_speedup")
NOT_HEADLINE = ("kmax_speedup",)


def set_rows(d: str) -> dict[str, Callable]:
    """A public set's rows of the greedy sweep: its best k (the best median speedup), its k = 1 and longest-k rows
    (â, the draft yield, the acceptance at the first and later positions), greedy equality, the k it is not told
    apart from, and measured ÷ eq. (8)."""
    rows = {
        f"{d}_greedy_best_k": _best(d, "greedy", lambda r: r["k"]),
        f"{d}_greedy_best_speedup": _best(d, "greedy", _speedup),
        f"{d}_greedy_best_alpha": _best(d, "greedy", lambda r: fmt(tested_acceptance(r))),
        f"{d}_greedy_best_tpp": _best(d, "greedy", lambda r: fmt(r["tokens_per_target_pass"])),
        f"{d}_greedy_best_expected_tpp": _best(d, "greedy", lambda r: fmt(theory(r)["tokens_per_pass"])),
        f"{d}_greedy_best_predicted": _best(d, "greedy", lambda r: fmt(theory(r)["speedup_eq8"])),
        f"{d}_greedy_k1": _k1(d, "greedy", lambda r: r["k"]),
        f"{d}_greedy_k1_alpha": _k1(d, "greedy", lambda r: fmt(tested_acceptance(r))),
        f"{d}_greedy_k1_speedup": _k1(d, "greedy", _speedup),
        f"{d}_greedy_kmax": _kmax(d, "greedy", lambda r: r["k"]),
        f"{d}_greedy_kmax_alpha": _kmax(d, "greedy", lambda r: fmt(tested_acceptance(r))),
        f"{d}_greedy_kmax_draft_yield": _kmax(d, "greedy", lambda r: fmt(draft_yield(r))),
        f"{d}_greedy_kmax_speedup": _kmax(d, "greedy", _speedup),
        f"{d}_greedy_greedy_equal": _greedy_equal(d),
        f"{d}_greedy_near_best": _near_best(d),
        f"{d}_greedy_measured_over_eq8": _over_eq8(d),
    }
    left_out = NOT_HEADLINE if d == HEADLINE else HEADLINE_ONLY
    return {name: fn for name, fn in rows.items() if name.removeprefix(f"{d}_greedy_") not in left_out}


def sweep_values(sets: tuple[str, ...]) -> dict[str, Callable]:
    """The sweep's setup, each set's rows (set_rows), the worked example's c, and the histogram's shares per set."""
    return {
        "sweep_reps_greedy": lambda a: len(_sweep("code", "greedy")(a)["prompts"]),
        "sweep_tokens": lambda a: a["policies"]["sweeps"][0]["new_tokens"],
        "sweep_k_range": _sweep_k_range,
        # the captions' claims, stated from the sweep (tests/test_claims.py recomputes each from the artifact)
        "sweep_peaks": _peaks_sentence,
        "sweep_positions": _positions_sentence,
        **per_set(sets, set_rows),
        "code_greedy_best_c": _best("code", "greedy", lambda r: fmt(r["c"], 3)),
        # the histogram's findings: its k (the worked example's), and per set the share of full and empty steps
        "hist_k": lambda a: histogram_row(a, "code")["k"],
        **per_set(sets, _histogram_rows),
    }


def _time_per_token(what: str) -> Callable:
    """Seconds per generated token in the time breakdown (code, greedy): the target alone, or the draft's and the
    verify pass's share at the best k."""
    def value(a):
        s = _sweep("code", "greedy")(a)
        best = None if what == "target" else max(s["spec"], key=lambda r: r["speedup"]["median"])
        return fmt(seconds_per_token(s, best, what), 3)
    return value


def _tpp_misses(a) -> dict:
    """|measured ÷ eq. (6) at â − 1| over the greedy sweep rows, in percent."""
    misses = [(abs(r["tokens_per_target_pass"] / theory(r)["tokens_per_pass"] - 1) * 100, s["domain"], r["k"])
              for s in a["policies"]["sweeps"] if s["mode"] == "greedy" for r in s["spec"]]
    worst = max(misses)
    within = next(b for b in (5, 10, 15, 20, 25, 50, 100, float("inf")) if worst[0] <= b)
    return {"median": fmt(statistics.median(m for m, *_ in misses), 1), "worst": fmt(worst[0], 1),
            "worst_row": f"{worst[1]} at k = {worst[2]}", "within": f"{within:g}%", "rows": len(misses)}


# The time breakdown (code, greedy) and the worked example against the theory: the verify cost, Leviathan et al.'s
# eq. (7) and eq. (8) at â, and the prediction from the measured tokens per pass.
THEORY: dict[str, Callable] = {
    "time_target_per_token": _time_per_token("target"),
    "time_draft_per_token": _time_per_token("draft"),
    "time_verify_per_token": _time_per_token("verify"),
    "code_greedy_best_verify_cost": _best("code", "greedy", lambda r: fmt(r["verify_cost"])),
    "code_greedy_best_predicted_leviathan": _best("code", "greedy", lambda r: fmt(theory(r)["speedup_eq7"])),
    "code_greedy_best_measured_over_predicted": _best(
        "code", "greedy", lambda r: fmt(r["speedup"]["median"] / theory(r)["speedup_eq8"])),
    "code_greedy_best_predicted_tpp": _best("code", "greedy", lambda r: fmt(predicted_from_tpp(r))),
    "code_greedy_best_measured_over_predicted_tpp": _best(
        "code", "greedy", lambda r: fmt(r["speedup"]["median"] / predicted_from_tpp(r))),
    "code_greedy_kmax_verify_cost": _kmax("code", "greedy", lambda r: fmt(r["verify_cost"])),
    "code_greedy_k1_verify_cost": _k1("code", "greedy", lambda r: fmt(r["verify_cost"])),
    # how well eq. (6) at â fits the measured tokens per pass, over every sweep row: the median and the largest
    # relative miss, and the row of the largest
    "theory_tpp_median_miss": lambda a: _tpp_misses(a)["median"],
    "theory_tpp_worst_miss": lambda a: _tpp_misses(a)["worst"],
    "theory_tpp_worst_row": lambda a: _tpp_misses(a)["worst_row"],
    "theory_tpp_within": lambda a: _tpp_misses(a)["within"],
    "theory_tpp_rows": lambda a: _tpp_misses(a)["rows"],
}
