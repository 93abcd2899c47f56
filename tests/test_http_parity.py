"""`Memory(url=...)` is the embedded surface: every public verb and parameter of AsyncMemory exists over HTTP
(a route in the server's OpenAPI document that carries each parameter, and an HttpEngine method that takes it),
or is listed in memwrap.client.http.LOCAL_ONLY with the reason. A verb renamed or added on one side only fails
here, instead of silently losing its route.

No server process is needed: the OpenAPI document is the app's own (create_app() builds it without starting).
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from memwrap import AsyncMemory, Memory
from memwrap.client.http import LOCAL_ONLY, HttpEngine
from memwrap.engine.validate import BANK_CONFIG_KEYS
from memwrap_server.app import create_app

# Where each verb lives over HTTP, and the REST names of parameters that are spelt differently there
# (query strings take one value per repeat: `type=raw&type=world`).
ROUTES: dict[str, tuple[str, str, dict[str, str]]] = {
    "retain": ("post", "/v1/banks/{bank_id}/memories", {}),
    "retain_many": ("post", "/v1/banks/{bank_id}/memories/batch", {}),
    "recall": ("post", "/v1/banks/{bank_id}/recall", {}),
    "reflect": ("post", "/v1/banks/{bank_id}/reflect", {}),
    "list": ("get", "/v1/banks/{bank_id}/memories", {"types": "type", "tags": "tag"}),
    "get": ("get", "/v1/banks/{bank_id}/memories/{memory_id}", {}),
    "delete": ("delete", "/v1/banks/{bank_id}/memories/{memory_id}", {}),
    "delete_bank": ("delete", "/v1/banks/{bank_id}", {}),
    "banks": ("get", "/v1/banks", {}),
    "bank_config": ("get", "/v1/banks/{bank_id}", {}),
    "create_bank": ("post", "/v1/banks", {}),
    "configure_bank": ("patch", "/v1/banks/{bank_id}", {}),
    "jobs": ("get", "/v1/banks/{bank_id}/jobs", {}),
    "wait_for_jobs": ("get", "/v1/banks/{bank_id}/jobs", {"timeout": ""}),  # polls; the timeout is the client's
    "consolidate": ("post", "/v1/banks/{bank_id}/consolidate", {}),
    "observations": ("get", "/v1/banks/{bank_id}/observations", {"tags": "tag"}),
    "get_observation": ("get", "/v1/banks/{bank_id}/observations/{observation_id}", {}),
    "observation_history": ("get", "/v1/banks/{bank_id}/observations/{observation_id}/history", {}),
    "create_mental_model": ("post", "/v1/banks/{bank_id}/mental-models", {}),
    "get_mental_model": ("get", "/v1/banks/{bank_id}/mental-models/{name}", {}),
    "mental_models": ("get", "/v1/banks/{bank_id}/mental-models", {}),
    "mental_model_history": ("get", "/v1/banks/{bank_id}/mental-models/{name}/history", {}),
    "refresh_mental_model": ("post", "/v1/banks/{bank_id}/mental-models/{name}/refresh", {}),
    "delete_mental_model": ("delete", "/v1/banks/{bank_id}/mental-models/{name}", {}),
    "invalidate": ("post", "/v1/banks/{bank_id}/memories/{memory_id}/invalidate", {}),
    "restore": ("post", "/v1/banks/{bank_id}/memories/{memory_id}/restore", {}),
    "set_raw_ttl": ("patch", "/v1/banks/{bank_id}", {"days": "raw_ttl_days"}),
}
LIFECYCLE = {"close"}  # of the client object itself, on both sides


def _public_verbs() -> dict[str, inspect.Signature]:
    verbs = {}
    for name, member in inspect.getmembers(AsyncMemory):
        if name.startswith("_") or isinstance(inspect.getattr_static(AsyncMemory, name), property):
            continue
        if callable(member):
            verbs[name] = inspect.signature(member)
    return verbs


def _parameters(signature: inspect.Signature) -> list[inspect.Parameter]:
    return [p for p in signature.parameters.values() if p.name != "self"]


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return create_app().openapi()


def _resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    for variant in schema.get("anyOf", []):  # an optional body: the object among the variants
        if "$ref" in variant or variant.get("type") == "object":
            return _resolve(spec, variant)
    return schema


def _operation_fields(spec: dict[str, Any], method: str, path: str) -> set[str]:
    operation = spec["paths"][path][method]
    names = {p["name"] for p in operation.get("parameters", [])}
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body:
        names |= set(_resolve(spec, body).get("properties", {}))
    return names


def test_every_verb_is_over_http_or_documented_local_only() -> None:
    documented = {key.split("(")[0] for key in LOCAL_ONLY if "(" not in key}
    missing = sorted(set(_public_verbs()) - set(ROUTES) - documented - LIFECYCLE)
    assert not missing, f"verbs with no HTTP route and not in LOCAL_ONLY: {missing}"
    stale = sorted(set(ROUTES) - set(_public_verbs()))
    assert not stale, f"routes for verbs AsyncMemory no longer has: {stale}"


@pytest.mark.parametrize("verb", sorted(ROUTES))
def test_every_parameter_travels(openapi: dict[str, Any], verb: str) -> None:
    method, path, renamed = ROUTES[verb]
    assert path in openapi["paths"] and method in openapi["paths"][path], f"{verb}: no {method.upper()} {path}"
    fields = _operation_fields(openapi, method, path)
    signature = _public_verbs()[verb]
    for parameter in _parameters(signature):
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:  # create_bank(**settings), configure_bank(**changes)
            expected = set(BANK_CONFIG_KEYS) | {"disposition"}
            assert expected <= fields, f"{verb}: bank settings {sorted(expected - fields)} missing over HTTP"
            continue
        if parameter.name == "items":  # retain_many: the batch body holds the items
            assert "items" in fields
            continue
        name = renamed.get(parameter.name, parameter.name)
        if name == "":
            continue  # the client's own (wait_for_jobs' timeout)
        assert name in fields, f"{verb}({parameter.name}=...) has no {name!r} in {method.upper()} {path}: {sorted(fields)}"


def test_retain_fields_travel(openapi: dict[str, Any]) -> None:
    # retain's keyword arguments are the fields of one item; retain_many sends RetainItems in `items`.
    fields = _operation_fields(openapi, "post", "/v1/banks/{bank_id}/memories")
    assert {"content", "timestamp", "context", "document_id", "metadata", "tags"} <= fields


@pytest.mark.parametrize("verb", sorted(set(ROUTES) | {"export", "reembed"}))
def test_http_client_takes_the_same_parameters(verb: str) -> None:
    ours = _public_verbs()[verb]
    http = getattr(HttpEngine, verb if verb != "retain" else "retain_many", None)
    assert http is not None, f"HttpEngine has no {verb}"
    if verb == "retain":  # AsyncMemory.retain builds one item and calls retain_many
        return
    taken = {p.name for p in _parameters(inspect.signature(http))}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in _parameters(inspect.signature(http))):
        return  # reflect(**options): each option travels as a body field (test_every_parameter_travels)
    wanted = {p.name for p in _parameters(ours) if p.kind is not inspect.Parameter.VAR_KEYWORD}
    wanted |= {p.name for p in _parameters(ours) if p.kind is inspect.Parameter.VAR_KEYWORD}
    assert wanted <= taken, f"HttpEngine.{verb} lacks {sorted(wanted - taken)}"


def test_sync_memory_has_every_verb_too() -> None:
    for verb in _public_verbs():
        assert hasattr(Memory, verb), f"Memory lacks {verb}"
