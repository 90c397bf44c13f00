"""Shared test setup: an offline environment (no test may wait on the network), and the test tiers.

Tiers, the convention of transformers' `@slow` / RUN_SLOW: plain `pytest` runs the fast tier (tiny models,
exact enumeration, every mutant of the mutation table killed, greedy grids, the hook, the schema, the guards,
the theory; on one worker per core: pytest_xdist_auto_num_workers). Each marker in TIERS is opted into by its
environment variable, or all of them at once by RUN_SLOW=1, which `scripts/test.sh` (README's test command,
`.ci/run`) sets. A test of a tier that is off is reported as skipped, with the variable that turns it on.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker of plain `pytest`: one torch thread each, one worker per core
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402

# marker -> the environment variable that turns its tier on (pyproject.toml registers the markers)
TIERS = {
    "real": "SPECDEC_RUN_REAL",  # loads the real default pair (the [models] extra; converted once, 2-4 min)
    "build": "SPECDEC_RUN_BUILD",  # data builds end to end (tiny pairs: the default pair's architecture and tokenizer)
    "browser": "SPECDEC_RUN_BROWSER",  # the site built with mkdocs and driven in Chromium
    "slow": "SPECDEC_RUN_SLOW",  # chi-square tests at the sizes their stated power needs (tests/power.py)
}


def tier_on(marker: str) -> bool:
    return os.environ.get("RUN_SLOW") == "1" or os.environ.get(TIERS[marker]) == "1"


def pytest_xdist_auto_num_workers(config):
    """Workers for `-n auto` (pyproject.toml's addopts): one per core, up to four, for the fast tier (tiny models, no
    file shared between tests; its times: TIMINGS.md); none when any other tier is on. Those stay in one
    process: the real-pair tests hold the pair (about 9 GB), which two workers would hold twice, the builds are
    timed, and scripts/test.sh runs its own two chains (one per core)."""
    if any(tier_on(marker) for marker in TIERS):
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(cores, 4) if cores > 1 else 0


def pytest_runtest_setup(item):
    """scripts/test.sh runs two pytest processes on one torch thread each; the real-pair one is told, by a file that
    appears when the other one is done (SPECDEC_TEST_CORES_FREE), that every core is its own from then on."""
    flag = os.environ.get("SPECDEC_TEST_CORES_FREE")
    if flag and os.path.exists(flag):
        import torch

        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        if torch.get_num_threads() < cores:
            torch.set_num_threads(cores)


# Modules whose tests scripts/test.sh runs in its first chain, beside the real pair and the builds (marker
# first_chain), so that the two chains take about as long (their measured times: TIMINGS.md).
FIRST_CHAIN_MODULES = {"test_policies.py"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in FIRST_CHAIN_MODULES:
            item.add_marker(pytest.mark.first_chain)
        for marker in TIERS:
            if marker in item.keywords and not tier_on(marker):
                item.add_marker(pytest.mark.skip(reason=f"{marker} tier: set {TIERS[marker]}=1 or RUN_SLOW=1"))


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """(URL, folder) of the site built from the committed artifacts (mkdocs build --strict), once per session, and
    served on localhost under /specdec/ as GitHub Pages serves a project site, with the site and repository URLs the
    Pages workflow sets: Material's instant navigation is on, as on the hosted site (its sitemap's URLs are this
    server's), and a missing page gets the 404 page."""
    from browser import ROOT, build_site, serve_under_sub_path

    dest = tmp_path_factory.mktemp("site")
    server, url = serve_under_sub_path(dest, "/specdec/")
    build_site(ROOT, dest, SPECDEC_SITE_URL=url, SPECDEC_REPO_URL="https://example.org/you/specdec")
    yield url, dest
    server.shutdown()


@pytest.fixture(scope="session")
def site(built_site):
    """The URL of the session's site (built_site)."""
    return built_site[0]


@pytest.fixture(scope="session")
def site_folder(built_site):
    """The folder of the session's site (built_site)."""
    return built_site[1]


@pytest.fixture(scope="session")
def loaded(site, browser):
    """loaded(path, width) -> (page, log): a page of the session's site at 1400 px (900 high) or 375 px (800 high, a
    phone), loaded and drawn once (browser.open_page) and shared by the tests that only read it, so that a page is
    loaded once per width rather than once per check. A test that changes a shared page puts it back as it found it
    (the colour scheme); a test that clicks, navigates or opens files opens a page of its own."""
    from browser import open_page

    pages = {}

    def get(path: str, width: int = 1400):
        if (path, width) not in pages:
            pages[path, width] = open_page(browser, site + path, width=width, height={1400: 900, 375: 800}[width])
        return pages[path, width]

    yield get
    for page, _ in pages.values():
        page.close()


@pytest.fixture(scope="session")
def tiny_qwen_pair(tmp_path_factory):
    """(target folder, draft folder): tiny Qwen2 models with the default pair's tokenizer (tests/tiny_qwen.py)."""
    from tiny_qwen import save_tiny_qwen_pair

    return save_tiny_qwen_pair(tmp_path_factory.mktemp("tiny-qwen"))


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, headless, driven by Playwright (no browser download)."""
    from browser import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()
