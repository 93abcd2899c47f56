"""The OpenAI Agents SDK: memory as function tools an agent calls when it decides to (`recall_memory`,
`retain_memory`, `invalidate_memory`), over one bank fixed here.

    from agents import Agent, Runner
    from memwrap.integrations.agents_tools import memory_tools

    agent = Agent(name="assistant", instructions="...", tools=memory_tools("alice"))
    await Runner.run(agent, "I moved to Lisbon last week.")

Each tool is a `FunctionTool` with a strict JSON schema (the SDK's recommended mode); what it does, the
arguments it takes and the text it returns are memwrap/integrations/memory_tools.py's, the same for every
framework. A mistake the model can fix (an unknown id, an empty query) is returned to the model as the tool's
result with what to do instead: the SDK's default for a failing tool is a fixed "An error occurred", which
would leave the model guessing. Other failures raise, and end the run as any failing tool does.
"""

from __future__ import annotations

import json
from typing import Any

from memwrap.integrations import needs

try:
    from agents import FunctionTool, RunContextWrapper
except ImportError as exc:  # the [agents] extra: the OpenAI Agents SDK is the `openai-agents` package
    raise ImportError(needs("agents_tools", "openai-agents", "agents")) from exc
from agents.strict_schema import ensure_strict_json_schema

from memwrap.integrations.memory_tools import TOOLS, MemoryToolError, MemoryTools, ToolSpec, json_schema
from memwrap.wrappers.backend import MemoryLike

__all__ = ["memory_tools"]


def memory_tools(
    bank_id: str,
    *,
    memory: MemoryLike | str | None = None,
    memory_api_key: str | None = None,
    token_budget: int | None = None,
) -> list[FunctionTool]:
    """The three memory tools over `bank_id` (no argument of theirs can name another bank).

    `memory`: a `Memory`, an `AsyncMemory`, a sidecar URL, or None (the process's `Memory()`); `token_budget`:
    tokens of the recalled block (MemoryTools has the details)."""
    tools = MemoryTools(bank_id, memory=memory, memory_api_key=memory_api_key, token_budget=token_budget)
    return [_tool(tools, spec) for spec in TOOLS]


def _tool(tools: MemoryTools, spec: ToolSpec) -> FunctionTool:
    async def invoke(context: RunContextWrapper[Any], arguments: str) -> str:
        try:
            parsed = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            return f"{spec.name} was called with arguments that are not JSON ({exc.msg}); send a JSON object."
        if not isinstance(parsed, dict):
            return f"{spec.name} takes a JSON object of arguments."
        try:
            return await tools.arun(spec.name, parsed)
        except MemoryToolError as exc:
            return str(exc)

    return FunctionTool(
        name=spec.name,
        description=spec.description,
        params_json_schema=ensure_strict_json_schema(json_schema(spec)),
        on_invoke_tool=invoke,
        strict_json_schema=True,
    )
