"""What a recall may be narrowed to: metadata conditions, time ranges, documents, sessions, speakers and the types
of the entities a memory mentions.

A boundary model (every surface accepts it as JSON); the engine compiles it to SQL in
memwrap/engine/recall/filters.py. Two spellings of the metadata part are accepted:

    {"key": "project", "eq": "apollo"}                                  one condition
    {"and": [...]}, {"or": [...]}, {"not": {...}}                       combinations
    {"project": "apollo", "priority": {"gte": 2}, "draft": {"exists": false}}
                                                                        shorthand: each key a condition, all of them

Operators: eq, ne, in, not_in (JSON values), gt, gte, lt, lte (a number, or a string compared byte-wise, so
ISO dates order correctly), exists (true/false). Several operators in one condition must all hold. `key` is a
top-level key, or a list of keys for a nested value (["address", "city"]). A condition on a key the memory does
not have is false; `ne`, `not_in` and `not` therefore match memories without the key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from difflib import get_close_matches
from typing import Any, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from memwrap.errors import InvalidInputError
from memwrap.models import ENTITY_TYPE_NAME_PATTERN
from memwrap.validate import nesting_depth

# A filter is applied inside every recall arm; these keep one from turning into a very long statement.
MAX_FILTER_CONDITIONS = 64
MAX_IN_VALUES = 100
MAX_KEY_CHARS = 200
MAX_KEY_DEPTH = 8
MAX_ID_VALUES = 1000
# JSON levels of a whole filter: `and`/`or` of `not`s of conditions is a handful; ~1,000 levels used to reach
# Python's recursion limit in the validators (a 500), so depth is measured first, without recursion.
MAX_FILTER_DEPTH = 32

_TYPE_NAME = re.compile(ENTITY_TYPE_NAME_PATTERN.removeprefix("^").removesuffix("$"))

OPERATORS = ("eq", "ne", "in", "not_in", "gt", "gte", "lt", "lte", "exists")
_COMPOUND = ("and", "or", "not")

JsonValue = Union[str, int, float, bool, None, list[Any], dict[str, Any]]  # noqa: UP007 - pydantic needs Union here
# Strict: a boolean is not the number 1, and "3" is not 3 (a comparison is numeric or textual, never both).
Ordered = Union[StrictInt, StrictFloat, StrictStr]  # noqa: UP007 - as JsonValue: pydantic needs Union here


class MetadataCondition(BaseModel):
    """One key and the operators its value must satisfy (all of them)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    key: list[str] = Field(description="a top-level metadata key, or the path to a nested one")
    eq: JsonValue = Field(default=None, description="equal to this JSON value (null matches a stored null)")
    ne: JsonValue = Field(default=None, description="not equal to this value (a missing key is not equal)")
    in_: list[JsonValue] | None = Field(default=None, alias="in", description="equal to one of these values")
    not_in: list[JsonValue] | None = Field(default=None, description="equal to none of these values")
    # None only means "not given": {"gt": null} orders nothing, so it is refused (below), and the schema has no null.
    gt: Ordered | SkipJsonSchema[None] = Field(default=None, description="greater than this number or string")
    gte: Ordered | SkipJsonSchema[None] = Field(default=None, description="greater than or equal to this value")
    lt: Ordered | SkipJsonSchema[None] = Field(default=None, description="less than this number or string")
    lte: Ordered | SkipJsonSchema[None] = Field(default=None, description="less than or equal to this value")
    exists: bool | None = Field(default=None, description="true: the key is present (even as null); false: absent")

    @model_validator(mode="before")
    @classmethod
    def _known_operators(cls, value: Any) -> Any:
        if isinstance(value, dict):
            unknown = [k for k in value if k not in (*OPERATORS, "key", "in_")]
            if unknown:
                raise ValueError(_operators_message(value.get("key"), unknown))
        return value

    @field_validator("key", mode="before")
    @classmethod
    def _path(cls, value: Any) -> Any:
        path = [value] if isinstance(value, str) else value
        if not isinstance(path, list) or not path or len(path) > MAX_KEY_DEPTH:
            raise ValueError(f"key is a metadata key, or a list of 1 to {MAX_KEY_DEPTH} keys for a nested value")
        for part in path:
            if not isinstance(part, str) or not part or len(part) > MAX_KEY_CHARS:
                raise ValueError(f"each key is a non-empty string of at most {MAX_KEY_CHARS} characters")
            if _unstorable(part):
                raise ValueError("a key cannot hold a NUL character or a lone surrogate")
        return path

    @model_validator(mode="after")
    def _one_operator_at_least(self) -> MetadataCondition:
        given = self.operators()
        if not given:
            raise ValueError(f"a condition needs an operator: one of {', '.join(OPERATORS)}")
        for name in ("in_", "not_in"):
            values = getattr(self, name)
            given_as_null = values is None and name in self.model_fields_set  # {"in": null}: no values to match
            if given_as_null or (values is not None and not 0 < len(values) <= MAX_IN_VALUES):
                raise ValueError(f"'{name.rstrip('_')}' takes 1 to {MAX_IN_VALUES} values")
        for op in given:  # what PostgreSQL cannot hold in text or jsonb ('\u0000 cannot be converted to text': a 500)
            if _unstorable(getattr(self, op if op != "in" else "in_")):
                raise ValueError(f"'{op}' holds a NUL character or a lone surrogate, which no stored value can hold")
        for name in ("gt", "gte", "lt", "lte"):
            value = getattr(self, name)
            if value is None and name in self.model_fields_set:
                raise ValueError(f"'{name}' compares with a number or a string, not null")
            if isinstance(value, bool):
                raise ValueError(f"'{name}' compares numbers or strings, not booleans")
            if isinstance(value, float) and value != value:  # NaN orders nothing
                raise ValueError(f"'{name}' needs a finite number")
        return self

    def operators(self) -> list[str]:
        """The operators given (by their JSON names), in a fixed order. `eq: null` counts: it was given."""
        fields = self.model_fields_set
        return [op for op in OPERATORS if (op if op != "in" else "in_") in fields]


def _unstorable(value: Any) -> bool:
    """Does a JSON value hold, in a string or a key, a NUL character or a lone surrogate?"""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item or any("\ud800" <= c <= "\udfff" for c in item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class AllOf(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    all_of: list[MetadataFilter] = Field(alias="and", min_length=1)


class AnyOf(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    any_of: list[MetadataFilter] = Field(alias="or", min_length=1)


class NoneOf(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    negated: MetadataFilter = Field(alias="not")


MetadataFilter = Union[MetadataCondition, AllOf, AnyOf, NoneOf]  # noqa: UP007 - as JsonValue: pydantic needs Union here


def _check_depth(value: Any) -> None:
    if nesting_depth(value, MAX_FILTER_DEPTH) > MAX_FILTER_DEPTH:
        raise ValueError(f"the filter nests deeper than {MAX_FILTER_DEPTH} levels")


def _expand_shorthand(value: Any) -> Any:
    """{"project": "apollo", "n": {"gte": 2}} → {"and": [{"key": "project", "eq": "apollo"}, {"key": "n", "gte": 2}]};
    the explicit forms pass through (their nested parts expanded too)."""
    if isinstance(value, BaseModel) or not isinstance(value, dict):
        return value
    if "key" in value:  # MetadataCondition checks its operators
        return value
    if set(value) & set(_COMPOUND):
        if len(value) != 1:
            raise ValueError("'and', 'or' and 'not' stand alone: {\"and\": [...]}; put other keys inside them")
        ((op, inner),) = value.items()
        if op == "not":
            return {"not": _expand_shorthand(inner)}
        if not isinstance(inner, list):
            raise ValueError(f"'{op}' takes a list of conditions")
        return {op: [_expand_shorthand(part) for part in inner]}
    if not value:
        raise ValueError("an empty metadata filter; leave it out to match every memory")
    parts = []
    for key, wanted in value.items():
        if isinstance(wanted, dict) and wanted and set(wanted) <= {*OPERATORS}:
            parts.append({"key": key, **wanted})
        else:
            if isinstance(wanted, dict):
                _refuse_operator_lookalikes(key, wanted)
            parts.append({"key": key, "eq": wanted})
    return parts[0] if len(parts) == 1 else {"and": parts}


# Keys that are meant as operators but are not memwrap's (other stores' spellings, common slips). In the shorthand
# an object value is compared whole (`{"owner": {"name": "bob"}}`), so `{"source": {"equals": "cli"}}` would be an
# equality with the object {"equals": "cli"}, matching nothing, silently: these keys make it an error instead.
OPERATOR_LOOKALIKES = frozenset(
    {
        "equals", "equal", "eq_", "is", "is_not", "isnot", "neq", "not_eq", "not_equal", "not_equals", "nin",
        "notin", "not-in", "none_of", "any_of", "one_of", "oneof", "contains", "contain", "includes", "like",
        "ilike", "regex", "match", "matches", "startswith", "starts_with", "endswith", "ends_with", "ge", "le",
        "greater", "greater_than", "less", "less_than", "gteq", "lteq", "min", "max", "exist", "has", "present",
        "missing", "and", "or", "not",
    }
)  # fmt: skip


def _unknown_operators(keys: Any) -> list[str]:
    """Keys of a condition that are neither operators nor `key`, and look like an attempt at an operator."""
    return [
        k
        for k in keys
        if isinstance(k, str)
        and k not in OPERATORS
        and k != "key"
        and (k.startswith("$") or k.lower() in OPERATOR_LOOKALIKES or get_close_matches(k, OPERATORS, cutoff=0.75))
    ]


def _operators_message(key: Any, unknown: list[str]) -> str:
    shown = key if isinstance(key, str) else ".".join(str(k) for k in key) if isinstance(key, list) else "?"
    bad = ", ".join(repr(k) for k in unknown)
    return (
        f"{shown!r}: {bad} {'is not an operator' if len(unknown) == 1 else 'are not operators'}; "
        f"the operators are {', '.join(OPERATORS)} "
        f'(e.g. {{"{shown}": {{"eq": "value"}}}} or {{"{shown}": {{"in": ["a", "b"]}}}})'
    )


def _refuse_operator_lookalikes(key: str, wanted: dict[str, Any]) -> None:
    unknown = _unknown_operators(wanted)
    mixed = [k for k in wanted if k not in OPERATORS] if set(wanted) & set(OPERATORS) else []
    if unknown or mixed:
        raise ValueError(
            _operators_message(key, unknown or mixed)
            + f'. To match an object value exactly, write {{"key": "{key}", "eq": {{...}}}}'
        )


class RecallFilter(BaseModel):
    """Narrow a recall (or a list) to the memories that match every part given. Applied inside each recall arm,
    so a filter never hides a match the unfiltered recall would have found within the filtered set."""

    model_config = ConfigDict(extra="forbid")

    metadata: MetadataFilter | None = Field(default=None, description="conditions on the retained metadata")
    occurred_after: datetime | None = Field(default=None, description="what it is about happened at or after this")
    occurred_before: datetime | None = Field(default=None, description="what it is about happened at or before this")
    mentioned_after: datetime | None = Field(default=None, description="said (retained with a timestamp) at or after")
    mentioned_before: datetime | None = Field(default=None, description="said before this")
    document_ids: list[str] | None = Field(default=None, description="only memories of these documents")
    session_ids: list[str] | None = Field(default=None, description="only memories of these sessions")
    speakers: list[str] | None = Field(
        default=None,
        description='only memories said by one of these: "user", "assistant", or a participant\'s name ("Alice"); '
        "any case",
    )
    entity_types: list[str] | None = Field(
        default=None,
        description="only memories that mention an entity of one of these types (the bank's declared entity_types, "
        'e.g. ["Service"]); any case',
    )

    @field_validator("metadata", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        _check_depth(value)
        return _expand_shorthand(value)

    @field_validator("occurred_after", "occurred_before", "mentioned_after", "mentioned_before")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("give a time zone (e.g. 2026-03-01T00:00:00Z): a naive time is ambiguous")
        return value

    @field_validator("document_ids", "session_ids", "speakers", "entity_types")
    @classmethod
    def _ids(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not 0 < len(value) <= MAX_ID_VALUES:
            raise ValueError(f"give 1 to {MAX_ID_VALUES} ids")
        return value

    @field_validator("entity_types")
    @classmethod
    def _type_names(cls, value: list[str] | None) -> list[str] | None:
        # A name no bank can declare matches nothing, always: say so rather than return an empty recall.
        for name in value or []:
            if not _TYPE_NAME.fullmatch(name):
                raise ValueError(
                    f"{name[:80]!r} is not an entity type name (a letter, then up to 63 letters, digits, _ or -)"
                )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> RecallFilter:
        for name in ("occurred", "mentioned"):
            after, before = getattr(self, f"{name}_after"), getattr(self, f"{name}_before")
            if after is not None and before is not None and after > before:
                raise ValueError(
                    f"{name}_after ({after.isoformat()}) is later than {name}_before ({before.isoformat()})"
                )
        if self.metadata is not None and count_conditions(self.metadata) > MAX_FILTER_CONDITIONS:
            raise ValueError(f"at most {MAX_FILTER_CONDITIONS} metadata conditions in one filter")
        return self

    def is_empty(self) -> bool:
        return not self.model_dump(exclude_none=True)


def count_conditions(node: MetadataFilter) -> int:
    if isinstance(node, MetadataCondition):
        return 1
    if isinstance(node, NoneOf):
        return count_conditions(node.negated)
    parts = node.all_of if isinstance(node, AllOf) else node.any_of
    return sum(count_conditions(part) for part in parts)


for _model in (AllOf, AnyOf, NoneOf, RecallFilter):
    _model.model_rebuild()

__all__ = [
    "AllOf",
    "AnyOf",
    "MetadataCondition",
    "MetadataFilter",
    "NoneOf",
    "RecallFilter",
    "filter_from_json",
    "parse_filter",
    "split_commas",
    "split_tags",
]


def split_tags(text: str) -> list[str]:
    """Tags typed as one text ("work, move"): split at commas, each stripped, blanks dropped. The one rule of every
    surface where tags are typed as text: command-line options, query strings, the proxy's X-Memwrap-Tags header
    and the memory browser's tag fields (its JS twin: static/ui/js/views/memory_fields.js `splitTags`).

    A tag list given as a list (Python `tags=[...]`, a JSON body, an MCP tool's arguments) is taken item by item:
    `recall(tags=["a,b"])` is the one tag "a,b", and `recall(tags=["a", "b"])` the two. So a tag holding a comma can
    be stored and recalled through lists only; a typed "a,b" is always the two tags."""
    return [part.strip() for part in text.split(",") if part.strip()]


def split_commas(values: Sequence[str] | str | None) -> list[str] | None:
    """Tags (or types) as a command line or a query string gives them: repeated, comma-separated, or both —
    `--tags work,move`, `--tags work --tags move` and `?tags=work,move` are the same two tags (`split_tags`). Blank
    parts are dropped; None stays None. Nothing but blank parts is returned as given, so that validation names the
    empty tag rather than the filter matching nothing."""
    if values is None:
        return None
    given = [values] if isinstance(values, str) else list(values)
    parts = [part for value in given for part in split_tags(str(value))]
    return parts if parts or not given else [str(value) for value in given]


def parse_filter(value: RecallFilter | Mapping[str, Any] | None) -> RecallFilter | None:
    """A caller's filter (the model or its JSON form), checked: InvalidInputError says what is wrong and where."""
    if value is None or isinstance(value, RecallFilter):
        return value
    try:
        _check_depth(value)
        return RecallFilter.model_validate(value)
    except ValueError as exc:
        if not isinstance(exc, ValidationError):
            raise InvalidInputError(f"Invalid recall filter: {exc}.") from None
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'] if _union_member(p) is None) or 'filters'}: "
            f"{e['msg'].removeprefix('Value error, ')}"
            for e in _errors_of_meant_forms(exc.errors())
        )
        raise InvalidInputError(f"Invalid recall filter: {problems}.") from None


# A metadata filter is a union: pydantic tries a node as each form and reports every form's errors, labelled by
# form ("metadata.AllOf.and: Field required; metadata.function-after[..., MetadataCondition].key: ..."). The user
# meant one form, the one whose own field the node has: a condition has "key", a compound its "and"/"or"/"not".
_COMPOUND_FIELD = {"AllOf": "and", "AnyOf": "or", "NoneOf": "not", "MetadataCondition": "key"}


def _union_member(part: object) -> str | None:
    """The form a location part labels (pydantic's label of a union member), or None for a field or index."""
    if not isinstance(part, str):
        return None
    if part in _COMPOUND_FIELD:
        return part
    if part.endswith(", MetadataCondition]"):  # function-after[_one_operator_at_least(), MetadataCondition]
        return "MetadataCondition"
    return None


def _condition_labels(errors: list[Any], node: tuple[Any, ...]) -> set[str]:
    """pydantic's labels of the condition form at `node` (its label names the model's validators)."""
    return {
        error["loc"][len(node)]
        for error in errors
        if tuple(error["loc"][: len(node)]) == node
        and len(error["loc"]) > len(node)
        and _union_member(error["loc"][len(node)]) == "MetadataCondition"
    }


def _errors_of_meant_forms(errors: list[Any]) -> list[Any]:
    """The errors of the forms the user meant: a form that misses its own field at a node was not meant there.
    Locations keep their labels (the caller drops them); all errors come back if no form can be told apart."""
    not_meant: set[tuple[Any, ...]] = set()
    tried: dict[tuple[Any, ...], set[str]] = {}  # node -> the forms that reported errors there
    for error in errors:
        loc = tuple(error["loc"])
        for at, part in enumerate(loc):
            form = _union_member(part)
            if form:
                tried.setdefault(loc[:at], set()).add(form)
                if error["type"] == "missing" and loc[at + 1 :] == (_COMPOUND_FIELD[form],):
                    not_meant.add(loc[: at + 1])
    for node, forms in tried.items():  # a compound was meant here: the node is not a condition
        if any(node + (form,) not in not_meant for form in forms - {"MetadataCondition"}):
            not_meant.update(node + (label,) for label in _condition_labels(errors, node))
    meant = [
        error
        for error in errors
        if not any(tuple(error["loc"])[: at + 1] in not_meant for at in range(len(error["loc"])))
    ]
    return _one_per_comparison(meant or errors)


# An ordered comparison's value is a union of strict types: pydantic says what it is not, once per type.
_ORDERED_LABELS = ("int", "float", "str", "none")


def _one_per_comparison(errors: list[Any]) -> list[Any]:
    out: list[Any] = []
    seen: set[tuple[Any, ...]] = set()
    for error in errors:
        loc = tuple(error["loc"])
        if loc and loc[-1] in _ORDERED_LABELS and len(loc) > 1 and loc[-2] in ("gt", "gte", "lt", "lte"):
            if loc[:-1] not in seen:
                seen.add(loc[:-1])
                out.append({**error, "loc": loc[:-1], "msg": f"'{loc[-2]}' compares with a number or a string"})
            continue
        out.append(error)
    return out


def filter_from_json(text: str, *, what: str) -> RecallFilter | None:
    """A filter sent as JSON text (a query parameter, the proxy's X-Memwrap-Filter header), checked:
    InvalidInputError names `what` and says what is wrong, nested too deeply included."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise InvalidInputError(f"{what}: the filter nests deeper than {MAX_FILTER_DEPTH} levels.") from None
    except ValueError as exc:
        raise InvalidInputError(f"{what} must be a recall filter as JSON ({exc}).") from None
    if value is not None and not isinstance(value, Mapping):
        raise InvalidInputError(f'{what} must be a recall filter as a JSON object, e.g. {{"metadata": {{...}}}}.')
    try:
        return parse_filter(value)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{what}: {exc}") from None
