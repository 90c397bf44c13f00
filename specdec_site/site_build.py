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

from .meta import ROOT
from .site_files import write_site_files

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
    return copies


def copies_env(copies: list[SiteCopy]) -> str:
    """SPECDEC_SITE_COPIES, which the hook reads: "cpu=,cuda=cuda/" (device=folder below the site's top)."""
    return ",".join(f"{c.device}={c.sub}" for c in copies)


def build(root: Path = ROOT, device: str = "cpu", data: Path | None = None, site_dir: Path | None = None,
          log=print) -> list[SiteCopy]:
    """Figures and site for each copy (site_copies). The main copy's figures go to docs/figures/ (what a plain
    `mkdocs build` and `mkdocs serve` read); another copy's to a folder of their own, removed afterwards."""
    site_dir = site_dir or root / "site"
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
