"""Memories in and out of a bank in bulk.

bank_stream.py      a bank as JSON lines (export_bank / import_bank): memories, observations, mental models
import_memories.py  import_memories: memories from elsewhere, with COPY, a batch per transaction
memories_jsonl.py   the JSONL file import_memories reads
mem0_export.py      a mem0 export read as memories for import_memories
"""
