"""Learning (memwrap/engine/learn): the background job queue and its workers, observations, mental models."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memwrap.settings.section import LEARNING, RECALL, SettingsPart, section


class LearningSettings(SettingsPart):
    worker: Literal["inline", "off"] = Field(
        default="inline",
        description=(
            "`inline`: a learning worker runs inside the engine's process; `off`: none here (run `memwrap "
            "worker` processes)."
        ),
        json_schema_extra=section(LEARNING),
    )
    # A one-shot command sets it to its own bank (or runs no worker), so `memwrap import-bank b` never runs other
    # banks' queued work.
    worker_bank: str | None = Field(
        default=None,
        description=(
            "The inline worker runs only this bank's jobs and no server-wide pass (what a one-shot CLI command "
            "sets to its own bank; unset: every bank's)."
        ),
        json_schema_extra=section(LEARNING),
    )
    worker_concurrency: int = Field(
        default=1, description="Jobs one worker runs at once.", json_schema_extra=section(LEARNING)
    )
    worker_poll_seconds: float = Field(
        default=2.0,
        description="Idle wait between looks at the job queue (enqueues in the same process wake it at once).",
        json_schema_extra=section(LEARNING),
    )
    # Longer-lived processes, or `memwrap worker`, run the backlog.
    worker_start_delay_seconds: float = Field(
        default=1.0,
        description=(
            "The inline worker's first look at the queue waits this long after the engine starts, so a short "
            "script does not start backlog jobs it would cancel at exit."
        ),
        json_schema_extra=section(LEARNING),
    )
    worker_lease_seconds: float = Field(
        default=60.0,
        description="A running job whose worker stops renewing its lease for this long is claimed again.",
        json_schema_extra=section(LEARNING),
    )
    job_max_attempts: int = Field(
        default=5, description="Attempts before a job is dead.", json_schema_extra=section(LEARNING)
    )
    job_backoff_seconds: float = Field(
        default=2.0,
        description="First retry wait of a failed job, doubled per attempt, with jitter.",
        json_schema_extra=section(LEARNING),
    )
    job_backoff_cap_seconds: float = Field(
        default=300.0, description="The longest retry wait of a failed job.", json_schema_extra=section(LEARNING)
    )
    reconcile_seconds: float = Field(
        default=30.0,
        description="How often a worker re-enqueues stranded work (one worker at a time).",
        json_schema_extra=section(LEARNING),
    )
    consolidation_delay_seconds: float = Field(
        default=2.0,
        description="Retains within this window (a conversation, turn by turn) make one consolidation job.",
        json_schema_extra=section(LEARNING),
    )
    observation_threshold: float = Field(
        default=0.92,
        description="Cosine at which facts are near-duplicates (LLM-free grouping into observations).",
        json_schema_extra=section(LEARNING),
    )
    # Declared here, beside the observations it prefers; the page lists it with recall's settings.
    prefer_observations: bool = Field(
        default=False,
        description="Recall's default: an observation replaces the facts it covers.",
        json_schema_extra=section(RECALL),
    )
    mental_model_refresh_delay_seconds: float = Field(
        default=5.0,
        description="Stale marks within this window become one mental-model refresh.",
        json_schema_extra=section(LEARNING),
    )
