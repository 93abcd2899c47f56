"""Standing instructions come back for the tasks they apply to.

"Always format code with black" was said months ago; today's request, "write a function that dedupes the log
lines", shares no word with it and little meaning, so no arm finds it. When the request is a task of a domain
(language/instructions.py: code, writing, or any task), the bank's standing instructions of that domain (and of
no particular domain) are read through their partial index (migration 0017) and lead the list: an instruction is
short, and it governs how the answer is written. A question that is no task (the common case) costs one regex.

A task whose domain its words do not tell ("add some diagnostics to the sync daemon", "how do I paginate the audit
endpoint?": no word of language/instructions.py's lists) gets the instructions of every domain: the lists are
short, and a coding session's requests rarely name "code" (issue 36: such requests found none of the bank's code
instructions). At most MAX_STANDING lines, the newest first, so the cost stays a few short lines.
"""

from __future__ import annotations

from collections.abc import Sequence

from memwrap.engine.language.instructions import DOMAIN_RULES, task_domains
from memwrap.engine.recall import details
from memwrap.engine.recall.arms import Filters
from memwrap.models import RecalledMemory
from memwrap.store.pg_types import Executor

# At most this many instructions lead the list (the newest first): room is left for the memories the task is about.
MAX_STANDING = 4
# Every domain an instruction can have: what a task of no known domain ("any") reads.
ALL_DOMAINS = [*(domain for domain, _rule in DOMAIN_RULES), "any"]

STANDING = """
SELECT NULL::uuid AS hit, {columns}
FROM memory_units m
WHERE m.bank_id = $1 AND m.standing = ANY($2::text[]) AND m.standing IS NOT NULL AND ({filters})
ORDER BY m.mentioned_at DESC
LIMIT $3
"""


async def standing_instructions(db: Executor, filters: dict[str, Filters], question: str) -> list[RecalledMemory]:
    """The banks' standing instructions for this task (none, and no query, for a question that is no task), newest
    first. They depend on the question alone, not on what the arms find: recall reads them (`db`: its pool) while
    the arms run."""
    domains = task_domains(question)
    if not domains:
        return []
    if domains == ["any"]:  # a task, of no domain its words tell: every domain's instructions may apply
        domains = ALL_DOMAINS
    found: list[RecalledMemory] = []
    for bank, bank_filters in filters.items():
        where, params = bank_filters.sql("m", 4)
        sql = STANDING.format(columns=details.COLUMNS, filters=where)
        for row in await db.fetch(sql, bank, domains, MAX_STANDING, *params):
            found.append(details.memory(bank, row, 0.0, {}))
    return found[:MAX_STANDING]


def lead_with(ranked: Sequence[RecalledMemory], found: Sequence[RecalledMemory]) -> list[RecalledMemory]:
    """`ranked` with the standing instructions `found` first (those already in it move up)."""
    if not found:
        return list(ranked)
    present = {(m.bank_id, m.id): m for m in ranked}
    top = max((m.score for m in ranked), default=0.0)
    lead: list[RecalledMemory] = []
    for rank, memory in enumerate(found, start=1):
        chosen = present.get((memory.bank_id, memory.id), memory)
        chosen.score = max(chosen.score, top)
        chosen.arms["standing"] = rank
        lead.append(chosen)
    placed = {(m.bank_id, m.id) for m in lead}
    return lead + [m for m in ranked if (m.bank_id, m.id) not in placed]


__all__ = ["MAX_STANDING", "lead_with", "standing_instructions"]
