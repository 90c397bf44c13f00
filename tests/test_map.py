"""CONTRIBUTING.md is the contributor's map: every file of the code is on a row of one of its tables, by its path.

A module added without a row fails here, so the map cannot fall behind the tree (it missed five files once).
"""

from __future__ import annotations

import re

from specdec_site.paths import ROOT

# The code the map must name: the library, the build, the scripts, the browser code, the hook, the notebook, the
# tests, CI. Vendored code, caches and data are not code.
CODE = ("specdec/**/*.py", "specdec_site/**/*.py", "scripts/*.py", "scripts/*.sh", "docs/assets/*.js",
        "docs/assets/*.css", "docs/hooks/*.py", "notebooks/*.ipynb", "tests/*.py")


def code_files() -> list[str]:
    found = {path.relative_to(ROOT).as_posix() for pattern in CODE for path in ROOT.glob(pattern)
             if "__pycache__" not in path.parts}
    return sorted(found | {".ci/run"})


def mapped_paths() -> set[str]:
    """The paths named in backticks on a table row of CONTRIBUTING.md."""
    rows = [line for line in (ROOT / "CONTRIBUTING.md").read_text().splitlines() if line.startswith("|")]
    return {name for row in rows for name in re.findall(r"`([^`\s]+)`", row)}


def test_every_file_of_the_code_is_on_a_row_of_the_map():
    mapped = mapped_paths()
    missing = [path for path in code_files() if path not in mapped]
    assert not missing, f"on no row of CONTRIBUTING.md's map (add a row naming its path): {missing}"


def test_the_map_names_no_file_that_is_gone():
    """A row naming a path of the code that no longer exists is a stale map."""
    prefixes = ("specdec/", "specdec_site/", "scripts/", "docs/assets/", "docs/hooks/", "notebooks/", "tests/")
    stale = sorted(p for p in mapped_paths() if p.startswith(prefixes) and "*" not in p and "<" not in p
                   and not p.endswith("/") and not (ROOT / p).exists())
    assert not stale, f"CONTRIBUTING.md names files that are gone: {stale}"
