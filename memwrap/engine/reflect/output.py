"""The `done` tool and its validation: the answer, the cited references and, with `response_schema`, the answer
as structured data, produced in the same call (no extra LLM round trip) and validated here.

`response_schema` is a pydantic model class (the result is an instance of it) or a JSON schema (the result is the
validated JSON value). The schema is nested under the `structured` argument; its `$defs` move to the root of the
tool's parameters so that "#/$defs/..." references still resolve.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from memwrap.engine.llm.types import Tool, strict_schema
from memwrap.errors import InvalidInputError

DONE = "done"
DONE_DESCRIPTION = (
    "Finish: the answer to the question, and the references (M1, O2, F3, ...) of the memory items it rests on. "
    "Say plainly what memory does not contain."
)


class DoneArgs(BaseModel):
    answer: str = Field(description="the answer, from memory only; say what memory does not contain")
    memory_ids: list[str] = Field(description="references of the items the answer uses, e.g. ['O1', 'F3']")


class DoneCall(BaseModel):
    answer: str
    memory_ids: list[str] = Field(default_factory=list)
    structured: Any = None


@dataclass
class OutputSchema:
    """What `done` must carry. `model` or `json_schema` is set when the caller asked for structured output."""

    model: type[BaseModel] | None = None
    json_schema: dict[str, Any] | None = None

    @classmethod
    def build(cls, response_schema: Any) -> OutputSchema:
        if response_schema is None:
            return cls()
        if isinstance(response_schema, type) and issubclass(response_schema, BaseModel):
            return cls(model=response_schema)
        if isinstance(response_schema, dict):
            _check_json_schema(response_schema)
            return cls(json_schema=copy.deepcopy(response_schema))
        raise InvalidInputError(
            "response_schema takes a pydantic model class or a JSON schema (a dict), "
            f"not {type(response_schema).__name__}."
        )

    @property
    def wanted(self) -> bool:
        return self.model is not None or self.json_schema is not None

    def tool(self) -> Tool:
        parameters = strict_schema(DoneArgs)
        if self.wanted:
            schema = strict_schema(self.model) if self.model is not None else copy.deepcopy(self.json_schema or {})
            for key in ("$defs", "definitions"):
                if key in schema:
                    parameters[key] = schema.pop(key)
            schema.pop("$schema", None)
            schema.setdefault("description", "the answer as structured data, in exactly this form")
            parameters["properties"]["structured"] = schema
            parameters["required"] = [*parameters["required"], "structured"]
        return Tool(name=DONE, description=DONE_DESCRIPTION, parameters=parameters)

    def parse(self, arguments: dict[str, Any], raw: str | None) -> DoneCall:
        """The call's arguments, validated; ValueError with a message for the model when they do not fit."""
        if raw is not None:
            raise ValueError("its arguments are not a JSON object")
        try:
            call = DoneCall.model_validate(arguments)
        except ValidationError as exc:
            raise ValueError(_problems(exc)) from None
        if not call.answer.strip():
            raise ValueError("`answer` is empty")
        if not self.wanted:
            call.structured = None
            return call
        if call.structured is None:
            raise ValueError("`structured` is missing")
        call.structured = self.validate(call.structured)
        return call

    def validate(self, value: Any) -> Any:
        if self.model is not None:
            try:
                return self.model.model_validate(value)
            except ValidationError as exc:
                raise ValueError(f"`structured` does not fit the schema ({_problems(exc)})") from None
        validator = _validator(self.json_schema or {})
        if validator is not None:
            errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))[:5]
            if errors:
                where = "; ".join(f"{'/'.join(str(p) for p in e.path) or 'structured'}: {e.message}" for e in errors)
                raise ValueError(f"`structured` does not fit the schema ({where})")
        return value


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()[:5])


def _validator(schema: dict[str, Any]) -> Any:
    # jsonschema is optional (it comes with the server extra's mcp); without it a dict schema only shapes the
    # model's output, and the value is returned as the model wrote it.
    try:
        import jsonschema
    except ImportError:
        return None
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def _check_json_schema(schema: dict[str, Any]) -> None:
    try:
        import jsonschema
    except ImportError:
        return
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise InvalidInputError(f"response_schema is not a valid JSON schema: {exc.message}") from None
