"""The tools reflect's model may call, and what each returns within the token cap it is given.

search_mental_models → search_observations → recall → expand: the model is told to go down these layers. Every
result is text of memory items, one per line or block, each with a short reference (refs.py), cut to the cap the
agent gave the call *before* it ran (budget.py): whole items first, best first; a single item that does not fit
alone is cut. Items already shown in this reflect are referred to, not repeated (they are in the conversation).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from memwrap.engine.learn import mental_models as mm
from memwrap.engine.learn import observation_views
from memwrap.engine.llm.types import Tool, ToolCall
from memwrap.engine.recall.pack import render_line
from memwrap.engine.reflect import queries
from memwrap.engine.reflect.budget import TokenCounter
from memwrap.engine.reflect.refs import Gathered, Refs, kind_of_type, parse_uuid
from memwrap.errors import InvalidInputError, MemoryNotFoundError
from memwrap.models import MentalModel, RecalledMemory

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts

MENTAL_MODELS_SHOWN = 3
MENTAL_MODELS_READ = 200  # a bank with more standing questions than this is ranked on its first 200 by name
EXPAND_WIDTH = 3  # turns on each side of a fact
FACT_TYPES = ["raw", "world", "experience"]
# Recall packs a little more than the cap: our lines carry references instead of recall's "- " prefix.
RECALL_SLACK = 200


class SearchMentalModels(BaseModel):
    """Standing answers to recurring questions about the user, kept up to date. Start here."""

    query: str = Field(description="what you are looking for")


class SearchObservations(BaseModel):
    """Consolidated observations with their evidence count and trend. A "stale" or "weakening" observation may be
    out of date: check the raw facts (recall, expand) before relying on it."""

    query: str = Field(description="what you are looking for")


class RecallFacts(BaseModel):
    """Raw facts and conversation turns relevant to a query: details, dates, and what the layers above miss.
    Time expressions in the query ("last spring") narrow the search to that time."""

    query: str = Field(description="what you are looking for")


class Expand(BaseModel):
    """The source facts of an observation (O…) or a mental model (M…), or the conversation turns around a fact
    (F…)."""

    id: str = Field(description="a reference shown by a search, e.g. O2, M1 or F7")


ARGUMENTS: dict[str, type[BaseModel]] = {
    "search_mental_models": SearchMentalModels,
    "search_observations": SearchObservations,
    "recall": RecallFacts,
    "expand": Expand,
}


@dataclass
class ToolOutcome:
    text: str
    error: bool = False
    truncated: bool = False
    tokens: int = 0


class ToolError(Exception):
    """A tool call the model got wrong: the message goes back to it as an error result."""


class Toolbox:
    """The memory tools of one reflect: a bank, its tag scope, and the references shown so far."""

    def __init__(
        self,
        parts: EngineParts,
        bank_id: str,
        *,
        tags: list[str] | None,
        now: datetime,
        counter: TokenCounter,
        refs: Refs,
        gathered: Gathered,
    ) -> None:
        self.parts = parts
        self.bank_id = bank_id
        self.tags = tags
        self.now = now
        self.counter = counter
        self.refs = refs
        self.gathered = gathered
        self._question_vectors: dict[str, np.ndarray] = {}  # a second search in this reflect embeds nothing new
        self._run: dict[str, Callable[[Any, int], Awaitable[tuple[str, list[tuple[str, str]]]]]] = {
            "search_mental_models": self._mental_models,
            "search_observations": self._observations,
            "recall": self._recall,
            "expand": self._expand,
        }

    @property
    def pool(self) -> Any:
        return self.parts.pool

    def tools(self) -> list[Tool]:
        tools = [Tool.from_model(model, name=name) for name, model in ARGUMENTS.items()]
        for tool in tools:
            tool.parameters.pop("description", None)  # the docstring is the tool's description already
        return tools

    async def run(self, call: ToolCall, cap: int) -> ToolOutcome:
        """Run one call; its result is at most `cap` tokens. Mistakes come back as error results, not exceptions."""
        model = ARGUMENTS.get(call.name)
        if model is None:
            return self._error(f"There is no tool {call.name!r}; use one of {', '.join([*ARGUMENTS, 'done'])}.", cap)
        if call.raw_arguments is not None:
            return self._error(f"The arguments of {call.name} are not a JSON object; call it again.", cap)
        try:
            arguments = model.model_validate(call.arguments)
            header, items = await self._run[call.name](arguments, cap)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])
            return self._error(f"Invalid arguments for {call.name}: {problems}.", cap)
        except (ToolError, InvalidInputError, MemoryNotFoundError) as exc:
            return self._error(str(exc), cap)
        return self._fit(header, items, cap)

    def _error(self, message: str, cap: int) -> ToolOutcome:
        text, cut = self.counter.cut(message, cap)
        return ToolOutcome(text, error=True, truncated=cut, tokens=self.counter.text(text))

    def _fit(self, header: str, items: list[tuple[str, str]], cap: int) -> ToolOutcome:
        """The header and as many whole items (ref, text) as fit in `cap`, in order; the first is cut if alone it
        does not fit. Items shown here join the gathered record (what a forced synthesis answers from)."""
        parts = [header] if header else []
        used = self.counter.text(header + "\n") if header else 0
        shown: list[tuple[str, str]] = []
        truncated = False
        for ref, text in items:
            line = text.rstrip("\n") + "\n"
            cost = self.counter.text(line)
            if used + cost <= cap:
                parts.append(line.rstrip("\n"))
                used += cost
                shown.append((ref, line))
            elif not shown and cap - used > 16:
                cut, _ = self.counter.cut(line, cap - used)
                parts.append(cut)
                used = cap
                shown.append((ref, cut))
                truncated = True
            else:
                truncated = True  # keep going: a shorter item further down may still fit
        omitted = len(items) - len(shown)
        if omitted:
            note = f"({omitted} more not shown: the context budget is limited; search more narrowly)"
            if used + self.counter.text(note) <= cap:
                parts.append(note)
        for ref, line in shown:
            if ref:
                self.gathered.add(ref, line)
        text, guarded = self.counter.cut("\n".join(parts), cap)  # a guard: the sum of lines is the count already
        return ToolOutcome(text, truncated=truncated or guarded, tokens=self.counter.text(text))

    # -- the tools -------------------------------------------------------------------------------------------

    def _line(self, memory: RecalledMemory, note: str = "", *, repeat: bool = False) -> tuple[str, str]:
        """A memory unit as the model sees it: its reference, then recall's own rendering of it."""
        ref = self.refs.ref(kind_of_type(memory.type), memory.id)
        if self.gathered.seen(ref) and not repeat:
            return ref, f"[{ref}] (shown above)"
        body = render_line(memory).removeprefix("- ").rstrip("\n")
        return ref, f"[{ref}] {note}{body}"

    async def _mental_models(self, args: SearchMentalModels, cap: int) -> tuple[str, list[tuple[str, str]]]:
        models = [m for m in await mm.list_models(self.pool, self.bank_id) if self._in_scope(m.tags)]
        models = [m for m in models[:MENTAL_MODELS_READ] if m.content.strip()]
        if not models:
            return "No mental models in this memory bank: search observations next.", []
        ranked = await self._rank(args.query, models)
        items = [self._model_block(m) for m in ranked[:MENTAL_MODELS_SHOWN]]
        return f"Mental models closest to {args.query!r}, best first:", items

    async def _rank(self, query: str, models: list[MentalModel]) -> list[MentalModel]:
        # Standing questions have no stored vectors; a bank holds a handful, so embedding them here is cheap.
        embedder = self.parts.embedder
        texts = [f"{m.name}: {m.question}" for m in models]
        missing = [t for t in dict.fromkeys(texts) if t not in self._question_vectors]
        if missing:
            self._question_vectors.update(zip(missing, await embedder.embed(missing), strict=True))
        vectors = np.stack([self._question_vectors[t] for t in texts])
        scores = vectors @ np.asarray(await embedder.embed_query(query))
        return [models[i] for i in np.argsort(-scores, kind="stable")]

    def _model_block(self, model: MentalModel) -> tuple[str, str]:
        ref = self.refs.ref("mental_model", model.id)
        if self.gathered.seen(ref):
            return ref, f"[{ref}] {model.name} (shown above)"
        when = f", refreshed {model.refreshed_at:%Y-%m-%d}" if model.refreshed_at else ""
        state: str = model.status
        if model.status == "stale":
            state = f"stale since {model.stale_since:%Y-%m-%d}" if model.stale_since else "stale"
            state += (
                f" ({model.stale_reason}); check observations and facts"
                if model.stale_reason
                else "; check observations and facts"
            )
        content = model.content.strip()
        return ref, f"[{ref}] {model.name} — {model.question} [{state}{when}]\n{content}"

    async def _observations(self, args: SearchObservations, cap: int) -> tuple[str, list[tuple[str, str]]]:
        recall = await self.parts.recall(
            self.bank_id,
            args.query,
            token_budget=cap + RECALL_SLACK,
            now=self.now,
            types=["observation"],
            tags=self.tags,
            neighbours=False,
        )
        if not recall.memories:
            return "No observations match: recall raw facts instead.", []
        states = await queries.observation_states(self.pool, self.bank_id, [m.id for m in recall.memories], self.now)
        items = []
        for memory in recall.memories:
            state = states.get(memory.id)
            note = ""
            if state is not None:
                last = f", last {state.last_evidence_at:%Y-%m-%d}" if state.last_evidence_at else ""
                flag = "STALE — check raw facts; " if state.stale else ""
                replaced = f", {state.superseded} superseded" if state.superseded else ""
                note = f"({flag}trend {state.trend}, {state.proof_count} sources{replaced}{last}) "
            items.append(self._line(memory, note))
        return f"Observations for {args.query!r}, best first:", items

    async def _recall(self, args: RecallFacts, cap: int) -> tuple[str, list[tuple[str, str]]]:
        recall = await self.parts.recall(
            self.bank_id,
            args.query,
            token_budget=cap + RECALL_SLACK,
            now=self.now,
            types=FACT_TYPES,
            tags=self.tags,
        )
        if not recall.memories:
            return "Memory holds no facts about this.", []
        window = f" (time: {recall.time_window.expression})" if recall.time_window else ""
        return f"Facts for {args.query!r}{window}, best first:", [self._line(m) for m in recall.memories]

    async def _expand(self, args: Expand, cap: int) -> tuple[str, list[tuple[str, str]]]:
        kind, item_id = await self._target(args.id)
        if kind == "mental_model":
            model = next((m for m in await mm.list_models(self.pool, self.bank_id) if m.id == item_id), None)
            if model is None:
                raise ToolError(f"{args.id} no longer exists.")
            sources = await queries.units(self.pool, self.bank_id, model.source_ids, self.tags)
            if not sources:
                return f"{args.id} lists no sources that still exist.", []
            return f"Sources of {args.id} ({model.name}):", [self._line(m) for m in sources]
        if kind == "observation":
            observation = await observation_views.get_observation(self.pool, self.bank_id, item_id, now=self.now)
            evidence = sorted(observation.evidence, key=lambda e: e.at, reverse=True)  # newest first survive a cut
            units = await queries.units(self.pool, self.bank_id, [e.memory_id for e in evidence], self.tags)
            facts = {m.id: m for m in units}
            items = [
                self._line(facts[e.memory_id], "(superseded) " if e.stance == "superseded" else "")
                for e in evidence
                if e.memory_id in facts
            ]
            head = f"Sources of {args.id}, newest first ({observation.proof_count} sources, trend {observation.trend}):"
            return head, items
        around = await queries.around(self.pool, self.bank_id, item_id, EXPAND_WIDTH, self.tags)
        if not around:
            raise ToolError(f"{args.id} no longer exists.")
        # In full even when shown before: the point is reading the turns in their order.
        items = []
        for memory in around:
            ref, line = self._line(memory, repeat=True)
            items.append((ref, f"→ {line}" if memory.id == item_id else line))
        return f"{args.id} in its conversation, in order (→ marks it):", items

    async def _target(self, text: str) -> tuple[str, UUID]:
        found = self.refs.resolve(text)
        if found is not None:
            return found
        some_id = parse_uuid(text)
        kind = await queries.kind_of(self.pool, self.bank_id, some_id) if some_id else None
        if some_id is None or kind is None:
            raise ToolError(f"Unknown reference {text!r}: use one a search showed you (M1, O2, F3, ...).")
        if kind != "mental_model" and not await queries.units(self.pool, self.bank_id, [some_id], self.tags):
            raise ToolError(f"Unknown reference {text!r}: use one a search showed you (M1, O2, F3, ...).")
        return ("mental_model" if kind == "mental_model" else kind_of_type(kind)), some_id

    def _in_scope(self, tags: list[str]) -> bool:
        # With a tag scope, a model answers from it only if it shares a tag (an untagged model reads everything).
        return self.tags is None or bool(set(tags) & set(self.tags))


__all__ = ["ARGUMENTS", "ToolOutcome", "Toolbox"]
