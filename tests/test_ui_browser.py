"""The memory browser (/ui) and the offline API docs, in a real headless Chromium (Debian's `chromium`, driven by
Playwright with `executable_path`: no browser download). Screenshots of every view land in build/ui-screenshots/
(a test artefact, not committed).

Skipped, with the reason, when Playwright or a chromium binary is missing (.ci/run installs both).
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin
from ui_support import XSS, seed

sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed (pip install playwright)")
CHROMIUM = os.environ.get("MEMWRAP_TEST_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if not CHROMIUM:
    pytest.skip(
        "no chromium binary: `apt-get install chromium` (Debian) to run the browser tests", allow_module_level=True
    )

SHOTS = Path(__file__).resolve().parents[1] / "build" / "ui-screenshots"
ARMS = ("semantic", "keyword", "graph", "temporal")
NOW = "2026-11-30T12:00:00Z"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def bank(sidecar: ServerProcess) -> str:
    name = f"alice-ui-{uuid.uuid4().hex[:8]}"  # ALICE_KEY may use alice-*: the restricted key sees it too
    with httpx.Client(base_url=sidecar.url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=60) as client:
        seed(client, name)
    return name


@pytest.fixture
def page(browser: object, sidecar: ServerProcess) -> Iterator[object]:
    context = browser.new_context(  # type: ignore[attr-defined]  # `object`: playwright is optional
        viewport={"width": 1280, "height": 900}
    )
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    yield page
    context.close()


def _login(page: object, sidecar: ServerProcess, key: str = ADMIN_KEY) -> None:
    page.goto(f"{sidecar.url}/ui/")
    page.wait_for_selector("#keydialog[open]")  # the server wants a key: the page asks for it once
    page.fill("#keyinput", key)
    page.click("#keysave")
    page.wait_for_selector("table.banks")


def _open(page: object, sidecar: ServerProcess, hash_: str, ready: str) -> None:
    page.goto(f"{sidecar.url}/ui/#/{hash_}")
    page.wait_for_selector(ready)
    page.wait_for_function("!document.getElementById('view').hasAttribute('aria-busy')")


def _submit_filters(page: object, url: re.Pattern[str]) -> None:
    """Submit the filter form and wait for the view it leads to to be drawn. Waiting for `table.memories` and no
    aria-busy could match the page before the new render began (the old table, not yet busy): CI once read
    "Loading…" that way. The view counts its renders (#view's data-rendered): wait for the next one."""
    drawn = int(page.get_attribute("#view", "data-rendered") or 0)
    page.click("form.filters button[type=submit]")
    page.wait_for_url(url)
    # A function, not an expression string: Playwright would eval a string, and the page's CSP forbids eval.
    page.wait_for_function("n => Number(document.getElementById('view').dataset.rendered || 0) > n", arg=drawn)


def _shot(page: object, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_every_view_opens_on_a_seeded_bank(
    page: object, sidecar: ServerProcess, admin: httpx.Client, bank: str
) -> None:
    _login(page, sidecar)
    row = page.locator(f"tr[data-bank='{bank}']")
    row.locator("td[data-col=observations]").wait_for()
    stats = admin.get(f"/v1/banks/{bank}/stats").json()
    assert row.locator("td[data-col=observations]").inner_text() == str(stats["observations"]) != "0"
    assert row.locator("td[data-col=mental_models]").inner_text() == "1"
    _shot(page, "01-banks")

    _open(page, sidecar, f"b/{bank}/memories", "table.memories")
    listed = admin.get(f"/v1/banks/{bank}/memories", params={"limit": 50}).json()["items"]
    assert page.locator("table.memories tbody tr").count() == len(listed)
    assert "张爱玲" in page.inner_text("table.memories")  # Chinese text, as stored
    _shot(page, "02-memories")

    _open(page, sidecar, f"b/{bank}/memories?type=observation", "table.memories")
    assert set(page.locator("table.memories .badge").all_inner_texts()) == {"observation"}

    _open(page, sidecar, f"b/{bank}/memories?q=cello+teacher", "table.memories")
    assert "João" in page.locator("table.memories tbody tr").first.inner_text()
    _shot(page, "03-memories-search")

    memory_id = listed[0]["id"]
    _open(page, sidecar, f"b/{bank}/m/{memory_id}", ".memory-text")
    assert page.inner_text(".memory-text") == listed[0]["text"]
    assert "Lisbon" in page.inner_text(".facts") and "next" in page.inner_text("main")  # entities, links
    _shot(page, "04-memory")

    _open(page, sidecar, f"b/{bank}/observations", "table.observations")
    page.locator("table.observations tbody tr a").first.click()
    page.wait_for_selector("ol.evidence li")
    assert "supports" in page.inner_text("ol.evidence") and "created" in page.inner_text("main")  # evidence, history
    _shot(page, "05-observation")

    _open(page, sidecar, f"b/{bank}/models", "section.model")
    assert "What does Alice eat and avoid?" in page.inner_text("section.model")
    assert page.locator("section.model .model-content").count() == 0  # not answered yet
    page.click("section.model button.refresh")  # without an LLM the answer is the recalled facts themselves
    page.wait_for_selector("section.model .model-content")
    assert "vegetarian" in page.inner_text("section.model .model-content")
    assert "fresh" in page.inner_text("section.model")
    _shot(page, "06-mental-models")

    _open(page, sidecar, f"b/{bank}/entities", "table tbody tr")
    page.click("table tbody tr a >> text=Maya")
    page.wait_for_selector("svg.graph circle.node.centre")
    assert page.locator("svg.graph a").count() >= 2  # Alice, Lisbon, ...
    assert "Alice" in page.inner_text("main")
    _shot(page, "07-entity-graph")

    _open(page, sidecar, f"b/{bank}/jobs", "main section.card")
    assert "Queue by kind and state" in page.inner_text("main")
    _shot(page, "08-jobs")
    assert page.errors == []


def test_recall_debugger_shows_the_apis_ranks_and_block(
    page: object, sidecar: ServerProcess, admin: httpx.Client, bank: str
) -> None:
    _login(page, sidecar)
    _open(page, sidecar, f"b/{bank}/recall", "#recall-q")
    page.fill("#recall-q", "What did Alice do last spring?")
    page.fill("#recall-budget", "160")
    page.fill("input[name=now]", "2026-11-30T12:00")
    page.click("#run-recall")
    page.wait_for_selector("#candidates tbody tr")
    now = page.evaluate("new Date('2026-11-30T12:00').toISOString()")
    api = admin.post(
        f"/v1/banks/{bank}/recall",
        json={"query": "What did Alice do last spring?", "token_budget": 160, "explain": True, "now": now},
    ).json()
    rows = page.locator("#candidates tbody tr")
    assert rows.count() == len(api["considered"]) > 3
    for i, expected in enumerate(api["considered"]):
        row = rows.nth(i)
        assert row.get_attribute("data-id") == expected["id"]
        shown = {arm: row.locator(f"td[data-arm={arm}]").inner_text() for arm in ARMS}
        assert shown == {arm: str(expected["arms"][arm]) if arm in expected["arms"] else "—" for arm in ARMS}
        assert row.get_attribute("data-fit") == str(expected["fit"]).lower()
        assert row.locator("td[data-col=score]").inner_text() == f"{expected['score']:.4f}"
    assert any(not m["fit"] for m in api["considered"])  # the budget left some out, and the page says which
    assert (
        page.inner_text("#injected-block") == api["context"].rstrip("\n")
        or page.eval_on_selector("#injected-block", "e => e.textContent") == api["context"]
    )
    assert page.eval_on_selector("#injected-block", "e => e.textContent") == api["context"]
    assert "last spring" in page.inner_text("#recall-summary")
    _shot(page, "09-recall-debugger")


def test_delete_invalidate_and_restore_from_a_memory_page(
    page: object, sidecar: ServerProcess, admin: httpx.Client, bank: str
) -> None:
    ids = admin.post(
        f"/v1/banks/{bank}/memories/batch",
        json={"items": [{"content": "Alice once owned a red bicycle."}, {"content": "Alice's flat has a blue door."}]},
    ).json()["ids"]
    _login(page, sidecar)
    page.on(
        "dialog", lambda dialog: dialog.accept("it was a green one") if dialog.type == "prompt" else dialog.accept()
    )

    _open(page, sidecar, f"b/{bank}/m/{ids[0]}", "#invalidate")
    page.click("#invalidate")
    page.wait_for_selector("#restore")
    assert "it was a green one" in page.inner_text(".notice.warn")
    listed = [m["id"] for m in admin.get(f"/v1/banks/{bank}/memories", params={"limit": 1000}).json()["items"]]
    assert ids[0] not in listed  # invalidated: hidden from listing and recall
    page.click("#restore")
    page.wait_for_selector("#invalidate")
    listed = [m["id"] for m in admin.get(f"/v1/banks/{bank}/memories", params={"limit": 1000}).json()["items"]]
    assert ids[0] in listed

    _open(page, sidecar, f"b/{bank}/m/{ids[1]}", "#delete")
    page.click("#delete")
    page.wait_for_url(re.compile(r".*/memories$"))
    assert admin.get(f"/v1/banks/{bank}/memories/{ids[1]}").status_code == 404


def test_edit_a_memory_and_see_its_versions(
    page: object, sidecar: ServerProcess, admin: httpx.Client, bank: str
) -> None:
    memory_id = admin.post(
        f"/v1/banks/{bank}/memories", json={"content": "Alice's locker code is on a blue note.", "tags": ["gym"]}
    ).json()["ids"][0]
    _login(page, sidecar)
    _open(page, sidecar, f"b/{bank}/m/{memory_id}", "#edit")
    assert "Never edited" in page.inner_text("body")
    page.click("#edit")
    page.fill("form.edit textarea[name=text]", "Alice's locker code is on a yellow note.")
    page.fill("form.edit input[name=tags]", "gym, locker")
    page.fill("form.edit textarea[name=metadata]", "{not json")
    page.click("form.edit button[type=submit]")
    page.wait_for_selector("text=Metadata is not valid JSON")
    assert admin.get(f"/v1/banks/{bank}/memories/{memory_id}").json()["text"].endswith("blue note.")  # nothing sent
    page.fill("form.edit textarea[name=metadata]", '{"room": 2}')
    page.click("form.edit button[type=submit]")
    page.wait_for_selector("tr[data-version='2']")
    stored = admin.get(f"/v1/banks/{bank}/memories/{memory_id}").json()
    assert (stored["text"], stored["tags"], stored["metadata"]) == (
        "Alice's locker code is on a yellow note.",
        ["gym", "locker"],
        {"room": 2},
    )
    history = admin.get(f"/v1/banks/{bank}/memories/{memory_id}/history").json()
    shown = page.inner_text("tr[data-version='1']")
    assert [v["version"] for v in history] == [1, 2] and "blue note" in shown
    assert all(f in page.inner_text("tr[data-version='2']") for f in history[1]["changed"]), history[1]
    _shot(page, "11-memory-edited")
    assert page.errors == []


def test_memories_filtered_by_the_day_they_were_said(page: object, sidecar: ServerProcess, admin: httpx.Client) -> None:
    dated = f"alice-days-{uuid.uuid4().hex[:8]}"
    admin.post(
        f"/v1/banks/{dated}/memories/batch",
        json={
            "items": [
                {"content": "Said in January: the boiler was serviced.", "timestamp": "2026-01-15T10:00:00Z"},
                {"content": "Said in March: the roof was fixed.", "timestamp": "2026-03-10T10:00:00Z"},
                {"content": "Said in May: the garden was planted.", "timestamp": "2026-05-20T10:00:00Z"},
            ]
        },
    ).raise_for_status()
    _login(page, sidecar)
    _open(page, sidecar, f"b/{dated}/memories", "table.memories")
    page.fill("input[name=since]", "2026-03-01")
    page.fill("input[name=until]", "2026-03-31")
    _submit_filters(page, re.compile(r".*since=2026-03-01.*"))
    rows = page.inner_text("table.memories")
    assert "roof" in rows and "boiler" not in rows and "garden" not in rows
    # The same filter applies to a search (recall).
    page.fill("input[name=q]", "what was done to the house")
    _submit_filters(page, re.compile(r".*q=.*"))
    found = page.inner_text("#view")
    assert "roof" in found and "boiler" not in found and "garden" not in found
    admin.delete(f"/v1/banks/{dated}")


def test_dead_letters_replayed_from_the_jobs_view(
    page: object, sidecar: ServerProcess, admin: httpx.Client, memwrap_home: Path, bank: str
) -> None:
    import json
    import sqlite3
    import time

    row_id = 20_000_000 + uuid.uuid4().int % 1_000_000
    with sqlite3.connect(memwrap_home / "spool" / "retains.sqlite3") as db:  # a turn the spool gave up on
        db.execute(
            "INSERT INTO dead (id, bank_id, item, created, error) VALUES (?, ?, ?, ?, ?)",
            (
                row_id,
                bank,
                json.dumps({"content": "Alice's spare key is under the third flowerpot."}),
                time.time(),
                "StoreError: database unavailable",
            ),
        )
    _login(page, sidecar)
    _open(page, sidecar, f"b/{bank}/jobs", f"tr[data-spool-id='{row_id}']")
    assert "database unavailable" in page.inner_text(f"tr[data-spool-id='{row_id}']")
    _shot(page, "12-spool-dead-letters")
    page.click(f"tr[data-spool-id='{row_id}'] button.replay")
    page.wait_for_selector(f"tr[data-spool-id='{row_id}']", state="detached", timeout=30_000)
    wait_until(
        lambda: any(
            "third flowerpot" in m["text"]
            for m in admin.get(f"/v1/banks/{bank}/memories", params={"limit": 1000}).json()["items"]
        ),
        timeout=60,
    )
    assert page.errors == []


def test_a_restricted_key_sees_only_its_banks(
    page: object, sidecar: ServerProcess, admin: httpx.Client, bank: str
) -> None:
    other = f"bob-ui-{uuid.uuid4().hex[:8]}"
    admin.post(f"/v1/banks/{other}/memories", json={"content": "Bob's secret plan."}).raise_for_status()
    _login(page, sidecar, ALICE_KEY)
    shown = page.locator("table.banks tbody tr").evaluate_all("rows => rows.map(r => r.dataset.bank)")
    assert bank in shown and other not in shown
    _open(page, sidecar, f"b/{other}/memories", ".notice.error")
    assert "may not use bank" in page.inner_text(".notice.error")
    assert "secret" not in page.inner_text("main")
    _open(page, sidecar, f"b/{other}/recall?q=plan", ".notice.error")
    assert "Not allowed" in page.inner_text(".notice.error")
    # A wrong key: asked again, nothing shown.
    page.evaluate("sessionStorage.setItem('memwrap.key', 'wrong-key')")
    page.goto(f"{sidecar.url}/ui/#/b/{bank}/memories")
    page.wait_for_selector("#keydialog[open]")
    assert "API key is needed" in page.inner_text("main")


def test_stored_markup_is_shown_as_text_and_never_runs(
    page: object, sidecar: ServerProcess, admin: httpx.Client, bank: str
) -> None:
    _login(page, sidecar)
    _open(page, sidecar, f"b/{bank}/memories?tag=xss", "table.memories")
    assert XSS in page.inner_text("table.memories")
    xss_id = page.locator("table.memories tbody tr").first.get_attribute("data-id")
    _open(page, sidecar, f"b/{bank}/m/{xss_id}", ".memory-text")
    assert page.inner_text(".memory-text") == XSS
    _open(page, sidecar, f"b/{bank}/recall?q=onerror+script&budget=400", "#candidates")
    assert page.locator("main img, main script").count() == 0
    assert page.evaluate("window.__xss") is None
    csp = httpx.get(f"{sidecar.url}/ui/").headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp


def test_narrow_screen_in_dark_mode(browser: object, sidecar: ServerProcess, bank: str) -> None:
    context = browser.new_context(  # type: ignore[attr-defined]  # `object`: playwright is optional
        viewport={"width": 390, "height": 844}, color_scheme="dark"
    )
    page = context.new_page()
    try:
        _login(page, sidecar)
        _open(page, sidecar, f"b/{bank}/recall?q=Where+does+Alice+live%3F&budget=200", "#candidates")
        # Nothing wider than the screen but the tables, which scroll inside their own box.
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(21, 21, 23)"
        _shot(page, "10-recall-narrow-dark")
    finally:
        context.close()


@pytest.mark.parametrize("path, ready", [("/docs", ".swagger-ui .opblock"), ("/redoc", ".redoc-wrap .api-content")])
def test_api_docs_load_with_the_network_blocked(browser: object, sidecar: ServerProcess, path: str, ready: str) -> None:
    context = browser.new_context(  # type: ignore[attr-defined]  # `object`: playwright is optional
        extra_http_headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    outside: list[str] = []

    def only_loopback(route: object) -> None:
        url = route.request.url  # type: ignore[attr-defined]  # `object`: playwright is optional
        if urlsplit(url).hostname in ("127.0.0.1", "localhost") or url.startswith(("data:", "blob:")):
            route.continue_()  # type: ignore[attr-defined]  # `object`: playwright is optional
        else:
            outside.append(url)
            route.abort()  # type: ignore[attr-defined]  # `object`: playwright is optional

    context.route("**/*", only_loopback)
    page = context.new_page()
    try:
        page.goto(sidecar.url + path)
        page.wait_for_selector(ready, timeout=30_000)
        text = page.inner_text("body")
        for route_path in ("/v1/chat/completions", "/v1/banks/{bank_id}/recall", "/v1/banks/{bank_id}/stats"):
            assert route_path in text or route_path.replace("{bank_id}", "{bank_id}") in page.content(), route_path
        _shot(page, f"11-api{path.replace('/', '-')}")
    finally:
        context.close()
    assert outside == [], f"requests left 127.0.0.1: {outside}"
