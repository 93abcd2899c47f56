"""How a verb is declared, and what every surface derives from a declaration.

A verb is declared once, in memwrap/verbs.py, as a typed `async def` on `MemoryVerbs` with a docstring and the
`@verb(...)` decorator:

    @verb(Route("POST", "/v1/banks/{bank_id}/recall"), mcp=True, cli=True)
    async def recall(self, bank_id: BankId, query: str, *, token_budget: int | None = None, ...) -> Recall:
        \"\"\"Find what matters for `query` ...\"\"\"

From that one signature come: the verb's parameter model (pydantic, `Verb.params`: the REST body, the MCP
tool's input, the CLI's options are typed by it); generated from its source by `python -m memwrap._generate_verbs`
(so that type checkers and editors follow every call to the code that runs): `AsyncMemory`'s method
(memwrap/async_verbs.py: call the engine's method of the same name with every parameter; the engine checks the
values, with errors that name them), the engine's face (memwrap/engine_verbs.py: the `EngineVerbs` protocol that
`Engine` and `HttpEngine` satisfy), the HTTP client's request (memwrap/client/http_verbs/: route, path
parameters, body or query string, result model) and `Memory`'s sync twin (memwrap/sync_verbs.py); the REST
route's request model (memwrap_server/routes); the MCP tool's parameters (memwrap_server/mcp.py) and the CLI
command's options (memwrap/cli/verb_commands.py). tests/test_verb_drift.py walks `VERBS` and fails when a surface (the
engines included) lacks a verb or a parameter, names one differently, gives it another default or other bounds.

A renamed parameter keeps working under its old name for a while: `renamed={"max_tokens": "token_budget"}`
maps it, with a DeprecationWarning, on every surface (the parameter model does it).
"""

from __future__ import annotations

import inspect
import re
import types
import warnings
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, ParamSpec, TypeVar, Union, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, create_model, model_validator

from memwrap.models import KEEP, Keep

P = ParamSpec("P")
R = TypeVar("R")

_PATH_PARAM = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Route:
    """Where a verb lives in the REST API. Path parameters are named after the verb's parameters; the others
    travel in a JSON body (POST, PATCH, PUT) or the query string (GET, DELETE)."""

    method: str
    path: str
    status: int = 200
    # The REST response wraps the verb's result in an object under this key (e.g. {"ids": [...]}).
    envelope: str | None = None
    # Parameters that stay with the caller (a local file the client reads or writes), never sent.
    client_side: tuple[str, ...] = ()

    @property
    def path_params(self) -> tuple[str, ...]:
        return tuple(_PATH_PARAM.findall(self.path))

    @property
    def in_body(self) -> bool:
        return self.method in ("POST", "PATCH", "PUT")


class VerbParams(BaseModel):
    """Base of every verb's parameter model: strict about unknown names, lenient about old ones."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    verb: ClassVar[str] = ""
    renamed: ClassVar[Mapping[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        """Bodies and tool calls (REST, MCP) may still use a renamed parameter's old name."""
        if not isinstance(data, Mapping) or not cls.renamed:
            return data
        return renamed_arguments(cls.verb, cls.renamed, data, stacklevel=5)


@dataclass(frozen=True)
class Verb:
    """One public verb: everything a surface needs to offer it, derived from its declaration."""

    name: str
    doc: str
    params: type[VerbParams]
    positional: tuple[str, ...]  # parameters passed by position in Python (the rest are keyword-only)
    result: Any  # the return annotation (a model, list[model], dict, int, bool, None)
    route: Route | None
    local_only: str | None  # why the verb has no HTTP route (None: it has one, or is `composed` of others)
    composed: str | None  # over HTTP the client composes it from these verbs (no route of its own)
    optional_bank: str | None  # bank_id=None means every bank, in-process only: why not over HTTP
    mcp: str | None  # the MCP tool's name (None: not a tool)
    cli: str | None  # the CLI command's name (None: no command)
    partial: bool  # parameters not given are not passed on (PATCH: None resets, absent keeps)
    renamed: Mapping[str, str] = field(default_factory=dict)
    function: Callable[..., Any] | None = None  # the declared function (its signature is the public one)
    span: tuple[str, str] | None = None  # (step, GenAI memory operation) of the span a call opens

    @property
    def summary(self) -> str:
        return self.doc.strip().split("\n\n")[0].replace("\n", " ")

    def signature(self) -> inspect.Signature:
        assert self.function is not None
        sig = inspect.signature(self.function)
        return sig.replace(parameters=[p for p in sig.parameters.values() if p.name != "self"])


VERBS: dict[str, Verb] = {}


def verb(
    route: Route | None = None,
    *,
    local_only: str | None = None,
    composed: str | None = None,
    optional_bank: str | None = None,
    mcp: bool | str = False,
    cli: bool | str = False,
    partial: bool = False,
    renamed: Mapping[str, str] | None = None,
    custom: bool = False,
    span: tuple[str, str] | None = None,
) -> Callable[[Callable[P, Coroutine[Any, Any, R]]], Callable[P, Coroutine[Any, Any, R]]]:
    """Declare a verb (see the module docstring). Exactly one of: a REST `route`; `local_only` (why it cannot
    travel over HTTP); `composed` (the verbs the HTTP client builds it from). `mcp`: offered as an MCP tool (a
    string names the tool); `cli`: offered as a CLI command (`memwrap bank-config`; a string names the command,
    for a verb whose Python name says more than a command needs, e.g. `memwrap stats`). `custom=True`: the class
    that inherits the declaration writes the method itself (its signature must stay the declared one;
    tests/test_verb_drift.py checks). `span=(step, operation)`: a call through the engine's face opens a span of
    that step, named as the GenAI conventions name the memory operation (memwrap/instrumented_verbs.py,
    `tracing.verb_span`). The function is returned as declared: its body is never run, the generated
    classes (memwrap/async_verbs.py, ...) override it."""
    if sum(x is not None for x in (route, local_only, composed)) != 1:
        raise TypeError("A verb has exactly one of: a REST route, a reason it is local only, or `composed`.")

    def declare(function: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
        name = function.__name__
        hints = get_type_hints(function, include_extras=True)
        sig = inspect.signature(function)
        params = [p for p in sig.parameters.values() if p.name != "self"]
        model = _params_model(name, params, hints, dict(renamed or {}))
        declared = Verb(
            name=name,
            doc=inspect.getdoc(function) or "",
            params=model,
            positional=tuple(p.name for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY),
            result=hints.get("return"),
            route=route,
            local_only=local_only,
            composed=composed,
            optional_bank=optional_bank,
            mcp=(name if mcp is True else mcp) or None,
            cli=(name.replace("_", "-") if cli is True else cli) or None,
            partial=partial,
            renamed=dict(renamed or {}),
            function=function,
            span=span,
        )
        VERBS[name] = declared
        return function

    return declare


def _params_model(
    name: str, params: list[inspect.Parameter], hints: Mapping[str, Any], renamed: dict[str, str]
) -> type[VerbParams]:
    fields: dict[str, Any] = {}
    for p in params:
        default = ... if p.default is inspect.Parameter.empty else p.default
        annotation = hints.get(p.name, Any)
        if default is KEEP:  # a model says "not given" by leaving the field unset (model_fields_set)
            default, annotation = None, _without_keep(annotation)
        fields[p.name] = (annotation, default)
    model = create_model(
        "".join(part.capitalize() for part in name.split("_")) + "Params", __base__=VerbParams, **fields
    )
    model.verb = name
    model.renamed = renamed
    return model


def _without_keep(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        return Union[tuple(a for a in get_args(annotation) if a is not Keep)]  # noqa: UP007 (built from a tuple)
    return annotation


def renamed_values(verb_name: str, old_names: Mapping[str, Any]) -> dict[str, Any]:
    """The values given under a renamed parameter's old name, under the new name (a DeprecationWarning each).
    Any other name is a TypeError that names the verb, as Python's own would."""
    renamed = VERBS[verb_name].renamed
    for name in old_names:
        if name not in renamed:
            raise TypeError(f"{verb_name}(): got an unexpected keyword argument '{name}'")
    return renamed_arguments(verb_name, renamed, old_names, stacklevel=4)


def renamed_arguments(
    verb_name: str, renamed: Mapping[str, str], arguments: Mapping[str, Any], *, stacklevel: int
) -> dict[str, Any]:
    """Old parameter names mapped to the new ones, with a DeprecationWarning each. An old name given wins over
    the new one: Memory's sync twins pass every parameter on, the new one at its default."""
    arguments = dict(arguments)
    for old, new in renamed.items():
        if old in arguments:
            value = arguments.pop(old)
            warnings.warn(
                f"{verb_name}(): `{old}` is now `{new}`; the old name will stop working in a later release.",
                DeprecationWarning,
                stacklevel=stacklevel,
            )
            arguments[new] = value
    return arguments


def in_declared_order(declaring: type) -> None:
    """Order `VERBS` as `declaring` lists the verbs: its bases' (the sections of MemoryVerbs, declared in modules
    of their own: memwrap/verbs.py), in order, each in the order written, whatever order the modules loaded in."""
    names = [name for base in declaring.__mro__ for name in vars(base) if name in VERBS]
    ordered = {name: VERBS[name] for name in dict.fromkeys(names)}
    VERBS.clear()
    VERBS.update(ordered)
