"""`python -m bench.precision`: see bench/precision/run.py and bench/README.md."""

from __future__ import annotations

import sys

from bench.precision.run import main

if __name__ == "__main__":
    sys.exit(main())
