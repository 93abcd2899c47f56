"""`memwrap demo`: a year of one user's chats with an assistant, retained, then three questions whose memory blocks
must choose — more was said than fits the budget, and each block's first memory is the one the question needs.

The conversation is written for the demo (not taken from any data set). It is retained as a wrapped client retains
it: one item per exchange, "user: …\\nassistant: …", dated when it was said.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memwrap.models import Recall, RetainItem

if TYPE_CHECKING:
    from memwrap.api import Memory

DEMO_BANK = "demo-alice"
DEMO_NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
DEMO_BUDGET = 150

# (when, [(user, assistant), ...]) per session
DEMO_SESSIONS: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "2026-01-15T19:00:00+00:00",
        [
            (
                "Happy new year! I'm still in London, working at a small design agency.",
                "Happy new year, Alice! Any resolutions?",
            ),
            (
                "Run a half marathon before the summer. I can barely do 5k right now.",
                "A good goal. A 16-week plan gets most people there.",
            ),
        ],
    ),
    (
        "2026-03-02T08:15:00+00:00",
        [
            (
                "I did my first 15k along the Thames yesterday. Legs are dead.",
                "That is real progress. Rest well and stretch.",
            ),
            ("I booked a trip to Japan with my sister Maya for October!", "Exciting! Kyoto in autumn is beautiful."),
        ],
    ),
    (
        "2026-04-12T18:30:00+00:00",
        [
            (
                "Hi! I just moved to Lisbon for a new job at Google, on the Cloud team.",
                "Welcome to Lisbon, Alice! How is the new job going?",
            ),
            (
                "Great so far. Also, I'm vegetarian and I'm allergic to peanuts, so restaurant tips need to fit that.",
                "Noted: vegetarian, peanut allergy. Time Out Market has good vegetarian stalls.",
            ),
        ],
    ),
    (
        "2026-05-20T21:00:00+00:00",
        [
            (
                "Ran the Porto half marathon last weekend in 1:58!",
                "Under two hours on your first one: congratulations!",
            ),
            ("Maya visited and we did a food tour in Alfama.", "Sounds lovely. Did she like Lisbon?"),
        ],
    ),
    (
        "2026-07-08T12:00:00+00:00",
        [
            ("Work is intense, we launch a new product in September.", "Take care of yourself in the run-up."),
            ("I adopted a cat called Miso.", "Miso is a great name for a cat!"),
        ],
    ),
    (
        "2026-10-10T10:00:00+00:00",
        [
            ("Back from Japan. Kyoto's temples were my favourite part.", "Welcome back! Which temple was the best?"),
        ],
    ),
    (
        "2026-11-23T09:00:00+00:00",
        [
            (
                "I started learning the cello last month. I practise every morning before work.",
                "That's a lovely routine. Are you taking lessons?",
            ),
            (
                "Yes, with a teacher called João on Saturdays. Maya thinks I'm crazy.",
                "João sounds dedicated. Enjoy the Saturdays!",
            ),
        ],
    ),
]

DEMO_QUESTIONS = [
    "Can you suggest a restaurant for dinner tonight?",
    "What did I do last spring?",
    "Who is my cello teacher?",
]


def demo_items() -> list[RetainItem]:
    """The demo's exchanges as a wrapped client retains them."""
    return [
        RetainItem(
            content=f"user: {user}\nassistant: {assistant}",
            timestamp=datetime.fromisoformat(when),
            document_id=f"session-{s}:turn-{t}",
            context="demo conversation",
        )
        for s, (when, exchanges) in enumerate(DEMO_SESSIONS, start=1)
        for t, (user, assistant) in enumerate(exchanges, start=1)
    ]


def run_demo(memory: Memory, *, token_budget: int = DEMO_BUDGET) -> tuple[int, list[Recall]]:
    """Retain the demo's year into a fresh DEMO_BANK and ask its questions. Returns (memories stored, recalls)."""
    memory.delete_bank(DEMO_BANK)
    ids = memory.retain_many(DEMO_BANK, demo_items())
    recalls = [memory.recall(DEMO_BANK, q, token_budget=token_budget, now=DEMO_NOW) for q in DEMO_QUESTIONS]
    return len(ids), recalls


__all__ = ["DEMO_BANK", "DEMO_BUDGET", "DEMO_NOW", "DEMO_QUESTIONS", "DEMO_SESSIONS", "demo_items", "run_demo"]
