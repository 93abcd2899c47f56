"""The renderer: the only code that decides what the model sees, for the wrapper, the proxy, MCP and REST alike.

Every line ends with a newline and tiktoken never merges a token across a line that starts with "- ", so a
block's token count is the sum of its lines' counts. That makes packing exact: walk the ranked memories, keep
each one whose line still fits, skip (and keep going past) one that does not. The final string is counted once
more as a guard, so `tokens == len(encode(context)) <= max_tokens` holds whatever happens.

A long message is stored in chunks (retain/split.py). When several chunks of one message are chosen, the block
shows them as one line at the place of the best of them, in message order: adjacent chunks joined, a gap shown as
"[…]" (and "[…]" before or after when the message goes on). A chunk chosen alone carries the same marks, so the
model can tell an excerpt from a whole message. Each further chunk costs what it adds to its message's line.

`chronological=True` (questions that span sessions: recall/span.py) keeps the choice in ranked order and lays the
chosen lines out in time order, so "in what order did I …" reads as a timeline.

`ids_in_block=True` (recall's declared parameter: an agent that acts on memories by id) starts each line with its
memory's id, "- (id 1f0c…) …", counted in the budget like the rest of the line; a message's chunks shown as one
line carry the id of the chunk that places it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import tiktoken

from memwrap.block.fence import neutralise
from memwrap.block.format import footer, header
from memwrap.engine.language.speakers import ROLE_ALIASES
from memwrap.engine.language.text import normalise_whitespace
from memwrap.models import ConsideredMemory, RecalledMemory

__all__ = ["Packing", "pack", "plan", "render_line"]


def _day(value: datetime | None) -> str | None:
    return f"{value:%Y-%m-%d}" if value else None


GAP = "[…]"
_ONE_GAP = re.compile(r"\[…\](?:\s*\[…\])+")


def _chunk_text(memory: RecalledMemory, chunks: Sequence[tuple[int, str]]) -> str:
    """The text of some chunks of one message (part, text), in message order, with "[…]" where text is missing."""
    ordered = sorted(chunks)
    pieces: list[str] = [GAP] if ordered[0][0] > 0 else []
    for index, (part, text) in enumerate(ordered):
        if index and part > ordered[index - 1][0] + 1:
            pieces.append(GAP)
        pieces.append(text)
    if memory.parts is not None and ordered[-1][0] < memory.parts - 1:
        pieces.append(GAP)
    # An excerpt (recall/sessions.py) carries its own marks: one "[…]" where its gap meets the chunk's.
    return _ONE_GAP.sub(GAP, " ".join(pieces))


def _chunk_of(memory: RecalledMemory) -> tuple[str | None, str] | None:
    """Which message a chosen memory is a chunk of (bank, message), or None for a whole message or a fact."""
    if memory.type != "raw" or memory.message_id is None or memory.part is None:
        return None
    return (memory.bank_id, memory.message_id)


def render_line(
    memory: RecalledMemory, chunks: Sequence[tuple[int, str]] | None = None, *, with_id: bool = False
) -> str:
    """One memory's line; `chunks` (part, text): the chosen chunks of its message, shown as one line. `with_id`:
    the line starts with the memory's id ("- (id 1f0c…) …"), for a model that acts on memories by id."""
    if chunks is None and _chunk_of(memory) is not None:
        chunks = [(memory.part or 0, memory.text)]
    text = memory.text if chunks is None else _chunk_text(memory, chunks)
    said = _day(memory.mentioned_at)
    start, end = _day(memory.occurred_start), _day(memory.occurred_end)
    when = said or ""
    if start and start != said:
        about = start if end in (None, start) else f"{start}..{end}"
        when = f"{when}, about {about}" if when else f"about {about}"
    label = "" if memory.type == "raw" else f"({memory.type}) "
    if memory.replaced_by is not None:  # a newer memory states a change of this one
        changed = f"; changed {_day(memory.replaced_at)}" if memory.replaced_at else ""
        label = f"(earlier{changed}) {label}"
    prefix = f"[{when}] " if when else ""
    named = f"(id {memory.id}) " if with_id else ""
    return f"- {named}{prefix}{label}{_shown(text, memory.speaker)}\n"


# The same memories come back recall after recall (a conversation's turns ask about the same things): their shown
# text and their lines' token counts are kept, not worked out again (a line costs ~50 µs to render and count).
_CACHED = 16384


@functools.lru_cache(maxsize=_CACHED)
def _shown(text: str, speaker: str | None) -> str:
    """A memory's text as the block shows it: one line, its speaker's label, nothing that could read as a tag."""
    text = normalise_whitespace(text)
    if text.startswith(GAP) and speaker and _labelled(text[len(GAP) :].lstrip(), speaker):
        text = text[len(GAP) :].lstrip()  # a first chunk carries its label: "[…]" goes after it, not before
    if speaker and not _labelled(text, speaker):
        text = f"{speaker}: {text}"  # who said it shows, as in a transcript (the later parts of a long turn)
    # Memory text is data someone once said: it must never be able to close (or open) the fence.
    return neutralise(text)


@functools.lru_cache(maxsize=_CACHED)
def _tokens(encoding: tiktoken.Encoding, line: str) -> int:
    return len(encoding.encode_ordinary(line))


# Characters str.split() takes for white space that tiktoken's pre-tokenizer (Unicode White_Space) does not.
_SPLIT_ONLY = ("\x1c", "\x1d", "\x1e", "\x1f")


def fewest_tokens(line: str) -> int:
    """A lower bound of the line's token count in any tiktoken encoding, for a few C-level passes: its words.
    Every encoding's pre-tokenizer cuts text into pieces that never hold characters of two words (white space
    only leads or trails a piece), and each piece is at least one token. Counting a long line exactly costs ~0.1 ms
    per 1,000 characters; the packer skips the lines this bound already rules out."""
    if any(c in line for c in _SPLIT_ONLY):
        return 0
    return len(line.split())


_LABEL = re.compile(r"^([^:：\n]{1,40}?)\s*[:：]")


def _labelled(text: str, speaker: str) -> bool:
    """Whether the text already starts with its speaker's label ("Alice: …", "user: …", "human: …", "张伟：…")."""
    label = _LABEL.match(text)
    if label is None:
        return False
    name = label.group(1).casefold()
    return ROLE_ALIASES.get(name, name) == speaker.casefold()


@dataclass
class Packing:
    """What the packer decided: the block, and for every candidate its rendered line, what it costs and whether
    it went in (explain=True shows this to the caller)."""

    context: str
    tokens: int
    lines: list[str] = field(default_factory=list)
    # None: not counted, as its words alone did not fit (plan); counted when asked for (considered)
    line_tokens: list[int | None] = field(default_factory=list)
    budget_left: list[int] = field(default_factory=list)  # the budget left when each line was weighed
    chosen: list[int] = field(default_factory=list)
    encoding: tiktoken.Encoding | None = None

    def cost(self, index: int) -> int:
        """What the candidate's line costs (counted now if the packer did not need to)."""
        counted = self.line_tokens[index]
        if counted is None:
            assert self.encoding is not None, "a Packing with uncounted lines keeps its encoding"
            counted = self.line_tokens[index] = _tokens(self.encoding, self.lines[index])
        return counted

    def picked(self, memories: Sequence[RecalledMemory]) -> list[RecalledMemory]:
        picked = []
        for i in self.chosen:
            memory = memories[i].model_copy()
            memory.tokens = self.cost(i)
            picked.append(memory)
        return picked

    def considered(self, memories: Sequence[RecalledMemory]) -> list[ConsideredMemory]:
        chosen = set(self.chosen)
        return [
            ConsideredMemory(
                **memory.model_dump(exclude={"tokens"}),
                tokens=self.cost(i),
                rank=i + 1,
                fit=i in chosen,
                line=self.lines[i],
                budget_left=self.budget_left[i],
                reason="" if i in chosen else f"its line needs {self.cost(i)} tokens; {self.budget_left[i]} were left",
            )
            for i, memory in enumerate(memories)
        ]


def plan(
    memories: Sequence[RecalledMemory],
    *,
    max_tokens: int,
    now: datetime,
    encoding: tiktoken.Encoding,
    chronological: bool = False,
    ids_in_block: bool = False,
) -> Packing:
    """Choose and render memories, in the given order, within `max_tokens` (see the module's docstring for chunks
    of one message, `chronological` and `ids_in_block`)."""
    frame = header(now) + footer()
    frame_tokens = len(encoding.encode_ordinary(frame))
    remaining = max(max_tokens - frame_tokens, 0)  # 0: not even the frame fits, so no line does
    if not memories:
        return Packing("", 0)

    lines = [render_line(m, with_id=ids_in_block) for m in memories]
    # Counted one line at a time (encode_batch starts a thread pool per call, 6x slower for a few dozen short
    # lines), and only a line whose words fit what is left: once the block is nearly full, most candidates are
    # ruled out by fewest_tokens alone. On fresh candidates of long messages (85 lines of ~1,000 characters) the
    # counting was 6-10 ms of a recall. The lines chosen are the same: a line skipped could not have fit.
    line_tokens: list[int | None] = [None] * len(lines)
    chosen: list[int] = []
    budget_left: list[int] = []
    groups: dict[tuple[str | None, str], list[int]] = {}  # a message's chosen chunks
    group_cost: dict[tuple[str | None, str], int] = {}
    for index, line in enumerate(lines):
        budget_left.append(remaining)
        key = _chunk_of(memories[index])
        if key is not None and key in groups:
            members = [*groups[key], index]
            merged_line = _group_line(memories, members, ids_in_block)
            if fewest_tokens(merged_line) - group_cost[key] > remaining:
                continue
            merged = _tokens(encoding, merged_line)
            cost = merged - group_cost[key]  # what this chunk adds to its message's line
            if cost <= remaining:
                groups[key], group_cost[key] = members, merged
                line_tokens[index] = cost
                chosen.append(index)
                remaining -= cost
            continue
        if fewest_tokens(line) > remaining:
            continue
        cost = line_tokens[index] = _tokens(encoding, line)
        if cost <= remaining:
            if key is not None:
                groups[key], group_cost[key] = [index], cost
            chosen.append(index)
            remaining -= cost
    while chosen:
        context = header(now) + "".join(_layout(memories, lines, chosen, chronological, ids_in_block)) + footer()
        tokens = len(encoding.encode_ordinary(context))
        if tokens <= max_tokens:
            return Packing(context, tokens, lines, line_tokens, budget_left, chosen, encoding)
        chosen.pop()  # never expected (counts are additive), but the budget is a promise
    return Packing("", 0, lines, line_tokens, budget_left, [], encoding)


def _group_line(memories: Sequence[RecalledMemory], members: Sequence[int], with_id: bool = False) -> str:
    """The line of one message's chosen chunks: the best-ranked one's date, marks and id, every chunk's text."""
    chunks = [(memories[i].part or 0, memories[i].text) for i in members]
    return render_line(memories[members[0]], chunks, with_id=with_id)


def _layout(
    memories: Sequence[RecalledMemory],
    lines: Sequence[str],
    chosen: Sequence[int],
    chronological: bool,
    with_id: bool = False,
) -> list[str]:
    """The block's lines: one per chosen whole memory, one per message of chosen chunks (at its best chunk's
    place); in ranked order, or by the time they were said (then message order) when `chronological`."""
    members: dict[tuple[str | None, str], list[int]] = {}
    for index in chosen:
        key = _chunk_of(memories[index])
        if key is not None:
            members.setdefault(key, []).append(index)
    laid: list[tuple[int, str]] = []  # (the index that places it, its line)
    done: set[tuple[str | None, str]] = set()
    for index in chosen:
        key = _chunk_of(memories[index])
        if key is None:
            laid.append((index, lines[index]))
        elif key not in done:
            done.add(key)
            group = members[key]
            laid.append((index, lines[index] if len(group) == 1 else _group_line(memories, group, with_id)))
    if chronological:
        oldest = datetime.min.replace(tzinfo=now_tz(memories))
        laid.sort(key=lambda entry: (memories[entry[0]].mentioned_at or oldest, memories[entry[0]].part or 0))
    return [line for _index, line in laid]


def now_tz(memories: Sequence[RecalledMemory]) -> Any:
    """The time zone of the memories' dates (aware datetimes compare only with aware ones)."""
    for memory in memories:
        if memory.mentioned_at is not None:
            return memory.mentioned_at.tzinfo
    return None


def pack(
    memories: Sequence[RecalledMemory],
    *,
    max_tokens: int,
    now: datetime,
    encoding: tiktoken.Encoding,
    ids_in_block: bool = False,
) -> tuple[str, int, list[RecalledMemory]]:
    """Choose and render memories, in the given order, within `max_tokens` (`ids_in_block`: each line starts with its
    memory's id). Returns (context, tokens, chosen)."""
    packing = plan(memories, max_tokens=max_tokens, now=now, encoding=encoding, ids_in_block=ids_in_block)
    return packing.context, packing.tokens, packing.picked(memories)
