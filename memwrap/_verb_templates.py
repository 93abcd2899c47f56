"""The templates of the files `python -m memwrap._generate_verbs` writes (memwrap/_generate_verbs.py fills
them: `{notice}`, the standard-library imports `{stdlib}`, the declaration's names `{imports}`, the methods
`{body}`)."""

ENGINE_VERBS = '''\
"""`EngineVerbs`: the engine's face, what `AsyncMemory` calls. The embedded `Engine` (memwrap/engine/engine.py)
and the HTTP client `HttpEngine` (memwrap/client/http.py) both satisfy it: a type checker holds them to it
(tests/typing_engine_face.py), tests/test_verb_drift.py compares their signatures with the declaration.

{notice}
"""

from __future__ import annotations

{stdlib}from collections.abc import Awaitable
from typing import Any, Protocol

{imports}


class EngineVerbs(Protocol):
    """Every declared verb, as the engine takes it, and the engine's end."""

    def close(self) -> Awaitable[None]:
        ...

{body}
'''


ASYNC_VERBS = '''\
"""`AsyncMemory`'s verbs (memwrap/async_api.py): each calls the engine's method of the same name with every
parameter, by name where the declaration takes it by name; the engine checks the values.

{notice}
"""

from __future__ import annotations

{stdlib}from typing import Any

from memwrap.declare import renamed_values
from memwrap.engine_verbs import EngineVerbs
{imports}


class AsyncVerbs(MemoryVerbs):
    """Every declared verb but those written by hand (`custom=True`), handed to the engine."""

    async def _get_engine(self) -> EngineVerbs:
        """The engine the verbs call: `AsyncMemory` (memwrap/async_api.py) opens it or connects to it."""
        raise NotImplementedError

{body}
'''


HTTP_SECTION = '''\
"""`HttpEngine`'s requests, each built by `HttpEngine.call` from the verb's route, for the verbs of
memwrap/verbs.py's section "{title}".

{notice}
"""

from __future__ import annotations

{stdlib}from typing import Any

from memwrap.client.http_verbs.requests import VerbRequests
{imports}


class {name}(VerbRequests):
    """The verbs of "{title}", as requests to a `memwrap serve` sidecar."""

{body}
'''


HTTP_REQUESTS = '''\
"""What every generated request method calls: `HttpEngine.call` (memwrap/client/http.py).

{notice}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memwrap.declare import Verb


class VerbRequests:
    async def call(self, verb: Verb, arguments: Mapping[str, Any], **request: Any) -> Any:
        raise NotImplementedError
'''


HTTP_VERBS = '''\
"""`HttpEngine`'s verbs (memwrap/client/http.py): each one request, built by `HttpEngine.call` from the verb's
route, in a module per section of memwrap/verbs.py; the verbs whose transport differs (batches, reflect's schema,
files, composed verbs) are written in http.py.

{notice}
"""

{imports}


class HttpVerbs(
{bases}
):
    """Every declared verb, as one request to a `memwrap serve` sidecar."""


__all__ = ["HttpVerbs"]
'''


SYNC_VERBS = '''\
"""The synchronous twins of the verbs declared in memwrap/verbs.py, inherited by `Memory` (memwrap/sync_api.py).

{notice}
"""

from __future__ import annotations

{stdlib}from collections.abc import Coroutine
from typing import Any, TypeVar

from memwrap.async_api import AsyncMemory
{imports}

T = TypeVar("T")


class SyncVerbs:
    """Every declared verb, run to completion on the memory's loop thread."""

    _async: AsyncMemory

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        raise NotImplementedError

{body}
'''


INSTRUMENTED = '''\
"""`InstrumentedEngine`: any `EngineVerbs` (the embedded `Engine`, a test double) with the spans of the verbs
declared with `span=(step, operation)` (`tracing.verb_span`: retain, update, invalidate, delete); the other verbs
are the inner engine's, unchanged, and so is every attribute that is not a verb (`store`, `settings`, `use_llm`).
AsyncMemory wraps the engine it opens in one (memwrap/async_api.py); the inner steps (recall's arms, extraction,
consolidation) trace themselves inside.

{notice}
"""

from __future__ import annotations

{stdlib}from typing import Any

from memwrap import tracing
from memwrap.engine_verbs import EngineVerbs
{imports}


class InstrumentedEngine:
    """An engine's verbs, traced as declared."""

    def __init__(self, inner: EngineVerbs) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # not a verb: the inner engine's (its store, settings, use_llm, ...)

    async def close(self) -> None:
        await self.inner.close()

{body}
'''


RECORDED = '''\
"""`RecordedVerbs`: every verb of the engine's face, each call appended to `calls` as (verb name, arguments by
name) and then answered by `answer(verb, arguments)`: the recording half of memwrap.testing's `TestEngine`
(memwrap/testing/engine.py answers).

{notice}
"""

from __future__ import annotations

{stdlib}from typing import Any

{imports}


class RecordedVerbs:
    """Every declared verb, recorded in `calls`, then answered."""

    def __init__(self) -> None:
        self.calls: builtins.list[tuple[str, dict[str, Any]]] = []

    async def answer(self, verb: str, arguments: dict[str, Any]) -> Any:
        raise NotImplementedError(f"{{type(self).__name__}} does not answer {{verb}}.")

    async def close(self) -> None:
        self.calls.append(("close", {{}}))

{body}
'''
