"""The answerer's and the judge's prompts (short: a small local model reads them at ~25 tokens/s)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

ANSWER_SYSTEM = (
    "You answer a question about a person from their memories. Use only the memories given. Answer in a few "
    "words or one short sentence, in the memories' own words where you can; write a date as day month year "
    "(7 May 2023). Dates in [brackets] say when something was said. If the memories do not contain the answer, "
    "say you do not know."
)

JUDGE_SYSTEM = (
    "You grade an answer against the correct answer. The answer is correct if it states the same fact as the "
    "correct answer (other wording, more detail or an equivalent date are fine); it is wrong if it contradicts "
    "it, misses it, or says it does not know."
)


class Verdict(BaseModel):
    correct: bool


def answer_prompt(question: str, memories: str, asked_at: datetime) -> str:
    return f"Memories:\n{memories or '(none)'}\n\nToday is {asked_at:%Y-%m-%d}.\nQuestion: {question}\nAnswer:"


def judge_prompt(question: str, gold: str, answer: str) -> str:
    return f"Question: {question}\nCorrect answer: {gold}\nAnswer to grade: {answer}\nIs the answer correct?"
