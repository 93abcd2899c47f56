"""Shared fixtures: one real embedded PostgreSQL for the whole run (fresh data directory), a fresh bank per test."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from database import Database
from hypothesis import settings as hypothesis_settings

from memwrap import Memory
from memwrap.config import load_settings

# The suite is a gate: the same generated examples on every run, so that a case found by chance cannot turn CI red
# on an unrelated change. `HYPOTHESIS_PROFILE=explore` draws new ones (and keeps what fails in .hypothesis/).
hypothesis_settings.register_profile("gate", derandomize=True, database=None)
hypothesis_settings.register_profile("explore", derandomize=False)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "gate"))

pytest_plugins = ["llm_fixtures"]  # the fake LLM server (`server`, `fake`) and engines on it

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# No background consolidation unless a test asks for it: other tests must not see observations appear.
os.environ.setdefault("MEMWRAP_WORKER", "off")

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


# The README's test command hands whole modules to one worker per core (`-n auto --dist loadfile`), in collection
# order. The longest modules go first, so that each runs beside the others instead of alone at the end: measured
# 2026-12-07 (2 workers, quiet), schemathesis' run alone took 402 s of a 1,047 s suite, started last.
LONGEST_FIRST = (
    "test_server_robustness.py",
    "test_lifecycle.py",
    "test_evidence_context.py",
    "test_server_fuzz.py",
    "test_cli.py",
    "test_embedded_pg_exits.py",
    "test_graph_plan.py",
    "test_wrap_failopen.py",
    "test_server_hardening.py",
    "test_fairness.py",
    "test_webhooks.py",
    "test_bench_smoke.py",
)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores. The suite's tests wait on child processes, servers and their
    databases much of the time (2 workers on 2 cores kept the CPU 75% busy: 29 CPU-minutes in 19.4 minutes,
    2026-12-07); a third worker fills those waits (the same tree, back to back: 1,158 s with 2 workers, 1,056 s
    with 3). PYTEST_XDIST_AUTO_NUM_WORKERS still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    return len(os.sched_getaffinity(0)) + 1


def pytest_configure(config: pytest.Config) -> None:
    # xdist would otherwise hand the modules out by their number of tests, most first (its --loadscope-reorder):
    # the order above is by time, which is what keeps a worker from idling at the end.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: at for at, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the others keep their order


def _new_home(prefix: str) -> Path:
    # Not under pytest's tmp_path: pytest resets its base folder to mode 0700 whenever a pytest session starts,
    # and the embedded PostgreSQL runs as another user (when we are root) that must traverse the path.
    return Path(tempfile.mkdtemp(prefix=prefix))


@pytest.fixture(scope="session")
def memwrap_home() -> Iterator[Path]:
    home = _new_home("memwrap-tests-")
    os.environ["MEMWRAP_HOME"] = str(home)  # anything that builds its own Memory() lands here too
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def fresh_home() -> Iterator[Path]:
    """A data directory of its own, for tests that need a separate database server."""
    home = _new_home("memwrap-test-home-")
    yield home
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def memory(memwrap_home: Path) -> Iterator[Memory]:
    mem = Memory(home=memwrap_home)
    yield mem
    mem.close()


@pytest.fixture(scope="module")
def mem(memwrap_home: Path) -> Iterator[Memory]:
    """A Memory of the module's own with an inline worker, quick to react (the session's `memory` may run a job
    too). Modules that need another Memory (an LLM, a database of its own) define their own `mem`."""
    settings = load_settings(
        home=memwrap_home,
        worker="inline",
        worker_poll_seconds=0.05,
        consolidation_delay_seconds=0.0,
        mental_model_refresh_delay_seconds=0.05,
    )
    with Memory(settings=settings) as memory:
        yield memory


@pytest.fixture(scope="session")
def db(memory: Memory) -> Database:
    """SQL on the run's database (the one `memory`, `mem` and the modules' engines use, its tables created) for
    tests that check stored rows: `await db.fetch(...)` in async tests, `db.blocking.fetch(...)` in synchronous
    ones."""
    return Database.of(memory)


@pytest.fixture
def bank() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"evaluation data not found at {SHARED_DATA}")
    return SHARED_DATA
