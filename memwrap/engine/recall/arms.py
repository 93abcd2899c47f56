"""The four recall arms. Each is one SQL query returning (memory id, arm score), best first.

Filters shared by every arm: the bank, not invalidated, not expired (`expires_at` not after `now`), optional memory
types, optional tags (any of them), and an optional RecallFilter (metadata, time ranges, documents, sessions;
compiled in filters.py). Each arm applies them before it ranks and cuts, so a filter never hides a memory the
unfiltered arm would have found among those that pass it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

import numpy as np

from memwrap.engine.recall.filters import Params, compile_filter
from memwrap.filters import RecallFilter
from memwrap.store.pg_types import Connection
from memwrap.store.vector_index import dimensions, index_order, index_serves, indexed_distance

Hits = list[tuple[UUID, float]]

# Below this many memories an exact scan beats the approximate index, and is exact.
EXACT_SCAN_MAX = 4000
# A keyword term found in this many memories or more adds little (low idf) and costs a lot: it is left out.
TERM_SCAN_CAP = 2000
# The bank's frequent terms (listed with their count by common_terms.py: FREQUENT_TERM_DF matches or more) are read
# rarest first up to this many rows in all; the rest only score the memories the other terms found.
FREQUENT_READ_BUDGET = 600
# When the rarer terms find too few memories to fill the list, the frequent terms are read rarest first while fewer
# than this many rows have been read (the last term read may pass it); the rest score what was read, as above. A
# question of common words only ("why does the exporter raise KeyError when the record is empty?" in a coding
# session) read every one of them before: 3,754 rows, the keyword arm's tail (issue 36).
FILL_READ_BUDGET = 1500
# A filtered graph arm checks its filter on this many times `limit` of the best reached memories first.
FILTER_FIRST_PASS = 40
# Entities mentioned in more than HUB_SHARE of a bank's memories (at least 20, at most ENTITY_FANOUT_CAP) are hubs:
# too common to tell memories apart (a library name in every answer of a coding session). They lead nowhere.
ENTITY_FANOUT_CAP = 3000
HUB_SHARE = 0.05
# The graph arm reads at most this many entity links in all, rarest entities first: a long technical message
# names dozens of identifiers, and five seeds of them would otherwise reach most of the bank.
REACH_BUDGET = 4000
# Links followed from each seed (its entities; its session neighbours), a bound on a pathological seed.
SEED_LINKS = 256


@dataclass(frozen=True)
class Filters:
    bank_id: str
    types: list[str] | None = None
    tags: list[str] | None = None
    where: RecallFilter | None = None
    now: datetime | None = None  # a memory whose expires_at is not after this is left out (None: the clock's now)
    include_expired: bool = False  # list(include_expired=True): expired memories too
    include_invalidated: bool = False  # list(include_invalidated=True): invalidated memories too

    @property
    def narrowed(self) -> bool:
        """True when only part of the bank may match (beyond leaving out invalidated and expired memories)."""
        return self.types is not None or self.tags is not None or self.where is not None

    def sql(self, alias: str, first_param: int) -> tuple[str, list[object]]:
        """SQL conditions on memory_units `alias` and their parameters, numbered from `first_param`."""
        conditions = [] if self.include_invalidated else [f"{alias}.invalidated_at IS NULL"]
        params = Params(first_param)
        if not self.include_expired:
            now = self.now or datetime.now(UTC)
            conditions.append(
                f"({alias}.expires_at IS NULL OR {alias}.expires_at > {params.add(now, '::timestamptz')})"
            )
        if self.types is not None:
            conditions.append(f"{alias}.fact_type = ANY({params.add(self.types, '::text[]')})")
        if self.tags is not None:
            conditions.append(f"{alias}.tags && {params.add(self.tags, '::text[]')}")
        if self.where is not None:
            conditions.extend(compile_filter(self.where, alias, params, self.bank_id))
        return " AND ".join(conditions) or "TRUE", params.values


async def nearest(conn: Connection, filters: Filters, query_vector: np.ndarray, limit: int, bank_size: int) -> Hits:
    """The `limit` memories nearest the query (cosine similarity), best first, with no similarity floor: one scan
    serves the semantic arm (its floor applied after: `above`) and seeds the graph arm (`graph(seed_ids=)`)."""
    where, params = filters.sql("m", 4)
    # `+ 0` hides the distance from the planner's index matching, forcing the exact scan on small banks.
    # The exact scan breaks ties by id: a copy and its original (an observation and the fact whose words and vector
    # it took) are equally near, and which one makes the cut must not depend on the plan.
    # A big bank asks the index (half precision) for its candidates; `dist`, and so the order they come back in,
    # is the exact distance.
    dim = dimensions(query_vector)
    indexed = await index_serves(conn, bank_size, EXACT_SCAN_MAX)
    order = indexed_distance("m.embedding", "$2", dim) if indexed else "(m.embedding <=> $2) + 0, m.id"
    sql = f"""
        SELECT id, 1 - dist AS score FROM (
            SELECT m.id, m.embedding <=> $2 AS dist, m.mentioned_at
            FROM memory_units m
            WHERE m.bank_id = $1 AND {where}
            ORDER BY {order}
            LIMIT $3
        ) nearest
        ORDER BY dist, mentioned_at DESC, id
    """
    args = (filters.bank_id, query_vector, limit, *params)
    if indexed:
        async with index_order(conn):
            rows = await conn.fetch(sql, *args)
    else:
        rows = await conn.fetch(sql, *args)
    return [(r["id"], float(r["score"])) for r in rows]


def above(hits: Hits, min_similarity: float) -> Hits:
    """The hits whose similarity is at least `min_similarity` (they are best first: a prefix)."""
    return [(memory_id, score) for memory_id, score in hits if score >= min_similarity]


async def semantic(
    conn: Connection,
    filters: Filters,
    query_vector: np.ndarray,
    limit: int,
    bank_size: int,
    min_similarity: float = -1.0,
) -> Hits:
    """The nearest memories at least `min_similarity` similar to the query, best first."""
    return above(await nearest(conn, filters, query_vector, limit, bank_size), min_similarity)


async def keyword(conn: Connection, filters: Filters, query_text: str, limit: int, bank_size: int) -> Hits:
    """Full-text match scored like BM25 (binary term frequency): each query term weighs by its rarity in the bank.

    One pass per term: the term's matches are read once, and their number is the term's document frequency.
    A term matching TERM_SCAN_CAP memories or more is too common to tell them apart and is left out; the bank's
    known common terms (bank_common_terms, see common_terms.py) are left out before reading anything. Not under
    a type or tag filter: a term common in the bank may be rare among, say, its observations.

    Frequent terms (listed with their count, under TERM_SCAN_CAP) are read only while the question's rarer terms
    leave room: rarest first, FREQUENT_READ_BUDGET rows in all; when the rarer terms match fewer than `limit`
    memories, FILL_READ_BUDGET rows (at least the rarest frequent term). A frequent term left unread still scores,
    on the memories the other terms found (its listed count gives its weight). So the arm is exact when the
    question's frequent terms fit the budget, and otherwise ranks the memories the rarer and the cheapest frequent
    terms reach.

    Under a RecallFilter the terms are counted in the whole bank, as unfiltered, and the filter picks among the
    matches read: a selective filter would otherwise read every match of a common term looking for TERM_SCAN_CAP
    that pass (0.9 s for a 0.5% filter in a 100k bank). The unfiltered arm drops those terms anyway, so nothing
    it finds in the filtered set is lost.

    Hits come in BM25 order, each with its *coverage*: the share of the question's term weight (the idf of every
    term looked up, matched in the bank or not) that the memory matches. Fusion weighs the arm's vote by it: a
    memory sharing one incidental word with a paraphrased question is a weaker vote than one matching its names.
    """
    where, params = filters.sql("m", 9)
    bank_wide = filters.where is not None
    use_known = bank_wide or not filters.narrowed
    if bank_wide:
        hit_columns, hit_where, passes, carried = (
            f", ({where}) AS passes",
            "m.invalidated_at IS NULL",
            "AND passes",
            ", passes",
        )
    else:
        hit_columns, hit_where, passes, carried = "", where, "", ""

    def read(terms: str, unread: str) -> str:
        # Each memory read keeps the frequent terms it matches among those that may stay unread (past the budget):
        # they score it below. `unread`: a condition on known term k that holds for every term left unread.
        return f"""
            SELECT t.tsq, hit.*, count(*) OVER (PARTITION BY t.tsq) AS df
            FROM {terms} t
            CROSS JOIN LATERAL (
                SELECT m.id, length(m.search_tsv) AS terms, m.mentioned_at{hit_columns},
                       ARRAY(SELECT k.tsq FROM known k
                             WHERE k.df < $4 AND {unread} AND m.search_tsv @@ k.tsq) AS frequent
                FROM memory_units m
                WHERE m.bank_id = $1 AND m.search_tsv @@ t.tsq AND {hit_where}
                LIMIT $4
            ) hit"""

    unread_frequent = "NOT EXISTS (SELECT 1 FROM frequent_read r WHERE r.tsq = k.tsq)"
    sql = f"""
        WITH lexemes AS (
            SELECT DISTINCT u.lexeme, plainto_tsquery('simple', u.lexeme) AS tsq
            FROM unnest(to_tsvector('english', $2)) AS u
            WHERE numnode(plainto_tsquery('simple', u.lexeme)) > 0
        ), known AS MATERIALIZED (
            -- The question's terms the bank lists as frequent, with their count: rarest first, reading them all up
            -- to this one would read `running` rows.
            SELECT l.tsq, c.df, sum(c.df) OVER (ORDER BY c.df, l.lexeme) AS running
            FROM lexemes l JOIN bank_common_terms c ON c.bank_id = $1 AND c.lexeme = l.lexeme
            WHERE $6
        ), rare AS MATERIALIZED (
            SELECT l.tsq FROM lexemes l WHERE NOT EXISTS (SELECT 1 FROM known k WHERE k.tsq = l.tsq)
        ), rare_matches AS MATERIALIZED ({read("rare", "k.running > $7")}
        ), room AS MATERIALIZED (
            -- Too few memories found by the rarer terms to fill the list: frequent terms are read up to the larger
            -- budget (each one whose reading starts under it).
            SELECT count(DISTINCT id) < $5 AS filling FROM rare_matches
        ), frequent_read AS MATERIALIZED (
            SELECT k.tsq FROM known k, room r
            WHERE k.df < $4 AND (k.running <= $7 OR (r.filling AND k.running - k.df < $8))
        ), frequent_matches AS MATERIALIZED ({read("frequent_read", unread_frequent)}
        ), matches AS (
            SELECT tsq, id, terms, mentioned_at, df{carried}, frequent FROM rare_matches
            UNION ALL
            SELECT tsq, id, terms, mentioned_at, df{carried}, frequent FROM frequent_matches
        ), hits AS (
            -- Each memory read, once per term it matches: the terms read (with their counted df) and, disjoint
            -- from them, the frequent ones left unread (with their listed df; a memory read by several terms
            -- carries them on each row, hence DISTINCT).
            SELECT tsq, id, terms, mentioned_at, df{carried} FROM matches WHERE df < $4
            UNION ALL
            SELECT DISTINCT k.tsq, m.id, m.terms, m.mentioned_at, k.df{carried.replace(" ", " m.")}
            FROM matches m CROSS JOIN LATERAL unnest(m.frequent) AS f(tsq) JOIN known k ON k.tsq = f.tsq
            WHERE cardinality(m.frequent) > 0 AND NOT EXISTS (SELECT 1 FROM frequent_read r WHERE r.tsq = k.tsq)
        ), question AS MATERIALIZED (
            -- The question's whole term weight: every term looked up, those the bank never uses at their highest
            -- idf (df 0), those too common to count left out as they are from the scores. MATERIALIZED: computed
            -- once; inlined, the planner ran it again for every scored memory (353 times: 30 ms of a 32 ms arm).
            SELECT sum(ln(1 + ($3::float8 - d.df + 0.5) / (d.df + 0.5))) AS idf
            FROM (
                SELECT coalesce(k.df, r.df, 0) AS df
                FROM lexemes t
                LEFT JOIN known k ON k.tsq = t.tsq
                LEFT JOIN (SELECT tsq, max(df) AS df FROM matches GROUP BY tsq) r ON r.tsq = t.tsq
            ) d
            WHERE d.df < $4
        ), scored AS (
            SELECT id, max(mentioned_at) AS mentioned_at,
                   sum(ln(1 + ($3::float8 - df + 0.5) / (df + 0.5)) * 2.2
                       / (1 + 1.2 * (0.25 + 0.75 * terms / 20.0))) AS score,
                   sum(ln(1 + ($3::float8 - df + 0.5) / (df + 0.5))) AS idf
            FROM hits
            WHERE true {passes}
            GROUP BY id
        )
        -- Equal texts score equally (up to the order of a float sum): the newer memory goes first.
        SELECT id, s.idf / greatest(q.idf, 1e-9) AS coverage FROM scored s, question q
        ORDER BY round(score::numeric, 9) DESC, mentioned_at DESC, id
        LIMIT $5
    """
    args = [
        filters.bank_id,
        query_text,
        max(bank_size, 1),
        TERM_SCAN_CAP,
        limit,
        use_known,
        FREQUENT_READ_BUDGET,
        FILL_READ_BUDGET,
    ]
    rows = await conn.fetch(sql, *args, *params)
    return [(r["id"], min(1.0, float(r["coverage"]))) for r in rows]


async def graph(
    conn: Connection,
    filters: Filters,
    query_vector: np.ndarray,
    entity_keys: list[str],
    limit: int,
    bank_size: int,
    seeds: int = 5,
    *,
    seed_ids: list[UUID] | None = None,
) -> Hits:
    """Memories reached from the best seeds — the query's own entities and its nearest memories — through shared
    entities (weighted by how rare the entity is) and session links. The seeds stay in the result with a base
    score, so a memory that is both near the query and well connected ranks above one that is only connected.

    `seed_ids`: the nearest memories, best first, when the caller has them already (the semantic arm's scan,
    `nearest`): the arm then reads no vector at all. Otherwise it finds them itself."""
    indexed = seed_ids is None and await index_serves(conn, bank_size, EXACT_SCAN_MAX)
    sql, args = graph_query(
        filters, query_vector, entity_keys, limit, bank_size, seeds, indexed=indexed, seed_ids=seed_ids
    )
    if indexed:
        async with index_order(conn):
            rows = await conn.fetch(sql, *args)
    else:
        rows = await conn.fetch(sql, *args)
    return [(r["id"], float(r["score"])) for r in rows]


def graph_query(
    filters: Filters,
    query_vector: np.ndarray,
    entity_keys: list[str],
    limit: int,
    bank_size: int,
    seeds: int = 5,
    *,
    indexed: bool = False,
    seed_ids: list[UUID] | None = None,
) -> tuple[str, list[object]]:
    """The graph arm's SQL and its arguments (apart from running it, for EXPLAIN in the plan tests).

    Its cost is bounded by what the question touches, never by the bank's hubs or by other banks' rows, and its
    plan does not depend on the planner's statistics: every step from the seeds outwards is a LATERAL lookup
    with a LIMIT on an index that leads with bank_id, which the planner can only run as an index probe per
    outer row. (Written as plain joins, the plan followed the statistics: right after another bank's bulk
    retain, a bank the statistics did not know yet was estimated at a few rows and its joins became nested
    loops over bank-wide scans — 2 s instead of 20 ms until autovacuum's next ANALYZE.)

    The expansion reads at most REACH_BUDGET links: entities are taken rarest first (the highest weight) while
    the mentions read so far stay within it, and each entity's own reach is capped at the hub limit too.

    `seed_ids` given (best first), the seeds are the first `seed_count` of them and `query_vector` is not read.
    """
    seeds = seed_count(bank_size, seeds)
    hub_limit = min(ENTITY_FANOUT_CAP, max(20, int(bank_size * HUB_SHARE)))
    where, params = filters.sql("m", 9)
    # The seeds are the nearest memories, found as the semantic arm finds them (`indexed`: index_serves).
    order = indexed_distance("embedding", "$2", dimensions(query_vector)) if indexed else "(embedding <=> $2) + 0, id"
    # Unfiltered, rank first and look up after: a few hundred rows beat joining every reached one. Filtered, the
    # cut must come after the filter, or a selective filter would leave nothing of the best few hundred; but
    # checking every memory reached is slow when many are. So the filter is checked on the best
    # FILTER_FIRST_PASS × limit first (ties at the cut included, so nothing outside it can outrank what is
    # inside), and on all of them only when that pass left fewer than `limit`: the result is the same as
    # checking everything. (The seeds stay unfiltered: a memory outside the filter may still lead to ones
    # inside it.)
    # Given, the seeds come as ids ($2): the nearest-memory scan is the semantic arm's, done once for both.
    seed_rows = (
        "SELECT id FROM unnest($2::uuid[]) WITH ORDINALITY AS given(id, rank) ORDER BY rank LIMIT $3"
        if seed_ids is not None
        else f"""SELECT id FROM memory_units
            WHERE bank_id = $1 AND invalidated_at IS NULL
            ORDER BY {order}
            LIMIT $3"""
    )
    reach = f"""
        WITH seeds AS MATERIALIZED (
            {seed_rows}
        ), seed_entities AS (
            SELECT ue.entity_id, 1.0 AS weight
            FROM seeds s CROSS JOIN LATERAL (
                SELECT entity_id FROM unit_entities WHERE bank_id = $1 AND unit_id = s.id LIMIT $8
            ) ue
            UNION ALL
            SELECT e.id, 2.0 FROM entities e WHERE e.bank_id = $1 AND e.name_key = ANY($4::text[])
        ), entity_weights AS MATERIALIZED (
            SELECT w.entity_id, w.weight, w.mentions,
                   sum(w.mentions) OVER (ORDER BY w.weight DESC, w.entity_id ROWS UNBOUNDED PRECEDING) AS read_so_far
            FROM (
                SELECT se.entity_id, sum(se.weight) * ln(1 + $5::float8 / greatest(e.mention_count, 1)) AS weight,
                       least(e.mention_count, $6) AS mentions
                FROM seed_entities se CROSS JOIN LATERAL (
                    SELECT mention_count FROM entities WHERE bank_id = $1 AND id = se.entity_id LIMIT 1
                ) e
                WHERE e.mention_count <= $6
                GROUP BY se.entity_id, e.mention_count
            ) w
        ), reached AS (
            SELECT ue.unit_id AS id, ew.weight AS score
            FROM entity_weights ew CROSS JOIN LATERAL (
                SELECT unit_id FROM unit_entities WHERE bank_id = $1 AND entity_id = ew.entity_id LIMIT $6
            ) ue
            WHERE ew.read_so_far - ew.mentions < {REACH_BUDGET}
            UNION ALL
            SELECT l.to_id, 1.0 FROM seeds s CROSS JOIN LATERAL (
                SELECT to_id FROM memory_links WHERE bank_id = $1 AND from_id = s.id LIMIT $8
            ) l
            UNION ALL
            SELECT l.from_id, 1.0 FROM seeds s CROSS JOIN LATERAL (
                SELECT from_id FROM memory_links WHERE bank_id = $1 AND to_id = s.id LIMIT $8
            ) l
        ), scored AS (
            -- Rounded (a float sum's last bits follow the rows' order) and by id: which ties make the cut must
            -- not depend on where the rows happen to be stored.
            SELECT r.id, round(sum(r.score)::numeric, 9) AS score
            FROM (SELECT * FROM reached UNION ALL SELECT id, 1.0 FROM seeds) r
            GROUP BY r.id
        )"""

    # The memories' own rows are looked up one by one (LATERAL, primary key) for the same reason; the LIMIT keeps
    # the planner from flattening the lookup into a join it could hash.
    # (A function, not str.format: `where` may hold braces of its own, a JSON path such as #>> '{}'.)
    def lookup(row: str) -> str:
        return f"""CROSS JOIN LATERAL (
                SELECT m.mentioned_at FROM memory_units m WHERE m.bank_id = $1 AND m.id = {row}.id AND {where}
                LIMIT 1
            ) m"""

    if not filters.narrowed:
        sql = f"""{reach}, best AS (SELECT * FROM scored ORDER BY score DESC, id LIMIT $7 * 4)
            SELECT s.id, s.score
            FROM best s {lookup("s")}
            ORDER BY s.score DESC, m.mentioned_at DESC, s.id
            LIMIT $7
        """
    else:
        sql = f"""{reach}, best AS (
                SELECT * FROM scored ORDER BY score DESC FETCH FIRST ($7 * {FILTER_FIRST_PASS}) ROWS WITH TIES
            ), first_pass AS MATERIALIZED (
                SELECT b.id, b.score, m.mentioned_at
                FROM best b {lookup("b")}
            ), checked AS (
                SELECT * FROM first_pass WHERE (SELECT count(*) FROM first_pass) >= $7
                UNION ALL
                -- Everything, only when the first pass left fewer than `limit` (a one-time filter: otherwise never
                -- run). No anti-join with the first pass: its row estimate of 1 made the planner check 14k rows one
                -- by one instead of joining them with the filter's own (indexed) rows.
                SELECT s.id, s.score, m.mentioned_at
                FROM scored s JOIN memory_units m ON m.bank_id = $1 AND m.id = s.id
                WHERE (SELECT count(*) FROM first_pass) < $7 AND {where}
            )
            SELECT id, score FROM checked c
            ORDER BY score DESC, mentioned_at DESC, id
            LIMIT $7
        """
    args: list[object] = [
        filters.bank_id,
        query_vector if seed_ids is None else seed_ids,
        seeds,
        entity_keys,
        max(bank_size, 1),
        hub_limit,
        limit,
        SEED_LINKS,
        *params,
    ]
    return sql, args


def seed_count(bank_size: int, seeds: int = 5) -> int:
    """How many nearest memories seed the graph arm in a bank of `bank_size`."""
    # In a small bank a few seeds are already much of it; keep some memories left to be reached.
    # (Two at least: one seed alone makes the arm hang on which single memory the embedding puts first.)
    return max(min(2, bank_size), min(seeds, bank_size // 4))


# A memory said inside a time window is about it unless it is dated more than this far from it: "Yesterday I
# finished the script", said on the 23rd, answers "what did she do on the 23rd"; "we'll go to Lapland at Christmas",
# said in April, does not answer "what did I do last spring".
NEAR_DAYS = 31


async def temporal(
    conn: Connection,
    filters: Filters,
    query_vector: np.ndarray,
    start: datetime,
    end: datetime,
    limit: int,
    buckets: int = 8,
) -> Hits:
    """Memories about (or, undated, said during) the window, most relevant first within each slice of the
    window, slices taken in turns so one busy week does not crowd out the rest of "last spring"."""
    where, params = filters.sql("m", 7)
    sql = f"""
        WITH candidates AS (
            SELECT m.id, m.embedding <=> $2 AS dist, coalesce(m.occurred_start, m.mentioned_at) AS at
            FROM memory_units m
            WHERE m.bank_id = $1 AND {where}
              AND (
                -- Overlap of two intervals: a GiST index answers it (a B-tree on the start alone read every
                -- memory dated before the window's end: 31k rows for "last month" in a 100k bank).
                (m.occurred_start IS NOT NULL
                 AND tstzrange(m.occurred_start, greatest(m.occurred_start, m.occurred_end), '[]')
                     && tstzrange($3, $4, '[]'))
                -- Said inside it, and about no time far from it (order.in_window: the same rule).
                OR (m.mentioned_at BETWEEN $3 AND $4
                    AND (m.occurred_start IS NULL
                         OR tstzrange(m.occurred_start, greatest(m.occurred_start, m.occurred_end), '[]')
                            && tstzrange($3 - interval '{NEAR_DAYS} days', $4 + interval '{NEAR_DAYS} days', '[]')))
              )
        ), sliced AS (
            -- Ties broken by id: an observation and the fact whose vector it took are exactly as near, and their
            -- order must not follow the rows' physical order (which an export and import changes).
            SELECT id, dist, row_number() OVER (
                PARTITION BY width_bucket(extract(epoch FROM greatest(least(at, $4), $3)),
                                          extract(epoch FROM $3), extract(epoch FROM $4) + 1, $6)
                ORDER BY dist, id) AS turn
            FROM candidates
        )
        SELECT id, 1 - dist AS score FROM sliced ORDER BY turn, dist, id LIMIT $5
    """
    rows = await conn.fetch(sql, filters.bank_id, query_vector, start, end, limit, buckets, *params)
    return [(r["id"], float(r["score"])) for r in rows]


async def neighbours(conn: Connection, filters: Filters, ids: list[UUID]) -> list[tuple[UUID, UUID]]:
    """(hit id, neighbour id) for the session neighbours — the turn before and after — of each hit."""
    where, params = filters.sql("m", 3)
    sql = f"""
        SELECT x.hit, x.neighbour FROM (
            SELECT l.from_id AS hit, l.to_id AS neighbour FROM memory_links l
            WHERE l.bank_id = $1 AND l.from_id = ANY($2::uuid[]) AND l.kind = 'next'
            UNION ALL
            SELECT l.to_id, l.from_id FROM memory_links l
            WHERE l.bank_id = $1 AND l.to_id = ANY($2::uuid[]) AND l.kind = 'next'
        ) x JOIN memory_units m ON m.bank_id = $1 AND m.id = x.neighbour
        WHERE {where}
        -- A hit's two neighbours get the same score: their order is the session's, not the rows' storage order.
        ORDER BY array_position($2::uuid[], x.hit), m.mentioned_at, x.neighbour
    """
    rows = await conn.fetch(sql, filters.bank_id, ids, *params)
    return [(r["hit"], r["neighbour"]) for r in rows]
