"""Loopback load test of the sidecar: N concurrent recalls for a fixed time; reports p50/p90/p99 and errors.

    python -m bench.server_load                         # starts its own server (temp home), 200 × 30 s
    python -m bench.server_load --url http://127.0.0.1:8765 --api-key KEY --concurrency 50 --duration 10

Each of `concurrency` workers sends recall after recall (POST /v1/banks/{bank}/recall, keep-alive) until the time
is up; a non-2xx answer or a transport error counts as an error. Client and server share this machine's cores,
so the figures are a floor for what the server does on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

QUERIES = [
    "Where does Alice work?",
    "What did Alice do last spring?",
    "Who is Maya?",
    "What food does Alice avoid?",
    "When did Alice move to Lisbon?",
    "Who teaches the cello?",
    "What is the launch date?",
    "Which team is Bob on?",
    "What happened in March?",
    "Any restaurant tips?",
    "What does Alice practise every morning?",
    "Where did they travel in 2025?",
    "What is Alice allergic to?",
    "Who visited in May?",
    "What is the budget?",
]
TOPICS = ["work", "travel", "food", "music", "family", "health", "projects", "books", "sport", "weather"]


@dataclass
class LoadResult:
    concurrency: int
    duration_s: float
    requests: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    throughput_rps: float = 0.0
    p50_ms: float = 0.0
    p90_ms: float = 0.0
    p99_ms: float = 0.0
    max_ms: float = 0.0
    memories: int = 0

    def line(self) -> str:
        return (
            f"{self.concurrency} concurrent recalls for {self.duration_s:.0f}s over {self.memories} memories: "
            f"{self.requests} requests ({self.throughput_rps:.0f}/s), p50 {self.p50_ms:.0f} ms, "
            f"p90 {self.p90_ms:.0f} ms, p99 {self.p99_ms:.0f} ms, max {self.max_ms:.0f} ms, {self.errors} errors"
        )


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


async def seed(url: str, bank: str, memories: int, headers: dict[str, str]) -> None:
    rng = random.Random(7)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=300) as client:
        await client.delete(f"/v1/banks/{bank}")
        for start in range(0, memories, 500):
            items = [
                {
                    "content": f"Note {i} about {rng.choice(TOPICS)}: Alice and Bob discussed item {i} "
                    f"of the {rng.choice(TOPICS)} plan on day {i % 28 + 1}.",
                    "document_id": f"load-session-{i // 20}:turn-{i % 20}",
                }
                for i in range(start, min(memories, start + 500))
            ]
            response = await client.post(f"/v1/banks/{bank}/memories/batch", json={"items": items})
            response.raise_for_status()


async def run_load(
    url: str,
    *,
    bank: str = "load-test",
    concurrency: int = 200,
    duration: float = 30.0,
    api_key: str | None = None,
    max_tokens: int = 512,
) -> LoadResult:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    result = LoadResult(concurrency=concurrency, duration_s=duration)
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60, limits=limits) as client:
        banks = (await client.get("/v1/banks")).json()
        result.memories = next((b["memories"] for b in banks if b["bank_id"] == bank), 0)
        deadline = time.monotonic() + duration

        async def worker(index: int) -> None:
            rng = random.Random(index)
            while time.monotonic() < deadline:
                body = {"query": rng.choice(QUERIES), "max_tokens": max_tokens}
                started = time.perf_counter()
                try:
                    response = await client.post(f"/v1/banks/{bank}/recall", json=body)
                    failed = None if response.status_code == 200 else f"{response.status_code}: {response.text[:200]}"
                except httpx.HTTPError as exc:
                    failed = repr(exc)
                latencies.append((time.perf_counter() - started) * 1000)
                if failed:
                    result.errors += 1
                    if len(result.error_samples) < 5:
                        result.error_samples.append(failed)

        began = time.monotonic()
        await asyncio.gather(*(worker(i) for i in range(concurrency)))
        elapsed = time.monotonic() - began
    latencies.sort()
    result.requests = len(latencies)
    result.throughput_rps = len(latencies) / elapsed if elapsed else 0.0
    result.p50_ms, result.p90_ms, result.p99_ms = (_percentile(latencies, q) for q in (0.5, 0.9, 0.99))
    result.max_ms = latencies[-1] if latencies else 0.0
    if latencies:
        result.p50_ms = statistics.median(latencies)
    return result


def start_server(
    port: int, home: Path, env: dict[str, str] | None = None, *, quiet: bool = False, timeout: float = 180.0
) -> subprocess.Popen[bytes]:
    """`python -m memwrap_server` on 127.0.0.1:`port` with `home`, once /health answers (`env` adds settings)."""
    env = {
        **os.environ,
        "MEMWRAP_HOME": str(home),
        "MEMWRAP_PORT": str(port),
        "MEMWRAP_HOST": "127.0.0.1",
        "MEMWRAP_LOG_LEVEL": "warning",
        "HF_HUB_OFFLINE": "1",
        **(env or {}),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "memwrap_server"], env=env, stderr=subprocess.DEVNULL if quiet else None
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"the server did not start in {timeout:.0f} s")


def local_server(prefix: str, env: dict[str, str] | None = None, **options: Any) -> tuple[subprocess.Popen[bytes], str]:
    """A server of its own on a free loopback port and a new temporary home: (process, base URL)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = start_server(port, Path(tempfile.mkdtemp(prefix=prefix)), env, **options)
    return proc, f"http://127.0.0.1:{port}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.server_load", description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="a running server (default: start one on a temporary home)")
    parser.add_argument("--api-key")
    parser.add_argument("--bank", default="load-test")
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--memories", type=int, default=2000, help="seed the bank with this many (0: use as is)")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)

    proc = None
    url = args.url
    if url is None:
        proc, url = local_server("memwrap-load-")
    try:
        headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
        if args.memories:
            asyncio.run(seed(url, args.bank, args.memories, headers))
        result = asyncio.run(
            run_load(
                url,
                bank=args.bank,
                concurrency=args.concurrency,
                duration=args.duration,
                api_key=args.api_key,
                max_tokens=args.max_tokens,
            )
        )
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(60)
    print(result.line())
    for sample in result.error_samples:
        print("  error:", sample)
    if args.json:
        args.json.write_text(json.dumps({**asdict(result), "cpu_count": os.cpu_count()}, indent=2))
    return 0 if result.errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())


__all__: list[Any] = ["LoadResult", "main", "run_load", "local_server", "seed", "start_server"]
