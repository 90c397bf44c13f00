"""Helpers for the browser tests: build the site, serve it on localhost, drive Debian's Chromium."""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from specdec_site.paths import ROOT

CHROMIUM = os.environ.get("SPECDEC_CHROMIUM", "/usr/bin/chromium")
SHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-quic"]
needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                    reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)")


def build_site(root: Path, dest: Path, **env_vars: str) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", **env_vars}
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"),
                             "-d", str(dest)], capture_output=True, text=True, cwd=root, env=env)
    assert result.returncode == 0, result.stderr[-4000:]


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(folder: Path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


# What a page draws once its scripts ran (specdec.js, visualizer.js, playground.js): every static figure drawn by
# Plotly, the math typeset by KaTeX, the visualizer's, the playground's and the strip's widgets made.
DRAWN = """() => {
  const figures = Array.from(document.querySelectorAll('template.specdec-figure-data'))
    .map(t => document.getElementById(t.dataset.for)).filter(d => d);
  const made = id => !document.getElementById(id + '-data') || !!(document.getElementById(id) || {})._specdec;
  return figures.every(d => d._fullLayout)
    && (!document.querySelector('.arithmatex') || !!document.querySelector('.arithmatex .katex'))
    && made('specdec-visualizer') && made('specdec-strip')
    && (!document.getElementById('specdec-playground-data') || !!window.specdecPlayground);
}"""


# The Step Visualizer's page carries its opening run whole and every other one as a line with its file's URL
# (specdec_renderers.visualizer_runs_on_page): a test that reads or shows any run loads them all first, as a
# reader's choice of a run does (Visualizer.loadRun), so v.runs[i] is the whole run.
LOAD_ALL_RUNS = """async () => { const v = document.getElementById('specdec-visualizer')._specdec;
  for (const r of v.runs.slice()) {  // one at a time: a run chosen later wins over one still loading (loadRun)
    if (!(await v.loadRun(r))) throw new Error('a Visualizer run did not load: ' + r.file); }
  return v.runs.length; }"""


def load_all_runs(page) -> int:
    """Fetch every Visualizer run the page has as a line (LOAD_ALL_RUNS); the number of runs."""
    return page.evaluate(LOAD_ALL_RUNS)


def wait_until_drawn(page, timeout: float = 15000) -> None:
    """Draw every figure now (a reader's page draws a figure as it nears the viewport: specdec.js drawAll), wait for
    what the page draws (DRAWN), then for two frames, so that layout has settled."""
    page.wait_for_function("() => !!window.specdecSite", timeout=timeout)
    page.evaluate("() => window.specdecSite.drawAll()")
    page.wait_for_function(DRAWN, timeout=timeout)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


# A fingerprint of every chart's layout: where its plot area is and how many tick labels it draws.
LAYOUT = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(d => {
  const r = (d.querySelector('.nsewdrag') || d).getBoundingClientRect();
  return [d.id, r.left, r.top, r.width, r.height, d.querySelectorAll('.xtick text, .ytick text').length].join(',');
}).join(';')"""
SETTLE = """async () => {
  const fingerprint = """ + LAYOUT + """;
  const frames = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 20))));
  let last = fingerprint();
  for (let i = 0; i < 200; i++) {
    await frames();
    const now = fingerprint();
    if (now === last) return i;
    last = now;
  }
  throw new Error('the charts kept moving for 200 frames');
}"""


def settle(page) -> None:
    """Wait until every chart keeps its layout from one pair of frames to the next (a chart redrawn for the width
    its first drawing measured, margins grown for a longer label), in place of a fixed wait."""
    page.evaluate(SETTLE)


# The Step Visualizer draws each chart through one queue (visualizer.js `react`): div._specdecDrawn is the promise of
# the chart's last Plotly.react, which settles once Plotly has drawn it (automargin's redraws are in its chain); a
# draw may queue another when it ends (`refit`, for the plot area's measured width), so the queues are read again.
# A draw that never settles (Plotly once laid a chart out forever: visualizer.js) fails the test, not hangs it.
CHARTS_DRAWN = """async (root) => {
  const queued = () => Array.from(document.querySelectorAll(root + ', ' + root + ' div')).map(d => d._specdecDrawn);
  let timer;
  const late = new Promise((_, fail) => { timer = setTimeout(() => fail(new Error('a chart was still drawing after 10 s')), 10000); });
  try {
    for (let i = 0; i < 50; i++) {
      const before = queued();
      await Promise.race([Promise.all(before.map(p => p && p.catch(() => {}))), late]);
      if (queued().every((p, j) => p === before[j])) return i;
    }
    throw new Error('the charts kept queueing draws for 50 rounds');
  } finally {
    clearTimeout(timer);  // one timer a call, not one left pending per step checked
  }
}"""


def charts_drawn(page, root: str = "#specdec-visualizer") -> None:
    """Wait until every chart under `root` has drawn what was asked of it (CHARTS_DRAWN), in place of a fixed wait."""
    page.evaluate(CHARTS_DRAWN, root)


def shot(page, name: str) -> None:
    """A full-page screenshot into test-artifacts/screenshots/ when SPECDEC_SCREENSHOTS=1 (to look at the pages as a
    reader does; each costs up to 1.5 s, so a plain run takes none)."""
    if os.environ.get("SPECDEC_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / name), full_page=True)


def open_page(browser, url, width: int = 1280, height: int = 900):
    """A new page at `url`, once it is loaded and drawn (not "networkidle": that waits half a second after the last
    request on every load; a test about late requests waits for them itself)."""
    page = browser.new_page(viewport={"width": width, "height": height})
    log = {"errors": [], "requests": [], "failed": [], "responses": []}
    page.on("console", lambda m: log["errors"].append(m.text) if m.type == "error" else None)
    page.on("response", lambda r: log["failed"].append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("response", lambda r: log["responses"].append(r))  # bodies can be read after the load (page weight)
    page.on("pageerror", lambda e: log["errors"].append(str(e)))
    page.on("request", lambda r: log["requests"].append(r.url))
    page.goto(url, wait_until="load")
    wait_until_drawn(page)
    return page, log


def serve_under_sub_path(folder: Path, prefix: str):
    """Serve the site under `prefix` as GitHub Pages serves a project site (https://<user>.github.io/<repo>/): a
    missing path gets the site's 404.html with status 404. Returns (server, the site's URL)."""
    import http.server
    import mimetypes
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            path = self.path.split("?")[0].split("#")[0]
            target = folder / path[len(prefix):] if path.startswith(prefix) else None
            if target is not None and target.is_dir() and not path.endswith("/"):
                self.send_response(301)
                self.send_header("Location", path + "/")
                self.end_headers()
                return
            if target is not None and target.is_dir():
                target = target / "index.html"
            found = target is not None and target.is_file() and folder.resolve() in target.resolve().parents
            body = (target if found else folder / "404.html").read_bytes()
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", (mimetypes.guess_type(str(target))[0] if found else None) or "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}{prefix}"
