"""Shared test setup: an offline environment (no test may wait on the network)."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The site built from the committed artifacts (mkdocs build --strict), served on localhost."""
    from browser import ROOT, build_site, serve

    dest = tmp_path_factory.mktemp("site")
    build_site(ROOT, dest)
    server, url = serve(dest)
    yield url
    server.shutdown()


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, headless, driven by Playwright (no browser download)."""
    from browser import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()
