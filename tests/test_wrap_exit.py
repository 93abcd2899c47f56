"""What the wrappers still hold when a script exits is delivered by that script's own exit (README: "at exit
memwrap delivers what is left"), not left in the spool for whichever process opens the home next.

The script runs as its own process, as a user's would: the real openai SDK against the fake LLM upstream, the
run's embedded PostgreSQL as its database, a home of its own (so no other process's retainer can pick up what
it leaves in the spool), and it never calls flush() or close().
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from conftest_wrappers import *  # noqa: F403 - fixtures
from conftest_wrappers import Reply, ToolCall

from memwrap import Memory
from memwrap.store.embedded_pg import embedded_database_url
from memwrap.wrappers import spool_admin

QUESTION = "Will it rain on the allotment in Leeds tomorrow?"

# Two steps of one user turn: the model asks for a tool, gets its result, asks for another tool, and the
# script ends there (a crash in the tool, a Ctrl-C, a loop cut short): the second step is held at exit.
_MID_LOOP = textwrap.dedent(
    """
    import json
    from openai import OpenAI
    import memwrap
    from memwrap import Memory

    tools = [{{"type": "function", "function": {{"name": name, "parameters": {{"type": "object"}}}}}}
             for name in ("get_weather", "get_forecast")]
    memory = Memory(home={home!r}, database_url={url!r})
    client = memwrap.wrap_openai(OpenAI(base_url={base!r}, api_key="test", max_retries=0), bank_id={bank!r},
                                 memory=memory, recall_timeout=30)
    messages = [{{"role": "user", "content": {question!r}}}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
    call = first.choices[0].message.tool_calls[0]
    messages += [first.choices[0].message, {{"role": "tool", "tool_call_id": call.id, "content": "Leeds: cloudy"}}]
    client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
    print(json.dumps({{"held": client.memwrap.loops.held, "retains": client.memwrap.stats.retains}}))
    """
)

_READ_BANK = textwrap.dedent(
    """
    import json
    from memwrap import Memory

    with Memory(home={home!r}, database_url={url!r}) as memory:
        print(json.dumps([r.text for r in memory.list({bank!r})]))
    """
)


def _run(script: str, home: Path) -> subprocess.CompletedProcess[str]:
    # A generous exit budget: the test is about the order of the exit, not about how fast it is.
    env = {**os.environ, "MEMWRAP_HOME": str(home), "MEMWRAP_EXIT_TIMEOUT": "120"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return done


def test_a_script_that_exits_mid_tool_loop_delivers_its_held_step(
    llm_server: Any, memory: Memory, bank: str, tmp_path: Path
) -> None:
    url = embedded_database_url(memory.settings.pgdata)
    llm_server.script(
        [
            Reply(tool_calls=[ToolCall("get_weather", {"city": "Leeds"}, id="call_1")]),
            Reply(tool_calls=[ToolCall("get_forecast", {"city": "Leeds", "day": "tomorrow"}, id="call_2")]),
        ]
    )
    done = _run(
        _MID_LOOP.format(home=str(tmp_path), url=url, base=llm_server.openai_base_url, bank=bank, question=QUESTION),
        tmp_path,
    )
    assert len(llm_server.requests) == 2
    at_exit = json.loads(done.stdout.splitlines()[-1])
    assert at_exit == {"held": 1, "retains": 0}, "the loop's step was still held when the script ended"

    counts = spool_admin.counts(tmp_path / "spool" / "retains.sqlite3")
    assert counts.waiting == 0 and counts.dead == 0, f"left in the spool for the next process: {counts}"

    read = _run(_READ_BANK.format(home=str(tmp_path), url=url, bank=bank), tmp_path)
    texts = json.loads(read.stdout.splitlines()[-1])
    assert any(QUESTION in t for t in texts), texts
    assert any("get_forecast" in t for t in texts), "the held step is retained as it was: its tool call answers"
