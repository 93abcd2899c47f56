"""MemoryBank (MIT, Zhong et al. 2023; read in place from ../shared/data/memorybank, never copied): dialogue turns
between fifteen users and an AI companion, in Chinese and in English.

The users are split once, by their order in the file: the first seven calibrate the multilingual model's language
centring (bench/multilingual/calibrate.py), the other eight are the distractors of the multilingual retrieval set.
The two never meet, so the set is not scored on the text that calibrated the model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

FILES = ("memory_bank_cn.json", "memory_bank_en.json")
CALIBRATION_USERS = 7  # the first seven users of each file


def default_dir() -> Path:
    """`shared/data/memorybank` beside the repository (or beside the folder of worktrees it is in)."""
    repo = Path(__file__).resolve().parents[2]
    for base in (repo.parent, repo.parent.parent):
        candidate = base / "shared" / "data" / "memorybank"
        if candidate.is_dir():
            return candidate
    return repo.parent / "shared" / "data" / "memorybank"


@dataclass(frozen=True)
class Turn:
    user_index: int
    language: str  # "zh" | "en"
    day: str
    text: str


def load_turns(directory: Path | None = None) -> list[Turn]:
    """Every user message and every reply, in file order."""
    directory = directory or default_dir()
    turns: list[Turn] = []
    for name in FILES:
        language = "zh" if name.endswith("_cn.json") else "en"
        data = json.loads((directory / name).read_text(encoding="utf-8"))
        for index, user in enumerate(data.values()):
            for day, exchanges in user["history"].items():
                for exchange in exchanges:
                    turns.extend(
                        Turn(index, language, day, exchange[k]) for k in ("query", "response") if exchange.get(k)
                    )
    return turns


def calibration_turns(directory: Path | None = None) -> list[Turn]:
    return [t for t in load_turns(directory) if t.user_index < CALIBRATION_USERS]


def distractor_turns(directory: Path | None = None) -> list[Turn]:
    return [t for t in load_turns(directory) if t.user_index >= CALIBRATION_USERS]
