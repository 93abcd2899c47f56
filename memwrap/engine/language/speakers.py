"""Who said what, in retained text: the role labels of a transcript ("user: …\nassistant: …").

The wrappers retain an exchange as "user: ...\nassistant: ...". A label must start a line for the text to be
read this way; later lines without a label continue the turn before them. Raw memory units keep the line
break before each label (`keep_turn_breaks`), so an exchange rebuilt from them for re-extraction is read
with the same speakers as the original.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any, Literal

from memwrap.engine.language.text import normalise_whitespace

ROLE_LINE = re.compile(r"^(user|assistant|tool result|tool|system|human|ai)\s*:\s?", re.IGNORECASE | re.MULTILINE)
ROLE_ALIASES = {"human": "user", "ai": "assistant", "tool result": "tool"}
# "Caroline: text" (LoCoMo, transcripts): a short capitalised name, or a short CJK name, then a colon.
# A full-width colon needs no space after it (Chinese puts none).
NAMED_SPEAKER = re.compile(r"^([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}|[\u3400-\u9fff]{1,6})\s*(?::\s+|：\s*)")
METADATA_ROLES: dict[str, Literal["user", "assistant", "tool"]] = {
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "human": "user",
    "ai": "assistant",
}
# Words that open a line with a colon without naming who speaks ("Note: buy milk", "Update: we moved"). A named
# speaker label is a name; these are headings. (The same list is in migration 0010's backfill.)
HEADING_WORDS = frozenset(
    """
    note notes update updates reminder todo to-do fyi ps p.s re fw fwd edit warning error question answer q a
    summary tip tips step example important source subject date time location address email phone name title
    status result results output input goal goals plan plans idea ideas news info bonus caution
    disclaimer spoiler context background problem solution reason because hint recap tldr tl;dr nb
    """.split()
)


@dataclass(frozen=True, slots=True)
class Speaker:
    """Who said a turn: `name` as the memory records it ("user", "assistant", "tool", or a participant's name
    as written: "Alice", "张伟"), `role` ("user", "assistant", "tool", "system" or "person"), and `label_end`,
    where the turn's own words begin in its text (0 when the text carries no label)."""

    name: str
    role: str
    label_end: int = 0


def _label(text: str) -> Speaker | None:
    """The speaker a turn's text names in its leading label ("user: …", "Alice: …"), or None."""
    role = ROLE_LINE.match(text)
    if role is not None:
        label = ROLE_ALIASES.get(role.group(1).lower(), role.group(1).lower())
        return Speaker(label, label, role.end())
    named = NAMED_SPEAKER.match(text)
    if named is not None and named.group(1).casefold() not in HEADING_WORDS:
        return Speaker(named.group(1), "person", named.end())
    return None


def turn_speaker(text: str, metadata: Mapping[str, Any] | None = None) -> Speaker | None:
    """Who said `text`: its leading label, else the item's metadata (`role`, with `speaker` or `name` for a
    participant), else nobody known (None: a note, a document, a fact)."""
    found = _label(text)
    if found is not None:
        return found
    role = str(metadata.get("role", "")).lower() if metadata else ""
    if role in METADATA_ROLES:
        role = METADATA_ROLES[role]
        name = str(metadata.get("speaker") or metadata.get("name") or role) if metadata else role
        return Speaker(role if role in ("assistant", "tool") else name, role)
    return None


def said_by(text: str, metadata: Mapping[str, Any] | None = None) -> tuple[str | None, str]:
    """(speaker's name or None, the turn's own words without its label): what retain stores as the memory's
    speaker, and what it reads entities from."""
    speaker = turn_speaker(text, metadata)
    return (None, text) if speaker is None else (speaker.name, text[speaker.label_end :])


def split_turns(text: str) -> list[str]:
    """A transcript's turns, each with its label ("user: …", "assistant: …"): one memory per turn, so who said
    what stays a property of each memory (the assistant's restatement is not the user's fact). Text that does not
    start with a role label is one turn. Named speakers are split only by the item: one "Alice: …" turn per item,
    as chat logs are retained."""
    stripped = text.lstrip()
    if not ROLE_LINE.match(stripped):
        return [text]
    starts = [m.start() for m in ROLE_LINE.finditer(stripped)]
    bounds = [*starts, len(stripped)]
    return [piece for a, b in zip(bounds, bounds[1:], strict=False) if (piece := stripped[a:b].strip())]


def keep_turn_breaks(text: str) -> str:
    """`text` with whitespace collapsed, except the line break before each role label (when it is a transcript)."""
    marks = [m.start() for m in ROLE_LINE.finditer(text)]
    if not marks or marks[0] != len(text) - len(text.lstrip()):
        return normalise_whitespace(text)
    bounds = [*marks, len(text)]
    turns = (normalise_whitespace(text[start:end]) for start, end in zip(bounds, bounds[1:], strict=False))
    return "\n".join(t for t in turns if t)


# A fact is written in the third person. In a chat between the user and the assistant "you" is the user, and in
# what the user said "I"/"my" is the user too; a small model leaves them in ("Zhang Wei is your team lead").
_SECOND_PERSON = [
    (re.compile(r"\byou(?:'re| are)\b", re.IGNORECASE), "the user is"),
    (re.compile(r"\byou(?:'ve| have)\b", re.IGNORECASE), "the user has"),
    (re.compile(r"\byou(?:'ll| will)\b", re.IGNORECASE), "the user will"),
    (re.compile(r"\byours\b", re.IGNORECASE), "the user's"),
    (re.compile(r"\byour\b", re.IGNORECASE), "the user's"),
    (re.compile(r"\byou\b", re.IGNORECASE), "the user"),
]
_FIRST_PERSON = [
    (re.compile(r"\bI(?:'m| am)\b"), "the user is"),
    (re.compile(r"\bI(?:'ve| have)\b"), "the user has"),
    (re.compile(r"\bI(?:'ll| will)\b"), "the user will"),
    (re.compile(r"\bmy\b", re.IGNORECASE), "the user's"),
    (re.compile(r"\bI\b"), "the user"),
]


# The verb after a subject turned into "the user" agrees with it: "I prefer Vue" is "the user prefers Vue", not
# "the user prefer". Only verbs known to be in their base form here are changed (a past tense such as "went" must
# stay as it is); adverbs between subject and verb are stepped over ("the user also likes").
_BASE_VERBS = frozenset(
    """
    like love prefer want need live work plan enjoy hate use play study own know think feel eat drink speak visit
    read watch take make keep run teach learn cook travel write drive practice practise believe hope wish miss
    walk swim bake paint sing dance collect follow support avoid dislike mean remember forget understand attend
    commute volunteer manage lead design build code develop program rent share care get see hear call meet help
    start finish try buy sell spend save pay owe belong come stay sleep wake exercise
    """.split()
)
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "don't": "doesn't", "are": "is", "were": "was"}
_ADVERBS = r"(?:(?:also|really|usually|often|always|never|still|just|now|only|sometimes|currently|mostly|"
_ADVERBS += r"generally|rarely|seldom|even|already|normally|typically|actually|definitely|\w+ly)\s+)*"
_USER_VERB = re.compile(rf"\b(the user\s+{_ADVERBS})([a-z][a-z']*)\b", re.IGNORECASE)
# "My sister and I cook" has a plural subject: a short phrase and "and"/"or" right before, at the clause's start.
# ("… loves the user's job and I teach" is a second clause: its verb agrees.)
_USER_SUBJECT = re.compile(r"\bthe user\b(?!'s)", re.IGNORECASE)
_COMPOUND_SUBJECT = re.compile(r"(?:^|[,;:.!?]\s*)(?:\S+\s+){1,4}(?:and|or)\s+$", re.IGNORECASE)


def _third_person_verb(match: re.Match[str]) -> str:
    lead, verb = match.group(1), match.group(2)
    before = _COMPOUND_SUBJECT.search(match.string[: match.start()])
    if before and not _USER_SUBJECT.search(before.group(0)):  # "the user swims and I run": two clauses
        return match.group(0)
    lower = verb.lower()
    if lower in _IRREGULAR:
        return lead + _IRREGULAR[lower]
    if lower not in _BASE_VERBS:
        return match.group(0)
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return lead + verb + "es"
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return lead + verb[:-1] + "ies"
    return lead + verb + "s"


def third_person(text: str, roles: Set[str]) -> str:
    """`text` with the user's pronouns replaced by "the user": "you" when only the user and the assistant speak,
    "I"/"my" when only the user does. Elsewhere (people talking to each other) pronouns are left as they are."""
    if not roles or not roles <= {"user", "assistant", "tool"}:
        return text
    rules = _SECOND_PERSON + (_FIRST_PERSON if roles == {"user"} else [])
    changed = text
    for pattern, replacement in rules:
        changed = pattern.sub(replacement, changed)
    if changed != text:
        # Only where a pronoun became "the user" (a fact that already said "The user prefers" is left alone).
        changed = _USER_VERB.sub(_third_person_verb, changed)
    return changed[:1].upper() + changed[1:] if changed.startswith("the user") else changed


_ASSISTANT_FIRST_PERSON = [
    (re.compile(r"\bI(?:'m| am)\b"), "the assistant is"),
    (re.compile(r"\bI(?:'ve| have)\b"), "the assistant has"),
    (re.compile(r"\bI(?:'ll| will)\b"), "the assistant will"),
    (re.compile(r"\bmy\b", re.IGNORECASE), "the assistant's"),
    (re.compile(r"\bme\b", re.IGNORECASE), "the assistant"),
    (re.compile(r"\bI\b"), "the assistant"),
]
FIRST_PERSON = re.compile(r"\bI\b|\bI'|\bmy\b|\bme\b", re.IGNORECASE)


def assistant_voice(text: str) -> str:
    """A fact a small model copied from the assistant's turn ("I recommend the Museum Island"), in the third
    person: "The assistant recommends…" is not what the user said."""
    for pattern, replacement in _ASSISTANT_FIRST_PERSON:
        text = pattern.sub(replacement, text)
    text = re.sub(
        r"^the assistant (recommend|suggest|promise|think|believe|prefer|book|plan|want)\b",
        lambda m: f"the assistant {m.group(1)}s",
        text,
    )
    return text[:1].upper() + text[1:] if text.startswith("the assistant") else text


_BARE_USER = re.compile(r"^user\b", re.IGNORECASE)
_FIRST_WORD = re.compile(r"^([A-Za-z][a-z']*)\b")


def with_subject(text: str, said: list[str]) -> str:
    """A fact from the user's own words with its subject back: a small model writes "Started a new job at Lumen
    Labs" for "I started a new job at Lumen Labs" (and "user is allergic"), and a fact that does not say whom it
    is about is hard to find by asking about the user. Only a first word that follows "I" in the user's turn
    counts as the dropped subject's verb."""
    if _BARE_USER.match(text):
        return "The " + text[:1].lower() + text[1:]
    word = _FIRST_WORD.match(text)
    if word is None or word.group(1).casefold() in ("i", "the", "a", "an", "my"):
        return text
    verb = re.compile(rf"\bI\s+{re.escape(word.group(1))}\b", re.IGNORECASE)
    if any(verb.search(turn) for turn in said):
        return "The user " + text[:1].lower() + text[1:]
    return text


__all__ = [
    "FIRST_PERSON",
    "HEADING_WORDS",
    "METADATA_ROLES",
    "NAMED_SPEAKER",
    "ROLE_ALIASES",
    "ROLE_LINE",
    "Speaker",
    "assistant_voice",
    "keep_turn_breaks",
    "said_by",
    "split_turns",
    "third_person",
    "turn_speaker",
    "with_subject",
]
