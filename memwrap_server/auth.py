"""API keys and bank isolation.

`MEMWRAP_API_KEYS="k1,k2:alice|team-*"`: k1 may use every bank, k2 only `alice` and banks matching `team-*`.
When keys are set, every route but `/health`, `/ready`, the API's description (`/openapi.json`, `/docs`, `/redoc`)
and the memory browser's static files needs one: `Authorization: Bearer <key>`, or `X-Memwrap-Key: <key>` (the
proxy routes accept only the latter, because their `Authorization` header belongs to the upstream LLM).
"""

from __future__ import annotations

import fnmatch
import hmac
from collections.abc import Iterable
from dataclasses import dataclass

PROXY_PATHS = ("/v1/chat/completions", "/v1/responses", "/v1/messages")
PUBLIC_PATHS = ("/health", "/ready")
# The API's description and its two readers: no data (the same document for every server of this version), and
# a browser opening /docs cannot send a key; "Authorize" there takes one for the calls made from the page.
DOCS_PATHS = ("/docs", "/redoc", "/openapi.json")
# Static files that hold no data: the memory browser's page and scripts (its data calls carry the key), and the
# packaged Swagger UI / ReDoc assets.
PUBLIC_PREFIXES = ("/ui/", "/docs/assets/")
KEY_HEADER = "x-memwrap-key"


@dataclass(frozen=True)
class ApiKey:
    key: str
    banks: tuple[str, ...] | None = None  # None: every bank

    def allows(self, bank_id: str) -> bool:
        return self.banks is None or any(fnmatch.fnmatchcase(bank_id, pattern) for pattern in self.banks)

    def __repr__(self) -> str:  # never print the key itself
        return f"ApiKey(key=***, banks={self.banks})"


def parse_api_keys(spec: str | None) -> list[ApiKey]:
    keys = []
    for entry in (spec or "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        key, _, banks = entry.partition(":")
        allowed = tuple(b.strip() for b in banks.split("|") if b.strip()) if banks else None
        if not key.strip():
            raise ValueError("MEMWRAP_API_KEYS has an entry with an empty key.")
        keys.append(ApiKey(key.strip(), allowed))
    return keys


class Auth:
    def __init__(self, keys: Iterable[ApiKey]) -> None:
        self.keys = list(keys)

    @property
    def enabled(self) -> bool:
        return bool(self.keys)

    def authenticate(self, presented: str | None) -> ApiKey | None:
        if not presented:
            return None
        found = None
        for candidate in self.keys:  # compare with every key, in constant time each: no early exit to time
            if hmac.compare_digest(candidate.key.encode(), presented.encode()):
                found = candidate
        return found

    def label(self, key: ApiKey) -> str:
        """How logs name a key without revealing it: its place in MEMWRAP_API_KEYS."""
        return f"#{self.keys.index(key) + 1}" if key in self.keys else "#?"

    @staticmethod
    def presented_key(path: str, headers: dict[str, str]) -> str | None:
        key = headers.get(KEY_HEADER)
        if key or path in PROXY_PATHS:
            return key
        scheme, _, token = (headers.get("authorization") or "").partition(" ")
        return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path in DOCS_PATHS or path == "/ui" or path.startswith(PUBLIC_PREFIXES)


def allowed(key: ApiKey | None, bank_id: str) -> bool:
    """None (authentication off) allows every bank."""
    return key is None or key.allows(bank_id)
