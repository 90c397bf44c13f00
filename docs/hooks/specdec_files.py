"""The hook's files and build facts: loading and checking the figure/value files, the site's copies, the build fields.

Here because these are what the hook reads from outside the page: docs/figures/*.json (or the copy's own folder,
SPECDEC_FIGURES), checked against `specdec_site.site.contract` and the sha256 of the artifacts each was built from; the
copies of the site (SPECDEC_SITE_COPIES, SPECDEC_SITE_COPY) and the switch between them at the top of each page; and
the fields only a build knows (the pages' commit, the site's and its source's URLs), which values.json holds as @NAME@.

Loaded by docs/hooks/specdec_hook.py (load_sibling), which sets `hook`: the names a test replaces on the hook module
(load_checked, docs_commit, DOCS, FIGURES) are read through it, when used, so that the replacement is the one used.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

from specdec.fileio import sha256_file
from specdec_site.site import contract

__all__ = ["PLOTLY_BASIC_TRACES", "FIX", "_cache", "ARTICLE", "COPY", "site_copies", "add_device_switch",
           "figures_dir", "docs_commit", "build_fields", "fill_build_fields", "load_checked", "data_folder"]

hook: Any = None  # the hook module's names, read when used (specdec_hook.load_sibling sets it)

# The trace types of the vendored plotly.js basic bundle: a figure file with another stops the build.
PLOTLY_BASIC_TRACES = {"scatter", "bar", "pie"}
FIX = "run `python scripts/build_figures.py` (or `bash scripts/site.sh`)"

_cache: dict = {}


# ---------------------------------------------------------------- the site's copies


ARTICLE = '<article class="md-content__inner md-typeset">'
COPY = re.compile(r"([a-z0-9]+)=((?:[a-z0-9]+/)?)")


def site_copies() -> tuple[dict[str, str], str]:
    """({device: its copy's folder below the site's top}, this copy's device) from SPECDEC_SITE_COPIES and
    SPECDEC_SITE_COPY; ({}, "") for a site of one copy."""
    spec, here = os.environ.get("SPECDEC_SITE_COPIES", ""), os.environ.get("SPECDEC_SITE_COPY", "")
    if not spec:
        return {}, ""
    items = [COPY.fullmatch(item) for item in spec.split(",")]
    copies = {m.group(1): m.group(2) for m in items if m}
    if None in items or len(copies) != len(items) or here not in copies or list(copies.values()).count("") != 1:
        raise PluginError(f"SPECDEC_SITE_COPIES={spec!r} with SPECDEC_SITE_COPY={here!r}: expected device=folder/ "
                          "pairs, one device with the empty folder (the site's top), and this copy's device among them "
                          "(scripts/build_site.py sets both)")
    return copies, here


def add_device_switch(output: str, url: str) -> str:
    """The switch between the site's copies at the top of the page's article: this copy's device, and a link to the
    same page in each other copy (relative, so the site works under any sub-path). The 404 page, served at any
    path, gets none. Inside the article, so that instant navigation, which swaps the article, swaps it too."""
    copies, here = site_copies()
    if not copies or url == "404.html":
        return output
    if output.count(ARTICLE) != 1:
        raise PluginError(f"{url or 'index'}: the device switch goes after {ARTICLE}, which the page has "
                          f"{output.count(ARTICLE)} times")
    # from the page to the site's top: up to this copy's top, then out of this copy's folder
    top = "../" * (url.count("/") + copies[here].count("/"))
    parts = []
    for device, folder in copies.items():
        label = html.escape(device.upper())
        if device == here:
            parts.append(f'<span class="specdec-device-current" aria-current="page">{label}</span>')
        else:
            href = html.escape((top + folder + url) or "./")
            parts.append(f'<a href="{href}" hreflang="en" data-specdec-device="{html.escape(device)}">{label}</a>')
    switch = ('<nav class="specdec-device-switch" aria-label="Which run the page shows">'
              '<span class="specdec-device-label">Measured on</span> ' + " ".join(parts) + "</nav>")
    return output.replace(ARTICLE, ARTICLE + switch)


# ---------------------------------------------------------------- the figure files


def figures_dir() -> Path:
    """The figures this build reads: SPECDEC_FIGURES (a copy's own, scripts/build_site.py), else docs/figures."""
    return Path(os.environ["SPECDEC_FIGURES"]) if os.environ.get("SPECDEC_FIGURES") else hook.FIGURES

# ---------------------------------------------------------------- the build fields


def docs_commit() -> str | None:
    """The commit of the pages being built (`git rev-parse HEAD`), marked when docs/ or mkdocs.yml differ from it;
    None outside a git checkout."""
    root = str(hook.DOCS.parent)
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "docs", "mkdocs.yml"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + (" (with uncommitted changes to the pages)" if dirty.stdout.strip() else "")


def build_fields() -> dict[str, str | None]:
    """The fields only a build knows, which values.json holds as @NAME@ (a value written before the site is built
    cannot hold the commit that will contain it): the pages' commit, and the site's and its source's URLs where the
    environment names them (SPECDEC_SITE_URL, SPECDEC_REPO_URL: the Pages workflow sets both)."""
    if "build_fields" not in _cache:
        commit = hook.docs_commit()
        repo = (os.environ.get("SPECDEC_REPO_URL") or "").rstrip("/")
        clean = commit.split()[0] if commit and " " not in commit else None
        _cache["build_fields"] = {"@DOCS_COMMIT@": commit, "@SITE_URL@": os.environ.get("SPECDEC_SITE_URL") or None,
                                  "@SOURCE_URL@": f"{repo}/tree/{clean}" if repo and clean else None}
    return _cache["build_fields"]


def fill_build_fields(text: str) -> str:
    """text with each @NAME@ of build_fields() filled in; a line whose field has no value here is left out."""
    fields = build_fields()
    lines = []
    for line in text.split("\n"):
        names = [name for name in fields if name in line]
        if any(fields[name] is None for name in names):
            continue
        for name in names:
            line = line.replace(name, fields[name])
        lines.append(line)
    # a dropped last field leaves the entry's last kept line with a trailing comma before "}": take it off
    out = "\n".join(lines)
    return out.replace(",\n}", "\n}")


# ---------------------------------------------------------------- loading and checking a file


def load_checked(name: str) -> dict:
    """A figure/values/visualizer file, checked against the contract and the artifacts it was built from."""
    if name in _cache:
        return _cache[name]
    path = figures_dir() / f"{name}.json"
    shown = path.relative_to(hook.DOCS.parent) if path.is_relative_to(hook.DOCS.parent) else path
    if not path.is_file():
        raise PluginError(f"figure '{name}' is missing ({shown}): {FIX}")
    try:
        data = json.loads(path.read_text())
        contract.check(name, data)
        sources = dict(data["sources"])
        traces = {t.get("type", "scatter") for t in data["figure"]["data"]} if "figure" in data else set()
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise PluginError(f"{shown} is malformed ({type(err).__name__}: {err}); {FIX}") from err
    if traces - PLOTLY_BASIC_TRACES:
        raise PluginError(f"{shown} uses trace types {sorted(traces - PLOTLY_BASIC_TRACES)}, which the vendored "
                          f"plotly.js basic bundle cannot draw: vendor a larger official bundle")
    for source, digest in sources.items():
        artifact = hook.DOCS / source
        if not artifact.is_file():
            raise PluginError(f"figure '{name}' was built from {source}, which is missing")
        if sha256_file(artifact) != digest:
            raise PluginError(f"figure '{name}' is stale: {source} changed after it was built; {FIX}")
    _cache[name] = data
    return data


def data_folder() -> str:
    """The artifact folder the site's values were built from, relative to docs/ (where values.json's traces.json is)."""
    sources = hook.load_checked("values")["sources"]
    folders = {source.rsplit("/", 1)[0] for source in sources if source.endswith("traces.json")}
    folder = folders.pop() if len(folders) == 1 else ""
    if not folder or folder.startswith("..") or not (hook.DOCS / folder).is_dir():
        raise PluginError(f"the figures were built from {sorted(sources)}: the site serves its artifacts from one folder "
                          f"under docs/ (copy them to docs/data/<name>/ and {FIX} --data docs/data/<name>)")
    return folder
