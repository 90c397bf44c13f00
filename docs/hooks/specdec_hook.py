"""MkDocs hook: inject measured figures and numbers into pages; fail loudly on anything missing or stale.

Markers in the Markdown pages:
    [[fig:NAME]]      the Plotly figure docs/figures/NAME.json, rendered by assets/specdec.js
    [[val:NAME]]      a number or string from docs/figures/values.json (HTML-escaped)
    [[visualizer]]    the Step Visualizer with the recorded traces (docs/figures/visualizer.json)

The figure files are written by `python scripts/build_figures.py` from the artifacts in docs/data/;
each records the sha256 of the artifacts it was built from. A marker with no figure, a figure built
from artifacts that have changed since, or a plotly.js of another version than the one that wrote
the JSON, stops the build with an error that says which and how to fix it.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
from pathlib import Path

from mkdocs.exceptions import PluginError

DOCS = Path(__file__).resolve().parents[1]
FIGURES = DOCS / "figures"
MARKER = re.compile(r"\[\[([^\[\]\n]*)\]\]")
FIX = "run `python scripts/build_figures.py` (or `bash scripts/site.sh`)"

_cache: dict = {}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_checked(name: str) -> dict:
    """A figure/values/visualizer file, checked against the artifacts it was built from."""
    if name in _cache:
        return _cache[name]
    path = FIGURES / f"{name}.json"
    if not path.is_file():
        raise PluginError(f"figure '{name}' is missing ({path.relative_to(DOCS.parent)}): {FIX}")
    data = json.loads(path.read_text())
    for source, digest in data["sources"].items():
        artifact = DOCS.parent / source
        if not artifact.is_file():
            raise PluginError(f"figure '{name}' was built from {source}, which is missing")
        if sha256(artifact) != digest:
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
                f'aria-label="{html.escape(fig.get("title", name))}"></div>\n'
                f'<script type="application/json" class="specdec-figure-data" data-for="fig-{html.escape(name)}">'
                f'{script_json(fig["figure"])}</script>')
    if kind == "val" and name:
        values = load_checked("values")["values"]
        if name not in values:
            raise PluginError(f"{page_path}: unknown value marker [[val:{name}]] (known: {', '.join(sorted(values))})")
        return html.escape(str(values[name]))
    if marker == "visualizer":
        data = load_checked("visualizer")
        return ('<div id="specdec-visualizer" class="specdec-visualizer"></div>\n'
                f'<script type="application/json" id="specdec-visualizer-data">{script_json(data["runs"])}</script>')
    raise PluginError(f"{page_path}: unknown marker [[{marker}]] (expected [[fig:NAME]], [[val:NAME]] or [[visualizer]])")


def on_config(config):
    _cache.clear()
    import plotly

    written_by = load_checked("values").get("plotly_version")
    if written_by != plotly.__version__:
        raise PluginError(f"the figures were written by plotly {written_by}, but plotly {plotly.__version__} is installed "
                          f"(its plotly.js would render them): install plotly=={written_by} or {FIX}")
    return config


def on_page_markdown(markdown, page, config, files):
    return MARKER.sub(lambda m: render_marker(m, page.file.src_path), markdown)


def on_post_build(config):
    """Serve plotly.js from the site itself, from the plotly package that wrote the figure JSON."""
    import plotly

    source = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    dest = Path(config["site_dir"]) / "assets" / "vendor" / "plotly.min.js"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)
