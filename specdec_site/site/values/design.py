"""The adaptive policy's design values: its shipped prior (specdec/prior.py), the design tool's replay of the
length policies on the prior's design chains (`scripts/simulate_policies.py replay`), and its probe of the draft's
hidden state (`simulate_policies.py probe`), with the Benchmark's replay, calibration, sensitivity and probe tables
(replay_tables).

From docs/data/design-replay.json and docs/data/design-probe.json (design_replay, read once by the figure build, on
the artifacts as a.design) and the prior's own constants. The replay's prompt sets are the design chains' (its own
prompts, not the public sets): their rows are spelled out.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

from specdec import prior as shipped_prior
from specdec_site.paths import ROOT
from specdec_site.public_prompts import LABELS
from specdec_site.site.values.common import fmt

# The design tool's replay of the length policies on the prior's design chains: no model and no timing, so one file
# serves every device's copy of the site (`scripts/simulate_policies.py replay ... --signals --json`).
DESIGN_REPLAY = ROOT / "docs" / "data" / "design-replay.json"
# The design tool's probe (`simulate_policies.py probe`): a linear head on the draft's hidden state against its confidence
# as a predictor of acceptance, on the same design prompts. It needs the real pair (CPU), and is not rebuilt with the data.
DESIGN_PROBE = ROOT / "docs" / "data" / "design-probe.json"


def design_replay() -> dict:
    """The design replay, with the probe's table under "probe"."""
    makes = {DESIGN_REPLAY: "replay scripts/design_chains.json.gz scripts/design_chains_narrative.json.gz --signals --json",
             DESIGN_PROBE: "probe scripts/design_chains.json.gz --json"}
    for path, command in makes.items():
        if not path.is_file():
            raise SystemExit(f"error: {path} is missing: run `python scripts/simulate_policies.py {command} "
                             f"{os.path.relpath(path, ROOT)}`")
    return {**json.loads(DESIGN_REPLAY.read_text()), "probe": json.loads(DESIGN_PROBE.read_text())}


def _prior_design_prompts(design: dict) -> dict[str, list[str]]:
    """The replay's design prompts that the shipped prior was fitted on (specdec/prior.py's DESIGN_PROMPTS): the narrative
    set's were recorded after the fit, and the replay scores the prior on them without it having seen them."""
    fitted = set(shipped_prior.DESIGN_PROMPTS)
    return {d: [i for i in ids if i in fitted] for d, ids in design["prompts"].items() if any(i in fitted for i in ids)}


def _low_share(design: dict, domain: str) -> float:
    """The share of a set's reached design drafts whose confidence is below 0.2 (the calibration's first two bins)."""
    tried = design["calibration"][domain]["tried"]
    return sum(tried[:2]) / sum(tried)


def _low_confidence_share(design: dict, domain: str) -> str:
    return f"{fmt(100 * _low_share(design, domain), 0)}%"


def _low_confidence_range(design: dict) -> str:
    """The lowest and highest _low_share of the sets other than narrative, as "a–b%"."""
    shares = sorted(100 * _low_share(design, d) for d in design["calibration"] if d != "narrative")
    return f"{fmt(shares[0], 0)}–{fmt(shares[-1], 0)}%"


def _probe_row(design: dict, hidden: bool) -> dict:
    """The probe's rows over all its positions: the logistic on the confidence, or (hidden) each hidden-state row."""
    rows = {name: row["all"] for name, row in design["probe"]["predictors"].items()}
    return {n: r for n, r in rows.items() if "hidden" in n} if hidden else rows["logistic on the confidence"]


def _probe_verdict(design: dict) -> str:
    """What the probe found, in words: whether any ridge strength's head beat the confidence's logistic on log-loss over
    all the positions, and by how much (below PROBE_SMALL: next to nothing)."""
    base = _probe_row(design, False)["log_loss"]
    heads = _probe_row(design, True)
    best = min(r["log_loss"] for r in heads.values())
    if best >= base:
        return (f"none of the {len(heads)} ridge strengths scores a lower log-loss than the confidence alone. With this "
                f"much data, a head on the hidden state learns nothing that the confidence does not already say")
    gain = 100 * (1 - best / base)
    said = (f"the best of the {len(heads)} ridge strengths, picked after the fact, scores a log-loss {fmt(gain, 1)}% "
            f"lower than the confidence alone")
    if gain < PROBE_SMALL:
        return f"{said}. With this much data, a head on the hidden state learns next to nothing that the confidence does not already say"
    return f"{said}. The hidden state carries a signal that the confidence lacks; the policy does not use it yet"


PROBE_SMALL = 2.0  # % lower log-loss under which the probe's best head counts as next to no gain


def replay_tables(design: dict) -> dict:
    """The Benchmark's replay table from the design replay (design_replay): every policy the design tool replays, per
    domain its speedup over target-only (one verify pass per token, no prefill) and ÷ oracle, medians over the design
    prompts; then the two reference points."""
    domains = list(design["prompts"])
    rows = [[f"`{name}`" if name in ("fixed", "confidence", "heuristic", "adaptive") else name,
             *(f"{fmt(r[d]['speedup'])}× · {fmt(r[d]['over_oracle'])}" for d in domains)]
            for name, r in design["policies"].items()]
    rows.append(["a survival threshold on the confidence, calibration and threshold fitted in hindsight on these prompts",
                 *(f"· {fmt(design['references'][d]['hindsight'])}" for d in domains)])
    rows.append(["the accepted run plus the rejected draft (only a rule that foresees rejections does better)",
                 *(f"· {fmt(design['references'][d]['cap'])}" for d in domains)])
    probe = design["probe"]
    probe_sets = [*probe["prompts"], "all"]
    probe_rows = [[name, *(f"{fmt(row[d]['log_loss'], 3)} · {fmt(row[d]['auc'], 3)}" for d in probe_sets)]
                  for name, row in probe["predictors"].items()]
    first = probe["predictors"][next(iter(probe["predictors"]))]
    prior, calibration = design["prior"], design["calibration"]
    bins = len(prior["acceptance"])
    calibration_rows = [[f"{b / bins:.1f}–{(b + 1) / bins:.1f}", fmt(prior["acceptance"][b]),
                         *("–" if calibration[d]["acceptance"][b] is None else
                           f"{fmt(calibration[d]['acceptance'][b])} ({calibration[d]['tried'][b]})" for d in domains)]
                        for b in range(bins)]
    sensitivity = design["sensitivity"]
    changes = list(sensitivity[domains[0]]["ratios"])
    sensitivity_rows = [[change, *(fmt(sensitivity[d]["ratios"][change], 3) for d in domains)] for change in changes]
    sensitivity_rows.append(["(the shipped policy's own tokens per pass on these prompts)",
                             *(fmt(sensitivity[d]["own_rate"]) for d in domains)])
    return {"replay": {"columns": ["policy", *(f"{LABELS.get(d, d)} ({len(design['prompts'][d])}): speedup · ÷ oracle"
                                               for d in domains)],
                       "rows": rows},
            "replay_calibration": {"columns": ["the draft's confidence", "the shipped prior",
                                               *(f"{LABELS.get(d, d)} (drafts)" for d in domains)],
                                   "rows": calibration_rows},
            "replay_sensitivity": {"columns": ["one part of the prior changed", *(LABELS.get(d, d) for d in domains)],
                                   "rows": sensitivity_rows},
            "probe": {"columns": ["predictor of the first draft token's acceptance",
                                  *(f"{d} ({first[d]['positions']} positions): log-loss · AUC" for d in probe_sets)],
                      "rows": probe_rows}}


# The shipped prior's constants and the design prompts it was fitted on; the replay per design set (the library's
# policy ÷ the previous one, the accepted-run-plus-one cap) and on the narrative set, which the prior never saw: the
# library's policy against the confidence stop, and why (the sensitivity of the prior, the low-confidence share); the
# probe's finding.
DESIGN: dict[str, Callable] = {
    "prior_prompts": lambda a: sum(len(ids) for ids in _prior_design_prompts(a.design).values()),
    "prior_prompt_sets": lambda a: "; ".join(f"{ids[0]} … {ids[-1]}" for ids in _prior_design_prompts(a.design).values()),
    "prior_strength": lambda a: shipped_prior.STRENGTH,
    "prior_rate_weight": lambda a: shipped_prior.RATE_WEIGHT,
    "prior_rate": lambda a: f"{shipped_prior.RATE:g}",
    "prior_draft_cost": lambda a: f"{shipped_prior.DRAFT_COST:g}",
    "prior_verify_slope": lambda a: f"{shipped_prior.VERIFY_SLOPE:g}",
    "prior_top_acceptance": lambda a: f"{shipped_prior.ACCEPTANCE[-1]:g}",
    "replay_code_adaptive_over_previous": lambda a: fmt(a.design["adaptive_over_previous"]["code"]),
    "replay_prose_adaptive_over_previous": lambda a: fmt(a.design["adaptive_over_previous"]["prose"]),
    "replay_dialogue_adaptive_over_previous": lambda a: fmt(a.design["adaptive_over_previous"]["dialogue"]),
    "replay_code_cap": lambda a: fmt(a.design["references"]["code"]["cap"]),
    "replay_prose_cap": lambda a: fmt(a.design["references"]["prose"]["cap"]),
    "replay_dialogue_cap": lambda a: fmt(a.design["references"]["dialogue"]["cap"]),
    "replay_narrative_adaptive_over_previous": lambda a: fmt(a.design["adaptive_over_previous"]["narrative"]),
    "replay_narrative_cap": lambda a: fmt(a.design["references"]["narrative"]["cap"]),
    "replay_narrative_prompts": lambda a: ", ".join(a.design["prompts"]["narrative"]),
    # the narrative set in the replay: the library's policy against the confidence stop, and why (prior_sensitivity)
    "replay_narrative_adaptive_speedup": lambda a: fmt(a.design["policies"]["adaptive"]["narrative"]["speedup"]),
    "replay_narrative_confidence_speedup": lambda a: fmt(a.design["policies"]["confidence"]["narrative"]["speedup"]),
    "replay_narrative_adaptive_over_oracle": lambda a: fmt(a.design["policies"]["adaptive"]["narrative"]["over_oracle"]),
    "replay_narrative_hindsight": lambda a: fmt(a.design["references"]["narrative"]["hindsight"]),
    "replay_prior_rate": lambda a: fmt(a.design["prior"]["rate"]),
    "replay_prior_strength": lambda a: a.design["prior"]["strength"],
    "replay_narrative_own_rate": lambda a: fmt(a.design["sensitivity"]["narrative"]["own_rate"]),
    "replay_narrative_low_confidence_share": lambda a: _low_confidence_share(a.design, "narrative"),
    "replay_others_low_confidence_share": lambda a: _low_confidence_range(a.design),
    "replay_sensitivity_largest": lambda a: fmt(max(abs(v - 1) for s in a.design["sensitivity"].values()
                                                   for v in s["ratios"].values()) * 100, 1),
    "replay_probe_positions": lambda a: _probe_row(a.design, False)["positions"],
    "replay_probe_hidden_size": lambda a: a.design["probe"]["recorded"]["hidden_size"],
    "replay_probe_confidence_log_loss": lambda a: fmt(_probe_row(a.design, False)["log_loss"], 3),
    "replay_probe_confidence_auc": lambda a: fmt(_probe_row(a.design, False)["auc"], 3),
    "replay_probe_hidden_log_loss": lambda a: "–".join(
        fmt(f(r["log_loss"] for r in _probe_row(a.design, True).values()), 3) for f in (min, max)),
    "replay_probe_verdict": lambda a: _probe_verdict(a.design),
}
