"""Memory defense on encoded secrets: false positives on real conversation, and the cost per short turn.

    PYTHONPATH=. python bench/defense_encodings.py [--turns 2000] [--retain 2000]

Counts the texts of /work/shared/data/memorybank/*.json and LoCoMo (dev) that `scan` flags (with the kinds), and
times `scan` on short chat turns (median of 5 passes). Run it on two trees (PYTHONPATH=<tree>) to compare
before and after; the figures are of the machine it runs on. `--retain N` also retains N short turns (LoCoMo,
100 to a call, each with a session id so the split-secret joint is read too) into a new bank of MEMWRAP_HOME
and prints items/s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from pathlib import Path

from memwrap.defense.policy import scan

DATA = Path("/work/shared/data")


def memorybank_texts() -> list[str]:
    texts: list[str] = []
    for path in sorted((DATA / "memorybank").glob("*.json")):
        for person in json.loads(path.read_text(encoding="utf-8")).values():
            for turns in person.get("history", {}).values():
                for turn in turns:
                    texts += [turn.get("query", ""), turn.get("response", "")]
    return [t for t in texts if t]


def locomo_texts() -> list[str]:
    texts: list[str] = []
    for conversation in json.loads((DATA / "locomo" / "locomo_dev5.json").read_text(encoding="utf-8")):
        for key, session in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                texts += [turn.get("text", "") for turn in session]
    return [t for t in texts if t]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--retain", type=int, default=0)
    args = parser.parse_args()
    corpora = {"memorybank": memorybank_texts(), "locomo": locomo_texts()}
    for name, texts in corpora.items():
        kinds: Counter[str] = Counter()
        flagged = 0
        for text in texts:
            found = scan(text)
            flagged += bool(found)
            kinds.update(f.kind for f in found)
        print(f"{name}: {flagged}/{len(texts)} texts flagged {dict(kinds)}")
    turns = (corpora["locomo"] + corpora["memorybank"])[: args.turns]
    passes = []
    for _ in range(5):
        began = time.perf_counter()
        for text in turns:
            scan(text)
        passes.append(time.perf_counter() - began)
    median = statistics.median(passes)
    print(f"scan: {len(turns)} short turns in {median * 1000:.1f} ms (median of 5): {len(turns) / median:,.0f} turns/s")
    if args.retain:
        retain(corpora["locomo"][: args.retain])


def retain(turns: list[str]) -> None:
    import uuid

    from memwrap import Memory

    memory = Memory()
    bank = f"bench-defense-{uuid.uuid4().hex[:8]}"
    try:
        memory.retain(bank, "warm up", metadata={"session_id": "warm"})
        began = time.perf_counter()
        for start in range(0, len(turns), 100):
            items = [
                {"content": text, "metadata": {"session_id": f"s{(start + i) // 20}"}}
                for i, text in enumerate(turns[start : start + 100])
            ]
            memory.retain_many(bank, items)
        elapsed = time.perf_counter() - began
        print(f"retain: {len(turns)} short turns in {elapsed:.1f} s: {len(turns) / elapsed:,.0f} items/s")
    finally:
        memory.delete_bank(bank)
        memory.close()


if __name__ == "__main__":
    main()
