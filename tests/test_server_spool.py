"""The server's spool over HTTP (memwrap_server/routes/spool.py): dead rows listed with their error, replayed into
the bank or purged, and a key limited to some banks sees and touches only those banks' rows.

Dead rows are written into the sidecar's spool file the way the spool itself buries a row (its `dead` table):
a turn whose delivery failed alone too often. Written by this process while the server has the file open, as
`memwrap spool` does: the server must see them (it did not while it opened and closed the file by hand, which
drops SQLite's POSIX locks — memwrap/private_files.py).
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from pathlib import Path

import httpx
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin; ALICE_KEY, wait_until

from memwrap.wrappers.spool_store import SPOOL_FILE


def _bury(home: Path, bank: str, text: str) -> int:
    with sqlite3.connect(home / "spool" / SPOOL_FILE) as db:
        row_id = 10_000_000 + uuid.uuid4().int % 1_000_000  # far past the ids the running proxy hands out
        db.execute(
            "INSERT INTO dead (id, bank_id, item, created, error) VALUES (?, ?, ?, ?, ?)",
            (row_id, bank, json.dumps({"content": text}), time.time(), "StoreError: the test buried it"),
        )
    return row_id


def _texts(client: httpx.Client, bank: str) -> list[str]:
    found = client.get(f"/v1/banks/{bank}/memories", params={"limit": 100})
    return [m["text"] for m in found.json()["items"]] if found.status_code == 200 else []


def test_dead_rows_are_listed_replayed_and_purged(
    sidecar: ServerProcess, admin: httpx.Client, memwrap_home: Path
) -> None:
    bank = f"spool-{uuid.uuid4().hex[:8]}"
    kept = _bury(memwrap_home, bank, "The ferry to the island leaves at seven.")
    dropped = _bury(memwrap_home, bank, "A turn nobody wants back.")

    summary = admin.get("/v1/spool").json()
    assert summary["dead_by_bank"][bank] == 2 and summary["dead"] >= 2
    listed = admin.get("/v1/spool/rows", params={"dead": "true", "bank_id": bank}).json()
    assert {r["id"] for r in listed} == {kept, dropped}
    assert {r["error"] for r in listed} == {"StoreError: the test buried it"}

    assert admin.post("/v1/spool/dead/replay", json={"ids": [kept]}).json() == {"count": 1}
    wait_until(lambda: "The ferry to the island leaves at seven." in _texts(admin, bank), timeout=60)
    assert admin.post("/v1/spool/dead/purge", json={"ids": [dropped]}).json() == {"count": 1}
    assert admin.get("/v1/spool/rows", params={"dead": "true", "bank_id": bank}).json() == []
    assert "A turn nobody wants back." not in _texts(admin, bank)
    admin.delete(f"/v1/banks/{bank}")


def test_a_restricted_key_sees_and_touches_only_its_banks(
    sidecar: ServerProcess, admin: httpx.Client, memwrap_home: Path
) -> None:
    other = f"spool-bob-{uuid.uuid4().hex[:8]}"
    mine = f"alice-spool-{uuid.uuid4().hex[:8]}"
    theirs, own = _bury(memwrap_home, other, "Bob's turn."), _bury(memwrap_home, mine, "Alice's turn.")
    with httpx.Client(base_url=sidecar.url, headers={"Authorization": f"Bearer {ALICE_KEY}"}, timeout=30) as alice:
        assert other not in alice.get("/v1/spool").json()["dead_by_bank"]
        assert mine in alice.get("/v1/spool").json()["dead_by_bank"]
        ids = {r["id"] for r in alice.get("/v1/spool/rows", params={"dead": "true"}).json()}
        assert own in ids and theirs not in ids
        assert alice.get("/v1/spool/rows", params={"dead": "true", "bank_id": other}).status_code == 403
        # Asking for another bank's row by id does nothing to it.
        assert alice.post("/v1/spool/dead/purge", json={"ids": [theirs]}).json() == {"count": 0}
        assert alice.post("/v1/spool/dead/purge", json={}).json()["count"] >= 1  # all of hers
    assert {r["id"] for r in admin.get("/v1/spool/rows", params={"dead": "true", "bank_id": other}).json()} == {theirs}
    assert admin.post("/v1/spool/dead/purge", json={"ids": [theirs]}).json() == {"count": 1}


def test_row_ids_past_sqlites_range_are_refused(admin: httpx.Client) -> None:
    # The fuzzer sent 37534706123923088532300642127970304: SQLite overflowed (500) before ids were bounded.
    for ids in ([2**63], [0], [-1]):
        for action in ("replay", "purge"):
            refused = admin.post(f"/v1/spool/dead/{action}", json={"ids": ids})
            assert refused.status_code == 422 and refused.json()["error"]["code"] == "invalid_request", refused.text
