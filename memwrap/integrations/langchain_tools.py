"""LangChain: memory as tools an agent calls when it decides to (`recall_memory`, `retain_memory`,
`invalidate_memory`), over one bank fixed here.

    from langchain.agents import create_agent
    from memwrap.integrations.langchain_tools import memory_tools

    agent = create_agent(ChatOpenAI(model="gpt-4o-mini"), tools=memory_tools("alice"))
    # or llm.bind_tools(memory_tools("alice")); or MemoryToolkit(bank_id="alice").get_tools()

Each tool is a `StructuredTool` with a sync and an async body (`invoke`, `ainvoke`, LangGraph's ToolNode); what
they do, the arguments they take and the text they return are memwrap/integrations/memory_tools.py's, the same
for every framework. A mistake the model can fix comes back to it as the tool's result (a `ToolException`
with `handle_tool_error`), so the agent loop goes on. `wrap_chat_model` (memwrap/integrations/langchain.py) is
the other way: memory on every call of a model, with no tool call needed; the two can be used together.
"""

from __future__ import annotations

from typing import Any

from memwrap.integrations import needs

try:
    from langchain_core.tools import BaseTool, BaseToolkit, StructuredTool, ToolException
except ImportError as exc:  # the [langchain] extra
    raise ImportError(needs("langchain_tools", "langchain", "langchain")) from exc
from pydantic import ConfigDict

from memwrap.integrations.memory_tools import TOOLS, MemoryToolError, MemoryTools, ToolSpec, json_schema
from memwrap.wrappers.backend import MemoryLike

__all__ = ["MemoryToolkit", "memory_tools"]


def memory_tools(
    bank_id: str,
    *,
    memory: MemoryLike | str | None = None,
    memory_api_key: str | None = None,
    token_budget: int | None = None,
) -> list[BaseTool]:
    """The three memory tools over `bank_id` (no argument of theirs can name another bank).

    `memory`: a `Memory`, an `AsyncMemory` (async calls only), a sidecar URL, or None (the process's `Memory()`);
    `token_budget`: tokens of the recalled block (MemoryTools has the details)."""
    tools = MemoryTools(bank_id, memory=memory, memory_api_key=memory_api_key, token_budget=token_budget)
    return [_tool(tools, spec) for spec in TOOLS]


def _tool(tools: MemoryTools, spec: ToolSpec) -> StructuredTool:
    def run(**arguments: Any) -> str:
        try:
            return tools.run(spec.name, arguments)
        except MemoryToolError as exc:
            raise ToolException(str(exc)) from None

    async def arun(**arguments: Any) -> str:
        try:
            return await tools.arun(spec.name, arguments)
        except MemoryToolError as exc:
            raise ToolException(str(exc)) from None

    # args_schema as JSON schema: LangChain shows it to the model and hands the arguments on as they came; they
    # are checked by the core (memory_tools._parse), as for every framework.
    return StructuredTool(
        name=spec.name,
        description=spec.description,
        args_schema=json_schema(spec),
        func=run,
        coroutine=arun,
        handle_tool_error=True,
    )


class MemoryToolkit(BaseToolkit):
    """The memory tools as a LangChain toolkit: `MemoryToolkit(bank_id="alice").get_tools()`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    bank_id: str
    memory: Any = None  # a Memory, an AsyncMemory or a sidecar URL; None: the process's Memory()
    memory_api_key: str | None = None
    token_budget: int | None = None

    def get_tools(self) -> list[BaseTool]:
        return memory_tools(
            self.bank_id, memory=self.memory, memory_api_key=self.memory_api_key, token_budget=self.token_budget
        )
