"""The build's command line in this process: its refusals checked without a Python subprocess apiece.

A subprocess per refusal cost 2-3 s of imports (torch, transformers) each; here each costs milliseconds. Model
loading is made to fail (a refusal must come before it); one subprocess test per entry point still checks that the
refusal comes before torch is imported at all (tests/test_guards.py)."""

from __future__ import annotations

BUILD_PROG = "python scripts/build_data.py"


def run_entry(argv, capsys, monkeypatch, prog: str = BUILD_PROG, context: bool = False) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `prog argv`, run by specdec_site.cli.entry, with no model context allowed
    (context=True: the context may be made, as a build makes it before it tries its --out; it loads no model until
    a stage runs, and the caller checks that none was)."""
    from specdec_site import cli, options, trace_command

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
