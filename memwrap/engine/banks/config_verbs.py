"""The engine's verbs over a bank's settings (banks.config): read them, create a bank with them, merge into them.

`Engine` inherits them (engine/engine.py); the text a person wrote into the settings goes through the bank's memory
defense before it is stored. Kept apart so the engine module stays about retain and recall.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memwrap import validate
from memwrap.defense.policy import defend
from memwrap.engine.banks import ids as bank_ids
from memwrap.engine.banks import settings as bank_settings
from memwrap.models import KEEP, Disposition, EntityType, Keep

if TYPE_CHECKING:
    from memwrap.store.db import Store


class BankConfigVerbs:
    store: Store

    async def defense_policy(self, bank_id: str) -> str:  # Engine.defense_policy
        raise NotImplementedError

    async def bank_config(self, bank_id: str) -> dict[str, Any]:
        """The bank's stored configuration (banks.config); BankNotFoundError if the bank does not exist."""
        return await bank_settings.read(self.store.pool, validate.bank_id(bank_id))

    async def create_bank(
        self,
        bank_id: str,
        *,
        defense_policy: str | None = None,
        disposition: Disposition | Mapping[str, Any] | None = None,
        raw_ttl_days: float | None = None,
        extraction_instructions: str | None = None,
        entity_types: Sequence[EntityType | Mapping[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Create a new bank with these settings; BankExistsError if the id is taken (one statement: no race)."""
        bank_id = validate.bank_id(bank_id)
        settings = {
            "defense_policy": defense_policy,
            "disposition": disposition,
            "raw_ttl_days": raw_ttl_days,
            "extraction_instructions": extraction_instructions,
            "entity_types": entity_types,
        }
        clean = {k: v for k, v in validate.bank_config(settings).items() if v is not None}
        await bank_ids.admit(self.store.pool, bank_id)
        return await bank_settings.create(self.store.pool, bank_id, await self._defended_config(bank_id, clean))

    async def configure_bank(
        self,
        bank_id: str,
        *,
        defense_policy: str | None | Keep = KEEP,
        disposition: Disposition | Mapping[str, Any] | None | Keep = KEEP,
        raw_ttl_days: float | None | Keep = KEEP,
        extraction_instructions: str | None | Keep = KEEP,
        entity_types: Sequence[EntityType | Mapping[str, Any]] | None | Keep = KEEP,
    ) -> dict[str, Any]:
        """Create the bank if needed and merge the settings given into its config (None removes one; KEEP, the
        default, leaves it as it is)."""
        bank_id = validate.bank_id(bank_id)
        given = {
            "defense_policy": defense_policy,
            "disposition": disposition,
            "raw_ttl_days": raw_ttl_days,
            "extraction_instructions": extraction_instructions,
            "entity_types": entity_types,
        }
        await bank_ids.admit(self.store.pool, bank_id)
        changes = await self._defended_config(
            bank_id, validate.bank_config({k: v for k, v in given.items() if v is not KEEP})
        )
        return await bank_settings.update(self.store.pool, bank_id, changes)

    async def _defended_config(self, bank_id: str, config: dict[str, Any]) -> dict[str, Any]:
        """The disposition's directives (text a person wrote, read by reflect's LLM) through the memory defense,
        under the policy the bank will have; so are the extraction instructions and the entity types' descriptions
        (read by extraction's LLM)."""
        disposition = config.get("disposition")
        texts: dict[str, Any] = {}
        if isinstance(disposition, dict) and disposition.get("directives"):
            texts["disposition.directives"] = disposition["directives"]
        if config.get("extraction_instructions"):
            texts["extraction_instructions"] = config["extraction_instructions"]
        types = config.get("entity_types") or []
        for position, declared in enumerate(types):
            if declared.get("description"):
                texts[f"entity_types.{position}"] = declared["description"]
        if not texts:
            return config
        policy = config.get("defense_policy") or await self.defense_policy(bank_id)
        defended = defend(texts, policy)
        config = dict(config)
        if "disposition.directives" in defended and isinstance(disposition, dict):
            config["disposition"] = {**disposition, "directives": defended["disposition.directives"]}
        if "extraction_instructions" in defended:
            config["extraction_instructions"] = defended["extraction_instructions"]
        if types:
            config["entity_types"] = [
                {**declared, "description": defended.get(f"entity_types.{n}", declared["description"])}
                for n, declared in enumerate(types)
            ]
        return config
