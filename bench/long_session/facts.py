"""Fact threads of a long technical session: what is stated (in order, one session each) and what is asked.

A thread is drawn from a seeded `random.Random`: its statements are placed into distinct sessions in order by
the generator, and each of its questions names the statements that answer it (all of them: for a
knowledge update the whole chain, the newest statement being the answer; for counting every occurrence).
Statement wordings and question wordings come from different template lists, so a question paraphrases its
evidence instead of repeating it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.long_session import vocab as v

QUESTION_TYPES: tuple[str, ...] = (
    "single-fact",
    "knowledge-update",
    "temporal",
    "event-ordering",
    "summarisation",
    "instruction-following",
    "counting",
)


@dataclass
class Statement:
    role: str  # "user" or "assistant"
    text: str  # the sentence(s) carrying the fact; the generator may wrap it into a longer message


@dataclass
class Thread:
    kind: str  # one of QUESTION_TYPES
    key: str  # unique per bank (what the thread is about), so two threads never share a subject
    statements: list[Statement]
    questions: list[str]  # paraphrases; the generator keeps one (or two for some types)
    answer: str  # may hold {date0}, {date1}, ... filled with the statements' session dates
    gap_days: int = 0  # temporal "how long between": filled in by the generator
    extra: dict[str, str] = field(default_factory=dict)


Pick = Callable[[tuple[str, ...]], str]


# Thread builders are tables of wordings: kept in this dense layout on purpose.
# fmt: off
def _versions(rng: random.Random, steps: int) -> list[str]:
    major, minor = rng.randint(1, 4), rng.randint(0, 12)
    out = []
    for _ in range(steps):
        out.append(f"{major}.{minor}.{rng.randint(0, 9)}")
        if rng.random() < 0.4:
            major, minor = major + 1, rng.randint(0, 3)
        else:
            minor += rng.randint(1, 4)
    return out


def single_facts(rng: random.Random, project: str) -> list[Thread]:
    c = rng.choice
    comp = rng.sample(v.COMPONENTS, 3)
    port, hour, minute = rng.choice((8443, 9443, 7080, 8181, 5601)), rng.randint(0, 5), rng.choice((0, 15, 30, 45))
    owner = c(("Priya", "Marco", "Hana", "Kofi", "Lena", "Tomas", "Yara", "Dmitri"))
    days = rng.choice((14, 30, 45, 90))
    size = rng.choice((25, 50, 100, 200))
    slo = rng.choice(("99.5", "99.9", "99.95"))
    weekday = c(("Tuesday", "Wednesday", "Thursday"))
    env = c(("PAYFLOW_SECRET", "STRIPE_RESTRICTED_KEY", "BILLING_API_TOKEN", "PSP_CLIENT_SECRET"))
    bucket = f"{project}-artifacts-{rng.randint(10, 99)}"
    branch = c(("trunk", "develop", "mainline"))
    return [
        Thread("single-fact", "port", [Statement("user", c((
            f"fyi the staging box answers on port {port} now, not the default one.",
            f"Staging is reachable on :{port} (the old port is firewalled).",
            f"Note to self: pre-prod listens on {port}.",
        )))], [
            "Which port does our pre-production environment listen on?",
            "What port should I point my client at to reach staging?",
        ], str(port)),
        Thread("single-fact", "cron", [Statement("user", c((
            f"The nightly export cron fires at {hour:02d}:{minute:02d} UTC, don't deploy around then.",
            f"Heads up: the scheduled dump job starts {hour:02d}:{minute:02d} UTC every night.",
        )))], [
            "At what time of night does the scheduled export kick off?",
            "When does the nightly dump run, in UTC?",
        ], f"{hour:02d}:{minute:02d} UTC"),
        Thread("single-fact", "owner", [Statement("user", c((
            f"{owner} owns the {comp[0]}; ask them before changing anything in it.",
            f"Any change to the {comp[0]} needs a review from {owner}, it's their baby.",
        )))], [
            f"Who do I need to get sign-off from before touching the {comp[0]}?",
            f"Whose approval does a change to the {comp[0]} require?",
        ], owner),
        Thread("single-fact", "retention", [Statement("user", c((
            f"We keep application logs for {days} days in Loki, after that they're gone.",
            f"Log retention is {days} days; older lines are dropped by the compactor.",
        )))], [
            "How long do we retain application logs?",
            "After how many days are our logs deleted?",
        ], f"{days} days"),
        Thread("single-fact", "page-size", [Statement("assistant", c((
            f"I set the list endpoints' default page size to {size}, with a hard cap of {size * 4}.",
            f"List endpoints now return {size} rows per page unless `limit` says otherwise.",
        )))], [
            "By default, how many rows does a list endpoint return per page?",
            "What default limit did we choose for pagination?",
        ], str(size)),
        Thread("single-fact", "slo", [Statement("user", c((
            f"We promised {slo}% availability for the {comp[1]} in the contract.",
            f"The {comp[1]} SLO is {slo}% monthly uptime.",
        )))], [
            f"What uptime target did we commit to for the {comp[1]}?",
            f"How available is the {comp[1]} supposed to be, according to our agreement?",
        ], f"{slo}%"),
        Thread("single-fact", "release-day", [Statement("user", c((
            f"Release branches get cut every {weekday} morning.",
            f"We branch for release on {weekday}s, so land features by then.",
        )))], [
            "On which weekday do we cut the release branch?",
            "What's the deadline day each week for landing features before release?",
        ], weekday),
        Thread("single-fact", "secret-env", [Statement("user", c((
            f"The payment provider key is read from `{env}`; never hardcode it.",
            f"Creds for the PSP come from the `{env}` env var.",
        )))], [
            "Which environment variable holds the payments provider's secret?",
            "Where does the app get the credentials for the payment processor from?",
        ], env),
        Thread("single-fact", "bucket", [Statement("assistant", c((
            f"CI now uploads build artifacts to the S3 bucket `{bucket}`.",
            f"Artifacts will live in `s3://{bucket}/` from now on.",
        )))], [
            "Where are our build outputs stored?",
            "Which object-storage location holds the CI artifacts?",
        ], bucket),
        Thread("single-fact", "branch", [Statement("user", c((
            f"We squash-merge everything into `{branch}`; no merge commits please.",
            f"PRs target `{branch}` and get squashed on merge.",
        )))], [
            "What is our main integration branch called?",
            "How do pull requests get merged here, and into which branch?",
        ], branch),
    ]


def knowledge_updates(rng: random.Random, project: str) -> list[Thread]:
    comp = rng.sample(v.COMPONENTS, 2)
    ms = sorted(rng.sample(range(120, 480, 10), 3), reverse=True)
    lib = rng.choice(("pydantic", "SQLAlchemy", "FastAPI", "httpx", "celery", "numpy"))
    versions = _versions(rng, 3)
    old_mod, new_mod = f"{rng.choice(v.VERBS)}_{rng.choice(v.NOUNS)}", f"{rng.choice(v.NOUNS)}_{rng.choice(v.MODULES)}"
    workers = sorted(rng.sample((2, 4, 6, 8, 12, 16), 2))
    migrations = [
        ("database", "SQLite", "Postgres", "Which database engine backs the app now?"),
        ("task queue", "celery", "dramatiq", "What do we use for background jobs at the moment?"),
        ("CI", "Jenkins", "GitHub Actions", "Where do our builds and tests run today?"),
        ("hosting", "Heroku", "Fly.io", "Where is the production app deployed these days?"),
    ]
    rng.shuffle(migrations)
    threads = [
        Thread("knowledge-update", "latency", [
            Statement("user", f"Load test result: p95 for the {comp[0]} is {ms[0]} ms, way too slow."),
            Statement("user", rng.choice((
                f"After the index change the {comp[0]}'s p95 went down to {ms[1]} ms.",
                f"New numbers: the {comp[0]} is at {ms[1]} ms at the 95th percentile.",
            ))),
            Statement("assistant", rng.choice((
                f"With the cache in place the {comp[0]} now averages {ms[2]} ms at p95 in the last run.",
                f"That brings the {comp[0]} tail (p95) to {ms[2]} ms.",
            ))),
        ], [
            f"How slow is the {comp[0]} at the tail right now?",
            f"What's the latest 95th-percentile latency we measured for the {comp[0]}?",
        ], f"{ms[2]} ms (was {ms[1]}, before that {ms[0]})"),
        Thread("knowledge-update", "version", [
            Statement("user", f"We're pinned to {lib}=={versions[0]} because of the plugin."),
            Statement("user", f"Bumped {lib} to {versions[1]}, the plugin finally supports it."),
            Statement("assistant", f"The lock file now resolves {lib} {versions[2]}; the changelog lists no breaks."),
        ], [
            f"Which release of {lib} does the project currently use?",
            f"What {lib} version are we on after the latest upgrade?",
        ], versions[2]),
        Thread("knowledge-update", "rename", [
            Statement("user", f"The entry point for the {comp[1]} is `{project}/{old_mod}.py`."),
            Statement("user", rng.choice((
                f"Renamed `{old_mod}.py` to `{new_mod}.py`, the old name was misleading.",
                f"`{old_mod}` is now called `{new_mod}`; update your imports.",
            ))),
        ], [
            f"What is the module that starts the {comp[1]} called now?",
            f"Which file should I open to find the {comp[1]}'s entry point?",
        ], f"{new_mod}.py (formerly {old_mod}.py)"),
        Thread("knowledge-update", "workers", [
            Statement("user", f"WORKER_CONCURRENCY is {workers[0]} in production."),
            Statement("user", f"Raised the worker concurrency to {workers[1]} after the backlog last night."),
        ], [
            "How many worker processes run in prod now?",
            "What's the current background worker parallelism?",
        ], str(workers[1])),
    ]
    for thing, old, new, question in migrations[:2]:
        threads.append(Thread("knowledge-update", f"migration-{thing}", [
            Statement("user", rng.choice((
                f"For now the {thing} is {old}, good enough for the prototype.",
                f"We run on {old} for the {thing} at the moment.",
            ))),
            Statement("user", rng.choice((
                f"We moved the {thing} from {old} to {new} over the weekend.",
                f"Migration done: {new} replaces {old} as our {thing}.",
            ))),
        ], [question], f"{new} (moved from {old})"))
    return threads


EVENTS = (
    ("shipped the v2 API", "release the second version of the public API"),
    ("rotated the database credentials", "change the DB passwords"),
    ("turned on the `new-checkout` flag for everyone", "enable the new checkout for all users"),
    ("had the outage where the disk of the primary filled up", "run out of disk on the main database server"),
    ("onboarded our first enterprise customer", "sign up the first big corporate client"),
    ("switched on nightly backups to cold storage", "start archiving backups every night"),
)
PERF_STEPS = (
    "added a read-through cache in front of the hot query",
    "switched JSON serialisation to orjson",
    "added a composite index on (account_id, created_at)",
    "moved the PDF rendering into a background task",
    "replaced N+1 lookups with a single batched query",
)
SAGAS = {
    "auth redesign": (
        "I want to redo auth: sessions in Redis are a pain, thinking about signed tokens.",
        "Decision: we go with short-lived JWTs plus opaque refresh tokens stored server-side.",
        "Refresh-token rotation is implemented; reuse of an old token revokes the whole family.",
        "The new auth is rolled out to 100% of traffic and the Redis session store is decommissioned.",
    ),
    "flaky integration test": (
        "test_sync_roundtrip failed again on CI but passes locally, annoying.",
        "Looks like the flaky test depends on wall-clock time; it breaks around midnight UTC.",
        "Froze the clock with a fixture in that test; it has been green for a week.",
    ),
    "search relevance work": (
        "Users complain search results are bad for short queries.",
        "We added trigram matching as a fallback for queries under four characters.",
        "Added per-field boosts: titles weigh three times the body now.",
        "Search relevance survey came back: satisfaction went from 61% to 78%.",
    ),
}
PREFERENCES = (
    ("Always format Python with black, line length 100.", "Clean up this helper and give me the final file."),
    ("I prefer minimal dependencies: stdlib first, a new package only with a good reason.",
     "I need to parse ISO dates and durations in the importer, how should I do it?"),
    ("Use type hints everywhere, including return types.", "Write a function that merges two settings dicts."),
    ("Tests are pytest only, never unittest classes.", "Add tests for the retry helper."),
    ("For logging use structlog, not print or the bare logging module.", "Add some diagnostics to the sync daemon."),
    ("Give me code first and the explanation after, keep the prose short.", "How do I paginate the audit endpoint?"),
)
INCIDENTS = (
    ("the nightly build broke because test_export_large timed out",
     "How many times has the nightly failed on that export test timing out?"),
    ("we had to roll back a deploy", "How often did we need to revert a release?"),
    ("a customer reported duplicate invoices", "How many duplicate-invoice complaints have come in so far?"),
    ("the on-call got paged because the queue backlog passed 10k", "How many times was someone paged for the backlog?"),
)


def temporal(rng: random.Random) -> list[Thread]:
    events = rng.sample(EVENTS, 5)
    threads = [
        Thread("temporal", f"event-{i}", [Statement("user", rng.choice((
            f"Big day: we {past} today.", f"Just a note: we {past} this morning.", f"Finally {past}, phew.",
        )))], [rng.choice((f"When did we {plain}?", f"On what date did we {plain}?"))], "{date0}")
        for i, (past, plain) in enumerate(events[:3])
    ]
    (past_a, plain_a), (past_b, plain_b) = events[3], events[4]
    threads.append(Thread("temporal", "gap", [
        Statement("user", f"FYI we {past_b} yesterday."),
        Statement("user", f"Heads up, we {past_a} today."),
    ], [f"How many days passed between the day we {plain_b} and the day we {plain_a}?"], "{gap} days"))
    return threads


def event_ordering(rng: random.Random) -> list[Thread]:
    comp = rng.sample(v.COMPONENTS, 2)
    out = []
    for i, component in enumerate(comp):
        steps = rng.sample(PERF_STEPS, rng.randint(3, 4))
        out.append(Thread("event-ordering", f"order-{i}", [
            Statement(rng.choice(("user", "assistant")), f"For the {component} we {step}.") for step in steps
        ], [rng.choice((
            f"In what order did we try the speed-ups on the {component}?",
            f"List the performance changes to the {component}, earliest first.",
        ))], " -> ".join(steps)))
    return out


def summaries(rng: random.Random) -> list[Thread]:
    out = []
    for name in rng.sample(sorted(SAGAS), 3):
        out.append(Thread("summarisation", f"saga-{name}", [Statement("user", s) for s in SAGAS[name]], [
            rng.choice((
                f"Summarise how the {name} progressed over time.",
                f"Give me a recap of the whole {name} story.",
            ))
        ], " / ".join(SAGAS[name])))
    return out


def instructions(rng: random.Random) -> list[Thread]:
    return [
        Thread("instruction-following", f"pref-{i}", [Statement("user", pref)], [request], pref)
        for i, (pref, request) in enumerate(rng.sample(PREFERENCES, 4))
    ]


def counting(rng: random.Random) -> list[Thread]:
    out = []
    for i, (what, question) in enumerate(rng.sample(INCIDENTS, 3)):
        n = rng.randint(2, 5)
        texts = [f"Ugh, {what}." if k == 0 else rng.choice((
            f"And again: {what}.", f"Same thing once more, {what}.", f"Not again... {what}.",
        )) for k in range(n)]
        out.append(Thread("counting", f"count-{i}", [Statement("user", t) for t in texts], [question], str(n)))
    return out


# fmt: on


def all_threads(rng: random.Random, project: str) -> list[Thread]:
    threads = (
        single_facts(rng, project)
        + knowledge_updates(rng, project)
        + temporal(rng)
        + event_ordering(rng)
        + summaries(rng)
        + instructions(rng)
        + counting(rng)
    )
    rng.shuffle(threads)
    return threads
