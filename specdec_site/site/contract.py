"""The contract between the figure build and the MkDocs hook: the files it writes, the keys the hook reads.

Every file in docs/figures/ is JSON with
    "sources":        {path relative to docs/: sha256 of that artifact when the file was built}
    "plotly_version": the plotly package whose plotly.js must render the figures
and, by kind:
    figure NAME.json    "title": str, "figure": {"data": [...], "layout": {...}}   marker [[fig:NAME]]
    values.json         "values": {name: str | int | float}                       marker [[val:NAME]]
    visualizer.json     "runs": [...], "palette": {fate: colour}, "fates": ...    marker [[visualizer]]
    playground.json     "rule": {...}, "speedup": {...}, "race": {...}            marker [[playground]]
    tables.json         "tables": {name: {"columns": [str], "rows": [[cell]]}}    marker [[table:NAME]]
    strip.json          "run": {"label", "prompt", "k", "steps": [...]}, "palette"  marker [[strip]]
The hook refuses a file that breaks this (`check`), and one whose sources changed since (stale).
Standard library only: the hook imports it.
"""

from __future__ import annotations

COMMON_KEYS = ("sources", "plotly_version")
KEYS = {
    "figure": COMMON_KEYS + ("title", "figure"),
    "values": COMMON_KEYS + ("values",),
    "visualizer": COMMON_KEYS + ("runs", "palette"),
    "playground": COMMON_KEYS + ("rule", "speedup", "race", "palette"),
    "tables": COMMON_KEYS + ("tables",),
    "strip": COMMON_KEYS + ("run", "palette"),
}
SPECIAL = ("values", "visualizer", "playground", "tables", "strip")  # file names that are not figures
ARTIFACTS = ("traces", "policies", "trees", "block", "exactness")  # docs/data/<device>/NAME.json: the sources


def kind_of(name: str) -> str:
    return name if name in SPECIAL else "figure"


def check(name: str, data) -> None:
    """Raise ValueError naming what is wrong with figure file `name`."""
    kind = kind_of(name)
    if not isinstance(data, dict):
        raise ValueError(f"{name}.json is not a JSON object")
    missing = [k for k in KEYS[kind] if k not in data]
    if missing:
        raise ValueError(f"{name}.json lacks {', '.join(missing)} (a {kind} file has {', '.join(KEYS[kind])})")
    if not isinstance(data["sources"], dict) or not data["sources"]:
        raise ValueError(f"{name}.json names no source artifacts")
    if kind == "figure" and not (isinstance(data["figure"], dict) and data["figure"].get("data")):
        raise ValueError(f"{name}.json has a figure with no data")
    if kind == "values" and not all(isinstance(v, (str, int, float)) for v in data["values"].values()):
        raise ValueError(f"{name}.json has a value that is not a string or a number")
    if kind == "tables":
        for table, body in (data["tables"].items() if isinstance(data["tables"], dict) else [("?", None)]):
            columns = body.get("columns") if isinstance(body, dict) else None
            rows = body.get("rows") if isinstance(body, dict) else None
            if not (isinstance(columns, list) and columns and all(isinstance(c, str) for c in columns)
                    and isinstance(rows, list) and rows):
                raise ValueError(f"{name}.json: table {table!r} needs a list of column names and a list of rows")
            for row in rows:
                if not (isinstance(row, list) and len(row) == len(columns)
                        and all(isinstance(c, (str, int, float)) for c in row)):
                    raise ValueError(f"{name}.json: table {table!r} has a row that is not {len(columns)} strings "
                                     f"or numbers: {row!r}")
