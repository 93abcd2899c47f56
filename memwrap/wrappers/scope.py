"""Per-call options and `memwrap.scope()`, which sets them for a block of code.

Precedence, most specific first: the call's `memwrap={...}` keyword, then the innermost `scope()`, then what
was given to `wrap_openai`/`wrap_anthropic`. A scope lives in a ContextVar: asyncio tasks inherit the scope
they were created in, and each thread starts with none, so concurrent users never see each other's bank.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from memwrap.errors import InvalidInputError

# The options are declared in memwrap/wrappers/options.py; these names are imported from here too.
from memwrap.wrappers.options import (  # noqa: F401 (re-exported)
    OPTION_NAMES,
    RENAMED_OPTIONS,
    TOOL_LOOP_MODES,
    BankId,
    Options,
    ToolLoop,
    as_tags,
    renamed_options,
    takes_given_options,
)

_scope: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "memwrap_scope",
    default=MappingProxyType({}),  # read-only: a shared default must never be mutated
)


def current_scope() -> Mapping[str, Any]:
    return _scope.get()


class scope:  # used like a function: `with memwrap.scope(bank_id="alice"):`
    """Set memory options for every wrapped call made inside the block (sync `with` or `async with`).

        with memwrap.scope(bank_id=user.id, tags=["support"]):
            client.chat.completions.create(...)

    Scopes nest; inner values win; an option not given (or None) is left as it was. Tags given here are used for
    retains and to filter recall; `filters` narrows recall only (the same filter as `recall(filters=...)`:
    metadata, time ranges, documents, sessions). The options are `Options`' (memwrap/wrappers/options.py).
    """

    @takes_given_options(Options)
    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values  # only the options given: the others stay as the enclosing scope (or wrapper) set them
        self._tokens: list[contextvars.Token[Mapping[str, Any]]] = []

    def __enter__(self) -> scope:
        self._tokens.append(_scope.set({**_scope.get(), **self.values}))
        return self

    def __exit__(self, *exc: object) -> None:
        _scope.reset(self._tokens.pop())

    async def __aenter__(self) -> scope:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__()


def resolve(base: Options, per_call: Mapping[str, Any] | None) -> Options:
    """The options for one call: wrap-time `base`, then the active scope, then the call's own."""
    options = base.merged(current_scope())
    if per_call:
        if not isinstance(per_call, Mapping):
            raise InvalidInputError("The memwrap= keyword takes a dict, e.g. memwrap={'bank_id': 'alice'}.")
        options = options.merged(per_call)
    return options
