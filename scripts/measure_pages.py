"""Lighthouse on every page of the built site, mobile and desktop, served with gzip as any static host serves it:
medians of repeated runs, as a Markdown table with the host and the date. A benchmark, not a test: its figures move
with the machine's load (run it on a quiet machine; the accessibility score does not move).

    python scripts/measure_pages.py                      # builds the site from the committed data, 3 runs a page
    python scripts/measure_pages.py --site site --runs 5 --out perf.md

Lighthouse is the npm package (installed on first use into .cache/lighthouse; about a minute); it drives Debian's
Chromium (CHROME_PATH, default /usr/bin/chromium), headless.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import gzip
import http.server
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from specdec_site.numbers import integer
from specdec_site.paths import ROOT

LIGHTHOUSE = "12.8.2"
PREFIX = ROOT / ".cache" / "lighthouse"
PAGES = ["", "visualizer/", "playground/", "benchmark/", "benchmark-details/", "math/", "choosing-k/", "exactness/",
         "notebooks/walkthrough/", "reproduce/", "glossary/", "source/"]
COMPRESSED = {".html", ".js", ".css", ".json", ".svg", ".txt", ".xml", ".map"}


class GzipHandler(http.server.SimpleHTTPRequestHandler):
    """Static files, gzipped where the client accepts it (text types), as GitHub Pages and every CDN do."""

    def log_message(self, *args):
        pass

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if (path.suffix not in COMPRESSED or "gzip" not in self.headers.get("Accept-Encoding", "")
                or not path.is_file()):
            return super().send_head()
        import io

        body = gzip.compress(path.read_bytes(), 6)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


def lighthouse_bin() -> Path:
    """The lighthouse command, installed into .cache/lighthouse on first use."""
    exe = PREFIX / "node_modules" / ".bin" / "lighthouse"
    if not exe.exists():
        if not shutil.which("npm"):
            sys.exit("measure_pages.py: npm is needed to install Lighthouse (apt-get install npm)")
        print(f"[pages] installing lighthouse@{LIGHTHOUSE} into {PREFIX.relative_to(ROOT)} (once)", flush=True)
        PREFIX.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(PREFIX), f"lighthouse@{LIGHTHOUSE}"],
                       check=True)
    return exe


def run_lighthouse(exe: Path, url: str, preset: str, chrome: str, keep: Path | None = None) -> dict:
    """One Lighthouse run: the scores (0-100) and the Core Web Vitals it measures; its whole report copied to keep."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        args = [str(exe), url, "--quiet", "--output=json", f"--output-path={out}",
                "--only-categories=performance,accessibility",
                "--chrome-flags=--headless=new --no-sandbox --disable-gpu"]
        if preset == "desktop":
            args.append("--preset=desktop")
        subprocess.run(args, check=True, env={**os.environ, "CHROME_PATH": chrome}, capture_output=True, timeout=300)
        report = json.loads(out.read_text())
        if keep is not None:
            shutil.copyfile(out, keep)
    audits = report["audits"]
    return {"performance": 100 * report["categories"]["performance"]["score"],
            "accessibility": 100 * report["categories"]["accessibility"]["score"],
            "lcp_s": audits["largest-contentful-paint"]["numericValue"] / 1000,
            "tbt_ms": audits["total-blocking-time"]["numericValue"],
            "cls": audits["cumulative-layout-shift"]["numericValue"],
            "bytes_kb": audits["total-byte-weight"]["numericValue"] / 1024}


def report_path(folder: str | None, page: str, preset: str, run: int) -> Path | None:
    """Where run `run` of `page` and `preset` keeps its report (None: not kept)."""
    if folder is None:
        return None
    Path(folder).mkdir(parents=True, exist_ok=True)
    return Path(folder) / f"{page.strip('/').replace('/', '-') or 'home'}-{preset}-{run + 1}.json"


def table(results: dict, runs: int, host: str) -> str:
    presets = list(next(iter(results.values())))
    head = ("| page | " + " | ".join(f"{p} perf / a11y | {p} LCP, TBT, CLS" for p in presets) + " | transferred (gzip) |\n"
            + "|---" * (2 * len(presets) + 2) + "|")
    lines = []
    for page, by in results.items():
        cells = [f"{by[p]['performance']:.0f} / {by[p]['accessibility']:.0f} | {by[p]['lcp_s']:.1f} s, "
                 f"{by[p]['tbt_ms']:.0f} ms, {by[p]['cls']:.3f}" for p in presets]
        lines.append(f"| {page or 'Home'} | " + " | ".join(cells) + f" | {by[presets[0]]['bytes_kb']:.0f} KB |")
    return (f"Lighthouse {LIGHTHOUSE}, medians of {runs} runs a page and preset, served with gzip; {host}; "
            f"{datetime.date.today().isoformat()}.\n\n{head}\n" + "\n".join(lines) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", default=None, help="a built site folder (default: build one from the committed data)")
    parser.add_argument("--runs", type=integer, default=3, help="runs a page and preset; the table has their medians")
    parser.add_argument("--pages", nargs="+", default=PAGES, help="pages, as paths under the site")
    parser.add_argument("--out", default=None, help="also write the table to this Markdown file")
    parser.add_argument("--presets", nargs="+", default=["mobile", "desktop"], choices=["mobile", "desktop"],
                        help="Lighthouse's presets to run (default both)")
    parser.add_argument("--reports", default=None, help="also keep every run's whole Lighthouse report (JSON) in this "
                        "folder, to read the audits that cost points")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    chrome = os.environ.get("CHROME_PATH", "/usr/bin/chromium")
    if not Path(chrome).exists():
        parser.error(f"no Chromium at {chrome} (set CHROME_PATH)")
    exe = lighthouse_bin()
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(args.site) if args.site else Path(tmp) / "site"
        if not args.site:
            subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)], cwd=ROOT,
                           check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(GzipHandler, directory=str(site)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        results = {}
        try:
            for page in args.pages:
                results[page] = {}
                for preset in args.presets:
                    got = [run_lighthouse(exe, url + page, preset, chrome, report_path(args.reports, page, preset, i))
                           for i in range(args.runs)]
                    results[page][preset] = {key: statistics.median(g[key] for g in got) for key in got[0]}
                    print(f"[pages] {page or 'Home'} {preset}: {results[page][preset]}", flush=True)
        finally:
            server.shutdown()
    from types import SimpleNamespace

    from specdec_site.engine.meta import device_name

    host = f"{device_name(SimpleNamespace(type='cpu'))}, {platform.system()}"
    text = table(results, args.runs, host)
    print(text)
    if args.out:
        from specdec.fileio import write_text_atomic

        write_text_atomic(Path(args.out), text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
