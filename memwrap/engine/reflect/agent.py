"""The reflect loop: the model calls memory tools until it calls `done`.

    turn:  check limits → one LLM call → `done`? finish : cap each tool call's share of the budget → run the calls
    limit: iterations, the context budget, the wall clock, or the provider's context overflow
           → a forced synthesis: one fresh call that answers from what was gathered (forced=True and
             forced_reason set), never an error

The model is asked through native tool calls or, where the server's model cannot make them, a JSON-schema
"next action" protocol (protocol.py): the same loop, trace, budgets and citations either way. A final answer
before anything was looked up is refused (unless the bank is empty): the first time the model is told to look
first; the second time the agent recalls the question itself and shows the model what it found. A final answer
that cites nothing, though memories were shown, is refused once; the second ends in a forced synthesis
(forced_reason "uncited").

The budget is enforced before the tool calls run: the room left in the budget is divided among the calls of the
turn, and each call's result is cut to its share, so several calls together cannot overflow the next request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from memwrap.engine.llm.client import LLM, ContextOverflowError, Message, Tool, ToolCall, ToolStep
from memwrap.engine.reflect import prompts, queries
from memwrap.engine.reflect.budget import MIN_RESULT_TOKENS, SAFETY_TOKENS, Limits, TokenCounter
from memwrap.engine.reflect.cite import resolve_citations
from memwrap.engine.reflect.output import DONE, DoneCall, OutputSchema
from memwrap.engine.reflect.protocol import TurnProtocol
from memwrap.engine.reflect.refs import REF, Gathered, Refs, parse_uuid
from memwrap.engine.reflect.tools import Toolbox, ToolOutcome
from memwrap.errors import InvalidBudgetError
from memwrap.models import Disposition, ReflectResult, ReflectTraceEntry, ReflectUsage, TraceKind

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts

log = logging.getLogger("memwrap.reflect")

NOT_RUN = "Not run: `done` ended the turn."
LOOK_FIRST = (
    "Not accepted: nothing has been looked up yet, and this memory bank is not empty. Search memory first "
    "(search_mental_models, search_observations or recall), then answer from what you find."
)
UNCITED = (
    "Not accepted yet: the answer cites nothing, though memories were shown. Call `done` again with the "
    "references ([F1], [O2], [M3] …) of the memories the answer rests on, after checking that they say it; if "
    "none of them does, say that memory does not hold the answer."
)
AUTOMATIC = "auto"  # the id prefix of a lookup the agent made itself
SYNTHESIS_ATTEMPTS = 3  # a synthesis that overflows the provider's window is retried with half the evidence


@dataclass
class ReflectRequest:
    bank_id: str
    query: str
    context: str | None
    tags: list[str] | None
    now: datetime
    disposition: Disposition
    output: OutputSchema
    limits: Limits


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0


class Agent:
    def __init__(self, parts: EngineParts, llm: LLM, request: ReflectRequest) -> None:
        self.parts = parts
        self.llm = llm
        self.request = request
        self.limits = request.limits
        self.counter = TokenCounter(llm.model("reflect"))
        self.refs = Refs()
        self.gathered = Gathered()
        self.toolbox = Toolbox(
            parts,
            request.bank_id,
            tags=request.tags,
            now=request.now,
            counter=self.counter,
            refs=self.refs,
            gathered=self.gathered,
        )
        self.trace: list[ReflectTraceEntry] = []
        self.usage = ReflectUsage()
        self.iteration = 0
        self.lookups = 0  # tool calls that showed the model something (not `done`)
        self.refused = 0  # final answers refused because nothing was looked up
        self.uncited = 0  # final answers refused because they cited nothing though memories were shown
        self.protocol: TurnProtocol | None = None
        self._started = time.perf_counter()

    # -- the loop --------------------------------------------------------------------------------------------

    async def run(self) -> ReflectResult:
        request = self.request
        probing = time.monotonic()
        self.protocol = TurnProtocol(self.llm, await self.llm.capabilities("reflect"))
        # Finding out what the server can do (once per model; three tiny requests, a minute on a slow local server)
        # is not this question's work: the loop's clock starts after it.
        self.limits.started += time.monotonic() - probing
        empty_bank = await queries.bank_is_empty(self.parts.pool, request.bank_id)
        system = self.protocol.system(prompts.agent_system(request.disposition))
        tools = [*self.toolbox.tools(), request.output.tool()]
        messages = [Message.user(prompts.user_message(request.query, request.context))]
        base = self.counter.request(system, messages, tools)
        if base + SAFETY_TOKENS + MIN_RESULT_TOKENS > self.limits.max_tokens:
            raise InvalidBudgetError(
                f"context_budget={self.limits.max_tokens} cannot hold reflect's own prompt ({base} tokens with this "
                f"query and context) and any memory: pass at least {base + 1024}."
            )
        reason: str | None = None
        while reason is None:
            reason = self._limit(system, messages, tools)
            if reason is not None:
                break
            self.iteration += 1
            outcome = await self._step(system, messages, tools, empty_bank=empty_bank)
            if isinstance(outcome, DoneCall):
                return await self._finish(outcome)
            reason = outcome
        return await self._synthesize(reason)

    async def _step(
        self, system: str, messages: list[Message], tools: list[Tool], *, empty_bank: bool
    ) -> DoneCall | str | None:
        """One turn of the loop: the model's step, and what answers it. A DoneCall: the accepted answer; a str: why
        the loop stops (a synthesis follows); None: the loop goes on."""
        try:
            step = await self._turn(system, messages, tools, timeout=self.limits.time_left())
        except TimeoutError:
            return "timeout"
        except ContextOverflowError:
            return "context_overflow"
        done = next((c for c in step.tool_calls if c.name == DONE), None)
        answered = done is not None or (not step.tool_calls and bool(step.text.strip()))
        if answered and self.lookups == 0 and not empty_bank:
            return None if await self._look_first(step, done, messages, system, tools) else "context_budget"
        if done is not None:
            return self._done(step, done, messages)
        if not step.tool_calls:
            return self._text_only(step, messages)
        messages.append(step.message())
        shares = self.limits.shares(self.counter.request(system, messages, tools), len(step.tool_calls))
        if shares is None:
            messages.pop()  # its calls will not be answered; the synthesis starts a fresh conversation
            return "context_budget"
        try:
            messages += await self._run_tools(step.tool_calls, shares)
        except TimeoutError:
            return "timeout"
        return None

    def _done(self, step: ToolStep, done: ToolCall, messages: list[Message]) -> DoneCall | str | None:
        """The model called `done`: its answer, parsed and citing what was shown, or the model told what is wrong
        with it (as _step: the answer, why the loop stops, or None)."""
        try:
            call = self.request.output.parse(done.arguments, done.raw_arguments)
        except ValueError as exc:
            self._tool_trace(done, ToolOutcome(str(exc), error=True), None, 0.0)
            messages.append(step.message())
            messages += [
                Message.tool_result(
                    c.id, prompts.INVALID_DONE.format(error=exc) if c is done else NOT_RUN, is_error=True
                )
                for c in step.tool_calls
            ]
            return None
        if self._uncited(call):
            self._tool_trace(done, ToolOutcome(UNCITED, error=True), None, 0.0)
            if self.uncited > 1:
                return "uncited"
            messages.append(step.message())
            messages += [
                Message.tool_result(c.id, UNCITED if c is done else NOT_RUN, is_error=True) for c in step.tool_calls
            ]
            return None
        self._tool_trace(done, ToolOutcome("accepted"), None, 0.0)
        return call

    def _text_only(self, step: ToolStep, messages: list[Message]) -> DoneCall | str | None:
        """A turn that called no tool: its text is the answer when no structured output is wanted, else the model
        is told to call one (as _step: the answer, why the loop stops, or None)."""
        if step.text.strip() and not self.request.output.wanted:
            answer = DoneCall(answer=step.text.strip())  # answered without `done`
            if self._uncited(answer):
                if self.uncited > 1:
                    return "uncited"
                messages += [step.message(), Message.user(UNCITED)]
                return None
            return answer
        if step.text.strip():  # an empty assistant turn is refused by Anthropic: leave it out
            messages.append(step.message())
        messages.append(Message.user(prompts.INVALID_DONE.format(error="no tool was called")))
        return None

    async def _look_first(
        self, step: ToolStep, done: ToolCall | None, messages: list[Message], system: str, tools: list[Tool]
    ) -> bool:
        """Refuse an answer given before any lookup. The first time the model is told; after that the agent
        recalls the question itself. False when the budget has no room for that."""
        self.refused += 1
        if done is not None:
            self._tool_trace(done, ToolOutcome(LOOK_FIRST, error=True), None, 0.0)
        if self.refused == 1:
            if step.tool_calls:
                messages.append(step.message())
                messages += [
                    Message.tool_result(c.id, LOOK_FIRST if c is done else NOT_RUN, is_error=True)
                    for c in step.tool_calls
                ]
            else:
                messages += [step.message(), Message.user(LOOK_FIRST)]
            return True
        call = ToolCall(id=f"{AUTOMATIC}{self.refused}", name="recall", arguments={"query": self.request.query})
        messages.append(Message.assistant("", [call]))
        shares = self.limits.shares(self.counter.request(system, messages, tools), 1)
        if shares is None:
            messages.pop()
            return False
        messages += await self._run_tools([call], shares)
        self.lookups = max(self.lookups, 1)  # the agent looked: whatever it found is what memory holds on this
        return True

    def _uncited(self, call: DoneCall) -> bool:
        """A final answer that cites nothing though memories were shown: a small model answers from its own guess
        ("React", "John Smith") right after a recall that showed the answer. The first is refused with a word on
        citing; the second ends the loop in a forced synthesis from what was shown (forced_reason "uncited")."""
        cited = [str(c) for c in call.memory_ids] + [f"{kind}{n}" for kind, n in REF.findall(call.answer)]
        if not self.gathered.lines or any(self._shown(c) for c in cited):
            return False
        self.uncited += 1
        return True

    def _shown(self, cited: str) -> bool:
        """Whether a cited reference or id names something shown (run K: "memory_ids" held what named nothing)."""
        cited = cited.strip()
        return self.refs.resolve(cited) is not None or parse_uuid(cited) in self.refs.by_id

    def _limit(self, system: str, messages: list[Message], tools: list[Tool]) -> str | None:
        if self.iteration >= self.limits.max_iterations:
            return "iterations"
        if self.limits.time_left() <= 0:
            return "timeout"
        if self.counter.request(system, messages, tools) + SAFETY_TOKENS > self.limits.max_tokens:
            return "context_budget"  # only reachable through a model's long turns: tool results are capped
        return None

    async def _turn(
        self,
        system: str,
        messages: list[Message],
        tools: list[Tool],
        *,
        timeout: float,
        kind: TraceKind = "llm",
        tool_choice: str = "auto",
    ) -> ToolStep:
        request_tokens = self.counter.request(system, messages, tools)
        started = time.perf_counter()
        entry = ReflectTraceEntry(kind=kind, iteration=self.iteration, request_tokens=request_tokens)
        self.trace.append(entry)
        assert self.protocol is not None
        try:
            step = await asyncio.wait_for(
                self.protocol.step(
                    system,
                    messages,
                    tools,
                    tool_choice=tool_choice,
                    max_tokens=self.limits.answer_tokens,
                    timeout=max(timeout, 0.001),
                ),
                timeout=max(timeout, 0.001),
            )
        except TimeoutError:
            entry.error = "timeout"
            raise
        except ContextOverflowError as exc:
            entry.error = f"context overflow: {exc}"
            raise
        finally:
            entry.latency_ms = _ms(started)
            self.usage.llm_ms += entry.latency_ms
        u = step.usage
        self.usage.prompt_tokens += u.prompt_tokens
        self.usage.completion_tokens += u.completion_tokens
        self.usage.cached_tokens += u.cached_tokens
        self.usage.calls += max(u.calls, 1)
        entry.result_tokens = u.completion_tokens or self.counter.message(step.message())
        entry.result_chars = len(step.text)
        entry.detail = ", ".join(c.name for c in step.tool_calls) or "text"
        if self.protocol.name != "native":
            entry.detail = f"{self.protocol.name}: {entry.detail}"
        return step

    async def _run_tools(self, calls: list[ToolCall], shares: list[int]) -> list[Message]:
        """Run a turn's calls concurrently, each within its share; TimeoutError when the clock runs out."""
        started = time.perf_counter()
        tasks = [asyncio.ensure_future(self._tool(call, cap)) for call, cap in zip(calls, shares, strict=True)]
        try:
            _done, pending = await asyncio.wait(tasks, timeout=max(self.limits.time_left(), 0.001))
            if pending:
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                raise TimeoutError
            outcomes = [task.result() for task in tasks]  # an unexpected error (the database) propagates
        finally:
            self.usage.tools_ms += _ms(started)
        return [
            Message.tool_result(call.id, outcome.text, is_error=outcome.error)
            for call, outcome in zip(calls, outcomes, strict=True)
        ]

    async def _tool(self, call: ToolCall, cap: int) -> ToolOutcome:
        started = time.perf_counter()
        known = len(self.gathered.lines)
        try:
            outcome = await self.toolbox.run(call, cap)
        except asyncio.CancelledError:
            self._tool_trace(call, ToolOutcome("", error=True), cap, _ms(started), error="timeout")
            raise
        if not outcome.error and len(self.gathered.lines) > known:
            # Only a lookup that showed something counts: an `expand` of an id never shown, or searches of empty
            # layers (no mental models, no observations yet) have not looked at what memory holds.
            self.lookups += 1
        self._tool_trace(call, outcome, cap, _ms(started))
        return outcome

    def _tool_trace(
        self, call: ToolCall, outcome: ToolOutcome, cap: int | None, latency_ms: float, error: str | None = None
    ) -> None:
        self.usage.tool_calls += 1
        arguments = call.arguments if call.raw_arguments is None else {"raw": call.raw_arguments[:2000]}
        if call.id.startswith(AUTOMATIC):
            arguments = {**arguments, "automatic": True}  # the agent looked it up, not the model
        self.trace.append(
            ReflectTraceEntry(
                kind="tool",
                iteration=self.iteration,
                name=call.name,
                arguments=arguments,
                cap_tokens=cap,
                result_tokens=outcome.tokens or self.counter.text(outcome.text),
                result_chars=len(outcome.text),
                truncated=outcome.truncated,
                latency_ms=latency_ms,
                error=error or (outcome.text[:500] if outcome.error else None),
            )
        )

    # -- the end ---------------------------------------------------------------------------------------------

    async def _synthesize(self, reason: str) -> ReflectResult:
        """A limit ended the loop: one fresh request answers from the gathered items (cut to the budget)."""
        request = self.request
        log.info("reflect on %s: %s after %d iterations; synthesising", request.bank_id, reason, self.iteration)
        self.trace.append(ReflectTraceEntry(kind="limit", iteration=self.iteration, name=reason))
        if not self.gathered.render().strip():
            # The loop showed the model nothing (failed or empty lookups): the synthesis answers from a recall of
            # the question (no LLM), not from the model's general knowledge.
            await self._recall_question()
        done_tool = request.output.tool()
        system = prompts.synthesis_system(reason, request.disposition)
        if self.protocol is not None and self.protocol.name == "json":
            system += prompts.SYNTHESIS_JSON
        frame = self.counter.request(
            system, [Message.user(prompts.synthesis_user(request.query, request.context, ""))], [done_tool]
        )
        room = self.limits.max_tokens - frame - SAFETY_TOKENS
        problem = "no attempt"
        for _attempt in range(SYNTHESIS_ATTEMPTS):
            evidence, _cut = self.counter.cut(self.gathered.render(), max(room, 0))
            messages = [Message.user(prompts.synthesis_user(request.query, request.context, evidence))]
            try:
                step = await self._turn(
                    system,
                    messages,
                    [done_tool],
                    timeout=self.limits.synthesis_timeout,
                    kind="synthesis",
                    tool_choice=DONE,
                )
            except ContextOverflowError:
                room //= 2
                problem = "the provider's context window overflowed"
                continue
            except TimeoutError:
                problem = "it timed out"
                break
            call = self._synthesis_answer(step)
            if call is not None:
                return await self._finish(call, forced=reason)
            problem = "the model gave no answer"
            break
        return await self._fallback(reason, problem)

    def _synthesis_answer(self, step: ToolStep) -> DoneCall | None:
        done = next((c for c in step.tool_calls if c.name == DONE), None)
        if done is None:
            return DoneCall(answer=step.text.strip()) if step.text.strip() else None
        try:
            call = self.request.output.parse(done.arguments, done.raw_arguments)
        except ValueError as exc:
            # No turn is left to correct it: keep the answer, drop what did not validate, and say so in the trace.
            self._tool_trace(done, ToolOutcome(str(exc), error=True), None, 0.0)
            given = done.arguments.get("answer")
            answer = given if isinstance(given, str) else ""
            if not answer.strip():
                return DoneCall(answer=step.text.strip()) if step.text.strip() else None
            ids = done.arguments.get("memory_ids")
            return DoneCall(answer=answer, memory_ids=[str(i) for i in ids] if isinstance(ids, list) else [])
        self._tool_trace(done, ToolOutcome("accepted"), None, 0.0)
        return call

    async def _fallback(self, reason: str, problem: str) -> ReflectResult:
        """Even the synthesis failed: list what was gathered rather than fail (still forced, never invented).
        With nothing gathered (a slow model spent the time on a wrong first step), the agent recalls the question
        itself: no LLM, a fraction of a second, and what it lists is cited."""
        if not self.gathered.render().strip() and not any(
            e.kind == "tool" and e.arguments.get("automatic") and e.name == "recall" for e in self.trace
        ):
            await self._recall_question()
        gathered, _ = self.counter.cut(self.gathered.render(), self.limits.answer_tokens)
        if gathered:
            answer = f"No answer could be synthesised ({problem}). What memory holds on this:\n{gathered}"
        else:
            answer = f"No answer could be given ({problem}), and nothing was found in memory before the limit."
        self.trace.append(
            ReflectTraceEntry(
                kind="synthesis", iteration=self.iteration, error=problem, detail="fallback: gathered items listed"
            )
        )
        refs = [line.split("]", 1)[0].lstrip("[→ ") for line in gathered.splitlines() if line.startswith("[")]
        return await self._finish(DoneCall(answer=answer, memory_ids=refs), forced=reason)

    async def _recall_question(self) -> None:
        call = ToolCall(id=f"{AUTOMATIC}-fallback", name="recall", arguments={"query": self.request.query})
        try:
            await self._tool(call, max(self.limits.answer_tokens, MIN_RESULT_TOKENS))
        except Exception as exc:  # noqa: BLE001 - the fallback must still answer; the trace says what failed
            log.warning("reflect fallback recall failed: %s: %s", type(exc).__name__, exc)

    async def _finish(self, call: DoneCall, forced: str | None = None) -> ReflectResult:
        request = self.request
        cited = await resolve_citations(self.parts.pool, request.bank_id, self.refs, call.memory_ids, call.answer)
        self.usage.latency_ms = _ms(self._started)
        return ReflectResult(
            bank_id=request.bank_id,
            query=request.query,
            answer=call.answer.strip(),
            structured=call.structured,
            memory_ids=cited.memory_ids,
            mental_model_ids=cited.mental_model_ids,
            citations=cited.citations,
            unknown_ids=cited.unknown,
            iterations=self.iteration,
            forced=forced is not None,
            forced_reason=forced,
            context_budget=self.limits.max_tokens,
            disposition=request.disposition,
            usage=self.usage,
            trace=self.trace,
        )
