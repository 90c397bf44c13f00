"""The build's command line in this process: its refusals checked without a Python subprocess apiece; and several
runs of an entry point in one subprocess.

A subprocess per refusal cost 2-3 s of imports (torch, transformers) each; here each costs milliseconds. Model
loading is made to fail (a refusal must come before it); one subprocess test per entry point still checks that the
refusal comes before torch is imported at all (tests/test_guards.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BUILD_PROG = "python scripts/build_data.py"
# run_entries' process: argv[1] the entry point's file, argv[2] a JSON list of argument lists
ENTRIES = """import json, sys
from specdec_site.engine.cli import entry
script, runs = sys.argv[1:3]
for argv in json.loads(runs):
    sys.argv = [script, *argv]
    code = entry(argv)
    if code:
        sys.exit(code)
"""


def run_entries(script: Path, runs: list[list[str]], **kwargs) -> subprocess.CompletedProcess:
    """Runs of an entry point (scripts/build_data.py, or specdec_site/__main__.py for `python -m specdec_site`), one
    after the other in one Python subprocess, through specdec_site.engine.cli.entry as the entry point calls it: torch and
    transformers are imported once, not once a run (3-6 s apiece on a 2-core host). Each run sees sys.argv as the
    user's command would make it (its artifacts record their command from it); the first run that fails ends the
    process with its exit status. kwargs go to subprocess.run (env, cwd, timeout)."""
    return subprocess.run([sys.executable, "-c", ENTRIES, str(script), json.dumps(runs)], capture_output=True,
                          text=True, **kwargs)


def run_entry(argv, capsys, monkeypatch, prog: str = BUILD_PROG, context: bool = False) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `prog argv`, run by specdec_site.engine.cli.entry, with no model context allowed
    (context=True: the context may be made, as a build makes it before it tries its --out; it loads no model until
    a stage runs, and the caller checks that none was)."""
    from specdec_site import trace_command
    from specdec_site.engine import cli, options

    def no_models(*args, **kwargs):
        raise AssertionError("a model context was made: the refusal came too late")

    for module in (cli, options, trace_command) if not context else ():
        monkeypatch.setattr(module, "make_context", no_models, raising=False)
    capsys.readouterr()  # what earlier steps printed is not this run's
    try:
        code = cli.entry(list(argv), prog=prog)
    except SystemExit as exit_info:  # the parser's refusals (and --help) exit; a BuildError is returned as 2
        code = exit_info.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err
