"""Reflect (memwrap/engine/reflect), the tool-loop agent: its limits, which end the loop in a forced synthesis (not an
error), and its default disposition and directives."""

from __future__ import annotations

from pydantic import Field

from memwrap.settings.section import REFLECT, SettingsPart, section


class ReflectSettings(SettingsPart):
    reflect_max_iterations: int = Field(
        default=8, description="LLM turns before the forced synthesis.", json_schema_extra=section(REFLECT)
    )
    reflect_max_tokens: int = Field(
        default=8192,
        description="Context budget: the most tokens one reflect's prompt may hold (reflect's `context_budget=`).",
        json_schema_extra=section(REFLECT),
    )
    reflect_timeout: float = Field(
        default=120.0,
        description="Seconds of tool loop; the synthesis then gets `MEMWRAP_REFLECT_SYNTHESIS_TIMEOUT` more.",
        json_schema_extra=section(REFLECT),
    )
    reflect_synthesis_timeout: float = Field(
        default=30.0, description="Seconds the forced synthesis may take.", json_schema_extra=section(REFLECT)
    )
    reflect_answer_tokens: int = Field(
        default=2048,
        description="Output tokens per LLM turn (the answer is written inside the `done` call).",
        json_schema_extra=section(REFLECT),
    )
    reflect_skepticism: int = Field(
        default=3,
        ge=1,
        le=5,
        description="Default disposition, 1-5 (a bank's stored disposition and the call's own override it).",
        json_schema_extra=section(REFLECT),
    )
    reflect_literalism: int = Field(
        default=3,
        ge=1,
        le=5,
        description="Default disposition, 1-5 (as skepticism).",
        json_schema_extra=section(REFLECT),
    )
    reflect_empathy: int = Field(
        default=3,
        ge=1,
        le=5,
        description="Default disposition, 1-5 (as skepticism).",
        json_schema_extra=section(REFLECT),
    )
    reflect_directives: list[str] = Field(
        default_factory=list,
        description="Default directives, a JSON list: `'[\"Answer in French\"]'`.",
        json_schema_extra=section(REFLECT),
    )
