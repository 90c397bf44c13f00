"""python -m specdec_site: the data build (same as python scripts/build_data.py)."""

import sys

from .cli import entry

sys.exit(entry(prog="python -m specdec_site"))
