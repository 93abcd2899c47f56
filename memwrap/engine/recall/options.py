"""Checks on recall's list options: the banks read at once, top_k, min_score."""

from __future__ import annotations

import math
from collections.abc import Sequence

from memwrap import validate
from memwrap.errors import InvalidBankIdError, InvalidInputError
from memwrap.models import MAX_RECALL_BANKS, MAX_TOP_K

# One recall reads at most this many banks (declared with the verbs' bounds: memwrap/models/limits.py,
# memwrap/verb_types.py).
MAX_BANKS = MAX_RECALL_BANKS
__all__ = ["MAX_BANKS", "MAX_TOP_K", "bank_ids", "min_score", "top_k"]


def bank_ids(value: str | Sequence[str]) -> list[str]:
    """One bank id, or several (order kept, repeats dropped)."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        return [validate.bank_id(value)]  # its error names what a bank id may be
    if not value:
        raise InvalidBankIdError("bank_id is a bank id, or a non-empty list of bank ids (got an empty list).")
    banks = list(dict.fromkeys(validate.bank_id(v) for v in value))
    if len(banks) > MAX_BANKS:
        raise InvalidInputError(f"One recall reads at most {MAX_BANKS} banks (got {len(banks)}).")
    return banks


def top_k(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOP_K:
        raise InvalidInputError(f"top_k is a whole number from 1 to {MAX_TOP_K} (got {value!r}).")
    return value


def min_score(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInputError(f"min_score is a finite number (got {value!r}).")
    return float(value)
