"""A RecallFilter (memwrap/filters.py) as SQL conditions on memory_units: every value is a bind parameter.

Keys are parameters too (text[] paths for `#>`), so nothing a caller writes is ever spliced into the statement;
the statement's shape depends only on which operators are used.

Index use (migration 0007, measured in tests/test_recall_filters.py):
- equality, `in` and their negations are jsonb containment (`metadata @> {"k": v}`), which the GIN index
  (bank_id, metadata jsonb_path_ops) answers;
- occurred ranges use the same interval expression as the temporal arm, so its GiST index serves them;
- mentioned ranges use (bank_id, mentioned_at); documents (bank_id, document_id); sessions (bank_id, session_key);
- entity types read each candidate's entity links (unit_entities' primary key) and those entities (theirs).
Comparisons and `exists` read the value of each candidate row (no index: they refine what the rest selected).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memwrap.filters import AllOf, AnyOf, MetadataCondition, MetadataFilter, NoneOf, RecallFilter, parse_filter


class Params:
    """Bind parameters numbered from `first`: `add(value)` returns its placeholder."""

    def __init__(self, first: int) -> None:
        self.first = first
        self.values: list[object] = []

    def add(self, value: object, cast: str = "") -> str:
        self.values.append(value)
        return f"${self.first + len(self.values) - 1}{cast}"


def recall_filter(value: RecallFilter | Mapping[str, Any] | None) -> RecallFilter | None:
    """The caller's filter, checked; None when there is nothing to filter on."""
    checked = parse_filter(value)
    return None if checked is None or checked.is_empty() else checked


def compile_filter(where: RecallFilter, alias: str, params: Params, bank_id: str) -> list[str]:
    """SQL conditions (to be ANDed) on memory_units `alias` of bank `bank_id`, their values added to `params`."""
    m = alias
    conditions: list[str] = []
    if where.metadata is not None:
        conditions.append(_metadata(where.metadata, m, params))
    if where.occurred_after is not None or where.occurred_before is not None:
        # The expression of the GiST index memory_units_occurred_range (migration 0005): undated memories never match.
        conditions.append(
            f"({m}.occurred_start IS NOT NULL AND tstzrange({m}.occurred_start, "
            f"greatest({m}.occurred_start, {m}.occurred_end), '[]') && "
            f"tstzrange({params.add(where.occurred_after, '::timestamptz')}, "
            f"{params.add(where.occurred_before, '::timestamptz')}, '[]'))"
        )
    if where.mentioned_after is not None:
        conditions.append(f"{m}.mentioned_at >= {params.add(where.mentioned_after)}")
    if where.mentioned_before is not None:
        conditions.append(f"{m}.mentioned_at <= {params.add(where.mentioned_before)}")
    if where.document_ids is not None:
        conditions.append(f"{m}.document_id = ANY({params.add(where.document_ids, '::text[]')})")
    if where.session_ids is not None:
        conditions.append(f"{m}.session_key = ANY({params.add(where.session_ids, '::text[]')})")
    if where.speakers is not None:
        # lower(speaker): the expression memory_units_speaker indexes (migration 0010).
        wanted = sorted({name.strip().lower() for name in where.speakers})
        conditions.append(f"lower({m}.speaker) = ANY({params.add(wanted, '::text[]')})")
    if where.entity_types is not None:
        # Linked to an entity of one of the types (entities.entity_type, migration 0022): per candidate, its few
        # entity links by primary key (bank_id, unit_id, ...), then each entity by its key. Types are compared in
        # any case, as the bank's names are unique whatever their case (validate.entity_types). The links' bank is
        # bound to the bank itself, not to `m.bank_id`: a join condition alone lets the planner hash a semi-join
        # over every bank's links.
        kinds = sorted({name.strip().lower() for name in where.entity_types})
        conditions.append(
            f"EXISTS (SELECT 1 FROM unit_entities fue JOIN entities fe ON fe.bank_id = fue.bank_id "
            f"AND fe.id = fue.entity_id WHERE fue.bank_id = {params.add(bank_id)} AND fue.unit_id = {m}.id "
            f"AND lower(fe.entity_type) = ANY({params.add(kinds, '::text[]')}))"
        )
    return conditions


def _metadata(node: MetadataFilter, m: str, params: Params) -> str:
    if isinstance(node, AllOf):
        return "(" + " AND ".join(_metadata(part, m, params) for part in node.all_of) + ")"
    if isinstance(node, AnyOf):
        return "(" + " OR ".join(_metadata(part, m, params) for part in node.any_of) + ")"
    if isinstance(node, NoneOf):
        return f"(NOT {_metadata(node.negated, m, params)})"
    return _condition(node, m, params)


def _condition(cond: MetadataCondition, m: str, params: Params) -> str:
    """Each part is true or false, never NULL, so NOT and OR above it mean what they say."""
    parts: list[str] = []
    for op in cond.operators():
        if op == "eq":
            parts.append(_equals(cond.key, cond.eq, m, params))
        elif op == "ne":
            parts.append(f"NOT {_equals(cond.key, cond.ne, m, params)}")
        elif op in ("in", "not_in"):
            values = cond.in_ if op == "in" else cond.not_in
            assert values is not None
            any_of = "(" + " OR ".join(_equals(cond.key, v, m, params) for v in values) + ")"
            parts.append(any_of if op == "in" else f"NOT {any_of}")
        elif op == "exists":
            test = "IS NOT NULL" if cond.exists else "IS NULL"
            parts.append(f"({m}.metadata #> {params.add(cond.key, '::text[]')}) {test}")
        else:
            parts.append(_compare(cond.key, op, getattr(cond, op), m, params))
    return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"


def _nest(path: list[str], value: object) -> object:
    for key in reversed(path):
        value = {key: value}
    return value


def _equals(path: list[str], value: object, m: str, params: Params) -> str:
    # Containment is what the GIN index answers. For a scalar it is equality; for an array or object it only
    # says "contains", so the exact value is checked as well (on the rows the index found).
    contains = f"{m}.metadata @> {params.add(_nest(path, value), '::jsonb')}"
    if isinstance(value, (list, dict)):
        return f"({contains} AND {m}.metadata #> {params.add(path, '::text[]')} = {params.add(value, '::jsonb')})"
    return contains


_SQL_OPERATOR = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _compare(path: list[str], op: str, value: object, m: str, params: Params) -> str:
    target = f"({m}.metadata #> {params.add(path, '::text[]')})"
    symbol = _SQL_OPERATOR[op]
    # CASE, not AND: PostgreSQL does not promise to test the type before it tries the cast.
    if isinstance(value, str):
        bound = params.add(value, "::text")
        return (
            f"(CASE WHEN jsonb_typeof({target}) = 'string' THEN ({target} #>> '{{}}') COLLATE \"C\" {symbol} {bound} "
            'COLLATE "C" ELSE false END)'
        )
    bound = params.add(value, "::numeric")
    return f"(CASE WHEN jsonb_typeof({target}) = 'number' THEN ({target})::numeric {symbol} {bound} ELSE false END)"


__all__ = ["Params", "compile_filter", "recall_filter"]
