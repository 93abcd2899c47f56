"""Extraction: retained turns → typed, dated, self-contained facts, with one LLM call per chunk of turns.

No database here: `plan_chunks` cuts prepared items into chunks at turn boundaries, `extract_chunk` sends one
chunk (stable system prompt first, so provider prompt caching hits; the turns last) and post-validates the
reply. facts.py turns the facts into memory units; resolve.py maps their entities onto the bank's.

What we check instead of trusting the model:
* roles: a fact is "experience" only if one of its source turns was said by the assistant (or a tool it ran);
  whatever the model says, a fact stated only by the user or other people is "world";
* times: our own calendar code resolves the turns' time phrases against when they were said; the model's dates
  are only checked against it (dating.py);
* echoes: a fact that repeats the prompt is dropped (llm/prompt_echo.py);
* provenance: source turn numbers must exist; causes must be earlier facts of the same reply.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Literal

from memwrap.engine.banks.entity_types import Declared, with_entity_types
from memwrap.engine.banks.instructions import with_instructions
from memwrap.engine.language.speakers import (
    FIRST_PERSON,
    METADATA_ROLES,
    NAMED_SPEAKER,
    ROLE_ALIASES,
    ROLE_LINE,
    assistant_voice,
    third_person,
    with_subject,
)
from memwrap.engine.language.text import normalise_whitespace
from memwrap.engine.llm.client import LLM, Usage
from memwrap.engine.llm.prompt_echo import EchoGuard
from memwrap.engine.retain.coverage import lexically_covered, sentences
from memwrap.engine.retain.dating import fact_span
from memwrap.engine.retain.extract_reply import (
    EntityNames,
    Extraction,
    TypedExtraction,
    typed_schema,
)
from memwrap.engine.retain.prepare import PreparedItem, session_key
from memwrap.engine.retain.split import split_units
from memwrap.tokens import count_tokens

log = logging.getLogger("memwrap.extract")

# Bump when the prompt or the schema changes meaning (it is recorded with every fact).
PROMPT_VERSION = 2

# Illustrations are placeholders in <angle brackets>, never plausible memories: a small model returns a
# prompt's example as a fact now and then, and prompt_echo.EchoGuard rejects anything that echoes this text.
SYSTEM_PROMPT = """You turn conversation turns into long-term memories: short facts worth remembering later.

Input: numbered turns "[n] speaker: text" under "Date:" lines (when they were said). Speaker "user" is the person \
using the app, "assistant" is the AI assistant; any other name is a person. Lines under "Earlier" are context only: \
never extract from them.

Rules:
- Extract every fact, event, plan, preference, opinion, decision, outcome, relationship, health detail and secret the \
turns state. Skip only greetings, thanks and filler.
- Each fact stands alone: no pronouns, name who it is about ("the user", "the assistant", or the person's name), keep \
the turn's own time phrase in it, write in the language of the turn. One sentence per fact.
- fact_type: "experience" only for what the assistant itself did, found, recommended or promised; "world" for \
everything else.
- turns: the numbers of the turns the fact comes from.
- entities: names of the people, places, organisations and products in the fact, as written in the turns.
- when: the time phrase of the turn that dates the fact, copied exactly, else null. start, end: the dates it means \
(YYYY-MM-DD), from the Date of its turn; null when the turn gives no time.
- caused_by: 0-based positions of earlier facts in your list that caused this one, else [].
- entities (top level): a person or thing the turns call by several names, as {"name": <fullest name>, "aliases": \
[<other names>]}; else [].

If nothing is worth remembering, return {"facts": [], "entities": []}."""

ECHO = EchoGuard(SYSTEM_PROMPT)


# --- turns and chunks ---------------------------------------------------------------------------------------


@dataclass
class Turn:
    item: PreparedItem
    speaker: str  # what the model sees: "user", "assistant", "tool" or a person's name
    role: Literal["user", "assistant", "tool", "person"]
    text: str
    said_at: datetime
    number: int = 0  # 1-based position in its chunk


@dataclass
class Chunk:
    session: str | None
    turns: list[Turn]
    earlier: list[str] = field(default_factory=list)  # context lines, not extracted from

    @property
    def items(self) -> list[PreparedItem]:
        seen: dict[str, PreparedItem] = {}
        for turn in self.turns:
            seen.setdefault(turn.item.item_hash, turn.item)
        return list(seen.values())


def item_turns(item: PreparedItem, now: datetime) -> list[Turn]:
    """The speaker turns of one prepared item (its defended source), with roles kept."""
    source = item.source
    if source is None:
        raise ValueError("extraction needs PreparedItem.source (the defended item); use prepare_item()")
    said_at = source.timestamp or now
    content = source.content.strip()
    role_meta = str(source.metadata.get("role", "")).lower() if source.metadata else ""
    if role_meta in METADATA_ROLES:
        role = METADATA_ROLES[role_meta]
        speaker = str(source.metadata.get("speaker") or source.metadata.get("name") or role)
        return [Turn(item, speaker if role != "assistant" else "assistant", role, content, said_at)]
    first = ROLE_LINE.match(content)
    if first is not None:
        turns: list[Turn] = []
        marks = list(ROLE_LINE.finditer(content))
        for index, mark in enumerate(marks):
            end = marks[index + 1].start() if index + 1 < len(marks) else len(content)
            label = mark.group(1).lower()
            label = ROLE_ALIASES.get(label, label)
            text = content[mark.end() : end].strip()
            if label == "system" or not text:
                continue
            turns.append(Turn(item, label, label, text, said_at))  # type: ignore[arg-type]  # ROLE_LINE: roles only
        return turns
    named = NAMED_SPEAKER.match(content)
    if named is not None and named.group(1).lower() not in ROLE_ALIASES:
        return [Turn(item, named.group(1), "person", content[named.end() :].strip(), said_at)]
    return [Turn(item, "user", "user", content, said_at)]


def plan_chunks(
    items: list[PreparedItem],
    *,
    now: datetime,
    max_turns: int,
    max_tokens: int,
    earlier: dict[str, list[str]] | None = None,
) -> list[Chunk]:
    """Group items by session (first-appearance order) and pack their turns into chunks.

    A chunk closes at an item boundary once it holds `max_turns` turns or `max_tokens` tokens of turn text;
    only an item too big for one chunk on its own is cut, at sentence boundaries. The first chunk of a
    session gets `earlier[session]` as context; the next ones get the last two turns before them.
    """
    sessions: dict[str | None, list[PreparedItem]] = {}
    for item in items:
        key = session_key(item.source) if item.source is not None else None
        sessions.setdefault(key, []).append(item)
    chunks: list[Chunk] = []
    for session, members in sessions.items():
        context = list((earlier or {}).get(session or "", []))
        current: list[Turn] = []
        size = 0
        for item in members:
            turns = _bounded(item_turns(item, now), max_tokens)
            cost = sum(_tokens(t) for t in turns)
            if current and (len(current) + len(turns) > max_turns or size + cost > max_tokens):
                chunks.append(Chunk(session, current, context))
                context = [_line(t) for t in current[-2:]]
                current, size = [], 0
            for turn in turns:
                # An oversized item is cut across chunks, never mixed with others beyond its own turns.
                if current and (len(current) >= max_turns or size + _tokens(turn) > max_tokens):
                    chunks.append(Chunk(session, current, context))
                    context = [_line(t) for t in current[-2:]]
                    current, size = [], 0
                current.append(turn)
                size += _tokens(turn)
        if current:
            chunks.append(Chunk(session, current, context))
    for chunk in chunks:
        for number, turn in enumerate(chunk.turns, 1):
            turn.number = number
    return chunks


def _bounded(turns: list[Turn], max_tokens: int) -> list[Turn]:
    out: list[Turn] = []
    for turn in turns:
        if _tokens(turn) <= max_tokens:
            out.append(turn)
            continue
        # ~4 characters per token for the cut; a piece is a complete sentence where possible.
        for piece in split_units(turn.text, max_chars=max(200, max_tokens * 3)):
            out.append(Turn(turn.item, turn.speaker, turn.role, piece, turn.said_at))
    return out


def _tokens(turn: Turn) -> int:
    return count_tokens(turn.text) + 4


def _line(turn: Turn, limit: int = 240) -> str:
    text = normalise_whitespace(turn.text)
    return f"{turn.speaker}: {text[:limit]}{'…' if len(text) > limit else ''}"


def split_chunk(chunk: Chunk) -> tuple[Chunk, Chunk] | None:
    """Two halves of a chunk, cut at the item boundary nearest the middle (None for a single turn).

    For a reply cut off at the output limit: each half asks for about half the output.
    """
    if len(chunk.turns) < 2:
        return None
    middle = len(chunk.turns) / 2
    boundaries = [i for i in range(1, len(chunk.turns)) if chunk.turns[i].item is not chunk.turns[i - 1].item]
    cut = min(boundaries, key=lambda i: abs(i - middle)) if boundaries else int(middle)
    first = Chunk(chunk.session, chunk.turns[:cut], chunk.earlier)
    second = Chunk(chunk.session, chunk.turns[cut:], [_line(t) for t in chunk.turns[max(0, cut - 2) : cut]])
    for half in (first, second):
        for number, turn in enumerate(half.turns, 1):
            turn.number = number
    return first, second


def merge_chunk_facts(first: ChunkFacts, second: ChunkFacts, chunk: Chunk) -> ChunkFacts:
    """The facts of two halves as one result (causes of the second half shifted past the first's facts)."""
    offset = len(first.facts)
    shifted = [
        Fact(f.text, f.fact_type, f.turns, f.entities, f.occurred, [c + offset for c in f.caused_by])
        for f in second.facts
    ]
    return ChunkFacts(
        chunk,
        first.facts + shifted,
        first.aliases + second.aliases,
        first.usage + second.usage,
        {**first.types, **second.types},
    )


def render_chunk(chunk: Chunk) -> str:
    """The variable part of the prompt (the user message): context, then the dated, numbered turns."""
    lines: list[str] = []
    contexts = list(
        dict.fromkeys(t.item.source.context for t in chunk.turns if t.item.source and t.item.source.context)
    )
    for context in contexts:
        lines.append(f"About: {normalise_whitespace(context)[:300]}")
    if chunk.earlier:
        lines.append("Earlier:")
        lines.extend(chunk.earlier)
    lines.append("Turns:")
    last_day: date | None = None
    for turn in chunk.turns:
        if turn.said_at.date() != last_day:
            last_day = turn.said_at.date()
            lines.append(f"Date: {turn.said_at.strftime('%Y-%m-%d %a %H:%M')}")
        lines.append(f"[{turn.number}] {turn.speaker}: {turn.text}")
    return "\n".join(lines)


# --- one call and its validation ----------------------------------------------------------------------------


@dataclass
class Fact:
    text: str
    fact_type: Literal["world", "experience"]
    turns: list[Turn]
    entities: list[str]
    occurred: tuple[datetime, datetime] | None
    caused_by: list[int]  # positions of earlier facts in the same list


@dataclass
class ChunkFacts:
    chunk: Chunk
    facts: list[Fact]
    aliases: list[EntityNames]
    usage: Usage
    types: dict[str, str] = field(default_factory=dict)  # an entity's name, as the model wrote it → declared type


async def extract_chunk(
    llm: LLM,
    chunk: Chunk,
    *,
    max_tokens: int = 1024,
    instructions: str | None = None,
    types: Declared | None = None,
) -> ChunkFacts:
    """One LLM call for one chunk; raises the LLM's errors (LLMUnavailableError, LLMOutputError, ...).

    `instructions`: the bank's extraction instructions (engine/banks/instructions.py), fenced after the rules.
    `types`: the bank's entity types (engine/banks/entity_types.py), fenced before them; without any, the prompt and
    the schema are those of a bank that never declared one.
    Background work: the request is bounded by the server's measured speed, not by MEMWRAP_LLM_TIMEOUT."""
    typed = types if types else None  # no types declared: the request of a bank that never declared any
    system = with_entity_types(SYSTEM_PROMPT, typed) if typed is not None else SYSTEM_PROMPT
    system = with_instructions(system, instructions, task="which facts to extract and which to skip")
    reply_model: type[Extraction] = TypedExtraction if typed is not None else Extraction
    extraction, usage = await llm.structured(
        system,
        render_chunk(chunk),
        reply_model,
        role="extraction",
        name="extraction",  # the schema's name either way (the typed model's own name would be typed_extraction)
        max_tokens=max_tokens,
        background=True,
        json_schema=typed_schema(typed) if typed is not None else None,
    )
    # Checked against the fixed prompt only: the operator's words name what to keep, and a fact may well use them.
    facts = validate_facts(chunk, extraction)
    kinds = entity_kinds(extraction, typed) if typed is not None else {}
    return ChunkFacts(chunk, facts, [e for e in extraction.entities if e.aliases], usage, kinds)


def entity_kinds(extraction: Extraction, types: Declared) -> dict[str, str]:
    """The model's typed entities as {name: declared type}, aliases included; a type the bank did not declare is
    dropped (the entity stays, untyped), as is a name that repeats the prompt."""
    kinds: dict[str, str] = {}
    for entity in extraction.entities:
        given = getattr(entity, "type", None)
        if given is None:
            continue
        kind = types.match(given)
        if kind is None:
            log.info("dropped an entity type the bank did not declare: %r", str(given)[:64])
            continue
        for name in (entity.name, *entity.aliases):
            name = normalise_whitespace(name)
            if name and not ECHO.echoes(name):
                kinds.setdefault(name, kind)
    return kinds


def validate_facts(chunk: Chunk, extraction: Extraction) -> list[Fact]:
    """The model's facts, checked against the chunk: sources exist, types follow roles, times are ours."""
    by_number = {t.number: t for t in chunk.turns}
    kept: list[Fact] = []
    position: dict[int, int] = {}  # the model's index → index in `kept`
    seen_texts: set[str] = set()
    for index, raw in enumerate(extraction.facts):
        text = normalise_whitespace(ROLE_LINE.sub("", normalise_whitespace(raw.text), count=1))  # "user: …" copied
        sources = [by_number[n] for n in sorted(set(raw.turns)) if n in by_number]
        if not text or not sources:
            log.info("dropped an extracted fact that names no turn of its chunk (turns %s)", raw.turns)
            continue
        if text.casefold() in seen_texts:
            continue
        if ECHO.echoes(text):
            log.info("dropped an extracted fact that repeats the prompt: %r", text[:80])
            continue
        seen_texts.add(text.casefold())
        position[index] = len(kept)
        items = {t.item.item_hash for t in sources}
        voice = first_person_turn(text, chunk.turns, items)
        if voice is not None:  # "I recommend …" copied from the assistant's turn: the assistant's words
            text = assistant_voice(text)
            sources = sources if voice in sources else sorted([*sources, voice], key=lambda t: t.number)
        said_by = restating_turn(text, chunk.turns, items)
        if said_by is not None and said_by not in sources:
            sources = sorted([*sources, said_by], key=lambda t: t.number)
        acted = assistant_turn(text, chunk.turns, items) if said_by is None else None
        if acted is not None and acted not in sources:
            sources = sorted([*sources, acted], key=lambda t: t.number)
        kind = "world" if said_by is not None else fact_type(raw.fact_type, sources, acted is not None)
        roles = {said_by.role} if said_by is not None else {t.role for t in sources}
        text = third_person(text, roles)
        if roles == {"user"}:
            text = with_subject(text, [t.text for t in sources])
        if kind == "experience" and _USER_SUBJECT.match(text):
            kind = "world"  # "The user plans a trip to Shanghai": not something the assistant did
        span, text = fact_span(raw.when, raw.start, raw.end, text, [(t.text, t.said_at) for t in sources])
        kept.append(
            Fact(
                text=text,
                fact_type=kind,
                turns=sources,
                entities=[normalise_whitespace(e) for e in raw.entities if e and e.strip() and not ECHO.echoes(e)],
                occurred=span,
                caused_by=[position[c] for c in raw.caused_by if c < index and c in position],
            )
        )
    return kept


def restating_turn(text: str, turns: list[Turn], items: set[str]) -> Turn | None:
    """The user's (or a person's) turn among those of the fact's items that already says the fact: what the
    assistant only acknowledged ("Noted: React for front-end") is the user's, whichever turn the model cited.
    A fact about what the assistant did, or one a user's question only asked for, stays with its sources."""
    if "assistant" in text.casefold():
        return None
    for turn in turns:
        if turn.role not in ("user", "person") or turn.item.item_hash not in items:
            continue
        statements = " ".join(s for s in sentences(turn.text) if not s.rstrip().endswith(("?", "？")))
        if statements and lexically_covered(text, statements)[0]:
            return turn
    return None


_USER_SUBJECT = re.compile(r"^\s*(?:the\s+)?user(?:'s)?\b", re.IGNORECASE)


def first_person_turn(text: str, turns: list[Turn], items: set[str]) -> Turn | None:
    """The assistant's turn a first-person fact repeats, when no user's or person's turn of its items does."""
    if FIRST_PERSON.search(text) is None:
        return None
    saying = [t for t in turns if t.item.item_hash in items and lexically_covered(text, t.text)[0]]
    if saying and all(t.role in ("assistant", "tool") for t in saying):
        return saying[0]
    return None


_ASSISTANT_SUBJECT = re.compile(r"^\s*(?:the\s+)?(?:AI\s+)?assistant\b", re.IGNORECASE)


def assistant_turn(text: str, turns: list[Turn], items: set[str]) -> Turn | None:
    """The assistant's turn (among those of the fact's items) that says what a fact about the assistant says:
    "The assistant recommends the Museum Island in Berlin" is its experience, whichever turn the model cited."""
    if _ASSISTANT_SUBJECT.match(text) is None:
        return None
    statement = _ASSISTANT_SUBJECT.sub("", text)
    for turn in turns:
        if turn.role in ("assistant", "tool") and turn.item.item_hash in items:
            if lexically_covered(statement, turn.text)[0]:
                return turn
    return None


def fact_type(claimed: str, sources: list[Turn], by_assistant: bool = False) -> Literal["world", "experience"]:
    """Who said it decides: experience needs the assistant (or a tool it ran) among the sources, and either the
    model's word for it or a fact about the assistant that its own turn states (`by_assistant`: a small model
    types "The assistant recommends …" as world)."""
    if (claimed == "experience" or by_assistant) and any(t.role in ("assistant", "tool") for t in sources):
        return "experience"
    return "world"
