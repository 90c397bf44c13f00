"""The design tool's command: python scripts/simulate_policies.py collect | replay | fit | probe.

The tool itself is the package specdec_site/design/ (chains, replay, fit, probe; its docstring says what each does).
"""

from specdec_site.design.cli import main

if __name__ == "__main__":
    main()
