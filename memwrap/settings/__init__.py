"""The engine's settings, one part per responsibility, composed into `Settings` by memwrap/config.py.

Each field says what it means where it is declared: its `description=` is its row on docs/configuration.md, and
`section(...)` the section of that page it is listed in (memwrap/settings/section.py).
"""
