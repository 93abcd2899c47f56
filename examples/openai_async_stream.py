"""Memory with AsyncOpenAI and streaming: the answer is retained when the stream ends.

    OPENAI_API_KEY=sk-... python examples/openai_async_stream.py

Env: as in openai_chat.py. Per-call options go in `memwrap={...}`; `memwrap.scope()` sets them for a block
(here: one bank per user, as a web handler would).
"""

from __future__ import annotations

import asyncio
import os

from openai import AsyncOpenAI

import memwrap


async def chat(client: AsyncOpenAI, text: str) -> str:
    stream = await client.chat.completions.create(
        model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
        messages=[{"role": "user", "content": text}],
        stream=True,
    )
    parts = []
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
    return "".join(parts)


async def main() -> None:
    client = memwrap.wrap_openai(AsyncOpenAI())  # no fixed bank: each request sets its own with scope()
    user = os.environ.get("MEMWRAP_BANK", "example-user")
    async with memwrap.scope(bank_id=user, tags=["example"]):
        print("turn 1:", await chat(client, "I'm training for the Lisbon half marathon in March."))
        await client.memwrap.aflush()
        print("turn 2:", await chat(client, "Which race am I training for?"))
    print("memory stats:", client.memwrap.stats)


if __name__ == "__main__":
    asyncio.run(main())
