"""`python -m memwrap ...`: the `memwrap` command (memwrap/cli.py), for environments without the console script."""

from memwrap.cli import main

raise SystemExit(main())
