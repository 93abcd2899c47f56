"""What text says, read without an LLM: statements of change (changes.py)."""
