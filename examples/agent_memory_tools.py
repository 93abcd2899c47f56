"""An OpenAI Agents SDK agent that decides for itself what to remember: memory as its tools (recall_memory,
retain_memory, invalidate_memory). Conversation 1 tells it something; conversation 2, a new run with no shared
history, asks about it, and the agent recalls it through the tool.

    pip install 'memwrap[frameworks]'
    OPENAI_API_KEY=sk-... python examples/agent_memory_tools.py

Env: OPENAI_API_KEY (required), OPENAI_BASE_URL (optional: any OpenAI-compatible server with tool calling),
OPENAI_MODEL (default gpt-4o-mini), MEMWRAP_BANK (default "example-user"), MEMWRAP_HOME (where memory lives,
default ~/.memwrap). Run it twice: the second run's first conversation already finds what the first run kept.
"""

from __future__ import annotations

import asyncio
import os

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

from memwrap.integrations.agents_tools import memory_tools

INSTRUCTIONS = (
    "You are a concise personal assistant with long-term memory. Before answering a question that may depend on "
    "earlier conversations, call recall_memory. When the user tells you something about themselves worth keeping, "
    "call retain_memory with one self-contained fact. When the user corrects something you remembered, call "
    "invalidate_memory with its id, then retain the new fact."
)


async def converse(agent: Agent, prompt: str, label: str) -> str:
    result = await Runner.run(agent, prompt)
    calls = [item.raw_item for item in result.new_items if item.type == "tool_call_item"]
    for call in calls:
        print(f"{label} tool call: {getattr(call, 'name', '?')}({getattr(call, 'arguments', '')})")
    print(f"{label}:", result.final_output)
    return str(result.final_output)


async def run() -> None:
    set_tracing_disabled(True)  # the SDK would send traces to api.openai.com, whatever OPENAI_BASE_URL says
    # Chat Completions rather than the SDK's default Responses API: every OpenAI-compatible server has it.
    model = OpenAIChatCompletionsModel(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), openai_client=AsyncOpenAI())
    agent = Agent(
        name="assistant",
        instructions=INSTRUCTIONS,
        model=model,
        tools=memory_tools(os.environ.get("MEMWRAP_BANK", "example-user")),
    )
    await converse(agent, "Hi! I'm vegetarian, and I'm learning Portuguese for a move to Porto.", "conversation 1")
    await converse(
        agent, "Can you suggest a dinner for me tonight, with its name in the language I'm learning?", "conversation 2"
    )


def main() -> None:
    asyncio.run(run())


if __name__ == "__main__":
    main()
