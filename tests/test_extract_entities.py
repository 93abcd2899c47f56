"""Entity resolution per bank: canonical entities, aliases learnt once and reused, careful similarity merges."""

from __future__ import annotations

from datetime import UTC, datetime

from database import Database
from extract_support import fact, make_engine, reply
from fakes.llm_server import FakeLLMServer
from llm_fixtures import engine_fixture

from memwrap.engine.engine import Engine

WHEN = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


engine = engine_fixture(make_engine)


async def entities_of(db: Database, bank: str) -> dict[str, list[str]]:
    """fact text → names of the entities it is linked to."""
    rows = await db.fetch(
        """
        SELECT m.text, array_agg(e.name ORDER BY e.name) AS names
        FROM memory_units m
        JOIN unit_entities ue ON ue.bank_id = m.bank_id AND ue.unit_id = m.id
        JOIN entities e ON e.bank_id = ue.bank_id AND e.id = ue.entity_id
        WHERE m.bank_id = $1 AND m.fact_type IN ('world', 'experience')
        GROUP BY m.text
        """,
        bank,
    )
    return {r["text"]: list(r["names"]) for r in rows}


async def aliases_of(db: Database, bank: str) -> dict[str, tuple[str, str]]:
    rows = await db.fetch(
        "SELECT a.alias, e.name, a.source FROM entity_aliases a "
        "JOIN entities e ON e.bank_id = a.bank_id AND e.id = a.entity_id "
        "WHERE a.bank_id = $1",
        bank,
    )
    return {r["alias"]: (r["name"], r["source"]) for r in rows}


async def test_an_alias_learnt_once_is_reused(engine: Engine, fake: FakeLLMServer, db: Database, bank: str) -> None:
    fake.script(
        [
            reply(
                [fact("张伟下周去上海出差。", "world", [1], ["张伟", "上海"])],
                entities=[{"name": "张伟", "aliases": ["Zhang Wei", "老张"]}],
            )
        ]
    )
    await engine.retain_many(
        bank, [{"content": "user: 我的同事张伟（大家叫他老张，英文名 Zhang Wei）下周去上海出差。", "timestamp": WHEN}]
    )
    # The model's aliases first; then the romanised spellings memwrap adds itself (name_links.py).
    assert await aliases_of(db, bank) == {
        "Zhang Wei": ("张伟", "llm"),
        "老张": ("张伟", "llm"),
        "Wei Zhang": ("张伟", "similar"),
        "Zhangwei": ("张伟", "similar"),
        "Shanghai": ("上海", "similar"),
    }

    # Later turns name him only by an alias, and the model says nothing about who that is.
    fake.script([reply([fact("老张说上海的会议取消了。", "world", [1], ["老张", "上海"])])])
    await engine.retain_many(bank, [{"content": "user: 老张说上海的会议取消了。", "timestamp": WHEN}])
    fake.script([reply([fact("Zhang Wei booked a new flight.", "world", [1], ["Zhang Wei"])])])
    await engine.retain_many(bank, [{"content": "user: Zhang Wei booked a new flight.", "timestamp": WHEN}])

    assert await entities_of(db, bank) == {
        "张伟下周去上海出差。": ["上海", "张伟"],
        "老张说上海的会议取消了。": ["上海", "张伟"],
        "Zhang Wei booked a new flight.": ["张伟"],
    }
    names = {
        r["name"]: r["mention_count"]
        for r in await db.fetch("SELECT name, mention_count FROM entities WHERE bank_id = $1", bank)
    }
    assert names == {"张伟": 3, "上海": 2}  # no entity for the aliases themselves

    recall = await engine.recall(bank, "Zhang Wei", token_budget=400, types=["world"])
    assert {m.text for m in recall.memories} >= {"张伟下周去上海出差。", "Zhang Wei booked a new flight."}


async def test_an_alias_beats_an_entity_seen_before_it_was_known(
    engine: Engine, fake: FakeLLMServer, db: Database, bank: str
) -> None:
    fake.script([reply([fact("老张喜欢喝茶。", "world", [1], ["老张"])])])
    await engine.retain_many(bank, [{"content": "user: 老张喜欢喝茶。", "timestamp": WHEN}])
    fake.script(
        [reply([fact("张伟就是老张。", "world", [1], ["张伟"])], entities=[{"name": "张伟", "aliases": ["老张"]}])]
    )
    await engine.retain_many(bank, [{"content": "user: 张伟就是老张。", "timestamp": WHEN}])
    # 老张 was an entity of its own, so it stays the canonical one; 张伟 became its alias.
    assert await aliases_of(db, bank) == {"张伟": ("老张", "llm")}
    fake.script([reply([fact("张伟明天休假。", "world", [1], ["张伟"])])])
    await engine.retain_many(bank, [{"content": "user: 张伟明天休假。", "timestamp": WHEN}])
    assert (await entities_of(db, bank))["张伟明天休假。"] == ["老张"]


async def test_spelling_variants_merge_only_in_shared_company(
    engine: Engine, fake: FakeLLMServer, db: Database, bank: str
) -> None:
    fake.script([reply([fact("Caroline and Melanie went hiking.", "world", [1], ["Caroline", "Melanie"])])])
    await engine.retain_many(bank, [{"content": "Melanie: Caroline and I went hiking.", "timestamp": WHEN}])
    fake.script(
        [
            reply(
                [
                    fact("Carolin told Melanie about the support group.", "world", [1], ["Carolin", "Melanie"]),
                    fact("Carol runs a bakery.", "world", [1], ["Carol"]),
                    fact("Caroline's cousin Carolyn visited Paris.", "world", [1], ["Carolyn", "Paris"]),
                ]
            )
        ]
    )
    await engine.retain_many(
        bank, [{"content": "Melanie: Carolin told me about the group; Carol runs a bakery.", "timestamp": WHEN}]
    )
    found = await entities_of(db, bank)
    assert found["Carolin told Melanie about the support group."] == ["Caroline", "Melanie"]  # typo, same company
    assert found["Carol runs a bakery."] == ["Carol"]  # a different name
    assert found["Caroline's cousin Carolyn visited Paris."] == ["Carolyn", "Paris"]  # close, but no shared company
    assert await aliases_of(db, bank) == {"Carolin": ("Caroline", "similar")}

    # The same spelling variant in a bank where it shares no company with Caroline stays its own entity.
    other = f"{bank}-b"
    fake.script([reply([fact("Caroline and Melanie went hiking.", "world", [1], ["Caroline", "Melanie"])])])
    await engine.retain_many(other, [{"content": "Melanie: Caroline and I went hiking.", "timestamp": WHEN}])
    fake.script([reply([fact("Carolin flew to Paris.", "world", [1], ["Carolin", "Paris"])])])
    await engine.retain_many(other, [{"content": "user: Carolin flew to Paris.", "timestamp": WHEN}])
    assert (await entities_of(db, other))["Carolin flew to Paris."] == ["Carolin", "Paris"]
    assert await aliases_of(db, other) == {}


async def test_a_short_form_joins_the_full_name_it_keeps_company_with(
    engine: Engine, fake: FakeLLMServer, db: Database, bank: str
) -> None:
    fake.script([reply([fact("Alice Smith joined Google in March.", "world", [1], ["Alice Smith", "Google"])])])
    await engine.retain_many(bank, [{"content": "user: Alice Smith joined Google in March.", "timestamp": WHEN}])
    fake.script(
        [
            reply(
                [
                    fact("Alice leads a team at Google.", "world", [1], ["Alice", "Google"]),
                    fact("Smith Street is closed.", "world", [1], ["Smith Street"]),
                ]
            )
        ]
    )
    await engine.retain_many(
        bank, [{"content": "user: Alice leads a team at Google. Smith Street is closed.", "timestamp": WHEN}]
    )
    found = await entities_of(db, bank)
    assert found["Alice leads a team at Google."] == ["Alice Smith", "Google"]
    assert found["Smith Street is closed."] == ["Smith Street"]


async def test_facts_without_model_entities_fall_back_to_the_heuristics(
    engine: Engine, fake: FakeLLMServer, db: Database, bank: str
) -> None:
    fake.script([reply([fact("Bob moved to Berlin.", "world", [1])])])
    await engine.retain_many(bank, [{"content": "user: Bob moved to Berlin.", "timestamp": WHEN}])
    assert (await entities_of(db, bank))["Bob moved to Berlin."] == ["Berlin", "Bob"]
