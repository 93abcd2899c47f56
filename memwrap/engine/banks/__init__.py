"""A bank's own things: its id, its settings, what it holds (the views people read of it: engine/views/).

ids.py           which bank ids may be created: none that passes for another
settings.py      the bank's settings (banks.config): read, create with, merge into
instructions.py  the bank's extraction instructions, fenced for the extraction and consolidation prompts
entity_types.py  the bank's entity types, fenced for the extraction prompt
names.py         the Chinese names the bank has seen, as words of its keyword index
config_verbs.py  the engine's verbs over a bank's settings (bank_config, create_bank, configure_bank)
"""
