"""`prefer_observations`: an observation stands in for the facts it already covers, to save the budget.

When an observation and some of its evidence are both among the ranked candidates, the observation moves up
to the best place any of them had and the covered facts leave the list. Facts it does not cover, and
observations without a covered fact in the list, keep their places.
"""

from __future__ import annotations

from uuid import UUID

from memwrap.models import RecalledMemory
from memwrap.store.pg_types import Executor

EVIDENCE_OF = """
SELECT observation_id, memory_id FROM observation_evidence WHERE bank_id = $1 AND observation_id = ANY($2::uuid[])
"""


async def prefer_observations(db: Executor, bank_id: str, ranked: list[RecalledMemory]) -> list[RecalledMemory]:
    # Only this bank's memories take part (a recall over several banks calls this once per bank).
    observations = [m for m in ranked if m.type == "observation" and m.bank_id in (None, bank_id)]
    if not observations:
        return ranked
    order = {m.id: index for index, m in enumerate(observations)}
    covered_by: dict[UUID, RecalledMemory] = {}
    rows = sorted(await db.fetch(EVIDENCE_OF, bank_id, list(order)), key=lambda r: order[r["observation_id"]])
    by_id = {m.id: m for m in observations}
    for row in rows:
        covered_by.setdefault(row["memory_id"], by_id[row["observation_id"]])
    result: list[RecalledMemory] = []
    placed: set[tuple[str | None, UUID]] = set()
    for memory in ranked:
        ours = memory.bank_id in (None, bank_id)
        stand_in = covered_by.get(memory.id) if memory.type != "observation" and ours else memory
        if stand_in is None:
            result.append(memory)
        elif (stand_in.bank_id, stand_in.id) not in placed:
            if stand_in is not memory:
                stand_in = stand_in.model_copy(update={"score": max(stand_in.score, memory.score)})
            result.append(stand_in)
            placed.add((stand_in.bank_id, stand_in.id))
    return result
