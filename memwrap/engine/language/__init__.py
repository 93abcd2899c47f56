"""What text says, read without an LLM: when (timeparse/), who and what (entities.py, chinese_names.py,
word_case.py), who said it (speakers.py), statements of change (changes.py), and the text helpers they share
(text.py)."""
