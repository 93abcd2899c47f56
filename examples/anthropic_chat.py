"""Two-line memory for an Anthropic client, with `system` as cached content blocks and a streamed reply.

    ANTHROPIC_API_KEY=sk-ant-... python examples/anthropic_chat.py

Env: ANTHROPIC_API_KEY (required), ANTHROPIC_BASE_URL (optional), ANTHROPIC_MODEL (default
claude-sonnet-4-5), MEMWRAP_BANK, MEMWRAP_HOME as in openai_chat.py. The memory block goes after your system
blocks, so their prompt cache stays valid.
"""

from __future__ import annotations

import os

from anthropic import Anthropic

import memwrap

SYSTEM = [{"type": "text", "text": "You are a friendly travel assistant.", "cache_control": {"type": "ephemeral"}}]


def main() -> None:
    model = os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5")
    claude = memwrap.wrap_anthropic(Anthropic(), bank_id=os.environ.get("MEMWRAP_BANK", "example-user"))

    reply = claude.messages.create(
        model=model,
        max_tokens=300,
        system=SYSTEM,
        messages=[{"role": "user", "content": "I'm vegetarian and I'm flying to Tokyo on 3 May."}],
    )
    print("turn 1:", reply.content[0].text)
    claude.memwrap.flush()

    with claude.messages.stream(
        model=model,
        max_tokens=300,
        system=SYSTEM,
        messages=[{"role": "user", "content": "Suggest a dinner spot for my first night."}],
    ) as stream:
        print("turn 2:", stream.get_final_text())
    print("memory stats:", claude.memwrap.stats)


if __name__ == "__main__":
    main()
