"""MkDocs hook: inject measured figures and numbers into pages; fail loudly on anything missing or stale.

Markers in the Markdown pages:
    [[fig:NAME]]      the Plotly figure docs/figures/NAME.json, rendered by assets/specdec.js
    [[val:NAME]]      a number or string from docs/figures/values.json (HTML-escaped)
    [[visualizer]]    the Step Visualizer with the recorded traces (docs/figures/visualizer.json)
    [[playground:PART]]  a Playground panel (rule, speedup, race), or its data (docs/figures/playground.json)

The files are written by `python scripts/build_figures.py` from the artifacts in docs/data/, in the
format that `specdec_site.contract` defines; each records the sha256 of the artifacts it was built from.
A marker with no file, a file that breaks the contract, a file built from artifacts that have changed
since, or a plotly.js of another version than the one that wrote the JSON stops the build with an error
that says which and how to fix it.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

from specdec.fileio import sha256_file
from specdec_site import contract

DOCS = Path(__file__).resolve().parents[1]
FIGURES = DOCS / "figures"
MARKER = re.compile(r"\[\[([^\[\]\n]*)\]\]")
PLAYGROUND_PANELS = ("rule", "speedup", "race")
FIX = "run `python scripts/build_figures.py` (or `bash scripts/site.sh`)"

_cache: dict = {}


# ---------------------------------------------------------------- hooks


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    _cache.clear()
    import plotly

    written_by = load_checked("values")["plotly_version"]
    if written_by != plotly.__version__:
        raise PluginError(f"the figures were written by plotly {written_by}, but plotly {plotly.__version__} is installed "
                          f"(its plotly.js would render them): install plotly=={written_by} or {FIX}")
    return config


def on_page_markdown(markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
    return MARKER.sub(lambda m: render_marker(m, page.file.src_path), markdown)


def on_post_build(*, config: MkDocsConfig) -> None:
    """Serve plotly.js from the site itself, from the plotly package that wrote the figure JSON."""
    import plotly

    source = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    dest = Path(config["site_dir"]) / "assets" / "vendor" / "plotly.min.js"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)


# ---------------------------------------------------------------- helpers


def load_checked(name: str) -> dict:
    """A figure/values/visualizer file, checked against the contract and the artifacts it was built from."""
    if name in _cache:
        return _cache[name]
    path = FIGURES / f"{name}.json"
    if not path.is_file():
        raise PluginError(f"figure '{name}' is missing ({path.relative_to(DOCS.parent)}): {FIX}")
    try:
        data = json.loads(path.read_text())
        contract.check(name, data)
    except ValueError as err:
        raise PluginError(f"figure '{name}' is unusable: {err}; {FIX}") from err
    for source, digest in data["sources"].items():
        artifact = DOCS / source
        if not artifact.is_file():
            raise PluginError(f"figure '{name}' was built from {source}, which is missing")
        if sha256_file(artifact) != digest:
            raise PluginError(f"figure '{name}' is stale: {source} changed after it was built; {FIX}")
    _cache[name] = data
    return data


def script_json(data) -> str:
    """JSON safe inside <script type="application/json">: no '<' can close the tag or open a comment."""
    return json.dumps(data, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_marker(match: re.Match, page_path: str) -> str:
    marker = match.group(1).strip()
    kind, _, name = marker.partition(":")
    if kind == "fig" and name:
        fig = load_checked(name)
        return (f'<div class="specdec-figure" id="fig-{html.escape(name)}" role="img" '
                f'aria-label="{html.escape(fig["title"])}"></div>\n'
                f'<script type="application/json" class="specdec-figure-data" data-for="fig-{html.escape(name)}">'
                f'{script_json(fig["figure"])}</script>')
    if kind == "val" and name:
        values = load_checked("values")["values"]
        if name not in values:
            raise PluginError(f"{page_path}: unknown value marker [[val:{name}]] (known: {', '.join(sorted(values))})")
        return html.escape(str(values[name]))
    if marker == "visualizer":
        data = load_checked("visualizer")
        payload = {"runs": data["runs"], "palette": data["palette"]}
        return ('<div id="specdec-visualizer" class="specdec-visualizer"></div>\n'
                f'<script type="application/json" id="specdec-visualizer-data">{script_json(payload)}</script>')
    if kind == "playground" and name in PLAYGROUND_PANELS:
        return f'<div id="pg-{name}-panel" class="pg-panel"></div>'
    if kind == "playground" and name == "data":
        data = load_checked("playground")
        payload = {key: data[key] for key in ("rule", "speedup", "race", "palette")}
        return f'<script type="application/json" id="specdec-playground-data">{script_json(payload)}</script>'
    raise PluginError(f"{page_path}: unknown marker [[{marker}]] (expected [[fig:NAME]], [[val:NAME]], [[visualizer]] "
                      f"or [[playground:{'|'.join(PLAYGROUND_PANELS + ('data',))}]])")
