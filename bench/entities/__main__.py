"""`python -m bench.entities [--split dev|heldout|all] [-v] [--cost]`: precision, recall and F1 of extract_entities
on the labelled sample, per language; `-v` lists each sentence's wrong and missed names; `--cost` times the
extractor per memory on 2,000 LoCoMo turns and on MemoryBank's 1,132 Chinese turns (both read in place from
../shared/data)."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

from bench.entities.sample import LANGUAGES, examples, score
from memwrap.engine.language.entities import extract_entities

COST_UNITS = 2000


def report(split: str | None, verbose: bool) -> None:
    print(f"extract_entities on the {split or 'whole'} sample: precision / recall / F1 (true +, false +, false -)")
    for lang in LANGUAGES:
        sample = examples(split, (lang,))
        result = score(extract_entities, sample)
        print(
            f"  {lang}  {len(sample):3} sentences  P {result.precision:.3f}  R {result.recall:.3f}  F1 {result.f1:.3f}"
            f"  ({result.true_positives}, {result.false_positives}, {result.false_negatives})"
        )
        if verbose:
            for example, wrong, missed in result.errors:
                text = example.text.replace("\n", "\\n")
                print(f"      {lang}.tsv:{example.line:<4} {text}")
                print(f"             wrong {wrong}  missed {missed}")


def cost_texts() -> dict[str, list[str]]:
    from bench.locomo import load_locomo
    from bench.multilingual.memorybank import default_dir

    english = [turn.text for conv in load_locomo() for turn in conv.turns][:COST_UNITS]
    users = json.loads((default_dir() / "memory_bank_cn.json").read_text(encoding="utf-8"))
    chinese = [
        turn[side]
        for user in users.values()
        for day in user["history"].values()
        for turn in day
        for side in ("query", "response")
    ][:COST_UNITS]
    return {"en (LoCoMo turns)": english, "zh (MemoryBank turns)": chinese}


def time_per_unit(extract: Callable[[str], list[str]], texts: list[str], rounds: int = 5) -> float:
    """Median over rounds of the mean CPU µs per text, with the word-segmentation caches emptied before each round.
    CPU time, not wall time: other work on a shared machine inflates the second, not the first."""
    from memwrap.engine.language import text as text_helpers

    extract("预热：加载结巴的词典。")  # jieba's dictionary loads once per process (~1 s): not a per-unit cost
    per_round = []
    for _ in range(rounds):
        text_helpers._han_pos_words_cached.cache_clear()
        text_helpers._tag_unknown_word.cache_clear()
        start = time.process_time()
        for item in texts:
            extract(item)
        per_round.append((time.process_time() - start) / len(texts) * 1e6)
    return statistics.median(per_round)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.entities", description=__doc__.split("\n")[0])
    parser.add_argument("--split", choices=("dev", "heldout", "all"), default="dev")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the false positives and negatives")
    parser.add_argument("--cost", action="store_true", help="also time extract_entities per memory")
    args = parser.parse_args(argv)
    report(None if args.split == "all" else args.split, args.verbose)
    if args.cost:
        print("cost of extract_entities, CPU µs per memory (median of 5 passes, word-segmentation caches emptied)")
        for name, texts in cost_texts().items():
            print(f"  {name:22} {time_per_unit(extract_entities, texts):7.1f}  ({len(texts)} texts)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
