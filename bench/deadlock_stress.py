"""Concurrent retain_many into a few banks with the inline worker on (issue 37): deadlocks, lost batches, throughput.

    PYTHONPATH=$PWD python -m bench.deadlock_stress --writers 4 --batches 30 --batch-size 50 --banks 2

Each writer retains its own generated long technical session (bench/long_session/generator.py, its own seed; the
writers of one bank share the project vocabulary, so their entity names overlap) in batches, into bank
`writer % banks`, on a fresh embedded PostgreSQL with default settings and the inline worker consolidating as the
batches land. Counts:

- `lost`: batches whose retain_many raised (the user's batch is gone), by error type;
- `retried`: writes aborted by PostgreSQL and run again (memwrap.store's warning, after issue 37's fix);
- `server_deadlocks`: "deadlock detected" lines in the embedded server's log (victims of any kind: retain or job);
- `stored` vs `expected`: distinct items in each bank against the items sent.

`--fast-embed`: a hashed bag of words instead of the model (similar texts still get similar vectors, so
consolidation still groups them): the database becomes the bottleneck, and writes and the worker's transactions
overlap far more often than on 2 busy cores running the model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np

from bench.long_session.generator import generate_bank
from memwrap import AsyncMemory
from memwrap.config import load_settings
from memwrap.store.embedded_pg import embedded_database_url


class _Retries(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "aborted by PostgreSQL" in record.getMessage():
            self.count += 1


def _hashed_words(dim: int) -> Any:
    def encode(texts: Any) -> np.ndarray:
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, hash(word) % dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-6)

    return encode


async def run(
    writers: int, batches: int, batch_size: int, banks: int, home: Path, *, fast_embed: bool = False
) -> dict[str, Any]:
    settings = load_settings(home=home, worker="inline")
    retries = _Retries()
    logging.getLogger("memwrap").addHandler(retries)
    plans: list[tuple[str, list[list[dict[str, Any]]]]] = []
    for w in range(writers):
        generated = generate_bank(100 + w, 200 * batches * batch_size)  # ~170 tokens a message: enough of them
        items = [
            {"content": m.content, "timestamp": m.timestamp, "metadata": {"session_id": f"w{w}-{m.session}"}}
            for m in generated.messages[: batches * batch_size]
        ]
        plans.append((f"stress-{w % banks}", [items[i : i + batch_size] for i in range(0, len(items), batch_size)]))
    lost: Counter[str] = Counter()
    sent: dict[str, int] = Counter()
    async with AsyncMemory(settings=settings) as memory:
        await memory.warmup()
        if fast_embed:
            embedder = (await memory._get_engine()).embedder  # type: ignore[attr-defined]
            embedder._encode = _hashed_words(embedder.dim)

        async def writer(bank: str, chunks: list[list[dict[str, Any]]]) -> None:
            for chunk in chunks:
                sent[bank] += len(chunk)
                try:
                    await memory.retain_many(bank, chunk)
                except Exception as exc:  # noqa: BLE001 - any error is a lost batch to the user
                    lost[type(exc).__name__] += 1

        started = time.perf_counter()
        load_before = os.getloadavg()
        await asyncio.gather(*(writer(bank, chunks) for bank, chunks in plans))
        elapsed = time.perf_counter() - started
        load_after = os.getloadavg()
        conn = await asyncpg.connect(settings.database_url or embedded_database_url(settings.pgdata))
        try:
            stored = {
                r["bank_id"]: r["n"]
                for r in await conn.fetch(
                    "SELECT bank_id, count(*) AS n FROM retained_items WHERE bank_id LIKE 'stress-%' GROUP BY bank_id"
                )
            }
            observations = await conn.fetchval("SELECT count(*) FROM observations WHERE bank_id LIKE 'stress-%'")
        finally:
            await conn.close()
    log_file = Path(settings.pgdata) / "log"
    log_text = log_file.read_text(errors="replace") if log_file.exists() else ""
    messages = sum(sent.values())
    return {
        "writers": writers,
        "batches": batches,
        "batch_size": batch_size,
        "banks": banks,
        "messages": messages,
        "seconds": round(elapsed, 1),
        "messages_per_second": round(messages / elapsed, 1),
        "fast_embed": fast_embed,
        "lost_batches": dict(lost),
        "retried": retries.count,
        "server_deadlocks": log_text.count("deadlock detected"),
        "deadlock_statements": _deadlocked_statements(log_text),
        "expected": dict(sent),
        "stored": stored,
        "observations": observations,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
    }


def _deadlocked_statements(log_text: str) -> dict[str, int]:
    """The statement (and the row it waited for) of each deadlock's victim, as the server logged them."""
    found: Counter[str] = Counter()
    context = ""
    inside = False
    lines = log_text.splitlines()
    for index, line in enumerate(lines):
        if "ERROR:  deadlock detected" in line:
            inside, context = True, ""
        elif inside and "CONTEXT:" in line:
            context = " ".join(line.split("CONTEXT:", 1)[1].split())
        elif inside and "STATEMENT:" in line:
            # A statement of several lines goes on in the lines after (the first may be empty).
            statement = " ".join([line.split("STATEMENT:", 1)[1], *lines[index + 1 : index + 4]])
            statement = re.split(r"\d{4}-\d\d-\d\d \d\d:\d\d", statement)[0].split()  # up to the next entry
            context = context.split(" in relation ")[-1]  # the table, not the tuple
            found[f"{' '.join(statement)[:110]} | {context}"] += 1
            inside = False
    return dict(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--banks", type=int, default=2)
    parser.add_argument("--fast-embed", action="store_true", help="a hashed bag of words instead of the model")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="memwrap-deadlock-stress-"))
    try:
        report = asyncio.run(
            run(args.writers, args.batches, args.batch_size, args.banks, home, fast_embed=args.fast_embed)
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
