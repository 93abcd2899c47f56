"""Settings, in one place. Every field can be set by an environment variable `MEMWRAP_<FIELD>`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MEMWRAP_", extra="ignore")

    home: Path = Field(default_factory=lambda: Path("~/.memwrap").expanduser())
    database_url: str | None = None
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    embedding_batch_size: int = 64
    pool_min_size: int = 1
    pool_max_size: int = 8

    # Recall
    rrf_k: int = 60
    fusion: Literal["rrf", "interleave"] = "rrf"
    weight_semantic: float = 1.0
    weight_keyword: float = 1.0
    weight_graph: float = 0.6
    weight_temporal: float = 1.0
    arm_limit: int = 60
    # Semantic hits less similar than this are noise, not memories (MiniLM puts unrelated text near 0.0-0.1).
    min_similarity: float = 0.15
    reranker: str | None = None
    neighbours: bool = True

    # Defense: redact | block | off (per bank overrides live in the banks table)
    defense_policy: Literal["redact", "block", "off"] = "redact"

    # LLM for the engine's own work (extraction, consolidation, reflect)
    llm_provider: Literal["none", "openai", "anthropic"] = "none"
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = None

    @property
    def pgdata(self) -> Path:
        return Path(self.home).expanduser() / "pg"

    @property
    def spool_dir(self) -> Path:
        return Path(self.home).expanduser() / "spool"


def load_settings(**overrides: object) -> Settings:
    """Environment first, then explicit keyword overrides (None means: keep the environment's value)."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    return Settings(**clean)  # type: ignore[arg-type]
