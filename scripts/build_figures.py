"""Turn the build artifacts (docs/data/<device>/*.json) into the site's Plotly figures and page values.

    python scripts/build_figures.py [--device cpu] [--data DIR] [--out docs/figures]

The code lives in the package specdec_site (installed with the project); this is its documented entry.
"""

import sys

from specdec_site.site.files import main

if __name__ == "__main__":
    sys.exit(main())
