"""Chinese names the bank has seen are words of the keyword index, however jieba cuts them in a sentence."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from memwrap import Memory, RetainItem
from memwrap.engine.banks.names import han_names, with_names
from memwrap.engine.language.text import search_text

WHEN = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def test_jieba_cuts_an_unknown_name_two_ways_and_the_name_word_joins_them() -> None:
    # The inconsistency this is for (if jieba ever learns these names, the test says so).
    assert "浩宇" not in search_text("我和浩宇去吃饭").split() and "浩宇" not in search_text("浩宇住在上海").split()
    assert search_text("我和浩宇去吃饭").split() != search_text("浩宇住在上海").split()[:1]
    assert with_names(search_text("我和浩宇去吃饭"), {"浩宇"}).split()[-1] == "浩宇"
    assert with_names("浩宇 住", {"浩宇"}) == "浩宇 住"  # already a word: not twice
    assert han_names(["浩宇", "Zhang Wei", "张", "欧阳娜娜", "老张 "]) == {"浩宇", "欧阳娜娜", "老张"}


def _keyword_ids(memory: Memory, bank: str, query: str) -> list[str]:
    found = memory.recall(bank, query, now=WHEN, explain=True)
    return [m.text for m in found.memories if "keyword" in m.arms]


def test_a_name_cut_by_jieba_is_found_by_keyword_once_the_bank_has_seen_it(tmp_path: Path) -> None:
    with Memory(home=tmp_path) as memory:
        bank = "names"
        # jieba cuts 志明 as "志 明说" here and finds no name: the index holds neither 志明 nor an entity.
        memory.retain(bank, "志明说明天开会，会议改到三点。", timestamp=WHEN)
        memory.retain_many(
            bank, [RetainItem(content=f"今天的天气记录：第{i}天，多云。", timestamp=WHEN) for i in range(20)]
        )
        assert not any("三点" in t for t in _keyword_ids(memory, bank, "志明"))
        # A memory where 志明 is found as a name: the bank has seen it.
        memory.retain(bank, "昨天志明给我打电话，说他搬家了。", timestamp=WHEN)
        assert any(e.name == "志明" for e in memory.entities(bank))
        # The earlier memory's index got the name (backfill), so the question finds both by keyword.
        hits = _keyword_ids(memory, bank, "志明")
        assert any("三点" in t for t in hits) and any("搬家" in t for t in hits)
        # Written after, where jieba glues the name to 和: the name is a word of its own all the same.
        memory.retain(bank, "我和志明去吃饭了，吃的是火锅。", timestamp=WHEN)
        assert "志明" not in search_text("我和志明去吃饭了，吃的是火锅。").split()
        assert any("火锅" in t for t in _keyword_ids(memory, bank, "志明在哪里吃饭？"))
