"""python -m specdec_site: the data build (same as python scripts/build_data.py)."""

import sys

from specdec_site.engine.cli import entry

sys.exit(entry(prog="python -m specdec_site"))
