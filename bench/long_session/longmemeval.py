"""LongMemEval items (`../shared/data/longmemeval/s_3q.json`) as long-session banks: one bank per item.

Read in place, never copied. Each haystack session is a session of the bank (`haystack_session_ids`, dated by
`haystack_dates`, one minute per turn); every turn is a message "<session id>:<turn index>". A question's
evidence is the turns flagged `has_answer` in its `answer_session_ids` (every turn of those sessions when
none is flagged). Its type is LongMemEval's own `question_type`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.long_session.generator import LongBank, LongQuestion, Message


def default_path() -> Path:
    """`<repo>/../shared/data/longmemeval/s_3q.json`, or the first `shared/data/longmemeval` further up."""
    repo = Path(__file__).resolve().parents[2]
    for base in repo.parents:
        candidate = base / "shared" / "data" / "longmemeval" / "s_3q.json"
        if candidate.is_file():
            return candidate
    return repo.parent / "shared" / "data" / "longmemeval" / "s_3q.json"


def _date(text: str) -> datetime:
    """ "2023/07/12 (Wed) 10:14" -> 2023-07-12 10:14 UTC."""
    day, _, clock = text.partition(") ")
    return datetime.strptime(f"{day.split(' (')[0]} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def _count(text: str) -> int:
    from memwrap.tokens import count_tokens

    return count_tokens(text)


def item_bank(item: dict[str, Any], index: int, *, other_sessions: int | None = None) -> LongBank:
    """One item as a bank; `other_sessions` keeps only that many sessions besides the answer sessions."""
    answer_ids = set(item["answer_session_ids"])
    kept, others = [], 0
    for sid, date, turns in zip(
        item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"], strict=True
    ):
        if sid not in answer_ids:
            if other_sessions is not None and others >= other_sessions:
                continue
            others += 1
        kept.append((sid, _date(date), turns))
    kept.sort(key=lambda s: s[1])
    messages, evidence, answer_turns = [], [], []
    for sid, start, turns in kept:
        for t, turn in enumerate(turns):
            content = f"{turn['role']}: {turn['content']}"
            message = Message(
                f"{sid}:{t}", sid, turn["role"], turn["content"], start + timedelta(minutes=t), _count(content)
            )
            messages.append(message)
            if sid in answer_ids:
                answer_turns.append(message.id)
                if turn.get("has_answer"):
                    evidence.append(message.id)
    question = LongQuestion(
        id=str(item["question_id"]),
        type=str(item["question_type"]),
        question=item["question"],
        evidence=tuple(evidence or answer_turns),
        answer=str(item.get("answer", "")),
        asked_at=_date(item["question_date"]),
    )
    return LongBank(f"lme-{index}", messages, [question], source="longmemeval", info={"item": item["question_id"]})


def load_banks(
    path: Path | None = None, *, items: int | None = None, other_sessions: int | None = None
) -> list[LongBank]:
    data_path = path or default_path()
    if not data_path.is_file():
        raise FileNotFoundError(f"LongMemEval data not found at {data_path}; pass --longmemeval PATH")
    records = json.loads(data_path.read_text(encoding="utf-8"))
    if items is not None:
        records = records[:items]
    return [item_bank(record, i, other_sessions=other_sessions) for i, record in enumerate(records)]
