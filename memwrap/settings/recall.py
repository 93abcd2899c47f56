"""How recall ranks what it finds: the arms' weights, their fusion, and what it drops or attaches."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memwrap.settings.section import RECALL, SettingsPart, section


class RecallSettings(SettingsPart):
    rrf_k: int = Field(
        default=60,
        description="The k of reciprocal-rank fusion: a hit at rank r in an arm scores the arm's weight / (k + r).",
        json_schema_extra=section(RECALL),
    )
    fusion: Literal["rrf", "interleave"] = Field(
        default="rrf",
        description="How the arms' lists are merged: reciprocal-rank fusion (`rrf`) or `interleave`.",
        json_schema_extra=section(RECALL),
    )
    weight_semantic: float = Field(
        default=1.0, description="Weight of the semantic arm (pgvector) in fusion.", json_schema_extra=section(RECALL)
    )
    weight_keyword: float = Field(
        default=1.0,
        description="Weight of the keyword arm (full text, BM25-style) in fusion.",
        json_schema_extra=section(RECALL),
    )
    weight_graph: float = Field(
        default=0.6,
        description="Weight of the graph arm (shared entities, session links) in fusion.",
        json_schema_extra=section(RECALL),
    )
    weight_temporal: float = Field(
        default=1.0,
        description="Weight of the temporal arm (the question's time range) in fusion.",
        json_schema_extra=section(RECALL),
    )
    # Applied after fusion (engine/recall/search.py, favour_named_speakers).
    weight_speaker: float = Field(
        default=1.0,
        description="Weight of the nearest memories said by a speaker the question names.",
        json_schema_extra=section(RECALL),
    )
    arm_limit: int = Field(
        default=60, description="Candidates each arm returns before fusion.", json_schema_extra=section(RECALL)
    )
    min_similarity: float | None = Field(
        default=None,
        description=(
            "Semantic hits less similar (cosine) than this are noise and dropped. Unset: the embedding model's "
            "own floor (0.10 for multilingual-e5-small, 0.15 for all-MiniLM-L6-v2; "
            "memwrap/engine/embed/profiles.py)."
        ),
        json_schema_extra=section(RECALL),
    )
    reranker: str | None = Field(
        default=None,
        description="A CrossEncoder name or directory that reranks the fused candidates; off when unset.",
        json_schema_extra=section(RECALL),
    )
    neighbours: bool = Field(
        default=True,
        description="Attach a recalled memory's neighbouring turns of its session.",
        json_schema_extra=section(RECALL),
    )
    # The assistant's own turns ("Noted: vegetarian") stay recallable, below the user's (engine/recall/order.py).
    assistant_weight: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description=(
            "Share of its fused score the assistant's own turns keep, so the user's statement of a fact ranks "
            "above the assistant's restatement of it. A turn of the assistant's that states a change (\"the lock "
            'file now resolves 2.1") keeps all of it.'
        ),
        json_schema_extra=section(RECALL),
    )
