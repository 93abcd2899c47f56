"""QA accuracy: recall → answer → LLM judge, on LoCoMo (categories 1-4) and LongMemEval questions.

    python -m bench.qa --dataset locomo --limit 20 --out qa-locomo.jsonl \
        --answer-base-url http://127.0.0.1:8089/v1 --answer-model qwen2.5-coder-1.5b

Any OpenAI-compatible answerer and judge (different endpoints if wanted: --judge-base-url ...). Results are one
JSON line per question, appended as each is scored: a run that stops resumes where it stopped (questions
already in --out are skipped, and retaining a conversation again costs nothing). See bench/README.md.
"""
