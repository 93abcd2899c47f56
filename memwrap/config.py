"""Settings, in one place. Every field can be set by an environment variable `MEMWRAP_<FIELD>`.

`Settings` is composed of parts, one per responsibility (memwrap/settings/), each field declared there with its
meaning; the embedding models memwrap knows are memwrap/settings/embedding_models.py's, named here too.
"""

from __future__ import annotations

from pydantic_settings import SettingsConfigDict

from memwrap.settings.defense import DefenseSettings
from memwrap.settings.embedding_models import (
    DEFAULT_EMBEDDING_MODEL,
    EMBEDDING_MODEL_ALIASES,
    EMBEDDING_RECIPES,
    ENGLISH_EMBEDDING_MODEL,
    MULTILINGUAL_EMBEDDING_MODEL,
    default_embedding_model,
    embedding_space,
)
from memwrap.settings.learning import LearningSettings
from memwrap.settings.llm import LLMSettings
from memwrap.settings.recall import RecallSettings
from memwrap.settings.reflect import ReflectSettings
from memwrap.settings.section import PREFIX
from memwrap.settings.store import StoreSettings
from memwrap.settings.webhooks import WebhookSettings

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "EMBEDDING_MODEL_ALIASES",
    "EMBEDDING_RECIPES",
    "ENGLISH_EMBEDDING_MODEL",
    "MULTILINGUAL_EMBEDDING_MODEL",
    "Settings",
    "default_embedding_model",
    "embedding_space",
    "load_settings",
]


# pydantic collects fields from the last base to the first, so the parts are listed last-first: the fields keep the
# order they are read in (store, recall, defense, LLM, learning, reflect, webhooks), the configuration page's order.
class Settings(
    WebhookSettings,
    ReflectSettings,
    LearningSettings,
    LLMSettings,
    DefenseSettings,
    RecallSettings,
    StoreSettings,
):
    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore")


def load_settings(**overrides: object) -> Settings:
    """Environment first, then explicit keyword overrides (None means: keep the environment's value)."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    return Settings(**clean)  # type: ignore[arg-type]  # pydantic-settings validates each override against its field
