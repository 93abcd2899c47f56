"""Which URLs a subscription may point at, and who may point one at a private address.

http or https, a host, no credentials in the URL, at most MAX_URL_CHARS. Where the host may be
(MEMWRAP_WEBHOOK_ALLOW_PRIVATE_ADDRESSES; addresses.py says which addresses are private):
- unset (the default): a subscription made by a bank-scoped API key ("key:bank|team-*" in MEMWRAP_API_KEYS)
  may only reach public addresses; one made by an admin key (every bank), by a server without keys, or through
  the library may reach any (memwrap usually runs beside the app that receives its events: 127.0.0.1, a LAN
  address, a container's name). The subscription keeps which it is (allow_private), so every worker process
  delivers it the same way; a subscription from before that column is refused private addresses whenever the
  process sees scoped keys configured.
- true: any address, whoever asks; false: public addresses only, whoever asks.
Checked when the URL is set (the name resolved, every address judged) and again at each attempt, on the address
the connection is actually made to (addresses.GuardedBackend). Redirects are never followed.

A URL's query string often carries a token (`?token=...`): listings show the URL with its query hidden.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from memwrap.engine.webhooks.addresses import BlockedAddressError, judge, resolve
from memwrap.errors import InvalidInputError

if TYPE_CHECKING:
    from memwrap.config import Settings

__all__ = [
    "BlockedAddressError",
    "MAX_URL_CHARS",
    "caller_is_scoped",
    "check_public",
    "check_url",
    "private_allowed_for_caller",
    "private_allowed_for_delivery",
    "scoped_caller",
    "shown_url",
]

MAX_URL_CHARS = 2048


HIDDEN_QUERY = "?…"

# Set by the server for the request of a bank-scoped API key (memwrap_server/gate.py): the verbs it calls then
# refuse private addresses (unless the setting allows them) and show the delivery log as failure classes only.
_SCOPED_CALLER: ContextVar[bool] = ContextVar("memwrap_webhook_scoped_caller", default=False)


@contextlib.contextmanager
def scoped_caller(scoped: bool = True) -> Iterator[None]:
    """Within this block the webhook verbs act for a bank-scoped key (or not)."""
    token = _SCOPED_CALLER.set(scoped)
    try:
        yield
    finally:
        _SCOPED_CALLER.reset(token)


def caller_is_scoped() -> bool:
    return _SCOPED_CALLER.get()


def private_allowed_for_caller(settings: Settings) -> bool:
    """May a subscription set now reach private addresses? The setting, else: not for a bank-scoped key."""
    explicit = settings.webhook_allow_private_addresses
    return explicit if explicit is not None else not caller_is_scoped()


def private_allowed_for_delivery(settings: Settings, allow_private: bool | None) -> bool:
    """May this delivery reach private addresses? The setting, else what its subscription was given, else (a
    subscription from before that was recorded) only while no bank-scoped key is configured."""
    explicit = settings.webhook_allow_private_addresses
    if explicit is not None:
        return explicit
    if allow_private is not None:
        return allow_private
    return not scoped_keys_configured()


def scoped_keys_configured() -> bool:
    """Does MEMWRAP_API_KEYS hold a bank-scoped key ("key:bank|...")? The server's setting, read here because
    a `memwrap worker` process delivers too and has no server settings of its own."""
    spec = os.environ.get("MEMWRAP_API_KEYS") or ""
    return any(entry.partition(":")[2].strip(" |") for entry in spec.split(","))


def shown_url(url: str) -> str:
    """The URL as listings show it: its query (often a token) and fragment hidden."""
    parts = urlsplit(url)
    if not parts.query and not parts.fragment:
        return url
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")) + HIDDEN_QUERY


def check_url(url: object) -> str:
    """The URL, stripped, if it is one a webhook can have; InvalidInputError saying what is wrong otherwise."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidInputError("url must be an http:// or https:// URL, e.g. https://example.com/hooks/memwrap.")
    url = url.strip()
    if len(url) > MAX_URL_CHARS:
        raise InvalidInputError(f"url is {len(url):,} characters; the limit is {MAX_URL_CHARS:,}.")
    if any(ord(c) < 33 for c in url):
        raise InvalidInputError("url may not contain spaces or control characters.")
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a port that is not a number in range
        httpx.URL(url)  # what delivery will send to must parse there too (IDNA host names, ...)
    except (ValueError, httpx.InvalidURL) as exc:
        raise InvalidInputError(f"url is not a valid URL ({exc}): {url!r}.") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidInputError(f"url must use http or https, not {parts.scheme or 'no scheme'!r}: {url!r}.")
    if not parts.hostname:
        raise InvalidInputError(f"url has no host: {url!r}.")
    if parts.username or parts.password:
        raise InvalidInputError("url may not carry a user name or password; the signature authenticates memwrap.")
    if port == 0:
        raise InvalidInputError(f"url has port 0, which nothing listens on: {url!r}.")
    return url


async def check_public(url: str) -> None:
    """BlockedAddressError unless every address the URL's host resolves to is public (a name that does not
    resolve is left to the delivery, which then fails and retries). The message never names an address."""
    host = unquote(urlsplit(url).hostname or "")  # an IPv6 zone comes %-encoded: [fe80::1%25eth0]
    try:
        addresses = [ipaddress.ip_address(host.split("%", 1)[0]).compressed]
    except ValueError:
        try:
            addresses = await resolve(host, timeout=10.0)
        except (OSError, UnicodeError, TimeoutError):
            return
    judge(addresses)
