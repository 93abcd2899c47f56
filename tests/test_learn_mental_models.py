"""Mental models without an LLM: content is the recall of their question; one query to read; stale and refreshed
when their scope changes; history; a schedule; Markdown export."""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memwrap import Memory
from memwrap.cli import main
from memwrap.engine.learn import reconcile
from memwrap.errors import InvalidInputError, MemoryNotFoundError

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _engine(mem: Memory) -> Any:
    return mem._run(mem.aio._get_engine())


def _wait(mem: Memory, bank: str, name: str, *, version: int, status: str = "fresh") -> Any:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        model = mem.get_mental_model(bank, name)
        if model.status == status and model.version >= version:
            return model
        time.sleep(0.05)
    raise AssertionError(f"{name} never reached {status} v{version}: {mem.get_mental_model(bank, name)}")


class CountingPool:
    """The engine's pool, counting every statement sent through it (asyncpg's query logger, per connection)."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self.statements: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)

    def _log(self, record: Any) -> None:
        self.statements.append(record.query)

    def acquire(self) -> Any:
        outer = self

        class _Acquire:
            async def __aenter__(self) -> Any:
                self._cm = outer._pool.acquire()
                self.conn = await self._cm.__aenter__()
                self.conn.add_query_logger(outer._log)
                return self.conn

            async def __aexit__(self, *exc: Any) -> None:
                self.conn.remove_query_logger(outer._log)
                await self._cm.__aexit__(*exc)

        return _Acquire()

    async def _on_connection(self, method: str, *args: Any, **kwargs: Any) -> Any:
        async with self.acquire() as conn:
            return await getattr(conn, method)(*args, **kwargs)

    async def fetch(self, *args: Any, **kwargs: Any) -> Any:
        return await self._on_connection("fetch", *args, **kwargs)

    async def fetchrow(self, *args: Any, **kwargs: Any) -> Any:
        return await self._on_connection("fetchrow", *args, **kwargs)

    async def fetchval(self, *args: Any, **kwargs: Any) -> Any:
        return await self._on_connection("fetchval", *args, **kwargs)

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        return await self._on_connection("execute", *args, **kwargs)


def test_a_mental_model_answers_its_question_from_observations_and_facts(mem: Memory, bank: str) -> None:
    for i, text in enumerate(["I'm allergic to peanuts.", "I am allergic to peanuts!", "I'm allergic to peanuts!!"]):
        mem.retain(bank, text, timestamp=T0, document_id=f"chat-{i}")
    mem.retain(bank, "I don't eat meat, I'm vegetarian.", timestamp=T0, document_id="chat-9")
    mem.consolidate(bank)
    created = mem.create_mental_model(bank, "diet", "What can't the user eat?", max_answer_tokens=120)
    assert created.status == "pending" and created.version == 0 and created.content == ""

    model = _wait(mem, bank, "diet", version=1)
    [observation] = mem.observations(bank)
    assert model.generator == "recall" and model.refreshed_at is not None
    assert "(observation) I'm allergic to peanuts." in model.content and "vegetarian" in model.content
    assert observation.id in model.source_ids
    assert model.content.count("peanuts") == 1  # the observation stood in for its three facts
    assert [v.version for v in mem.mental_model_history(bank, "diet")] == [1]
    assert [m.name for m in mem.mental_models(bank)] == ["diet"]

    # Consolidation touching its scope makes it stale; the worker refreshes it into a new version.
    mem.retain(bank, "I also can't have shellfish, I'm allergic.", timestamp=T0, document_id="chat-10")
    model = _wait(mem, bank, "diet", version=2)
    assert "shellfish" in model.content
    assert [v.version for v in mem.mental_model_history(bank, "diet")] == [1, 2]

    # Refreshing without any change keeps the version.
    assert mem.refresh_mental_model(bank, "diet").version == 2


def test_reading_a_mental_model_is_one_sql_query(mem: Memory, bank: str) -> None:
    mem.retain(bank, "I live in Porto.", document_id="x")
    mem.create_mental_model(bank, "home", "Where does the user live?")
    _wait(mem, bank, "home", version=1)
    engine = _engine(mem)
    real = engine.learning.parts  # the parts Learning reads through (engine/parts.py): frozen, so swapped whole
    counting = CountingPool(real.pool)
    engine.learning.parts = dataclasses.replace(real, pool=counting)
    try:
        model = mem.get_mental_model(bank, "home")
    finally:
        engine.learning.parts = real
    assert "Porto" in model.content
    assert len(counting.statements) == 1, counting.statements
    assert counting.statements[0].strip().startswith("SELECT") and "FROM mental_models" in counting.statements[0]


def test_a_tagged_model_only_goes_stale_for_its_tags(mem: Memory, bank: str) -> None:
    mem.retain(bank, "The quarterly report is due Friday.", tags=["work"], document_id="w1")
    mem.create_mental_model(bank, "work", "What is due at work?", tags=["work"])
    mem.create_mental_model(bank, "all", "What is going on?")
    work = _wait(mem, bank, "work", version=1)
    everything = _wait(mem, bank, "all", version=1)
    assert mem.wait_for_jobs(bank, timeout=20)
    mem.retain(bank, "My cat is called Miso.", tags=["home"], document_id="h1")
    mem.consolidate(bank)
    assert mem.wait_for_jobs(bank, timeout=20)
    # The untagged model covers the whole bank: it went stale and was refreshed; the work model was left alone.
    assert mem.get_mental_model(bank, "all").refreshed_at > everything.refreshed_at
    assert mem.get_mental_model(bank, "work").refreshed_at == work.refreshed_at
    assert [j.kind for j in mem.jobs(bank, kind="refresh_mental_model")].count("refresh_mental_model") == 3


def test_a_schedule_refreshes_a_model_even_without_changes(mem: Memory, bank: str) -> None:
    mem.retain(bank, "I run every morning.", document_id="r")
    mem.create_mental_model(bank, "habits", "What are the user's habits?", refresh_every=1)
    first = _wait(mem, bank, "habits", version=1)
    engine = _engine(mem)
    deadline = time.monotonic() + 20
    # Reconciliation (any worker's: they take turns) queues the refresh once the period has passed.
    while mem.get_mental_model(bank, "habits").refreshed_at == first.refreshed_at and time.monotonic() < deadline:
        mem._run(reconcile.run(engine.parts))
        time.sleep(0.1)
    again = mem.get_mental_model(bank, "habits")
    assert again.refreshed_at > first.refreshed_at and again.version == 1  # same content, no new version
    assert any(j.kind == "refresh_mental_model" and j.status == "done" for j in mem.jobs(bank)[1:])


def test_bad_names_and_duplicates_are_refused(mem: Memory, bank: str) -> None:
    mem.create_mental_model(bank, "one", "What?")
    with pytest.raises(InvalidInputError, match="already has a mental model"):
        mem.create_mental_model(bank, "one", "Again?")
    with pytest.raises(InvalidInputError):
        mem.create_mental_model(bank, "", "What?")
    with pytest.raises(InvalidInputError):
        mem.create_mental_model(bank, "two", "What?", refresh_every=-5)
    with pytest.raises(MemoryNotFoundError):
        mem.get_mental_model(bank, "nope")
    mem.delete_mental_model(bank, "one")
    with pytest.raises(MemoryNotFoundError):
        mem.delete_mental_model(bank, "one")


def test_export_writes_markdown(
    mem: Memory, bank: str, memwrap_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(2):
        mem.retain(bank, "I prefer window seats on flights.", timestamp=T0, document_id=f"f{i}")
    mem.consolidate(bank)
    # A name that is no file name ("/" is refused at creation: the name is a segment of the model's URL).
    mem.create_mental_model(bank, "travel: prefs", "How does the user like to travel?")
    _wait(mem, bank, "travel: prefs", version=1)

    paths = mem.export(tmp_path / "api", bank_id=bank)
    assert sorted(p.name for p in paths) == ["observations.md", "travel-prefs.md"]
    page = (tmp_path / "api" / bank / "mental-models" / "travel-prefs.md").read_text()
    assert page.startswith('---\nname: "travel: prefs"\n') and 'question: "How does the user like to travel?"' in page
    assert "version: 1" in page and "(observation) I prefer window seats on flights." in page
    digest = (tmp_path / "api" / bank / "observations.md").read_text()
    assert "I prefer window seats on flights. — 2 source(s)" in digest

    assert main(["export", str(tmp_path / "cli"), "--bank", bank, "--home", str(memwrap_home)]) == 0
    assert "Wrote 2 file(s)" in capsys.readouterr().out
    assert (tmp_path / "cli" / bank / "mental-models" / "travel-prefs.md").read_text() == page
