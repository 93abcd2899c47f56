"""A bank's own things: its id, its settings, what it holds, and the read-only views of it.

ids.py           which bank ids may be created: none that passes for another
settings.py      the bank's settings (banks.config): read, create with, merge into
instructions.py  the bank's extraction instructions, fenced for the extraction and consolidation prompts
entity_types.py  the bank's entity types, fenced for the extraction prompt
names.py         the Chinese names the bank has seen, as words of its keyword index
catalog.py       reading and removing stored memories: list, get, delete, banks
views.py         read-only views for people (counts, a memory's surroundings, the entity graph): the SQL
view_verbs.py    the engine's verbs over views.py, checked at the boundary
"""
