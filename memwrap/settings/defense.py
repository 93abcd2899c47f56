"""What retain does with secrets and personal identifiers in what it stores (memwrap/defense/)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memwrap.settings.section import DEFENSE, SettingsPart, section


class DefenseSettings(SettingsPart):
    # A bank's own policy lives in the banks table.
    defense_policy: Literal["redact", "block", "off"] = Field(
        default="redact",
        description=(
            "`redact`, `block` or `off` for secrets and personal identifiers in retained text (a bank's own "
            "`defense_policy` wins)."
        ),
        json_schema_extra=section(DEFENSE),
    )
