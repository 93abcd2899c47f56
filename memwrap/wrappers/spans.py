"""The wrapper's own OpenTelemetry spans: recall, inject and the retain hand-off of one wrapped call.

They open in the app's context, so they are children of whatever span the app has current (its request, its
agent step, a Logfire/Langfuse/LangSmith span). The recall span is the GenAI conventions' `search_memory {bank}`
(kind CLIENT: the app's call to its memory; `memwrap.step` "wrapper.recall"), and the engine's recall span nests
under it (the Memory's loop thread and the sync memory's pool run the recall in a copy of the caller's context).
Attributes are counts and token figures; the query and the injected block never go on a span unless content
capture is on (memwrap/tracing.py `capture_content`; then the query only, as `gen_ai.memory.query.text`). Token
counts are computed only when a span records, so an app without a tracer provider pays nothing for them.
"""

from __future__ import annotations

from typing import Any

from memwrap import tracing
from memwrap.tokens import count_tokens
from memwrap.wrappers.backend import RecallSkipped, RecallTimeout
from memwrap.wrappers.transcript import get

RECALL = "wrapper.recall"
INJECT = "wrapper.inject"
RETAIN = "wrapper.retain"


def recalled(current: Any, recall: Any) -> None:
    """What the engine gave back: how many memories, how many tokens of block (a Recall or its JSON form)."""
    if recall is None or not current.is_recording():
        return
    memories = get(recall, "memories") or []
    tracing.set_attributes(
        current,
        outcome="found" if get(recall, "context") else "empty",
        memories=len(memories),
        **{"gen_ai.memory.record.count": len(memories)},
        tokens=get(recall, "tokens"),
        candidates=get(recall, "candidates"),
    )


def failed_open(current: Any, error: Exception) -> None:
    """A recall that failed open: the call goes on without memory, the span says why (the type, not the text:
    an engine error may quote the query)."""
    outcome = {RecallTimeout: "timeout", RecallSkipped: "skipped"}.get(type(error), "error")
    tracing.set_attributes(current, outcome=outcome, error_type=type(error).__name__)
    if outcome != "skipped":  # skipped is the breaker doing its job, not a new failure
        tracing.mark_error(current, f"recall failed open ({type(error).__name__})")


def query_attributes(current: Any, query: str, model: str | None) -> None:
    if current.is_recording():
        tracing.set_attributes(current, query_tokens=count_tokens(query, model))


def block_tokens(current: Any, block: str, model: str | None) -> None:
    if current.is_recording():
        tracing.set_attributes(current, block_tokens=count_tokens(block, model) if block else 0)


def retained(current: Any, item: dict[str, Any] | None, *, exchange_turns: int, held: bool) -> None:
    """The hand-off: queued to the spool (delivered to the engine later, in its own trace), held for a tool
    loop's final answer, or nothing to keep."""
    if not current.is_recording():
        return
    outcome = "held" if held else "queued" if item is not None else "nothing"
    content = item["content"] if item is not None else ""
    tracing.set_attributes(
        current,
        outcome=outcome,
        turns=exchange_turns,
        content_tokens=count_tokens(content) if content else 0,
        partial=bool(item and item["metadata"].get("partial")),
    )
