"""Webhooks: subscriptions, the events where they happen, signed delivery through the job queue with retries and a
delivery log, and the fault test: a local receiver that is down, then slow, then up gets each event once.

A database of its own (no other module's inline worker may deliver these jobs) and no inline worker: the tests
drive a worker of the 'webhook' kind step by step. Small retry waits come from the settings; nothing here
compares a duration (a loop's deadline only turns a hang into a failure).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from database import Database
from extract_support import fact, make_engine, reply
from fakes.llm_server import FakeLLMServer
from webhook_receiver import Receiver, drive, free_port, signature_ok

from memwrap import Memory
from memwrap.config import load_settings
from memwrap.engine.jobs.worker import Worker
from memwrap.engine.learn import reconcile
from memwrap.engine.learn.kinds import BUILTIN_KINDS
from memwrap.engine.webhooks.signing import verify
from memwrap.engine.webhooks.urls import BlockedAddressError, check_public
from memwrap.errors import InvalidInputError, WebhookNotFoundError
from memwrap.webhook_models import WebhookDelivery

# Banks are served in turn (the queue's round-robin): with retries due at once, the other bank's one delivery
# is tried as often as all five of the first bank's together, so it needs room for ~16 attempts here.
MAX_ATTEMPTS = 24
TIMEOUT = 3.0  # the client's timeout per attempt: the slow receiver answers only after the test releases it;
# generous, so that on a loaded machine no quick answer (410, 503, 200) is taken for a timeout


# --- fixtures ------------------------------------------------------------------------------------------------------


# Retries within milliseconds, attempts cut short after TIMEOUT.
QUICK = {
    "webhook_max_attempts": MAX_ATTEMPTS,
    "webhook_backoff_seconds": 0.01,
    "webhook_backoff_cap_seconds": 0.05,
    "webhook_timeout_seconds": TIMEOUT,
}


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="memwrap-webhooks-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def mem(home: Path) -> Iterator[Memory]:
    with Memory(settings=load_settings(home=home, worker="off", consolidation_delay_seconds=0.0, **QUICK)) as memory:
        yield memory


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver(free_port())
    yield r
    r.stop()


def deliveries_of(mem: Memory, bank: str) -> list[WebhookDelivery]:
    return mem.webhook_deliveries(bank, limit=500)


async def all_deliveries(mem: Memory, banks: str | list[str], check: Callable[[WebhookDelivery], bool]) -> bool:
    """Every delivery of the bank(s) passes `check` (and there is one)."""
    found = [
        d
        for b in ([banks] if isinstance(banks, str) else banks)
        for d in await mem.aio.webhook_deliveries(b, limit=500)
    ]
    return bool(found) and all(check(d) for d in found)


# --- the fault test ------------------------------------------------------------------------------------------------


def test_down_slow_then_up_delivers_each_event_once(mem: Memory, bank: str, receiver: Receiver) -> None:
    other = f"{bank}-other"
    hook = mem.create_webhook(bank, f"{receiver.url}/hook", description="fault test")
    other_hook = mem.create_webhook(other, f"{receiver.url}/other")
    assert hook.secret and other_hook.secret and hook.secret != other_hook.secret
    receiver.secrets.update({"/hook": hook.secret, "/other": other_hook.secret})

    # Five events while the receiver is down (nothing listens on its port); one in another bank.
    first = mem.retain(bank, "Alice moved to Lisbon in 2021.")
    second = mem.retain(bank, "Alice's sister Maya visits every June.")
    mem.update(bank, first[0], text="Alice moved to Lisbon in 2022.")
    mem.invalidate(bank, second[0], reason="Maya stopped visiting")
    mem.delete(bank, second[0])
    mem.retain(other, "Bob only drinks green tea.")
    queued = deliveries_of(mem, bank)
    assert [d.event for d in reversed(queued)] == ["retained", "retained", "updated", "invalidated", "deleted"]
    assert all(d.status == "pending" and d.attempts == 0 for d in queued)

    drive(mem, lambda: all_deliveries(mem, [bank, other], lambda d: d.attempts >= 2), "two refused attempts each")
    for d in deliveries_of(mem, bank) + deliveries_of(mem, other):
        assert all(a.status_code is None and a.error == "connect_error" for a in d.log), d.log

    receiver.mode = "slow"
    receiver.start()
    drive(
        mem,
        lambda: all_deliveries(mem, [bank, other], lambda d: any(a.error == "timeout" for a in d.log)),
        "a timed-out attempt each",
    )
    receiver.mode = "up"
    receiver.release.set()
    drive(mem, lambda: all_deliveries(mem, bank, lambda d: d.status == "delivered"), "every delivery delivered")
    drive(mem, lambda: all_deliveries(mem, other, lambda d: d.status == "delivered"), "the other bank's delivery")

    delivered = deliveries_of(mem, bank) + deliveries_of(mem, other)
    event_ids = {str(d.event_id) for d in delivered}
    # Each event reached the receiver's accepted set once, whatever the retries.
    assert len(receiver.accepted_order) == len(set(receiver.accepted_order)) == len(event_ids) == 6
    assert set(receiver.accepted) == event_ids
    assert receiver.bad_signatures == []
    assert all(signature_ok(receiver.secrets[r.path], r.headers, r.body) for r in receiver.raw)
    sequence = []
    for d in delivered:
        codes = [a.status_code for a in d.log]
        errors = [a.error or "" for a in d.log]
        # Refused while down, timed out while slow, then 200; each attempt logged with its time and duration.
        assert codes[:2] == [None, None] and errors[0] == "connect_error"
        assert "timeout" in errors and codes[-1] == 200 and d.last_status == 200
        assert [a.attempt for a in d.log] == list(range(1, d.attempts + 1)) and d.attempts <= MAX_ATTEMPTS
        assert all(a.duration_ms is not None and a.duration_ms >= 0 and a.started_at for a in d.log)
        # The receiver saw every attempt that reached it, all under one idempotency key.
        reached = [r for r in receiver.raw if r.event_id == str(d.event_id)]
        assert len(reached) == sum(1 for c, e in zip(codes, errors, strict=True) if c is not None or e == "timeout")
        assert len(reached) >= 2 and len({r.body for r in reached}) == 1  # the same bytes on every attempt
        assert len({r.headers["memwrap-timestamp"] + r.headers["memwrap-signature"] for r in reached}) >= 1
        sequence.append(
            f"{d.event}: "
            + ", ".join(
                str(c) if c else ("refused" if e == "connect_error" else "timeout")
                for c, e in zip(codes, errors, strict=True)
            )
        )
    print("\nfault test sequence (per delivery):\n  " + "\n  ".join(sequence))
    print(f"receiver: {len(receiver.raw)} requests, {len(receiver.accepted)} accepted")

    # Each bank's events went to its own subscription only.
    assert {r.payload["bank_id"] for r in receiver.raw if r.path == "/hook"} == {bank}
    assert {r.payload["bank_id"] for r in receiver.raw if r.path == "/other"} == {other}

    # The payloads: type, bank, memory ids and their text (include_text is the default).
    by_type: dict[str, list[dict[str, Any]]] = {}
    for event_id in receiver.accepted_order:
        got = receiver.accepted[event_id]
        if got.path == "/hook":
            payload = got.payload
            assert payload["id"] == event_id == got.headers["memwrap-event-id"]
            assert got.headers["memwrap-event"] == payload["type"]
            by_type.setdefault(payload["type"], []).append(payload["data"])
    assert sorted(tuple(d["memory_ids"]) for d in by_type["retained"]) == sorted(
        [tuple(map(str, first)), tuple(map(str, second))]
    )
    assert {m["text"] for d in by_type["retained"] for m in d["memories"]} == {
        "Alice moved to Lisbon in 2021.",
        "Alice's sister Maya visits every June.",
    }
    assert by_type["updated"][0]["changed"] == ["text"]
    assert by_type["updated"][0]["memories"][0]["text"] == "Alice moved to Lisbon in 2022."
    assert by_type["invalidated"][0]["reason"] == "Maya stopped visiting"
    assert by_type["deleted"][0]["memories"] == [
        {"id": str(second[0]), "text": "Alice's sister Maya visits every June."}
    ]


# --- with an LLM: the facts are announced, not the raw turn they replace -------------------------------------------


async def test_with_an_llm_the_facts_are_announced(
    mem: Memory, home: Path, fake: FakeLLMServer, bank: str, receiver: Receiver
) -> None:
    del mem  # the module's database, started by it
    engine = await make_engine(home, fake, **QUICK)
    try:
        receiver.start()
        hook = await engine.create_webhook(bank, f"{receiver.url}/llm", events=["retained"])
        receiver.secrets["/llm"] = hook.secret or ""
        facts = ["Alice is allergic to peanuts.", "Alice lives in Lisbon."]
        fake.script([reply([fact(facts[0], "world", [1], ["Alice"]), fact(facts[1], "world", [1], ["Alice"])])])
        ids = await engine.retain(bank, "user: I'm Alice, allergic to peanuts, and I live in Lisbon.")
        assert len(ids) == 2 and len(fake.requests) == 1  # the facts' ids: extracted within the deadline
        worker = Worker(engine.parts, registry=BUILTIN_KINDS, kinds=["webhook"], worker_id="tests-llm")
        while await worker.run_one():
            pass
        [delivery] = await engine.webhook_deliveries(bank)
        assert delivery.status == "delivered" and delivery.event == "retained"
        assert delivery.payload["data"]["memory_ids"] == [str(i) for i in ids]
        assert [m["text"] for m in delivery.payload["data"]["memories"]] == facts
        assert [r.payload["type"] for r in receiver.raw] == ["retained"]  # the raw turn was never announced
    finally:
        await engine.close()


# --- what is not retried, and giving up ----------------------------------------------------------------------------


def test_a_4xx_is_final_and_5xx_is_retried_until_the_last_attempt(mem: Memory, bank: str, receiver: Receiver) -> None:
    receiver.mode = "410"
    receiver.start()
    gone = mem.create_webhook(bank, f"{receiver.url}/gone", events=["retained"])
    receiver.secrets["/gone"] = gone.secret or ""
    mem.retain(bank, "A note nobody wants.")
    drive(mem, lambda: all_deliveries(mem, bank, lambda d: d.status != "pending"), "the 410 to end it")
    [final] = deliveries_of(mem, bank)
    assert final.status == "failed" and [a.status_code for a in final.log] == [410]

    mem.update_webhook(bank, gone.id, url=f"{receiver.url}/busy")
    receiver.secrets["/busy"] = gone.secret or ""
    receiver.mode = "503"
    mem.retain(bank, "A note the receiver is too busy for.")
    drive(mem, lambda: all_deliveries(mem, bank, lambda d: d.status != "pending"), "the retries to run out")
    busy = deliveries_of(mem, bank)[0]
    assert busy.status == "failed" and [a.status_code for a in busy.log] == [503] * MAX_ATTEMPTS
    assert busy.finished_at is not None
    assert [d.status for d in mem.webhook_deliveries(bank, status="failed")] == ["failed", "failed"]
    assert receiver.accepted == {}  # the receiver refused all of them (and the signatures were good)
    assert receiver.bad_signatures == []


def test_disabled_subscriptions_skip_and_text_can_be_left_out(mem: Memory, bank: str, receiver: Receiver) -> None:
    receiver.start()
    hook = mem.create_webhook(bank, f"{receiver.url}/ids", events=["retained", "deleted"], include_text=False)
    receiver.secrets["/ids"] = hook.secret or ""
    ids = mem.retain(bank, "Carol's password hint is her cat's name.")
    mem.update(bank, ids[0], text="Carol's hint is her cat.")  # not an event this subscription asked for
    mem.update_webhook(bank, hook.id, enabled=False)
    mem.delete(bank, ids[0])  # a disabled subscription gets no delivery at all
    mem.update_webhook(bank, hook.id, enabled=True)
    drive(mem, lambda: all_deliveries(mem, bank, lambda d: d.status != "pending"), "the delivery")
    [only] = deliveries_of(mem, bank)
    assert only.event == "retained" and only.status == "delivered"
    assert only.payload["data"] == {"memory_ids": [str(ids[0])]}  # ids, no text
    assert "Carol" not in receiver.raw[0].body.decode()

    # Disabled after the event was queued: its delivery is skipped, not sent.
    mem.retain(bank, "Dave is learning Portuguese.")
    mem.update_webhook(bank, hook.id, enabled=False)
    drive(mem, lambda: all_deliveries(mem, bank, lambda d: d.status != "pending"), "the skip")
    assert deliveries_of(mem, bank)[0].status == "skipped" and deliveries_of(mem, bank)[0].log == []
    assert len(receiver.raw) == 1


# --- observations and mental models ------------------------------------------------------------------------------


def test_observation_and_mental_model_events(mem: Memory, bank: str, receiver: Receiver) -> None:
    receiver.start()
    hook = mem.create_webhook(bank, f"{receiver.url}/learn", events=["observation.changed", "mental_model.refreshed"])
    receiver.secrets["/learn"] = hook.secret or ""
    for document in ("a", "b", "c"):
        mem.retain(bank, "Alice is vegetarian and avoids fish.", document_id=f"diet-{document}")
    report = mem.consolidate(bank)
    assert report.created >= 1
    mem.create_mental_model(bank, "diet", "What does Alice eat?")
    mem.refresh_mental_model(bank, "diet")
    drive(mem, lambda: all_deliveries(mem, bank, lambda d: d.status == "delivered"), "the learning events")
    events = {d.event for d in deliveries_of(mem, bank)}
    assert events == {"observation.changed", "mental_model.refreshed"}
    observation = next(d.payload["data"] for d in deliveries_of(mem, bank) if d.event == "observation.changed")
    assert observation["action"] == "created" and "vegetarian" in observation["memories"][0]["text"]
    model = next(d.payload["data"] for d in deliveries_of(mem, bank) if d.event == "mental_model.refreshed")
    assert model["name"] == "diet" and model["version"] >= 1 and "vegetarian" in model["content"]


# --- the subscriptions themselves ----------------------------------------------------------------------------------


def test_subscriptions_secret_shown_once_and_checked_input(mem: Memory, bank: str) -> None:
    created = mem.create_webhook(bank, "https://example.com/hooks/memwrap", events="retained", description="crm")
    assert created.secret and created.secret.startswith("whsec_") and len(created.secret) > 40
    assert created.events == ["retained"] and created.include_text and created.enabled
    [listed] = mem.webhooks(bank)
    assert listed.id == created.id and listed.secret is None and listed.description == "crm"
    assert mem.webhooks(f"{bank}-none") == []

    for url in (
        "ftp://example.com/x",
        "example.com/hook",
        "http://",
        "http://user:pw@example.com/",
        "http://a b/",
        "http://[::1",
        "http://a:0/",
    ):
        with pytest.raises(InvalidInputError):
            mem.create_webhook(bank, url)
    with pytest.raises(InvalidInputError, match="unknown webhook event"):
        mem.create_webhook(bank, "https://example.com/x", events=["retained", "forgotten"])
    with pytest.raises(InvalidInputError):
        mem.webhook_deliveries(bank, status="lost")  # type: ignore[arg-type]

    changed = mem.update_webhook(bank, created.id, events=["deleted", "updated"], description="")
    assert changed.events == ["updated", "deleted"] and changed.description is None and changed.secret is None
    mem.delete_webhook(bank, created.id)
    assert mem.webhooks(bank) == []
    for call in (
        lambda: mem.delete_webhook(bank, created.id),
        lambda: mem.update_webhook(bank, created.id, enabled=False),
        lambda: mem.webhook_deliveries(bank, webhook_id=created.id),
        lambda: mem.delete_webhook(bank, "not-an-id"),
    ):
        with pytest.raises(WebhookNotFoundError):
            call()

    # A subscription, its deliveries and their jobs go with their bank.
    mem.create_webhook(bank, "https://example.com/hooks/memwrap")
    mem.retain(bank, "Erin's last note.")
    assert len(mem.webhook_deliveries(bank)) == 1
    mem.delete_bank(bank)
    assert mem.webhooks(bank) == [] and mem.webhook_deliveries(bank) == []


def test_a_bank_without_subscriptions_queues_nothing(mem: Memory, bank: str) -> None:
    mem.retain(bank, "Nobody listens to this bank.")
    assert [j for j in mem.jobs(bank) if j.kind == "webhook"] == []
    assert mem.webhook_deliveries(bank) == []


def test_private_addresses_can_be_refused() -> None:
    async def refused(url: str) -> bool:
        try:
            await check_public(url)
        except BlockedAddressError:
            return True
        return False

    async def run() -> dict[str, bool]:
        urls = [
            "http://127.0.0.1:8080/x",
            "http://[::1]/x",
            "http://10.1.2.3/x",
            "http://192.168.0.10/x",
            "http://169.254.169.254/latest/meta-data",
            "http://[::ffff:127.0.0.1]/x",
            "http://localhost/x",
            "http://[fe80::1%25eth0]/x",
            "https://93.184.215.14/x",
        ]
        return {u: await refused(u) for u in urls}

    assert asyncio.run(run()) == {
        "http://127.0.0.1:8080/x": True,
        "http://[::1]/x": True,
        "http://10.1.2.3/x": True,
        "http://192.168.0.10/x": True,
        "http://169.254.169.254/latest/meta-data": True,
        "http://[::ffff:127.0.0.1]/x": True,
        "http://localhost/x": True,
        "http://[fe80::1%25eth0]/x": True,
        "https://93.184.215.14/x": False,
    }


def test_the_library_verifier_and_the_documented_recipe_agree() -> None:
    body = json.dumps({"id": str(uuid.uuid4()), "type": "retained"}).encode()
    secret, now = "whsec_test", int(time.time())
    mac = hmac.new(secret.encode(), f"{now}.".encode() + body, hashlib.sha256).hexdigest()
    headers = {"memwrap-timestamp": str(now), "memwrap-signature": f"v1={mac}"}
    assert signature_ok(secret, headers, body) and verify(secret, body, str(now), f"v1={mac}")
    assert not verify("whsec_other", body, str(now), f"v1={mac}")
    assert not verify(secret, body + b" ", str(now), f"v1={mac}")
    assert not verify(secret, body, str(now - 3600), f"v1={mac}")  # too old: a replay


def test_finished_deliveries_are_pruned_after_a_month(mem: Memory, bank: str, receiver: Receiver) -> None:
    receiver.start()
    hook = mem.create_webhook(bank, f"{receiver.url}/prune", events=["retained"])
    receiver.secrets["/prune"] = hook.secret or ""
    mem.retain(bank, "An old note.")
    drive(mem, lambda: all_deliveries(mem, bank, lambda d: d.status == "delivered"), "the delivery")
    mem.retain(bank, "A newer note.")  # pending: never pruned
    [newer, older] = deliveries_of(mem, bank)
    db = Database.of(mem)
    db.blocking.execute(
        "UPDATE webhook_deliveries SET finished_at = now() - interval '31 days' WHERE id = $1", older.id
    )
    assert mem._run(reconcile.run(mem._run(mem.aio._get_engine()).parts, deep=True)) >= 0
    assert [d.id for d in deliveries_of(mem, bank)] == [newer.id]


def test_an_expiry_change_alone_is_an_update_and_the_same_expiry_is_none(mem: Memory, bank: str) -> None:
    mem.create_webhook(bank, "http://127.0.0.1:9/never", events=["updated"])
    [memory] = mem.retain(bank, "The hotel room number is 512.")
    when = datetime(2027, 1, 1, tzinfo=UTC)
    mem.update(bank, memory, expires_at=when)
    mem.update(bank, memory, expires_at=when)  # the same again: nothing changed, nothing said
    [delivery] = deliveries_of(mem, bank)
    assert delivery.event == "updated" and delivery.payload["data"]["changed"] == ["expires_at"]
