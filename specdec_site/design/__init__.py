"""Replay draft-length policies offline on recorded greedy draft chains: a design tool, not a benchmark.

At T = 0 every correct run emits the target's greedy continuation, and a step that starts after t emitted
tokens sees the draft's greedy chain from the target's own prefix. So one pass over a prompt records all a
policy can ever see: for every start t, the draft's chain of up to K tokens with its confidences, and how
many of them the target accepts. Any causal policy then replays on these chains without a model, at a
fixed cost per draft token and a verify pass of k drafts costed at the median the committed policies stage
measured for that k (the line a + b k fitted to the same steps where too few had that k; `--verify-cost line`
uses the line throughout), with the oracle (eq. 13) as the ceiling. No timing noise: two policies differ only
by their choices.

    python scripts/simulate_policies.py collect --start 12 --count 6 --out /tmp/chains.json  # models, ~15 min
    python scripts/simulate_policies.py replay scripts/design_chains.json.gz                 # a minute, no model
    python scripts/simulate_policies.py replay scripts/design_chains.json.gz scripts/design_chains_narrative.json.gz         --signals --json docs/data/design-replay.json                                        # the site's replay tables
    python scripts/simulate_policies.py fit scripts/design_chains.json.gz                    # writes specdec/prior.py

scripts/design_chains_narrative.json.gz holds the narrative set's design prompts (issue 47: recorded after the prior
was fitted, so the prior has not seen them); `replay` also reports, per set, the prior's calibration against the set's
own and how the same rule fares with one part of its prior changed (prior_sensitivity).

Use prompts the benchmark does not use (the policies stage uses the first 6 of each set) to design on.
`replay` also prints two reference points for measured / oracle (neither bounds every causal rule: the adaptive
policy beats the first on prose): a survival threshold on the draft's confidence, its calibration and threshold fitted
in hindsight on the prompts it is scored on, and a rule that drafts the accepted run plus the rejected token (it never
stops early and never drafts past the first rejection; only a rule that foresees rejections does better).
"""
