"""LoCoMo: loading the conversations, turning them into memory items, and scoring evidence recall.

The data set (CC BY-NC) is read in place and never copied into the repository; result files name
questions by (sample_id, index in `qa`), not by their text.

Scoring rule, the same for every system: walk the system's ranked list in rank order, adding each
memory's cl100k token count to a running total; a memory that would overflow the budget is skipped
and the walk goes on (a shorter one further down may still fit). A question's recall at a budget is
the share of its evidence dia_ids among the document_ids of the memories kept within that budget.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CATEGORY_NAMES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
SCORED_CATEGORIES: tuple[int, ...] = (1, 2, 3, 4)
OVERALL = "overall"

_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


def default_data_path() -> Path:
    """`<repo>/../shared/data/locomo/locomo_dev5.json`, or the first `shared/data/locomo` further up (a worktree)."""
    repo = Path(__file__).resolve().parent.parent
    for base in repo.parents:
        candidate = base / "shared" / "data" / "locomo" / "locomo_dev5.json"
        if candidate.is_file():
            return candidate
    return repo.parent / "shared" / "data" / "locomo" / "locomo_dev5.json"


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    timestamp: datetime
    blip_caption: str | None = None

    @property
    def content(self) -> str:
        """What every system stores for this turn: "Speaker: text" (+ the photo caption when there is one)."""
        content = f"{self.speaker}: {self.text}"
        if self.blip_caption:
            content += f" [shares a photo of {self.blip_caption}]"
        return content


@dataclass(frozen=True)
class Question:
    index: int  # position in the conversation's `qa` list
    question: str
    category: int
    evidence: tuple[str, ...]  # normalised dia_ids, all of which exist among the turns


@dataclass
class Conversation:
    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: list[Turn]
    questions: list[Question]
    dropped_questions: int = 0  # categories 1-4 questions left without any usable evidence id

    @property
    def last_time(self) -> datetime:
        return max(turn.timestamp for turn in self.turns)

    @property
    def sessions(self) -> int:
        return len({turn.session for turn in self.turns})


def parse_session_datetime(text: str) -> datetime:
    """ "1:56 pm on 8 May, 2023" -> 2023-05-08 13:56 UTC."""
    cleaned = " ".join(text.split())
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(cleaned, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    import dateparser  # slower and looser; only for strings the formats above miss

    parsed = dateparser.parse(
        cleaned.replace(" on ", " "), settings={"TIMEZONE": "UTC", "RETURN_AS_TIMEZONE_AWARE": True}
    )
    if parsed is None:
        raise ValueError(f"cannot parse LoCoMo session date {text!r}")
    return parsed


def canonical_dia_id(raw: str) -> str | None:
    """ "D30:05" -> "D30:5", "D:11:26" -> "D11:26"; None when it is no dia id at all."""
    match = _DIA_ID.fullmatch(raw.strip())
    return f"D{int(match[1])}:{int(match[2])}" if match else None


def normalise_evidence(raw: Iterable[Any], known: dict[str, str]) -> list[str]:
    """Split multi-id strings ("D8:6; D9:17"), repair malformed ids, keep only ids of existing turns.

    `known` maps canonical dia ids to the turns' own ids.
    """
    out: list[str] = []
    for entry in raw:
        for match in _DIA_ID.finditer(str(entry)):
            dia_id = known.get(f"D{int(match[1])}:{int(match[2])}")
            if dia_id is not None and dia_id not in out:
                out.append(dia_id)
    return out


def _known_ids(turns: Iterable[Turn]) -> dict[str, str]:
    return {canonical_dia_id(turn.dia_id) or turn.dia_id: turn.dia_id for turn in turns}


def _parse_conversation(record: dict[str, Any], max_sessions: int | None, max_questions: int | None) -> Conversation:
    conv = record["conversation"]
    session_numbers = sorted(int(m[1]) for key in conv if (m := _SESSION_KEY.fullmatch(key)))
    session_numbers = [n for n in session_numbers if conv.get(f"session_{n}")]
    all_turns: list[Turn] = []
    for n in session_numbers:
        when = parse_session_datetime(conv[f"session_{n}_date_time"])
        for raw in conv[f"session_{n}"]:
            all_turns.append(
                Turn(
                    dia_id=raw["dia_id"],
                    speaker=raw["speaker"],
                    text=raw["text"],
                    session=n,
                    timestamp=when,
                    blip_caption=raw.get("blip_caption") or None,
                )
            )
    kept_sessions = set(session_numbers[:max_sessions] if max_sessions is not None else session_numbers)
    turns = [turn for turn in all_turns if turn.session in kept_sessions]
    known_all, known_kept = _known_ids(all_turns), _known_ids(turns)
    questions: list[Question] = []
    dropped = 0
    for index, qa in enumerate(record.get("qa", [])):
        if qa.get("category") not in SCORED_CATEGORIES:
            continue
        evidence = normalise_evidence(qa.get("evidence") or [], known_all)
        if not evidence:
            dropped += 1
            continue
        if any((canonical_dia_id(e) or e) not in known_kept for e in evidence):
            continue  # a slice (max_sessions) keeps only questions it can fully answer
        questions.append(
            Question(index=index, question=qa["question"], category=int(qa["category"]), evidence=tuple(evidence))
        )
        if max_questions is not None and len(questions) >= max_questions:
            break
    return Conversation(
        sample_id=str(record.get("sample_id", "")),
        speaker_a=conv.get("speaker_a", ""),
        speaker_b=conv.get("speaker_b", ""),
        turns=turns,
        questions=questions,
        dropped_questions=dropped,
    )


def load_locomo(
    path: str | Path | None = None,
    *,
    conversations: int | None = None,
    max_sessions: int | None = None,
    max_questions: int | None = None,
) -> list[Conversation]:
    """Read the LoCoMo file in place. `max_sessions`/`max_questions` cut a slice (for smoke tests).

    With `max_sessions`, only questions whose evidence lies entirely within the kept sessions remain.
    """
    data_path = Path(path) if path else default_data_path()
    if not data_path.exists():
        raise FileNotFoundError(f"LoCoMo data not found at {data_path}; pass --data PATH")
    with data_path.open(encoding="utf-8") as fh:
        records = json.load(fh)
    if conversations is not None:
        records = records[:conversations]
    return [
        _parse_conversation({"sample_id": f"conv-{i}", **record}, max_sessions, max_questions)
        for i, record in enumerate(records)
    ]


# --------------------------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class Ranked:
    """One entry of a system's ranked answer: which turn it came from and what it costs."""

    document_id: str | None
    tokens: int


def walk_budget(ranked: Sequence[Ranked], budget: int) -> set[str]:
    """Document ids of the memories kept within `budget` tokens (overflowing ones skipped, walk continues)."""
    used = 0
    kept: set[str] = set()
    for entry in ranked:
        if used + entry.tokens > budget:
            continue
        used += entry.tokens
        if entry.document_id:
            kept.add(canonical_dia_id(entry.document_id) or entry.document_id)
    return kept


def evidence_ranks(ranked: Sequence[Ranked], evidence: Sequence[str]) -> list[int | None]:
    """1-based rank of each evidence id in the ranked list (None when absent) - for diagnosis."""
    first: dict[str, int] = {}
    for rank, entry in enumerate(ranked, start=1):
        if entry.document_id:
            first.setdefault(canonical_dia_id(entry.document_id) or entry.document_id, rank)
    return [first.get(canonical_dia_id(e) or e) for e in evidence]


@dataclass
class QuestionResult:
    system: str
    sample_id: str
    index: int
    category: int
    evidence: int  # how many evidence ids
    found: dict[int, int]  # budget -> evidence ids found within it
    ranks: list[int | None]
    listed: int  # length of the ranked list
    latency_ms: float

    def recall(self, budget: int) -> float:
        return self.found[budget] / self.evidence

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "sample_id": self.sample_id,
            "qa_index": self.index,
            "category": self.category,
            "evidence": self.evidence,
            "found": {str(b): n for b, n in self.found.items()},
            "evidence_ranks": self.ranks,
            "listed": self.listed,
            "latency_ms": round(self.latency_ms, 3),
        }


def score_question(
    system: str,
    conversation: Conversation,
    question: Question,
    ranked: Sequence[Ranked],
    budgets: Sequence[int],
    latency_ms: float,
) -> QuestionResult:
    evidence = {canonical_dia_id(e) or e for e in question.evidence}
    found = {budget: len(evidence & walk_budget(ranked, budget)) for budget in budgets}
    return QuestionResult(
        system=system,
        sample_id=conversation.sample_id,
        index=question.index,
        category=question.category,
        evidence=len(evidence),
        found=found,
        ranks=evidence_ranks(ranked, question.evidence),
        listed=len(ranked),
        latency_ms=latency_ms,
    )


@dataclass
class CellScore:
    recall: float  # mean share of evidence found
    all_found: float  # share of questions with every evidence id found
    n: int

    def to_json(self) -> dict[str, Any]:
        return {"recall": round(self.recall, 4), "all_found": round(self.all_found, 4), "n": self.n}


@dataclass
class SystemSummary:
    """Scores of one system: group ("overall" or a category number as a string) -> budget -> cell."""

    system: str
    cells: dict[str, dict[int, CellScore]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {group: {str(b): c.to_json() for b, c in by_budget.items()} for group, by_budget in self.cells.items()}


def group_key(category: int) -> str:
    return str(category)


def summarise(results: Sequence[QuestionResult], budgets: Sequence[int]) -> dict[str, SystemSummary]:
    """Per system, per category and overall (micro-average over questions), per budget."""
    by_system: dict[str, list[QuestionResult]] = defaultdict(list)
    for result in results:
        by_system[result.system].append(result)
    summaries: dict[str, SystemSummary] = {}
    for system, rows in by_system.items():
        groups: dict[str, list[QuestionResult]] = {OVERALL: rows}
        for category in SCORED_CATEGORIES:
            groups[group_key(category)] = [r for r in rows if r.category == category]
        summary = SystemSummary(system)
        for group, members in groups.items():
            summary.cells[group] = {}
            for budget in budgets:
                n = len(members)
                recall = sum(r.recall(budget) for r in members) / n if n else 0.0
                all_found = sum(r.found[budget] == r.evidence for r in members) / n if n else 0.0
                summary.cells[group][budget] = CellScore(recall=recall, all_found=all_found, n=n)
        summaries[system] = summary
    return summaries
