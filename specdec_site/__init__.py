"""specdec_site: the build side. Runs the decoder and writes the site's data, figures and values.

    python scripts/build_data.py     (= python -m specdec_site)       models -> docs/data/<device>/*.json
    python scripts/build_figures.py  (= python -m specdec_site.site.figures) artifacts -> docs/figures/*.json

Data flow, one direction: `config` (what to run) + `prompts` -> `stages` (traces, benchmark, exactness,
notebook; each `run(ctx, cfg) -> dict`) -> artifacts (`meta` adds provenance) -> `figures` and `values`
(explicit tables) -> figure files whose format is `contract` -> the MkDocs hook -> pages.
Nothing here imports torch at module level, so the figure half runs with the site's requirements only.
"""
