"""Two-line memory for an OpenAI client: turn 1 states a fact, turn 2 (a new conversation) gets it back.

    OPENAI_API_KEY=sk-... python examples/openai_chat.py

Env: OPENAI_API_KEY (required), OPENAI_BASE_URL (optional: any OpenAI-compatible server), OPENAI_MODEL
(default gpt-4o-mini), MEMWRAP_BANK (default "example-user"), MEMWRAP_HOME (where memory lives, default
~/.memwrap; the embedded PostgreSQL starts there on first use).
"""

from __future__ import annotations

import os

from openai import OpenAI

import memwrap


def main() -> None:
    model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    client = memwrap.wrap_openai(OpenAI(), bank_id=os.environ.get("MEMWRAP_BANK", "example-user"))

    first = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Hi! My favourite colour is teal and I live in Porto."}]
    )
    print("turn 1:", first.choices[0].message.content)
    client.memwrap.flush()  # turn 2 follows at once: let turn 1's retain land first (a person's pace covers it)

    second = client.chat.completions.create(
        model=model,
        messages=[
            {"role": "system", "content": "You are a concise assistant."},
            {"role": "user", "content": "What is my favourite colour, and where do I live?"},
        ],
    )
    print("turn 2:", second.choices[0].message.content)
    print("memory stats:", client.memwrap.stats)


if __name__ == "__main__":
    main()
