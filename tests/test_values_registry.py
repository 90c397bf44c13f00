"""The values package (specdec_site/site/values/, issue 64): a table assembled from one module per artifact, whose
per-set rows are made for every registered public prompt set, so that a new set needs no edit to the package; each
module small enough to read; every name listed by `python -m specdec_site.site.values`."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
from browser import ROOT

from specdec_site import public_prompts
from specdec_site.site import values as values_package

PACKAGE = ROOT / "specdec_site" / "site" / "values"
NEW = "fifth"  # a public prompt set registered by the test alone
AS = "narrative"  # the set whose artifacts it copies


@pytest.fixture(scope="module")
def committed():
    """The committed CPU artifacts and the design replay, as the figure build reads them."""
    from specdec_site.site.files import load_artifacts

    return load_artifacts(ROOT / "docs" / "data" / "cpu"), values_package.design_replay()


def registered(monkeypatch) -> dict:
    """Register a fifth public prompt set (public_prompts.SOURCES and LABELS, as a contributor would) and build the
    table again: the values package itself is not touched."""
    monkeypatch.setitem(public_prompts.SOURCES, NEW, {"name": "a test set", "licence": "CC0", "package": "none",
                                                      "url": "https://example.org"})
    monkeypatch.setitem(public_prompts.LABELS, NEW, "a test set")
    return values_package.build_values()


def with_new_set(artifacts: dict) -> dict:
    """The artifacts with the copied set's policies-stage entries (its domain and its sweep) under the new name."""
    artifacts = copy.deepcopy(artifacts)
    policies = artifacts["policies"]
    policies["domains"][NEW] = copy.deepcopy(policies["domains"][AS])
    policies["sweeps"] += [{**copy.deepcopy(s), "domain": NEW} for s in policies["sweeps"] if s["domain"] == AS]
    return artifacts


def test_a_registered_prompt_set_gets_its_rows_with_no_edit_to_the_package(monkeypatch, committed):
    before = dict(values_package.VALUES)
    table = registered(monkeypatch)
    # exactly the copied set's own rows, renamed (the design replay's sets are the design chains', not public ones)
    own = [name for name in before if AS in name.split("_") and not name.startswith("replay_")]
    assert own and [name for name in table if name not in before] == [name.replace(AS, NEW) for name in own]
    assert [name for name in table if name in before] == list(before)  # every other row as it was, in its order
    assert not any(NEW in path.read_text() for path in PACKAGE.glob("*.py"))

    artifacts, design = committed
    monkeypatch.setattr(values_package, "VALUES", table)
    computed = values_package.compute_values(with_new_set(artifacts), design)
    for name in own:
        assert computed[name.replace(AS, NEW)] == computed[name], name
    # before the data is rebuilt with the new set, its rows read "not run" (and every other value is computed)
    unbuilt = values_package.compute_values(artifacts, design)
    assert {unbuilt[name.replace(AS, NEW)] for name in own} == {values_package.NOT_RUN}


def test_the_table_is_unchanged_without_a_new_set():
    """build_values() makes the table VALUES holds: the same names in the same order (values.json's)."""
    assert list(values_package.build_values()) == list(values_package.VALUES)


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_no_module_of_the_values_package_is_over_600_lines(path):
    assert len(path.read_text().splitlines()) <= 600


def test_the_command_lists_every_value_name_and_computes_the_committed_values():
    """`python -m specdec_site.site.values` prints every name, one a line, in the table's order; with --json, each value
    from the committed artifacts: those of the committed values.json (the figure build writes the same table)."""
    def run(*args):
        return subprocess.run([sys.executable, "-m", "specdec_site.site.values", *args], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout

    assert run().splitlines() == list(values_package.VALUES)
    committed = json.loads((ROOT / "docs" / "figures" / "values.json").read_text())["values"]
    assert json.loads(run("--json")) == committed
