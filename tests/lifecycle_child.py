"""One short program, as a user writes it, for tests/test_lifecycle.py: run as its own process, then it exits.

    python tests/lifecycle_child.py MODE UPSTREAM_URL BANK TEXT [--kill]

MODE is how the program talks to memory: `openai` (sync client), `async` (AsyncOpenAI in asyncio.run),
`async-memory` (AsyncOpenAI on an AsyncMemory of its own, never closed), `anthropic`, `litellm` (acompletion in
asyncio.run with MemwrapLogger as a callback), `memory` (Memory.retain, no wrapper), `fork` (wraps, then two
multiprocessing children each make a call), `threads` (four threads wrap and call at once).
With --kill the process SIGKILLs itself right after its (last) call returned: no exit code of any kind runs.
Nothing here calls flush() or close(): that is the point.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
from typing import Any

# Several engines and calls at once on a machine shared with other work: the default 0.2 s can be too short for
# the recalls themselves, which is not what the fork and thread scenarios are about.
PATIENT = 5.0


def openai_call(base: str, bank: str, text: str, *, recall_timeout: float = 0.2) -> Any:
    from openai import OpenAI

    import memwrap

    client = memwrap.wrap_openai(
        OpenAI(base_url=f"{base}/v1", api_key="test", max_retries=0), bank_id=bank, recall_timeout=recall_timeout
    )
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])
    return client


def async_call(base: str, bank: str, text: str, *, own_memory: bool = False) -> None:
    from openai import AsyncOpenAI

    import memwrap

    async def main() -> None:
        memory = memwrap.AsyncMemory() if own_memory else None
        client = memwrap.wrap_openai(
            AsyncOpenAI(base_url=f"{base}/v1", api_key="test", max_retries=0), bank_id=bank, memory=memory
        )
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": text}])

    asyncio.run(main())


def anthropic_call(base: str, bank: str, text: str) -> None:
    from anthropic import Anthropic

    import memwrap

    claude = memwrap.wrap_anthropic(Anthropic(base_url=base, api_key="test", max_retries=0), bank_id=bank)
    claude.messages.create(model="claude-x", max_tokens=64, messages=[{"role": "user", "content": text}])


def litellm_call(base: str, bank: str, text: str) -> None:
    import litellm

    from memwrap.integrations.litellm import MemwrapLogger

    litellm.callbacks = [MemwrapLogger(bank_id=bank)]

    async def main() -> None:
        await litellm.acompletion(
            model="openai/m", api_base=f"{base}/v1", api_key="test", messages=[{"role": "user", "content": text}]
        )

    asyncio.run(main())


def memory_retain(base: str, bank: str, text: str) -> None:
    from memwrap import Memory

    Memory().retain(bank, text)


def forked(base: str, bank: str, text: str) -> None:
    """gunicorn --preload or a multiprocessing pool: wrap (the engine starts), then fork workers that call."""
    import multiprocessing

    # The parent uses memory before forking, as a preloaded app may; what it said is stored before the workers
    # start (a preloaded app's start-up would have been long before the first request).
    if not openai_call(base, bank, text).memwrap.flush():  # on an engine that started moments ago
        raise SystemExit("flush() did not deliver the parent's exchange")
    context = multiprocessing.get_context("fork")
    children = [
        context.Process(
            target=openai_call,
            args=(base, bank, f"Worker {n} reports: the {colour} door is locked."),
            kwargs={"recall_timeout": PATIENT},
        )
        for n, colour in ((1, "blue"), (2, "green"))
    ]
    for child in children:
        child.start()
    for child in children:
        child.join(120)
        if child.exitcode != 0:
            raise SystemExit(f"a forked worker failed: exit code {child.exitcode}")


def threaded(base: str, bank: str, text: str) -> None:
    errors: list[BaseException] = []

    def one(n: int) -> None:
        try:
            openai_call(base, bank, f"{text} (thread {n})", recall_timeout=PATIENT)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    if errors:
        raise errors[0]


MODES = {
    "openai": openai_call,
    "async": async_call,
    "async-memory": lambda base, bank, text: async_call(base, bank, text, own_memory=True),
    "anthropic": anthropic_call,
    "litellm": litellm_call,
    "memory": memory_retain,
    "fork": forked,
    "threads": threaded,
}

if __name__ == "__main__":
    if os.environ.get("LIFECYCLE_LOG"):
        logging.basicConfig(level=os.environ["LIFECYCLE_LOG"], format="%(name)s %(levelname)s %(message)s")
        logging.getLogger("httpx").setLevel(logging.WARNING)
    mode, upstream, bank_id, content = sys.argv[1:5]
    MODES[mode](upstream, bank_id, content)
    if "--kill" in sys.argv[5:]:
        os.kill(os.getpid(), signal.SIGKILL)
