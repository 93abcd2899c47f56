"""The sidecar transport: the engine's verbs over HTTP (httpx), spoken to a `memwrap serve` process.

`AsyncMemory(url=...)` uses `HttpEngine` where it would otherwise open an in-process `Engine`, so the public
surface (and `Memory`, its sync twin on a loop thread) is the same whichever way the engine is reached.
Errors come back as JSON `{"error": {"code", "message"}}`; the code is turned back into the memwrap exception
of that code, so `except MemoryNotFoundError` works the same over HTTP. An unreachable server is a
`StoreError` (the wrappers' spool treats it as "engine down, retry later").
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx
from pydantic import BaseModel, TypeAdapter

from memwrap import errors, validate
from memwrap.client.http_verbs import HttpVerbs
from memwrap.declare import Verb
from memwrap.models import ImportReport, ReflectResult
from memwrap.verbs import VERBS, Disposition, Items, Tags

DEFAULT_TIMEOUT = 30.0
BATCH = 500  # items per retain request
API_KEY_ENV = "MEMWRAP_API_KEY"

# What `Memory(url=...)` cannot do, and why: every other public verb and parameter of AsyncMemory travels over
# HTTP (tests/test_verb_drift.py checks it against the server's OpenAPI document).
LOCAL_ONLY: dict[str, str] = {
    "warmup": "starts an in-process engine; over HTTP there is none to start (the server warmed up at its start)",
    "use_llm": "the engine's LLM is the server's: configure it there with MEMWRAP_LLM_*",
    **{v.name: v.local_only for v in VERBS.values() if v.local_only},
    **{f"{v.name}(bank_id=None)": v.optional_bank for v in VERBS.values() if v.optional_bank},
}


def _error_classes() -> dict[str, type[errors.MemwrapError]]:
    found: dict[str, type[errors.MemwrapError]] = {}
    stack: list[type[errors.MemwrapError]] = [errors.MemwrapError]
    while stack:
        cls = stack.pop()
        found.setdefault(cls.code, cls)
        stack.extend(cls.__subclasses__())
    return found


class HttpError(errors.MemwrapError):
    """The server answered with an error memwrap has no exception for (auth, a proxy in between, ...)."""

    code = "http_error"

    def __init__(self, message: str, *, status: int, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        if code:
            self.code = code


class AuthError(HttpError):
    """401 (no or wrong key: set api_key= or MEMWRAP_API_KEY) or 403 (the key may not use this bank)."""


class InvalidRequestError(HttpError, errors.InvalidInputError):
    """400/422 the server's own checks gave (a limit out of range, a malformed body) where the embedded engine
    raises InvalidInputError: catchable as either, so code written against one surface works on the other."""


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    code, message = None, response.text[:500]
    try:
        error = response.json().get("error")
        if isinstance(error, Mapping):
            code, message = error.get("code"), str(error.get("message", message))
    except (ValueError, AttributeError):
        pass
    if response.status_code in (401, 403):
        raise AuthError(message, status=response.status_code, code=code)
    cls = _error_classes().get(str(code)) if code else None
    if cls is not None and cls is not errors.MemwrapError:
        raise cls(message)
    if response.status_code >= 500:
        raise errors.StoreError(f"memwrap server error {response.status_code}: {message}")
    if response.status_code in (400, 422):
        raise InvalidRequestError(message, status=response.status_code, code=code)
    raise HttpError(message, status=response.status_code, code=code)


def _bank(bank_id: str) -> str:
    return quote(validate.bank_id(bank_id), safe="")


class HttpEngine(HttpVerbs):
    """The engine's verbs (`EngineVerbs`), each one request to the sidecar. One httpx connection pool, bound to
    one loop.

    Every verb of memwrap/verbs.py is a method here, generated from its declaration (memwrap/client/http_verbs/)
    onto `call`: path parameters from the route, the rest as a JSON body or a query string, the result parsed into
    the declared type. Written out below are only the verbs whose transport differs: batches, reflect's schema,
    files, and `wait_for_jobs`, which the client composes from `jobs`.
    """

    def __init__(self, url: str, *, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.url = url.rstrip("/")
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.AsyncClient(base_url=self.url, headers=headers, timeout=timeout)

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = await self._client.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise errors.StoreError(f"Could not reach the memwrap server at {self.url}: {exc!r}") from exc
        _raise_for(response)
        return response

    async def call(self, verb: Verb, arguments: Mapping[str, Any], **request: Any) -> Any:
        """One request for one verb: the declaration says where and how; the answer is parsed as declared."""
        if verb.route is None:
            raise errors.MemwrapError(f"Not over HTTP: {verb.name} {verb.local_only or ''}".rstrip() + ".")
        if verb.optional_bank and arguments.get("bank_id") is None:
            raise errors.InvalidInputError(f"{verb.name}: pass bank_id ({verb.optional_bank}).")
        route = verb.route
        path = route.path.format(**{name: _path_value(name, arguments[name]) for name in route.path_params})
        rest = {k: _jsonable(v) for k, v in arguments.items() if k not in route.path_params}
        if route.in_body:
            # A partial verb's None is a value (it resets a setting); elsewhere None means "the server's default".
            request["json"] = {k: v for k, v in rest.items() if v is not None or verb.partial}
        else:
            # A list repeats its name (?tags=a&tags=b); a mapping (filters) travels as JSON.
            request["params"] = [
                (k, json.dumps(item) if isinstance(item, dict) else item)
                for k, v in rest.items()
                if v is not None
                for item in (v if isinstance(v, list) else [v])
            ]
        response = await self._request(route.method, path, **request)
        if route.status == 204 or verb.result is None:
            return None
        data = response.json()
        return _adapter(verb).validate_python(data[route.envelope] if route.envelope else data)

    async def retain_many(self, bank_id: str, items: Items) -> list[UUID]:
        # Checked here too: bad input fails before the network, with the embedded engine's messages (the size
        # of metadata excepted: the server's MEMWRAP_MAX_METADATA_BYTES decides that one).
        checked = validate.retain_items(items, max_metadata_bytes=None)
        ids: list[UUID] = []
        # The server takes up to 1,000 items a request; each batch is committed before the next is sent.
        for start in range(0, len(checked), BATCH):
            batch = [item.model_dump(mode="json") for item in checked[start : start + BATCH]]
            ids += await self.call(VERBS["retain_many"], {"bank_id": bank_id, "items": batch})
        return ids

    async def reflect(
        self,
        bank_id: str,
        query: str,
        *,
        context_budget: int | None = None,
        context: str | None = None,
        response_schema: Any = None,
        tags: Tags = None,
        disposition: Disposition | Mapping[str, Any] | None = None,
        max_iterations: int | None = None,
        timeout: float | None = None,
        now: datetime | None = None,
    ) -> ReflectResult:
        """A pydantic `response_schema` travels as its JSON schema; `structured` comes back validated by it."""
        model = (
            response_schema if isinstance(response_schema, type) and issubclass(response_schema, BaseModel) else None
        )
        arguments = {
            "bank_id": bank_id,
            "query": query,
            "context_budget": context_budget,
            "context": context,
            "response_schema": model.model_json_schema() if model is not None else response_schema,
            "tags": tags,
            "disposition": disposition,
            "max_iterations": max_iterations,
            "timeout": timeout,
            "now": now,
        }
        # A reflect is several LLM calls: wait for its own time limit (the server's default 120 s) plus the synthesis.
        wait = max(self._client.timeout.read or DEFAULT_TIMEOUT, float(timeout or 120.0) + 60.0)
        result: ReflectResult = await self.call(VERBS["reflect"], arguments, timeout=wait)
        if model is not None and result.structured is not None:
            result.structured = model.model_validate(result.structured)
        return result

    async def export_bank(self, bank_id: str, path: str | Path, *, include_embeddings: bool = True) -> int:
        """Streams the server's export into `path` here (a temporary file renamed at the end)."""
        target = Path(path)
        temp = target.with_name(f".{target.name}.{os.getpid()}.part")
        route = f"/v1/banks/{_path_value('bank_id', bank_id)}/export"
        lines = 0
        try:
            async with self._client.stream("GET", route, params={"include_embeddings": include_embeddings}) as response:
                if response.status_code >= 400:
                    await response.aread()
                    _raise_for(response)
                with temp.open("wb") as out:
                    async for chunk in response.aiter_bytes():
                        out.write(chunk)
                        lines += chunk.count(b"\n")
            os.replace(temp, target)
        except httpx.TransportError as exc:
            raise errors.StoreError(f"Could not reach the memwrap server at {self.url}: {exc!r}") from exc
        finally:
            temp.unlink(missing_ok=True)
        return lines

    async def import_bank(self, bank_id: str, path: str | Path) -> ImportReport:
        """Uploads the file at `path` (read here) to the server's import."""
        source = Path(path)
        if not source.is_file():
            raise errors.InvalidInputError(f"No export file at {source}.")
        response = await self._request(
            "POST",
            f"/v1/banks/{_path_value('bank_id', bank_id)}/import",
            content=source.read_bytes(),
            headers={"Content-Type": "application/x-ndjson"},
        )
        return ImportReport.model_validate(response.json())

    async def wait_for_jobs(self, bank_id: str | None = None, *, timeout: float = 60.0) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            busy = [
                j
                for status in ("queued", "running")
                for j in await self.jobs(bank_id=bank_id, status=status, kind=None, limit=1)
            ]
            if not busy:
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.2)

    async def close(self) -> None:
        await self._client.aclose()


_PATH_CHECKS: dict[str, Callable[[Any], Any]] = {
    "bank_id": validate.bank_id,
    "memory_id": validate.memory_id,
    "observation_id": validate.memory_id,
    "entity_id": validate.entity_id,
}


def _path_value(name: str, value: Any) -> str:
    """A path segment, checked like the embedded engine checks it, then quoted (a name may hold '/')."""
    check = _PATH_CHECKS.get(name)
    return quote(str(check(value) if check else value), safe="")


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):  # e.g. a Disposition: only the parts the caller set
        return value.model_dump(mode="json", exclude_unset=True)
    if isinstance(value, str):
        return value
    if isinstance(value, datetime):
        return validate.timestamp(value).isoformat()  # type: ignore[union-attr]  # None only for None
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    return value


_adapters: dict[str, TypeAdapter[Any]] = {}


def _adapter(verb: Verb) -> TypeAdapter[Any]:
    adapter = _adapters.get(verb.name)
    if adapter is None:
        adapter = _adapters[verb.name] = TypeAdapter(verb.result)
    return adapter
