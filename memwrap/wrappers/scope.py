"""Per-call options and `memwrap.scope()`, which sets them for a block of code.

Precedence, most specific first: the call's `memwrap={...}` keyword, then the innermost `scope()`, then what
was given to `wrap_openai`/`wrap_anthropic`. A scope lives in a ContextVar: asyncio tasks inherit the scope
they were created in, and each thread starts with none, so concurrent users never see each other's bank.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

from memwrap.declare import renamed_arguments
from memwrap.errors import InvalidInputError
from memwrap.filters import RecallFilter, parse_filter

OPTION_NAMES = (
    "bank_id", "inject", "retain", "token_budget", "session_id", "tags", "filters", "recall_timeout", "tool_loop",
    "retain_tools", "retain_assistant",
)
# Old spellings still accepted (with a DeprecationWarning): `max_tokens` sat beside the SDKs' own max_tokens.
RENAMED_OPTIONS = {"max_tokens": "token_budget"}
TOOL_LOOP_MODES = ("turn", "step")

BankId = str | Callable[[], str | None] | None
ToolLoop = Literal["turn", "step"]


@dataclass(frozen=True)
class Options:
    """What one call does with memory."""

    bank_id: BankId = None
    inject: bool = True
    retain: bool = True
    token_budget: int = 1024  # tokens of memory injected per call (recall's token_budget)
    session_id: str | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)
    # Narrows what is injected (recall's `filters`: metadata conditions, time ranges, documents, sessions); checked
    # when the option is given, so a wrong filter is an error at the call, not a silently empty recall.
    filters: RecallFilter | None = None
    recall_timeout: float = 0.2
    # Tool/agent loops (loops.py): "turn" recalls once per user turn and retains the user's message with the
    # final answer; "step" treats every request as its own exchange. `retain_tools` keeps tool calls and results.
    tool_loop: ToolLoop = "turn"
    retain_tools: bool = False
    # The assistant's answers are retained beside the user's words (as memories of their own, which recall ranks
    # below the user's: MEMWRAP_ASSISTANT_WEIGHT); False retains only what the user said.
    retain_assistant: bool = True

    def __post_init__(self) -> None:
        if self.filters is not None and not isinstance(self.filters, RecallFilter):
            object.__setattr__(self, "filters", parse_filter(self.filters))  # frozen: set once, while being built
        if self.tool_loop not in TOOL_LOOP_MODES:
            raise InvalidInputError(f"tool_loop must be one of {TOOL_LOOP_MODES}, not {self.tool_loop!r}.")

    def merged(self, overrides: Mapping[str, Any]) -> Options:
        overrides = renamed_options(overrides)
        unknown = set(overrides) - set(OPTION_NAMES)
        if unknown:
            raise InvalidInputError(
                f"Unknown memwrap option(s) {sorted(unknown)}; use any of {', '.join(OPTION_NAMES)}."
            )
        clean = {k: v for k, v in overrides.items() if v is not None}
        if "tags" in clean:
            clean["tags"] = as_tags(clean["tags"])
        return replace(self, **clean) if clean else self

    def resolve_bank(self) -> str | None:
        bank = self.bank_id() if callable(self.bank_id) else self.bank_id
        return str(bank) if bank else None


def renamed_options(options: Mapping[str, Any], *, stacklevel: int = 5) -> dict[str, Any]:
    """Options with their old names (RENAMED_OPTIONS) mapped to the new ones, with a DeprecationWarning each."""
    return renamed_arguments("memwrap option", RENAMED_OPTIONS, {k: v for k, v in options.items()
                                                                 if v is not None or k not in RENAMED_OPTIONS},
                             stacklevel=stacklevel)


def as_tags(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


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

    Scopes nest; inner values win. Tags given here are used for retains and to filter recall; `filters` narrows
    recall only (the same filter as `recall(filters=...)`: metadata, time ranges, documents, sessions).
    """

    def __init__(
        self,
        *,
        bank_id: BankId = None,
        inject: bool | None = None,
        retain: bool | None = None,
        token_budget: int | None = None,
        session_id: str | None = None,
        tags: str | Sequence[str] | None = None,
        filters: RecallFilter | Mapping[str, Any] | None = None,
        recall_timeout: float | None = None,
        tool_loop: ToolLoop | None = None,
        retain_tools: bool | None = None,
        retain_assistant: bool | None = None,
        max_tokens: int | None = None,  # deprecated: token_budget
    ) -> None:
        if max_tokens is not None:
            token_budget = renamed_options({"max_tokens": max_tokens, "token_budget": token_budget},
                                           stacklevel=4)["token_budget"]
        values = {
            "bank_id": bank_id,
            "inject": inject,
            "retain": retain,
            "token_budget": token_budget,
            "session_id": session_id,
            "tags": as_tags(tags) if tags is not None else None,
            "filters": parse_filter(filters),
            "recall_timeout": recall_timeout,
            "tool_loop": tool_loop,
            "retain_tools": retain_tools,
            "retain_assistant": retain_assistant,
        }
        if tool_loop is not None and tool_loop not in TOOL_LOOP_MODES:
            raise InvalidInputError(f"tool_loop must be one of {TOOL_LOOP_MODES}, not {tool_loop!r}.")
        self.values = {k: v for k, v in values.items() if v is not None}
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
