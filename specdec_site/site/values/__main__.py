"""List the values a page may quote as [[val:NAME]].

    python -m specdec_site.site.values           every name of VALUES, in the table's order
    python -m specdec_site.site.values --json    name -> its value, computed from the committed CPU artifacts
                                            (docs/data/cpu and the design replay: about a second)
"""

from __future__ import annotations

import argparse
import json
import sys

from specdec_site.site.values import VALUES, compute_values, design_replay


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specdec_site.site.values", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print name -> value, computed from the artifacts")
    parser.add_argument("--data", default=None, help="with --json: the artifact folder (default docs/data/cpu)")
    args = parser.parse_args(argv)
    if not args.json:
        print("\n".join(VALUES))
        return 0
    from pathlib import Path

    from specdec_site.paths import ROOT
    from specdec_site.site.files import load_artifacts

    data = Path(args.data) if args.data else ROOT / "docs" / "data" / "cpu"
    print(json.dumps(compute_values(load_artifacts(data), design_replay()), indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
