"""Build the site from artifact folders: its figures, then `mkdocs build --strict`, once per device that has data.

    python scripts/build_site.py [--device cpu|cuda] [--data DIR] [--site-dir site]

With the committed data (no --data), the site is built from docs/data/<device>/ into site/; when the other device's
folder has a traces.json too (docs/data/cuda/ beside docs/data/cpu/), a second copy of the site is built from it
into site/<other>/, and every page of both copies shows a device switch that links the same page in the other copy
(the hook renders it: docs/hooks/specdec_hook.py, SPECDEC_SITE_COPIES). Each copy is labelled by its own artifacts'
metadata, and each has the figures of its own run. With --data, one site from that folder, no switch.

Torch-free, like the hook and the figures: the Pages workflow runs it with the site's dependencies alone.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from specdec_site.engine.meta import ROOT
from specdec_site.site.files import write_site_files

DEVICES = ("cpu", "cuda")
# mkdocs.yml's site_url when SPECDEC_SITE_URL is unset (`mkdocs serve`'s address); a copy's is this plus its folder
DEFAULT_SITE_URL = "http://127.0.0.1:8000/"


@dataclass(frozen=True)
class SiteCopy:
    device: str  # the device folder its data comes from (cpu, cuda), shown on the switch
    data: Path  # its artifact folder
    sub: str  # where it is served below the site's top: "" for the main copy, "cuda/" for another


def site_copies(root: Path, device: str, data: Path | None = None) -> list[SiteCopy]:
    """The copies to build: the chosen device's (or the given folder's) first, at the top; then each other device
    whose docs/data/<device>/ holds a traces artifact, in a folder of its name."""
    if data is not None:
        return [SiteCopy(device, data, "")]
    copies = [SiteCopy(device, root / "docs" / "data" / device, "")]
    for other in DEVICES:
        if other != device and (root / "docs" / "data" / other / "traces.json").is_file():
            copies.append(SiteCopy(other, root / "docs" / "data" / other, f"{other}/"))
    for copy in copies:  # a folder's name is a claim its artifacts must back: the switch shows it
        recorded = device_of(copy.data) if (copy.data / "traces.json").is_file() else None
        if recorded is not None and recorded != copy.device:
            raise SystemExit(f"build_site: docs/data/{copy.device}/ holds a run recorded on {recorded}, so the site "
                             f"would label it {copy.device.upper()}: move it to docs/data/{recorded}/ (or build its "
                             "site alone with --data)")
    return copies


def copies_env(copies: list[SiteCopy]) -> str:
    """SPECDEC_SITE_COPIES, which the hook reads: "cpu=,cuda=cuda/" (device=folder below the site's top)."""
    return ",".join(f"{c.device}={c.sub}" for c in copies)


def committed_data(root: Path, data: Path) -> bool:
    """Whether `data` is a committed artifact folder, docs/data/<device>: its figures are the committed ones."""
    return any(data.resolve() == (root / "docs" / "data" / d).resolve() for d in DEVICES)


def build_own(root: Path, data: Path, site_dir: Path, log=print) -> list[SiteCopy]:
    """The site of an artifact folder of the user's (--data): built from a copy of docs/ in a temporary folder, with
    the folder's artifacts, figures and executed notebook in it, so that every page is the folder's own (the
    Notebook included) and the committed tree is left as it was (it used to get the folder's figures in
    docs/figures/, and, for a folder outside docs/, a refusal after writing them)."""
    import shutil

    with tempfile.TemporaryDirectory(prefix="specdec-own-site-") as tmp:
        work = Path(tmp)
        docs = work / "docs"
        shutil.copytree(root / "docs", docs, ignore=shutil.ignore_patterns("cpu", "cuda", "figures"))
        shutil.copy2(root / "mkdocs.yml", work / "mkdocs.yml")
        name = data.resolve().name if data.resolve().parent == (root / "docs" / "data").resolve() else "own"
        own = docs / "data" / name
        if own.exists():
            shutil.rmtree(own)
        shutil.copytree(data, own)
        notebook = own / "walkthrough.ipynb"
        if notebook.is_file():  # the notebook the folder's build executed, with its own pair
            shutil.copy2(notebook, docs / "notebooks" / "walkthrough.ipynb")
        figures = docs / "figures"
        names = write_site_files(own, figures, docs)
        log(f"[figures] wrote {len(names)} files from {data} (a copy of docs/ in {work}: the committed tree is untouched)")
        base_url = os.environ.get("SPECDEC_SITE_URL") or DEFAULT_SITE_URL
        env = {"SPECDEC_FIGURES": str(figures), "SPECDEC_SITE_URL": base_url, "NO_MKDOCS_2_WARNING": "1"}
        run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(work / "mkdocs.yml"), "-d", str(site_dir)],
            root, env)
    log(f"[site] data of {data} -> {site_dir}")
    return [SiteCopy(device_of(data) or "cpu", data, "")]


def device_of(data: Path) -> str | None:
    """The device an artifact folder's run was recorded on, from its metadata (not from the folder's name: CPU
    artifacts placed in docs/data/cuda were labelled CUDA)."""
    import json

    meta = json.loads((data / "traces.json").read_text()).get("metadata") or {}
    return (meta.get("device") or {}).get("type")


def build(root: Path = ROOT, device: str = "cpu", data: Path | None = None, site_dir: Path | None = None,
          log=print) -> list[SiteCopy]:
    """Figures and site for each copy (site_copies). The main copy's figures go to docs/figures/ (what a plain
    `mkdocs build` and `mkdocs serve` read); another copy's to a folder of their own, removed afterwards. A folder
    of the user's (--data, not docs/data/<device>) is built by build_own, from a copy of docs/."""
    site_dir = site_dir or root / "site"
    if data is not None and not committed_data(root, data):
        return build_own(root, data, site_dir, log)
    copies = site_copies(root, device, data)
    if not (copies[0].data / "traces.json").is_file():
        raise SystemExit(f"build_site: {copies[0].data} has no traces.json (build it with scripts/build_data.py)")
    base_url = os.environ.get("SPECDEC_SITE_URL") or DEFAULT_SITE_URL
    base_url += "" if base_url.endswith("/") else "/"
    for copy in copies:  # the main copy first: `mkdocs build` empties its site folder, the copies' folders included
        with tempfile.TemporaryDirectory(prefix=f"specdec-figures-{copy.device}-") as tmp:
            figures = root / "docs" / "figures" if not copy.sub else Path(tmp)
            names = write_site_files(copy.data, figures, root / "docs")
            log(f"[figures] wrote {len(names)} files from {copy.data} to {figures}")
            env = {"SPECDEC_FIGURES": str(figures), "SPECDEC_SITE_URL": base_url + copy.sub, "NO_MKDOCS_2_WARNING": "1"}
            if len(copies) > 1:
                env.update(SPECDEC_SITE_COPIES=copies_env(copies), SPECDEC_SITE_COPY=copy.device)
            run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"),
                 "-d", str(site_dir / copy.sub)], root, env)
        log(f"[site] {copy.device} data ({copy.data}) -> {site_dir / copy.sub}")
    return copies


def run(command: list[str], cwd: Path, env: dict) -> None:
    result = subprocess.run(command, cwd=cwd, env={**os.environ, **env})
    if result.returncode:
        raise SystemExit(f"build_site: {' '.join(command[1:4])} ... failed (exit {result.returncode})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/build_site.py", description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=DEVICES,
                        help="whose committed data is the main site (default cpu); the other device's, if there is "
                             "any, becomes a copy under site/<device>/ with a switch between the two")
    parser.add_argument("--data", type=Path, default=None,
                        help="one site from this artifact folder instead (a --out build of your own); no copies")
    parser.add_argument("--site-dir", type=Path, default=None, help="where the site goes (default site/)")
    args = parser.parse_args(argv)
    if args.data is not None and not (args.data / "traces.json").is_file():
        parser.error(f"{args.data} has no traces.json (build it with scripts/build_data.py --out)")
    build(ROOT, args.device, args.data, args.site_dir)
    return 0
