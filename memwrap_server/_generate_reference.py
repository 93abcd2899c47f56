"""The lists the code knows, written into the docs from the code: every `MEMWRAP_*` variable (docs/configuration.md,
the whole page), the MCP tools and the verbs `Memory(url=...)` cannot run (marked spans in README.md and docs/*.md).

    python -m memwrap_server._generate_reference          # rewrite them
    python -m memwrap_server._generate_reference --check  # say what is stale, exit 1 (tests/test_reference_docs.py)

A variable's name, type, default and meaning come from its field in the settings classes (memwrap/config.py
`Settings`, made of the parts in memwrap/settings/, and memwrap_server/config.py `ServerSettings`, both read with the
`MEMWRAP_` prefix): the meaning is the field's `description=`, its section on the page `section(...)`
(memwrap/settings/section.py). The variables read without a settings class are listed here, in ENVIRONMENT.
tests/test_reference_docs.py fails when a field has no meaning or no section, a `MEMWRAP_` name in the code is
neither a field nor in ENVIRONMENT, or a page names a variable that does not exist.
A dev tool, like memwrap/_generate_verbs.py: nothing imports it at run time. It sits in memwrap_server because it
reads both packages' settings (the engine's may not import upward).
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
from memwrap.settings.section import PREFIX
from memwrap_server.config import ServerSettings
from memwrap_server.mcp import tool_names

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = "python -m memwrap_server._generate_reference"


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
            "`10`",
            "Cases per operation and phase in tests/test_server_robustness.py.",
        ),
        Variable(
            "MEMWRAP_SCHEMATHESIS_COVERAGE",
            "`none`, `purge` or `all`",
            "`none`",
            "schemathesis' coverage phase in tests/test_server_robustness.py on the operations that take a recall "
            "filter (the two recalls, the memory list, the purge; their boundaries make 11,000-14,000 cases each): "
            "`purge` on the purge, `all` on all four (`none`: on none of them, which get 5x the examples and fuzzed "
            "cases instead; every other operation always gets it).",
        ),
        Variable(
            "MEMWRAP_BENCH_CACHE",
            "path",
            "`~/.cache/memwrap-bench`",
            "Where the scale bench keeps its generated corpora.",
        ),
    ],
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


def _extra(name: str, info: FieldInfo) -> dict[str, Any]:
    """The field's place on the page (`section(...)`, memwrap/settings/section.py)."""
    extra = info.json_schema_extra
    if not isinstance(extra, dict) or not isinstance(extra.get("section"), str):
        raise ValueError(f"settings field {name!r} names no section: json_schema_extra=section(...)")
    return extra


def _meaning(name: str, info: FieldInfo) -> str:
    if not info.description:
        raise ValueError(f"settings field {name!r} says nothing of what it means: Field(description=...)")
    return info.description


def _default(name: str, info: FieldInfo) -> str:
    shown = _extra(name, info).get("shown_default")
    if isinstance(shown, str):  # a default computed on the machine, shown as written
        return shown
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
    """Every variable, grouped as the page shows them: the sections in the order of their first field, each
    section's fields in the order they are declared."""
    groups: dict[str, list[Variable]] = {}
    for name, info in fields().items():
        meaning = _meaning(name, info)
        old = _aliases(name, info)
        if old:
            meaning += " Old name, still read: " + ", ".join(f"`{o}`" for o in old) + "."
        variable = Variable(
            PREFIX + name.upper(), _type(info.annotation) + _bounds(info), _default(name, info), meaning
        )
        groups.setdefault(_extra(name, info)["section"], []).append(variable)
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
        f"<!-- Generated by `{GENERATOR}` from the settings' fields (memwrap/settings/,",
        "     memwrap_server/config.py) and memwrap_server/_generate_reference.py; tests/test_reference_docs.py fails",
        "     when it is out of date. Do not edit. -->",
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
            raise KeyError(f"no list called {name!r} (memwrap_server/_generate_reference.py LISTS)")
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
    parser = argparse.ArgumentParser(prog=GENERATOR, description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say which pages are out of date (exit 1)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.check:
        out_of_date = stale()
        for path in out_of_date:
            print(f"out of date: {path.relative_to(ROOT)} (run {GENERATOR})")
        return 1 if out_of_date else 0
    for path in write():
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
