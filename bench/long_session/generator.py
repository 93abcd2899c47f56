"""Long technical sessions, as a coding agent's bank fills up: deterministic from a seed, no LLM.

    bank = generate_bank(seed=1, target_tokens=150_000)

Many sessions over months (one every 0.5-3 days), each a few exchanges: a user prompt (short, or long with
pasted code) and a long assistant answer (prose, fenced code in several languages, bullet lists, file paths,
library names), with chit-chat in between. Fact threads (bench/long_session/facts.py) are woven into chosen
sessions in order: single facts, values that change, migrations, renames, version bumps, dated events,
sequences of changes, multi-session stories, the user's standing instructions and repeated incidents. Each
question names the message ids that answer it. Message ids are "s<session>:<turn>", so "s012" is a session
(memwrap groups memories by the part before the last colon).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.long_session import vocab as v
from bench.long_session.facts import QUESTION_TYPES, Thread, all_threads

__all__ = ["QUESTION_TYPES", "LongBank", "LongQuestion", "Message", "generate_bank"]

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Message:
    id: str  # "s012:3"
    session: str  # "s012"
    role: str  # "user" | "assistant"
    text: str
    timestamp: datetime
    tokens: int  # cl100k tokens of `content`

    @property
    def content(self) -> str:
        """What is retained as one item (and indexed by the baselines): the role label, then the text."""
        return f"{self.role}: {self.text}"


@dataclass(frozen=True)
class LongQuestion:
    id: str
    type: str  # one of QUESTION_TYPES (or LongMemEval's own question_type)
    question: str
    evidence: tuple[str, ...]  # message ids
    answer: str
    asked_at: datetime


@dataclass
class LongBank:
    name: str
    messages: list[Message]
    questions: list[LongQuestion]
    source: str = "generated"
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return sum(m.tokens for m in self.messages)

    @property
    def sessions(self) -> int:
        return len({m.session for m in self.messages})


@dataclass
class _Turn:
    role: str
    text: str


@dataclass
class _Session:
    start: datetime
    turns: list[_Turn] = field(default_factory=list)


def _count(text: str) -> int:
    from memwrap.tokens import count_tokens

    return count_tokens(text)


class _Writer:
    """Prose and code from the vocabulary, with fresh slot values for every piece."""

    def __init__(self, rng: random.Random, project: str) -> None:
        self.rng = rng
        self.project = project

    def slots(self) -> dict[str, Any]:
        r = self.rng
        verb, noun, module = r.choice(v.VERBS), r.choice(v.NOUNS), r.choice(v.MODULES)
        lib = r.choice(v.LIBRARIES)
        return {
            "verb": verb,
            "noun": noun,
            "module": module,
            "func": f"{verb}_{noun}s" if r.random() < 0.5 else f"{verb}_{noun}",
            "cls": noun.capitalize() + r.choice(v.CLASS_SUFFIXES),
            "path": f"{r.choice(v.DIRS)}/{self.project.replace('-', '_')}/{module}.py",
            "error": r.choice(v.ERRORS),
            "lib": lib,
            "libmod": lib.lower().replace("-", "_").replace("redis_py", "redis"),
            "component": r.choice(v.COMPONENTS),
            "field": r.choice(v.FIELDS),
            "env": r.choice(v.ENV_VARS),
            "n": r.choice((3, 5, 7, 10, 20, 50, 100, 500)),
            "t": r.choice((2, 5, 10, 30)),
            "port": r.choice((8000, 8080, 9000, 5000, 3000)),
            "upper": noun.upper(),
            "project": self.project.replace("-", "_"),
        }

    def fill(self, template: str, slots: dict[str, Any] | None = None) -> str:
        return template.format(**(slots or self.slots()))

    def code(self) -> str:
        r = self.rng
        lang = "python" if r.random() < 0.6 else r.choice(sorted(v.OTHER_SNIPPETS))
        body = r.choice(v.PYTHON_SNIPPETS) if lang == "python" else v.OTHER_SNIPPETS[lang]
        return f"```{lang}\n{self.fill(body)}\n```"

    def paragraph(self, sentences: int) -> str:
        return " ".join(self.fill(t) for t in self.rng.sample(v.EXPLANATIONS, sentences))

    def user_prompt(self) -> str:
        r = self.rng
        opener = r.choice(v.USER_OPENERS)
        text = f"{opener} {self.fill(r.choice(v.USER_REQUESTS))}".strip()
        if r.random() < 0.35:  # pasted code or a traceback
            if r.random() < 0.5:
                text += "\n\n" + self.code()
            else:
                s = self.slots()
                text += (
                    f'\n\n```\nTraceback (most recent call last):\n  File "{s["path"]}", line {r.randint(10, 400)}, '
                    f"in {s['func']}\n    return self._{s['noun']}s[key]\n{s['error']}: '{s['field']}'\n```"
                )
        return text

    def assistant_answer(self, carrying: str | None = None) -> str:
        r = self.rng
        parts = [r.choice(v.ASSISTANT_OPENERS), self.paragraph(r.randint(3, 6))]
        for _ in range(r.randint(1, 3)):
            parts.append(self.code())
            if r.random() < 0.8:
                parts.append(self.paragraph(r.randint(2, 4)))
        if r.random() < 0.5:
            parts.append(
                "Things to watch:\n" + "\n".join(f"- {self.fill(b)}" for b in r.sample(v.BULLETS, r.randint(3, 5)))
            )
        if carrying:  # the fact sits inside the long answer, not at its start
            parts.insert(r.randint(1, len(parts)), carrying)
        return "\n\n".join(parts)


def _filler_session(writer: _Writer, start: datetime) -> _Session:
    r = writer.rng
    session = _Session(start)
    for _ in range(r.randint(1, 4)):
        session.turns.append(_Turn("user", writer.user_prompt()))
        session.turns.append(_Turn("assistant", writer.assistant_answer()))
    if r.random() < 0.4:
        session.turns.append(_Turn("user", r.choice(v.CHITCHAT_USER)))
        session.turns.append(_Turn("assistant", r.choice(v.CHITCHAT_ASSISTANT)))
    return session


def _statement_exchange(writer: _Writer, role: str, text: str) -> tuple[list[_Turn], _Turn]:
    """The turns that carry a statement, and which of them is the evidence."""
    r = writer.rng
    if role == "assistant":
        ask = _Turn("user", writer.user_prompt())
        said = _Turn("assistant", writer.assistant_answer(carrying=text))
        return [ask, said], said
    mode = r.random()
    if mode < 0.4:  # a short remark
        said = _Turn("user", text)
        reply = _Turn("assistant", r.choice(("Noted.", "Got it, thanks for the heads-up.", "Understood.", "Ok!")))
        return [said, reply], said
    if mode < 0.8:  # inside a longer prompt, before the actual request
        said = _Turn("user", f"{text} Anyway, {writer.fill(r.choice(v.USER_REQUESTS))}")
    else:  # after a pasted snippet
        said = _Turn("user", f"{writer.user_prompt()}\n\nAlso, unrelated: {text}")
    return [said, _Turn("assistant", writer.assistant_answer())], said


def generate_bank(seed: int, target_tokens: int, *, name: str | None = None, start: datetime = START) -> LongBank:
    """A bank of about `target_tokens` cl100k tokens (a little more: fact threads are added last)."""
    rng = random.Random(seed)
    project = rng.choice(v.PROJECTS)
    writer = _Writer(rng, project)
    threads = all_threads(rng, project)
    if target_tokens < 30_000:  # a small bank (smoke tests): one thread of each kind, or the threads alone fill it
        threads = [next(t for t in threads if t.kind == kind) for kind in QUESTION_TYPES]
    sessions: list[_Session] = []
    when, total = start, 0
    budget = max(target_tokens - 120 * sum(len(t.statements) for t in threads), target_tokens // 2)
    slots_needed = max(len(t.statements) for t in threads) + 1
    while total < budget or len(sessions) < slots_needed:
        session = _filler_session(writer, when.replace(hour=rng.randint(8, 21), minute=rng.randint(0, 59)))
        sessions.append(session)
        total += sum(_count(t.text) for t in session.turns)
        when += timedelta(hours=rng.randint(12, 72))
    evidence_turns: dict[str, list[tuple[int, _Turn]]] = {}
    for thread in threads:
        picked = sorted(rng.sample(range(len(sessions)), len(thread.statements)))
        evidence_turns[thread.key] = []
        for index, statement in zip(picked, thread.statements, strict=True):
            turns, said = _statement_exchange(writer, statement.role, statement.text)
            at = 2 * rng.randint(0, len(sessions[index].turns) // 2)  # between exchanges
            sessions[index].turns[at:at] = turns
            evidence_turns[thread.key].append((index, said))
    messages, ids = _messages(sessions)
    asked_at = messages[-1].timestamp + timedelta(days=1)
    bank_name = name or f"long-{seed}"
    questions = [
        _question(rng, thread, evidence_turns[thread.key], sessions, ids, asked_at, f"{bank_name}-q{i}")
        for i, thread in enumerate(threads)
    ]
    return LongBank(
        bank_name, messages, questions, info={"seed": seed, "project": project, "target_tokens": target_tokens}
    )


def _messages(sessions: list[_Session]) -> tuple[list[Message], dict[int, str]]:
    messages: list[Message] = []
    ids: dict[int, str] = {}  # id(turn) -> message id
    for s_index, session in enumerate(sessions):
        at = session.start
        for t_index, turn in enumerate(session.turns):
            message_id = f"s{s_index:03d}:{t_index}"
            ids[id(turn)] = message_id
            content = f"{turn.role}: {turn.text}"
            messages.append(Message(message_id, f"s{s_index:03d}", turn.role, turn.text, at, _count(content)))
            at += timedelta(minutes=1 + len(turn.text) // 400)
    return messages, ids


def _question(
    rng: random.Random,
    thread: Thread,
    stated: list[tuple[int, _Turn]],
    sessions: list[_Session],
    ids: dict[int, str],
    asked_at: datetime,
    question_id: str,
) -> LongQuestion:
    dates = [sessions[index].start.date() for index, _ in stated]
    fill = {f"date{i}": d.isoformat() for i, d in enumerate(dates)}
    if len(dates) >= 2:
        fill["gap"] = str((dates[1] - (dates[0] - timedelta(days=1))).days)  # the gap thread: "yesterday", "today"
    return LongQuestion(
        id=question_id,
        type=thread.kind,
        question=rng.choice(thread.questions),
        evidence=tuple(ids[id(turn)] for _, turn in stated),
        answer=thread.answer.format(**fill) if "{" in thread.answer else thread.answer,
        asked_at=asked_at,
    )
