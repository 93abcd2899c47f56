"""Retain, a secret split over two turns: the end of a session's last turn and the start of the next one read
together, so a key pasted half in one message and half in the next is redacted in both.

Each half alone is no secret (`ghp_aB3dE5fG7h` is too short to be a token, `J9kL1mN3…` is any word), so the
memory defense of each item passes both, and the two stored turns spelled the key between them. Here, before
an item is defended, the last 64 characters of the session's previous turn (its stored text, or the previous
item of the same session in this call) and the first 64 of the new one are scanned as one text (whitespace at
the joint dropped; glued, then with a space): a finding that crosses the joint is redacted in the new item, and
in the previous turn (the item of this call before it is defended, or the stored unit: its text and search
terms, in place, without a history version: the half is what must not be kept).

Limits: a session is what retain already calls one (metadata `session_id`, or the document id's "session" of
"session:part"); items without one are not joined. Only two consecutive turns are joined (a key in three parts
is found only where two of them make a shape the rules know), and only across 64 characters on each side (a
longer token split near its middle is found when its prefix and enough of its body are within the window). The
previous turn's vector is not recomputed (it holds no text), and facts an LLM already extracted from the
previous turn are left as they are. An entity read from the half (a name of 16 mixed characters) is dropped
when no memory mentions it any more. Two retains of the same session at the same moment may each miss the
other's half.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from memwrap.defense.policy import scan
from memwrap.engine.language.entities import entity_key, extract_entities
from memwrap.engine.language.text import search_text
from memwrap.engine.retain.name_links import link_names
from memwrap.engine.retain.prepare import session_key
from memwrap.engine.retain.write import write_unit_entities
from memwrap.errors import SecretBlockedError
from memwrap.models import RetainItem
from memwrap.store.bank_lock import lock_bank

WINDOW = 64  # characters of each side of the joint that are read together

LAST_UNIT_OF_SESSIONS = """
SELECT DISTINCT ON (session_key) session_key, id, text
FROM memory_units
WHERE bank_id = $1 AND session_key = ANY($2::text[])
ORDER BY session_key, seq DESC
"""

REDACT_TAIL = """
UPDATE memory_units SET text = $4, search_tsv = to_tsvector('english', $5)
WHERE bank_id = $1 AND id = $2 AND text = $3
"""

# The unit's entities unlinked (the half may have been read as a name), to be found again in the mended text.
UNLINK = """
WITH gone AS (DELETE FROM unit_entities WHERE bank_id = $1 AND unit_id = $2 RETURNING entity_id)
UPDATE entities e SET mention_count = greatest(e.mention_count - 1, 0)
FROM gone WHERE e.bank_id = $1 AND e.id = gone.entity_id
RETURNING e.id
"""

# An entity no memory mentions any more goes (its name may be the half: "zmroepQPei3e0Lo5").
DROP_UNMENTIONED = """
DELETE FROM entities e
WHERE e.bank_id = $1 AND e.id = ANY($2::uuid[]) AND e.mention_count = 0
  AND NOT EXISTS (SELECT 1 FROM unit_entities u WHERE u.bank_id = $1 AND u.entity_id = e.id)
"""


def split_secret(before: str, after: str) -> tuple[int, int, int, int, str] | None:
    """A secret that starts at the end of `before` and ends at the start of `after`: (start, end) of its part in
    `before`, (start, end) of its part in `after`, and its kind; None when there is none."""
    tail = before.rstrip()
    head = after.lstrip()
    if not tail or not head:
        return None
    tail = tail[-WINDOW:]
    lead = len(after) - len(head)
    head = head[:WINDOW]
    end_before = len(before.rstrip())
    # What either side holds by itself is its own defense's (a whole token, then "and" glued to it, is no joint).
    # Scanned only for a finding that crosses the joint: nearly every pair of turns has none, and these were two
    # of the four scans of every joint (mend's CPU on 500 short chat turns: 0.13 → 0.08 s).
    own: list[tuple[int, int]] | None = None
    own_head: list[tuple[int, int]] = []
    # Glued (a token cut in two) or with a space (a card's groups, "4111 1111" then "1111 1111").
    for glue in ("", " "):
        joint = len(tail) + len(glue)
        for finding in scan(tail + glue + head):
            if not (finding.start < len(tail) and finding.end > joint):
                continue
            if own is None:
                own = [(f.start, f.end) for f in scan(tail)]
                own_head = [(f.start, f.end) for f in scan(head)]
            if any(end > finding.start for _, end in own) or any(start < finding.end - joint for start, _ in own_head):
                continue
            back = len(tail) - finding.start
            return end_before - back, end_before, lead, lead + finding.end - joint, finding.kind
    return None


async def mend(pool: Any, bank_id: str, items: Sequence[RetainItem], policy: str) -> list[RetainItem]:
    """`items` with the halves of every secret split between two turns of a session redacted (the stored
    previous turn too). Raises SecretBlockedError under the 'block' policy."""
    out = list(items)
    keys = [session_key(item) for item in out]
    sessions = sorted({key for key in keys if key})
    if policy == "off" or not sessions:
        return out
    rows = await pool.fetch(LAST_UNIT_OF_SESSIONS, bank_id, sessions)
    # Per session, the turn before: ("unit", its id, its text) or ("item", its index here, its content).
    last: dict[str, tuple[str, Any, str]] = {r["session_key"]: ("unit", r["id"], r["text"]) for r in rows}
    for index, key in enumerate(keys):
        if key is None:
            continue
        item = out[index]
        before = last.get(key)
        found = split_secret(before[2], item.content) if before is not None else None
        if before is not None and found is not None:
            start, end, head_start, head_end, kind = found
            if policy == "block":
                raise SecretBlockedError(
                    f"Not stored: the start of this turn and the end of the one before it in session {key!r} "
                    f"read as one secret ({kind}), and this bank's memory-defense policy is 'block'. Remove it, "
                    "or set the policy to 'redact'."
                )
            marker = f"[REDACTED:{kind}]"
            item = item.model_copy(update={"content": item.content[:head_start] + marker + item.content[head_end:]})
            out[index] = item
            where, ref, text = before
            mended = text[:start] + marker + text[end:]
            if where == "item":
                out[ref] = out[ref].model_copy(update={"content": mended})
            else:
                await _redact_stored(pool, bank_id, ref, text, mended)
        last[key] = ("item", index, item.content)
    return out


async def _redact_stored(pool: Any, bank_id: str, unit_id: UUID, text: str, mended: str) -> None:
    """The stored turn's text, search terms and entities as the mended text has them."""
    async with pool.acquire() as conn, conn.transaction():
        await lock_bank(conn, bank_id)  # before the entities (store/bank_lock.py)
        # Only if the text is still what was read (a concurrent update wins; its own defense ran on it).
        status = await conn.execute(REDACT_TAIL, bank_id, unit_id, text, mended, search_text(mended))
        if status.endswith(" 0"):
            return
        unlinked = [r["id"] for r in await conn.fetch(UNLINK, bank_id, unit_id)]
        entities: dict[str, str] = {}
        for name in extract_entities(mended):
            entities.setdefault(entity_key(name), name)
        await write_unit_entities(conn, bank_id, [(unit_id, entities)])
        await link_names(conn, bank_id, entities)
        await conn.execute(DROP_UNMENTIONED, bank_id, unlinked)
