"""Why memwrap's block misses labelled evidence on a long bank: per question, per missed evidence message.

    python -m bench.long_session.diagnose --tokens 60k [--seed 1] [--home /tmp/diag] [--budget 1024] [--hybrid]
    python -m bench.long_session.diagnose --lme 1      # the first s_3q item instead of a generated bank
    python -m bench.long_session.diagnose --set assistant_weight=1.0 --quiet   # the same with a setting changed

The bank is retained once into a kept home (`--home`, bank `diag-<name>`) and reused by later runs, so only
recall is repeated while the engine's recall code changes (a change to retain needs a fresh home). For each
question, `recall(..., explain=True)` at every budget gives what was found; at `--budget` every evidence message
missing from the block is explained from the candidates the packer weighed (rank, the arms that found it and at
which rank, speaker, marks, its line's cost against the budget left):

* ``below the cut``: fused, but below the candidates offered to the packer at this budget (rank and arms from a
  recall at 8,000 tokens, whose cut keeps every fused candidate);
* ``in no arm``: no arm found a chunk of it in its top `arm_limit`;
* ``no room``: a chunk was weighed but its line did not fit (what was left; the tokens spent above it by
  neighbours, the assistant's turns, marked older statements, standing instructions are in the block summary);
* with `--hybrid`, the dense+BM25 hybrid's rank of the message's best chunk (the bench's baseline over the
  stored chunks) shows what a plain hybrid would have done with it.

Counts of the causes go at the end; `--json` writes everything.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

BUDGETS = (512, 1024, 2048)
WIDE = 8000  # a budget whose fusion cut (200) keeps every fused candidate of four arms of 60


def _tokens(text: str) -> int:
    units = re.fullmatch(r"(\d+)([kK]?)", text.strip())
    if not units:
        raise argparse.ArgumentTypeError(f"{text!r}: a token count like 60k or 120000")
    return int(units.group(1)) * (1000 if units.group(2) else 1)


def _bank(args: argparse.Namespace) -> Any:
    if args.lme:
        from bench.long_session.longmemeval import load_banks

        return load_banks(items=args.lme)[args.lme - 1]
    from bench.long_session.generator import generate_bank

    return generate_bank(args.seed, args.tokens)


def _overrides(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        out[name] = json.loads(value) if value[:1] in "0123456789-[{tf" else value
    return out


def _explain_miss(considered: list[Any], evidence: str) -> dict[str, Any]:
    mine = [c for c in considered if c.document_id == evidence]
    if not mine:
        return {"cause": "absent"}
    best = min(mine, key=lambda c: c.rank)
    return {
        "cause": "no room",
        "rank": best.rank,
        "of": len(considered),
        "arms": dict(best.arms),
        "speaker": best.speaker,
        "older": best.replaced_by is not None,
        "neighbour": best.neighbour_of is not None,
        "line_tokens": best.tokens,
        "left": best.budget_left,
        "chunks_weighed": len(mine),
    }


def _block_summary(recall: Any) -> dict[str, int]:
    """Where the block's tokens went: header/frame, neighbours, assistant turns, older statements, standing."""
    spent = Counter[str]()
    for m in recall.memories:
        spent["lines"] += m.tokens
        if m.neighbour_of is not None:
            spent["neighbours"] += m.tokens
        if m.speaker == "assistant":
            spent["assistant"] += m.tokens
        if m.replaced_by is not None:
            spent["older"] += m.tokens
        if "standing" in m.arms:
            spent["standing"] += m.tokens
    spent["frame"] = recall.tokens - spent["lines"]
    spent["memories"] = len(recall.memories)
    return dict(spent)


def _hybrid_ranks(memory: Any, bank: Any, bank_id: str) -> dict[str, dict[str, dict[str, int]]]:
    """question id -> evidence message -> {"hybrid", "dense", "bm25"}: each baseline's rank (1-based) of the
    message's best chunk (left out: not in its top 200)."""
    from bench.baselines import HybridRetriever, baseline_embedder
    from bench.long_session.evidence import stored_chunks

    chunks = stored_chunks(memory, bank_id)
    hybrid = HybridRetriever(baseline_embedder())
    hybrid.index(chunks.texts)
    out: dict[str, dict[str, dict[str, int]]] = {}
    for q in bank.questions:
        ranks: dict[str, dict[str, int]] = {e: {} for e in q.evidence}
        orders = {
            "hybrid": hybrid.search(q.question, 200),
            "dense": hybrid.dense.search(q.question, 200),
            "bm25": hybrid.bm25.search(q.question, 200),
        }
        for name, order in orders.items():
            for rank, i in enumerate(order, start=1):
                if chunks.ids[i] in ranks:
                    ranks[chunks.ids[i]].setdefault(name, rank)
        out[q.id] = ranks
        for budget in BUDGETS:  # the hybrid's own budget walk (evidence.hybrid_results): its evidence found
            used, kept = 0, set[str]()
            for i in orders["hybrid"]:
                if used + chunks.tokens[i] <= budget:
                    used += chunks.tokens[i]
                    kept.add(chunks.ids[i])
            ranks.setdefault("@found", {})[str(budget)] = sum(e in kept for e in q.evidence)
            ranks.setdefault("@latest", {})[str(budget)] = int(q.evidence[-1] in kept)
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    from bench.long_session.evidence import retain_bank
    from memwrap import Memory
    from memwrap.config import load_settings

    bank = _bank(args)
    bank_id = f"diag-{bank.name}"
    settings = load_settings(home=args.home, worker="off", **_overrides(args.set))
    memory = Memory(settings=settings)
    try:
        if not any(b.bank_id == bank_id for b in memory.banks()):
            print(f"retaining {len(bank.messages)} messages into {bank_id} (once; kept in {args.home})")
            retain_bank(memory, bank, bank_id, 100, None)
        hybrid = _hybrid_ranks(memory, bank, bank_id) if args.hybrid else {}
        rows, causes = [], Counter[str]()
        for q in bank.questions:
            found: dict[int, int] = {}
            latest: dict[int, bool] = {}  # the newest evidence message (the labels are in time order) in the block
            misses: dict[str, Any] = {}
            block: dict[str, int] = {}
            for budget in BUDGETS:
                recall = memory.recall(bank_id, q.question, token_budget=budget, now=q.asked_at, explain=True)
                shown = {m.document_id for m in recall.memories}
                found[budget] = sum(e in shown for e in q.evidence)
                latest[budget] = q.evidence[-1] in shown
                if budget == args.budget:
                    considered = list(recall.considered or [])
                    misses = {e: _explain_miss(considered, e) for e in q.evidence if e not in shown}
                    block = _block_summary(recall)
                    if any(m["cause"] == "absent" for m in misses.values()):
                        # Every fused candidate (the cut is 200 at this budget): was it fused below the cut?
                        wide = memory.recall(bank_id, q.question, token_budget=WIDE, now=q.asked_at, explain=True)
                        for e, miss in misses.items():
                            if miss["cause"] == "absent":
                                far = _explain_miss(list(wide.considered or []), e)
                                if far["cause"] != "absent":
                                    miss.update(cause="below the cut", rank=far["rank"], arms=far["arms"],
                                                speaker=far["speaker"], older=far["older"])  # fmt: skip
                                else:
                                    miss["cause"] = "in no arm"
            for e, miss in misses.items():
                miss.update(hybrid.get(q.id, {}).get(e, {}))
                causes[f"{q.type}: {miss['cause']}"] += 1
                causes[f"all: {miss['cause']}" + (" (assistant)" if miss.get("speaker") == "assistant" else "")] += 1
            hybrid_found = {int(b): n for b, n in hybrid.get(q.id, {}).get("@found", {}).items()}
            hybrid_latest = {int(b): bool(n) for b, n in hybrid.get(q.id, {}).get("@latest", {}).items()}
            rows.append({
                "id": q.id, "type": q.type, "question": q.question, "evidence": list(q.evidence),
                "found": found, "hybrid_found": hybrid_found, "latest": latest, "hybrid_latest": hybrid_latest,
                "misses": misses, "block": block,
            })  # fmt: skip
            if not args.quiet:
                print(f"\n{q.id} [{q.type}] {q.question}")
                print(f"  found {' / '.join(f'{found[b]}' for b in BUDGETS)} of {len(q.evidence)}; block {block}")
                for e, miss in misses.items():
                    print(f"  miss {e}: {miss}")
        totals = {b: sum(r["found"][b] / len(r["evidence"]) for r in rows) / len(rows) for b in BUDGETS}
        print("\nevidence recall " + "  ".join(f"@{b} {100 * v:.1f}" for b, v in totals.items()))
        if hybrid:
            walk = {b: sum(r["hybrid_found"][b] / len(r["evidence"]) for r in rows) / len(rows) for b in BUDGETS}
            print("dense+bm25      " + "  ".join(f"@{b} {100 * v:.1f}" for b, v in walk.items()))
        by_type: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            by_type.setdefault(r["type"], []).append(r)
        for qtype, group in sorted(by_type.items()):
            cells = "  ".join(
                f"@{b} {100 * sum(r['found'][b] / len(r['evidence']) for r in group) / len(group):.1f}" for b in BUDGETS
            )
            print(f"  {qtype:24} n={len(group):2}  {cells}")
        updates = by_type.get("knowledge-update", [])
        if updates:  # its newest statement is the answer; the older ones are marked and put last on purpose
            for name, key in (("memwrap", "latest"), ("dense+bm25", "hybrid_latest")):
                if all(r[key] for r in updates):
                    share = "  ".join(
                        f"@{b} {100 * sum(r[key][b] for r in updates) / len(updates):.1f}" for b in BUDGETS
                    )
                    print(f"  knowledge-update, newest statement in the block, {name:10} {share}")
        print(f"misses at {args.budget}: " + ", ".join(f"{k} {v}" for k, v in sorted(causes.items())))
        return {"bank": bank.name, "budget": args.budget, "settings": args.set, "rows": rows, "totals": totals}
    finally:
        memory.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.long_session.diagnose", description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=_tokens, default=60_000, help="generated bank size (default 60k)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lme", type=int, default=0, help="use s_3q item N (1-based) instead of a generated bank")
    parser.add_argument("--home", type=Path, default=Path("/tmp/memwrap-diag-home"), help="kept between runs")
    parser.add_argument("--budget", type=int, default=1024, help="the budget whose misses are explained")
    parser.add_argument("--hybrid", action="store_true", help="also rank the evidence with the dense+BM25 hybrid")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a setting for this run")
    parser.add_argument("--quiet", action="store_true", help="the summary only")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args(argv)
    result = run(args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
