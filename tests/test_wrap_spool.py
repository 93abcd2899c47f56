"""The retain spool on its own: order, exactly-once delivery, refused and poisonous rows, hand-over of rows.

Delivery to the real engine where the engine's answer matters (refusing bad input); a plain recording
callable where the test is about the spool's bookkeeping (order across failures, burying, hand-over).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from conftest_wrappers import *  # noqa: F403 - fixtures

from memwrap.wrappers.backend import Backend
from memwrap.wrappers.spool import Retainer


class Recorder:
    """Delivers into a list; fails (as an unavailable engine would) while `down` is set."""

    def __init__(self, *, down: bool = False, poison: str | None = None) -> None:
        self.items: list[tuple[str, str]] = []
        self.calls = 0
        self.down = threading.Event()
        if down:
            self.down.set()
        self.poison = poison

    def __call__(self, bank_id: str, items: list[dict[str, Any]]) -> None:
        self.calls += 1
        if self.down.is_set():
            raise ConnectionError("engine down")
        if self.poison and any(self.poison in i["content"] for i in items):
            raise ValueError("this row breaks the engine")
        self.items.extend((bank_id, i["content"]) for i in items)


def test_order_and_exactly_once_across_an_outage(tmp_path: Path) -> None:
    deliver = Recorder(down=True)
    retainer = Retainer(tmp_path / "spool.sqlite3", deliver, batch_size=7, max_backoff=0.05)
    try:
        for i in range(100):
            retainer.put("a" if i % 3 else "b", {"content": f"item {i}"})
        assert retainer.wait_spooled(10)
        assert not retainer.flush(0.3) and deliver.calls >= 1 and not deliver.items
        deliver.down.clear()
        assert retainer.flush(10)
    finally:
        retainer.close()
    assert [c for _, c in deliver.items] == [f"item {i}" for i in range(100)]
    assert [b for b, _ in deliver.items] == ["a" if i % 3 else "b" for i in range(100)]
    assert retainer.stats.delivered == 100 and retainer.pending == 0
    assert _rows(tmp_path / "spool.sqlite3") == 0


def test_the_engine_refuses_one_item_and_the_rest_goes_through(warm_memory: Any, bank: str, tmp_path: Path) -> None:
    backend = Backend(warm_memory)
    retainer = Retainer(tmp_path / "spool.sqlite3", backend.deliver)
    try:
        retainer.put(bank, {"content": "Ana keeps bees."})
        retainer.put(bank, {"content": "bad \x00 byte"})  # the engine refuses NUL bytes (InvalidContentError)
        retainer.put(bank, {"content": "Ana sells honey on Saturdays."})
        assert retainer.flush(30)
    finally:
        retainer.close()
    assert retainer.stats.delivered == 2 and retainer.stats.rejected == 1
    assert sorted(r.text for r in warm_memory.list(bank)) == ["Ana keeps bees.", "Ana sells honey on Saturdays."]


def test_a_poisonous_row_is_buried_not_lost_and_does_not_block(tmp_path: Path) -> None:
    deliver = Recorder(poison="POISON")
    retainer = Retainer(tmp_path / "spool.sqlite3", deliver, batch_size=4, max_attempts=3, max_backoff=0.02)
    try:
        for i in range(6):
            retainer.put("a", {"content": "POISON" if i == 2 else f"ok {i}"})
        assert retainer.flush(10)
    finally:
        retainer.close()
    assert [c for _, c in deliver.items] == ["ok 0", "ok 1", "ok 3", "ok 4", "ok 5"]
    assert retainer.stats.buried == 1
    with sqlite3.connect(tmp_path / "spool.sqlite3") as db:
        assert [r[0] for r in db.execute("SELECT item FROM dead")] == ['{"content": "POISON"}']


def test_rows_left_by_a_closed_retainer_are_replayed_by_the_next(tmp_path: Path) -> None:
    path = tmp_path / "spool.sqlite3"
    first = Retainer(path, Recorder(down=True), max_backoff=0.05)
    for i in range(10):
        first.put("a", {"content": f"left {i}"})
    assert first.wait_spooled(10)
    assert not first.close(timeout=0.2)  # could not deliver: rows stay on disk, released
    assert _rows(path) == 10

    deliver = Recorder()
    second = Retainer(path, deliver)
    try:
        second.put("a", {"content": "new"})
        assert second.flush(10)
    finally:
        second.close()
    assert [c for _, c in deliver.items] == [f"left {i}" for i in range(10)] + ["new"]
    assert second.stats.replayed == 10 and second.stats.delivered == 11


def _rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT count(*) FROM spool").fetchone()[0])


def test_an_unwritable_spool_still_delivers(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    deliver = Recorder()
    retainer = Retainer(blocked / "spool.sqlite3", deliver)
    try:
        retainer.put("a", {"content": "kept anyway"})
        assert retainer.flush(10)
    finally:
        retainer.close()
    assert deliver.items == [("a", "kept anyway")]


def test_an_ended_async_loop_is_said_only_if_it_lasts(tmp_path: Path) -> None:
    """A short async script's `asyncio.run` returns a moment before its exit: the deliverer's first failure then
    is the loop having ended, which is not worth a line on stderr. If it lasts (the first retry fails too), it is
    said: an app whose memory's loop is gone for good must hear it."""
    import logging

    from memwrap.wrappers.spool_store import HomeLoopEnded

    retried = threading.Event()
    calls: list[int] = []

    def deliver(bank_id: str, items: list[dict[str, Any]]) -> None:
        calls.append(len(items))
        if len(calls) >= 3:
            retried.set()
        raise HomeLoopEnded("the async memory's event loop is not running; retains wait in the spool")

    retainer = Retainer(tmp_path / "spool.sqlite3", deliver, max_backoff=0.05)
    said_at: list[tuple[int, str]] = []  # the failure count when each line was written, and the line

    class Witness(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "delivery failed" in record.getMessage():
                said_at.append((retainer.stats.failures, record.getMessage()))

    witness = Witness(logging.WARNING)
    logging.getLogger("memwrap").addHandler(witness)
    try:
        retainer.put("a", {"content": "said at the end of a script"})
        assert retainer.wait_spooled(10)
        assert retried.wait(10)
    finally:
        logging.getLogger("memwrap").removeHandler(witness)
        retainer.close(0.1)
    assert [failures for failures, _ in said_at] == [2], said_at
    assert "event loop is not running" in said_at[0][1]
