"""What the server enforces beyond its models' types, said in the OpenAPI document too.

The models declare types and bounds; a few rules live in the engine's checks (memwrap/validate.py) and would be
invisible to a client generated from the document, or to a fuzzer that reads it (schemathesis' conformance checks
in tests/test_server_fuzz.py): a schema-valid request must not be refused, a schema-violating one must not be
accepted. The rules, added to the generated document once:

* text the engine refuses when blank (`validate.text_field`: recall's and reflect's `query`, a mental model's
  `question`, retain's `content`, `document_id` and `tags`, an update's `text`, a disposition's `directives`, tag
  filters): `pattern: NONBLANK`, at least one character that is neither white space nor a control character;
* query-string parameters the engine matches against a pattern (a job `kind`, a `bank_id`): the pattern;
* a query string's `filters` is JSON text: declared as such (`content: application/json` with the filter's
  schema), so a client sends a filter object, not any string;
* an update needs at least one field: its body is required and has `minProperties: 1`; its `occurred_end`
  needs its `occurred_start`; a purge (delete_memories) names what it selects: filters, tags, types or a
  document_id, given and not null (a filter: one of its parts);
* a recall's `bank_id` (one or several) has the bank id's pattern, a filter condition's key its length and depth;
  a condition has an operator at least, and `in`/`not_in` 1 to MAX_IN_VALUES values;
* lengths and numbers the engine bounds (text limits, a mental model's name, `top_k`, `timeout`,
  `refresh_every`, a filter's lists of ids) where the declaration does not say so already;
* a body's memory `types`: one of the memory types (validate.memory_types), as the query string's already are;
* a `filters` or `disposition` in a body is that model's JSON form: the Python API's "or a mapping" alternative
  (any object) is left out of the document, where a mapping is the JSON form itself;
* reflect's `response_schema` over JSON is a JSON schema (an object the engine checks against the JSON Schema
  meta-schema, reflect/output.py): an object whose common keywords have the meta-schema's types.

Not said by the document, and told to a generator instead (tests/test_server_fuzz.py): no text may hold a NUL
character or a lone surrogate (PostgreSQL cannot store them; every such request is a 422, as the API's
description says).

The rules name what they amend; a name the document no longer has is skipped (the document then says less, the
server still checks).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from memwrap import validate
from memwrap.engine.webhooks.urls import MAX_URL_CHARS, WEBHOOK_URL_PATTERN
from memwrap.filters import MAX_ID_VALUES, MAX_IN_VALUES, MAX_KEY_CHARS, MAX_KEY_DEPTH
from memwrap.models import ENTITY_TYPE_NAME_PATTERN, MEMORY_TYPES

# At least one character that is neither white space nor a control character, in the engine's sense
# (validate.text_field: Python's str.strip() white space, which holds \x1c-\x1f and \x85 where ECMA-262's \s does
# not, and the control characters it blanks); unanchored, and read the same by ECMA-262 and Python's re.
NONBLANK = r"[^\u0000-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
# Properties of request bodies whose text the engine refuses when blank (strings, or lists of strings).
NONBLANK_PROPERTIES = frozenset({"query", "question", "content", "document_id", "text", "tags", "directives"})
# Their lengths (validate.text_field's limits; a list's limit is each item's).
MAX_LENGTHS = {
    "query": validate.MAX_QUERY_CHARS,
    "question": validate.MAX_QUERY_CHARS,
    "content": validate.MAX_CONTENT_CHARS,
    "text": validate.MAX_CONTENT_CHARS,
    "document_id": validate.MAX_DOCUMENT_ID_CHARS,
    "tags": validate.MAX_TAG_CHARS,
    "directives": 2000,
}
# Properties of request bodies the engine matches against a pattern.
PATTERN_PROPERTIES = {
    "url": WEBHOOK_URL_PATTERN,  # webhooks/urls.check_url matches the same expression: the server accepts it
    "bank_id": r"^[\w][\w.:@+\-]{0,127}$",  # /v1/recall's bank (or banks), as the path parameter declares it
}
# A mental model's name: 1-200 characters (engine/learn: "A mental model's name is 1-200 characters").
LENGTH_PROPERTIES = {"name": (1, 200)}
# Their lengths, for properties with a pattern.
PATTERN_LENGTHS = {"url": MAX_URL_CHARS}
# Numbers the engine bounds where the declaration does not (yet) say so; a bound declared in memwrap/verbs.py wins.
NUMBER_BOUNDS: dict[str, dict[str, int]] = {
    "timeout": {"exclusiveMinimum": 0},  # reflect: seconds > 0
    "refresh_every": {"exclusiveMinimum": 0},  # a mental model's: seconds > 0
    "max_iterations": {"minimum": 1, "maximum": 100},  # reflect
}
# A recall filter's lists of ids: 1 to MAX_ID_VALUES items (filters.RecallFilter._ids).
FILTER_ID_LISTS = ("document_ids", "session_ids", "speakers", "entity_types")
# A recall filter's entity type names: the pattern of a declared name (filters.RecallFilter._type_names).
FILTER_PATTERN_LISTS = {"entity_types": ENTITY_TYPE_NAME_PATTERN}
# Query-string parameters the same (strings, or lists of strings).
NONBLANK_PARAMETERS = frozenset({"tags", "tag"})
# Query-string parameters checked against a pattern by the engine (ECMA-262 forms of its regular expressions;
# the bank id's `\\w` is ASCII there, narrower than the server's: what the document allows, the server accepts).
PATTERN_PARAMETERS = {
    "kind": r"^[A-Za-z0-9_.:-]{1,100}$",  # engine/learn/verbs.py: a job kind
    "bank_id": r"^[\w][\w.:@+\-]{0,127}$",  # validate.BANK_ID_RE, as the path parameter declares it
}
FILTER_PARAMETERS = frozenset({"filters"})
FILTER_SCHEMA = "RecallFilter"
# Properties of request bodies whose strings are one of a fixed set (strings, or lists of strings).
ENUM_PROPERTIES: dict[str, tuple[str, ...]] = {"types": MEMORY_TYPES}
# Properties of request bodies declared as a model or any mapping (the Python API's convenience): over JSON only the
# model's form is accepted (its extra keys refused), so the free-form object alternative goes.
MODEL_ONLY_PROPERTIES = frozenset({"filters", "disposition"})
# reflect's response_schema (declared Any: a pydantic class or a JSON schema in Python): a JSON schema, whose
# keywords below must have the meta-schema's types (jsonschema's check_schema refuses {"type": 5}, a list, ...).
JSON_SCHEMA_PROPERTIES = frozenset({"response_schema"})
RESPONSE_SCHEMA = "ResponseSchema"
_SIMPLE_TYPES = ["array", "boolean", "integer", "null", "number", "object", "string"]
_SUBSCHEMA = {"type": ["object", "boolean"]}
_COUNT = {"type": "integer", "minimum": 0}
RESPONSE_SCHEMA_COMPONENT: dict[str, Any] = {
    "type": "object",
    "title": RESPONSE_SCHEMA,
    "description": "A JSON schema (draft 2020-12) for the answer's `structured` part; checked against the "
    "meta-schema (a schema the meta-schema refuses is a 422).",
    "properties": {
        "type": {
            "anyOf": [
                {"type": "string", "enum": _SIMPLE_TYPES},
                {
                    "type": "array",
                    "items": {"type": "string", "enum": _SIMPLE_TYPES},
                    "minItems": 1,
                    "uniqueItems": True,
                },
            ]
        },
        "properties": {"type": "object", "additionalProperties": _SUBSCHEMA},
        "$defs": {"type": "object", "additionalProperties": _SUBSCHEMA},
        "required": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "items": _SUBSCHEMA,
        "additionalProperties": _SUBSCHEMA,
        "enum": {"type": "array"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "minimum": {"type": "number"},
        "maximum": {"type": "number"},
        "minLength": _COUNT,
        "maxLength": _COUNT,
        "minItems": _COUNT,
        "maxItems": _COUNT,
    },
}
# Bodies of which at least one property must be given ("update needs at least one of ...").
NON_EMPTY_BODIES = {("/v1/banks/{bank_id}/memories/{memory_id}", "patch")}
# Bodies that must name what they select or change: one of the first properties given and not null (a filter counts
# when one of its parts is not null), or one of the second given at all (its null means something: "clear it").
# engine.delete_memories: "needs filters, tags, types or a document_id"; engine/update.py: "needs at least one of
# text, metadata, tags, occurred_start, expires_at" ({"tags": null} is nothing to change).
SELECTING_BODIES: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {
    ("/v1/banks/{bank_id}/memories/delete", "post"): (("filters", "tags", "types", "document_id"), ()),
    ("/v1/banks/{bank_id}/memories/{memory_id}", "patch"): (
        ("text", "metadata", "tags", "occurred_start", "occurred_end"),
        ("expires_at",),
    ),
}


def amend(schema: dict[str, Any]) -> dict[str, Any]:
    """Apply the rules to a generated OpenAPI document, in place; returns it."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for name in sorted(_request_components(schema, components)):
        for prop, value in components[name].get("properties", {}).items():
            _amend_property(prop, value, components)
    _amend_filters(components)
    for path, method, operation in _operations(schema):
        for parameter in operation.get("parameters", []):
            if parameter.get("in") == "query":
                _amend_query_parameter(parameter, components)
        if (path, method) in NON_EMPTY_BODIES and "requestBody" in operation:
            _non_empty(operation["requestBody"], components)
        if (path, method) in SELECTING_BODIES and "requestBody" in operation:
            _selecting(operation["requestBody"], *SELECTING_BODIES[path, method], components)
    return schema


def _amend_property(prop: str, value: dict[str, Any], components: dict[str, Any]) -> None:
    """One property of a request body's schema, by the table that names it."""
    if prop in NONBLANK_PROPERTIES:
        _nonblank(value)
        _strings(value, maxLength=MAX_LENGTHS[prop])
    elif prop in PATTERN_PROPERTIES:
        _pattern(value, PATTERN_PROPERTIES[prop])
        if prop in PATTERN_LENGTHS:
            _strings(value, maxLength=PATTERN_LENGTHS[prop])
    elif prop in LENGTH_PROPERTIES:
        low, high = LENGTH_PROPERTIES[prop]
        _strings(value, minLength=low, maxLength=high)
    elif prop in NUMBER_BOUNDS:
        _numbers(value, NUMBER_BOUNDS[prop])
    elif prop in ENUM_PROPERTIES:
        _enum(value, ENUM_PROPERTIES[prop])
    elif prop in MODEL_ONLY_PROPERTIES:
        _model_only(value)
    elif prop in JSON_SCHEMA_PROPERTIES:
        components.setdefault(RESPONSE_SCHEMA, RESPONSE_SCHEMA_COMPONENT)
        reference = {"$ref": f"#/components/schemas/{RESPONSE_SCHEMA}"}
        kept = {k: v for k, v in value.items() if k in ("title", "description")}
        value.clear()
        value.update(kept, anyOf=[reference, {"type": "null"}])


def _amend_filters(components: dict[str, Any]) -> None:
    """The metadata condition's key and value lists, and the filter's lists of ids."""
    condition = components.get("MetadataCondition", {})
    key = condition.get("properties", {}).get("key")
    if isinstance(key, dict):  # filters.MetadataCondition._path: 1-8 non-empty keys of at most 200 characters
        _strings(key, minLength=1, maxLength=MAX_KEY_CHARS)
        _arrays(key, minItems=1, maxItems=MAX_KEY_DEPTH)
        # _one_operator_at_least: the key and one operator at least ({"key": ["a"]} alone was a 422).
        condition["minProperties"] = 2
    for name in ("in", "not_in"):  # 1 to MAX_IN_VALUES values; null is no list of values ({"in": null}: a 422)
        values = condition.get("properties", {}).get(name)
        if isinstance(values, dict):
            _not_null(values)
            _arrays(values, minItems=1, maxItems=MAX_IN_VALUES)
    for prop in FILTER_ID_LISTS:
        node = components.get(FILTER_SCHEMA, {}).get("properties", {}).get(prop)
        if isinstance(node, dict):
            _arrays(node, minItems=1, maxItems=MAX_ID_VALUES)
            if prop in FILTER_PATTERN_LISTS:
                _pattern(node, FILTER_PATTERN_LISTS[prop])


def _amend_query_parameter(parameter: dict[str, Any], components: dict[str, Any]) -> None:
    """A query parameter: non-blank, a pattern, or the filter as JSON."""
    if parameter["name"] in NONBLANK_PARAMETERS and "schema" in parameter:
        _nonblank(parameter["schema"])
    elif parameter["name"] in PATTERN_PARAMETERS and "schema" in parameter:
        _pattern(parameter["schema"], PATTERN_PARAMETERS[parameter["name"]])
    elif parameter["name"] in FILTER_PARAMETERS and FILTER_SCHEMA in components:
        parameter.pop("schema", None)
        parameter["content"] = {"application/json": {"schema": {"$ref": f"#/components/schemas/{FILTER_SCHEMA}"}}}


def _non_empty(body: dict[str, Any], components: dict[str, Any]) -> None:
    """A body that must say something: required, one property at least; an update's end needs its start."""
    body["required"] = True
    for media in body.get("content", {}).values():
        target = media.get("schema", {})
        ref = target.get("$ref") or next((s.get("$ref") for s in target.get("anyOf", []) if "$ref" in s), None)
        media["schema"] = {"$ref": ref, "minProperties": 1} if ref else {**target, "minProperties": 1}
        if ref:
            update = components.get(ref.rsplit("/", 1)[1], {})
            if "occurred_end" in update.get("properties", {}):
                update.setdefault("dependentSchemas", {})["occurred_end"] = {
                    "required": ["occurred_start"],
                    "properties": {"occurred_start": {"type": "string"}},
                }


def _selecting(
    body: dict[str, Any], selectors: tuple[str, ...], present: tuple[str, ...], components: dict[str, Any]
) -> None:
    """The body is required, and one of `selectors` is given and not null (a filter: one of its parts), or one of
    `present` is given."""
    body["required"] = True
    filter_parts = sorted(components.get(FILTER_SCHEMA, {}).get("properties", {}))
    some_part = [{"required": [part], "properties": {part: {"not": {"type": "null"}}}} for part in filter_parts]
    for media in body.get("content", {}).values():
        target = media.get("schema", {})
        ref = target.get("$ref") or next((s.get("$ref") for s in target.get("anyOf", []) if "$ref" in s), None)
        if not ref:
            continue
        given = []
        for name in selectors:
            value: dict[str, Any] = {"not": {"type": "null"}}
            if name == "filters" and some_part:
                value = {"type": "object", "anyOf": some_part}
            given.append({"required": [name], "properties": {name: value}})
        given.extend({"required": [name]} for name in present)
        media["schema"] = {
            **{k: v for k, v in target.items() if k not in ("anyOf", "$ref")},
            "$ref": ref,
            "anyOf": given,
        }


def _operations(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            if isinstance(operation, dict):
                yield path, method, operation


def _request_components(schema: dict[str, Any], components: dict[str, Any]) -> set[str]:
    """The component schemas a request body can reach ($ref by $ref): responses keep their own."""
    seen: set[str] = set()
    stack = [
        media.get("schema", {})
        for _, _, operation in _operations(schema)
        for media in operation.get("requestBody", {}).get("content", {}).values()
    ]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
                name = ref.rsplit("/", 1)[1]
                if name not in seen and name in components:
                    seen.add(name)
                    stack.append(components[name])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return seen


def _options(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The node and, for a union (anyOf), each of its options."""
    yield node
    for option in node.get("anyOf", []):
        if isinstance(option, dict):
            yield option


def _strings(node: dict[str, Any], **bounds: int) -> None:
    for option in _options(node):
        if option.get("type") == "string":
            for key, value in bounds.items():
                option.setdefault(key, value)
        elif option.get("type") == "array" and isinstance(option.get("items"), dict):
            _strings(option["items"], **bounds)


def _numbers(node: dict[str, Any], bounds: dict[str, int]) -> None:
    for option in _options(node):
        if option.get("type") in ("integer", "number") and not {"minimum", "exclusiveMinimum"} & set(option):
            option.update(bounds)


def _arrays(node: dict[str, Any], **bounds: int) -> None:
    for option in _options(node):
        if option.get("type") == "array":
            for key, value in bounds.items():
                option.setdefault(key, value)


def _enum(node: dict[str, Any], values: tuple[str, ...]) -> None:
    for option in _options(node):
        if option.get("type") == "string":
            option["enum"] = list(values)
        elif option.get("type") == "array" and isinstance(option.get("items"), dict):
            _enum(option["items"], values)


def _not_null(node: dict[str, Any]) -> None:
    options = node.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
        if len(kept) == 1 and isinstance(kept[0], dict):
            del node["anyOf"]
            node.update(kept[0])
        else:
            node["anyOf"] = kept


def _model_only(node: dict[str, Any]) -> None:
    """A union of a model ($ref) and any object: the model alone (and null, when it was allowed)."""
    options = node.get("anyOf")
    if not isinstance(options, list) or not any(isinstance(o, dict) and "$ref" in o for o in options):
        return
    node["anyOf"] = [
        o for o in options if not (isinstance(o, dict) and o.get("type") == "object" and "properties" not in o)
    ]


def _pattern(node: dict[str, Any], pattern: str) -> None:
    if node.get("type") == "string":
        node["pattern"] = pattern
    elif node.get("type") == "array" and isinstance(node.get("items"), dict):
        _pattern(node["items"], pattern)
    for option in node.get("anyOf", []):
        if isinstance(option, dict):
            _pattern(option, pattern)


def _nonblank(node: dict[str, Any]) -> None:
    """A string schema, a list of them, or a nullable one of those: its strings need a non-blank character."""
    if node.get("type") == "string" and "enum" not in node and "format" not in node:
        node.setdefault("pattern", NONBLANK)
    elif node.get("type") == "array" and isinstance(node.get("items"), dict):
        _nonblank(node["items"])
    for option in node.get("anyOf", []):
        if isinstance(option, dict):
            _nonblank(option)
