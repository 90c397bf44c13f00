"""python scripts/simulate_policies.py collect | replay | fit | probe: the design tool's command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from specdec_site import design
from specdec_site.design.chains import collect
from specdec_site.design.fit import fit
from specdec_site.design.probe import probe
from specdec_site.design.replay import replay
from specdec_site.numbers import integer


def argument_problems(args) -> list[str]:
    """What would otherwise fail only after the work (probe and collect run the real pair for minutes): a chains
    file that is not there, a file to write that is a folder or whose folder cannot be written in (the build's own
    check, options.prove_writable, which creates the folder as the atomic write would)."""
    from specdec_site.engine.context import BuildError
    from specdec_site.engine.options import prove_writable

    problems = [f"{path}: no such file" for path in getattr(args, "chains", []) if not Path(path).is_file()]
    for flag in ("out", "json"):
        given = getattr(args, flag, None)
        if given is None:
            continue
        path = Path(given).expanduser()
        if path.is_dir():
            problems.append(f"--{flag} {given} is a folder: give a file's path")
            continue
        try:
            prove_writable(path.parent)
        except BuildError as err:
            reason = getattr(err.__cause__, "strerror", None) or err.__cause__
            problems.append(f"--{flag} {given}: cannot write in {path.parent} ({reason})")
    return problems


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=design.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect", help="record greedy draft chains with the real pair")
    c.add_argument("--domains", nargs="+", default=["code", "prose", "dialogue", "narrative"],
                   choices=["code", "prose", "dialogue", "narrative"])
    c.add_argument("--start", type=integer, default=12, help="first public prompt (the benchmark uses 0-11)")
    c.add_argument("--count", type=integer, default=6)
    c.add_argument("--tokens", type=integer, default=48)
    c.add_argument("--k", type=integer, default=16, help="the longest chain recorded (the policies' cap)")
    c.add_argument("--out", required=True)
    r = sub.add_parser("replay", help="replay the policies on recorded chains")
    r.add_argument("chains", nargs="+")
    r.add_argument("--signals", action="store_true",
                   help="also replay the adaptive rule with each recorded signal besides confidence")
    r.add_argument("--json", default=None, help="also write the table to this file (the site's: "
                                                "docs/data/design-replay.json, with --signals)")
    r.add_argument("--k", type=integer, default=None)
    r.add_argument("--verify-cost", choices=["per-k", "line"], default="per-k",
                   help="cost a verify pass of k drafts at the committed runs' median for that k (the line where too "
                        "few steps had it), or at their line a + b k throughout")
    f = sub.add_parser("fit", help="fit the adaptive policy's shipped prior (specdec/prior.py) on recorded chains")
    f.add_argument("chains", nargs="+")
    f.add_argument("--out", default=None, help="the prior module to write (default, and only for "
                                               "scripts/design_chains.json.gz: specdec/prior.py)")
    b = sub.add_parser("probe", help="score a linear head on the draft's hidden state against its confidence, as a "
                                     "predictor of acceptance on the design prompts (the real pair, about 12 minutes)")
    b.add_argument("chains", nargs="+", help="the chains file whose design prompts to use")
    b.add_argument("--json", required=True, help="where to write the table (the site's: docs/data/design-probe.json)")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[2:] if argv is None else argv[1:])
    if args.cmd == "collect":
        # before any model loads: a negative --start would silently index the sets from their end
        bad = [f"--{name} {getattr(args, name)} (must be >= {low})" for name, low in
               (("start", 0), ("count", 1), ("tokens", 1), ("k", 1)) if getattr(args, name) < low]
        if bad:
            c.error("; ".join(bad))
    if problems := argument_problems(args):
        sub.choices[args.cmd].error("; ".join(problems))
    {"collect": collect, "replay": replay, "fit": fit, "probe": probe}[args.cmd](args)
