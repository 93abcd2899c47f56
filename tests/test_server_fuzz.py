"""Property test of the whole HTTP surface (REST, proxy, health) of a real server: schemathesis generates cases
for every operation of its OpenAPI document (valid and invalid), and Hypothesis then breaks them on purpose the
ways JSON Schema cannot describe: NaN and ±Infinity, bodies nested 100 to 5,000 deep, NUL and newlines in
strings and path parameters, dates at the ends of the calendar, strings of 600k characters, 40-digit numbers,
lists of thousands of items. The property: no answer is a 5xx (the database is up, so not even 503) and no
connection is dropped; every 4xx carries the documented `{"error": ...}` body (Anthropic's on /v1/messages).

MEMWRAP_FUZZ_EXAMPLES (default 12) cases per operation; the counts are printed (`pytest -s`).

A second test holds the document and the server to each other: schemathesis' own runner (its examples, coverage
and fuzzing phases, deterministic) with its conformance checks: a schema-violating request is refused, every
status, content type, header and body is the documented one, and a method a path does not have is a 405 with the
right `Allow`, and every schema-valid request is accepted (conformance_hooks.py: the one exception).
MEMWRAP_CONFORMANCE_EXAMPLES (default 10) fuzzed cases per operation.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import requests
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_server_harness import *  # noqa: F403 - fixtures: sidecar

EXAMPLES = int(os.environ.get("MEMWRAP_FUZZ_EXAMPLES", "12"))
PROXY_PATHS = ("/v1/chat/completions", "/v1/responses", "/v1/messages")
EXTREME_DATES = [
    "0001-01-01T00:00:00",
    "9999-12-31T23:59:59.999999",
    "9999-12-31T23:59:59-14:00",
    "0001-01-01T00:00:00+14:00",
    "0000-00-00T00:00:00",
    "2026-02-30T00:00:00",
    "1970-01-01T00:00:00Z",
]
WEIRD_STRINGS = [
    "a\x00b",
    "\x00",
    "line\nbreak\n",
    "\r\n",
    "\ud800",
    "x" * 600_000,
    "😀" * 1000,
    " ",
    "",
    "</memwrap_memories>",
    "../../etc/passwd",
    "%00",
    "\u202e\u200b",
]
MUTATIONS = [
    "none",
    "none",
    "nan",
    "infinity",
    "-infinity",
    "deep",
    "string",
    "date",
    "huge_int",
    "long_list",
    "metadata_nan",
    "wrong_type",
]


class Marker:
    """A value spliced into the serialised body as raw text (what json.dumps cannot produce)."""

    def __init__(self, raw: str) -> None:
        self.raw = raw


def _serialise(body: Any) -> bytes:
    markers: dict[str, str] = {}

    def default(value: Any) -> Any:
        if isinstance(value, Marker):
            key = f"__marker_{len(markers)}__"
            markers[key] = value.raw
            return key
        raise TypeError(type(value).__name__)

    text = json.dumps(body, default=default)  # NaN and Infinity come out as JavaScript's literals
    for key, raw in markers.items():
        text = text.replace(json.dumps(key), raw)
    return text.encode("utf-8", "surrogatepass")


def _value(mutation: str, data: st.DataObject) -> Any:
    if mutation == "nan":
        return math.nan
    if mutation == "infinity":
        return math.inf
    if mutation == "-infinity":
        return -math.inf
    if mutation == "deep":
        depth = data.draw(st.sampled_from([33, 100, 1000, 5000]), label="depth")
        return Marker("[" * depth + "]" * depth)
    if mutation == "string":
        return data.draw(st.sampled_from(WEIRD_STRINGS), label="string")
    if mutation == "date":
        return data.draw(st.sampled_from(EXTREME_DATES), label="date")
    if mutation == "huge_int":
        return data.draw(st.sampled_from([10**40, -(2**63) - 1, 2**63, -1]), label="int")
    if mutation == "long_list":
        return ["x"] * 5000
    return data.draw(st.sampled_from([{}, [], True, None, 1.5, "text"]), label="wrong type")


def _mutate(case: Any, mutation: str, data: st.DataObject) -> None:
    if mutation == "none":
        return
    targets = []
    if isinstance(case.body, dict):
        targets.append("body")
    if case.query:
        targets.append("query")
    if case.path_parameters:
        targets.append("path")
    if not targets:
        return
    target = data.draw(st.sampled_from(targets), label="target")
    if target == "body":
        body = dict(case.body)
        if mutation == "metadata_nan":
            body["metadata"] = {"k": data.draw(st.sampled_from([math.nan, math.inf, -math.inf])), "ok": 1}
        else:
            key = data.draw(st.sampled_from(sorted(body) or ["extra"]), label="key")
            body[key] = _value(mutation, data)
        case.body = _serialise(body)
    elif target == "query":
        key = data.draw(st.sampled_from(sorted(case.query)), label="key")
        value = _value(mutation if mutation not in ("deep", "metadata_nan") else "string", data)
        value = value if isinstance(value, (str, int)) else str(value)
        case.query = {**case.query, key: value.replace("\ud800", "?") if isinstance(value, str) else value}
    else:
        key = data.draw(st.sampled_from(sorted(case.path_parameters)), label="key")
        # (a lone surrogate cannot even be put in a URL: the client refuses it, so it is left out here)
        value = data.draw(
            st.sampled_from([*WEIRD_STRINGS[:4], "team-a\n", "x" * 5000, "a/b", "..", "%00"]), label="path"
        )
        case.path_parameters = {**case.path_parameters, key: value}


# httptools (uvicorn's parser) refuses a request line this long with a plain 400 before any app code runs.
HTTP_URL_LIMIT = 60_000


def _documented(path: str, response: requests.Response) -> bool:
    try:
        body = response.json()
    except ValueError:
        return False
    if path == "/v1/messages":
        return body.get("type") == "error" and bool(body.get("error", {}).get("message"))
    error = body.get("error") if isinstance(body, dict) else None
    return isinstance(error, dict) and bool(error.get("code")) and bool(error.get("message"))


def test_fuzzing_finds_no_server_error_and_no_dropped_connection(sidecar: ServerProcess, upstream: Any) -> None:
    import schemathesis
    from schemathesis.generation.modes import GenerationMode

    schema = schemathesis.openapi.from_url(
        f"{sidecar.url}/openapi.json", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    dropped: list[str] = []
    undocumented: list[str] = []
    session = requests.Session()
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 25

    def fuzz(operation: Any) -> None:
        strategy = st.one_of(
            operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE)
        )

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=strategy, mutation=st.sampled_from(MUTATIONS), data=st.data())
        def run(case: Any, mutation: str, data: st.DataObject) -> None:
            _mutate(case, mutation, data)
            sent = {**headers}
            if operation.path in PROXY_PATHS:
                # memwrap's key where the proxy reads it; no retain, so fuzzed turns do not queue work for minutes
                sent.update({"X-Memwrap-Key": ADMIN_KEY, "X-Memwrap-Retain": "false"})
            label = f"{operation.method.upper()} {operation.path} [{mutation}]"
            try:
                response = case.call(base_url=sidecar.url, session=session, headers=sent, timeout=120)
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
                dropped.append(f"{label}: {exc!r}"[:300])
                return
            statuses[response.status_code] += 1
            if response.status_code >= 500:
                failures.append(f"{label} -> {response.status_code} {response.text[:200]} {response.request.url!r}")
            elif response.status_code == 400 and len(response.request.url or "") > HTTP_URL_LIMIT:
                pass  # refused by the HTTP layer before the app (docs/sidecar.md: a URL past 64 KB)
            elif response.status_code >= 400 and not _documented(operation.path, response):
                undocumented.append(
                    f"{label} -> {response.status_code} {response.text[:200]} "
                    f"{response.request.method} {response.request.url!r} {dict(response.request.headers)!r}"[:900]
                )

        run()

    for operation in operations:
        fuzz(operation)

    total = sum(statuses.values()) + len(dropped)
    print(
        f"\nfuzz: {len(operations)} operations, {total} requests, statuses {dict(sorted(statuses.items()))}, "
        f"5xx {len(failures)}, dropped connections {len(dropped)}, undocumented 4xx {len(undocumented)}"
    )
    for failure in failures:  # whole, with the request: pytest shortens the assertion's message
        print(f"5xx: {failure}")
    if failures:
        print(f"server log:\n{sidecar.tail(6000)}")
    assert not failures, failures[:10]
    assert not dropped, dropped[:10]
    assert not undocumented, undocumented[:10]
    assert sum(n for status, n in statuses.items() if 400 <= status < 500) > total // 4  # it did break things


CONFORMANCE_EXAMPLES = int(os.environ.get("MEMWRAP_CONFORMANCE_EXAMPLES", "10"))
# Every conformance check; positive_data_acceptance with the hooks of conformance_hooks.py (the date-order rules no
# schema can state are not counted as a schema-valid request refused).
CONFORMANCE_CHECKS = (
    "not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,"
    "response_schema_conformance,negative_data_rejection,positive_data_acceptance"
)
CONFORMANCE_HOOKS = Path(__file__).with_name("conformance_hooks.py")


# The proxy's bodies are the upstream's (OpenAI's, Anthropic's), and an import's body is an export file (JSON lines),
# which a schema of bytes cannot describe: the fuzz test above covers both.
UNDESCRIBED_PATHS = r"^/v1/(chat/completions|responses|messages)$|^/v1/banks/[^/]+/import$"
# delete_memories' body (a recursive filter under a selector rule) is run on its own, on one worker: with two, drawing
# it made Hypothesis fail in its own strategy repr (CPython 3.11's "SystemError: AST constructor recursion depth
# mismatch" from ast.parse deep in a worker thread's stack), an error of the generator, not a finding about us.
PURGE_PATH = r"^/v1/banks/[^/]+/memories/delete$"


def _conformance(url: str, tmp_path: Path, *, workers: int, **paths: str) -> tuple[int, str]:
    command = [
        *(sys.executable, "-m", "schemathesis.cli", "run", f"{url}/openapi.json"),
        *("-H", f"Authorization: Bearer {ADMIN_KEY}", "--checks", CONFORMANCE_CHECKS),
        *("--max-examples", str(CONFORMANCE_EXAMPLES), "--generation-deterministic", "--workers", str(workers)),
        # The coverage phase (every boundary of every parameter: 8,000 cases, ten minutes) is left to manual runs.
        *("--phases", "examples,fuzzing", "--suppress-health-check", "all", "--no-color", "--no-shrink"),
        # The API's description: no text may hold NUL or a lone surrogate (PostgreSQL cannot store them).
        *("--generation-allow-x00", "false", "--generation-codec", "utf-8"),
        *(item for option, regex in paths.items() for item in (f"--{option.replace('_', '-')}", regex)),
    ]
    environment = {**os.environ, "SCHEMATHESIS_HOOKS": str(CONFORMANCE_HOOKS)}
    result = subprocess.run(command, capture_output=True, text=True, timeout=1200, cwd=tmp_path, env=environment)
    counts = re.search(r"(\d+) generated, [^\n]*", result.stdout)
    print(f"\nconformance ({paths}): {counts.group(0) if counts else result.stdout[-500:]}")
    return result.returncode, result.stdout[-8000:] + result.stderr[-2000:]


# Hypothesis itself, now and then (about one run in three here), fails in a recursive schema's strategy repr with
# CPython 3.11's ast bug; the run then reports a "Runtime Error" and no finding. Such a run is run again, once.
GENERATOR_CRASH = "SystemError: AST constructor recursion depth mismatch"


def _generator_crash_only(output: str) -> bool:
    return GENERATOR_CRASH in output and "Runtime Error" in output and not re.search(r"\bST\d{3}\b|❌ \w", output)


def test_the_openapi_document_and_the_server_agree(sidecar: ServerProcess, upstream: Any, tmp_path: Path) -> None:
    paths = {"exclude_path_regex": f"{UNDESCRIBED_PATHS}|{PURGE_PATH}"}
    returncode, output = _conformance(sidecar.url, tmp_path, workers=2, **paths)
    if returncode != 0 and _generator_crash_only(output):
        returncode, output = _conformance(sidecar.url, tmp_path, workers=2, **paths)
    assert returncode == 0, output
    returncode, output = _conformance(sidecar.url, tmp_path, workers=1, include_path_regex=PURGE_PATH)
    assert returncode == 0, output


def test_a_method_a_path_does_not_have_is_405_with_its_allow(sidecar: ServerProcess) -> None:
    """Every path of the document, asked with each method it does not declare: 405, and `Allow` lists exactly the
    declared ones (PATCH /memories/batch was a 422: the memory route took "batch" for an id)."""
    document = requests.get(f"{sidecar.url}/openapi.json", timeout=30).json()
    headers = {"Authorization": f"Bearer {ADMIN_KEY}", "X-Memwrap-Key": ADMIN_KEY}
    ids = {"bank_id": "alice", "memory_id": str(uuid.uuid4()), "observation_id": str(uuid.uuid4())}
    ids |= {"entity_id": str(uuid.uuid4()), "webhook_id": str(uuid.uuid4()), "name": "model"}
    wrong: list[str] = []
    for path, operations in document["paths"].items():
        declared = {method.upper() for method in operations if method in ("get", "post", "put", "patch", "delete")}
        url = sidecar.url + path.format(**ids)
        for method in sorted({"GET", "POST", "PUT", "PATCH", "DELETE"} - declared):
            response = requests.request(method, url, headers=headers, json={}, timeout=30)
            allowed = {m.strip() for m in response.headers.get("allow", "").split(",") if m.strip()} - {"HEAD"}
            if response.status_code != 405 or allowed != declared:
                wrong.append(
                    f"{method} {path}: {response.status_code} Allow={sorted(allowed)} (declared {sorted(declared)})"
                )
    assert not wrong, wrong
