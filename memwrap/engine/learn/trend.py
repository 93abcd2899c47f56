"""An observation's trend, from the timestamps of the evidence that supports it.

stale          nothing new for STALE_DAYS
new            first seen within NEW_DAYS, or fewer than three sources so far
strengthening  the recent half of its life holds clearly more evidence than the older half
weakening      … clearly less
stable         otherwise
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from memwrap.models import Trend

NEW_DAYS = 7
STALE_DAYS = 90
# recent/older evidence rate (add-one smoothed) at which the trend turns
STRONGER = 1.5
WEAKER = 0.5


def trend(timestamps: Sequence[datetime], now: datetime) -> Trend:
    if not timestamps:
        return "stale"
    first, last = min(timestamps), max(timestamps)
    if now - last > timedelta(days=STALE_DAYS):
        return "stale"
    if now - first <= timedelta(days=NEW_DAYS) or len(timestamps) < 3:
        return "new"
    middle = first + (now - first) / 2
    recent = sum(1 for t in timestamps if t >= middle)
    older = len(timestamps) - recent
    ratio = (recent + 1) / (older + 1)
    if ratio >= STRONGER:
        return "strengthening"
    if ratio <= WEAKER:
        return "weakening"
    return "stable"
