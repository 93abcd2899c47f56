"""Recall latency per step on banks of long technical messages, in a home full of other such banks.

The setup, in one home: `others` banks of `other_size` memories each (generated long sessions, chunked as retain
chunks them, bulk-loaded with `import_memories` and vectors drawn from a pool of real embeddings of such
chunks: see `_mixed`), then the measured bank grown to each size: its bulk through `import_memories` the same
way, its last `tail` messages through `retain_many` (the real path: embedding, entities, links). Recall is
timed right after that retain, with no wait for autovacuum or ANALYZE (the engine's own background ANALYZE runs
if it decides to): a hook retains, the next prompt recalls. Every timed query is new (the engine caches query
embeddings). With `load` > 0 the same is timed again while `load` busy-loop processes oversubscribe the cores.

Per step: the engine's `Recall.timings_ms` (embed, names, arm.keyword, arm.semantic, arm.graph, arm.temporal,
arms, fuse, details, order, pack, entities, total; whatever the engine reports) and the wall time of the call.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import numpy as np

from bench.long_session import vocab as v
from bench.long_session.generator import Message, generate_bank

Log = Callable[[str], None]


def chunk_texts(message: Message) -> list[str]:
    """The memory units retain makes of one message: the engine's own splitter, as retain's prepare step calls it
    (entities, dates and keyword text are left to import_memories, which finds them as retain does)."""
    from memwrap.engine.retain.split import split_units

    try:
        from memwrap.engine.language.speakers import keep_turn_breaks, split_turns
    except ImportError:  # the engine's internals moved: the plain splitter
        return split_units(message.content)
    units = (keep_turn_breaks(part) for turn in split_turns(message.content) for part in split_units(turn))
    return [u for u in units if u]


def _mixed(pool: np.ndarray, seed: int, count: int) -> np.ndarray:
    """`count` unit vectors near real ones: 0.75 a + 0.25 b + noise, a and b drawn from `pool` (as bench/scale.py)."""
    rng = np.random.default_rng(seed)
    a = pool[rng.integers(0, len(pool), count)]
    b = pool[rng.integers(0, len(pool), count)]
    mixed = 0.75 * a + 0.25 * b + rng.normal(0, 0.015, a.shape).astype(np.float32)
    return mixed / np.linalg.norm(mixed, axis=1, keepdims=True)


def import_rows(memory: Any, bank_id: str, rows: list[dict[str, Any]], pool: np.ndarray, seed: int) -> float:
    vectors = _mixed(pool, seed, len(rows))
    for row, vector in zip(rows, vectors, strict=True):
        row["embedding"] = vector.tolist()
    t0 = time.perf_counter()
    memory.import_memories(bank_id, rows)
    return time.perf_counter() - t0


def _messages(seed: int) -> Iterator[Message]:
    """Messages of generated banks, one new seed after another; ids prefixed by the seed ("g5000-s012:4") and
    each bank's dates after the previous one's, so sessions never collide."""
    offset = timedelta(0)
    while True:
        bank = generate_bank(seed, 30_000)
        for m in bank.messages:
            yield Message(f"g{seed}-{m.id}", f"g{seed}-{m.session}", m.role, m.text, m.timestamp + offset, m.tokens)
        offset += bank.messages[-1].timestamp - bank.messages[0].timestamp + timedelta(days=3)
        seed += 7919


def _take(stream: Iterator[Message], memories: int) -> tuple[list[Message], list[dict[str, Any]]]:
    """Messages from `stream` (and their chunk rows) while their chunks add up to at most `memories`."""
    messages: list[Message] = []
    rows: list[dict[str, Any]] = []
    for message in stream:
        texts = chunk_texts(message)
        if len(rows) + len(texts) > memories:
            break
        messages.append(message)
        rows += [{"text": t, "mentioned_at": message.timestamp, "document_id": message.id} for t in texts]
    return messages, rows


class QueryPool:
    """Distinct prompts and questions about such banks; each handed out once (no query-embedding cache hit)."""

    def __init__(self, seed: int = 5) -> None:
        self.rng = random.Random(seed)
        self.used: set[str] = set()
        self.questions = [q.question for s in range(3) for q in generate_bank(900 + s, 5_000).questions]
        self.rng.shuffle(self.questions)

    def take(self, n: int) -> list[str]:
        out: list[str] = []
        while len(out) < n:
            if self.questions and self.rng.random() < 0.5:
                q = self.questions.pop()
            else:
                s = {
                    "verb": self.rng.choice(v.VERBS), "noun": self.rng.choice(v.NOUNS),
                    "func": f"{self.rng.choice(v.VERBS)}_{self.rng.choice(v.NOUNS)}",
                    "path": f"{self.rng.choice(v.DIRS)}/{self.rng.choice(v.MODULES)}.py",
                    "cls": self.rng.choice(v.NOUNS).capitalize() + self.rng.choice(v.CLASS_SUFFIXES),
                    "error": self.rng.choice(v.ERRORS), "lib": self.rng.choice(v.LIBRARIES),
                    "component": self.rng.choice(v.COMPONENTS),
                }  # fmt: skip
                q = self.rng.choice(v.USER_REQUESTS).format(**s)
            if q not in self.used:
                self.used.add(q)
                out.append(q)
        return out


@contextmanager
def busy_load(processes: int) -> Iterator[None]:
    """`processes` busy loops (separate interpreters) for the duration; stopped by their own ids."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        time.sleep(0.5 if procs else 0)
        yield
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=10)


def time_recalls(memory: Any, bank_id: str, queries: Sequence[str], warmup: Sequence[str]) -> dict[str, Any]:
    for q in warmup:
        memory.recall(bank_id, q, token_budget=1024)
    steps: dict[str, list[float]] = defaultdict(list)
    for q in queries:
        t0 = time.perf_counter()
        result = memory.recall(bank_id, q, token_budget=1024)
        steps["wall"].append((time.perf_counter() - t0) * 1000)
        for step, ms in result.timings_ms.items():
            steps[step].append(float(ms))
    return {
        "queries": len(queries),
        "steps_ms": {
            step: {
                "p50": round(float(np.percentile(ms, 50)), 2),
                "p95": round(float(np.percentile(ms, 95)), 2),
                "p99": round(float(np.percentile(ms, 99)), 2),
                "max": round(max(ms), 2),
            }
            for step, ms in steps.items()
        },
    }


def bank_memories(memory: Any, bank_id: str) -> int:
    return next((b.memories for b in memory.banks() if b.bank_id == bank_id), 0)


def short_turns(memory: Any, bank_id: str, turns: int, batch: int = 100, embedder: Any = None) -> dict[str, Any]:
    """Retain of short chat turns (bench/synthetic.py), `batch` per retain_many; with `embedder`, also the model
    alone on the texts retain embeds (each turn after the end of the one before it in its session,
    embed/unit_text.py), in the same batches: retain's ceiling, which the bare turns would overstate ~1.8x."""
    from bench.synthetic import iter_turns
    from memwrap import RetainItem
    from memwrap.engine.embed.unit_text import embedding_text

    items = [
        RetainItem(content=t.content, timestamp=t.timestamp, document_id=t.document_id)
        for t in iter_turns(turns, seed=31)
    ]
    t0 = time.perf_counter()
    for i in range(0, len(items), batch):
        memory.retain_many(bank_id, items[i : i + batch])
    seconds = time.perf_counter() - t0
    result = {"turns": turns, "batch": batch, "seconds": round(seconds, 2), "turns_per_s": round(turns / seconds, 1)}
    if embedder is not None:
        previous: dict[str, str] = {}
        texts = []
        for item in items:
            session = (item.document_id or "").rsplit(":", 1)[0]
            texts.append(embedding_text(item.content, previous.get(session)))
            previous[session] = item.content
        t0 = time.perf_counter()
        for i in range(0, len(texts), batch):
            embedder.encode(texts[i : i + batch])
        embed_s = time.perf_counter() - t0
        result |= {"embed_s": round(embed_s, 2), "embed_turns_per_s": round(turns / embed_s, 1)}
        result["retain_over_embed"] = round(embed_s / seconds, 3)
    return result


def run_latency(
    memory: Any,
    bank_prefix: str,
    pool: np.ndarray,
    *,
    sizes: Sequence[int],
    others: int,
    other_size: int,
    tail: int,
    queries: int,
    warmup: int,
    load: int,
    log: Log,
) -> dict[str, Any]:
    started = time.perf_counter()
    import_s, imported = 0.0, 0
    for i in range(others):
        _, rows = _take(_messages(2000 + 13 * i), other_size)
        import_s += import_rows(memory, f"{bank_prefix}-other-{i:02d}", rows, pool, 70_000 + i)
        imported += len(rows)
    if others:
        log(f"[long] {others} other banks, {imported:,} memories imported in {import_s:.0f}s")
    queries_pool = QueryPool()
    target = f"{bank_prefix}-target"
    stream = _messages(5000)
    out: list[dict[str, Any]] = []
    have = 0
    from memwrap import RetainItem

    for size in sorted(sizes):
        messages, rows = _take(stream, max(0, size - have))
        tail_messages = messages if tail < 0 else messages[-tail:] if tail else []
        head_ids = {m.id for m in messages[: len(messages) - len(tail_messages)]}
        bulk = [r for r in rows if r["document_id"] in head_ids]
        seconds = import_rows(memory, target, bulk, pool, 90_000 + size) if bulk else 0.0
        items = [RetainItem(content=m.content, timestamp=m.timestamp, document_id=m.id) for m in tail_messages]
        t0 = time.perf_counter()
        for i in range(0, len(items), 50):
            memory.retain_many(target, items[i : i + 50])
        retain_s = time.perf_counter() - t0
        have = bank_memories(memory, target)
        # Timed right after the retain: nothing waits for statistics to catch up.
        quiet = time_recalls(memory, target, queries_pool.take(queries), queries_pool.take(warmup))
        entry: dict[str, Any] = {
            "size": size,
            "memories": have,
            "imported_rows": len(bulk),
            "import_s": round(seconds, 1),
            "tail_messages": len(tail_messages),
            "tail_tokens": sum(m.tokens for m in tail_messages),
            "tail_retain_s": round(retain_s, 2),
            "tail_messages_per_s": round(len(tail_messages) / retain_s, 2) if retain_s else None,
            "quiet": quiet,
        }
        if load:
            with busy_load(load):
                entry["loaded"] = time_recalls(memory, target, queries_pool.take(queries), queries_pool.take(warmup))
            entry["load_processes"] = load
        log(
            f"[long] {have:,} memories: recall p50 {quiet['steps_ms']['wall']['p50']:.1f} ms, "
            f"p95 {quiet['steps_ms']['wall']['p95']:.1f} ms (graph p95 "
            f"{quiet['steps_ms'].get('arm.graph', {}).get('p95', float('nan')):.1f} ms)"
        )
        out.append(entry)
    return {
        "others": others,
        "other_size": other_size,
        "other_memories": imported,
        "sizes": out,
        "seconds": round(time.perf_counter() - started, 1),
    }
