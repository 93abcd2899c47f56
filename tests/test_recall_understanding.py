"""Recall that understands the question: its time range, replaced facts, who said what, and names.

Each test retains what a user or a chat would, through the public API (no LLM), and checks the ranked list and the
block a wrapper would inject."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from database import Database

from memwrap import Memory, RetainItem

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def day(month: int, dom: int, year: int = 2026) -> datetime:
    return datetime(year, month, dom, 18, 0, tzinfo=UTC)


# One user's dated year, each said on its day (some dated in their words too).
YEAR = [
    (day(1, 14), "user: I signed up for a pottery class on Thursday evenings."),
    (day(2, 20), "user: We had a team offsite in the Alps, lots of skiing."),
    (day(3, 8), "user: I ran my first 10k race along the river today."),
    (day(4, 2), "user: I moved into a flat in Lisbon with a view of the river."),
    (day(4, 25), "user: My sister Maya visited and we went to Sintra."),
    (day(5, 17), "user: I planted tomatoes and basil on the balcony."),
    (day(6, 30), "user: I finished reading a long novel about a whaling ship."),
    (day(8, 12), "user: I went to Porto for a weekend in August, the food was great."),
    (day(9, 5), "user: Work got busy with a product launch."),
    (day(10, 3), "user: I adopted a kitten called Miso."),
    (day(11, 2), "user: I started learning the cello last month and I practise every morning."),
    (day(11, 20), "user: Last month I also did a pottery exhibition with my class."),
]


@pytest.fixture
def dated_year(memory: Memory, bank: str) -> str:
    memory.retain_many(
        bank, [RetainItem(content=text, timestamp=when, document_id=f"s{i}:1") for i, (when, text) in enumerate(YEAR)]
    )
    return bank


@pytest.mark.parametrize(
    ("question", "months"),
    [
        ("What did I do last spring?", {3, 4, 5}),
        ("What did I do in August?", {8}),
        ("What happened in April?", {4}),
    ],
)
def test_a_time_range_in_the_question_puts_the_memories_inside_it_first(
    memory: Memory, dated_year: str, question: str, months: set[int]
) -> None:
    recall = memory.recall(dated_year, question, now=NOW, token_budget=2048)
    inside = sum(1 for _when, text in YEAR if _month(_when) in months)
    first = recall.memories[: min(3, inside)]
    assert [m.mentioned_at.month for m in first if m.mentioned_at] and all(
        m.mentioned_at is not None and m.mentioned_at.month in months for m in first
    ), [(m.mentioned_at, m.text) for m in recall.memories[:5]]
    # The rest of the year still fills what the budget leaves, after them.
    assert len(recall.memories) > inside


def _month(when: datetime) -> int:
    return when.month


def test_time_words_are_no_keyword_terms(memory: Memory, dated_year: str) -> None:
    """ "last" of "last spring" matched "last month" in memories of any date; now only the temporal arm reads it."""
    recall = memory.recall(dated_year, "What did I do last spring?", now=NOW, token_budget=2048, explain=True)
    assert recall.considered is not None
    # The cello memory ("... last month") may or may not be among the semantic arm's candidates (it is on a CPU with
    # AVX-512 VNNI, not on an AVX2-only one: the int8 products differ); the keyword arm must not bring it.
    cello = [c for c in recall.considered if "cello" in c.text]
    assert all("keyword" not in c.arms for c in cello), cello
    assert all("keyword" not in c.arms for c in recall.considered if " last " in f" {c.text} ")
    assert recall.time_window is not None and recall.time_window.expression == "last spring"


def test_relative_words_are_read_on_the_day_a_question_names(memory: Memory, bank: str) -> None:
    """ "two weeks before 11 August 2023" is late July 2023, whatever today is."""
    memory.retain_many(
        bank,
        [
            RetainItem(
                content="Maria: We got a puppy and named her Shadow!", timestamp=datetime(2023, 7, 30, tzinfo=UTC)
            ),
            RetainItem(
                content="Maria: The shelter asked me to bake for the fundraiser.",
                timestamp=datetime(2023, 8, 20, tzinfo=UTC),
            ),
            RetainItem(content="Maria: My old puppy photos made me cry.", timestamp=datetime(2023, 3, 2, tzinfo=UTC)),
        ],
    )
    recall = memory.recall(
        bank,
        "What is the name of the puppy Maria got two weeks before August 11, 2023?",
        now=datetime(2023, 10, 20, tzinfo=UTC),
    )
    assert recall.time_window is not None
    assert (recall.time_window.start.date().isoformat(), recall.time_window.end.date().isoformat()) == (
        "2023-07-28",
        "2023-08-11",
    )
    assert "Shadow" in recall.memories[0].text


EDITOR = [
    (day(1, 12), "user: I use Neovim for all my coding\nassistant: Nice, Neovim is a great editor."),
    (day(2, 2), "user: I'm training for a half marathon in March"),
    (day(5, 2), "user: My sister Maya lives in Porto"),
    (day(7, 2), "user: I adopted a cat called Miso"),
    (day(11, 20), "user: Actually I switched to VS Code last week\nassistant: Noted, VS Code it is."),
]


@pytest.fixture
def editors(memory: Memory, bank: str) -> str:
    memory.retain_many(
        bank, [RetainItem(content=text, timestamp=when, document_id=f"s{i}:1") for i, (when, text) in enumerate(EDITOR)]
    )
    return bank


def test_a_newer_statement_of_change_ranks_above_the_older_which_is_marked_earlier(
    memory: Memory, editors: str
) -> None:
    recall = memory.recall(editors, "Which editor do I use now?", now=NOW, token_budget=400)
    texts = [m.text for m in recall.memories]
    switched = next(i for i, t in enumerate(texts) if "switched to VS Code" in t)
    neovim = next(i for i, t in enumerate(texts) if "I use Neovim" in t)
    assert switched == 0 and neovim > switched
    old = recall.memories[neovim]
    assert old.replaced_by == recall.memories[switched].id and old.replaced_at == day(11, 20)
    assert "- [2026-01-12] (earlier; changed 2026-11-20) user: I use Neovim for all my coding\n" in recall.context
    # The assistant's "Neovim is a great editor" is as old as what it answered.
    echo = next(m for m in recall.memories if "great editor" in m.text)
    assert echo.replaced_by == old.replaced_by


def test_a_tight_budget_leaves_the_replaced_statement_out(memory: Memory, editors: str) -> None:
    recall = memory.recall(editors, "Which editor do I use now?", now=NOW, token_budget=110)
    assert "VS Code" in recall.context and "Neovim" not in recall.context


def test_a_question_about_the_past_keeps_the_earlier_statement_in_its_place(memory: Memory, editors: str) -> None:
    """Asked about the present, the replaced statement comes after every other memory; asked about the past, it is
    what the question wants: it keeps its place, ahead of the assistant's "Noted, VS Code it is." """

    def rank(question: str, words: str) -> int:
        recall = memory.recall(editors, question, now=NOW, token_budget=2048)
        return next(i for i, m in enumerate(recall.memories) if words in m.text)

    assert rank("Which editor do I use now?", "I use Neovim") > rank("Which editor do I use now?", "Noted, VS")
    assert rank("Which editor did I use before?", "I use Neovim") < rank("Which editor did I use before?", "Noted, VS")
    recall = memory.recall(editors, "Which editor did I use before?", now=NOW, token_budget=2048)
    assert "(earlier; changed 2026-11-20) user: I use Neovim" in recall.context


def test_without_a_word_of_change_a_question_about_now_puts_the_newer_first(memory: Memory, bank: str) -> None:
    memory.retain_many(
        bank,
        [
            RetainItem(content="user: I work at a bakery in Leeds", timestamp=day(2, 1)),
            RetainItem(content="user: I work at a bike shop in York", timestamp=day(9, 1)),
            RetainItem(content="user: My brother works at a bank", timestamp=day(10, 1)),
        ],
    )
    recall = memory.recall(bank, "Where do I work now?", now=NOW)
    texts = [m.text for m in recall.memories]
    # The newer of the speaker's two jobs first. (multilingual-e5-small, the default since issue 38, puts "My
    # brother works at a bank" nearest the question; MiniLM put it after both: the claim here is the order of
    # the two statements of one topic.)
    bike, bakery = (next(i for i, t in enumerate(texts) if w in t) for w in ("bike shop", "bakery"))
    assert bike < bakery
    assert all(m.replaced_by is None for m in recall.memories)  # nothing said it changed: no mark


def test_speaker_labels_are_a_field_of_the_memory_not_an_entity(memory: Memory, bank: str, db: Database) -> None:
    turns = []
    for i in range(15):
        turns += [f"Alice: I went for a walk by the canal, day {i}.", f"Bob: Nice, Alice. I stayed in, day {i}."]
    turns += [
        "Alice: I'm lactose intolerant, so no cheese board for me.",
        "Bob: My sister Maya is visiting next week with her dog.",
        "Alice: Maya's dog is adorable.",
    ]
    memory.retain_many(
        bank, [RetainItem(content=t, timestamp=day(10, 1), document_id=f"chat:{i}") for i, t in enumerate(turns)]
    )
    names = {e.name for e in memory.entities(bank)}
    assert "Bob" not in names and "Maya" in names
    # "Alice" is an entity only where a turn's own words name her (Bob's "Nice, Alice."), not on her own turns.
    alice = db.blocking.fetchval("SELECT mention_count FROM entities WHERE bank_id = $1 AND name_key = 'alice'", bank)
    assert alice == 15
    listed = memory.list(bank, limit=3)
    assert [m.speaker for m in listed] == ["Alice", "Bob", "Alice"]

    # Alice's words come before Bob's, and among them the one about food before her walks (all-MiniLM-L6-v2 puts
    # "Maya's dog is adorable" as near "what can't Alice eat" as the lactose intolerance: the two lead).
    recall = memory.recall(bank, "What can't Alice eat?", now=NOW, token_budget=2048)
    ranked = [m.text for m in recall.memories]
    lactose = next(i for i, t in enumerate(ranked) if "lactose intolerant" in t)
    assert lactose <= 1 and recall.memories[lactose].speaker == "Alice"
    assert lactose < min(i for i, t in enumerate(ranked) if "walk by the canal" in t or t.startswith("Bob:"))

    only_bob = memory.recall(bank, "who is visiting?", now=NOW, filters={"speakers": ["bob"]})
    assert only_bob.memories and {m.speaker for m in only_bob.memories} == {"Bob"}


def test_the_assistants_turns_rank_below_the_users_own_statement(memory: Memory, bank: str) -> None:
    memory.retain(
        bank,
        "user: I'm vegetarian and allergic to peanuts.\n"
        "assistant: Noted: vegetarian, peanut allergy. I'll keep restaurant tips to that.",
        timestamp=day(4, 12),
        document_id="s1:1",
    )
    recall = memory.recall(bank, "Noted: vegetarian, peanut allergy", now=NOW)
    assert [m.speaker for m in recall.memories] == ["user", "assistant"]  # even when the wording is the assistant's
    assert recall.context.count("\n- ") == 2 and "\n- [2026-04-12] assistant: Noted" in recall.context


def test_heuristic_consolidation_records_a_change_not_support(memory: Memory, bank: str) -> None:
    memory.retain_many(
        bank,
        [
            RetainItem(content="user: I use Neovim and prefer Python over Go", timestamp=day(1, 12), document_id="a:1"),
            RetainItem(content="user: I use Neovim and I prefer Python to Go", timestamp=day(3, 12), document_id="b:1"),
            RetainItem(
                content="user: Actually I switched to VS Code last week", timestamp=day(11, 20), document_id="a:2"
            ),
            RetainItem(content="user: I live in Lisbon", timestamp=day(2, 20), document_id="c:1"),
            RetainItem(content="user: I moved to Berlin in October", timestamp=day(11, 21), document_id="d:1"),
        ],
    )
    memory.consolidate(bank)
    observations = {o.text: memory.get_observation(bank, o.id) for o in memory.observations(bank)}
    assert set(observations) == {"user: Actually I switched to VS Code last week", "user: I moved to Berlin in October"}
    editor = observations["user: Actually I switched to VS Code last week"]
    stances = sorted((e.stance, e.quote[:16]) for e in editor.evidence)
    assert stances == [
        ("superseded", "user: I use Neov"),
        ("superseded", "user: I use Neov"),
        ("supports", "user: Actually I"),
    ]
    home = observations["user: I moved to Berlin in October"]
    assert sorted(e.stance for e in home.evidence) == ["superseded", "supports"]
