"""`AsyncMemory`: the one implementation of the public API (re-exported by memwrap.api).

It drives the engine in this process (memwrap/engine), or a `memwrap serve` sidecar over HTTP when given `url=`
(memwrap/client/http.py). The synchronous `Memory` (memwrap/sync_api.py) runs it on a private loop thread.
"""

from __future__ import annotations

import asyncio
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memwrap import lifecycle
from memwrap.async_verbs import AsyncVerbs
from memwrap.config import Settings, load_settings
from memwrap.engine.startup import open_engine
from memwrap.engine_verbs import EngineVerbs
from memwrap.errors import ClosedError
from memwrap.instrumented_verbs import InstrumentedEngine
from memwrap.verbs import ItemLike

if TYPE_CHECKING:
    from memwrap.engine.engine import Engine

__all__ = ["AsyncMemory", "ItemLike"]


class AsyncMemory(AsyncVerbs):
    """Long-term memory, async. The engine (database, embedding model) starts on first use.

    Its verbs are declared in memwrap/verbs.py (`MemoryVerbs`), their bodies generated into memwrap/async_verbs.py
    (`AsyncVerbs`: each calls the engine's verb of the same name); this class adds how the engine is reached (an
    `Engine` in this process, or a `memwrap serve` sidecar through an `HttpEngine` with `url=`: both are
    `EngineVerbs`) and its life cycle."""

    def __init__(
        self,
        *,
        home: str | Path | None = None,
        database_url: str | None = None,
        embedding_model: str | None = None,
        settings: Settings | None = None,
        url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        engine: EngineVerbs | None = None,
    ) -> None:
        self.settings = settings or load_settings(home=home, database_url=database_url, embedding_model=embedding_model)
        # With `url`, the engine is a `memwrap serve` sidecar reached over HTTP (memwrap/client/http.py).
        self.url = url
        self._api_key = api_key
        self._timeout = timeout
        self._engine: EngineVerbs | None = None
        # An engine given (e.g. memwrap.testing's TestEngine): used instead of opening one.
        self._given_engine = engine
        self._llm: Any = None  # set by use_llm before the engine starts; applied when it does
        self._open_lock: asyncio.Lock | None = None
        self._starting: asyncio.Future[Any] | None = None
        self._pid = os.getpid()
        self._closed = False

    def _own_process(self) -> None:
        """After a fork, the engine (its pool, its event loop) is the parent's: leave it to the parent."""
        if self._pid != os.getpid():
            lifecycle.keep_inherited(self._engine, self._open_lock, self._starting)
            self._engine = self._open_lock = self._starting = None
            self._pid = os.getpid()

    async def _get_engine(self) -> EngineVerbs:
        if self._closed:
            raise ClosedError("This memory was closed; create a new Memory()/AsyncMemory() to keep going.")
        self._own_process()
        if self._engine is not None:
            return self._engine
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._engine is None and self._given_engine is not None:
                use_llm = getattr(self._given_engine, "use_llm", None)
                if self._llm is not None and use_llm is not None:
                    use_llm(self._llm)
                self._engine = InstrumentedEngine(self._given_engine)
            elif self._engine is None and self.url is not None:
                from memwrap.client.http import DEFAULT_TIMEOUT, HttpEngine

                self._engine = HttpEngine(self.url, api_key=self._api_key, timeout=self._timeout or DEFAULT_TIMEOUT)
            elif self._engine is None:
                engine = await open_engine(self.settings)  # its parts load while its modules import
                if self._closed:  # closed while it was starting: nobody will close it later
                    await engine.close()
                    raise ClosedError("This memory was closed while its engine was starting.")
                if self._llm is not None:
                    engine.use_llm(self._llm)
                self._engine = InstrumentedEngine(engine)  # the verbs' spans (memwrap/instrumented_verbs.py)
        assert self._engine is not None  # opened above (or the open raised)
        return self._engine

    def start(self) -> asyncio.Future[Any]:
        """Start the engine in the background on the running event loop and return at once.

        Calls made meanwhile wait for it (the wrappers up to MEMWRAP_STARTUP_TIMEOUT). Returns the start's
        future (awaiting it is optional); after a failed start, the next `start()` tries again.
        """
        if self._closed:
            raise ClosedError("This memory was closed; create a new Memory()/AsyncMemory() to keep going.")
        self._own_process()
        starting = self._starting
        if starting is None or (starting.done() and (starting.cancelled() or starting.exception() is not None)):
            starting = self._starting = asyncio.ensure_future(self._get_engine())
            starting.add_done_callback(_quiet)
        return starting

    @property
    def started(self) -> bool:
        """True once the engine is up in this process (database reachable, model loaded)."""
        return self._engine is not None and self._pid == os.getpid()

    def use_llm(self, llm: Any) -> None:
        """The LLM the engine uses for its own work (extraction, consolidation, reflect), instead of MEMWRAP_LLM_*.

        E.g. `memory.use_llm(llm_from_client(openai_client, "gpt-4o-mini"))` (memwrap.engine.llm.clients) reuses an
        app's client; `wrap_openai(client, llm="gpt-4o-mini")` does this for you. Applied when the engine starts.
        """
        if self.url is not None:
            raise TypeError("use_llm applies to an embedded engine; configure a sidecar's LLM with MEMWRAP_LLM_*.")
        self._llm = llm
        if self._engine is not None:
            cast("Engine", self._engine).use_llm(llm)  # url is None: the engine is embedded

    def llm_configured(self, role: str = "reflect") -> bool | None:
        """Whether the engine has an LLM for `role` (reflect, extraction, consolidation): the started engine's,
        else what it will start with (`use_llm`, MEMWRAP_LLM_* and the role's own settings). None for a sidecar:
        its LLM is configured where it runs."""
        if self.url is not None:
            return None
        llm = getattr(self._engine, "llm", None)
        if llm is not None:
            return bool(llm.configured(role))
        if self._llm is not None:
            return True
        provider = getattr(self.settings, f"{role}_provider", None) or self.settings.llm_provider
        return provider != "none"

    @property
    def closed(self) -> bool:
        return self._closed

    async def warmup(self) -> None:
        """Start the engine now (database, embedding model) instead of on first use."""
        await self._get_engine()

    # The verbs (retain, recall, reflect, list, ...) are declared in memwrap/verbs.py, inherited from MemoryVerbs.

    async def set_raw_ttl(self, bank_id: str, days: float | None) -> None:
        """Deprecated: `configure_bank(bank_id, raw_ttl_days=days)`."""
        warnings.warn(
            "set_raw_ttl(bank_id, days) is now configure_bank(bank_id, raw_ttl_days=days).",
            DeprecationWarning,
            stacklevel=2,
        )
        await self.configure_bank(bank_id, raw_ttl_days=days)

    async def reembed(self, *, batch_size: int = 256) -> int:
        """Re-embed every memory with the configured embedding model. Returns how many were re-embedded."""
        if self._engine is None and self.url is not None:
            await self._get_engine()  # the sidecar's transport says where reembed runs
        if getattr(self._engine, "kept_model", None):  # opened on a former default: reopen for the default
            engine, self._engine = self._engine, None
            await engine.close()  # type: ignore[union-attr]  # an Engine: only it keeps a model
        if self._engine is None:
            self._engine = InstrumentedEngine(await open_engine(self.settings, allow_model_change=True))
        return await self._engine.reembed(batch_size=batch_size)

    async def close(self) -> None:
        """Close the engine (after the wrappers delivered what they queued for this memory, see lifecycle)."""
        if self._closed:
            return
        await asyncio.to_thread(lifecycle.memory_closing, self)
        self._closed = True
        self._own_process()
        if self._engine is not None:
            engine, self._engine = self._engine, None
            await engine.close()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _quiet(future: asyncio.Future[Any]) -> None:
    """A background start's error is reported by the call that waits for it (or the next start), not here."""
    if not future.cancelled():
        future.exception()
