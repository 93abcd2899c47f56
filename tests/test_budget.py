"""The token budget is exact: len(encode(context)) == tokens <= max_tokens, and packing skips-and-continues."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memwrap import Memory, RetainItem
from memwrap.engine.recall.pack import fewest_tokens, pack, plan, render_line
from memwrap.models import RecalledMemory
from memwrap.tokens import encoding_for_model

NOW = datetime(2026, 11, 30, tzinfo=UTC)
ENC = encoding_for_model(None)

_words = st.sampled_from(
    [
        "Alice",
        "Google",
        "张伟",
        "阿里巴巴",
        "杭州",
        "🎉",
        "😀👍",
        "café",
        "naïve",
        "memory",
        "budget",
        "the",
        "a",
        "\n",
        "  ",
        "\t",
        ".",
        "!",
        "?",
        "-",
        "<|endoftext|>",
        "ок",
        "東京",
        "1234",
        "3.14",
        "e-mail",
        "'s",
    ]
)
_texts = st.lists(_words, min_size=1, max_size=40).map(" ".join).filter(lambda t: t.strip() != "")
_long_texts = st.integers(min_value=200, max_value=3000).map(lambda n: ("long memory 很长的记忆 🎈 " * n)[: n * 5])


@st.composite
def _memories(draw: st.DrawFn) -> list[RecalledMemory]:
    texts = draw(st.lists(st.one_of(_texts, _texts, _texts, _long_texts), min_size=0, max_size=60))
    return [
        RecalledMemory(
            id=f"00000000-0000-0000-0000-{i:012d}",
            text=t,
            type="raw",
            mentioned_at=datetime(2026, 1 + i % 12, 1 + i % 28, tzinfo=UTC),
        )
        for i, t in enumerate(texts)
    ]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memories=_memories(), max_tokens=st.integers(min_value=1, max_value=8000))
def test_pack_is_exact_and_leaves_no_fitting_memory_out(memories: list[RecalledMemory], max_tokens: int) -> None:
    context, tokens, chosen = pack(memories, max_tokens=max_tokens, now=NOW, encoding=ENC)
    assert tokens == len(ENC.encode(context, disallowed_special=())) <= max_tokens
    if not chosen:
        assert context == "" and tokens == 0
        return
    # Skip-and-continue: every memory left out would not have fitted in what remained.
    remaining = max_tokens - tokens
    chosen_ids = {m.id for m in chosen}
    for memory in memories:
        if memory.id not in chosen_ids:
            assert len(ENC.encode(render_line(memory), disallowed_special=())) > remaining
    # Order is kept.
    order = [m.id for m in memories if m.id in chosen_ids]
    assert [m.id for m in chosen] == order


# Any text: every Unicode category, white space of every kind (str.split's and the pre-tokenizer's differ on
# U+001C-U+001F), runs of punctuation and digits, words glued by invisible characters.
_any_text = st.text(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u200b\u2028\u2029\u202f\u3000.,;:-'"),
    ),
    max_size=400,
)


@settings(max_examples=1500, deadline=None)
@given(text=_any_text)
def test_the_word_count_never_exceeds_the_token_count(text: str) -> None:
    """The packer skips a line without counting it when its words alone exceed what is left: that is only the
    same choice if no text has more words than tokens, in the encodings the block is counted in."""
    assert fewest_tokens(text) <= len(ENC.encode_ordinary(text))
    line = render_line(RecalledMemory(id="00000000-0000-0000-0000-000000000001", text=text or "x", type="raw"))
    assert fewest_tokens(line) <= len(ENC.encode_ordinary(line))


def test_explain_counts_the_lines_the_packer_ruled_out_by_their_words() -> None:
    """A line skipped by its word count still shows its exact cost to `explain` (Recall.considered)."""
    short = RecalledMemory(id="00000000-0000-0000-0000-000000000001", text="short memory " * 20, type="raw")
    long = RecalledMemory(id="00000000-0000-0000-0000-000000000002", text="a much longer memory " * 200, type="raw")
    packing = plan([short, long], max_tokens=200, now=NOW, encoding=ENC)
    assert packing.chosen == [0]
    assert packing.line_tokens[1] is None  # 800 words > what was left: never counted while packing
    considered = packing.considered([short, long])
    assert considered[1].tokens == len(ENC.encode_ordinary(packing.lines[1])) and not considered[1].fit
    assert considered[1].reason == f"its line needs {considered[1].tokens} tokens; {packing.budget_left[1]} were left"
    assert considered[0].tokens == len(ENC.encode_ordinary(packing.lines[0])) and considered[0].fit


def test_one_long_memory_does_not_block_shorter_ones() -> None:
    long = RecalledMemory(id="00000000-0000-0000-0000-000000000001", text="word " * 2000, type="raw")
    short = [
        RecalledMemory(id=f"00000000-0000-0000-0000-{i:012d}", text=f"short memory {i}", type="raw")
        for i in range(2, 12)
    ]
    context, tokens, chosen = pack([long, *short], max_tokens=300, now=NOW, encoding=ENC)
    assert long.id not in {m.id for m in chosen}
    assert len(chosen) == 10
    assert tokens == len(ENC.encode(context)) <= 300


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(max_tokens=st.integers(min_value=1, max_value=8000))
def test_recall_budget_end_to_end(memory: Memory, max_tokens: int) -> None:
    bank = "budget-property"
    if not memory.list(bank, limit=1):
        texts = [
            "张伟于2021年加入阿里巴巴，负责杭州的云计算项目。",
            "Alice loves 🎉 parties and 😀 emoji.",
            "A very long memory. " * 400,
            "Bob's café serves naïve crème brûlée.",
            "短记忆",
        ] + [f"Memory number {i} about topic {i % 7} and person P{i % 5}." for i in range(80)]
        memory.retain_many(bank, [RetainItem(content=t, document_id=f"d{i}") for i, t in enumerate(texts)])
    recall = memory.recall(bank, "What do we know about topic 3 and 张伟?", token_budget=max_tokens, now=NOW)
    assert recall.tokens == len(ENC.encode(recall.context, disallowed_special=())) <= max_tokens


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memories=_memories(), max_tokens=st.integers(min_value=1, max_value=4000))
def test_explain_accounts_for_every_candidate(memories: list[RecalledMemory], max_tokens: int) -> None:
    """explain=True: every candidate, in order, with the line it would add; those that fit are exactly the block's."""
    packing = plan(memories, max_tokens=max_tokens, now=NOW, encoding=ENC)
    considered = packing.considered(memories)
    assert [c.id for c in considered] == [m.id for m in memories]
    assert [c.rank for c in considered] == list(range(1, len(memories) + 1))
    fit = [c for c in considered if c.fit]
    assert [c.id for c in fit] == [m.id for m in pack(memories, max_tokens=max_tokens, now=NOW, encoding=ENC)[2]]
    assert "".join(c.line for c in fit) in packing.context
    for c in considered:
        assert c.line == render_line(c) and c.tokens == len(ENC.encode_ordinary(c.line))
        if not c.fit:
            assert c.tokens > c.budget_left and str(c.tokens) in c.reason


def test_ids_start_each_line_and_leave_the_default_block_as_it_was() -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    chunk = {"type": "raw", "message_id": "m1", "parts": 3, "bank_id": "b"}
    memories = [
        RecalledMemory(id=f"00000000-0000-0000-0000-{1:012d}", text="Alice moved to Lisbon.", type="world"),
        RecalledMemory(id=f"00000000-0000-0000-0000-{2:012d}", text="first part", part=0, **chunk),
        RecalledMemory(id=f"00000000-0000-0000-0000-{3:012d}", text="third part", part=2, **chunk),
    ]
    plain = plan(memories, max_tokens=4000, now=now, encoding=ENC)
    named = plan(memories, max_tokens=4000, now=now, encoding=ENC, ids_in_block=True)
    assert plan(memories, max_tokens=4000, now=now, encoding=ENC, ids_in_block=False).context == plain.context
    assert named.chosen == plain.chosen == [0, 1, 2] and named.tokens == len(ENC.encode_ordinary(named.context))
    plain_lines, named_lines = plain.context.splitlines()[2:-1], named.context.splitlines()[2:-1]
    # Two lines: the fact, and the message's two chunks as one line under the id of the chunk that places it.
    assert [line.split(")", 1)[0] for line in named_lines] == [f"- (id {memories[0].id}", f"- (id {memories[1].id}"]
    assert [line.replace(f"(id {m.id}) ", "") for line, m in zip(named_lines, memories, strict=False)] == plain_lines
