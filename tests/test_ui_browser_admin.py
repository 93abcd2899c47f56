"""The memory browser's operator features (issue 31), in a real headless Chromium like tests/test_ui_browser.py:
add a memory and edit it (occurred time included), select and delete or invalidate in bulk, filter by metadata,
export and import a bank, read a session as a thread, and see the engine's LLM usage per bank. Each test drives
the page and then checks the bank through the REST API.

Screenshots go to $UI_SHOTS_DIR (default build/ui-screenshots/, a test artefact, not committed).
"""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from extract_support import fact, reply
from fakes.llm_server import FakeLLMServer, Reply, ToolCall
from fakes.llm_wire import Ids, chat_completion
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, admin, upstream; ServerProcess
from test_ui_browser import _login, _open, browser, page  # noqa: F401 - fixtures: browser, page

SHOTS = Path(os.environ.get("UI_SHOTS_DIR") or Path(__file__).resolve().parents[1] / "build" / "ui-screenshots")


def _shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _drawn(page: Any) -> int:
    return int(page.get_attribute("#view", "data-rendered") or 0)


def _wait_redrawn(page: Any, before: int) -> None:
    """Wait for the view drawn after `before` (the page counts its renders: #view's data-rendered)."""
    page.wait_for_function("n => Number(document.getElementById('view').dataset.rendered || 0) > n", arg=before)


def _bank(admin: httpx.Client, prefix: str, items: list[dict[str, Any]]) -> tuple[str, list[str]]:
    name = f"alice-{prefix}-{uuid.uuid4().hex[:8]}"
    ids = admin.post(f"/v1/banks/{name}/memories/batch", json={"items": items}).raise_for_status().json()["ids"]
    return name, ids


def _listed(admin: httpx.Client, bank: str, **params: Any) -> list[dict[str, Any]]:
    return admin.get(f"/v1/banks/{bank}/memories", params={"limit": 500, **params}).raise_for_status().json()["items"]


def test_add_a_memory_by_hand_then_edit_its_occurred_time(
    page: Any, sidecar: ServerProcess, admin: httpx.Client
) -> None:
    bank, _ = _bank(admin, "add", [{"content": "Alice keeps her passport in the blue drawer."}])
    _login(page, sidecar)
    _open(page, sidecar, f"b/{bank}/memories", "table.memories")
    page.click("#add-memory")
    page.wait_for_selector("form.new-memory")
    page.fill("#new-text", "Alice booked a flight to Porto for the wedding.")
    page.fill("#new-tags", "travel, wedding")
    page.fill("#new-metadata", "{not json")
    page.fill("#new-said", "2026-10-02T09:15:00")
    page.fill("#new-doc", "trip-9:turn-1")
    page.click("#new-save")
    page.wait_for_selector("#new-status .notice.error")
    assert "Metadata is not valid JSON" in page.inner_text("#new-status")
    assert len(_listed(admin, bank)) == 1  # nothing was sent
    page.fill("#new-metadata", '{"source": "operator", "priority": 2}')
    _shot(page, "i31-01-add-memory")
    page.click("#new-save")
    page.wait_for_selector(".memory-text")
    memory_id = page.url.rsplit("/", 1)[-1]
    stored = admin.get(f"/v1/banks/{bank}/memories/{memory_id}").raise_for_status().json()
    said = page.evaluate("new Date('2026-10-02T09:15:00').toISOString()")
    assert stored["text"] == "Alice booked a flight to Porto for the wedding."
    assert stored["tags"] == ["travel", "wedding"] and stored["metadata"] == {"source": "operator", "priority": 2}
    assert stored["document_id"] == "trip-9:turn-1"
    assert stored["mentioned_at"].replace("+00:00", "Z").startswith(said[:19])

    # Edit: the occurred time (when the flight is), the tags; the history keeps the first version.
    page.click("#edit")
    page.fill("form.edit input[name=occurred_end]", "2026-10-20T08:00:00")
    page.click("form.edit button[type=submit]")
    page.wait_for_selector("text=Give when it started happening")
    page.fill("form.edit input[name=occurred_start]", "2026-10-18T07:30:00")
    page.fill("form.edit input[name=tags]", "travel, wedding, porto")
    drawn = _drawn(page)
    page.click("form.edit button[type=submit]")
    _wait_redrawn(page, drawn)
    page.wait_for_selector("tr[data-version='2']")
    stored = admin.get(f"/v1/banks/{bank}/memories/{memory_id}").json()
    start = page.evaluate("new Date('2026-10-18T07:30:00').toISOString()")
    end = page.evaluate("new Date('2026-10-20T08:00:00').toISOString()")
    assert stored["occurred_start"].replace("+00:00", "Z").startswith(start[:19])
    assert stored["occurred_end"].replace("+00:00", "Z").startswith(end[:19])
    assert stored["tags"] == ["travel", "wedding", "porto"]
    history = admin.get(f"/v1/banks/{bank}/memories/{memory_id}/history").json()
    assert sorted(history[1]["changed"]) == ["occurred", "tags"] and history[0]["occurred_start"] is None
    assert "porto" in page.inner_text(".facts") and "trip-9" in page.inner_text(".facts")
    _shot(page, "i31-02-memory-edited-occurred")
    assert page.errors == []
    admin.delete(f"/v1/banks/{bank}")


def test_select_and_invalidate_then_delete_in_bulk(page: Any, sidecar: ServerProcess, admin: httpx.Client) -> None:
    bank, ids = _bank(admin, "bulk", [{"content": f"Alice's note number {i} about the garden."} for i in range(6)])
    _login(page, sidecar)
    _open(page, sidecar, f"b/{bank}/memories", "table.memories")
    assert page.is_disabled("#bulk-delete") and page.is_disabled("#bulk-invalidate")
    for memory_id in ids[:2]:
        page.check(f"tr[data-id='{memory_id}'] input.pick")
    assert page.inner_text("#picked") == "2 selected"
    page.click("#bulk-invalidate")
    page.wait_for_selector("#bulk-dialog[open]")
    assert "Invalidate 2 memories?" in page.inner_text("#bulk-dialog")
    page.fill("#bulk-reason", "duplicates of the plan")
    _shot(page, "i31-03-bulk-invalidate-dialog")
    drawn = _drawn(page)
    page.click("#bulk-confirm")
    _wait_redrawn(page, drawn)
    page.wait_for_selector(".notice.ok")
    assert "Invalidated 2 memories." in page.inner_text(".notice.ok")
    assert {m["id"] for m in _listed(admin, bank)} == set(ids[2:])
    for memory_id in ids[:2]:
        context = admin.get(f"/v1/banks/{bank}/memories/{memory_id}/context").json()
        assert context["invalidated_at"] and context["invalidation_reason"] == "duplicates of the plan"

    # Select the whole page; cancelling deletes nothing, confirming deletes all four.
    assert page.locator("table.memories tbody tr").count() == 4
    page.check("#pick-page")
    assert page.inner_text("#picked") == "4 selected"
    page.click("#bulk-delete")
    page.wait_for_selector("#bulk-dialog[open]")
    assert "Delete 4 memories?" in page.inner_text("#bulk-dialog")
    page.click("#bulk-cancel")
    page.wait_for_selector("#bulk-dialog", state="detached")
    assert len(_listed(admin, bank)) == 4
    page.click("#bulk-delete")
    drawn = _drawn(page)
    page.click("#bulk-confirm")
    _wait_redrawn(page, drawn)
    page.wait_for_selector(".notice.ok")
    assert "Deleted 4 memories." in page.inner_text(".notice.ok")
    _shot(page, "i31-04-bulk-deleted")
    assert _listed(admin, bank) == []
    for memory_id in ids[2:]:
        assert admin.get(f"/v1/banks/{bank}/memories/{memory_id}").status_code == 404
    assert page.errors == []
    admin.delete(f"/v1/banks/{bank}")


def test_filter_the_list_by_metadata(page: Any, sidecar: ServerProcess, admin: httpx.Client) -> None:
    bank, ids = _bank(
        admin,
        "meta",
        [
            {"content": "Imported from the CLI: the boiler manual.", "metadata": {"source": "cli", "priority": 2}},
            {"content": "Typed on the web: the roof quote.", "metadata": {"source": "web", "priority": 5}},
            {"content": "Imported from the CLI: the tax letter.", "metadata": {"source": "cli", "priority": 7}},
            {"content": "A note without metadata."},
        ],
    )
    _login(page, sidecar)
    _open(page, sidecar, f"b/{bank}/memories", "table.memories")

    def submit(pattern: str) -> None:
        drawn = _drawn(page)
        page.click("form.filters button[type=submit]")
        page.wait_for_url(re.compile(pattern))
        _wait_redrawn(page, drawn)

    def shown() -> set[str]:
        return set(page.locator("table.memories tbody tr").evaluate_all("rows => rows.map(r => r.dataset.id)"))

    page.fill("input[name=mk]", "source")
    page.fill("input[name=mv]", "cli")
    submit(r".*mk=source.*")
    assert shown() == {ids[0], ids[2]}
    expected = {m["id"] for m in _listed(admin, bank, filters=json.dumps({"metadata": {"source": "cli"}}))}
    assert shown() == expected
    _shot(page, "i31-05-metadata-filter")

    page.fill("input[name=mk]", "priority")
    page.fill("input[name=mv]", "2")  # a number: JSON when it reads as JSON
    submit(r".*mv=2.*")
    assert shown() == {ids[0]}

    page.fill("input[name=mk]", "")
    page.fill("input[name=mv]", "")
    page.click("details.json-filter summary")
    page.fill("textarea[name=mf]", '{"metadata": {"priority": {"gte": 5}}}')
    submit(r".*mf=.*")
    assert shown() == {ids[1], ids[2]}

    page.fill("textarea[name=mf]", '{"metadata": {"priority": {"gte": 5}}')  # a brace short
    submit(r".*mf=.*")
    assert "not valid JSON" in page.inner_text(".notice.error")
    assert page.locator("table.memories").count() == 0  # an error, not an empty list

    page.fill("textarea[name=mf]", '{"metadata": {"priority": {"gte": 5}}, "colour": "red"}')  # the server refuses
    submit(r".*colour.*")
    assert "The server refused this filter" in page.inner_text(".notice.error")
    assert "colour" in page.inner_text(".notice.error")
    assert page.locator("table.memories").count() == 0
    _shot(page, "i31-06-metadata-filter-error")
    assert page.errors == []
    admin.delete(f"/v1/banks/{bank}")


def test_export_then_import_a_bank_from_buttons(
    page: Any, sidecar: ServerProcess, admin: httpx.Client, tmp_path: Path
) -> None:
    bank, _ = _bank(
        admin,
        "export",
        [
            {"content": "Alice's bike is a green Brompton.", "tags": ["bike"], "metadata": {"n": 1}},
            {"content": "Alice 的自行车是绿色的。", "document_id": "zh:1", "tags": ["中文"]},
            {"content": "Alice services the bike every spring.", "timestamp": "2026-03-01T10:00:00Z"},
        ],
    )
    copy = f"alice-imported-{uuid.uuid4().hex[:8]}"
    _login(page, sidecar)
    _open(page, sidecar, f"b/{bank}/transfer", "#export")
    with page.expect_download() as download:
        page.click("#export")
    saved = tmp_path / "export.jsonl"
    download.value.save_as(saved)
    assert download.value.suggested_filename == f"{bank}.jsonl"
    page.wait_for_selector("#export-status .notice.ok")
    lines = [json.loads(line) for line in saved.read_text(encoding="utf-8").splitlines() if line.strip()]
    expected = admin.get(f"/v1/banks/{bank}/export").text.splitlines()
    assert len(lines) == len([x for x in expected if x.strip()]) > 3
    assert f"Exported {len(lines)} records" in page.inner_text("#export-status")

    page.set_input_files("#import-file", str(saved))
    page.fill("#import-bank", copy)
    page.click("#import")
    page.wait_for_selector("#import-status table.import-report")
    _shot(page, "i31-07-export-import")
    report_rows = page.locator("#import-status tr[data-kind]").evaluate_all(
        "rows => Object.fromEntries(rows.map(r => [r.dataset.kind, Number(r.cells[2].innerText.replace(/\\D/g, ''))]))"
    )
    original = {(m["text"], tuple(m["tags"])) for m in _listed(admin, bank)}
    imported = {(m["text"], tuple(m["tags"])) for m in _listed(admin, copy)}
    assert imported == original and len(imported) == 3
    assert report_rows.get("memory", report_rows.get("memories", 0)) == 3, report_rows
    # The same file again: nothing new is written.
    page.click("#import")
    page.wait_for_function(
        "() => /0 rows written/.test(document.getElementById('import-status').innerText)", timeout=30_000
    )
    assert len(_listed(admin, copy)) == 3
    assert page.errors == []
    admin.delete(f"/v1/banks/{bank}")
    admin.delete(f"/v1/banks/{copy}")


def test_a_session_reads_as_a_thread_with_its_speakers(page: Any, sidecar: ServerProcess, admin: httpx.Client) -> None:
    turns = [
        ("user: We land in Lisbon on Friday evening.", "2026-05-01T18:00:00Z"),
        ("assistant: Noted. Do you want a dinner booking near the hotel?", "2026-05-01T18:00:05Z"),
        ("user: Yes, somewhere vegetarian, for two.", "2026-05-01T18:00:30Z"),
        ("assistant: I found Ao 26 in Chiado; booked for 21:00.", "2026-05-01T18:01:00Z"),
    ]
    bank, _ = _bank(
        admin,
        "thread",
        [{"content": text, "timestamp": at, "document_id": f"trip:turn-{i}"} for i, (text, at) in enumerate(turns)]
        + [{"content": "user: Another chat: the plumber comes Monday.", "document_id": "house:turn-0"}],
    )
    _login(page, sidecar)
    _open(page, sidecar, f"b/{bank}/sessions", "table.sessions")
    sessions = admin.get(f"/v1/banks/{bank}/sessions").raise_for_status().json()
    assert {s["session_id"]: s["memories"] for s in sessions} == {"trip": 4, "house": 1}
    assert page.inner_text("tr[data-session='trip'] td.num") == "4"
    assert "assistant" in page.inner_text("tr[data-session='trip']")
    _shot(page, "i31-08-sessions")
    page.click("tr[data-session='trip'] a")
    page.wait_for_selector("ol.thread li.turn")
    shown = page.locator("ol.thread li.turn").evaluate_all(
        "items => items.map(li => [li.dataset.speaker, li.querySelector('.turn-text').innerText])"
    )
    listed = _listed(admin, bank, filters=json.dumps({"session_ids": ["trip"]}))
    assert shown == [[m["speaker"] or "", m["text"]] for m in listed]
    assert [s for s, _ in shown] == ["user", "assistant", "user", "assistant"]
    assert [t for _, t in shown] == [text for text, _ in turns]
    assert page.locator("li.turn.by-user").count() == 2 and page.locator("li.turn.by-assistant").count() == 2
    _shot(page, "i31-09-session-thread")
    # From a memory of the session, its thread is one click away.
    page.click("ol.thread li.turn >> nth=1 >> a")
    page.wait_for_selector(".memory-text")
    assert "assistant" in page.inner_text(".facts")
    page.click(".facts a:has-text('(thread)')")
    page.wait_for_selector("ol.thread li.turn")
    assert page.errors == []
    admin.delete(f"/v1/banks/{bank}")


def _reported(requests: list[Any]) -> dict[str, int]:
    """The usage the fake LLM server reported for these requests (recomputed as it computed it)."""
    total = {"requests": 0, "input_tokens": 0, "output_tokens": 0}
    for request in requests:
        usage = chat_completion(request.reply, "m", Ids(), json.dumps(request.body.get("messages", [])))["usage"]
        total["requests"] += 1
        total["input_tokens"] += usage["prompt_tokens"]
        total["output_tokens"] += usage["completion_tokens"]
    return total


@pytest.fixture
def llm_server(memwrap_home: Path, upstream: FakeLLMServer) -> Any:
    """A second memwrap server on the same home whose engine extracts and reflects with the fake LLM (the
    session's sidecar has no engine LLM); no worker, so no other test's bank is touched."""
    env = {
        "MEMWRAP_HOME": str(memwrap_home),
        "MEMWRAP_API_KEYS": f"{ADMIN_KEY},{ALICE_KEY}:alice|alice-*",
        "MEMWRAP_WORKER": "off",
        "MEMWRAP_EXTRACTION_PROVIDER": "openai",
        "MEMWRAP_REFLECT_PROVIDER": "openai",
        "MEMWRAP_LLM_MODEL": "fake-model",
        "MEMWRAP_LLM_BASE_URL": upstream.openai_base_url,
        "MEMWRAP_LLM_API_KEY": "sk-test",
        "MEMWRAP_LLM_TOOL_PROTOCOL": "native",
        "MEMWRAP_LLM_MAX_RETRIES": "0",
        "MEMWRAP_EXTRACTION_RETRY_INTERVAL": "3600",
        "MEMWRAP_FAILURE_RATE": "0",
    }
    with ServerProcess(env) as server:
        yield server


def test_llm_usage_per_bank(page: Any, llm_server: ServerProcess, upstream: FakeLLMServer) -> None:
    bank = f"alice-usage-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=llm_server.url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=60) as api:
        upstream.script([reply([fact("Alice is learning Portuguese.", "world", [0], ["Alice"])])])
        api.post(f"/v1/banks/{bank}/memories", json={"content": "user: I'm learning Portuguese."}).raise_for_status()
        extraction = list(upstream.requests)
        upstream.script([Reply(tool_calls=[ToolCall("done", {"answer": "Portuguese.", "memory_ids": []})])])
        api.post(f"/v1/banks/{bank}/reflect", json={"query": "Which language is Alice learning?"}).raise_for_status()
        reflect = upstream.requests[len(extraction) :]
        usage = api.get(f"/v1/banks/{bank}/llm-usage").raise_for_status().json()
    assert extraction and reflect
    by_purpose = {c["purpose"]: c for c in usage["by_purpose"]}
    for purpose, requests in (("extraction", extraction), ("reflect", reflect)):
        expected = _reported(requests)
        assert {k: by_purpose[purpose][k] for k in expected} == expected, purpose

    _login(page, llm_server)
    _open(page, llm_server, f"b/{bank}/usage", "table.usage")
    for purpose in ("extraction", "reflect"):
        cells = page.locator(f"table.usage tr[data-purpose={purpose}] td").all_inner_texts()
        numbers = [int(re.sub(r"\D", "", c)) for c in cells]
        c = by_purpose[purpose]
        assert numbers == [c["requests"], c["input_tokens"], c["output_tokens"], c["cached_input_tokens"]]
    assert int(re.sub(r"\D", "", page.inner_text("#total-requests"))) == len(extraction) + len(reflect)
    assert page.locator("table.usage-days tbody tr").count() == 2
    heads = ["Purpose", "Requests", "Input tokens", "Output tokens", "Cached input"]
    assert [t.strip().lower() for t in page.locator("table.usage thead th").all_inner_texts()] == [
        h.lower() for h in heads
    ]
    _shot(page, "i31-10-llm-usage")
    assert page.errors == []


def test_the_new_views_fit_a_narrow_dark_screen(browser: Any, sidecar: ServerProcess, admin: httpx.Client) -> None:
    bank, _ = _bank(
        admin,
        "narrow",
        [
            {"content": "user: A fairly long first message of the conversation, " * 3, "document_id": "n:turn-0"},
            {"content": "assistant: And an answer, also long enough to wrap. " * 3, "document_id": "n:turn-1"},
        ],
    )
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    page = context.new_page()
    try:
        _login(page, sidecar)
        for hash_, ready in (
            (f"b/{bank}/s/n", "ol.thread li.turn"),
            (f"b/{bank}/usage", "div.stats-row"),
            (f"b/{bank}/transfer", "#export"),
            (f"b/{bank}/new", "form.new-memory"),
            (f"b/{bank}/memories", "table.memories"),
        ):
            _open(page, sidecar, hash_, ready)
            assert page.evaluate("document.documentElement.scrollWidth") <= 390, hash_
        _open(page, sidecar, f"b/{bank}/s/n", "ol.thread li.turn")
        _shot(page, "i31-11-thread-narrow-dark")
    finally:
        context.close()
    admin.delete(f"/v1/banks/{bank}")
