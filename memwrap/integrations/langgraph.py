"""LangGraph: long-term memory for a graph — a `BaseStore` whose items are memwrap memories.

    from memwrap.integrations.langgraph import MemwrapStore

    store = MemwrapStore(bank_id="my-app")                # memory=Memory(...) or "http://127.0.0.1:8765"
    graph = builder.compile(store=store)                  # nodes get it as `store` / `runtime.store`
    store.put(("memories", "alice"), "food", {"text": "Alice is vegetarian"})
    store.search(("memories", "alice"), query="what does she eat?")   # memwrap recall, best first

Where an item goes (namespace → bank, metadata and tags):
- The bank: `bank_id="my-app"` puts every namespace in that one bank. `bank_id=None` makes the namespace's first
  label the bank (`("alice", "memories")` → bank "alice"), so a wrapped chat model with `bank_id="alice"` recalls
  what the graph stored for Alice. A search or `list_namespaces` whose prefix does not name the first label then
  reads every bank.
- An item is one memory (a long text may be split into a few; a configured extraction LLM may turn it into facts:
  they all carry the item). Its `document_id` is `langgraph/<namespace labels>/<key>` (percent-encoded), which is
  how `get`, `put` and `delete` find it. Its metadata `langgraph` holds the whole item: `namespace` (the tuple, and
  `ns` = {"0": label, ...} for prefix filters), `key`, `value` (the dict, whole), `indexed`, `created_at`,
  `updated_at`. Its tag is `langgraph`, so a recall can be narrowed to (or away from) what graphs stored.
- Its text, what recall embeds and what a wrapped model sees in its memory block, is the value at the store's
  `index` fields (LangGraph's paths: "$" the whole value, "text", "a.b", "items[*].name"); a put's own
  `index=[...]` overrides them. For "$", a value with one string field is that string, else `field: value` per
  field, joined by "; ". `index=False`: the item still needs a text (the value, rendered as for "$"), but semantic
  search skips it (`indexed` is false), as LangGraph's stores do.

The verbs: `put` on a new key is a retain; on an existing key an update of the same memory (memwrap keeps the old
version in its history: `Memory.history(bank, id)`); `delete` (a put of None) deletes the memory, and what memwrap
learnt from it forgets it. Not invalidate: LangGraph's delete is final — the key is free and nothing of the value
stays behind — while an invalidated memory keeps its text in the bank. An app that wants reversible forgetting
calls memwrap's `invalidate` on the memory itself (the item is then hidden from `get` and `search`; a later put of
its key brings the memory back, with the new value).

`search` with a query ranks every item under the namespace prefix that matches the `filter`, as LangGraph's stores
do: first what recall finds for the query (scores are recall's fused scores, best first), then the other matching
items (those recall left out as irrelevant, and `index=False` ones), oldest first with score None, so a query
search never returns fewer items than the same search without a query; without a query, a listing, oldest first.
`filter` keys are value fields (dotted, or a nested dict, for nested ones), with a value or `{"$eq"|"$ne"|"$gt"|
"$gte"|"$lt"|"$lte"|"$in"|"$nin": ...}` (numbers compare as numbers, strings as text); memwrap applies them in its
query, on the stored value. `list_namespaces` is sorted, with LangGraph's prefix, suffix ("*" a wildcard label),
max_depth, limit and offset.

`batch` answers its ops in their order. As in LangGraph's InMemoryStore and PostgresStore, its reads see the store
as the batch found it and its writes come after them, in order (of several puts to one key the last stands).
`abatch` runs the same core on the Memory's loop, awaited without blocking the caller's.

TTL (`supports_ttl` is True), on memwrap's own expiry: a put's `ttl` (minutes, or the store's `ttl={"default_ttl":
..., "refresh_on_read": ...}`) sets the memories' `expires_at` to now + ttl (no ttl: they never expire); from then
on the item is gone from `get`, `search` and `list_namespaces` (as from recall). A read with `refresh_ttl` (by
default `refresh_on_read`, True) moves the expiry of the items it returns to now + their ttl again. memwrap hides an
expired memory at once; its maintenance removes it later, so no sweeper runs in the store.

memwrap's memory defense applies to a put as to any retain: a secret in the value is stored redacted (the put is
refused under the bank's 'block' policy), and a key or namespace label that looks like a secret is refused
(InvalidInputError), since redacting it would lose the item.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from memwrap.integrations import needs

try:
    from langgraph.store.base import BaseStore
except ImportError as exc:  # the [langgraph] extra
    raise ImportError(needs("langgraph", "langgraph", "langgraph")) from exc
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from memwrap.api import AsyncMemory, Memory
from memwrap.errors import InvalidInputError
from memwrap.integrations.langgraph_items import (
    META,
    as_item,
    as_search_item,
    document_id_of,
    indexed_text,
    matches,
    prefix_conditions,
    ttl_minutes,
    until_wildcard,
    value_conditions,
)

# MAX_RECALL_BANKS, MAX_TOP_K: the bounds of one recall, as memwrap/verbs.py declares them
from memwrap.models import MAX_PAGE, MAX_RECALL_BANKS, MAX_TOP_K, MemoryRecord, RecalledMemory
from memwrap.wrappers.memories import default_memory, resolve_memory

TAG = "langgraph"  # on every memory the store writes
# A recall over-fetches: a few memories may stand for one item (a split text, extracted facts).
OVERFETCH = 3


class MemwrapStore(BaseStore):
    """A LangGraph `BaseStore` backed by memwrap (see the module docstring for where items go).

    `memory`: a `Memory`, a sidecar URL ("http://127.0.0.1:8765", with `api_key`), or None for the process's
    default `Memory()` (MEMWRAP_HOME). `bank_id`: the one bank of every namespace, or None for the namespace's first
    label. `index`: the value fields whose text is remembered and searched (LangGraph paths; default the whole
    value), or a LangGraph `IndexConfig` ({"fields": [...], "dims": ..., "embed": ...}) whose `fields` are taken
    (memwrap embeds with its own model, so `dims` and `embed` are not used)."""

    supports_ttl = True

    def __init__(
        self,
        memory: Memory | str | None = None,
        *,
        bank_id: str | None,
        index: Sequence[str] | Mapping[str, Any] = ("$",),
        ttl: TTLConfig | None = None,
        api_key: str | None = None,
    ) -> None:
        resolved = resolve_memory(memory, api_key=api_key)
        if resolved is not None and not isinstance(resolved, Memory):
            raise TypeError(
                f"MemwrapStore takes a Memory (its sync and async paths share it) or a sidecar URL, not "
                f"{type(resolved).__name__}."
            )
        self._memory = resolved
        # `index_config`, as LangGraph's stores have it (apps and LangMem read it to know search is semantic): the
        # IndexConfig given, or one naming the fields. memwrap embeds with its own model, so `dims` and `embed` are
        # kept as given but not used.
        config: dict[str, Any] = {}
        if isinstance(index, Mapping):
            config = dict(index)
            index = index.get("fields") or ["$"]
        if isinstance(index, str):
            raise TypeError(f'index is a list of field paths, e.g. ["$"] or ["text"], not the string {index!r}.')
        self.bank_id = bank_id
        self.index_fields = list(index)
        self.index_config: dict[str, Any] = {**config, "fields": self.index_fields}
        if ttl is not None and not isinstance(ttl, Mapping):
            raise TypeError(f'ttl is a TTLConfig ({{"default_ttl": minutes, "refresh_on_read": True}}), not {ttl!r}.')
        self.ttl_config = ttl

    @property
    def memory(self) -> Memory:
        if self._memory is None:
            self._memory = default_memory()
        return self._memory

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self.memory.submit(self._run(list(ops))).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.wrap_future(self.memory.submit(self._run(list(ops))))

    # --- the one core, on the Memory's loop -------------------------------------------------------------------

    async def _run(self, ops: list[Op]) -> list[Result]:
        """As LangGraph's own stores do: the reads see the store as it was when the batch began, then the writes
        are applied in order (of several puts to one key, the last stands); results come in the ops' order."""
        aio = self.memory.aio
        results: list[Result] = []
        writes: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(aio, op))
            elif isinstance(op, SearchOp):
                results.append(await self._search(aio, op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(aio, op))
            elif isinstance(op, PutOp):
                writes.pop((tuple(op.namespace), op.key), None)  # the last put of a key goes last
                writes[(tuple(op.namespace), op.key)] = op
                results.append(None)
            else:
                raise TypeError(f"MemwrapStore does not know the operation {type(op).__name__}.")
        for put in writes.values():
            await self._put(aio, put)
        return results

    async def _get(self, aio: AsyncMemory, op: GetOp) -> Item | None:
        records = await self._records_of(aio, tuple(op.namespace), op.key)
        if not records:
            return None
        if op.refresh_ttl:
            await self._refresh(aio, [records[0].metadata[META]], [records[0].bank_id])
        return as_item(records[0])

    async def _put(self, aio: AsyncMemory, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        ttl = ttl_minutes(op.ttl)
        bank = self._bank_of(namespace)
        # Expired memories of the key too: a put replaces them (a delete removes them), as a key is one item.
        existing = await self._records_of(aio, namespace, op.key, include_expired=True)
        if op.value is None:
            for record in existing:
                await aio.delete(bank, record.id)
            return
        if not isinstance(op.value, Mapping):
            raise TypeError(f"a LangGraph store value is a dict, not {type(op.value).__name__}.")
        value = dict(op.value)
        fields = self.index_fields if op.index is None else (op.index or [])
        text = indexed_text(value, fields) if fields else ""
        moment = datetime.now(UTC)
        now = moment.isoformat()
        live = [r for r in existing if r.expires_at is None or r.expires_at > moment]
        created = live[0].metadata[META].get("created_at", now) if live else now  # an expired item was gone
        expires_at = moment + timedelta(minutes=ttl) if ttl is not None else None
        metadata = {
            META: {
                "namespace": list(namespace),
                "ns": {str(i): label for i, label in enumerate(namespace)},
                "key": op.key,
                "value": value,
                "indexed": bool(text),
                "created_at": created,
                "updated_at": now,
                **({"ttl": ttl} if ttl is not None else {}),
            }
        }
        text = text or indexed_text(value, ["$"]) or op.key  # a memory needs a text even when not indexed
        if not existing:
            ids = await aio.retain(
                bank,
                text,
                document_id=document_id_of(namespace, op.key),
                metadata=metadata,
                tags=[TAG],
                expires_at=expires_at,
            )
            if not ids or await self._records_of(aio, namespace, op.key, include_expired=True):
                return
            await self._unhide(aio, bank, namespace, op.key, ids)
            # retain knew the key and text and answered with the old memory: it takes this value as an update
            existing = await self._records_of(aio, namespace, op.key, include_expired=True)
        first, *rest = existing
        await aio.update(bank, first.id, text=text, metadata=metadata, tags=[TAG], expires_at=expires_at)
        for record in rest:  # the old text's other parts or extracted facts: the new text stands alone
            await aio.delete(bank, record.id)

    async def _search(self, aio: AsyncMemory, op: SearchOp) -> list[SearchItem]:
        """LangGraph's contract: every item under the prefix that matches the filter, up to offset + limit. With a
        query, recall's order first; the matching items recall left out follow (score None), as InMemoryStore
        fills a page with the items it has no vector for."""
        prefix = tuple(op.namespace_prefix)
        conditions = prefix_conditions(prefix) + value_conditions(op.filter or {})
        wanted = op.offset + op.limit
        found: dict[tuple[tuple[str, ...], str], tuple[SearchItem, dict[str, Any], str]] = {}
        if op.query and op.query.strip():
            for hit, bank in await self._recall(aio, prefix, op.query, conditions, wanted):
                item = as_search_item(hit.metadata[META], hit.score)
                found.setdefault((item.namespace, item.key), (item, hit.metadata[META], bank))
        if len(found) < wanted:
            async for record in self._listing(aio, prefix, conditions):
                stored = record.metadata[META]
                identity = (tuple(stored["namespace"]), stored["key"])
                if identity not in found:
                    found[identity] = (as_search_item(stored, None), stored, record.bank_id)
                    if len(found) >= wanted:
                        break
        page = list(found.values())[op.offset : op.offset + op.limit]
        if op.refresh_ttl:
            await self._refresh(aio, [stored for _, stored, _ in page], [bank for _, _, bank in page])
        return [item for item, _, _ in page]

    async def _recall(
        self, aio: AsyncMemory, prefix: tuple[str, ...], query: str, conditions: list[dict[str, Any]], wanted: int
    ) -> list[tuple[RecalledMemory, str]]:
        """Recall's hits for the query among the indexed items under the prefix, best first, with their banks."""
        banks = await self._banks_under(aio, prefix)
        hits: list[tuple[RecalledMemory, str]] = []
        indexed = [*conditions, {"key": [META, "indexed"], "eq": True}]
        for start in range(0, len(banks), MAX_RECALL_BANKS):  # one recall reads MAX_RECALL_BANKS banks at most
            group = banks[start : start + MAX_RECALL_BANKS]
            recall = await aio.recall(
                group if len(group) > 1 else group[0],
                query,
                top_k=min(MAX_TOP_K, wanted * OVERFETCH),
                tags=[TAG],
                filters={"metadata": {"and": indexed}},
                neighbours=False,
                prefer_observations=False,
            )
            for hit in recall.memories:
                bank = hit.bank_id or group[0]
                if isinstance(hit.metadata.get(META), dict) and self._own(hit.metadata[META], bank):
                    hits.append((hit, bank))
        if len(banks) > MAX_RECALL_BANKS:
            hits.sort(key=lambda pair: pair[0].score, reverse=True)
        return hits

    async def _refresh(self, aio: AsyncMemory, stored: list[dict[str, Any]], banks: list[str]) -> None:
        """A read with refresh_ttl: the items with a ttl expire that many minutes from now again."""
        for item, bank in zip(stored, banks, strict=True):
            ttl = item.get("ttl")
            if not isinstance(ttl, (int, float)):
                continue
            expires_at = datetime.now(UTC) + timedelta(minutes=float(ttl))
            for record in await self._records_of(aio, tuple(item["namespace"]), item["key"], bank=bank):
                await aio.update(bank, record.id, expires_at=expires_at)

    async def _list_namespaces(self, aio: AsyncMemory, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = list(op.match_conditions or ())
        # The prefix's labels before its first wildcard narrow the listing in the database.
        fixed: tuple[str, ...] = ()
        for condition in conditions:
            if condition.match_type == "prefix":
                fixed = tuple(until_wildcard(condition.path))
        namespaces: set[tuple[str, ...]] = set()
        async for record in self._listing(aio, fixed, prefix_conditions(fixed)):
            namespace = tuple(record.metadata[META]["namespace"])
            if all(matches(namespace, c) for c in conditions):
                namespaces.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    async def _unhide(self, aio: AsyncMemory, bank: str, namespace: tuple[str, ...], key: str, ids: list[Any]) -> None:
        """A retain whose memory no listing shows: either memwrap's defense redacted the key or a label (the item
        could never be found: refused), or retain answered with an invalidated memory of the same key and text (it
        knows the content already): the put brings that memory back, and the caller updates it to this put."""
        stored = (await aio.get(bank, ids[0])).metadata.get(META, {})
        if stored.get("key") != key or stored.get("namespace") != list(namespace):
            for unit_id in ids:
                await aio.delete(bank, unit_id)
            raise InvalidInputError(
                f"the key or a namespace label of this item looks like a secret and memwrap's memory defense "
                f"redacted it, so the item could not be found again; nothing was stored. Use another key "
                f"(namespace {namespace!r})."
            )
        for unit_id in ids:
            await aio.restore(bank, unit_id)

    # --- finding an item's memories ---------------------------------------------------------------------------

    def _bank_of(self, namespace: tuple[str, ...]) -> str:
        if self.bank_id is not None:
            return self.bank_id
        if not namespace:
            raise ValueError("MemwrapStore(bank_id=None) reads the bank from the namespace's first label: give one.")
        return namespace[0]

    async def _banks_under(self, aio: AsyncMemory, prefix: tuple[str, ...]) -> list[str]:
        """The banks a prefix reaches: the store's bank, the prefix's first label, or (no label) every bank."""
        if self.bank_id is not None:
            return [self.bank_id]
        if prefix and prefix[0] != "*":
            return [prefix[0]]
        return [b.bank_id for b in await aio.banks() if b.memories]

    def _own(self, stored: dict[str, Any], bank: str) -> bool:
        """With `bank_id=None` an item belongs to the bank its first label names: a memory another store (with a
        bank of its own) wrote under ("alice", ...) into bank "bob" is not Alice's item, and not shown as one."""
        namespace = stored.get("namespace") or [None]
        return self.bank_id is not None or namespace[0] == bank

    async def _records_of(
        self,
        aio: AsyncMemory,
        namespace: tuple[str, ...],
        key: str,
        *,
        include_expired: bool = False,
        bank: str | None = None,
    ) -> list[MemoryRecord]:
        """The memories standing for one item, oldest first (none: no such item)."""
        bank = bank or self._bank_of(namespace)
        records = await aio.list(
            bank,
            document_id=document_id_of(namespace, key),
            tags=[TAG],
            limit=MAX_PAGE,
            include_expired=include_expired,
        )
        return [
            r
            for r in records
            if isinstance(r.metadata.get(META), dict)
            and r.metadata[META].get("key") == key
            and tuple(r.metadata[META].get("namespace", ())) == namespace
        ]

    async def _listing(
        self, aio: AsyncMemory, prefix: tuple[str, ...], conditions: list[dict[str, Any]]
    ) -> AsyncIterator[MemoryRecord]:
        """Each item under `prefix` matching `conditions` once (its first memory), oldest first, bank by bank."""
        seen: set[tuple[tuple[str, ...], str]] = set()
        for bank in await self._banks_under(aio, prefix):
            own = conditions if self.bank_id is not None else [*conditions, {"key": [META, "ns", "0"], "eq": bank}]
            filters = {"metadata": {"and": own}} if own else None
            offset = 0
            while True:
                page = await aio.list(bank, tags=[TAG], filters=filters, limit=MAX_PAGE, offset=offset)
                for record in page:
                    stored = record.metadata.get(META)
                    if not isinstance(stored, dict):
                        continue
                    identity = (tuple(stored["namespace"]), stored["key"])
                    if identity not in seen:
                        seen.add(identity)
                        yield record
                if len(page) < MAX_PAGE:
                    break
                offset += len(page)


__all__ = ["MemwrapStore"]
