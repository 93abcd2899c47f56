"""How one reflect turn is asked of the model: native tool calls, or a JSON-schema "next action" reply.

Both give the agent the same `ToolStep` (text and tool calls), so the loop, its trace, budgets and citations
are written once (agent.py). The protocol is picked per model from what its server can do
(llm/capabilities.py):

* native: the provider's function calling. Tool calls a model wrote as text anyway (`{"name": "recall",
  "arguments": {...}}`, Qwen's `<tool_call>…</tool_call>`) are read back as calls; a named tool_choice goes out
  as "required" where the server refuses the named form (only `done` is offered then, so it means the same).
* json: no tools are sent. The model answers each turn with one JSON object, constrained by a JSON schema
  (`response_format`): {"action": "recall", "query": "…"}, …, or {"action": "done", "answer": "…",
  "memory_ids": [...]}. Earlier actions and their results are replayed as plain assistant/user messages.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from memwrap.engine.llm.client import LLM, Capabilities, Message, Tool, ToolCall, ToolStep
from memwrap.engine.llm.json_reply import repair_json
from memwrap.errors import LLMOutputError

DONE = "done"

JSON_RULES = """

You cannot call tools directly. Each reply is exactly one JSON object, the next action:
- {"action": "<tool name>", "query": "<what you are looking for>"} for search_mental_models, search_observations \
or recall;
- {"action": "expand", "id": "<a reference such as F3>"};
- {"action": "done", "answer": "<your answer>", "memory_ids": ["<references the answer uses>"]} to finish.
The result of each action comes back in the next message."""

_TOOL_CALL_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


class NextAction(BaseModel):
    """One turn of the JSON protocol (validated loosely: the agent reports a wrong action to the model)."""

    model_config = ConfigDict(extra="ignore")

    action: str
    query: str | None = None
    id: str | None = None
    answer: str | None = None
    memory_ids: list[str] | None = None
    structured: Any = None


class TurnProtocol:
    """Asks one reflect turn of `llm` in the form its server handles."""

    def __init__(self, llm: LLM, capabilities: Capabilities) -> None:
        self.llm = llm
        self.capabilities = capabilities
        self.name = capabilities.protocol

    def system(self, system: str) -> str:
        return system + JSON_RULES if self.name == "json" else system

    async def step(
        self,
        system: str,
        messages: list[Message],
        tools: list[Tool],
        *,
        tool_choice: str,
        max_tokens: int,
        timeout: float | None,
    ) -> ToolStep:
        if self.name == "json":
            return await self._json_step(system, messages, tools, max_tokens=max_tokens, timeout=timeout)
        if tool_choice not in ("auto", "required", "none") and not self.capabilities.named_tool_choice:
            tool_choice = "required" if len(tools) == 1 else "auto"
        step = await self.llm.tool_step(
            messages,
            tools,
            role="reflect",
            system=system,
            tool_choice=tool_choice,
            max_tokens=max_tokens,
            timeout=timeout,
        )
        if not step.tool_calls and step.text:
            calls = calls_in_text(step.text, {t.name for t in tools})
            if calls:
                step = step.model_copy(update={"tool_calls": calls, "text": ""})
        return step

    async def _json_step(
        self, system: str, messages: list[Message], tools: list[Tool], *, max_tokens: int, timeout: float | None
    ) -> ToolStep:
        schema = action_schema(tools)
        try:
            action, usage = await self.llm.structured(
                self.system(system),
                as_plain(messages),
                NextAction,
                role="reflect",
                name="next_action",
                max_tokens=max_tokens,
                timeout=timeout,
                json_schema=schema,
            )
        except LLMOutputError as exc:
            # Not even repaired JSON: the turn is text, which the agent refuses and asks again.
            spent = getattr(exc, "usage", None)
            return ToolStep(text="", usage=spent) if spent is not None else ToolStep(text="")
        call = ToolCall(id=f"act{len(messages)}", name=action.action.strip(), arguments=_arguments(action))
        return ToolStep(tool_calls=[call], stop_reason="tool_calls", usage=usage, model=self.llm.model("reflect") or "")


def _arguments(action: NextAction) -> dict[str, Any]:
    if action.action.strip() == DONE:
        arguments: dict[str, Any] = {"answer": action.answer or "", "memory_ids": list(action.memory_ids or [])}
        if action.structured is not None:
            arguments["structured"] = action.structured
        return arguments
    if action.action.strip() == "expand":
        return {"id": action.id or action.query or ""}
    return {"query": action.query or action.id or ""}


def action_schema(tools: list[Tool]) -> dict[str, Any]:
    """A JSON schema whose branches are the tools' calls: {"action": name, ...its arguments}."""
    branches: list[dict[str, Any]] = []
    defs: dict[str, Any] = {}
    for tool in tools:
        parameters = copy.deepcopy(tool.parameters)
        for key in ("$defs", "definitions"):
            defs.update(parameters.pop(key, {}) or {})
        properties = {"action": {"type": "string", "enum": [tool.name]}, **parameters.get("properties", {})}
        branches.append(
            {
                "type": "object",
                "properties": properties,
                "required": ["action", *parameters.get("required", [])],
                "additionalProperties": False,
            }
        )
    schema: dict[str, Any] = {"anyOf": branches}
    if defs:
        schema["$defs"] = defs
    return schema


def as_plain(messages: list[Message]) -> list[Message]:
    """The conversation without tool roles: an action is the assistant's JSON, its result a user message."""
    out: list[Message] = []
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            text = "\n".join(
                json.dumps({"action": c.name, **c.arguments}, ensure_ascii=False) for c in message.tool_calls
            )
            out.append(Message.assistant(text))
        elif message.role == "tool":
            note = "Error" if message.is_error else "Result"
            body = f"{note}:\n{message.content}\n\nReply with your next action."
            if out and out[-1].role == "user":
                out[-1] = Message.user(out[-1].content + "\n\n" + body)
            else:
                out.append(Message.user(body))
        elif message.role == "assistant":
            out.append(Message.assistant(message.content or "{}"))
        else:
            if out and out[-1].role == "user":
                out[-1] = Message.user(out[-1].content + "\n\n" + message.content)
            else:
                out.append(Message.user(message.content))
    return out


def calls_in_text(text: str, names: set[str]) -> list[ToolCall]:
    """Tool calls a model wrote as text: JSON objects {"name": tool, "arguments": {...}} (or "parameters"),
    alone, in a list, or in <tool_call> tags. Only calls of offered tools count."""
    chunks = _TOOL_CALL_TAG.findall(text) or [text]
    calls: list[ToolCall] = []
    for chunk in chunks:
        try:
            value = repair_json(chunk)
        except LLMOutputError:
            continue
        for entry in value if isinstance(value, list) else [value]:
            if not isinstance(entry, dict):
                continue
            name = entry.get("name") or (entry.get("function") or {}).get("name")
            arguments = entry.get("arguments", entry.get("parameters", {}))
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except json.JSONDecodeError:
                    arguments = None
            if name in names and isinstance(arguments, dict):
                calls.append(ToolCall(id=f"text{len(calls)}", name=name, arguments=arguments))
    return calls


__all__ = ["JSON_RULES", "NextAction", "TurnProtocol", "action_schema", "as_plain", "calls_in_text"]
