"""The questions of the QA harness and the conversations to retain for each: LoCoMo and LongMemEval.

Both data sets are read in place (LoCoMo is CC BY-NC: never copied into the repository). A question is named by
a stable id ("locomo:conv-0:12", "longmemeval:852ce960"), which is what resuming relies on.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.locomo import CATEGORY_NAMES, load_locomo


def _data_root() -> Path:
    """`<repo>/../shared/data`, or (in a git worktree under another folder) the nearest `shared/data` above."""
    for folder in Path(__file__).resolve().parents[2].parents:
        if (folder / "shared" / "data").is_dir():
            return folder / "shared" / "data"
    return Path(__file__).resolve().parents[3] / "shared" / "data"


DATA = _data_root()
_LME_DATE = re.compile(r"(\d{4})/(\d{2})/(\d{2})(?: \(\w+\))? (\d{2}):(\d{2})")


@dataclass
class QAItem:
    id: str
    dataset: str
    category: str
    question: str
    gold: str
    bank: str  # the bank its conversation is retained in
    asked_at: datetime  # "now" for recall and the answer: when the question is asked
    items: list[dict[str, Any]] = field(default_factory=list)  # what to retain (shared by a conversation's items)
    evidence: tuple[str, ...] = ()  # document ids of the turns that hold the answer (scores each block's recall)


def locomo_items(path: Path | None = None, *, max_sessions: int | None = None) -> Iterator[QAItem]:
    """Categories 1-4 of every conversation, in file order; one bank per conversation."""
    for conversation in load_locomo(path or DATA / "locomo" / "locomo_dev5.json", max_sessions=max_sessions):
        items = [
            {
                "content": t.content,
                "document_id": t.dia_id,
                "timestamp": t.timestamp,
                "metadata": {"session_id": f"{conversation.sample_id}:s{t.session}"},
            }
            for t in conversation.turns
        ]
        answers = _locomo_answers(path, conversation.sample_id)
        for question in conversation.questions:
            yield QAItem(
                id=f"locomo:{conversation.sample_id}:{question.index}",
                dataset="locomo",
                category=CATEGORY_NAMES[question.category],
                question=question.question,
                gold=answers.get(question.index, ""),
                bank=f"qa-locomo-{conversation.sample_id}",
                asked_at=conversation.last_time,
                items=items,
                evidence=question.evidence,
            )


def _locomo_answers(path: Path | None, sample_id: str) -> dict[int, str]:
    """Gold answers by the question's index in `qa` (bench.locomo keeps evidence, not answers)."""
    records = _read(path or DATA / "locomo" / "locomo_dev5.json")
    # bench.locomo names a conversation by its own sample_id, or conv-<position> when it has none.
    record = next((r for r in records if r.get("sample_id") == sample_id), None)
    if record is None:
        record = records[int(sample_id.rsplit("-", 1)[1])]
    return {i: str(q.get("answer", "")) for i, q in enumerate(record.get("qa", []))}


def longmemeval_items(path: Path | None = None) -> Iterator[QAItem]:
    """Every question of a LongMemEval file (S or oracle form), each with its own haystack in its own bank."""
    for record in _read(path or DATA / "longmemeval" / "s_3q.json"):
        items: list[dict[str, Any]] = []
        evidence: list[str] = []
        for session_id, day, turns in zip(
            record["haystack_session_ids"], record["haystack_dates"], record["haystack_sessions"], strict=True
        ):
            when = _lme_time(day)
            for index, turn in enumerate(turns):
                items.append(
                    {
                        "content": f"{turn['role']}: {turn['content']}",
                        "document_id": f"{session_id}:{index}",
                        "timestamp": when,
                        "metadata": {"session_id": session_id},
                    }
                )
                if turn.get("has_answer"):
                    evidence.append(f"{session_id}:{index}")
        yield QAItem(
            id=f"longmemeval:{record['question_id']}",
            dataset="longmemeval",
            category=record["question_type"],
            question=record["question"],
            gold=str(record["answer"]),
            bank=f"qa-lme-{record['question_id']}",
            asked_at=_lme_time(record["question_date"]),
            items=items,
            evidence=tuple(evidence),
        )


def per_category_sample(items: Sequence[QAItem], per_category: int, *, seed: int = 0) -> list[QAItem]:
    """N questions of each category, spread over the conversations, the same every time.

    Within each (conversation, category) the questions are shuffled with a fixed seed (the file lists them
    roughly in the order of the sessions they are about, so "the first N" would only ask about the start of a
    conversation); each category then takes one question per conversation in turn, starting at a different
    conversation for each category, until it has N. A larger N keeps every question of a smaller one, so a run
    can be extended and resumed. Returned in file order.
    """
    conversations = list(dict.fromkeys(item.bank for item in items))
    categories = list(dict.fromkeys(item.category for item in items))
    queues: dict[tuple[str, str], list[QAItem]] = {}
    for bank in conversations:
        for category in categories:
            group = [item for item in items if item.bank == bank and item.category == category]
            random.Random(f"{seed}:{bank}:{category}").shuffle(group)
            queues[(bank, category)] = group
    chosen: set[str] = set()
    for offset, category in enumerate(categories):
        order = conversations[offset % len(conversations) :] + conversations[: offset % len(conversations)]
        taken, depth = 0, 0
        while taken < per_category and any(len(queues[(bank, category)]) > depth for bank in order):
            for bank in order:
                queue = queues[(bank, category)]
                if taken < per_category and depth < len(queue):
                    chosen.add(queue[depth].id)
                    taken += 1
            depth += 1
    return [item for item in items if item.id in chosen]


_CACHE: dict[Path, Any] = {}


def _read(path: Path) -> Any:
    if path not in _CACHE:
        if not path.exists():
            raise FileNotFoundError(f"data not found at {path}; pass --data PATH")
        _CACHE[path] = json.loads(path.read_text(encoding="utf-8"))
    return _CACHE[path]


def _lme_time(text: str) -> datetime:
    match = _LME_DATE.search(text)
    if match is None:
        raise ValueError(f"unreadable LongMemEval date {text!r}")
    year, month, day, hour, minute = (int(g) for g in match.groups())
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


__all__ = ["QAItem", "locomo_items", "longmemeval_items", "per_category_sample"]
