"""The precision set's files, read into scenarios: what each bank retains (as an application or the wrappers would
give it to memwrap) and the questions asked of it, with what answers them.

Four files, one per category (time_scoped.json, replaced_facts.json, speakers.json, entities.json), and
background.json: everyday memories some scenarios add. A scenario is one bank in one of three shapes:

* `notes`: an application retains its own notes, one item each (content = the note, document_id = its id).
* `exchanges`: the wrappers' shape. One item per exchange, "user: ...\\nassistant: ..." (transcript.render), in a
  session per day whose id is derived from its first message as the wrappers derive it; document_id
  "<session>:turn-<n>", the wrappers' metadata (source, session_id, turn) and context.
* `turns`: transcripts and group chats, one item per turn, "Name: text"; document_id "<session>:<n>" (as LoCoMo's
  dia ids), the turn's time a minute or two after the one before.

`load` checks every file before anything is retained (ids, references, ranges, splits) and raises
`PrecisionSetError` naming the scenario and question at fault.
"""

from __future__ import annotations

import calendar
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CATEGORY_FILES: dict[str, str] = {
    "time": "time_scoped.json",
    "replaced": "replaced_facts.json",
    "speakers": "speakers.json",
    "entities": "entities.json",
}
CATEGORIES: tuple[str, ...] = tuple(CATEGORY_FILES)
SPLITS: tuple[str, ...] = ("dev", "heldout")
SHAPES: tuple[str, ...] = ("notes", "exchanges", "turns")
# What the wrappers write beside an exchange (memwrap/wrappers/core.py exchange_item).
EXCHANGE_CONTEXT = "conversation between the user and an AI assistant"
EXCHANGE_SOURCE = "memwrap.openai.chat"


class PrecisionSetError(ValueError):
    """A precision-set file that does not hold together (a bad id, range or reference)."""


@dataclass(frozen=True)
class Span:
    """Whole days, both ends included."""

    start: date
    end: date

    def overlaps(self, other: Span) -> bool:
        return self.start <= other.end and other.start <= self.end

    def __str__(self) -> str:
        return f"{self.start}..{self.end}"


@dataclass(frozen=True)
class Item:
    """One retained item and what the set knows about it."""

    id: str  # the set's own name for it ("m05", "alice-lactose", or "<session>:<n>" for an unnamed turn)
    content: str
    timestamp: datetime
    document_id: str
    context: str | None
    metadata: dict[str, Any]
    occurred: Span  # when its event happened: the `occurred` label, else the day it was said
    speaker: str  # "user" / "assistant" for exchanges and notes, the name before the colon for turns
    background: bool = False


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    range: Span | None = None  # time: the span asked about
    expected: tuple[str, ...] = ()  # time (a topic within the range), speakers, entities: what answers it
    newer: tuple[str, ...] = ()  # replaced: the statement(s) of the current state
    older: tuple[str, ...] = ()  # replaced: what it replaced
    restated: tuple[str, ...] = ()  # speakers: the assistant's restatements of the expected fact


@dataclass(frozen=True)
class Scenario:
    id: str
    category: str
    split: str
    language: str
    shape: str
    now: datetime
    about: str
    items: tuple[Item, ...]
    questions: tuple[Question, ...]
    by_document: dict[str, str] = field(default_factory=dict, compare=False)  # document_id -> item id

    def item(self, item_id: str) -> Item:
        return next(i for i in self.items if i.id == item_id)

    def in_range(self, span: Span) -> set[str]:
        return {i.id for i in self.items if i.occurred.overlaps(span)}

    def relevant(self, question: Question) -> set[str]:
        """The memories that answer a time-scoped question: the named ones, else every one inside its range."""
        assert question.range is not None
        return set(question.expected) if question.expected else self.in_range(question.range)


# ----------------------------------------------------------------------------------------------- parsing


def parse_span(text: str) -> Span:
    """ "2026", "2026-08", "2026-08-14" or "A..B" of those (B's last day included)."""
    first, _, last = text.partition("..")
    start = _bound(first.strip(), last=False)
    end = _bound((last or first).strip(), last=True)
    if end < start:
        raise PrecisionSetError(f"span {text!r} ends before it starts")
    return Span(start, end)


def _bound(text: str, *, last: bool) -> date:
    parts = text.split("-")
    try:
        if len(parts) == 1:
            year = int(parts[0])
            return date(year, 12, 31) if last else date(year, 1, 1)
        if len(parts) == 2:
            year, month = int(parts[0]), int(parts[1])
            return date(year, month, calendar.monthrange(year, month)[1] if last else 1)
        if len(parts) == 3:
            return date.fromisoformat(text)
    except ValueError as exc:
        raise PrecisionSetError(f"not a date, month or year: {text!r}") from exc
    raise PrecisionSetError(f"not a date, month or year: {text!r}")


def parse_time(text: str) -> datetime:
    """An ISO time; the set writes them without an offset, meaning UTC."""
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def session_id(first_user_text: str) -> str:
    """The wrappers' session key for a conversation with no system prompt (transcript.session_key)."""
    digest = hashlib.sha256(f"\x00{first_user_text}".encode()).hexdigest()
    return f"chat-{digest[:16]}"


def render_exchange(user: str, assistant: str) -> str:
    """An exchange as the wrappers retain it (transcript.render)."""
    return f"user: {user.strip()}\nassistant: {assistant.strip()}"


# ----------------------------------------------------------------------------------------------- items


def _day(moment: datetime) -> Span:
    return Span(moment.date(), moment.date())


def _occurred(raw: dict[str, Any], said: datetime) -> Span:
    return parse_span(raw["occurred"]) if raw.get("occurred") else _day(said)


def _notes(scenario: dict[str, Any], entries: list[dict[str, Any]]) -> list[Item]:
    items = []
    for raw in entries:
        said = parse_time(raw["said"])
        items.append(
            Item(
                id=raw["id"],
                content=raw["text"],
                timestamp=said,
                document_id=raw["id"],
                context=scenario.get("context"),
                metadata={},
                occurred=_occurred(raw, said),
                speaker="user",
                background=raw.get("background", False),
            )
        )
    return items


def _exchanges(entries: list[dict[str, Any]]) -> list[Item]:
    """One conversation per day (a new chat each day, as an app opens one), turns numbered within it."""
    items = []
    by_day: dict[date, list[dict[str, Any]]] = {}
    for raw in sorted(entries, key=lambda r: parse_time(r["said"])):
        by_day.setdefault(parse_time(raw["said"]).date(), []).append(raw)
    for conversation in by_day.values():
        session = session_id(conversation[0]["user"])
        for turn, raw in enumerate(conversation, start=1):
            said = parse_time(raw["said"])
            items.append(
                Item(
                    id=raw["id"],
                    content=render_exchange(raw["user"], raw["assistant"]),
                    timestamp=said,
                    document_id=f"{session}:turn-{turn}",
                    context=EXCHANGE_CONTEXT,
                    metadata={"source": EXCHANGE_SOURCE, "session_id": session, "turn": turn},
                    occurred=_occurred(raw, said),
                    speaker="user",
                    background=raw.get("background", False),
                )
            )
    return items


def _turns(sessions: list[dict[str, Any]]) -> list[Item]:
    items = []
    for session in sessions:
        when = parse_time(session["start"])
        for n, turn in enumerate(session["turns"], start=1):
            if len(turn) not in (2, 3):
                raise PrecisionSetError(f"session {session['id']} turn {n}: [speaker, text] or [speaker, text, id]")
            speaker, text = turn[0], turn[1]
            item_id = turn[2] if len(turn) == 3 else f"{session['id']}:{n}"
            items.append(
                Item(
                    id=item_id,
                    content=f"{speaker}: {text}",
                    timestamp=when,
                    document_id=f"{session['id']}:{n}",
                    context=session.get("context"),
                    metadata={},
                    occurred=_day(when),
                    speaker=speaker,
                )
            )
            when += timedelta(minutes=1 + len(text) // 80)  # typing time: longer turns come later
    return items


def _background(scenario: dict[str, Any], pool: Sequence[Sequence[str]]) -> list[dict[str, Any]]:
    """The pool's exchanges spread evenly between the scenario's first and last memory, at 13:00 + i minutes."""
    said = sorted(parse_time(m["said"]) for m in scenario["memories"])
    first, last = said[0], said[-1]
    step = (last - first) / (len(pool) + 1)
    entries = []
    for i, (user, assistant) in enumerate(pool, start=1):
        when = (first + step * i).replace(hour=13, minute=i, second=0, microsecond=0)
        entries.append(
            {
                "id": f"bg{i:02d}",
                "said": when.isoformat(),
                "user": user,
                "assistant": assistant,
                "text": user,
                "background": True,
            }
        )
    return entries


# ----------------------------------------------------------------------------------------------- loading


def _ids(values: Any, where: str) -> tuple[str, ...]:
    if values is None:
        return ()
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise PrecisionSetError(f"{where}: expected a list of memory ids")
    return tuple(values)


def _question(raw: dict[str, Any], category: str, where: str) -> Question:
    required = {
        "time": ("range",),
        "replaced": ("newer", "older"),
        "speakers": ("expected",),
        "entities": ("expected",),
    }[category]
    missing = [k for k in ("id", "text", *required) if not raw.get(k)]
    if missing:
        raise PrecisionSetError(f"{where}: missing {', '.join(missing)}")
    return Question(
        id=raw["id"],
        text=raw["text"],
        range=parse_span(raw["range"]) if category == "time" else None,
        expected=_ids(raw.get("expected"), where),
        newer=_ids(raw.get("newer"), where),
        older=_ids(raw.get("older"), where),
        restated=_ids(raw.get("restated"), where),
    )


def _scenario(raw: dict[str, Any], category: str, background: dict[str, list[list[str]]]) -> Scenario:
    sid = raw.get("id", "?")
    if raw.get("split") not in SPLITS:
        raise PrecisionSetError(f"{sid}: split must be one of {SPLITS}, not {raw.get('split')!r}")
    shape = raw.get("shape")
    if shape not in SHAPES:
        raise PrecisionSetError(f"{sid}: shape must be one of {SHAPES}, not {shape!r}")
    entries = list(raw.get("memories", []))
    if raw.get("background"):
        if shape == "turns":
            raise PrecisionSetError(f"{sid}: background memories go into notes or exchanges, not transcripts")
        entries += _background(raw, background[raw["background"]])
    if shape == "notes":
        items = _notes(raw, entries)
    elif shape == "exchanges":
        items = _exchanges(entries)
    else:
        items = _turns(raw.get("sessions", []))
    ids = [i.id for i in items]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise PrecisionSetError(f"{sid}: duplicate memory ids {duplicates}")
    questions = tuple(_question(q, category, f"{sid} {q.get('id', '?')}") for q in raw.get("questions", []))
    scenario = Scenario(
        id=sid,
        category=category,
        split=raw["split"],
        language=raw.get("language", "?"),
        shape=shape,
        now=parse_time(raw["now"]),
        about=raw.get("about", ""),
        items=tuple(items),
        questions=questions,
        by_document={i.document_id: i.id for i in items},
    )
    _check(scenario)
    return scenario


def _check(s: Scenario) -> None:
    """What a question claims about its bank holds: ids exist, ranges hold memories, changes come later."""
    known = {i.id for i in s.items}
    qids = [q.id for q in s.questions]
    if len(set(qids)) != len(qids) or not qids:
        raise PrecisionSetError(f"{s.id}: question ids must be unique and there must be questions")
    if any(i.timestamp > s.now for i in s.items):
        raise PrecisionSetError(f"{s.id}: a memory is said after the scenario's `now`")
    for q in s.questions:
        where = f"{s.id} {q.id}"
        unknown = [m for m in (*q.expected, *q.newer, *q.older, *q.restated) if m not in known]
        if unknown:
            raise PrecisionSetError(f"{where}: unknown memory ids {unknown}")
        if s.category == "time":
            assert q.range is not None
            outside = set(q.expected) - s.in_range(q.range)
            if outside:
                raise PrecisionSetError(f"{where}: expected memories {sorted(outside)} are outside {q.range}")
            if not s.relevant(q):
                raise PrecisionSetError(f"{where}: no memory inside {q.range}")
        if s.category == "replaced":
            newest_old = max(s.item(m).timestamp for m in q.older)
            if any(s.item(m).timestamp <= newest_old for m in q.newer):
                raise PrecisionSetError(f"{where}: a newer statement is not said after the older ones")
        if q.restated and s.category != "speakers":
            raise PrecisionSetError(f"{where}: `restated` belongs to speaker questions")
        if set(q.restated) & set(q.expected):
            raise PrecisionSetError(f"{where}: a memory is both expected and a restatement")


def load(categories: Iterable[str] = CATEGORIES, directory: Path = HERE) -> list[Scenario]:
    """Every scenario of the given categories, checked."""
    background = json.loads((directory / "background.json").read_text(encoding="utf-8"))
    scenarios = []
    for category in categories:
        if category not in CATEGORY_FILES:
            raise PrecisionSetError(f"unknown category {category!r}; known: {', '.join(CATEGORIES)}")
        raw = json.loads((directory / CATEGORY_FILES[category]).read_text(encoding="utf-8"))
        if raw.get("category") != category:
            found = raw.get("category")
            raise PrecisionSetError(f"{CATEGORY_FILES[category]}: category is {found!r}, not {category!r}")
        scenarios += [_scenario(s, category, background) for s in raw["scenarios"]]
    sids = [s.id for s in scenarios]
    if len(set(sids)) != len(sids):
        raise PrecisionSetError("scenario ids must be unique across the set")
    return scenarios


__all__ = [
    "CATEGORIES",
    "SPLITS",
    "Item",
    "PrecisionSetError",
    "Question",
    "Scenario",
    "Span",
    "load",
    "parse_span",
    "render_exchange",
    "session_id",
]
