"""Shared test setup: an offline environment (no test may wait on the network), and the test tiers.

Tiers, the convention of transformers' `@slow` / RUN_SLOW: plain `pytest` runs the fast tier (tiny models,
exact enumeration, every mutant of the mutation table killed, greedy grids, the hook, the schema, the guards,
the theory: about a minute). Each marker in TIERS is opted into by its environment variable, or all of them at
once by RUN_SLOW=1, which `scripts/test.sh` (README's test command, `.ci/run`) sets. A test of a tier that is
off is reported as skipped, with the variable that turns it on.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

# marker -> the environment variable that turns its tier on (pyproject.toml registers the markers)
TIERS = {
    "real": "SPECDEC_RUN_REAL",  # loads the real default pair (the [models] extra; converted once, 2-4 min)
    "build": "SPECDEC_RUN_BUILD",  # the --quick build end to end (the real pair, in child processes)
    "browser": "SPECDEC_RUN_BROWSER",  # the site built with mkdocs and driven in Chromium
    "slow": "SPECDEC_RUN_SLOW",  # statistics at full power (3000 to 10^4 sequences)
}


def tier_on(marker: str) -> bool:
    return os.environ.get("RUN_SLOW") == "1" or os.environ.get(TIERS[marker]) == "1"


def pytest_runtest_setup(item):
    """scripts/test.sh runs two pytest processes on one torch thread each; the real-pair one is told, by a file that
    appears when the other one is done (SPECDEC_TEST_CORES_FREE), that every core is its own from then on."""
    flag = os.environ.get("SPECDEC_TEST_CORES_FREE")
    if flag and os.path.exists(flag):
        import torch

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        if torch.get_num_threads() < cores:
            torch.set_num_threads(cores)


def pytest_collection_modifyitems(config, items):
    for item in items:
        for marker in TIERS:
            if marker in item.keywords and not tier_on(marker):
                item.add_marker(pytest.mark.skip(reason=f"{marker} tier: set {TIERS[marker]}=1 or RUN_SLOW=1"))


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The site built from the committed artifacts (mkdocs build --strict), served on localhost."""
    from browser import ROOT, build_site, serve

    dest = tmp_path_factory.mktemp("site")
    server, url = serve(dest)
    # site_url is where it is served: Material's instant navigation is on, as on the hosted site (its sitemap's
    # URLs are this server's)
    build_site(ROOT, dest, SPECDEC_SITE_URL=url)
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
