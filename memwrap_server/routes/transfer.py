"""A bank as JSON lines: GET /v1/banks/{bank_id}/export streams it, POST /v1/banks/{bank_id}/import loads one
(the verbs export_bank and import_bank; the file itself stays with the client). The server stages the file in
a private temporary directory, removed when the response is sent."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from memwrap.models import ImportReport
from memwrap.verbs import VERBS
from memwrap_server.deps import BankDep, MemoryDep
from memwrap_server.schemas import ERRORS

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["banks"], responses=ERRORS)
NDJSON = "application/x-ndjson"


@router.get(
    "/export",
    summary=VERBS["export_bank"].summary,
    description=VERBS["export_bank"].doc,
    response_class=FileResponse,
    responses={200: {"content": {NDJSON: {}}}, 404: ERRORS[422] | {"description": "No such bank"}},
)
async def export_bank(
    bank_id: BankDep, memory: MemoryDep, include_embeddings: Annotated[bool, Query()] = True
) -> FileResponse:
    staging = Path(tempfile.mkdtemp(prefix="memwrap-export-"))
    path = staging / f"{bank_id}.jsonl"
    try:
        await memory.export_bank(bank_id, path, include_embeddings=include_embeddings)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return FileResponse(
        path,
        media_type=NDJSON,
        filename=path.name,
        background=BackgroundTask(shutil.rmtree, staging, ignore_errors=True),
    )


@router.post(
    "/import",
    response_model=ImportReport,
    summary=VERBS["import_bank"].summary,
    description=VERBS["import_bank"].doc,
    # Documented as bytes (what it is on the wire; generic clients and fuzzers know how to send those):
    # the lines of an export, sent as application/x-ndjson or application/octet-stream.
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "JSON lines, as GET /export gives them",
            "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
        }
    },
)
async def import_bank(bank_id: BankDep, memory: MemoryDep, request: Request) -> ImportReport:
    staging = Path(tempfile.mkdtemp(prefix="memwrap-import-"))
    try:
        path = staging / "import.jsonl"
        with path.open("wb") as out:
            async for chunk in request.stream():
                out.write(chunk)
        return await memory.import_bank(bank_id, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
