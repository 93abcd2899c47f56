"""Learning (memwrap/engine/learn): jobs, observations, mental models, invalidate/restore of one bank.

Only included when the engine has these verbs (routes/__init__.py checks). Reflect (issue 8) gets a module of
its own beside this one when the engine has `reflect`.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Path, Query, Response, status
from pydantic import BaseModel, ConfigDict, Field, field_validator

from memwrap import models
from memwrap_server.deps import BankDep, MemoryDep
from memwrap_server.schemas import ERRORS, Text, Timestamp, _storable

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["learning"], responses=ERRORS)
NOT_FOUND = {404: ERRORS[422] | {"description": "No such observation, mental model or memory in this bank"}}


NameDep = Annotated[Text, Path(min_length=1, max_length=200, description="The mental model's name.")]


class MentalModelCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"name": "diet", "question": "What does the user eat and avoid?", "refresh_every": 86400}
    ]})
    name: str = Field(min_length=1, max_length=200)
    question: str = Field(min_length=1, max_length=20_000)
    tags: list[str] | None = None
    max_tokens: int = Field(default=512, ge=1, le=2_000_000)
    refresh_every: float | None = Field(default=None, gt=0, le=366 * 86400, description="Seconds between refreshes.")

    @field_validator("name", "question")
    @classmethod
    def _text(cls, value: str) -> str:
        return _storable(value, "name and question")  # type: ignore[no-any-return]


class InvalidateBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    reason: str = Field(default="", max_length=2000)

    @field_validator("reason")
    @classmethod
    def _text(cls, value: str) -> str:
        return _storable(value, "reason")  # type: ignore[no-any-return]


@router.get("/jobs", response_model=list[models.Job], summary="The bank's background jobs, newest first")
async def jobs(
    bank_id: BankDep,
    memory: MemoryDep,
    status_: Annotated[models.JobStatus | None, Query(alias="status")] = None,
    kind: Annotated[str | None, Query(max_length=100, pattern=r"^[\w.:-]+$")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[models.Job]:
    return await memory.jobs(bank_id, status_, kind=kind, limit=limit)


@router.post("/consolidate", response_model=models.ConsolidationReport,
             summary="Consolidate pending facts into observations now (the worker does it in the background)")
async def consolidate(bank_id: BankDep, memory: MemoryDep) -> models.ConsolidationReport:
    return await memory.consolidate(bank_id)


@router.get("/observations", response_model=list[models.Observation], summary="Observations, best supported first")
async def observations(
    bank_id: BankDep,
    memory: MemoryDep,
    tag: Annotated[list[Text] | None, Query()] = None,
    include_invalidated: bool = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    now: Timestamp | None = None,
) -> list[models.Observation]:
    return await memory.observations(bank_id, tags=tag, include_invalidated=include_invalidated, limit=limit,
                                     offset=offset, now=now)


@router.get("/observations/{observation_id}", response_model=models.Observation, responses=NOT_FOUND,
            summary="One observation with its evidence")
async def observation(
    bank_id: BankDep, observation_id: UUID, memory: MemoryDep, now: Timestamp | None = None
) -> models.Observation:
    return await memory.get_observation(bank_id, observation_id, now=now)


@router.get("/observations/{observation_id}/history", response_model=list[models.ObservationVersion],
            responses=NOT_FOUND, summary="Every version of an observation, oldest first")
async def observation_history(bank_id: BankDep, observation_id: UUID, memory: MemoryDep) -> list[Any]:
    return await memory.observation_history(bank_id, observation_id)


@router.get("/mental-models", response_model=list[models.MentalModel], summary="The bank's mental models")
async def mental_models(bank_id: BankDep, memory: MemoryDep) -> list[models.MentalModel]:
    return await memory.mental_models(bank_id)


@router.post("/mental-models", response_model=models.MentalModel, status_code=status.HTTP_201_CREATED,
             summary="A standing question, answered and kept fresh in the background")
async def create_mental_model(bank_id: BankDep, body: MentalModelCreate, memory: MemoryDep) -> models.MentalModel:
    return await memory.create_mental_model(bank_id, body.name, body.question, tags=body.tags,
                                            max_tokens=body.max_tokens, refresh_every=body.refresh_every)


@router.get("/mental-models/{name}", response_model=models.MentalModel, responses=NOT_FOUND,
            summary="A mental model's current content and state")
async def mental_model(bank_id: BankDep, name: NameDep, memory: MemoryDep) -> models.MentalModel:
    return await memory.get_mental_model(bank_id, name)


@router.get("/mental-models/{name}/history", response_model=list[models.MentalModelVersion], responses=NOT_FOUND,
            summary="Every version of a mental model's content")
async def mental_model_history(bank_id: BankDep, name: NameDep, memory: MemoryDep) -> list[Any]:
    return await memory.mental_model_history(bank_id, name)


@router.post("/mental-models/{name}/refresh", response_model=models.MentalModel, responses=NOT_FOUND,
             summary="Regenerate a mental model now")
async def refresh_mental_model(bank_id: BankDep, name: NameDep, memory: MemoryDep) -> models.MentalModel:
    return await memory.refresh_mental_model(bank_id, name)


@router.delete("/mental-models/{name}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response,
               responses=NOT_FOUND, summary="Delete a mental model")
async def delete_mental_model(bank_id: BankDep, name: NameDep, memory: MemoryDep) -> Response:
    await memory.delete_mental_model(bank_id, name)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/memories/{memory_id}/invalidate", status_code=status.HTTP_204_NO_CONTENT, response_class=Response,
             responses=NOT_FOUND, summary="Hide a memory from recall and from what was learnt from it (reversible)")
async def invalidate(bank_id: BankDep, memory_id: UUID, memory: MemoryDep, body: InvalidateBody | None = None) -> Response:
    await memory.invalidate(bank_id, memory_id, body.reason if body else "")
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/memories/{memory_id}/restore", status_code=status.HTTP_204_NO_CONTENT, response_class=Response,
             responses=NOT_FOUND, summary="Undo invalidate")
async def restore(bank_id: BankDep, memory_id: UUID, memory: MemoryDep) -> Response:
    await memory.restore(bank_id, memory_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
