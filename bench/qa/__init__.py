"""QA accuracy: memory block → answer → LLM judge and LoCoMo token F1, on LoCoMo (categories 1-4) and LongMemEval,
for four systems side by side (no memory, the last turns, the dense+BM25 RRF baseline, memwrap).

    python -m bench.qa --dataset locomo --per-category 8 --out bench/results/qa-locomo.jsonl \
        --answer-base-url http://127.0.0.1:8089/v1 --answer-model qwen2.5-coder-1.5b --answer-api-key local

Any OpenAI-compatible answerer and judge (different endpoints if wanted: --judge-base-url ...). Results are one
JSON line per (system, question), appended as each is scored: a run that stops resumes where it stopped (answers
already in --out are skipped, and retaining a conversation again costs nothing). See bench/README.md.
"""
