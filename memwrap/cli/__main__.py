"""`python -m memwrap.cli ...`: the full CLI (`python -m memwrap` goes through memwrap/launcher.py first)."""

from memwrap.cli.app import main

raise SystemExit(main())
