"""Fail open, lose nothing: a down or hung engine costs a call at most `recall_timeout`, and retains made while
it is down are spooled and all arrive, once each, when it is back (also across a crash).

The "engine" here is always the real one: a Memory pointed at a refused port, at a TCP gate that hangs, or at
a gate that forwards to the run's embedded PostgreSQL once it is "back".
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest_wrappers import *  # noqa: F403 - fixtures
from conftest_wrappers import pg_socket
from fakes.tcp import TcpGate
from openai import OpenAI

import memwrap
from memwrap import Memory
from memwrap.config import load_settings
from memwrap.store.embedded_pg import embedded_database_url

RECALL_TIMEOUT = 0.2
MESSAGES = [{"role": "user", "content": "What did I say about the garden?"}]


def _openai(server: Any) -> OpenAI:
    return OpenAI(base_url=server.openai_base_url, api_key="test", max_retries=0)


def _timed(fn: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def _overhead(llm_server: Any, memory: Memory, bank: str, n: int = 30) -> dict[str, float]:
    plain = _openai(llm_server)
    wrapped = memwrap.wrap_openai(_openai(llm_server), bank_id=bank, memory=memory, recall_timeout=RECALL_TIMEOUT)
    try:
        base = statistics.median(_timed(lambda: plain.chat.completions.create(model="m", messages=MESSAGES), n))
        times = _timed(lambda: wrapped.chat.completions.create(model="m", messages=MESSAGES), n)
        assert wrapped.memwrap.stats.failed_open == n, wrapped.memwrap.stats
        print("\nper-call ms:", [round(t * 1000) for t in times])
        return {
            "baseline_ms": base * 1000,
            "first_ms": times[0] * 1000,
            "first_added_ms": (times[0] - base) * 1000,
            "max_added_ms": (max(times) - base) * 1000,
            "median_added_ms": (statistics.median(times) - base) * 1000,
        }
    finally:
        wrapped.memwrap.close(timeout=0)


def test_unreachable_engine_fails_open(
    llm_server: Any, warm_memory: Memory, bank: str, tmp_path: Path, caplog: Any
) -> None:
    # warm_memory: the embedding model is loaded (shared in-process), so this measures fail-open, not model loading.
    down = Memory(home=tmp_path, database_url="postgresql://postgres@127.0.0.1:1/postgres")
    try:
        figures = _overhead(llm_server, down, bank)
    finally:
        down.close()
    print(f"\nfail-open, connection refused: {json.dumps(figures)}")
    assert figures["max_added_ms"] < (RECALL_TIMEOUT + 1.0) * 1000
    assert "recall failed open" in caplog.text


def test_hung_engine_fails_open_within_the_startup_limit(
    llm_server: Any, warm_memory: Memory, bank: str, tmp_path: Path, caplog: Any
) -> None:
    startup_timeout = 1.0
    with TcpGate(mode="hang") as gate:
        hung = Memory(settings=load_settings(home=tmp_path, database_url=gate.url(), startup_timeout=startup_timeout))
        try:
            with caplog.at_level(logging.INFO, logger="memwrap.wrappers"):
                figures = _overhead(llm_server, hung, bank)
        finally:
            gate.drop()
            hung.close()
    print(f"\nfail-open, engine hangs: {json.dumps(figures)}")
    # The engine never finishes starting: the first call waits out the start-up limit (counted from the wrap),
    # and from then on calls skip recall at once.
    assert figures["max_added_ms"] < (startup_timeout + RECALL_TIMEOUT + 1.0) * 1000
    assert figures["median_added_ms"] < 50
    assert "the memory engine is still starting after 1s" in caplog.text


# 600 exchanges: the deliverer claims 256 rows at a time in groups of 64, so the replay takes three claims and
# ten groups (it was 1,000, ~20 s more of embedding in CI for the same paths).
EXCHANGES = 600


@pytest.mark.slow
def test_hundreds_of_retains_while_down_all_arrive_once(
    llm_server: Any, memory: Memory, bank: str, tmp_path: Path
) -> None:
    target = pg_socket(embedded_database_url(memory.settings.pgdata))
    with TcpGate(target=target, mode="refuse") as gate:
        flaky = Memory(home=tmp_path, database_url=gate.url())
        client = memwrap.wrap_openai(_openai(llm_server), bank_id=bank, memory=flaky, recall_timeout=RECALL_TIMEOUT)
        try:
            start = time.perf_counter()
            for i in range(EXCHANGES):
                client.chat.completions.create(
                    model="m",
                    messages=[{"role": "user", "content": f"Note {i}: the seedlings in tray {i} need water."}],
                )
            calls_s = time.perf_counter() - start
            assert client.memwrap.wait_spooled(30)
            assert client.memwrap.flush(timeout=0.5) is False  # down: nothing can be delivered
            assert client.memwrap.retain_stats.delivered == 0 and client.memwrap.pending == EXCHANGES
            assert client.memwrap.retain_stats.failures >= 1

            gate.mode = "forward"  # the engine is back
            start = time.perf_counter()
            assert client.memwrap.flush(timeout=180)
            replay_s = time.perf_counter() - start
            stats = client.memwrap.retain_stats
        finally:
            client.memwrap.close(timeout=5)
            flaky.close()

    records = memory.list(bank, limit=10_000)
    per_document = Counter(r.document_id for r in records)
    texts = Counter(r.text for r in records if r.speaker == "user")  # each exchange: the user's turn and "OK"
    print(
        f"\nspool: {EXCHANGES} calls while down in {calls_s:.2f}s; replay after return {replay_s:.2f}s; "
        f"delivered={stats.delivered} failures={stats.failures} units={len(records)} documents={len(per_document)}"
    )
    assert stats.delivered == EXCHANGES and stats.rejected == 0 and stats.buried == 0
    assert len(per_document) == EXCHANGES, "every retain arrived"
    assert max(texts.values()) == 1, "none arrived twice"
    assert all(f"Note {i}:" in " ".join(t for t in texts) for i in (0, EXCHANGES // 2, EXCHANGES - 1))


_CRASHER = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, {tests!r})
    from openai import OpenAI
    import memwrap
    from memwrap import Memory

    memory = Memory(home={home!r}, database_url="postgresql://postgres@127.0.0.1:1/postgres")
    client = memwrap.wrap_openai(OpenAI(base_url={base!r}, api_key="t", max_retries=0), bank_id={bank!r},
                                 memory=memory, inject=False)
    for i in range(5):
        note = f"Crash note {{i}}: the shed key is under the pot."
        client.chat.completions.create(model="m", messages=[{{"role": "user", "content": note}}])
    assert client.memwrap.wait_spooled(30)
    os._exit(3)  # a crash: no atexit, no flush, no close
    """
)


def test_spooled_retains_survive_a_crash(llm_server: Any, memory: Memory, bank: str, tmp_path: Path) -> None:
    script = _CRASHER.format(
        tests=str(Path(__file__).parent), home=str(tmp_path), base=llm_server.openai_base_url, bank=bank
    )
    env = {**os.environ, "MEMWRAP_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr[-3000:]
    assert len(llm_server.requests) == 5

    # The next process on this home (here: this one, with a working database) replays the dead run's rows.
    url = embedded_database_url(memory.settings.pgdata)
    revived = Memory(home=tmp_path, database_url=url)
    client = memwrap.wrap_openai(_openai(llm_server), bank_id=bank, memory=revived)
    try:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "Where is the shed key?"}])
        assert client.memwrap.flush(60)
        stats = client.memwrap.retain_stats
    finally:
        client.memwrap.close()
        revived.close()
    texts = [r.text for r in memory.list(bank)]
    assert sum("Crash note" in t for t in texts) == 5, texts
    assert stats.replayed == 5 and stats.delivered == 6
