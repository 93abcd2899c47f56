"""`python -m memwrap ...`: the `memwrap` command (memwrap/launcher.py), for environments without the console script."""

from memwrap.launcher import main

raise SystemExit(main())
