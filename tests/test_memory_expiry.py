"""Per-memory expiry (`expires_at`): hidden from recall (every arm, neighbours, the block) and from consolidation
when past, listed on request, set and cleared by update; over the embedded API and over HTTP.

Recall is checked at a fixed `now` (its parameter), before and after the expiry: no sleeping.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fakes.llm_server import FakeLLMServer
from llm_fixtures import engine_fixture, fake_fixture
from reflect_support import call, done, make_engine, script_ran_out, tool_results, turn
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, upstream
from test_server_harness import ADMIN_KEY, ServerProcess

from memwrap import InvalidInputError, Memory
from memwrap.cli import main
from memwrap.engine.engine import Engine

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
WEEK = timedelta(days=7)
CODE = "The door code of the Lisbon flat is 4417 until the owners change it."
LIVES = "Alice lives in Lisbon and rents the flat on Rua Augusta."


def _explained(memory: Memory, bank: str, query: str, now: datetime) -> tuple[set[uuid.UUID], str, dict[str, int]]:
    """Ids of every candidate recall weighed, its block, and how many candidates each arm gave."""
    result = memory.recall(bank, query, now=now, explain=True, neighbours=True)
    arms: dict[str, int] = {}
    for m in result.considered or []:
        for arm in m.arms:
            arms[arm] = arms.get(arm, 0) + 1
    return {m.id for m in result.considered or []}, result.context, arms


def test_recall_hides_a_memory_once_it_expires(memory: Memory, bank: str) -> None:
    [code] = memory.retain(bank, CODE, timestamp=T0, expires_at=T0 + WEEK, document_id="flat:1")
    memory.retain(bank, LIVES, timestamp=T0, document_id="lisbon:1")
    # Each arm on its own would find the code: its words (keyword), its meaning (semantic), Lisbon (graph), and
    # "last week" around T0 (temporal).
    query = "What was the Lisbon flat door code I mentioned on 2 March 2026?"

    before, block, arms = _explained(memory, bank, query, now=T0 + timedelta(days=6))
    assert code in before and "4417" in block
    assert {"semantic", "keyword", "graph", "temporal"} <= set(arms)

    after, block, arms = _explained(memory, bank, query, now=T0 + WEEK + timedelta(seconds=1))
    assert code not in after and "4417" not in block
    assert "Rua Augusta" in block  # the rest of the bank is recalled as before
    # At the very moment of expiry it is gone already: expires_at is the first moment it is not recalled.
    assert code not in _explained(memory, bank, query, now=T0 + WEEK)[0]


def test_an_expired_turn_is_no_neighbour(memory: Memory, bank: str) -> None:
    """The turns around a hit come along (neighbours); an expired one does not."""
    turns = [
        ("user: We booked the Porto trip for the spring.", None),
        ("user: The booking reference is QX7-552, keep it for check-in.", T0 + WEEK),
        ("user: Porto has the best custard tarts at Manteigaria.", None),
    ]
    ids = [
        memory.retain(bank, text, timestamp=T0 + timedelta(minutes=i), document_id=f"porto:{i}", expires_at=exp)[0]
        for i, (text, exp) in enumerate(turns)
    ]
    live, block, _ = _explained(memory, bank, "Porto trip booked", now=T0 + timedelta(days=1))
    assert ids[1] in live and "QX7-552" in block
    gone, block, _ = _explained(memory, bank, "Porto trip booked", now=T0 + 2 * WEEK)
    assert ids[1] not in gone and "QX7-552" not in block
    assert ids[0] in gone


def test_a_live_memorys_context_view_shows_no_expired_neighbour(memory: Memory, bank: str) -> None:
    """The browser's context view of a live memory (its links, the observations citing it) never shows the text of a
    neighbour that has expired (the maintenance pass deletes it later; until then it is gone to every reader)."""
    turns = ["user: We booked the Porto trip.", "user: The booking reference is QX7-552.", "user: Custard tarts."]
    ids = [
        memory.retain(bank, text, timestamp=T0 + timedelta(minutes=i), document_id=f"porto:{i}")[0]
        for i, text in enumerate(turns)
    ]
    linked = memory.memory_context(bank, ids[0]).links
    assert ids[1] in {link.id for link in linked} and any("QX7-552" in link.text for link in linked)
    memory.update(bank, ids[1], expires_at=datetime.now(UTC) - timedelta(minutes=1))
    for neighbour in (ids[0], ids[2]):
        context = memory.memory_context(bank, neighbour)
        assert ids[1] not in {link.id for link in context.links}, context
        assert "QX7-552" not in context.model_dump_json()


def test_list_shows_expired_memories_on_request_and_update_sets_and_clears(memory: Memory, bank: str) -> None:
    past = datetime.now(UTC) - timedelta(hours=1)
    [old] = memory.retain(bank, "The conference wifi password was printed on the badge.", expires_at=past)
    [kept] = memory.retain(bank, "The user prefers aisle seats on long flights.")
    assert [m.id for m in memory.list(bank)] == [kept]
    listed = memory.list(bank, include_expired=True)
    assert [m.id for m in listed] == [old, kept]
    assert listed[0].expires_at == past and listed[1].expires_at is None
    assert memory.get(bank, old).expires_at == past  # get shows it always

    # update clears it (None: never expires) and sets it; no new version (what it says did not change)
    assert memory.update(bank, old, expires_at=None).expires_at is None
    assert [m.id for m in memory.list(bank)] == [old, kept]
    assert memory.update(bank, kept, expires_at=past).expires_at == past
    assert [m.id for m in memory.list(bank)] == [old]
    assert memory.update(bank, kept, tags=["travel"]).expires_at == past  # not given: kept
    assert len(memory.history(bank, old)) == 1
    with pytest.raises(InvalidInputError, match="expires_at"):
        memory.update(bank, kept, expires_at="next tuesday")  # type: ignore[arg-type]


def test_consolidation_learns_nothing_from_expired_memories(memory: Memory, bank: str) -> None:
    past = datetime.now(UTC) - timedelta(minutes=5)
    for i in range(5):
        memory.retain(
            bank, f"I prefer dark mode in my code editor{'!' * i}", timestamp=T0 + timedelta(days=i), expires_at=past
        )
    report = memory.consolidate(bank)
    assert report.units == 0 and memory.observations(bank) == []
    assert memory.consolidate(bank).units == 0  # read once: marked done, the watermark passed them
    live = [
        memory.retain(bank, f"I prefer dark mode in my code editor{'.' * i}", timestamp=T0 + timedelta(days=10 + i))[0]
        for i in range(5)
    ]
    assert memory.consolidate(bank).units == 5
    [observation] = memory.observations(bank)
    assert {e.memory_id for e in memory.get_observation(bank, observation.id).evidence} == set(live)


def test_a_retained_item_carries_its_expiry_in_every_shape(memory: Memory, bank: str) -> None:
    at = T0 + WEEK
    ids = memory.retain_many(
        bank,
        [
            {"content": "The parking permit runs out at the end of the month.", "expires_at": at.isoformat()},
            {"content": "The user's cat is called Miso.", "expires_at": None},
        ],
    )
    assert [memory.get(bank, i).expires_at for i in ids] == [at, None]
    with pytest.raises(InvalidInputError, match="expires_at"):
        memory.retain(bank, "x", expires_at="soon")  # type: ignore[arg-type]


def test_export_and_import_keep_the_expiry(memory: Memory, bank: str, tmp_path: Path) -> None:
    past = datetime.now(UTC) - timedelta(days=1)
    [gone] = memory.retain(bank, "The gate code was 8080.", expires_at=past)
    [kept] = memory.retain(bank, "The user plays the cello.")
    memory.export_bank(bank, tmp_path / "bank.jsonl")
    memory.import_bank(f"{bank}-copy", tmp_path / "bank.jsonl")
    assert [m.id for m in memory.list(f"{bank}-copy")] == [kept]
    assert memory.get(f"{bank}-copy", gone).expires_at == past


# -- reflect: its recall tool reads the bank at reflect's `now` ------------------------------------------------

reflector = engine_fixture(make_engine)
fake = fake_fixture(script_ran_out)


@pytest.mark.parametrize(("days", "shown"), [(6, True), (8, False)])
async def test_reflect_does_not_see_an_expired_memory(
    reflector: Engine, fake: FakeLLMServer, bank: str, days: int, shown: bool
) -> None:
    await reflector.retain(bank, CODE, timestamp=T0, expires_at=T0 + WEEK, document_id="flat:1")
    await reflector.retain(bank, LIVES, timestamp=T0, document_id="lisbon:1")
    fake.script(
        [turn(call("recall", query="Lisbon flat door code")), done("Memory says where Alice lives [F1].", "F1")]
    )
    await reflector.reflect(bank, "What is the door code of the Lisbon flat?", now=T0 + timedelta(days=days))
    [result] = tool_results(fake.requests[1])
    assert ("4417" in result) is shown
    assert "Rua Augusta" in result


# -- over HTTP: the REST API and the HTTP client ----------------------------------------------------------------


@pytest.fixture
def remote(sidecar: ServerProcess) -> Iterator[Memory]:
    with Memory(url=sidecar.url, api_key=ADMIN_KEY) as mem:
        yield mem


def test_expiry_over_http(remote: Memory, bank: str) -> None:
    past = datetime.now(UTC) - timedelta(hours=2)
    [gone] = remote.retain(bank, "The hotel room number was 512.", expires_at=past)
    [kept] = remote.retain(bank, "The user collects vintage postcards.")
    assert [m.id for m in remote.list(bank)] == [kept]
    assert [m.id for m in remote.list(bank, include_expired=True)] == [gone, kept]
    assert remote.get(bank, gone).expires_at == past
    assert "512" not in remote.recall(bank, "hotel room number").context
    assert "512" in remote.recall(bank, "hotel room number", now=past - timedelta(hours=1)).context
    assert remote.update(bank, gone, expires_at=None).expires_at is None  # null travels: cleared
    assert remote.update(bank, gone, tags=["trip"]).expires_at is None
    assert remote.update(bank, gone, expires_at=past).expires_at == past
    assert remote.update(bank, gone, tags=["hotel"]).expires_at == past  # absent: kept
    assert remote.delete_bank(bank) == 2


# -- on the command line ----------------------------------------------------------------------------------------


def test_expiry_and_instructions_on_the_command_line(
    memwrap_home: Path, bank: str, capsys: pytest.CaptureFixture[str]
) -> None:
    home = ["--home", str(memwrap_home), "--json"]

    def run(*args: str) -> Any:
        assert main([*args, *home]) == 0
        return json.loads(capsys.readouterr().out)

    [gone] = run("retain", bank, "The locker combination is 3-9-27.", "--expires-at", "2026-01-01T00:00:00Z")
    [kept] = run("retain", bank, "The user swims on Thursdays.")
    assert [m["id"] for m in run("list", bank)] == [kept]
    listed = run("list", bank, "--include-expired")
    assert [(m["id"], m["expires_at"]) for m in listed] == [(gone, "2026-01-01T00:00:00Z"), (kept, None)]
    assert run("update", bank, gone, "--expires-at", "none")["expires_at"] is None  # "none" clears it
    assert run("update", bank, gone, "--tags", "gym")["expires_at"] is None  # not given: unchanged
    assert run("configure-bank", bank, "--extraction-instructions", "Ignore small talk.") == {
        "extraction_instructions": "Ignore small talk."
    }
    assert run("configure-bank", bank, "--extraction-instructions", "none") == {}
