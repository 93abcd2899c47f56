"""The failure budget of API keys (memwrap_server/throttle.py): a key stuck in a loop of refused requests is held
and then answered 429, while other keys, /health and the answers every client meets (404) are left alone.

The bucket's arithmetic is checked on a fake clock; the behaviour end to end on a real `memwrap serve` process
(joining the session's database, as a second stateless server would) with a small budget.
"""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from test_server_harness import *  # noqa: F403 - fixtures: sidecar; ServerProcess, wait_until

from memwrap.store import embedded_pg
from memwrap_server.throttle import FailureBudget, charged


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_which_statuses_spend_the_budget() -> None:
    assert [s for s in (200, 201, 204, 400, 401, 403, 404, 409, 413, 422, 429, 500, 503) if charged(s)] == [
        400,
        401,
        403,
        413,
        422,
    ]


def test_bucket_goes_into_debt_and_refills_up_to_its_burst() -> None:
    clock = FakeClock()
    budget = FailureBudget(rate=10, burst=5, clock=clock)
    for _ in range(5):
        budget.charge("k", 403)
    assert budget.wait_needed("k") == 0  # the burst is spent, not yet exceeded
    budget.charge("k", 422)
    budget.charge("k", 400)
    assert budget.wait_needed("k") == pytest.approx(0.2)  # two refusals owed at 10/s
    budget.charge("k", 404)
    budget.charge("k", 200)
    assert budget.wait_needed("k") == pytest.approx(0.2)  # neither is a refusal
    assert budget.wait_needed("other") == 0  # one bucket per key
    clock.now += 0.1
    assert budget.wait_needed("k") == pytest.approx(0.1)
    clock.now += 60
    budget.charge("k", 403)
    assert budget.wait_needed("k") == 0  # refilled to the burst (5), not to 600: one refusal leaves 4
    for _ in range(4):
        budget.charge("k", 403)
    assert budget.wait_needed("k") == 0
    budget.charge("k", 403)
    assert budget.wait_needed("k") == pytest.approx(0.1)


def test_held_requests_queue_behind_each_other_and_past_max_wait_get_429() -> None:
    async def run() -> list[float | None]:
        # The bucket's clock stands still (the holding itself sleeps for real): the waits are exact under any load.
        budget = FailureBudget(rate=100, burst=1, max_wait=0.05, clock=FakeClock())
        budget.charge("k", 403)
        budget.charge("k", 403)  # one owed: the next request waits 10 ms
        # Twenty at once: each one held waits behind those before it (10 ms apart), so from the sixth on the
        # wait passes 50 ms and the answer is 429 with a Retry-After of at least a second.
        return await asyncio.gather(*(budget.admit("k") for _ in range(20)))

    outcomes = asyncio.run(run())
    assert outcomes[:5] == [None] * 5
    assert all(o is not None and o >= 1 for o in outcomes[5:])


def test_a_budget_of_rate_zero_is_off() -> None:
    budget = FailureBudget(rate=0, burst=1)
    for _ in range(100):
        budget.charge("k", 403)
    assert asyncio.run(budget.admit("k")) is None


@pytest.fixture(scope="module")
def throttled_server(sidecar: ServerProcess, memwrap_home: Path) -> ServerProcess:
    url = embedded_pg.embedded_database_url(memwrap_home / "pg")
    env = {
        "MEMWRAP_DATABASE_URL": url,
        "MEMWRAP_HOME": str(memwrap_home / "server-throttle"),
        "MEMWRAP_API_KEYS": "loop-key:alice,good-key,lost-key",
        "MEMWRAP_FAILURE_RATE": "4",
        "MEMWRAP_FAILURE_BURST": "10",
        "MEMWRAP_FAILURE_MAX_WAIT": "0.5",
    }
    with ServerProcess(env) as server:
        yield server


def _client(server: ServerProcess, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def test_a_key_looping_on_refused_requests_is_held_then_answered_429(throttled_server: ServerProcess) -> None:
    with _client(throttled_server, "loop-key") as looping, _client(throttled_server, "good-key") as good:
        # Within its burst, a refused request is answered as itself.
        assert [looping.get("/v1/banks/bob/memories").status_code for _ in range(10)] == [403] * 10
        # Past it, a storm from many connections: held, and past half a second of holding, 429.
        with ThreadPoolExecutor(16) as pool:
            storm = list(pool.map(lambda _: looping.get("/v1/banks/bob/memories"), range(32)))
        statuses = sorted({r.status_code for r in storm})
        assert statuses == [403, 429], statuses
        refused = next(r for r in storm if r.status_code == 429)
        assert refused.json()["error"]["code"] == "too_many_failures"
        assert int(refused.headers["Retry-After"]) >= 1
        assert "MEMWRAP_FAILURE_RATE" in refused.json()["error"]["message"]

        # Others are not held: another key, the public routes.
        assert good.get("/v1/banks").status_code == 200
        assert httpx.get(throttled_server.url + "/health").status_code == 200

        # The key recovers by itself once it stops: its next request is answered as itself again.
        wait_until(lambda: looping.get("/v1/banks/alice/memories").status_code == 200, timeout=30, interval=0.5)

    log = throttled_server.tail()
    assert "API key #1 is over its failure budget" in log
    assert "loop-key" not in log


def test_not_found_answers_do_not_spend_the_budget(throttled_server: ServerProcess) -> None:
    with _client(throttled_server, "lost-key") as client:
        statuses = {client.get(f"/v1/banks/alice/memories/{uuid.uuid4()}").status_code for _ in range(30)}
    assert statuses == {404}
