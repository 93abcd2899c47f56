"""Text processing for retain and keyword search: splitting, entities, search text, cleaning.

Throughput is measured outside the test suite (see the report that came with these modules); these
tests pin behaviour only.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from growth import FACTOR, LINEAR_BOUND, growth
from hypothesis import given, settings
from hypothesis import strategies as st

from memwrap.engine.language.entities import MAX_ENTITIES, entity_key, extract_entities, extract_query_entities
from memwrap.engine.language.text import clean_text, has_cjk, normalise_whitespace, search_text
from memwrap.engine.retain.split import split_units

ZHANG_WEI = "张伟于2021年加入阿里巴巴，负责杭州的云计算项目。"


def _non_space(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _assert_lossless(text: str, units: list[str], max_chars: int) -> None:
    assert all(units), "no empty units"
    assert all(len(unit) <= max_chars for unit in units)
    assert all(unit == unit.strip() for unit in units)
    assert _non_space("".join(units)) == _non_space(text)


# --- split_units -----------------------------------------------------------------------------------


def test_split_empty_and_whitespace_give_nothing() -> None:
    assert split_units("") == []
    assert split_units(" \n\t \r\n ") == []


def test_split_short_text_stays_whole_with_readable_whitespace() -> None:
    text = "  Hello   there,\tAlice!  \r\n\r\n\r\n  How are you?\n  Fine.  "
    assert split_units(text) == ["Hello there, Alice!\n\nHow are you?\nFine."]


def test_split_packs_sentences_greedily() -> None:
    text = "One two three. Four five six! Seven eight nine? Ten eleven twelve."
    units = split_units(text, max_chars=32)
    assert units == ["One two three. Four five six!", "Seven eight nine?", "Ten eleven twelve."]
    _assert_lossless(text, units, 32)


def test_split_respects_abbreviations_and_decimals() -> None:
    text = "Dr. Smith paid 3.5 dollars at 9 a.m. today, e.g. for coffee. Then J. K. Rowling arrived."
    units = split_units(text, max_chars=62)
    assert units == ["Dr. Smith paid 3.5 dollars at 9 a.m. today, e.g. for coffee.", "Then J. K. Rowling arrived."]


def test_split_at_maybe_final_abbreviation_only_before_capital() -> None:
    text = "We moved to the U.S. Then it rained. They met at 5 p.m. tomorrow they leave."
    units = split_units(text, max_chars=25)
    assert units[0] == "We moved to the U.S."
    _assert_lossless(text, units, 25)


def test_split_chinese_at_cjk_punctuation() -> None:
    text = ZHANG_WEI + "他很喜欢这份工作！你呢？" + ZHANG_WEI
    units = split_units(text, max_chars=30)
    assert units == [ZHANG_WEI, "他很喜欢这份工作！你呢？", ZHANG_WEI]


def test_split_prefers_line_and_paragraph_breaks() -> None:
    text = "shopping list\n- eggs\n- milk\n\nnotes for tomorrow\n- call Bob"
    units = split_units(text, max_chars=30)
    assert units == ["shopping list\n- eggs\n- milk", "notes for tomorrow\n- call Bob"]


def test_split_long_sentence_cuts_at_whitespace() -> None:
    text = " ".join(f"word{i}" for i in range(200))
    units = split_units(text, max_chars=50)
    assert all(not unit.startswith(" ") and re.fullmatch(r"(word\d+ ?)+", unit) for unit in units)
    _assert_lossless(text, units, 50)


def test_split_text_without_spaces_is_cut_at_max_chars() -> None:
    text = "字" * 2500
    units = split_units(text, max_chars=1000)
    assert [len(unit) for unit in units] == [1000, 1000, 500]
    _assert_lossless(text, units, 1000)


def test_split_does_not_break_emoji_sequences() -> None:
    family = "👨\u200d👩\u200d👧"
    text = "x" * 9 + family * 5
    units = split_units(text, max_chars=10)
    _assert_lossless(text, units, 10)
    for unit in units:
        assert not unit.startswith("\u200d") and not unit.endswith("\u200d")


def test_split_handles_emoji_and_mixed_scripts() -> None:
    text = "Great day 🎉! 我们去了北京。Then we flew to Tokyo 東京に行きました. Ça va? Да!" * 20
    units = split_units(text, max_chars=100)
    _assert_lossless(text, units, 100)


def test_split_one_megabyte() -> None:
    sentence = "Dr. Who said e.g. this is 3.5 times better than the U.S. version! Really? "
    text = (sentence * (1_000_000 // len(sentence) + 1))[:1_000_000]
    units = split_units(text)
    _assert_lossless(text, units, 1000)
    assert all(len(unit) > 500 for unit in units[:-1]), "sentences are packed, not emitted one by one"


def test_split_one_megabyte_of_chinese_and_of_newlines() -> None:
    chinese = (ZHANG_WEI * 30_000)[:1_000_000]
    _assert_lossless(chinese, split_units(chinese), 1000)
    lines = "a\n" * 500_000
    _assert_lossless(lines, split_units(lines), 1000)


LONG_RUNS: dict[str, tuple[Callable[[int], str], int]] = {  # a text of about n characters, and the n to test
    "spaces": (lambda n: " " * n + "x", 25_000),
    "exclamation marks": (lambda n: "!" * n + "x", 25_000),
    "dots": (lambda n: "a" + "." * n + "b", 25_000),
    "chinese then latin": (lambda n: "字" * (n // 2) + "a" * (n // 2) + "!x", 4_000),  # the word segmenter is slower
}


@pytest.mark.parametrize("case", LONG_RUNS)
def test_long_runs_stay_linear(case: str) -> None:
    """Tripwire for regex backtracking: a pattern that backtracks over a long run costs n² (or worse)."""
    make, n = LONG_RUNS[case]
    text = make(FACTOR * n)
    _assert_lossless(text, split_units(text), 1000)
    assert growth(lambda size: (split_units(make(size)), extract_entities(make(size))), n) < LINEAR_BOUND


def test_split_rejects_nonpositive_max_chars() -> None:
    with pytest.raises(ValueError):
        split_units("hello", max_chars=0)


# --- extract_entities ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Alice joined Google in March 2026.", ["Alice", "Google"]),
        ("Hey Mel! Good to see you! How have you been?", ["Mel"]),
        ("I went to the LGBTQ support group yesterday", ["LGBTQ"]),
        ("Visited New York with @alice_b and Bob's sister.", ["New York", "@alice_b", "Bob"]),
        ("The University of Toronto is near Lake Ontario.", ["University of Toronto", "Lake Ontario"]),
        ("Dr. Smith moved to St. Louis; I love my iPhone and eBay.", ["Smith", "St. Louis", "iPhone", "eBay"]),
        ("Cooking is fun. I love cooking with Jean-Luc.", ["Jean-Luc"]),
        ("Émile went to Zürich with Ólafur 😀.", ["Émile", "Zürich", "Ólafur"]),
        ("I AM SO HAPPY TODAY GUYS", []),
        ("Monday I told Sarah about it", ["Sarah"]),
        ("See https://GitHub.com/Foo or mail Bob.Smith@Example.com", []),
    ],
)
def test_extract_entities_english(text: str, expected: list[str]) -> None:
    assert extract_entities(text) == expected


def test_extract_entities_empty() -> None:
    assert extract_entities("") == []
    assert extract_entities("   ") == []
    assert extract_entities("just lowercase chatter, nothing here") == []


def test_extract_entities_chinese() -> None:
    entities = extract_entities(ZHANG_WEI)
    assert {"张伟", "阿里巴巴", "杭州"} <= set(entities)
    assert entities.index("张伟") < entities.index("阿里巴巴") < entities.index("杭州")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("周末和小王去了故宫", ["小王"]),
        ("我妹妹张小雨下个月去英国留学", ["张小雨", "英国"]),
        ("哈哈，好的，谢谢你的建议！", []),  # jieba tags 谢谢 as a person name
        ("我明白了，阳光很好", []),
    ],
)
def test_extract_entities_chinese_cleanup(text: str, expected: list[str]) -> None:
    assert extract_entities(text) == expected


def test_extract_entities_mixed_scripts_in_order_of_appearance() -> None:
    assert extract_entities("I met 王芳 at Google in 北京 last week") == ["王芳", "Google", "北京"]


def test_extract_entities_deduplicates_by_key() -> None:
    assert extract_entities("Alice called. Then ALICE's dog barked at Alice.") == ["Alice"]


def test_extract_entities_caps_the_count() -> None:
    text = ", ".join(f"Name{chr(65 + i % 26)}{chr(65 + i // 26)}x" for i in range(40))
    assert len(extract_entities(text)) == MAX_ENTITIES


def test_extract_query_entities_drops_question_words() -> None:
    assert extract_query_entities("What did Caroline research?") == ["Caroline"]
    assert extract_query_entities("When did Melanie paint a sunrise?") == ["Melanie"]
    assert extract_query_entities("Tell me about Jon's business") == ["Jon"]
    assert extract_query_entities("Where does Alice's brother work in New York?") == ["Alice", "New York"]
    assert extract_query_entities("张伟在哪家公司工作？") == ["张伟"]
    assert extract_query_entities("") == []


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Alice", "alice"),
        ("Alice's", "alice"),
        ("Alice’s", "alice"),
        ("James'", "james"),
        ("  ＡＬＩＣＥ  ", "alice"),
        ('"New   York,"', "new york"),
        ("@alice_b", "alice_b"),
        ("C#", "c#"),
        (".NET", ".net"),
        ("张伟", "张伟"),
        ("Straße", "strasse"),
    ],
)
def test_entity_key(name: str, key: str) -> None:
    assert entity_key(name) == key


# --- text helpers ----------------------------------------------------------------------------------


def test_has_cjk() -> None:
    assert has_cjk(ZHANG_WEI)
    assert has_cjk("東京に行きました") and has_cjk("안녕하세요")
    assert not has_cjk("plain English, café, 😀")
    assert not has_cjk("")


def test_search_text_segments_chinese() -> None:
    tokens = search_text(ZHANG_WEI).split()
    assert "张伟" in tokens and "阿里巴巴" in tokens and "杭州" in tokens
    assert "的" not in tokens and "，" not in tokens and "。" not in tokens
    assert "2021" in tokens


def test_search_text_adds_sub_words() -> None:
    tokens = search_text("我在北京大学读书").split()
    assert "北京大学" in tokens and "北京" in tokens and "大学" in tokens
    assert "我" not in tokens and "在" not in tokens


def test_search_text_drops_question_words() -> None:
    tokens = search_text("张伟在哪家公司工作？").split()
    assert "张伟" in tokens and "公司" in tokens
    assert not {"在", "哪家", "哪", "？"} & set(tokens)


def test_search_text_leaves_latin_text_alone() -> None:
    for text in ["Alice joined Google in March 2026.", "café ☕ 😀\nnew line", ""]:
        assert search_text(text) == text


def test_search_text_mixed_scripts() -> None:
    tokens = search_text("我用Python写代码, and Alice 很开心😀").split()
    assert "Python" in tokens and "代码" in tokens and "and" in tokens and "Alice" in tokens
    assert "我" not in tokens


def test_normalise_whitespace() -> None:
    assert normalise_whitespace("  a \t b\n\n c\u3000d  ") == "a b c d"
    assert normalise_whitespace("") == ""


def test_clean_text() -> None:
    assert clean_text("plain text\twith tab\nand newline") == "plain text\twith tab\nand newline"
    assert clean_text("a\x00b\x07c\x1fd") == "abcd"
    assert clean_text("line\r\nnext\rlast") == "line\nnext\nlast"
    assert clean_text("page\x0cbreak\x0bhere") == "page\nbreak\nhere"
    assert clean_text("lone \ud800 surrogate \udfff") == "lone  surrogate "
    assert clean_text("pair \ud83d\ude00 joined") == "pair 😀 joined"
    assert clean_text("emoji 😀 and 中文 stay") == "emoji 😀 and 中文 stay"
    cleaned = clean_text("x\ud83d\x00")
    cleaned.encode("utf-8")  # must be valid UTF-8 for PostgreSQL
    assert cleaned == "x"


def test_random_text_invariants() -> None:
    # A seeded fuzz over the awkward pieces: abbreviations, CJK punctuation, ZWJ emoji, controls.
    import random

    pieces = list("aZ .!?\n\t\r,;:'\"()…。！？；，“”」19") + [
        "Dr. ", "e.g. ", "U.S. ", "张伟", "阿里巴巴", "😀", "👨\u200d👩", "e\u0301", "  ", "\n\n",
        "Alice", "@bob_x ", "NASA", "iPhone", "\u3000", "\x00", "\ud800", "的",
    ]  # fmt: skip
    rng = random.Random(7)
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 80)))
        max_chars = rng.randint(1, 40)
        _assert_lossless(text, split_units(text, max_chars), max_chars)
        entities = extract_entities(text)
        assert all(entity and entity == entity.strip() for entity in entities)
        assert len({entity_key(entity) for entity in entities}) == len(entities)
        extract_query_entities(text)
        search_text(text)
        clean_text(text).encode("utf-8")


@pytest.mark.parametrize(
    ("said", "fact"),
    [
        ("I prefer Vue now.", "The user prefers Vue now."),
        ("I also like jazz.", "The user also likes jazz."),
        ("I usually study at night.", "The user usually studies at night."),
        ("I watch films on Fridays.", "The user watches films on Fridays."),
        ("I have a cat.", "The user has a cat."),
        ("I don't eat meat.", "The user doesn't eat meat."),
        ("I go to the gym.", "The user goes to the gym."),
        ("I went to Lisbon.", "The user went to Lisbon."),  # a past tense stays as it is
        ("I recently moved to Lisbon.", "The user recently moved to Lisbon."),
        ("I'll visit Tokyo in March.", "The user will visit Tokyo in March."),
        ("I swim and I run.", "The user swims and the user runs."),
        ("My sister and I cook together.", "The user's sister and the user cook together."),  # a plural subject
        ("My best friend and I go hiking.", "The user's best friend and the user go hiking."),
        ("The user prefer Vue.", "The user prefer Vue."),  # no pronoun replaced: the model's own words are left
    ],
)
def test_the_users_verb_agrees_once_i_becomes_the_user(said: str, fact: str) -> None:
    from memwrap.engine.language.speakers import third_person

    assert third_person(said, {"user"}) == fact


def test_you_becomes_the_user_with_its_verb_in_a_chat() -> None:
    from memwrap.engine.language.speakers import third_person

    assert third_person("You prefer React, and you often cook.", {"user", "assistant"}) == (
        "The user prefers React, and the user often cooks."
    )
    assert third_person("You'll love it.", {"user", "assistant"}) == "The user will love it."


@settings(max_examples=500, deadline=None)
@given(
    text=st.text(st.one_of(st.characters(codec="utf-8"), st.sampled_from(" \t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000")))
)
def test_whitespace_is_collapsed_as_the_regex_collapsed_it(text: str) -> None:
    """normalise_whitespace splits on str's white space: the same runs, collapsed and stripped, as `\\s+` found."""
    assert normalise_whitespace(text) == re.sub(r"\s+", " ", text).strip()
