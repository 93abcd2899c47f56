"""Reflect (memwrap/engine/reflect): an answer from a bank's memory, with citations. Needs the engine's LLM
(MEMWRAP_LLM_* on the server); without one the answer is 409 `llm_not_configured`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, field_validator

from memwrap import models
from memwrap_server.deps import BankDep, MemoryDep
from memwrap_server.schemas import ERRORS, DispositionIn, Timestamp, _storable

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["reflect"], responses=ERRORS)


class ReflectBody(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"query": "What should I cook for Alice this weekend?", "max_iterations": 6}
    ]})

    query: str = Field(min_length=1, max_length=20_000)
    max_tokens: int | None = Field(default=None, ge=1, le=2_000_000, description="The agent's context budget.")
    context: str | None = Field(default=None, max_length=200_000, description="The caller's situation (not cited).")
    response_schema: dict[str, Any] | None = Field(default=None, description="JSON schema of `structured`.")
    tags: list[str] | None = None
    disposition: DispositionIn | None = None
    max_iterations: int | None = Field(default=None, ge=1, le=100)
    timeout: float | None = Field(default=None, gt=0, le=3600, description="Seconds; then it answers from what it has.")
    now: Timestamp | None = None

    @field_validator("query", "context", "response_schema")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return _storable(value, "query, context and response_schema")


@router.post("/reflect", response_model=models.ReflectResult,
             responses={409: ERRORS[422] | {"description": "The server has no LLM for reflect"}},
             summary="Answer a question from memory (an LLM agent over mental models, observations and facts)")
async def reflect(bank_id: BankDep, body: ReflectBody, memory: MemoryDep) -> Any:
    return await memory.reflect(
        bank_id, body.query, max_tokens=body.max_tokens, context=body.context, response_schema=body.response_schema,
        tags=body.tags, disposition=body.disposition.given() if body.disposition else None,
        max_iterations=body.max_iterations, timeout=body.timeout, now=body.now,
    )
