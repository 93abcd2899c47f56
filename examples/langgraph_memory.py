"""A LangGraph graph that remembers a user across threads, its long-term memory a memwrap store.

    OPENAI_API_KEY=sk-... python examples/langgraph_memory.py            # thread 1 tells, thread 2 asks
    python examples/langgraph_memory.py --thread monday "I'm vegetarian and I live in Porto."
    python examples/langgraph_memory.py --thread friday "What should I cook tonight?"   # another process

The graph's one node searches the store for the user's memories (a memwrap recall over the namespace
(<user>, "memories")), answers with them in the system prompt, and stores what the user said. A thread's own
messages live in the checkpointer (here in memory, per process); what the user told any thread lives in memwrap, so
a new thread (or a new process) knows it. With `bank_id=None` the namespace's first label is the memwrap bank:
a client wrapped with `memwrap.wrap_openai(OpenAI(), bank_id=<user>)` recalls the same memories.

Env: OPENAI_API_KEY (required), OPENAI_BASE_URL (optional: any OpenAI-compatible server), OPENAI_MODEL (default
gpt-4o-mini), MEMWRAP_BANK (the user, and so the bank; default "example-user"), MEMWRAP_HOME (where memory lives,
default ~/.memwrap).
"""

from __future__ import annotations

import argparse
import os
import uuid
from dataclasses import dataclass

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.runtime import Runtime
from openai import OpenAI

from memwrap.integrations.langgraph import MemwrapStore

ROLES = {"human": "user", "ai": "assistant", "system": "system"}


@dataclass
class Context:
    user_id: str


def build_graph(client: OpenAI, model: str, store: MemwrapStore) -> object:
    def chat(state: MessagesState, runtime: Runtime[Context]) -> dict[str, object]:
        assert runtime.store is not None
        namespace = (runtime.context.user_id, "memories")
        said = str(state["messages"][-1].content)
        memories = runtime.store.search(namespace, query=said, limit=5)
        print("  recalled:", [m.value["text"] for m in memories])
        system = "You are a helpful assistant. What you know about the user:\n" + "\n".join(
            f"- {m.value['text']}" for m in memories
        )
        messages = [{"role": "system", "content": system if memories else "You are a helpful assistant."}]
        messages += [{"role": ROLES[m.type], "content": str(m.content)} for m in state["messages"]]
        reply = client.chat.completions.create(model=model, messages=messages)  # type: ignore[arg-type]
        runtime.store.put(namespace, uuid.uuid4().hex, {"text": said})  # what the user told us, for next time
        return {"messages": [{"role": "assistant", "content": reply.choices[0].message.content or ""}]}

    builder = StateGraph(MessagesState, context_schema=Context)
    builder.add_node("chat", chat)
    builder.add_edge(START, "chat")
    builder.add_edge("chat", END)
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def turn(graph: object, user_id: str, thread_id: str, text: str) -> str:
    print(f"thread {thread_id}: {text}")
    result = graph.invoke(  # type: ignore[attr-defined]
        {"messages": [{"role": "user", "content": text}]},
        {"configurable": {"thread_id": thread_id}},
        context=Context(user_id=user_id),
    )
    answer = str(result["messages"][-1].content)
    print(f"  answer: {answer}")
    return answer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--thread", help="the conversation thread id (default: run two threads)")
    parser.add_argument("message", nargs="?", help="what the user says in that thread")
    args = parser.parse_args(argv)
    user_id = os.environ.get("MEMWRAP_BANK", "example-user")
    store = MemwrapStore(bank_id=None)  # the namespace's first label (the user) is the bank
    graph = build_graph(OpenAI(), os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), store)
    if args.thread:
        turn(graph, user_id, args.thread, args.message or "What do you know about me?")
        return
    turn(graph, user_id, "thread-1", "Hi! My favourite colour is teal and I live in Porto.")
    turn(graph, user_id, "thread-2", "Which city do I live in, and what colour do I like?")


if __name__ == "__main__":
    main()
