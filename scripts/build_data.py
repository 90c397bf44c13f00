"""Run the decoder on real models and write every number the site shows, as JSON artifacts.

    python scripts/build_data.py                   # everything, default pair, CPU -> docs/data/cpu/
    python scripts/build_data.py --device cuda     # the same on a GPU -> docs/data/cuda/
    python scripts/build_data.py --quick --out /tmp/x   # a small end-to-end run (CI)

The build lives in the package specdec_site (installed with the project); this is its documented entry.
"""

import sys

from specdec_site.engine.cli import entry

if __name__ == "__main__":
    sys.exit(entry(prog="python scripts/build_data.py"))
