"""Robustness of a real server: the fuzz tier. schemathesis, against the live OpenAPI document of a running
`memwrap serve` (keys on), with a bounded number of examples (valid and invalid data, NUL allowed), finds no 5xx,
no response that breaks its documented schema, no undocumented status and no wrong content type
(test_server_fuzz.py adds what JSON Schema cannot express); and a short loopback load test.

The full load test (200 concurrent recalls for 30 s) is `python -m bench.server_load`; here it runs for 3 s.
Deeper fuzzing: MEMWRAP_SCHEMATHESIS_EXAMPLES=200 (default 10 cases per operation in each phase, so CI stays under
20 minutes; the conformance run in test_server_fuzz.py checks every operation against the document besides).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from test_server_harness import *  # noqa: F403 - fixtures: sidecar

from bench.server_load import run_load, seed

CHECKS = ("not_a_server_error", "response_schema_conformance", "status_code_conformance", "content_type_conformance")


# The operations that take a recall filter (all/any/not of metadata conditions, ids, dates), in their body or, for
# the memory list, as the `filters` query parameter: schemathesis' coverage phase enumerates that schema's boundaries
# into ~11,000-14,000 cases per operation. Measured (2026-12-07, HAR report): with the three body operations left
# out, the memory list alone was 14,239 of the run's 17,105 requests. The filter is one component, checked by one
# validator (memwrap/filters.py), whose refusals test_recall_filters.py checks case by case and test_server_fuzz.py
# fuzzes through every operation. Here the four get the examples and fuzzing phases, with FILTER_EXAMPLES_FACTOR
# times the cases; the coverage phase runs on every other operation (a path holds several: POST .../memories,
# the retain, keeps it). MEMWRAP_SCHEMATHESIS_COVERAGE=purge runs it on the purge as well (the cheapest to answer: no
# question to embed, no arms), =all on all four. Run alone on this machine: 152 s and 150 CPU-s for 17,105 cases
# with the list's coverage, 235 s for 28,232 with the purge's too; CPU-bound on 2 cores, the suite pays about as much.
FILTER_OPERATIONS = {
    "recall": "recall_v1_banks__bank_id__recall_post",
    "recall across banks": "recall_v1_recall_post",
    "memory list": "list_memories_v1_banks__bank_id__memories_get",
    "purge": "delete_memories_v1_banks__bank_id__memories_delete_post",
}
COVERAGE_CHOICES = {"none": (), "purge": (FILTER_OPERATIONS["purge"],), "all": tuple(FILTER_OPERATIONS.values())}
FILTER_EXAMPLES_FACTOR = 5


def schemathesis_run(cli: str, url: str, tmp_path: Path, phases: str, selection: list[str], factor: int = 1) -> None:
    examples = str(int(os.environ.get("MEMWRAP_SCHEMATHESIS_EXAMPLES", "10")) * factor)
    run = subprocess.run(
        [
            cli,
            "run",
            f"{url}/openapi.json",
            *selection,
            "-H",
            f"Authorization: Bearer {ADMIN_KEY}",
            "-H",
            f"X-Memwrap-Key: {ADMIN_KEY}",
            "-H",
            "X-Memwrap-Retain: false",  # the proxy routes' key; no retains
            "--checks",
            ",".join(CHECKS),
            "--max-examples",
            examples,
            "--phases",
            phases,
            "--mode",
            "all",
            "--generation-allow-x00",
            "true",
            "--seed",
            "7",
            "--request-timeout",
            "30",
            "--no-color",
        ],  # no --max-time: it makes fuzzing repeat
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,  # a guard, not a speed check
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    summary = run.stdout.split("SUMMARY")[-1]
    print(summary[-1500:])
    assert not re.search(r"\d+ (failed|failures?)\b", summary), run.stdout[-3000:]
    assert re.search(r"\d+ generated", summary), summary[-1500:]


@pytest.mark.slow
def test_schemathesis_finds_no_server_errors(sidecar: ServerProcess, tmp_path: Path) -> None:
    cli = shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or shutil.which("schemathesis")
    if cli is None:
        pytest.skip("schemathesis is not installed (pip install -e '.[dev]')")
    choice = os.environ.get("MEMWRAP_SCHEMATHESIS_COVERAGE", "none")
    assert choice in COVERAGE_CHOICES, f"MEMWRAP_SCHEMATHESIS_COVERAGE={choice!r}: one of {', '.join(COVERAGE_CHOICES)}"
    light = [op for op in FILTER_OPERATIONS.values() if op not in COVERAGE_CHOICES[choice]]
    try:
        all_phases = [arg for op in light for arg in ("--exclude-operation-id", op)]
        schemathesis_run(cli, sidecar.url, tmp_path, "examples,coverage,fuzzing", all_phases)
        if light:
            chosen = [arg for op in light for arg in ("--include-operation-id", op)]
            schemathesis_run(cli, sidecar.url, tmp_path, "examples,fuzzing", chosen, FILTER_EXAMPLES_FACTOR)
    except AssertionError as failed:
        raise AssertionError(f"{failed}\nserver log:\n{sidecar.tail()}") from None


def test_short_load_has_no_errors(sidecar: ServerProcess) -> None:
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    asyncio.run(seed(sidecar.url, "load-smoke", 300, headers))
    result = asyncio.run(run_load(sidecar.url, bank="load-smoke", concurrency=200, duration=3.0, api_key=ADMIN_KEY))
    print(result.line())
    assert result.requests >= 200 and result.errors == 0, result.error_samples


def test_an_idle_connection_outlives_the_clients_pool_expiry(sidecar: ServerProcess) -> None:
    """httpx keeps an idle connection for 5 s and then reuses it. A server that closed it at 5 s too (uvicorn's
    default) raced that reuse: the request went out as the server hung up, and the client read nothing
    (ReadError('') under load). Past 5 s idle, the same socket still answers."""
    address = urlsplit(sidecar.url)
    assert address.hostname is not None and address.port is not None
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    try:
        connection.request("GET", "/health")
        first = connection.getresponse()
        assert first.status == 200 and json.loads(first.read())["status"] == "ok"
        socket_used = connection.sock
        time.sleep(5.5)  # longer than httpx's keepalive_expiry: a race no longer, the server keeps it open
        connection.request("GET", "/health")  # RemoteDisconnected here if the server had closed it
        second = connection.getresponse()
        assert second.status == 200 and json.loads(second.read())["status"] == "ok"
        assert connection.sock is socket_used  # the same connection, not a new one
    finally:
        connection.close()
