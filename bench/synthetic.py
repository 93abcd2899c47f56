"""Synthetic but realistic chat turns for the latency/throughput runs: templates x names x topics x dates.

Deterministic for a seed and fast (100k turns in well under a second), so generating never weighs on what
is measured. Turns come in sessions between two people; document ids are "S<session>:<turn>".
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

NAMES = (
    "Alice", "Bob", "Carmen", "Deepak", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jamal", "Kira", "Liam",
    "Maya", "Nikolai", "Olivia", "Pedro", "Quinn", "Rosa", "Sami", "Tara", "Umar", "Vera", "Wen", "Ximena",
    "Yusuf", "Zoe", "Aiko", "Bruno", "Chloe", "Dmitri", "Esther", "Felix", "Gabriel", "Hana", "Ivan", "Julia",
    "Kofi", "Lena", "Marco", "Nadia", "Oscar", "Priya", "Rafael", "Sofia", "Tomas", "Ursula", "Victor", "Yara",
)  # fmt: skip

TOPICS: dict[str, tuple[str, ...]] = {
    "hiking": ("the ridge trail", "a waterfall loop", "the national park", "a sunrise summit", "the coastal path"),
    "cooking": ("a lentil curry", "homemade ramen", "sourdough bread", "a lemon tart", "grilled salmon"),
    "running": ("a half marathon", "the river 10k", "interval training", "a trail race", "morning runs"),
    "painting": ("a watercolor of the lake", "an abstract canvas", "a portrait of my grandmother", "a mural"),
    "music": ("the jazz festival", "guitar lessons", "a piano recital", "the new indie album", "a choir concert"),
    "work": ("the quarterly review", "a product launch", "my new manager", "the team offsite", "a promotion"),
    "travel": ("a trip to Lisbon", "a weekend in Kyoto", "a road trip to the canyon", "a train ride to Vienna"),
    "family": ("my sister's wedding", "my dad's birthday", "the kids' school play", "a family reunion"),
    "pets": ("adopting a rescue dog", "the cat's vet visit", "training the puppy", "a new aquarium"),
    "books": ("a mystery novel", "a biography of Marie Curie", "the book club pick", "a poetry collection"),
    "gardening": ("planting tomatoes", "a herb garden", "the rose bushes", "building a compost bin"),
    "volunteering": ("the food bank", "an animal shelter", "tutoring teenagers", "a beach cleanup"),
    "health": ("a yoga class", "physical therapy", "sleeping better", "a new meditation habit"),
    "movies": ("a sci-fi film", "a documentary about oceans", "an old western", "the film festival"),
    "school": ("a pottery course", "night classes in Spanish", "my thesis", "a coding bootcamp"),
}

PLACES = (
    "downtown", "the lake house", "the community center", "the farmers market", "the old library", "the beach",
    "the mountains", "my cousin's place", "the new cafe", "the park near work", "the art museum", "the stadium",
)  # fmt: skip

FEELINGS = (
    "thrilled",
    "exhausted",
    "proud",
    "a bit nervous",
    "really grateful",
    "so relaxed",
    "inspired",
    "frustrated",
)

WHEN = ("yesterday", "last weekend", "on Tuesday", "this morning", "last month", "two days ago", "over the holidays")

TEMPLATES = (
    "I went to {place} {when} for {detail} and I'm still {feeling} about it.",
    "Guess what, {other}! I finally tried {detail} {when}.",
    "Honestly {topic} has been my escape lately, especially {detail}.",
    "Do you remember when we talked about {detail}? I did it {when} at {place}.",
    "{other}, I'm {feeling} - {detail} went better than I expected.",
    "My friend from {place} got me into {topic}; {detail} is next on my list.",
    "I spent about {hours} hours on {detail} {when}. Totally worth it.",
    "Not gonna lie, {detail} made me feel {feeling}.",
    "How's your {topic} going? Mine is all about {detail} right now.",
    "I shared a photo of {detail} with the group and everyone loved it.",
    "We're planning {detail} for next month, maybe at {place}.",
    "Thanks for the tip about {topic}, {other}! {detail} was amazing.",
    "I've been thinking about quitting {topic}, but {detail} keeps me going.",
    "That reminds me, {when} I met someone at {place} who also loves {topic}.",
    "It took {hours} tries but I finally nailed {detail}.",
    "Can't wait to tell you more about {detail} - I'm {feeling}!",
)

REPLIES = (
    "That sounds wonderful, {other}! Tell me more about {detail}.",
    "Wow, {detail}? I'm so happy for you.",
    "I've always wanted to try {topic}. Was {place} crowded?",
    "You must be {feeling}! How long have you been into {topic}?",
    "Haha, that's so you. I remember you mentioning {detail} before.",
    "Nice! I did something similar {when}, but with {other_detail}.",
)

QUESTIONS = (
    "What did {name} say about {topic}?",
    "When did {name} try {detail}?",
    "Where did {name} go for {detail}?",
    "How does {name} feel about {topic}?",
    "Who got {name} into {topic}?",
    "What is {name} planning for next month?",
    "Which {topic} activity did {name} mention {when}?",
    "Has {name} talked about {detail}?",
)


@dataclass(frozen=True)
class SyntheticTurn:
    content: str
    document_id: str
    timestamp: datetime
    speaker: str
    topic: str


def generate_turns(
    n: int, *, seed: int = 7, turns_per_session: int = 16, start: datetime | None = None
) -> list[SyntheticTurn]:
    """`n` chat turns: sessions between two people about a topic, an hour to a few hours apart (100k turns span about
    3.5 years)."""
    return list(iter_turns(n, seed=seed, turns_per_session=turns_per_session, start=start))


def iter_turns(
    n: int, *, seed: int = 7, turns_per_session: int = 16, start: datetime | None = None
) -> Iterator[SyntheticTurn]:
    rng = random.Random(seed)
    when = start or datetime(2022, 1, 3, 9, 0, tzinfo=UTC)
    topics = list(TOPICS)
    produced = 0
    session = 0
    while produced < n:
        session += 1
        when += timedelta(hours=rng.randint(1, 8), minutes=rng.randint(0, 59))
        a, b = rng.sample(NAMES, 2)
        topic = rng.choice(topics)
        details = TOPICS[topic]
        for turn in range(1, turns_per_session + 1):
            if produced >= n:
                break
            speaker, other = (a, b) if turn % 2 else (b, a)
            template = rng.choice(TEMPLATES if turn % 2 or rng.random() < 0.4 else REPLIES)
            text = template.format(
                other=other,
                topic=topic,
                detail=rng.choice(details),
                other_detail=rng.choice(details),
                place=rng.choice(PLACES),
                feeling=rng.choice(FEELINGS),
                when=rng.choice(WHEN),
                hours=rng.randint(2, 12),
            )
            yield SyntheticTurn(
                content=f"{speaker}: {text}",
                document_id=f"S{session}:{turn}",
                timestamp=when + timedelta(minutes=turn),
                speaker=speaker,
                topic=topic,
            )
            produced += 1


def generate_queries(n: int, *, seed: int = 11) -> list[str]:
    """Questions in the style of the turns (names, topics and details that occur in the bank)."""
    rng = random.Random(seed)
    queries: list[str] = []
    for _ in range(n):
        topic = rng.choice(list(TOPICS))
        queries.append(
            rng.choice(QUESTIONS).format(
                name=rng.choice(NAMES), topic=topic, detail=rng.choice(TOPICS[topic]), when=rng.choice(WHEN)
            )
        )
    return queries
