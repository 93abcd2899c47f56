"""memwrap's precision set: time-scoped questions, replaced facts, speaker-heavy chats and entity names in English
and Chinese, written for this repository, each category split into a dev half and a held-out half.
See bench/precision/run.py (`python -m bench.precision`) and bench/README.md."""
