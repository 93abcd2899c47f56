"""The scenario every memory-tools framework test runs through its framework's own agent loop, against the fake
model server, with memory only through the tools (the model client is not wrapped):

  run 1: the user states a fact; the model calls retain_memory, then answers;
  run 2 (a new conversation): the model calls recall_memory, reads the memory's id in the result, calls
         invalidate_memory with it, then answers.

    from memory_tools_support import remember_recall_forget, tool_outputs
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable
from typing import Any

from fakes.llm_server import FakeLLMServer, RecordedRequest, Reply, ToolCall

from memwrap.block.fence import CLOSE_TAG, OPEN_TAG
from memwrap.wrappers.transcript import content_text

FACT = "The user's dog is called Biscuit and is a beagle."
TELL = "My dog is called Biscuit, he's a beagle."
ASK = "Biscuit was rehomed last month. What do you remember about my dog?"
REASON = "the user says Biscuit was rehomed"
ID_IN_BLOCK = re.compile(r"- \(id ([0-9a-f-]{36})\) ")

Step = Reply | Callable[[RecordedRequest], Reply]


def tool_outputs(request: RecordedRequest) -> list[str]:
    """The tool results a request carried to the model, oldest first (Chat Completions or Responses API)."""
    body = request.body
    if request.provider == "openai.chat":
        return [content_text(m.get("content")) for m in body.get("messages", []) if m.get("role") == "tool"]
    outputs: list[str] = []
    for item in body.get("input", []) if isinstance(body.get("input"), list) else []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item.get("output")
            outputs.append(output if isinstance(output, str) else content_text(output))
    return outputs


def tool_names(request: RecordedRequest) -> set[str]:
    """The tools a request offered the model."""
    names = set()
    for tool in request.body.get("tools") or []:
        names.add(tool.get("name") or tool.get("function", {}).get("name"))
    return names


def play(server: FakeLLMServer, steps: list[Step]) -> None:
    """Each request takes the next step: a Reply, or a function of the request (what the model read) to one."""
    queue = deque(steps)

    def respond(request: RecordedRequest) -> Reply:
        step = queue.popleft()
        return step(request) if callable(step) else step

    server.responder = respond


def invalidate_what_was_recalled(request: RecordedRequest) -> Reply:
    """The model's step after recall: it takes the id the recall result shows and invalidates that memory."""
    (block,) = tool_outputs(request)[-1:]
    (memory_id,) = ID_IN_BLOCK.findall(block)
    return Reply(tool_calls=[ToolCall("invalidate_memory", {"memory_id": memory_id, "reason": REASON})])


def remember_recall_forget(run: Callable[[str], str], server: FakeLLMServer, memory: Any, bank: str) -> dict[str, Any]:
    """Play the scenario with `run(prompt) -> final output` (one agent run each) and check each step reached
    memwrap and its result reached the model. Returns what was seen, for the caller's own checks."""
    play(server, [Reply(tool_calls=[ToolCall("retain_memory", {"text": FACT, "tags": ["pets"]})]), Reply("Noted.")])
    assert run(TELL) == "Noted."
    first = server.requests[:]
    assert len(first) == 2 and {"recall_memory", "retain_memory", "invalidate_memory"} <= tool_names(first[0])
    (saved,) = tool_outputs(first[1])
    (record,) = memory.list(bank)
    assert record.text == FACT and record.tags == ["pets"], record
    assert saved == f"Saved to long-term memory as 1 memory: {record.id}", saved

    server.reset()
    play(
        server,
        [
            Reply(tool_calls=[ToolCall("recall_memory", {"query": "the user's dog"})]),
            invalidate_what_was_recalled,
            Reply("I had noted Biscuit, your beagle; I've forgotten that now."),
        ],
    )
    assert run(ASK) == "I had noted Biscuit, your beagle; I've forgotten that now."
    second = server.requests[:]
    assert len(second) == 3, [r.path for r in second]
    recalled, invalidated = tool_outputs(second[1])[-1], tool_outputs(second[2])[-1]
    # The memory reached the model fenced, with its id, and nothing of it outside the fence.
    assert recalled.startswith(OPEN_TAG) and recalled.rstrip().endswith(CLOSE_TAG), recalled
    assert f"- (id {record.id}) " in recalled and "Biscuit" in recalled, recalled
    assert invalidated == f"Memory {record.id} is marked as no longer true; it will not be recalled again."
    context = memory.memory_context(bank, record.id)
    assert context.invalidated_at is not None and context.invalidation_reason == REASON
    assert memory.recall(bank, "the user's dog").memories == []
    return {"saved": saved, "recalled": recalled, "invalidated": invalidated, "requests": first + second}


def arguments_sent(request: RecordedRequest) -> list[dict[str, Any]]:
    """The tool calls a request's history holds (what the model asked for), arguments parsed."""
    body = request.body
    calls: list[dict[str, Any]] = []
    if request.provider == "openai.chat":
        for message in body.get("messages", []):
            for call in message.get("tool_calls") or []:
                calls.append({"name": call["function"]["name"], **json.loads(call["function"]["arguments"])})
    else:
        for item in body.get("input", []):
            if isinstance(item, dict) and item.get("type") == "function_call":
                calls.append({"name": item["name"], **json.loads(item["arguments"])})
    return calls
