"""The sidecar transport: the engine's verbs over HTTP (httpx), spoken to a `memwrap serve` process.

`AsyncMemory(url=...)` uses `HttpEngine` where it would otherwise open an in-process `Engine`, so the public
surface (and `Memory`, its sync twin on a loop thread) is the same whichever way the engine is reached.
Errors come back as JSON `{"error": {"code", "message"}}`; the code is turned back into the memwrap exception
of that code, so `except MemoryNotFoundError` works the same over HTTP. An unreachable server is a
`StoreError` (the wrappers' spool treats it as "engine down, retry later").
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from memwrap import errors
from memwrap.engine import validate
from memwrap.models import BankInfo, MemoryRecord, Recall, RetainItem

DEFAULT_TIMEOUT = 30.0
BATCH = 500  # items per retain request
API_KEY_ENV = "MEMWRAP_API_KEY"

# What `Memory(url=...)` cannot do, and why: every other public verb and parameter of AsyncMemory travels over
# HTTP (tests/test_http_parity.py checks it against the server's OpenAPI document).
LOCAL_ONLY: dict[str, str] = {
    "warmup": "starts an in-process engine; over HTTP there is none to start (the server warmed up at its start)",
    "use_llm": "the engine's LLM is the server's: configure it there with MEMWRAP_LLM_*",
    "export": "writes Markdown files where the database is: run `memwrap export` on the server side",
    "reembed": "rewrites every vector where the database is: run `memwrap reembed` on the server side",
    "jobs(bank_id=None)": "the queue of every bank at once; over HTTP jobs are listed per bank",
    "wait_for_jobs(bank_id=None)": "waits for every bank at once; over HTTP it waits for one bank",
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
    raise HttpError(message, status=response.status_code, code=code)


def _bank(bank_id: str) -> str:
    return quote(validate.bank_id(bank_id), safe="")


class HttpEngine:
    """The engine's verbs, each one request to the sidecar. One httpx connection pool, bound to one loop."""

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

    async def retain_many(self, bank_id: str, items: Sequence[RetainItem | Mapping[str, Any] | str]) -> list[UUID]:
        # Checked here too: bad input fails before the network, with the embedded engine's messages.
        checked = validate.retain_items(items)
        if not checked:
            return []
        ids: list[UUID] = []
        # The server takes up to 1,000 items a request; each batch is committed before the next is sent.
        for start in range(0, len(checked), BATCH):
            body = {"items": [item.model_dump(mode="json") for item in checked[start : start + BATCH]]}
            response = await self._request("POST", f"/v1/banks/{_bank(bank_id)}/memories/batch", json=body)
            ids += [UUID(i) for i in response.json()["ids"]]
        return ids

    async def recall(
        self,
        bank_id: str,
        query: str,
        *,
        max_tokens: int = 1024,
        now: datetime | None = None,
        types: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        model: str | None = None,
        neighbours: bool | None = None,
        prefer_observations: bool | None = None,
        explain: bool = False,
    ) -> Recall:
        body: dict[str, Any] = {"query": query, "max_tokens": max_tokens}
        if explain:
            body["explain"] = True
        if now is not None:
            body["now"] = validate.timestamp(now).isoformat()  # type: ignore[union-attr]
        for key, value in (("types", types), ("tags", tags)):
            if value is not None:
                body[key] = [value] if isinstance(value, str) else list(value)
        if model is not None:
            body["model"] = model
        for key, flag in (("neighbours", neighbours), ("prefer_observations", prefer_observations)):
            if flag is not None:
                body[key] = flag
        response = await self._request("POST", f"/v1/banks/{_bank(bank_id)}/recall", json=body)
        return Recall.model_validate(response.json())

    async def reflect(self, bank_id: str, query: str, **options: Any) -> Any:
        """POST /reflect. A pydantic `response_schema` travels as its JSON schema; `structured` comes back as it."""
        from pydantic import BaseModel

        from memwrap.models import ReflectResult

        schema = options.get("response_schema")
        model = schema if isinstance(schema, type) and issubclass(schema, BaseModel) else None
        body: dict[str, Any] = {"query": query}
        for key, value in options.items():
            if value is None:
                continue
            if key == "response_schema" and model is not None:
                value = model.model_json_schema()
            elif key == "disposition" and isinstance(value, BaseModel):
                value = value.model_dump(include=value.model_fields_set)
            elif key == "now":
                value = validate.timestamp(value).isoformat()  # type: ignore[union-attr]
            elif key == "tags" and isinstance(value, str):
                value = [value]
            body[key] = value
        # A reflect is several LLM calls: wait for its own time limit (the server's default 120 s) plus the synthesis.
        wait = max(self._client.timeout.read or DEFAULT_TIMEOUT, float(options.get("timeout") or 120.0) + 60.0)
        response = await self._request("POST", f"/v1/banks/{_bank(bank_id)}/reflect", json=body, timeout=wait)
        result = ReflectResult.model_validate(response.json())
        if model is not None and result.structured is not None:
            result.structured = model.model_validate(result.structured)
        return result

    async def list(
        self,
        bank_id: str,
        *,
        limit: int = 100,
        offset: int = 0,
        types: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        document_id: str | None = None,
    ) -> list[MemoryRecord]:
        params: list[tuple[str, str | int]] = [("limit", limit), ("offset", offset)]
        params += [("type", t) for t in ([types] if isinstance(types, str) else types or [])]
        params += [("tag", t) for t in ([tags] if isinstance(tags, str) else tags or [])]
        if document_id is not None:
            params.append(("document_id", document_id))
        response = await self._request("GET", f"/v1/banks/{_bank(bank_id)}/memories", params=params)
        return [MemoryRecord.model_validate(r) for r in response.json()["items"]]

    async def get(self, bank_id: str, memory_id: UUID | str) -> MemoryRecord:
        memory = validate.memory_id(memory_id)
        response = await self._request("GET", f"/v1/banks/{_bank(bank_id)}/memories/{memory}")
        return MemoryRecord.model_validate(response.json())

    async def delete(self, bank_id: str, memory_id: UUID | str) -> None:
        memory = validate.memory_id(memory_id)
        await self._request("DELETE", f"/v1/banks/{_bank(bank_id)}/memories/{memory}")

    async def delete_bank(self, bank_id: str) -> int:
        response = await self._request("DELETE", f"/v1/banks/{_bank(bank_id)}")
        return int(response.json()["deleted"])

    async def banks(self) -> list[BankInfo]:
        response = await self._request("GET", "/v1/banks")
        return [BankInfo.model_validate(b) for b in response.json()]

    async def bank_config(self, bank_id: str) -> dict[str, Any]:
        response = await self._request("GET", f"/v1/banks/{_bank(bank_id)}")
        return dict(response.json().get("config") or {})

    async def create_bank(self, bank_id: str, settings: Mapping[str, Any]) -> dict[str, Any]:
        clean = {k: v for k, v in validate.bank_config(settings).items() if v is not None}
        response = await self._request("POST", "/v1/banks", json={"bank_id": _bank(bank_id), **clean})
        return dict(response.json().get("config") or {})

    async def configure_bank(self, bank_id: str, changes: Mapping[str, Any]) -> dict[str, Any]:
        clean = validate.bank_config(changes)
        response = await self._request("PATCH", f"/v1/banks/{_bank(bank_id)}", json=clean)
        return dict(response.json().get("config") or {})

    # -- learning (memwrap/engine/learn): the same verbs, one request each ------------------------------------

    async def jobs(
        self, bank_id: str | None = None, status: str | None = None, *, kind: str | None = None, limit: int = 100
    ) -> list[Any]:
        from memwrap.models import Job

        if bank_id is None:
            raise errors.InvalidInputError("Over HTTP, jobs are listed per bank: pass bank_id.")
        params = {k: v for k, v in {"status": status, "kind": kind, "limit": limit}.items() if v is not None}
        response = await self._request("GET", f"/v1/banks/{_bank(bank_id)}/jobs", params=params)
        return [Job.model_validate(j) for j in response.json()]

    async def wait_for_jobs(self, bank_id: str | None = None, *, timeout: float = 60.0) -> bool:
        import asyncio
        import time

        deadline = time.monotonic() + timeout
        while True:
            busy = [j for status in ("queued", "running") for j in await self.jobs(bank_id, status, limit=1)]
            if not busy:
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.2)

    async def consolidate(self, bank_id: str) -> Any:
        from memwrap.models import ConsolidationReport

        response = await self._request("POST", f"/v1/banks/{_bank(bank_id)}/consolidate")
        return ConsolidationReport.model_validate(response.json())

    async def observations(
        self, bank_id: str, *, tags: Sequence[str] | None = None, include_invalidated: bool = False,
        limit: int = 100, offset: int = 0, now: datetime | None = None,
    ) -> list[Any]:
        from memwrap.models import Observation

        params: list[tuple[str, str | int]] = [("limit", limit), ("offset", offset),
                                                 ("include_invalidated", str(include_invalidated).lower())]
        params += [("tag", t) for t in ([tags] if isinstance(tags, str) else tags or [])]
        if now is not None:
            params.append(("now", validate.timestamp(now).isoformat()))  # type: ignore[union-attr]
        response = await self._request("GET", f"/v1/banks/{_bank(bank_id)}/observations", params=params)
        return [Observation.model_validate(o) for o in response.json()]

    async def get_observation(self, bank_id: str, observation_id: UUID | str, *, now: datetime | None = None) -> Any:
        from memwrap.models import Observation

        oid = validate.memory_id(observation_id)
        params = {"now": validate.timestamp(now, what="now").isoformat()} if now is not None else None  # type: ignore[union-attr]
        response = await self._request("GET", f"/v1/banks/{_bank(bank_id)}/observations/{oid}", params=params)
        return Observation.model_validate(response.json())

    async def observation_history(self, bank_id: str, observation_id: UUID | str) -> list[Any]:
        from memwrap.models import ObservationVersion

        oid = validate.memory_id(observation_id)
        response = await self._request("GET", f"/v1/banks/{_bank(bank_id)}/observations/{oid}/history")
        return [ObservationVersion.model_validate(v) for v in response.json()]

    async def create_mental_model(
        self, bank_id: str, name: str, question: str, *, tags: Sequence[str] | None = None, max_tokens: int = 512,
        refresh_every: float | None = None,
    ) -> Any:
        from memwrap.models import MentalModel

        body = {"name": name, "question": question, "tags": list(tags) if tags is not None else None,
                "max_tokens": max_tokens, "refresh_every": refresh_every}
        response = await self._request("POST", f"/v1/banks/{_bank(bank_id)}/mental-models", json=body)
        return MentalModel.model_validate(response.json())

    def _model_path(self, bank_id: str, name: str) -> str:
        return f"/v1/banks/{_bank(bank_id)}/mental-models/{quote(name, safe='')}"

    async def get_mental_model(self, bank_id: str, name: str) -> Any:
        from memwrap.models import MentalModel

        return MentalModel.model_validate((await self._request("GET", self._model_path(bank_id, name))).json())

    async def mental_models(self, bank_id: str) -> list[Any]:
        from memwrap.models import MentalModel

        response = await self._request("GET", f"/v1/banks/{_bank(bank_id)}/mental-models")
        return [MentalModel.model_validate(m) for m in response.json()]

    async def mental_model_history(self, bank_id: str, name: str) -> list[Any]:
        from memwrap.models import MentalModelVersion

        response = await self._request("GET", self._model_path(bank_id, name) + "/history")
        return [MentalModelVersion.model_validate(v) for v in response.json()]

    async def refresh_mental_model(self, bank_id: str, name: str) -> Any:
        from memwrap.models import MentalModel

        response = await self._request("POST", self._model_path(bank_id, name) + "/refresh")
        return MentalModel.model_validate(response.json())

    async def delete_mental_model(self, bank_id: str, name: str) -> None:
        await self._request("DELETE", self._model_path(bank_id, name))

    async def invalidate(self, bank_id: str, memory_id: UUID | str, reason: str = "") -> None:
        memory = validate.memory_id(memory_id)
        await self._request("POST", f"/v1/banks/{_bank(bank_id)}/memories/{memory}/invalidate", json={"reason": reason})

    async def restore(self, bank_id: str, memory_id: UUID | str) -> None:
        memory = validate.memory_id(memory_id)
        await self._request("POST", f"/v1/banks/{_bank(bank_id)}/memories/{memory}/restore")

    async def set_raw_ttl(self, bank_id: str, days: float | None) -> None:
        await self._request("PATCH", f"/v1/banks/{_bank(bank_id)}", json={"raw_ttl_days": days})

    async def export(self, directory: Any, *, bank_id: str | None = None) -> list[Any]:
        raise errors.MemwrapError(f"Not over HTTP: export {LOCAL_ONLY['export']}.")

    async def reembed(self, *, batch_size: int = 256) -> int:
        raise errors.MemwrapError(f"Not over HTTP: reembed {LOCAL_ONLY['reembed']}.")

    async def close(self) -> None:
        await self._client.aclose()


# -- `memory="http://..."` in the wrappers: one Memory per URL per process, so their backends are shared ----------

_by_url: dict[tuple[str, str | None], Any] = {}
_by_url_lock = threading.Lock()


def memory_for_url(url: str, *, api_key: str | None = None) -> Any:
    """The process's `Memory(url=url)` (created on first use); what the wrappers use for `memory="http://..."`."""
    from memwrap.api import Memory

    key = (url.rstrip("/"), api_key)
    with _by_url_lock:
        memory = _by_url.get(key)
        if memory is None or getattr(memory, "_closed", False):
            memory = _by_url[key] = Memory(url=url, api_key=api_key)
        return memory


def is_url(value: object) -> bool:
    return isinstance(value, str) and value.startswith(("http://", "https://"))
