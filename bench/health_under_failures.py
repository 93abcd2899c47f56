"""Does a stream of failing requests slow the server down for everyone? /health latency, idle and while N
workers with a valid (bank-restricted) key send requests that fail, as fast as they can.

    python -m bench.health_under_failures                     # starts its own server (temp home), 16 workers
    python -m bench.health_under_failures --concurrency 16 --probes 300

The failing requests are the ones a black-box review found expensive: a bank outside the key's list (403),
NaN in metadata and years 1 and 9999 (422), NUL in a path parameter (422), a proxy body nested 5,000 deep
(400), an unknown memory (404), a bank id with a newline over MCP (422). Each worker sends them in turn on its
own keep-alive connection; the probe sends /health one at a time. Client and server share this machine's
cores: the ratio (loaded p50 / idle p50) is the figure to read, not the milliseconds.

All workers use one key, so after its burst the key's failure budget holds them (memwrap_server/throttle.py);
`MEMWRAP_FAILURE_RATE=0 python -m bench.health_under_failures` measures the server without it, and `--control`
the same number of connections sending /health itself (successful requests: no budget applies).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench.server_load import local_server

ADMIN, RESTRICTED = "bench-admin-key", "bench-alice-key"


def failing_requests() -> list[dict[str, Any]]:
    deep = b'{"model":"m","messages":' + b"[" * 5000 + b"]" * 5000 + b"}"
    json_type = {"content-type": "application/json"}
    return [
        {"method": "POST", "url": "/v1/banks/bob/recall", "json": {"query": "plans"}},
        {
            "method": "POST",
            "url": "/v1/banks/alice/memories",
            "content": b'{"content":"n1","metadata":{"k":NaN}}',
            "headers": json_type,
        },
        {"method": "GET", "url": "/v1/banks/alice/observations", "params": {"now": "0001-01-01T00:00:00"}},
        {"method": "GET", "url": "/v1/banks/alice/observations", "params": {"now": "9999-12-31T23:59:59"}},
        {"method": "GET", "url": "/v1/banks/alice/mental-models/x%00y"},
        {
            "method": "POST",
            "url": "/v1/chat/completions",
            "content": deep,
            "headers": {**json_type, "X-Memwrap-Key": RESTRICTED, "X-Memwrap-Bank": "alice"},
        },
        {"method": "GET", "url": f"/v1/banks/alice/memories/{uuid.uuid4()}"},
        {"method": "POST", "url": "/mcp/alice%0A/", "json": {}},
    ]


async def probe(url: str, count: int) -> list[float]:
    timings = []
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        await client.get("/health")
        for _ in range(count):
            started = time.perf_counter()
            response = await client.get("/health")
            timings.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, response.text
    return timings


def _raw_requests(url: str, control: bool) -> list[bytes]:
    """The load as ready-made HTTP/1.1 bytes: the load generator spends its CPU sending, not building requests
    (this machine's cores are shared by the server, the load and the probe)."""
    specs = [{"method": "GET", "url": "/health"}] if control else failing_requests()
    out = []
    for spec in specs:
        headers = {"Authorization": f"Bearer {RESTRICTED}", **spec.pop("headers", {})}
        request = httpx.Request(url=url + spec.pop("url"), headers=headers, **spec)
        body = request.read()
        lines = [f"{request.method} {request.url.raw_path.decode()} HTTP/1.1"]
        lines += [f"{k}: {v}" for k, v in request.headers.items()]
        out.append(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    return out


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes) -> int:
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    await reader.readexactly(length)
    return status


async def failing_worker(
    url: str, stop: asyncio.Event, statuses: dict[int, int], timings: list[float], control: bool = False
) -> None:
    requests = _raw_requests(url, control)
    host, port = httpx.URL(url).host, httpx.URL(url).port
    reader, writer = await asyncio.open_connection(host, port)
    index = 0
    while not stop.is_set():
        started = time.perf_counter()
        try:
            status = await _exchange(reader, writer, requests[index % len(requests)])
        except (OSError, asyncio.IncompleteReadError, ValueError):
            status = 0  # a dropped connection
            writer.close()
            reader, writer = await asyncio.open_connection(host, port)
        index += 1
        statuses[status] = statuses.get(status, 0) + 1
        timings.append((time.perf_counter() - started) * 1000)
    writer.close()


def _workers_process(url: str, concurrency: int, ready: Any, stop: Any, results: Any, control: bool) -> None:
    """The failing traffic, in a process of its own: the probe's latency must not include the client's queue."""

    async def run() -> None:
        stopping = asyncio.Event()
        statuses: dict[int, int] = {}
        timings: list[float] = []
        workers = [
            asyncio.create_task(failing_worker(url, stopping, statuses, timings, control)) for _ in range(concurrency)
        ]
        started = time.monotonic()
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.05)
        stopping.set()
        await asyncio.gather(*workers)
        results.put({"statuses": statuses, "timings": timings, "elapsed": time.monotonic() - started})

    asyncio.run(run())


def measure(url: str, concurrency: int, probes: int, *, control: bool = False) -> dict[str, Any]:
    import multiprocessing

    idle = asyncio.run(probe(url, probes))
    context = multiprocessing.get_context("spawn")
    ready, stop, results = context.Event(), context.Event(), context.Queue()
    process = context.Process(target=_workers_process, args=(url, concurrency, ready, stop, results, control))
    process.start()
    ready.wait(60)
    time.sleep(1.0)  # let the load build up
    loaded = asyncio.run(probe(url, probes))
    stop.set()
    found = results.get(timeout=120)
    process.join(60)
    statuses, failing = found["statuses"], found["timings"]
    idle_p50, loaded_p50 = statistics.median(idle), statistics.median(loaded)
    return {
        "concurrency": concurrency,
        "probes": probes,
        "idle_p50_ms": round(idle_p50, 2),
        "idle_p90_ms": round(statistics.quantiles(idle, n=10)[-1], 2),
        "loaded_p50_ms": round(loaded_p50, 2),
        "loaded_p90_ms": round(statistics.quantiles(loaded, n=10)[-1], 2),
        "ratio_p50": round(loaded_p50 / idle_p50, 2),
        "failing_requests": sum(statuses.values()),
        "failing_per_s": round(len(failing) / max(found["elapsed"], 1e-9), 1),
        "failing_p50_ms": round(statistics.median(failing), 1) if failing else None,
        "statuses": dict(sorted(statuses.items())),
        "server_errors": sum(n for s, n in statuses.items() if s >= 500),
        "dropped": statuses.get(0, 0),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.health_under_failures", description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="a running server whose MEMWRAP_API_KEYS include the two bench keys")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--probes", type=int, default=300)
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument(
        "--control",
        action="store_true",
        help="the workers send /health itself (cheap, successful): the same load without failures",
    )
    args = parser.parse_args(argv)
    proc = None
    url = args.url
    if url is None:
        # The upstream is never reached: every proxy call here fails before it.
        env = {
            "MEMWRAP_LOG_LEVEL": "info",
            "MEMWRAP_WORKER": "off",
            "MEMWRAP_API_KEYS": f"{ADMIN},{RESTRICTED}:alice",
            "MEMWRAP_UPSTREAM_OPENAI_URL": "http://127.0.0.1:9/v1",
        }
        proc, url = local_server("memwrap-health-", env, quiet=True, timeout=300)
    try:
        result = measure(url, args.concurrency, args.probes, control=args.control)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:  # a server stuck in its own shutdown: not what is measured here
                proc.kill()
    load = "/health requests (control)" if args.control else "failing requests"
    print(
        f"/health p50 idle {result['idle_p50_ms']} ms, with {result['concurrency']} workers sending {load} "
        f"{result['loaded_p50_ms']} ms (x{result['ratio_p50']}); {result['failing_requests']} "
        f"requests ({result['failing_per_s']}/s, p50 {result['failing_p50_ms']} ms), statuses {result['statuses']}"
    )
    if args.json:
        args.json.write_text(json.dumps({**result, "cpu_count": os.cpu_count()}, indent=2))
    return 0 if result["server_errors"] == 0 and result["dropped"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
