"""Banks: list, create, configure (stored in banks.config), show, delete."""

from __future__ import annotations

from fastapi import APIRouter, status

from memwrap.errors import BankExistsError
from memwrap_server.deps import BankDep, CallerDep, MemoryDep, check_bank
from memwrap_server.errors import ApiError
from memwrap_server.schemas import ERRORS, BankCreate, BankDeleted, BankOut, BankPatch

router = APIRouter(prefix="/v1/banks", tags=["banks"], responses=ERRORS)


async def _bank_out(memory: MemoryDep, bank_id: str) -> BankOut:
    config = await memory.bank_config(bank_id)  # BankNotFoundError -> 404
    # The engine lists banks in one query; a bank's own row is cheap to pick from it.
    info = next((b for b in await memory.banks() if b.bank_id == bank_id), None)
    data = info.model_dump() if info else {"bank_id": bank_id}
    return BankOut(**(data | {"config": config}))


@router.get("", response_model=list[BankOut], summary="Banks this key may use")
async def list_banks(memory: MemoryDep, key: CallerDep) -> list[BankOut]:
    banks = [b for b in await memory.banks() if key is None or key.allows(b.bank_id)]
    return [BankOut(**b.model_dump()) for b in banks]


@router.post(
    "",
    response_model=BankOut,
    status_code=status.HTTP_201_CREATED,
    summary="Create a bank",
    responses={409: ERRORS[422] | {"description": "The bank exists already"}},
)
async def create_bank(body: BankCreate, memory: MemoryDep, key: CallerDep) -> BankOut:
    check_bank(key, body.bank_id)
    settings = body.model_dump(exclude={"bank_id", "disposition"}, exclude_none=True)
    if body.disposition is not None:
        settings["disposition"] = body.disposition.given()
    try:
        await memory.create_bank(body.bank_id, **settings)  # one INSERT: of two concurrent creates, one wins
    except BankExistsError:
        raise ApiError(
            409, "bank_exists", f"Bank {body.bank_id!r} exists already; PATCH it to change its settings."
        ) from None
    return await _bank_out(memory, body.bank_id)


@router.get(
    "/{bank_id}",
    response_model=BankOut,
    summary="A bank, its size and settings",
    responses={404: ERRORS[422] | {"description": "No such bank"}},
)
async def get_bank(bank_id: BankDep, memory: MemoryDep) -> BankOut:
    return await _bank_out(memory, bank_id)


@router.patch("/{bank_id}", response_model=BankOut, summary="Change a bank's settings (creates it if needed)")
async def configure_bank(bank_id: BankDep, body: BankPatch, memory: MemoryDep) -> BankOut:
    changes = body.model_dump(exclude_unset=True, exclude={"disposition"})
    if "disposition" in body.model_fields_set:
        changes["disposition"] = body.disposition.given() if body.disposition is not None else None
    await memory.configure_bank(bank_id, **changes)
    return await _bank_out(memory, bank_id)


@router.delete("/{bank_id}", response_model=BankDeleted, summary="Delete a bank and everything in it")
async def delete_bank(bank_id: BankDep, memory: MemoryDep) -> BankDeleted:
    return BankDeleted(bank_id=bank_id, deleted=await memory.delete_bank(bank_id))
