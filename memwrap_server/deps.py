"""FastAPI dependencies: the memory, the caller's key, and the bank it may touch.

All `async def`: FastAPI runs a plain `def` dependency in its thread pool, a thread hop per dependency per
request (the largest cost of a failing request, and of a cheap one).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from memwrap.api import AsyncMemory
from memwrap_server.auth import ApiKey, allowed
from memwrap_server.errors import ApiError
from memwrap_server.schemas import BANK_ID_PATTERN, BankId


async def get_memory(request: Request) -> AsyncMemory:
    return request.app.state.memory


async def caller(request: Request) -> ApiKey | None:
    """The key the auth middleware accepted (None when authentication is off)."""
    return request.scope.get("state", {}).get("memwrap_key")


def check_bank(key: ApiKey | None, bank_id: str) -> str:
    if not allowed(key, bank_id):
        raise ApiError(403, "bank_forbidden", f"This API key may not use bank {bank_id!r}.")
    return bank_id


async def bank_access(
    request: Request,
    bank_id: Annotated[
        BankId, Path(max_length=128, examples=["alice"], json_schema_extra={"pattern": BANK_ID_PATTERN})
    ],
) -> str:
    return check_bank(await caller(request), bank_id)


MemoryDep = Annotated[AsyncMemory, Depends(get_memory)]
BankDep = Annotated[str, Depends(bank_access)]
CallerDep = Annotated["ApiKey | None", Depends(caller)]
