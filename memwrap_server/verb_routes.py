"""REST routes derived from the verb declarations (memwrap/verbs.py).

`body_model(verb)` is the JSON body of a verb's route: its declared parameters, minus those in the path, with the
server's checks for what PostgreSQL cannot store (NUL characters, lone surrogates, times outside its range) so
such input is a 422, never a 500. `add_verb_route(router, verb)` registers a route whose parameters are the
verb's: path parameters from the route, the rest from the body (POST, PATCH) or the query string (GET, DELETE),
handed to the `AsyncMemory` method of the same name. Routes with a shape of their own (a page, a bank's
settings, a batch) are written out in their modules and use `body_model` for their bodies.

A list parameter in a query string is repeated (`?tags=a&tags=b`) or comma-separated (`?tags=a,b`: the same two,
as on the command line and in the memory browser); its singular (`?tag=a`) is accepted too, the name the API
used before every surface said `tags`.
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, Union, get_args, get_origin
from uuid import UUID

from fastapi import APIRouter, Body, Depends, Path, Query, Response
from pydantic import BaseModel, BeforeValidator, ConfigDict, create_model, model_validator
from starlette.convertors import Convertor, register_url_convertor

from memwrap import validate
from memwrap.declare import Verb, VerbParams
from memwrap.filters import split_commas
from memwrap_server.deps import bank_access, get_memory
from memwrap_server.schemas import ERRORS, Text, date_time_text, storable_text

PATH_TYPES: dict[str, Any] = {
    "memory_id": UUID,
    "observation_id": UUID,
    "entity_id": UUID,
    "name": Annotated[Text, Path(min_length=1, max_length=200, description="The mental model's name.")],
}
NOT_FOUND = {404: ERRORS[422] | {"description": "No such memory, observation or mental model in this bank"}}


class RestBody(VerbParams):
    """A verb's parameters as a JSON body: only what PostgreSQL can store gets through."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    @model_validator(mode="before")
    @classmethod
    def _json_types(cls, data: Any) -> Any:
        """JSON's own types, as the OpenAPI document declares them: pydantic would also read "true" or 1 as a
        boolean, "5" as a number and 0 as a date (1970), which a client of the document never means."""
        if isinstance(data, Mapping):
            for name, info in cls.model_fields.items():
                if name in data and data[name] is not None:
                    _json_type(name, info.annotation, data[name])
        return data

    @model_validator(mode="after")
    def _storable(self) -> RestBody:
        for name in type(self).model_fields:
            _check_storable(getattr(self, name), name)
        return self


def _holds(annotation: Any, kind: type) -> bool:
    return annotation is kind or any(_holds(arg, kind) for arg in get_args(annotation))


def _json_type(name: str, annotation: Any, value: Any) -> None:
    """Refuse a value of another JSON type where the field takes only a boolean, a number or a date-time."""
    if _holds(annotation, datetime):
        date_time_text(value)
    scalars = (bool, int, float)
    if _holds(annotation, str) or not any(_holds(annotation, kind) for kind in scalars):
        return  # a string is among the choices (or no scalar is): pydantic's own checks suffice
    if _holds(annotation, bool) and not any(_holds(annotation, kind) for kind in (int, float)):
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false, not {value!r}")
    elif isinstance(value, (str, bool)):
        raise ValueError(f"{name} must be a JSON number, not {value!r}")


def _check_storable(value: Any, where: str) -> None:
    if isinstance(value, str):
        storable_text(value, where)
    elif isinstance(value, datetime):
        validate.timestamp(value, what=where)
    elif isinstance(value, BaseModel):
        _check_storable(value.model_dump(), where)
    elif isinstance(value, Mapping):
        validate.metadata(dict(value), what=where)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_storable(item, where)


def body_model(verb: Verb, *, without: tuple[str, ...] = (), name: str | None = None) -> type[RestBody]:
    """The verb's parameters that travel in the body: all but the route's path parameters, those that stay
    with the client (`Route.client_side`) and `without`."""
    assert verb.route is not None
    left_out = {*verb.route.path_params, *verb.route.client_side, *without}
    fields = {n: (info.annotation, info) for n, info in verb.params.model_fields.items() if n not in left_out}
    model = create_model(  # type: ignore[call-overload]  # fields from a dict, not keywords
        name or "".join(part.capitalize() for part in verb.name.split("_")) + "Body", __base__=RestBody, **fields
    )
    model.verb, model.renamed = verb.name, verb.renamed
    return model


def add_verb_route(router: APIRouter, verb: Verb, **route_options: Any) -> None:
    """Register the verb's route on `router` (whose prefix the route's path starts with)."""
    route = verb.route
    assert route is not None and route.path.startswith(router.prefix), verb.name
    parameters = [
        inspect.Parameter("memory", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[Any, Depends(get_memory)]),
    ]
    for name in route.path_params:
        annotation = Annotated[str, Depends(bank_access)] if name == "bank_id" else PATH_TYPES.get(name, str)
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation))
    body: type[RestBody] | None = None
    query: list[str] = []
    if route.in_body:
        body = body_model(verb)
        if body.model_fields:
            required = any(info.is_required() for info in body.model_fields.values())
            annotation = Annotated[body, Body()] if required else Annotated[body | None, Body()]
            parameters.append(
                inspect.Parameter(
                    "body",
                    inspect.Parameter.KEYWORD_ONLY,
                    annotation=annotation,
                    default=inspect.Parameter.empty if required else None,
                )
            )
    else:
        for name, info in verb.params.model_fields.items():
            if name in route.path_params:
                continue
            query.append(name)
            # Bounds declared on the parameter (Field(ge=..., le=...)) sit in the field's metadata: keep them, so
            # the query string is checked (422) and the OpenAPI document shows them.
            annotation = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
            parameters += _query_parameters(name, annotation, info.default)

    async def endpoint(**kwargs: Any) -> Any:
        memory = kwargs.pop("memory")
        arguments = {name: kwargs[name] for name in route.path_params}
        given = kwargs.get("body")
        if given is not None:
            arguments.update({k: getattr(given, k) for k in given.model_fields_set})
        for name in query:
            value = kwargs.get(name)
            value = value if value is not None else kwargs.get(_singular(name))
            if isinstance(value, list):
                value = split_commas(value)
            if value is not None:
                arguments[name] = value
        result = await getattr(memory, verb.name)(**arguments)
        return Response(status_code=204) if route.status == 204 else result

    endpoint.__name__ = verb.name
    endpoint.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]  # FastAPI reads it
    has_id = len(route.path_params) > 1
    options: dict[str, Any] = {
        "methods": [route.method],
        "status_code": route.status,
        "summary": verb.summary,
        "description": verb.doc,
        "name": verb.name,
        "responses": NOT_FOUND if has_id else None,
    }
    if route.status == 204:
        options["response_class"] = Response
    else:
        options["response_model"] = verb.result
    path = route.path.removeprefix(router.prefix)
    for name in route.path_params:
        if PATH_TYPES.get(name) is UUID:  # only a UUID matches: /memories/batch is not memory "batch" (405, not 422)
            path = path.replace("{" + name + "}", "{" + name + ":" + UUID_CONVERTOR + "}")
    router.add_api_route(path, endpoint, **(options | route_options))


UUID_CONVERTOR = "memwrap_uuid"


class _UuidConvertor(Convertor[str]):
    """A UUID in any case, with or without hyphens or braces (what uuid.UUID reads), kept as text: the route's own
    validation makes it a UUID. Starlette's `uuid` convertor takes lower case only."""

    regex = r"\{?[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}\}?"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return str(value)


register_url_convertor(UUID_CONVERTOR, _UuidConvertor())


def _query_parameters(name: str, annotation: Any, default: Any) -> list[inspect.Parameter]:
    """A query-string parameter for a declared one; a list also under its singular name (deprecated)."""
    if _is_list(annotation):
        list_type = list[str] | None
        return [
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[list_type, Query()], default=None
            ),
            inspect.Parameter(
                _singular(name),
                inspect.Parameter.KEYWORD_ONLY,
                annotation=Annotated[list_type, Query(deprecated=True, description=f"Use `{name}`.")],
                default=None,
            ),
        ]
    if _holds(annotation, datetime):  # "0" would be read as Unix seconds: the document says date-time text
        annotation = Annotated[annotation, BeforeValidator(_date_time_query)]
    return [
        inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[annotation, Query()], default=default
        )
    ]


def _date_time_query(value: Any) -> Any:
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        raise ValueError("must be an ISO 8601 date-time, e.g. 2026-03-02T09:00:00Z (not a number)")
    return value


_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _is_list(annotation: Any) -> bool:
    if get_origin(annotation) in (Union, types.UnionType):
        return any(_is_list(arg) for arg in get_args(annotation))
    return get_origin(annotation) in (list, Sequence) or annotation in (list, Sequence)


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") else f"{name}_item"
