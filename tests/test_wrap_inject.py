"""The payload-level pieces the wrappers and the sidecar proxy share: placement, stripping, query, transcript.

Pure functions on plain dicts (raw JSON bodies), so no engine and no SDK are needed here.
"""

from __future__ import annotations

import copy
from datetime import datetime

from openai.types.chat import ChatCompletionMessage

from memwrap.block import format as block_format
from memwrap.block.fence import CLOSE_TAG, OPEN_TAG
from memwrap.wrappers import inject
from memwrap.wrappers.inject import (
    build_query,
    inject_anthropic,
    inject_chat,
    inject_responses,
    query_for,
    strip_memory,
)
from memwrap.wrappers.streams import AnthropicAccumulator, ChatAccumulator, ResponsesAccumulator
from memwrap.wrappers.transcript import (
    Turn,
    anthropic_turns,
    chat_turns,
    in_tool_loop,
    new_turns,
    render,
    responses_turns,
    session_key,
    turn_number,
)

# A block exactly as the engine renders it: only such blocks (or ones this process injected) are ever stripped.
BLOCK = block_format.header(datetime(2026, 1, 2)) + "- likes teal\n" + block_format.footer()


def test_fence_matches_the_engine_renderer() -> None:
    # The wrappers recognise blocks by the engine's fence; if pack.py changes its tags, this must fail.
    assert (block_format.OPEN_TAG, block_format.CLOSE_TAG) == (OPEN_TAG, CLOSE_TAG)
    rendered = block_format.header(datetime(2026, 1, 2)) + "- x\n" + block_format.footer()
    assert strip_memory("Be brief.\n\n" + rendered) == "Be brief."


def test_chat_block_goes_after_the_first_system_message_and_input_is_untouched() -> None:
    body = {"model": "m", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]}
    before = copy.deepcopy(body)
    out = inject_chat(body, BLOCK)
    assert body == before, "the app's payload is never mutated"
    assert out["messages"][0] == {"role": "system", "content": "Be brief.\n\n" + BLOCK}
    assert out["messages"][1] is body["messages"][1]


def test_chat_without_system_gets_one_at_the_front_and_developer_counts_as_system() -> None:
    out = inject_chat({"messages": [{"role": "user", "content": "hi"}]}, BLOCK)
    assert out["messages"][0] == {"role": "system", "content": BLOCK}
    out = inject_chat({"messages": [{"role": "developer", "content": [{"type": "text", "text": "Rules"}]}]}, BLOCK)
    assert out["messages"][0]["content"] == [{"type": "text", "text": "Rules"}, {"type": "text", "text": BLOCK}]


def test_injecting_into_an_already_injected_payload_leaves_one_block() -> None:
    stale = BLOCK.replace("likes teal", "likes red")
    body = {"messages": [{"role": "system", "content": "Be brief.\n\n" + stale}, {"role": "user", "content": "hi"}]}
    out = inject_chat(body, BLOCK)
    assert out["messages"][0]["content"] == "Be brief.\n\n" + BLOCK
    assert inject_chat(out, "")["messages"][0]["content"] == "Be brief."


def test_sdk_message_objects_are_read_and_passed_through() -> None:
    assistant = ChatCompletionMessage(role="assistant", content="Hello!")
    body = {"messages": [{"role": "user", "content": "hi"}, assistant, {"role": "user", "content": "again"}]}
    out = inject_chat(body, BLOCK)
    assert out["messages"][2] is assistant
    assert [t.role for t in chat_turns(body["messages"])] == ["user", "assistant", "user"]


def test_responses_block_goes_into_instructions() -> None:
    assert inject_responses({"input": "hi"}, BLOCK)["instructions"] == BLOCK
    assert inject_responses({"input": "hi", "instructions": "Short."}, BLOCK)["instructions"] == "Short.\n\n" + BLOCK
    assert "instructions" not in inject_responses({"input": "hi"}, "")


def test_anthropic_system_string_list_or_missing() -> None:
    assert inject_anthropic({"messages": []}, BLOCK)["system"] == BLOCK
    assert inject_anthropic({"system": "Sys"}, BLOCK)["system"] == "Sys\n\n" + BLOCK
    cached = [{"type": "text", "text": "Sys", "cache_control": {"type": "ephemeral"}}]
    out = inject_anthropic({"system": cached}, BLOCK)
    assert out["system"] == [*cached, {"type": "text", "text": BLOCK}], "the app's cached prefix stays first"
    assert inject_anthropic({"system": out["system"]}, "")["system"] == cached


def test_query_is_the_last_user_turn_with_context_when_short() -> None:
    turns = [
        Turn("user", "Tell me about Alice's family, she has a brother and a sister."),
        Turn("assistant", "Alice has two siblings."),
        Turn("user", "and her sister?"),
    ]
    query = build_query(turns)
    assert query.endswith("and her sister?") and "Alice" in query
    long = Turn("user", "What did I say about the garden last spring, and which seeds did I plant then?")
    assert build_query([*turns, Turn("assistant", "ok"), long]) == long.text
    assert build_query([Turn("user", "x" * 5000)]) == "x" * 1000
    assert build_query([Turn("assistant", "hi")]) == ""


def test_query_joins_text_parts_and_ignores_memory_blocks() -> None:
    body = {
        "messages": [
            {"role": "system", "content": BLOCK},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What colour"},
                    {"type": "image_url", "image_url": {"url": "data:..."}},
                    {"type": "text", "text": "is this? " + BLOCK},
                ],
            },
        ]
    }
    assert query_for("openai.chat", body) == "What colour\nis this?"
    assert (
        query_for("openai.responses", {"input": [{"role": "user", "content": [{"type": "input_text", "text": "hey"}]}]})
        == "hey"
    )
    assert (
        query_for("anthropic.messages", {"messages": [{"role": "user", "content": [{"type": "text", "text": "yo"}]}]})
        == "yo"
    )


def test_new_turns_are_the_ones_after_the_last_answer() -> None:
    turns = chat_turns(
        [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "one"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "18C, sunny"},
            {"role": "user", "content": "thanks"},
        ]
    )
    call = 'called get_weather({"city": "Paris"})'
    assert turns[2].text == call and turns[2].calls_tools and not turns[2].is_answer
    # A tool call is a step of the user's turn, not its answer: the turn runs from "one" ...
    assert (
        render(new_turns(turns)) == f"user: one\nassistant: {call}\ntool result: get_weather: 18C, sunny\nuser: thanks"
    )
    assert render(new_turns(turns, tools=False)) == "user: one\nuser: thanks"
    # ... unless every step is an exchange of its own.
    assert render(new_turns(turns, per_step=True)) == "tool result: get_weather: 18C, sunny\nuser: thanks"
    assert turn_number(turns) == 0 and turn_number(turns, per_step=True) == 1
    assert in_tool_loop(turns[:4]) and not in_tool_loop(turns)


def test_anthropic_and_responses_tool_turns_are_readable() -> None:
    turns = anthropic_turns(
        [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Oslo"}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "-3C"}]}],
            },
        ]
    )
    assert [t.role for t in turns] == ["user", "assistant", "tool"]
    assert turns[2].text == "weather: -3C"
    items = responses_turns(
        [
            {"role": "user", "content": "weather?"},
            {"type": "function_call", "call_id": "c", "name": "weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "warm"},
        ]
    )
    assert render(items) == "user: weather?\nassistant: called weather({})\ntool result: weather: warm"
    assert turns[1].calls_tools and items[1].calls_tools
    # One response's items (a message, then its function call) are one assistant turn.
    merged = responses_turns(
        [
            {"role": "user", "content": "weather?"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
            {"type": "function_call", "call_id": "c", "name": "weather", "arguments": "{}"},
        ]
    )
    assert [(t.role, t.text, t.calls_tools) for t in merged[1:]] == [
        ("assistant", "Checking.\ncalled weather({})", True)
    ]


def test_session_key_is_stable_and_ignores_later_turns() -> None:
    a = chat_turns([{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}])
    b = chat_turns(
        [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    )
    assert session_key(a) == session_key(b) != session_key(chat_turns([{"role": "user", "content": "hi"}]))


def test_accumulators_read_raw_sse_json() -> None:
    # The sidecar sees dicts, not SDK objects: the same accumulators must read them.
    chat = ChatAccumulator()
    for delta in (
        {"role": "assistant", "content": "Hel"},
        {"content": "lo"},
        {"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{}"}}]},
    ):
        chat.feed({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    chat.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    assert chat.done and chat.answer()[0].text == "Hello\ncalled f({})"
    claude = AnthropicAccumulator()
    claude.feed({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    claude.feed({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi there"}})
    claude.feed({"type": "message_stop"})
    assert claude.done and claude.answer()[0].text == "Hi there"
    resp = ResponsesAccumulator()
    resp.feed({"type": "response.output_text.delta", "delta": "Par"})
    resp.feed({"type": "response.output_text.delta", "delta": "tial"})
    assert not resp.done and resp.answer()[0].text == "Partial"


def test_provider_table_is_complete() -> None:
    assert set(inject.PROVIDERS) == {"openai.chat", "openai.responses", "anthropic.messages"}
