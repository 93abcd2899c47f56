"""What the parts of the settings share: the `MEMWRAP_` prefix, and where docs/configuration.md lists a field.

A field's meaning is its `description=` (one row of the page); `json_schema_extra=section(TITLE)` names the section
that lists it and, for a default computed on the machine, how the page shows that default.
memwrap_server/_generate_reference.py writes the page from them: the sections in the order their first field is
declared, each section's fields in the order they are declared. pydantic keeps both with the field (and puts them in
the JSON schema); nothing else reads them.
"""

from __future__ import annotations

from pydantic.json_schema import JsonDict
from pydantic_settings import BaseSettings, SettingsConfigDict

PREFIX = "MEMWRAP_"

# The engine's sections of the page (the sidecar's is memwrap_server/config.py's).
WHERE = "Where memory lives"
EMBEDDING = "Embedding"
PROCESS = "Life of a process"
RECALL = "Recall"
DEFENSE = "Memory defense"
LLM = "The engine's LLM"
EXTRACTION = "Extraction (retain with an LLM)"
LEARNING = "Learning (jobs, observations, mental models)"
REFLECT = "Reflect"
WEBHOOKS = "Webhooks (docs/webhooks.md)"


class SettingsPart(BaseSettings):
    """A part of `memwrap.config.Settings`: its fields are read from `MEMWRAP_<FIELD>`, like the whole's."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore")


def section(title: str, shown_default: str | None = None) -> JsonDict:
    """Where the configuration page lists a field: under `title`; `shown_default` when its default depends on the
    machine or the user (the page shows it as written, not as computed where the page is built)."""
    extra: JsonDict = {"section": title}
    if shown_default is not None:
        extra["shown_default"] = shown_default
    return extra
