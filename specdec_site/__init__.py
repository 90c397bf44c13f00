"""specdec_site: the build side. Runs the decoder and writes the site's data, figures and values.

    python scripts/build_data.py     (= python -m specdec_site)   models -> docs/data/<device>/*.json
    python scripts/build_figures.py                                artifacts -> docs/figures/*.json
    python scripts/simulate_policies.py                            the design tool (specdec_site/design/)

Data flow, one direction, one room per step (CONTRIBUTING.md has the map):
    engine/   what to run (config, prompts), the command line, the model context, which stages are stale
    stages/   the six stages (traces, policies, trees, block, exactness, notebook), each `run(ctx, cfg) -> dict`;
              engine/meta.py adds an artifact's provenance
    site/     artifacts -> figures and values (explicit tables) -> files in the format of site/contract.py -> the
              MkDocs hook -> pages; it imports no stage
    exactness/  exact distributions, mutants and the audit, which the exactness stage and the tests share
Shared modules sit beside the rooms (paths, numbers, prompts, public_prompts, summary, acceptance, cost_curve,
policy_variants); the trace command is `specdec_site.trace_command`.
Nothing here imports torch at module level, so the figure half runs with the site's requirements only.
"""
