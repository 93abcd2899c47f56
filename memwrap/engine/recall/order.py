"""The order of the fused candidates, before packing: what fusion cannot know from ranks alone.

Fusion ranks by how well each memory matches the question's words and meaning. Three things the question (or the
memory) says change that order afterwards, each by a rule that can be stated:

* **Who said it.** The assistant's own turns stay recallable but weigh less than what the user (or another
  participant) said: `assistant_weight` (MEMWRAP_ASSISTANT_WEIGHT, default 0.5) multiplies their fused score.
  "Noted: vegetarian" repeats the user's fact; the user's own words are the memory. A turn that states a change
  keeps its score: "the lock file now resolves SQLAlchemy 2.1" is the assistant's report, and no one repeats it.
* **The question's time range governs.** "What did I do last spring?" wants what happened then: memories that
  occurred inside the window (or, undated, were said inside it) come first, in fused order; the rest only fill
  what the budget leaves. A vague window ("recently") does not reorder: the temporal arm's votes are enough.
* **Replaced facts** (language/changes.py): a newer statement of a change ("I switched to VS Code") ranks above
  the older statements it replaces, which are marked as earlier (`superseded_by`); unless the question asks about
  the past ("before", "used to"), they go after every other memory, so a tight budget leaves them out. And a
  question about the present ("now", "these days", "现在") puts the newest of its closely matching memories first.

Neighbours (the turns around a hit) always stay after the hits they were fetched for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from uuid import UUID

from memwrap.engine.language.change_cue import change_cue
from memwrap.engine.language.changes import Statement, asks_past, asks_present, replaces, same_topic, topic_terms
from memwrap.engine.language.timeparse import detect_tense
from memwrap.engine.recall.arms import NEAR_DAYS
from memwrap.models import RecalledMemory, TimeWindow


def _hits_and_neighbours(ranked: Sequence[RecalledMemory]) -> tuple[list[RecalledMemory], list[RecalledMemory]]:
    hits = [m for m in ranked if m.neighbour_of is None]
    return hits, [m for m in ranked if m.neighbour_of is not None]


def weigh_speakers(
    ranked: Sequence[RecalledMemory], assistant_weight: float, change_cues: ChangeCues | None = None
) -> list[RecalledMemory]:
    """The assistant's turns weigh `assistant_weight` of their fused score, but for those that state a change
    (`states_a_change`): in a coding session the assistant reports what it did and measured ("the lock file now
    resolves SQLAlchemy 2.1", "that brings the p95 to 180 ms"), the newest word on what changed, which the user
    never repeats. The hits are sorted again (stable)."""
    if assistant_weight == 1.0 or not any(m.speaker == "assistant" for m in ranked):
        return list(ranked)
    hits, neighbours = _hits_and_neighbours(ranked)
    for memory in ranked:
        if memory.speaker == "assistant" and not states_a_change(memory, change_cues):
            memory.score *= assistant_weight
    return sorted(hits, key=lambda m: -m.score) + neighbours


def favour_named_speakers(
    ranked: Sequence[RecalledMemory], question_keys: Sequence[str], weight: float, k: int
) -> list[RecalledMemory]:
    """When the question names a speaker of the bank ("what can't Alice eat?"), what that speaker said votes once
    more: a list of its memories in their fused order, fused like an arm (weight / (k + rank)). In LoCoMo's chats
    of two, 96% of the evidence for a question naming one of them is that person's own turn; the other speaker's
    turns are not pushed out, only passed by the named speaker's equally good ones."""
    named = {key.casefold() for key in question_keys}
    if not named or weight == 0.0 or not any(m.speaker and m.speaker.casefold() in named for m in ranked):
        return list(ranked)
    hits, neighbours = _hits_and_neighbours(ranked)
    rank = 0
    for memory in hits:
        if memory.speaker and memory.speaker.casefold() in named:
            rank += 1
            memory.score += weight / (k + rank)
            memory.arms["speaker"] = rank
    return sorted(hits, key=lambda m: -m.score) + neighbours


def in_window(memory: RecalledMemory, window: TimeWindow) -> bool:
    """Whether a memory is about the window: what it tells of happened inside it, or it was said inside it and
    tells of no time far from it (arms.NEAR_DAYS). The temporal arm's rule (arms.temporal)."""
    start, end = memory.occurred_start, memory.occurred_end or memory.occurred_start
    if start is not None and end is not None and start <= window.end and max(end, start) >= window.start:
        return True
    said = memory.mentioned_at is not None and window.start <= memory.mentioned_at <= window.end
    if not said or start is None or end is None:
        return said
    near = timedelta(days=NEAR_DAYS)
    return start <= window.end + near and max(end, start) >= window.start - near


def governs(window: TimeWindow | None, question: str, now: datetime) -> bool:
    """Whether the question's time range orders the memories. Not a vague one ("recently"), and not today's when
    the question does not look back: "suggest a restaurant for dinner tonight" asks for a restaurant, and "tonight"
    is when the dinner is, not what the memories are about ("what did I eat today?" looks back: it governs)."""
    if window is None or window.vague:
        return False
    return not (window.start <= now <= window.end and detect_tense(question) != "past")


def window_first(ranked: Sequence[RecalledMemory], window: TimeWindow | None) -> list[RecalledMemory]:
    """Memories inside the question's time range first (each part in its order). Call it when the range governs."""
    if window is None:
        return list(ranked)
    inside = [m for m in ranked if in_window(m, window)]
    if not inside or len(inside) == len(ranked):
        return list(ranked)
    chosen = {id(m) for m in inside}
    return inside + [m for m in ranked if id(m) not in chosen]


# How far down the fused hits replaced facts are looked for: the memories a block can hold, with room to spare.
CHANGE_WINDOW = 30


def _statement(memory: RecalledMemory) -> Statement:
    start, end = memory.occurred_start, memory.occurred_end or memory.occurred_start
    return Statement(memory.text, memory.speaker, memory.mentioned_at, (start, end) if start and end else None)


def apply_changes(
    ranked: Sequence[RecalledMemory], question: str, change_cues: ChangeCues | None = None
) -> list[RecalledMemory]:
    """Replaced facts (language/changes.py) among the best hits: each older statement a newer one replaces is
    marked (`replaced_by`, `replaced_at`), the newer one moves up to just before it, and — unless the question
    asks about the past — the older ones go after every other memory. A question about the present also puts
    the newer of two memories on one topic first, without marking either. `change_cues`: whether memories state a
    change, as stored (details.candidates); the others' are worked out from their text."""
    hits, neighbours = _hits_and_neighbours(ranked)
    head = hits[:CHANGE_WINDOW]
    statements = {id(m): _statement(m) for m in head}
    # Only a question that says it asks about now ("now", "currently", "these days", "现在"): without a word of
    # change, "newer first" is a guess, and on the precision set (bench/precision) guessing it for every question in
    # the present tense cost the speaker questions as much as it won the replaced facts.
    present = asks_present(question)
    before: list[tuple[RecalledMemory, RecalledMemory]] = []  # (newer, older): newer must lead
    for newer in head:
        # A memory whose words state no change replaces nothing (language/change_cue.py): most pairs end here,
        # on the stored answer, without searching its text for cues.
        cued = states_a_change(newer, change_cues)
        if not cued and not present:
            continue
        for older in head:
            if older is newer:
                continue
            a, b = statements[id(newer)], statements[id(older)]
            if cued and replaces(a, b):
                if older.replaced_by is None or (older.replaced_at and a.said_at and a.said_at > older.replaced_at):
                    older.replaced_by, older.replaced_at = newer.id, a.said_at
                before.append((newer, older))
            elif present and a.said_at and b.said_at and a.said_at > b.said_at and same_topic(a, b):
                before.append((newer, older))
    if not before:
        return list(ranked)
    _assistant_echoes(head)
    order = list(head)
    for newer, older in sorted(before, key=lambda pair: order.index(pair[1])):
        at, place = order.index(newer), order.index(older)
        if at > place:
            order.insert(place, order.pop(at))
    if not asks_past(question):
        order = stable_partition(order, lambda m: m.replaced_by is not None)
    return order + hits[CHANGE_WINDOW:] + neighbours


# What the store knows of whether memories state a change (memory_units.change_cue): (bank id, memory id) -> cue.
ChangeCues = Mapping[tuple[str, UUID], bool]


def states_a_change(memory: RecalledMemory, stored: ChangeCues | None = None) -> bool:
    """Whether a memory's words state a change: as the store has it (`stored`, from memory_units.change_cue),
    else worked out from its text (language/change_cue.py)."""
    known = stored.get((memory.bank_id or "", memory.id)) if stored else None
    return change_cue(memory.text, memory.speaker) if known is None else known


def _session(memory: RecalledMemory) -> str | None:
    document = memory.document_id
    return document.rsplit(":", 1)[0] if document and ":" in document else document


def _assistant_echoes(head: Sequence[RecalledMemory]) -> None:
    """The assistant's reply to a replaced statement ("Nice, Neovim is great.") is as old as it: the same session,
    said within a day of it, sharing a word or a topic with it. It is marked replaced by the same newer memory."""
    replaced = [m for m in head if m.replaced_by is not None and m.speaker != "assistant"]
    for echo in head:
        if echo.speaker != "assistant" or echo.replaced_by is not None or echo.mentioned_at is None:
            continue
        words, topics = topic_terms(echo.text)
        for old in replaced:
            if (
                _session(old) == _session(echo)
                and old.mentioned_at is not None
                and abs(old.mentioned_at - echo.mentioned_at) <= timedelta(days=1)
            ):
                old_words, old_topics = topic_terms(old.text)
                if (words & old_words) or (topics & old_topics):
                    echo.replaced_by, echo.replaced_at = old.replaced_by, old.replaced_at
                    break


def stable_partition(ranked: Sequence[RecalledMemory], last: Callable[[RecalledMemory], bool]) -> list[RecalledMemory]:
    """`ranked` with the memories for which `last` holds moved to the end, both parts in their order."""
    return [m for m in ranked if not last(m)] + [m for m in ranked if last(m)]


def newest(memories: Sequence[RecalledMemory]) -> datetime | None:
    return max((m.mentioned_at for m in memories if m.mentioned_at is not None), default=None)


__all__ = [
    "apply_changes",
    "favour_named_speakers",
    "governs",
    "in_window",
    "newest",
    "stable_partition",
    "states_a_change",
    "weigh_speakers",
    "window_first",
]
