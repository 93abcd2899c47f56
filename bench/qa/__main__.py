"""`python -m bench.qa`: see bench/qa/run.py."""

from __future__ import annotations

import sys

from bench.qa.run import main

if __name__ == "__main__":
    sys.exit(main())
