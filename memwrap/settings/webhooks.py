"""Webhooks (memwrap/engine/webhooks, docs/webhooks.md): each delivery is a job of the queue, retried with backoff."""

from __future__ import annotations

from pydantic import Field

from memwrap.settings.section import WEBHOOKS, SettingsPart, section


class WebhookSettings(SettingsPart):
    webhook_max_attempts: int = Field(
        default=8,
        ge=1,
        le=100,
        description="Attempts per delivery (no answer, 408, 429, 5xx) before it is marked failed.",
        json_schema_extra=section(WEBHOOKS),
    )
    webhook_backoff_seconds: float = Field(
        default=5.0,
        ge=0,
        description="First wait before a delivery is tried again; doubled per attempt, with jitter.",
        json_schema_extra=section(WEBHOOKS),
    )
    webhook_backoff_cap_seconds: float = Field(
        default=3600.0,
        ge=0,
        description="The longest wait between two attempts of a delivery.",
        json_schema_extra=section(WEBHOOKS),
    )
    webhook_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="Seconds one attempt may take (connect, send, the answer's status) before it counts as no answer.",
        json_schema_extra=section(WEBHOOKS),
    )
    # Checked when the URL is set and on the address each connection is made to (memwrap/engine/webhooks/urls.py).
    webhook_allow_private_addresses: bool | None = Field(
        default=None,
        description=(
            "Unset: webhooks made with a bank-scoped API key may reach public addresses only (no loopback, RFC "
            "1918, CGNAT, link-local, ULA or metadata address, in any IPv6 or numeric spelling), others any; "
            "`true`: any address for all; `false`: public only for all. Checked when the URL is set and on the "
            "address each connection is made to."
        ),
        json_schema_extra=section(WEBHOOKS),
    )
    # A bank's dead receivers hold no more slots than this.
    webhook_max_in_flight_per_bank: int = Field(
        default=2,
        ge=1,
        le=100,
        description=(
            "Deliveries of one bank in flight at once over every worker, so one bank's slow or dead receivers "
            "cannot hold every worker slot (banks are also served in turn)."
        ),
        json_schema_extra=section(WEBHOOKS),
    )
