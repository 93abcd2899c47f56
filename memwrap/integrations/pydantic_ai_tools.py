"""pydantic-ai: memory as a toolset an agent calls when it decides to (`recall_memory`, `retain_memory`,
`invalidate_memory`), over one bank fixed here.

    from pydantic_ai import Agent
    from memwrap.integrations.pydantic_ai_tools import memory_toolset

    agent = Agent("openai:gpt-4o-mini", toolsets=[memory_toolset("alice")])
    await agent.run("I moved to Lisbon last week.")

The toolset is a `FunctionToolset` (so `.prefixed("user")`, `.filtered(...)` and the other toolset wrappers
apply); what each tool does, the arguments it takes and the text it returns are
memwrap/integrations/memory_tools.py's, the same for every framework. A mistake the model can fix (an unknown
id, an empty query) is a `ModelRetry`: the model gets the message and may call again, within the agent's
retries.
"""

from __future__ import annotations

from typing import Any

from memwrap.integrations import needs

try:
    from pydantic_ai import FunctionToolset, ModelRetry, Tool
except ImportError as exc:  # the [pydantic-ai] extra
    raise ImportError(needs("pydantic_ai_tools", "pydantic-ai-slim", "pydantic-ai")) from exc

from memwrap.integrations.memory_tools import TOOLS, MemoryToolError, MemoryTools, ToolSpec, json_schema
from memwrap.wrappers.backend import MemoryLike

__all__ = ["memory_toolset"]


def memory_toolset(
    bank_id: str,
    *,
    memory: MemoryLike | str | None = None,
    memory_api_key: str | None = None,
    token_budget: int | None = None,
) -> FunctionToolset[Any]:
    """The three memory tools over `bank_id` (no argument of theirs can name another bank), as one toolset.

    `memory`: a `Memory`, an `AsyncMemory`, a sidecar URL, or None (the process's `Memory()`); `token_budget`:
    tokens of the recalled block (MemoryTools has the details)."""
    tools = MemoryTools(bank_id, memory=memory, memory_api_key=memory_api_key, token_budget=token_budget)
    return FunctionToolset([_tool(tools, spec) for spec in TOOLS])


def _tool(tools: MemoryTools, spec: ToolSpec) -> Tool[Any]:
    async def call(**arguments: Any) -> str:
        try:
            return await tools.arun(spec.name, arguments)
        except MemoryToolError as exc:
            raise ModelRetry(str(exc)) from None

    # from_schema: pydantic-ai shows the model this schema and passes the arguments on as they came; they are
    # checked by the core (memory_tools._parse), as for every framework.
    return Tool.from_schema(call, name=spec.name, description=spec.description, json_schema=json_schema(spec))
