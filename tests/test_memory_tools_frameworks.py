"""Memory as tools, through each framework's own agent loop against the fake model server: the OpenAI Agents
SDK (`Runner.run`, Responses and Chat Completions models), pydantic-ai (`Agent.run` with the toolset, Chat and
Responses models), LangChain (a `bind_tools` loop with `tool.invoke`, and LangChain's and LangGraph's agents
when installed), and one over a sidecar (the HTTP client). The scenario and its checks:
tests/memory_tools_support.py."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from conftest_wrappers import *  # noqa: F403 - fixtures
from conftest_wrappers import Reply, ToolCall, openai_sdk
from memory_tools_support import (
    ASK,
    FACT,
    arguments_sent,
    play,
    remember_recall_forget,
    tool_outputs,
)
from test_server_harness import *  # noqa: F403 - fixtures: sidecar, upstream
from test_server_harness import ADMIN_KEY

from memwrap import Memory

# What the wrappers do with memory, not what the engine stores or ranks: the in-memory engine (memwrap.testing).
warm_memory = memory_double()

# -- the OpenAI Agents SDK --------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["responses", "chat_completions"])
def test_agents_sdk(api: str, llm_server: Any, warm_memory: Any, bank: str) -> None:
    agents = pytest.importorskip("agents")
    from memwrap.integrations.agents_tools import memory_tools

    agents.set_tracing_disabled(True)  # traces would go to api.openai.com
    model_class = agents.OpenAIResponsesModel if api == "responses" else agents.OpenAIChatCompletionsModel
    tools = memory_tools(bank, memory=warm_memory)

    def run(prompt: str) -> str:  # a run of its own, as in a later process: its own event loop and model client
        client = openai_sdk(llm_server, is_async=True)
        agent = agents.Agent(
            name="assistant",
            instructions="Remember what matters about the user.",
            model=model_class(model="gpt-4o-mini", openai_client=client),
            tools=tools,
        )
        return str(asyncio.run(agents.Runner.run(agent, prompt)).final_output)

    seen = remember_recall_forget(run, llm_server, warm_memory, bank)
    schema = next(t for t in seen["requests"][0].body["tools"] if "retain_memory" in str(t))
    parameters = schema.get("parameters") or schema["function"]["parameters"]
    assert set(parameters["properties"]) == {"text", "tags"} and parameters["additionalProperties"] is False


def test_agents_sdk_hands_the_model_its_mistake(llm_server: Any, warm_memory: Any, bank: str) -> None:
    """An id this bank does not hold comes back to the model as the tool's result, saying what to do."""
    agents = pytest.importorskip("agents")
    from memwrap.integrations.agents_tools import memory_tools

    agents.set_tracing_disabled(True)
    other = warm_memory.retain(f"{bank}-other", "Carol's cat is called Miso.")[0]
    agent = agents.Agent(
        name="assistant",
        model=agents.OpenAIChatCompletionsModel(
            model="gpt-4o-mini", openai_client=openai_sdk(llm_server, is_async=True)
        ),
        tools=memory_tools(bank, memory=warm_memory),
    )
    call = {"memory_id": str(other), "reason": "wrong bank"}
    play(llm_server, [Reply(tool_calls=[ToolCall("invalidate_memory", call)]), Reply("Sorry.")])
    assert asyncio.run(agents.Runner.run(agent, "Forget Miso.")).final_output == "Sorry."
    (result,) = tool_outputs(llm_server.requests[-1])
    assert result == f"No memory with id {other} in bank {bank!r}; call recall_memory to see the ids."
    assert warm_memory.memory_context(f"{bank}-other", other).invalidated_at is None  # the other bank is untouched


# -- pydantic-ai ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["chat", "responses"])
def test_pydantic_ai(kind: str, llm_server: Any, warm_memory: Any, bank: str) -> None:
    pydantic_ai = pytest.importorskip("pydantic_ai")
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from memwrap.integrations.pydantic_ai_tools import memory_toolset

    model_class = OpenAIChatModel if kind == "chat" else OpenAIResponsesModel
    toolset = memory_toolset(bank, memory=warm_memory)

    def run(prompt: str) -> str:  # a run of its own, as in a later process: its own event loop and model client
        provider = OpenAIProvider(openai_client=openai_sdk(llm_server, is_async=True))
        agent = pydantic_ai.Agent(model_class("gpt-4o-mini", provider=provider), toolsets=[toolset])
        return str(asyncio.run(agent.run(prompt)).output)

    remember_recall_forget(run, llm_server, warm_memory, bank)


def test_pydantic_ai_retries_a_call_the_model_got_wrong(llm_server: Any, warm_memory: Any, bank: str) -> None:
    """An empty query is a ModelRetry: the model reads why, calls again, and the second call recalls."""
    pydantic_ai = pytest.importorskip("pydantic_ai")
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from memwrap.integrations.pydantic_ai_tools import memory_toolset

    warm_memory.retain(bank, FACT)
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=openai_sdk(llm_server, is_async=True)))
    agent = pydantic_ai.Agent(model, toolsets=[memory_toolset(bank, memory=warm_memory)])
    play(
        llm_server,
        [
            Reply(tool_calls=[ToolCall("recall_memory", {"query": ""})]),
            Reply(tool_calls=[ToolCall("recall_memory", {"query": "dog"})]),
            Reply("Biscuit."),
        ],
    )
    assert asyncio.run(agent.run("What's my dog called?")).output == "Biscuit."
    retry, recalled = tool_outputs(llm_server.requests[-1])
    assert "recall_memory was called with invalid arguments (query: String should have at least 1 character)" in retry
    assert "Biscuit" in recalled


# -- LangChain --------------------------------------------------------------------------------------------------


def test_langchain_tool_loop(llm_server: Any, warm_memory: Any, bank: str) -> None:
    """The loop langchain-core gives: a model with the tools bound, each tool call run by `tool.invoke(call)`
    (a ToolMessage back), until the model answers. Sync throughout: the tools' sync bodies."""
    langchain_openai = pytest.importorskip("langchain_openai")
    from langchain_core.messages import HumanMessage

    from memwrap.integrations.langchain_tools import memory_tools

    tools = {tool.name: tool for tool in memory_tools(bank, memory=warm_memory)}
    llm = langchain_openai.ChatOpenAI(
        model="gpt-4o-mini", base_url=llm_server.openai_base_url, api_key="test", max_retries=0
    ).bind_tools(list(tools.values()))

    def run(prompt: str) -> str:
        history: list[Any] = [HumanMessage(prompt)]
        while True:
            step = llm.invoke(history)
            history.append(step)
            if not step.tool_calls:
                return str(step.content)
            history += [tools[call["name"]].invoke(call) for call in step.tool_calls]

    remember_recall_forget(run, llm_server, warm_memory, bank)


# LangChain's agent (`langchain.agents.create_agent`) and LangGraph's prebuilt one it replaces: each a graph whose
# ToolNode runs the tools. Each runs when its package is installed (langgraph comes with the frameworks extra).
AGENT_FACTORIES = {"langchain.agents": "create_agent", "langgraph.prebuilt": "create_react_agent"}


@pytest.mark.parametrize("module", sorted(AGENT_FACTORIES))
def test_langchain_agent(module: str, llm_server: Any, warm_memory: Any, bank: str) -> None:
    """An agent graph run asynchronously (`ainvoke`): the tools' async bodies."""
    langchain_openai = pytest.importorskip("langchain_openai")
    create = getattr(pytest.importorskip(module), AGENT_FACTORIES[module])
    from memwrap.integrations.langchain_tools import MemoryToolkit

    tools = MemoryToolkit(bank_id=bank, memory=warm_memory).get_tools()

    def run(prompt: str) -> str:  # a run of its own, as in a later process: its own event loop and model client
        llm = langchain_openai.ChatOpenAI(
            model="gpt-4o-mini",
            base_url=llm_server.openai_base_url,
            api_key="test",
            max_retries=0,
            http_async_client=httpx.AsyncClient(),
        )
        state = asyncio.run(create(llm, tools).ainvoke({"messages": [("user", prompt)]}))
        return str(state["messages"][-1].content)

    remember_recall_forget(run, llm_server, warm_memory, bank)


def test_langchain_reports_mistakes_to_the_model(llm_server: Any, warm_memory: Any, bank: str) -> None:
    pytest.importorskip("langchain_core")
    from memwrap.integrations.langchain_tools import memory_tools

    invalidate = memory_tools(bank, memory=warm_memory)[2]
    call = {
        "name": "invalidate_memory",
        "args": {"memory_id": "not-an-id", "reason": "x"},
        "id": "c1",
        "type": "tool_call",
    }
    message = invalidate.invoke(call)
    assert message.status == "error" and "'not-an-id' is not a memory id" in message.content
    stray = {**call, "args": {"memory_id": "not-an-id", "reason": "x", "bank_id": "someone-else"}}
    assert "bank_id: Extra inputs are not permitted" in invalidate.invoke(stray).content


# -- over a sidecar (the HTTP client) ---------------------------------------------------------------------------


def test_tools_over_a_sidecar(sidecar: Any, llm_server: Any, bank: str) -> None:
    """memory="http://..." gives the tools the sidecar's memory: the scenario through pydantic-ai, checked with a
    Memory on the same sidecar."""
    pydantic_ai = pytest.importorskip("pydantic_ai")
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from memwrap.integrations.pydantic_ai_tools import memory_toolset

    toolset = memory_toolset(bank, memory=sidecar.url, memory_api_key=ADMIN_KEY)

    def run(prompt: str) -> str:
        provider = OpenAIProvider(openai_client=openai_sdk(llm_server, is_async=True))
        return str(
            asyncio.run(
                pydantic_ai.Agent(OpenAIChatModel("gpt-4o-mini", provider=provider), toolsets=[toolset]).run(prompt)
            ).output
        )

    with Memory(url=sidecar.url, api_key=ADMIN_KEY) as remote:
        seen = remember_recall_forget(run, llm_server, remote, bank)
    assert [c["name"] for c in arguments_sent(seen["requests"][-1])] == ["recall_memory", "invalidate_memory"]
    assert ASK in str(seen["requests"][-1].body)
