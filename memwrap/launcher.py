"""The `memwrap` console script: `memwrap hook ...` goes straight to the hook client (standard library only, so a
coding agent's hook starts in tens of milliseconds); every other command to the full CLI (memwrap/cli/)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"]:
        from memwrap.integrations import hook_client

        return hook_client.main(args[1:])
    from memwrap.cli import main as cli_main

    return cli_main(args)
