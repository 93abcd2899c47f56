"""Webhooks through every surface but Python's own (tests/test_webhooks.py): REST on the session's sidecar, the HTTP
client (`Memory(url=...)`), the CLI, and the memory browser's Webhooks tab in headless Chromium (skipped, with
the reason, without Playwright or a chromium binary). Deliveries are run by a worker of the test's own on the
session's database, to a receiver on 127.0.0.1."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin; ADMIN_KEY, ALICE_KEY
from webhook_receiver import Receiver, drive, free_port

from memwrap import Memory
from memwrap.cli import main
from memwrap.errors import WebhookNotFoundError


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver(free_port())
    r.start()
    yield r
    r.stop()


def _delivered(memory: Memory, bank: str) -> None:
    async def done() -> bool:
        found = await memory.aio.webhook_deliveries(bank)
        return bool(found) and all(d.status != "pending" for d in found)

    drive(memory, done, f"the deliveries of {bank}")


def test_rest_and_the_http_client(
    sidecar: ServerProcess, admin: httpx.Client, memory: Memory, receiver: Receiver
) -> None:
    bank = f"alice-hooks-{uuid.uuid4().hex[:8]}"
    created = admin.post(f"/v1/banks/{bank}/webhooks", json={"url": f"{receiver.url}/rest", "events": ["retained"]})
    assert created.status_code == 201
    hook = created.json()
    assert hook["secret"].startswith("whsec_") and hook["events"] == ["retained"] and hook["include_text"] is True
    receiver.secrets["/rest"] = hook["secret"]
    listed = admin.get(f"/v1/banks/{bank}/webhooks").json()
    assert [w["id"] for w in listed] == [hook["id"]] and listed[0]["secret"] is None

    ids = admin.post(f"/v1/banks/{bank}/memories", json={"content": "Alice's bike is in the shed."}).json()["ids"]
    pending = admin.get(f"/v1/banks/{bank}/webhook-deliveries").json()
    assert [(d["event"], d["status"], d["payload"]["data"]["memory_ids"]) for d in pending] == [
        ("retained", "pending", ids)
    ]
    _delivered(memory, bank)
    [done] = admin.get(f"/v1/banks/{bank}/webhook-deliveries", params={"webhook_id": hook["id"]}).json()
    assert done["status"] == "delivered" and [a["status_code"] for a in done["log"]] == [200]
    assert receiver.accepted[done["event_id"]].payload["data"]["memories"][0]["text"] == "Alice's bike is in the shed."

    # Checked input, 404s, and a key restricted to alice-* banks.
    for body in ({"url": "file:///etc/passwd"}, {"url": "https://example.com", "events": ["nope"]}):
        refused = admin.post(f"/v1/banks/{bank}/webhooks", json=body)
        assert refused.status_code == 422, body
    missing = admin.patch(f"/v1/banks/{bank}/webhooks/{uuid.uuid4()}", json={"enabled": False})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "webhook_not_found"
    assert admin.get(f"/v1/banks/{bank}/webhook-deliveries", params={"limit": 501}).status_code == 422
    with httpx.Client(base_url=sidecar.url, headers={"Authorization": f"Bearer {ALICE_KEY}"}) as alice:
        assert alice.get(f"/v1/banks/{bank}/webhooks").status_code == 200
        assert alice.get("/v1/banks/bob/webhooks").status_code == 403
        assert alice.post("/v1/banks/bob/webhooks", json={"url": "https://example.com"}).status_code == 403

    # The HTTP client: the same verbs, the same errors.
    with Memory(url=sidecar.url, api_key=ADMIN_KEY) as remote:
        paused = remote.update_webhook(bank, hook["id"], enabled=False)
        assert paused.enabled is False and paused.secret is None
        assert [d.status for d in remote.webhook_deliveries(bank)] == ["delivered"]
        remote.delete_webhook(bank, hook["id"])
        assert remote.webhooks(bank) == []
        with pytest.raises(WebhookNotFoundError):
            remote.delete_webhook(bank, hook["id"])


def test_cli(memwrap_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = ["--home", str(memwrap_home), "--json"]
    bank = f"cli-hooks-{uuid.uuid4().hex[:8]}"
    url = "https://example.com/hooks/memwrap"
    assert (
        main(["webhook-add", bank, url, "--events", "retained", "--events", "deleted", "--no-include-text", *home]) == 0
    )
    added = json.loads(capsys.readouterr().out)
    assert added["secret"].startswith("whsec_") and added["events"] == ["retained", "deleted"]
    assert added["include_text"] is False
    assert main(["webhooks", bank, *home]) == 0
    assert [(w["url"], w["secret"]) for w in json.loads(capsys.readouterr().out)] == [(url, None)]
    assert main(["webhook-deliveries", bank, *home]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["webhook-remove", bank, added["id"], *home]) == 0
    capsys.readouterr()
    assert main(["webhook-remove", bank, added["id"], *home]) != 0
    assert "webhook_not_found" in capsys.readouterr().out


# --- the browser --------------------------------------------------------------------------------------------------

CHROMIUM = os.environ.get("MEMWRAP_TEST_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def test_the_webhooks_tab(sidecar: ServerProcess, admin: httpx.Client, memory: Memory, receiver: Receiver) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install playwright)")
    if not CHROMIUM:
        pytest.skip("no chromium binary: `apt-get install chromium` (Debian) to run the browser tests")
    bank = f"ui-hooks-{uuid.uuid4().hex[:8]}"
    admin.post(f"/v1/banks/{bank}/memories", json={"content": "Alice keeps bees."}).raise_for_status()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("dialog", lambda dialog: dialog.accept())
        page.goto(f"{sidecar.url}/ui/")
        page.wait_for_selector("#keydialog[open]")
        page.fill("#keyinput", ADMIN_KEY)
        page.click("#keysave")
        page.wait_for_selector("table.banks")

        page.goto(f"{sidecar.url}/ui/#/b/{bank}/webhooks")
        page.wait_for_selector("#webhook-add")
        assert page.get_attribute("#banknav a[data-tab=webhooks]", "aria-current") == "page"
        page.fill("#webhook-add input[name=url]", f"{receiver.url}/ui")
        page.uncheck("#webhook-add input[value='mental_model.refreshed']")
        page.fill("#webhook-add input[name=description]", "the bee tracker")
        page.click("#webhook-add button[type=submit]")
        secret = page.wait_for_selector("#webhook-secret").inner_text()
        [hook] = admin.get(f"/v1/banks/{bank}/webhooks").json()
        assert secret.startswith("whsec_") and hook["secret"] is None  # shown once, in the page only
        assert "mental_model.refreshed" not in hook["events"] and hook["description"] == "the bee tracker"
        receiver.secrets["/ui"] = secret

        admin.post(f"/v1/banks/{bank}/memories", json={"content": "Alice sold honey at the market."})
        _delivered(memory, bank)
        page.click("text=Done, I kept it")
        row = page.wait_for_selector(f"tr[data-webhook-id='{hook['id']}']")
        assert "the bee tracker" in row.inner_text() and "enabled" in row.inner_text()
        delivery = page.wait_for_selector("tr[data-delivery-id]")
        assert "retained" in delivery.inner_text() and "delivered" in delivery.inner_text()
        page.click("tr[data-delivery-id] summary")
        assert "Alice sold honey at the market." in page.inner_text("tr[data-delivery-id] pre.json")
        page.screenshot(path=str(_shots() / "webhooks.png"), full_page=True)

        page.click(f"tr[data-webhook-id='{hook['id']}'] button.toggle")
        page.wait_for_selector("tr[data-webhook-id] button.toggle:text-is('Resume')")
        assert admin.get(f"/v1/banks/{bank}/webhooks").json()[0]["enabled"] is False
        page.click(f"tr[data-webhook-id='{hook['id']}'] button.remove")
        page.wait_for_selector("tr[data-webhook-id]", state="detached")
        assert admin.get(f"/v1/banks/{bank}/webhooks").json() == []
        page.wait_for_selector("#view >> text=No webhook yet")  # the view renders again after the removal
        assert errors == []
        browser.close()


def _shots() -> Path:
    path = Path(__file__).resolve().parents[1] / "build" / "ui-screenshots"
    path.mkdir(parents=True, exist_ok=True)
    return path


def test_a_bank_scoped_key_reaches_public_addresses_only_and_reads_failure_classes(
    sidecar: ServerProcess, admin: httpx.Client, memory: Memory, receiver: Receiver
) -> None:
    """Over REST, with the sidecar's keys: alice's key (alice, alice-*) may not point a webhook at 127.0.0.1 in
    any spelling, nor at the metadata address; the admin key may; alice reads the delivery log as classes."""
    bank = f"alice-ssrf-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=sidecar.url, headers={"Authorization": f"Bearer {ALICE_KEY}"}) as alice:
        for host in ("127.0.0.1", "2130706433", "[::ffff:0:7f00:1]", "169.254.169.254", "[64:ff9b::a9fe:a9fe]"):
            refused = alice.post(f"/v1/banks/{bank}/webhooks", json={"url": f"http://{host}:{receiver.port}/x"})
            assert refused.status_code == 422, (host, refused.text)
            assert "127.0.0.1" not in refused.json()["error"]["message"].replace(host, "")
        created = admin.post(
            f"/v1/banks/{bank}/webhooks", json={"url": f"{receiver.url}/admin", "events": ["retained"]}
        )
        assert created.status_code == 201, created.text
        receiver.secrets["/admin"] = created.json()["secret"]
        receiver.mode = "410"  # final at once
        alice.post(f"/v1/banks/{bank}/memories", json={"content": "Alice's bike is in the shed."})
        _delivered(memory, bank)
        [seen] = alice.get(f"/v1/banks/{bank}/webhook-deliveries").json()
        assert seen["log"] and all(
            a["status_code"] is None and a["duration_ms"] is None and a["error"] == "http_4xx" for a in seen["log"]
        ), seen["log"]
        [full] = admin.get(f"/v1/banks/{bank}/webhook-deliveries").json()
        assert {a["status_code"] for a in full["log"]} == {410}
