"""Wrapper overhead per chat call: what `wrap_openai` adds to a `chat.completions.create` call.

Two clients of the real `openai` SDK talk to the same local upstream (a tiny HTTP server on 127.0.0.1 that
answers every chat completion at once with a fixed reply): one plain, one wrapped on the benchmark's `Memory`
and bank. For each fresh question both clients make the same call, in alternating order; the sample is the
wrapped call's wall time minus the plain call's. The difference is memwrap's cost: building the query,
recalling from the bank (query embedding included), injecting the block, and handing the exchange to the
background retainer. An httpx event hook stamps when the request leaves and when the response arrives, so the
overhead is also split into "before the upstream request" and "after the response".

Between calls (outside the timing) the probe waits for the background retain to finish, as a real upstream
taking a second or more would let it; the retained exchanges (one per call) grow the bank slightly.

Runs as part of `python -m bench`, or alone on a fresh bank:

    .venv/bin/python -m bench.probes.wrapper_overhead [--memories 10000] [--calls 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.latency import ProbeContext, ProbeResult, register_probe

REPLY = "Noted - thanks for telling me."
MODEL = "gpt-4o-mini"


class _Upstream(BaseHTTPRequestHandler):
    """Answers every POST with one fixed chat completion; counts the requests that carried a memory block."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: with Nagle on, the body can wait for a delayed ACK (~40 ms).
    disable_nagle_algorithm = True
    with_block = 0

    def do_POST(self) -> None:  # http.server's naming
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        system = [m.get("content") for m in body.get("messages", []) if m.get("role") in ("system", "developer")]
        if system and "<memwrap_memories>" in str(system[0]):
            type(self).with_block += 1
        payload = json.dumps(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", MODEL),
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": REPLY}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 8, "total_tokens": 18},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:  # keep the benchmark's output clean
        pass


@contextmanager
def local_upstream() -> Iterator[str]:
    """A fake OpenAI endpoint on a free loopback port; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    thread = threading.Thread(target=server.serve_forever, name="bench-upstream", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


class _Stamps:
    """httpx event hooks: when the request left and when the response headers arrived (perf_counter)."""

    def __init__(self) -> None:
        self.sent = 0.0
        self.received = 0.0

    def hooks(self) -> dict[str, list[Callable[[Any], None]]]:
        def on_request(_request: Any) -> None:
            self.sent = time.perf_counter()

        def on_response(_response: Any) -> None:
            self.received = time.perf_counter()

        return {"request": [on_request], "response": [on_response]}


def _client(base_url: str, stamps: _Stamps) -> Any:
    import httpx
    from openai import OpenAI

    return OpenAI(
        base_url=base_url, api_key="bench", max_retries=0, http_client=httpx.Client(event_hooks=stamps.hooks())
    )  # type: ignore[arg-type]  # httpx wants its own hook list type


def _timed(client: Any, stamps: _Stamps, question: str) -> tuple[float, float, float]:
    """(total, before the request left, after the response arrived) in ms for one chat call."""
    start = time.perf_counter()
    client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": question}])
    end = time.perf_counter()
    return (end - start) * 1000, (stamps.sent - start) * 1000, (end - stamps.received) * 1000


def measure(
    memory: Any,
    bank_id: str,
    questions: Callable[[int], list[str]],
    *,
    warmup: int,
    repetitions: int,
    per_rep: int,
    max_tokens: int,
) -> ProbeResult:
    import memwrap

    with local_upstream() as base_url:
        plain_stamps, wrapped_stamps = _Stamps(), _Stamps()
        plain = _client(base_url, plain_stamps)
        wrapped = memwrap.wrap_openai(
            _client(base_url, wrapped_stamps), bank_id=bank_id, memory=memory, token_budget=max_tokens
        )
        try:
            for question in questions(warmup):
                _timed(plain, plain_stamps, question)
                _timed(wrapped, wrapped_stamps, question)
                wrapped.memwrap.flush(30)
            before_calls = wrapped.memwrap.stats.calls
            before_injected = wrapped.memwrap.stats.injected
            before_seen = _Upstream.with_block
            result = ProbeResult()
            before: list[float] = []
            after: list[float] = []
            plain_totals: list[float] = []
            for rep in range(repetitions):
                samples = []
                for i, question in enumerate(questions(per_rep)):
                    # Alternate which client goes first, so neither always meets a warmer cache.
                    order = (plain, wrapped) if (rep + i) % 2 == 0 else (wrapped, plain)
                    timings = {}
                    for client in order:
                        stamps = wrapped_stamps if client is wrapped else plain_stamps
                        timings[id(client)] = _timed(client, stamps, question)
                    wrapped.memwrap.flush(30)  # outside the timing: a real upstream's latency covers it
                    w_total, w_before, w_after = timings[id(wrapped)]
                    p_total, p_before, p_after = timings[id(plain)]
                    samples.append(w_total - p_total)
                    before.append(w_before - p_before)
                    after.append(w_after - p_after)
                    plain_totals.append(p_total)
                result.samples_ms.append(samples)
            calls = wrapped.memwrap.stats.calls - before_calls
            injected = wrapped.memwrap.stats.injected - before_injected
            stats = wrapped.memwrap.stats
            seen = _Upstream.with_block - before_seen
        finally:
            wrapped.memwrap.flush(30)
            plain.close()
            wrapped.close()
    result.breakdown_ms = {
        "before_upstream": round(statistics.median(before), 3),
        "after_upstream": round(statistics.median(after), 3),
        "plain_call": round(statistics.median(plain_totals), 3),
    }
    result.note = (
        f"wrapped minus plain openai chat.completions.create against a local fake upstream, paired per question; "
        f"{injected}/{calls} timed calls injected a block, {seen} arrived upstream with it; "
        f"failed open: {stats.failed_open}; max_tokens={max_tokens}; medians: "
        f"{result.breakdown_ms['before_upstream']:.1f} ms added before the request, "
        f"{result.breakdown_ms['after_upstream']:.1f} ms after the response, plain call "
        f"{result.breakdown_ms['plain_call']:.1f} ms"
    )
    if injected < calls or seen < calls:
        result.note += " - WARNING: some calls went out without memory, the overhead is understated"
    return result


@register_probe("wrapper_overhead", "wrapper overhead per chat call", order=50)
def probe(ctx: ProbeContext) -> ProbeResult:
    return measure(
        ctx.memory,
        ctx.bank_id,
        ctx.queries.take,
        warmup=ctx.warmup,
        repetitions=ctx.repetitions,
        per_rep=ctx.queries_per_rep,
        max_tokens=ctx.max_tokens,
    )


def main() -> None:
    from bench.latency import QueryPool, _items
    from bench.synthetic import generate_turns
    from memwrap import Memory
    from memwrap.config import load_settings

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200, help="timed calls (4 repetitions)")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="memwrap-bench-wrap-")
    with Memory(settings=load_settings(home=home, worker="off")) as memory:
        bank = "bench-wrapper"
        turns = generate_turns(args.memories)
        for i in range(0, len(turns), 1000):
            memory.retain_many(bank, _items(turns[i : i + 1000]))
        result = measure(
            memory, bank, QueryPool().take, warmup=20, repetitions=4, per_rep=max(args.calls // 4, 1), max_tokens=1024
        )
    stats = result.stats() or {}
    print(
        f"wrapper overhead, bank of {args.memories:,}: p50 {stats.get('p50', float('nan')):.2f} ms, "
        f"p95 {stats.get('p95', float('nan')):.2f} ms; {result.breakdown_ms}"
    )
    print(result.note)


if __name__ == "__main__":
    main()
