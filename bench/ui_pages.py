"""Page timings of the memory browser (/ui) on a large bank, in a real headless Chromium.

    memwrap serve &                                     # or any running sidecar
    python -m bench.ui_pages --url http://127.0.0.1:8765 [--key KEY] [--memories 10000]

Fills the bank `ui-bench` with synthetic chat turns up to --memories (bench/synthetic.py), then opens each view
--repeat times and reports the median time from navigation to the view being drawn (every API call it makes
answered and rendered), and the median of the same views' API calls alone. Needs Playwright and a chromium
binary (Debian's `chromium`; MEMWRAP_TEST_CHROMIUM names another).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from typing import Any

import httpx

from bench.synthetic import generate_turns

BANK = "ui-bench"


def fill(client: httpx.Client, target: int) -> int:
    have = (
        client.get(f"/v1/banks/{BANK}").json().get("memories", 0) if client.get(f"/v1/banks/{BANK}").is_success else 0
    )
    turns = generate_turns(target)
    for start in range(have, target, 500):
        items = [
            {
                "content": t.content,
                "document_id": t.document_id,
                "timestamp": t.timestamp.isoformat(),
                "tags": [t.topic],
            }
            for t in turns[start : start + 500]
        ]
        client.post(f"/v1/banks/{BANK}/memories/batch", json={"items": items}, timeout=600).raise_for_status()
    return int(client.get(f"/v1/banks/{BANK}/stats").json()["memories"])


def views(client: httpx.Client) -> list[tuple[str, str, list[tuple[str, str, dict[str, Any] | None]]]]:
    """(name, hash route, the API calls the view makes)."""
    memory = client.get(f"/v1/banks/{BANK}/memories", params={"limit": 1, "offset": 5000}).json()["items"][0]["id"]
    entity = client.get(f"/v1/banks/{BANK}/entities", params={"limit": 1}).json()[0]["id"]  # the most mentioned
    b = f"/v1/banks/{BANK}"
    search = {"query": "hiking trip with my sister", "token_budget": 4000, "explain": True}
    debug = {"query": "What did Maya cook last spring?", "token_budget": 1024, "explain": True}
    return [
        ("banks", "", [("GET", "/v1/banks", None), ("GET", f"{b}/stats", None)]),
        (
            "memories (page 100 of 10k)",
            f"b/{BANK}/memories?offset=5000",
            [("GET", f"{b}/memories?limit=50&offset=5000", None)],
        ),
        ("memories: search", f"b/{BANK}/memories?q=hiking+trip+with+my+sister", [("POST", f"{b}/recall", search)]),
        (
            "memory page",
            f"b/{BANK}/m/{memory}",
            [("GET", f"{b}/memories/{memory}", None), ("GET", f"{b}/memories/{memory}/context", None)],
        ),
        (
            "recall debugger (1024 tokens)",
            f"b/{BANK}/recall?q=What+did+Maya+cook+last+spring%3F&budget=1024",
            [("POST", f"{b}/recall", debug)],
        ),
        ("observations", f"b/{BANK}/observations", [("GET", f"{b}/observations?limit=51", None)]),
        ("mental models", f"b/{BANK}/models", [("GET", f"{b}/mental-models", None)]),
        ("entities", f"b/{BANK}/entities", [("GET", f"{b}/entities?limit=100", None)]),
        ("entity graph (most mentioned)", f"b/{BANK}/e/{entity}", [("GET", f"{b}/entities/{entity}/graph", None)]),
        ("jobs", f"b/{BANK}/jobs", [("GET", f"{b}/jobs?limit=200", None), ("GET", f"{b}/jobs?limit=1000", None)]),
    ]


def api_ms(client: httpx.Client, calls: list[tuple[str, str, dict[str, Any] | None]]) -> float:
    started = time.perf_counter()
    for method, path, body in calls:
        client.request(method, path, json=body).raise_for_status()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8765")
    parser.add_argument("--key", default=os.environ.get("MEMWRAP_API_KEY"))
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    headers = {"Authorization": f"Bearer {args.key}"} if args.key else {}
    with httpx.Client(base_url=args.url, headers=headers, timeout=120) as client:
        size = fill(client, args.memories)
        pages = views(client)
        api = {name: statistics.median(api_ms(client, calls) for _ in range(args.repeat)) for name, _, calls in pages}
    chromium = os.environ.get("MEMWRAP_TEST_CHROMIUM") or shutil.which("chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900}, bypass_csp=True)  # for the wait predicate
        page.goto(f"{args.url}/ui/")
        if args.key:
            page.evaluate("key => sessionStorage.setItem('memwrap.key', key)", args.key)
        opened: dict[str, list[float]] = {name: [] for name, _, _ in pages}
        clicked: dict[str, list[float]] = {name: [] for name, _, _ in pages}
        drawn = "n => Number(document.getElementById('view').dataset.rendered || 0) > n"
        for _ in range(args.repeat + 1):  # the first round warms the browser's cache of the page's own files
            for name, route, _ in pages:
                # Opened: the page loads (HTML, CSS, scripts) and draws the view.
                page.goto("about:blank")
                started = time.perf_counter()
                page.goto(f"{args.url}/ui/#/{route}")
                page.wait_for_function(drawn, arg=0)
                opened[name].append((time.perf_counter() - started) * 1000)
                # Navigated to from another view of the loaded page (what a click in the browser costs).
                page.evaluate("route => { location.hash = '#/' + route; }", f"b/{BANK}/models" if not route else "")
                page.wait_for_function(drawn, arg=1)
                started = time.perf_counter()
                page.evaluate("route => { location.hash = '#/' + route; }", route)
                page.wait_for_function(drawn, arg=2)
                clicked[name].append((time.perf_counter() - started) * 1000)
        browser.close()
    print(f"bank {BANK}: {size:,} memories; medians of {args.repeat} runs\n")
    print("| view | opened: page loaded and drawn (ms) | from another view (ms) | its API calls alone (ms) |")
    print("| --- | ---: | ---: | ---: |")
    for name, _, _ in pages:
        print(
            f"| {name} | {statistics.median(opened[name][1:]):.0f} | {statistics.median(clicked[name][1:]):.0f} "
            f"| {api[name]:.0f} |"
        )


if __name__ == "__main__":
    main()
