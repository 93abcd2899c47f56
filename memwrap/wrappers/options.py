"""The wrapper options, declared once: every wrapper and `scope()` takes its keyword parameters from here.

`Options` is what one call does with memory (given when wrapping, by `memwrap.scope(...)` for a block, or per call
with `memwrap={...}`); `WrapOptions` adds what is given once, when wrapping (the memory, its LLM). Each field's
type and default is the one every surface shows: `wrap_openai`, `wrap_anthropic` (memwrap/wrappers), the LangChain
wrapper (memwrap/integrations/langchain.py), LiteLLM's `wrap_completion` and `scope` are declared with
`@takes_options(...)`, which gives them the fields as keyword parameters, for type checkers (a ParamSpec taken
from the dataclass) and for `inspect.signature`/`help()` alike. tests/test_wrap_options.py fails when a wrapper
lacks an option or shows another default. A new option is one field here.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, TypeVar

from memwrap.declare import renamed_arguments
from memwrap.errors import InvalidInputError
from memwrap.filters import RecallFilter, parse_filter
from memwrap.models import DEFAULT_TOKEN_BUDGET

if TYPE_CHECKING:
    from memwrap.wrappers.backend import MemoryLike

BankId = str | Callable[[], str | None] | None
ToolLoop = Literal["turn", "step"]
TOOL_LOOP_MODES = ("turn", "step")
# Old spellings still accepted (with a DeprecationWarning): `max_tokens` sat beside the SDKs' own max_tokens.
RENAMED_OPTIONS = {"max_tokens": "token_budget"}


@dataclass(frozen=True, kw_only=True)
class Options:
    """What one call does with memory."""

    # The bank: a string, or a callable returning one per call (e.g. the current user's id).
    bank_id: BankId = None
    inject: bool = True  # recall before the call and put the block into its system prompt
    retain: bool = True  # retain the exchange after the call
    token_budget: int = DEFAULT_TOKEN_BUDGET  # tokens of memory injected per call (recall's token_budget)
    session_id: str | None = None
    # Used for retains and to filter recall (a string is one tag); kept as a tuple.
    tags: str | Sequence[str] | None = ()
    # Narrows what is injected (recall's `filters`: metadata conditions, time ranges, documents, sessions); checked
    # when the option is given, so a wrong filter is an error at the call, not a silently empty recall.
    filters: RecallFilter | Mapping[str, Any] | None = None
    # Seconds a call waits for recall before it goes on without memory. 0.3: recall's p99 on a 2-core machine with two
    # busy loops beside it (2x oversubscribed) was 91 ms at 2k and 221 ms at 10k memories of long technical messages,
    # in a home of 50 other banks, right after the retains (60 recalls each, 2026-12-07; bench/README.md, *One scan
    # for two arms, and rows kept whole*).
    recall_timeout: float = 0.3
    # Tool/agent loops (loops.py): "turn" recalls once per user turn and retains the user's message with the
    # final answer; "step" treats every request as its own exchange. `retain_tools` keeps tool calls and results.
    tool_loop: ToolLoop = "turn"
    retain_tools: bool = False
    # The assistant's answers are retained beside the user's words (as memories of their own, which recall ranks
    # below the user's: MEMWRAP_ASSISTANT_WEIGHT); False retains only what the user said.
    retain_assistant: bool = True
    max_tokens: int | None = None  # deprecated: token_budget

    def __post_init__(self) -> None:  # frozen: each normalised value is set once, while being built
        if self.max_tokens is not None:
            budget = renamed_options({"max_tokens": self.max_tokens}, stacklevel=6)["token_budget"]
            object.__setattr__(self, "token_budget", budget)
            object.__setattr__(self, "max_tokens", None)
        object.__setattr__(self, "tags", as_tags(self.tags))
        if self.filters is not None and not isinstance(self.filters, RecallFilter):
            object.__setattr__(self, "filters", parse_filter(self.filters))
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
        return dataclasses.replace(self, **clean) if clean else self

    def resolve_bank(self) -> str | None:
        bank = self.bank_id() if callable(self.bank_id) else self.bank_id
        return str(bank) if bank else None


@dataclass(frozen=True, kw_only=True)
class WrapOptions(Options):
    """The options of a wrapper: a call's, and what is given once, when wrapping."""

    # A Memory, an AsyncMemory, or a sidecar's URL ("http://host:8765"); None: the process's one Memory().
    memory: MemoryLike | str | None = None
    # The memory's own LLM work (extraction, consolidation, reflect) goes through the wrapped client with this
    # model (True: MEMWRAP_LLM_MODEL), instead of MEMWRAP_LLM_*.
    llm: str | bool | None = None
    memory_api_key: str | None = None  # the key of a sidecar given as memory="http://..." (default MEMWRAP_API_KEY)

    def per_call(self) -> Options:
        """The options a call can change (the handle keeps these)."""
        return Options(**{name: getattr(self, name) for name in OPTION_NAMES})

    def as_arguments(self) -> dict[str, Any]:
        """Every option by name, to hand on to another wrapper (LangChain's to wrap_openai)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


# The options a call, a scope or `memwrap={...}` may set (the deprecated `max_tokens` is mapped to its new name).
OPTION_NAMES = tuple(f.name for f in dataclasses.fields(Options) if f.name not in RENAMED_OPTIONS)


def renamed_options(options: Mapping[str, Any], *, stacklevel: int = 5) -> dict[str, Any]:
    """Options with their old names (RENAMED_OPTIONS) mapped to the new ones, with a DeprecationWarning each."""
    return renamed_arguments(
        "memwrap option",
        RENAMED_OPTIONS,
        {k: v for k, v in options.items() if v is not None or k not in RENAMED_OPTIONS},
        stacklevel=stacklevel,
    )


def as_tags(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


# --- wrappers declared with the options' parameters ----------------------------------------------------------------

P = ParamSpec("P")
O = TypeVar("O", bound=Options)  # noqa: E741 (the options' class)
T = TypeVar("T")
R = TypeVar("R")


def option_parameters(cls: type[Options]) -> list[inspect.Parameter]:
    """The options as keyword parameters, with their types and defaults (what `help()` and IDEs show)."""
    hints = inspect.get_annotations(cls, eval_str=False)
    for base in cls.__mro__[1:]:
        hints = {**inspect.get_annotations(base, eval_str=False), **hints}
    return [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=hints.get(f.name, Any),
            default=f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default,
        )
        for f in dataclasses.fields(cls)
    ]


def _declared(function: Callable[..., Any], with_options: Callable[..., Any], cls: Any) -> None:
    signature = inspect.signature(function)
    first = next(iter(signature.parameters.values())).replace(kind=inspect.Parameter.POSITIONAL_ONLY)
    with_options.__signature__ = signature.replace(  # type: ignore[attr-defined]  # inspect.signature reads it
        parameters=[first, *option_parameters(cls)]
    )


def _check_options_class(cls: object) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Options)):
        raise TypeError(f"takes the options of an Options dataclass, not {cls!r}.")


def takes_options(cls: Callable[P, O]) -> Callable[[Callable[[T, O], R]], Callable[Concatenate[T, P], R]]:
    """`@takes_options(WrapOptions)` on `def wrapper(client, options: WrapOptions)`: callers pass the options as
    keyword arguments (`wrapper(client, bank_id="alice")`), checked and defaulted by the class."""
    _check_options_class(cls)

    def declare(function: Callable[[T, O], R]) -> Callable[Concatenate[T, P], R]:
        @functools.wraps(function)
        def with_options(first: T, /, *args: P.args, **kwargs: P.kwargs) -> R:
            return function(first, cls(*args, **kwargs))

        _declared(function, with_options, cls)
        return with_options

    return declare


def takes_given_options(
    cls: Callable[P, O],
) -> Callable[[Callable[[T, dict[str, Any]], R]], Callable[Concatenate[T, P], R]]:
    """As `takes_options`, for what sets only the options given (`scope`): the function gets those, checked and
    normalised by the class, by name (None counts as not given)."""
    _check_options_class(cls)
    build: Callable[..., Options] = cls  # called with the names given, checked by the class itself

    def declare(function: Callable[[T, dict[str, Any]], R]) -> Callable[Concatenate[T, P], R]:
        @functools.wraps(function)
        def with_options(first: T, /, *args: P.args, **kwargs: P.kwargs) -> R:
            given = {name: value for name, value in renamed_options(kwargs, stacklevel=4).items() if value is not None}
            options = build(**given)
            return function(first, {name: getattr(options, name) for name in given})

        _declared(function, with_options, cls)
        return with_options

    return declare
