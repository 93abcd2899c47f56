"""Every surface offers every declared verb with the declared parameters (memwrap/verbs.py).

The declaration is the one list: `AsyncMemory`, `Memory`, the HTTP client and the engine's protocol are generated
from it, REST routes, MCP tools and CLI commands derived from it, and the embedded `Engine` written to it. This
test walks `VERBS` and checks each surface as a user meets it (the signatures Python shows, the engines'
signatures, the server's OpenAPI document, the MCP tool list, the CLI's parser), so a surface that lacks a verb or
a parameter, names one differently, gives it another default or other bounds fails here; mypy holds `Engine` and
`HttpEngine` to the `EngineVerbs` protocol (tests/typing_engine_face.py). The checkers are also run on
deliberately broken surfaces, to show they notice.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import inspect
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from memwrap import AsyncMemory, Memory
from memwrap.cli import build_parser
from memwrap.client.http import LOCAL_ONLY, HttpEngine
from memwrap.engine.engine import Engine
from memwrap.errors import InvalidInputError
from memwrap.verbs import VERBS
from memwrap_server.app import create_app
from memwrap_server.mcp import build_server

# Public members of AsyncMemory/Memory that are not verbs: the object's own life cycle.
NOT_VERBS = {
    "warmup",
    "start",
    "started",
    "use_llm",
    "llm_configured",  # whether use_llm or MEMWRAP_LLM_* gave it an LLM (the MCP tool list reads it)
    "close",
    "closed",
    "settings",
    "url",
    "aio",
    "submit",
    "set_raw_ttl",
}  # set_raw_ttl: deprecated spelling of configure_bank(raw_ttl_days=)


def _shape(signature: inspect.Signature) -> list[tuple[str, Any, Any]]:
    # `**old_names`: the sync twin of a verb with renamed parameters passes their old names on (AsyncMemory maps
    # them, with a DeprecationWarning).
    return [(p.name, p.kind, p.default) for p in signature.parameters.values() if p.name not in ("self", "old_names")]


# --- the checkers ------------------------------------------------------------------------------------------------


def python_problems(cls: type) -> list[str]:
    """A class offering the verbs in Python (AsyncMemory, Memory): same names, kinds and defaults, nothing extra."""
    problems = []
    for declared in VERBS.values():
        method = getattr(cls, declared.name, None)
        if method is None:
            problems.append(f"{cls.__name__} lacks {declared.name}")
            continue
        if _shape(inspect.signature(method)) != _shape(declared.signature()):
            problems.append(f"{cls.__name__}.{declared.name}{inspect.signature(method)} != {declared.signature()}")
    for name in dir(cls):
        if not name.startswith("_") and name not in VERBS and name not in NOT_VERBS:
            problems.append(f"{cls.__name__}.{name} is public but not declared in memwrap/verbs.py")
    return problems


# Parameters an engine takes beyond the declared ones (keyword-only, with a default): no public surface offers them.
ENGINE_ONLY = {("Engine", "recall"): {"fusion", "query_vector"}}


def engine_problems(cls: type) -> list[str]:
    """An engine (`Engine`, `HttpEngine`) takes every declared verb with the declared parameters, kinds and
    defaults; beyond them only what ENGINE_ONLY lists."""
    problems = []
    for declared in VERBS.values():
        method = getattr(cls, declared.name, None)
        if method is None:
            problems.append(f"{cls.__name__} lacks {declared.name}")
            continue
        shape = _shape(inspect.signature(method))
        extra = ENGINE_ONLY.get((cls.__name__, declared.name), set())
        if [p for p in shape if p[0] not in extra] != _shape(declared.signature()):
            problems.append(f"{cls.__name__}.{declared.name}{inspect.signature(method)} != {declared.signature()}")
        elif any(
            kind is not inspect.Parameter.KEYWORD_ONLY or default is inspect.Parameter.empty
            for name, kind, default in shape
            if name in extra
        ):
            problems.append(f"{cls.__name__}.{declared.name}: its own parameters are keyword-only with a default")
    if not callable(getattr(cls, "close", None)):
        problems.append(f"{cls.__name__} lacks close")
    return problems


BOUND_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def declared_bounds(declared: Any, name: str) -> dict[str, Any]:
    """A parameter's declared bounds (Field(ge=, le=, gt=, lt=)), as JSON Schema says them."""
    schema = declared.params.model_json_schema()["properties"][name]
    return _bounds(schema)


def _bounds(schema: dict[str, Any]) -> dict[str, Any]:
    found = {k: schema[k] for k in BOUND_KEYS if k in schema}
    for option in schema.get("anyOf", []):
        found.update(_bounds(option))
    return found


def bounds_problems(openapi: dict[str, Any], tools: dict[str, dict[str, Any]]) -> list[str]:
    """Every parameter has one set of bounds, the declared one: over REST (query string or body) and MCP alike."""
    problems = []
    schemas = openapi.get("components", {}).get("schemas", {})
    for declared in VERBS.values():
        offered: dict[str, tuple[str, dict[str, Any]]] = {}
        if declared.route is not None:
            operation = openapi["paths"].get(declared.route.path, {}).get(declared.route.method.lower(), {})
            for p in operation.get("parameters", []):
                offered[p["name"]] = ("REST", p.get("schema", {}))
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            for n, schema in _resolve(body, schemas).get("properties", {}).items():
                offered[n] = ("REST", schema)
        surfaces = [offered]
        if declared.mcp and declared.mcp in tools:
            surfaces.append({n: ("MCP", schema) for n, schema in tools[declared.mcp].get("properties", {}).items()})
        for surface in surfaces:
            for name, (where, schema) in surface.items():
                if name not in declared.params.model_fields:
                    continue
                if _bounds(schema) != declared_bounds(declared, name):
                    problems.append(
                        f"{declared.name}.{name}: {where} bounds {_bounds(schema)}, declared "
                        f"{declared_bounds(declared, name)}"
                    )
    return problems


def openapi_problems(spec: dict[str, Any]) -> list[str]:
    """Each routed verb's route exists and carries each parameter (path, body property or query parameter)."""
    problems = []
    schemas = spec.get("components", {}).get("schemas", {})
    for declared in VERBS.values():
        if declared.route is None:
            continue
        operation = spec["paths"].get(declared.route.path, {}).get(declared.route.method.lower())
        if operation is None:
            problems.append(f"no {declared.route.method} {declared.route.path} for {declared.name}")
            continue
        offered = {p["name"]: p.get("schema", {}) for p in operation.get("parameters", [])}
        body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
        body = _resolve(body, schemas)
        offered.update(body.get("properties", {}))
        for name, info in declared.params.model_fields.items():
            if name in declared.route.client_side:
                continue
            if name not in offered:
                problems.append(f"{declared.route.method} {declared.route.path} lacks `{name}` ({declared.name})")
            elif not info.is_required() and info.default is not None and "default" in offered[name]:
                if offered[name]["default"] != info.default:
                    problems.append(
                        f"{declared.name}.{name}: default {offered[name]['default']!r} over HTTP, "
                        f"{info.default!r} declared"
                    )
    return problems


def _resolve(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    # {"$ref": ..., "anyOf": [...]}: a model plus a rule over its properties (openapi_rules.SELECTING_BODIES)
    for option in [schema] if "$ref" in schema else schema.get("anyOf", [schema]):
        if "$ref" in option:
            return schemas[option["$ref"].rsplit("/", 1)[1]]
        if "properties" in option:
            return option
    return schema


def http_client_problems(engine_cls: type) -> list[str]:
    """Every verb that travels over HTTP is a client method; every local-only one says why."""
    problems = []
    for declared in VERBS.values():
        if declared.local_only:
            if LOCAL_ONLY.get(declared.name) != declared.local_only:
                problems.append(f"{declared.name} is local only without its reason in LOCAL_ONLY")
        elif not callable(getattr(engine_cls, declared.name, None)):
            problems.append(f"the HTTP client lacks {declared.name}")
    return problems


def mcp_problems(tools: dict[str, dict[str, Any]]) -> list[str]:
    """Each verb declared with `mcp=` is a tool taking its parameters (the bank is the endpoint's)."""
    problems = []
    for declared in VERBS.values():
        if not declared.mcp:
            continue
        schema = tools.get(declared.mcp)
        if schema is None:
            problems.append(f"no MCP tool {declared.mcp}")
            continue
        expected = [n for n in declared.params.model_fields if n != "bank_id"]
        if list(schema.get("properties", {})) != expected:
            problems.append(f"MCP {declared.mcp} takes {list(schema.get('properties', {}))}, declared {expected}")
        required = [n for n, i in declared.params.model_fields.items() if i.is_required() and n != "bank_id"]
        if sorted(schema.get("required", [])) != sorted(required):
            problems.append(f"MCP {declared.mcp} requires {schema.get('required')}, declared {required}")
    return problems


def cli_problems(parser: argparse.ArgumentParser) -> list[str]:
    """Each verb declared with `cli=True` is a command; positional parameters are arguments, the rest options."""
    problems = []
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    for declared in VERBS.values():
        if not declared.cli:
            continue
        command = commands.get(declared.cli)
        if command is None:
            problems.append(f"no CLI command for {declared.name}")
            continue
        dests = {a.dest for a in command._actions}
        for name in declared.params.model_fields:
            if name not in dests:
                problems.append(f"`memwrap {declared.cli}` lacks {name}")
    return problems


# --- the surfaces as they are ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return create_app(memory=AsyncMemory(url="http://127.0.0.1:9")).openapi()


@pytest.fixture(scope="module")
def mcp_tools() -> dict[str, dict[str, Any]]:
    async def listed() -> dict[str, dict[str, Any]]:
        # A sidecar's memory that is never called (listing only): with one, every tool is listed, reflect too.
        server = build_server(lambda: AsyncMemory(url="http://127.0.0.1:9"))
        return {t.name: t.input_schema for t in await server.list_tools()}  # type: ignore[return-value]  # plain dicts

    return asyncio.run(listed())


def test_the_sync_twins_are_generated_from_the_current_declaration() -> None:
    from memwrap import _generate_verbs

    assert _generate_verbs.main(["--check"]) == 0, "run `python -m memwrap._generate_verbs`"


def test_there_are_verbs_to_check() -> None:
    assert {"retain", "recall", "reflect", "list", "configure_bank", "create_mental_model"} <= set(VERBS)
    assert all(v.doc for v in VERBS.values()), "every verb is documented"


@pytest.mark.parametrize("cls", [AsyncMemory, Memory])
def test_python_surfaces_match_the_declaration(cls: type) -> None:
    assert python_problems(cls) == []


@pytest.mark.parametrize("cls", [Engine, HttpEngine])
def test_both_engines_take_the_declared_signatures(cls: type) -> None:
    assert engine_problems(cls) == []


def test_every_surface_has_the_declared_bounds(openapi: dict[str, Any], mcp_tools: dict[str, dict[str, Any]]) -> None:
    assert declared_bounds(VERBS["list"], "limit") == {"minimum": 1, "maximum": 10_000}
    assert bounds_problems(openapi, mcp_tools) == []


def _bounded_calls() -> list[tuple[str, str, int, int]]:
    """(verb, parameter, a value at a declared bound, the value just past it) for every bounded integer."""
    calls = []
    for declared in VERBS.values():
        for name in declared.params.model_fields:
            bounds = declared_bounds(declared, name)
            if "maximum" in bounds:
                calls.append((declared.name, name, bounds["maximum"], bounds["maximum"] + 1))
            if "minimum" in bounds:
                calls.append((declared.name, name, bounds["minimum"], bounds["minimum"] - 1))
    return calls


def test_the_engine_checks_the_declared_bounds(memory: Memory) -> None:
    """In Python nothing checks a value before the engine: the engine's own bounds must be the declared ones."""
    calls = _bounded_calls()
    assert {
        ("list", "limit"),
        ("jobs", "limit"),
        ("observations", "limit"),
        ("entities", "offset"),
        ("recall", "top_k"),
        ("recall", "token_budget"),
        ("create_mental_model", "refresh_every"),
        ("create_mental_model", "max_answer_tokens"),
        ("reflect", "timeout"),
    } <= {(verb, name) for verb, name, _, _ in calls}
    memory.retain("drift-bounds", "Alice keeps bees on the roof.")
    for verb, name, at_bound, past in calls:
        declared = VERBS[verb]
        required = {  # a fresh name per call: a mental model made at one bound is not a duplicate at the next
            n: (
                uuid4()
                if n.endswith("_id") and n != "bank_id"
                else f"drift-{uuid4().hex[:8]}"
                if n == "name"
                else "drift-bounds"
            )
            for n, info in declared.params.model_fields.items()
            if info.is_required()
        }
        with pytest.raises(InvalidInputError, match=name):
            getattr(memory, verb)(**required, **{name: past})
        try:
            getattr(memory, verb)(**required, **{name: at_bound})
        except InvalidInputError as exc:
            raise AssertionError(f"{verb}({name}={at_bound}) is within the declared bounds: {exc}") from exc
        except Exception:  # noqa: BLE001 (past the bounds: e.g. no such entity)
            pass


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_both_engines_satisfy_the_engine_protocol() -> None:
    """mypy on tests/typing_engine_face.py: `Engine` and `HttpEngine` are `EngineVerbs` (memwrap/engine_verbs.py)."""
    module = Path(__file__).with_name("typing_engine_face.py")
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--follow-imports=silent",
            "--ignore-missing-imports",
            "--cache-dir",
            str(Path(__file__).parent.parent / ".mypy_cache"),
            str(module),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_rest_routes_carry_every_parameter(openapi: dict[str, Any]) -> None:
    assert openapi_problems(openapi) == []


def test_http_client_offers_every_verb() -> None:
    assert http_client_problems(HttpEngine) == []


def test_mcp_tools_take_the_declared_parameters(mcp_tools: dict[str, dict[str, Any]]) -> None:
    assert mcp_problems(mcp_tools) == []


def test_cli_commands_take_the_declared_parameters() -> None:
    assert cli_problems(build_parser()) == []


# --- the checkers notice drift -----------------------------------------------------------------------------------


def test_checkers_fail_on_a_surface_that_lacks_a_parameter(
    openapi: dict[str, Any], mcp_tools: dict[str, dict[str, Any]]
) -> None:
    class Drifted(Memory):  # a hand-written recall that forgot prefer_observations
        def recall(  # type: ignore[override]  # a drifted signature, on purpose
            self, bank_id: str, query: str, *, token_budget: int = 1024
        ) -> Any:
            return None

        def forget_everything(self) -> None:  # a verb written outside the declaration
            return None

    problems = python_problems(Drifted)
    assert any("Drifted.recall" in p for p in problems)
    assert any("forget_everything" in p for p in problems)

    body = openapi["components"]["schemas"]["RecallBody"]
    lost = {
        **openapi,
        "components": {
            **openapi["components"],
            "schemas": {
                **openapi["components"]["schemas"],
                "RecallBody": {
                    **body,
                    "properties": {k: v for k, v in body["properties"].items() if k != "prefer_observations"},
                },
            },
        },
    }
    assert openapi_problems(lost) == ["POST /v1/recall lacks `prefer_observations` (recall)"]
    moved = {**openapi, "paths": {k: v for k, v in openapi["paths"].items() if not k.endswith("/consolidate")}}
    assert openapi_problems(moved) == ["no POST /v1/banks/{bank_id}/consolidate for consolidate"]

    recall_tool = mcp_tools["recall"]
    renamed = {
        **mcp_tools,
        "recall": {
            **recall_tool,
            "properties": {
                ("max_tokens" if k == "token_budget" else k): v for k, v in recall_tool["properties"].items()
            },
        },
    }
    assert len(mcp_problems(renamed)) == 1 and "MCP recall takes" in mcp_problems(renamed)[0]

    class NoConsolidate(HttpEngine):
        consolidate = None  # type: ignore[assignment]  # a verb removed, on purpose

    assert http_client_problems(NoConsolidate) == ["the HTTP client lacks consolidate"]

    class EngineWithoutExplain(Engine):  # an engine whose recall lost a parameter
        async def recall(self, bank_id: Any, query: str, *, token_budget: int | None = None) -> Any:  # type: ignore[override]
            return None

    assert engine_problems(EngineWithoutExplain) == [
        f"EngineWithoutExplain.recall{inspect.signature(EngineWithoutExplain.recall)} != {VERBS['recall'].signature()}"
    ]

    limit = {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000}}
    narrower = {
        **openapi,
        "paths": {
            **openapi["paths"],
            "/v1/banks/{bank_id}/memories": {
                **openapi["paths"]["/v1/banks/{bank_id}/memories"],
                "get": {
                    **openapi["paths"]["/v1/banks/{bank_id}/memories"]["get"],
                    "parameters": [
                        limit if p["name"] == "limit" else p
                        for p in openapi["paths"]["/v1/banks/{bank_id}/memories"]["get"]["parameters"]
                    ],
                },
            },
        },
    }
    assert bounds_problems(narrower, mcp_tools) == [
        "list.limit: REST bounds {'minimum': 1, 'maximum': 1000}, declared {'minimum': 1, 'maximum': 10000}"
    ]

    parser = build_parser()
    recall_cmd = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["recall"]
    recall_cmd._actions = [a for a in recall_cmd._actions if a.dest != "now"]
    assert cli_problems(parser) == ["`memwrap recall` lacks now"]


# --- old names keep working, with a warning -------------------------------------------------------------------


def test_renamed_parameters_still_work_with_a_deprecation_warning(memory: Memory) -> None:
    memory.retain("drift-old-names", "Alice keeps bees on the roof.")
    with pytest.warns(DeprecationWarning, match="`max_tokens` is now `token_budget`"):
        recall = memory.recall("drift-old-names", "Who keeps bees?", max_tokens=200)
    assert recall.token_budget == 200 and "bees" in recall.context
    with pytest.warns(DeprecationWarning, match="Recall.max_tokens is now token_budget"):
        assert recall.max_tokens == 200
    with pytest.warns(DeprecationWarning, match="configure_bank"):
        memory.set_raw_ttl("drift-old-names", 30)
    assert memory.bank_config("drift-old-names")["raw_ttl_days"] == 30
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new names warn about nothing
        memory.recall("drift-old-names", "Who keeps bees?", token_budget=200)


def test_bad_arguments_are_named_in_the_error(memory: Memory) -> None:
    from memwrap.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match=r"Unknown job status 'later'"):
        memory.jobs("drift-old-names", status="later")  # type: ignore[arg-type]  # an unknown status, on purpose
    with pytest.raises(TypeError, match=r"recall\(\): .*unexpected keyword argument 'budget'"):
        memory.recall("drift-old-names", "q", budget=5)  # type: ignore[call-arg]  # the old name, on purpose
