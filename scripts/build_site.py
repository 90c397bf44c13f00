"""Build the site: figures from the artifacts, then `mkdocs build --strict`, once per device with committed data.

    python scripts/build_site.py [--device cpu|cuda] [--data DIR] [--site-dir site]

The code lives in the package specdec_site (specdec_site/site/build.py); this is its documented entry.
"""

import sys

from specdec_site.site.build import main

if __name__ == "__main__":
    sys.exit(main())
