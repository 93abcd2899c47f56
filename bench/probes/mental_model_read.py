"""Mental-model read latency: `Memory.get_mental_model(bank, name)` on a bank of each size.

The model's content is generated once, before timing (the engine's LLM when one is configured, otherwise the
recall of its question); a read is then one indexed SELECT, whatever the bank size. Timed through the public
sync API, so the figure includes the hop to Memory's event-loop thread and pydantic validation.

Runs as part of `python -m bench` (this package's modules register their probes), or alone on a fresh bank:

    .venv/bin/python -m bench.probes.mental_model_read [--memories 1000] [--reads 500]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from typing import Any

from bench.latency import ProbeContext, ProbeResult, register_probe, time_calls

NAME = "bench-mental-model"
QUESTION = "What are the user's main interests and plans?"


def _prepare(memory: Any, bank_id: str) -> None:
    with contextlib.suppress(KeyError):  # MemoryNotFoundError: not there yet
        memory.delete_mental_model(bank_id, NAME)
    memory.create_mental_model(bank_id, NAME, QUESTION, max_answer_tokens=512)
    memory.refresh_mental_model(bank_id, NAME)  # content in place before the first timed read


@register_probe("mental_model_read", "mental-model read p50", order=60)
def probe(ctx: ProbeContext) -> ProbeResult:
    _prepare(ctx.memory, ctx.bank_id)
    model = ctx.memory.get_mental_model(ctx.bank_id, NAME)
    result = time_calls(ctx, lambda _query: ctx.memory.get_mental_model(ctx.bank_id, NAME), supply=lambda n: [NAME] * n)
    result.note = (
        f"Memory.get_mental_model: one SELECT by (bank_id, name); content {len(model.content)} chars "
        f"({model.generator}), status {model.status}"
    )
    return result


def main() -> None:
    from memwrap import Memory
    from memwrap.config import load_settings

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--reads", type=int, default=500)
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="memwrap-bench-mm-")
    with Memory(settings=load_settings(home=home, worker="off")) as memory:
        bank = "bench-mm"
        topics = ["hiking in the Alps", "learning the cello", "a trip to Kyoto", "the new job at the bakery"]
        memory.retain_many(
            bank, [f"Note {i}: the user talked about {topics[i % len(topics)]} (#{i})." for i in range(args.memories)]
        )
        _prepare(memory, bank)
        for _ in range(50):
            memory.get_mental_model(bank, NAME)
        samples = []
        for _ in range(args.reads):
            start = time.perf_counter()
            memory.get_mental_model(bank, NAME)
            samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    print(
        f"mental-model read over {args.reads} reads, bank of {args.memories}: "
        f"p50 {statistics.median(samples):.3f} ms, p95 {samples[int(len(samples) * 0.95) - 1]:.3f} ms"
    )


if __name__ == "__main__":
    main()
