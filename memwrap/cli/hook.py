"""`memwrap hook EVENT` in the full CLI. The `memwrap` console script sends `memwrap hook ...` straight to the hook
client without this CLI (memwrap/launcher.py: standard library only, so a hook starts in tens of milliseconds);
here it is listed and parsed like any other command, with the same options."""

from __future__ import annotations

from memwrap.cli.registry import Register
from memwrap.integrations import hook_client


def register(add: Register) -> None:
    add(
        "hook",
        hook_client.configure,
        hook_client.run,
        "Claude Code and Codex hooks: retain turns, inject a recall (stdin JSON)",
    )
