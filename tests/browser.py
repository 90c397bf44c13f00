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

ROOT = Path(__file__).resolve().parents[1]
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


def open_page(browser, url, width: int = 1280, height: int = 900):
    page = browser.new_page(viewport={"width": width, "height": height})
    log = {"errors": [], "requests": [], "failed": []}
    page.on("console", lambda m: log["errors"].append(m.text) if m.type == "error" else None)
    page.on("response", lambda r: log["failed"].append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("pageerror", lambda e: log["errors"].append(str(e)))
    page.on("request", lambda r: log["requests"].append(r.url))
    page.goto(url, wait_until="networkidle")
    return page, log
