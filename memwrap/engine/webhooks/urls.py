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
import re
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
    "WEBHOOK_URL_PATTERN",
    "caller_is_scoped",
    "check_public",
    "check_url",
    "private_allowed_for_caller",
    "private_allowed_for_delivery",
    "scoped_caller",
    "shown_url",
]

MAX_URL_CHARS = 2048

# The whole form of a URL a subscription may have, one regular expression in the syntax ECMA-262 and Python share:
# the OpenAPI document declares it (memwrap_server/openapi_rules.py), so what the document allows is what is
# accepted. A host is a name of ASCII labels (letters, digits, '-', '_'; an international name in its xn-- form),
# an IPv4 address in any form a resolver reads (127.0.0.1; 127.1, 2130706433, 0x7f000001: the address check judges
# them), or a bracketed IPv6 address (a zone as %25...). Four labels of digits are a dotted IPv4 address or nothing
# (httpx refuses 00.0.0.0). A port is 1-65535; then any character but a space or an ASCII control character.
_PORT = r"(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_NUMBERS = r"[0-9]+(?:\.[0-9]+){0,2}|[0-9]+(?:\.[0-9]+){4,}"  # one to three labels of digits, or five and more
# A name: labels of digits (and '-') up to the first with a letter or '_', then any labels; a final dot allowed.
_NAME = r"(?:[0-9-]+\.)*[A-Za-z0-9_-]*[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*\.?"
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_IPV4})"
_IPV6 = "|".join(  # RFC 3986's IPv6address
    [
        rf"(?:{_H16}:){{6}}{_LS32}",
        rf"::(?:{_H16}:){{5}}{_LS32}",
        rf"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
        *(rf"(?:(?:{_H16}:){{0,{n - 1}}}{_H16})?::(?:{_H16}:){{{3 - n}}}{_LS32}" for n in (1, 2)),
        rf"(?:(?:{_H16}:){{0,2}}{_H16})?::{_H16}:{_LS32}",
        rf"(?:(?:{_H16}:){{0,3}}{_H16})?::{_LS32}",
        rf"(?:(?:{_H16}:){{0,4}}{_H16})?::{_H16}",
        rf"(?:(?:{_H16}:){{0,5}}{_H16})?::",
    ]
)
_HOST = rf"(?:{_IPV4}|{_NUMBERS}|{_NAME}|\[(?:{_IPV6})(?:%25[A-Za-z0-9._~-]+)?\])"
WEBHOOK_URL_PATTERN = rf"^[Hh][Tt][Tt][Pp][Ss]?://{_HOST}(?::{_PORT})?(?:[/?#][^\x00-\x20\x7f]*)?$"
_WEBHOOK_URL = re.compile(WEBHOOK_URL_PATTERN)


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
    if _WEBHOOK_URL.fullmatch(url) is None:
        raise InvalidInputError(_unlike_a_url(url, parts.hostname))
    return url


def _unlike_a_url(url: str, host: str) -> str:
    """Why a URL that parses is still not one a subscription may have (WEBHOOK_URL_PATTERN), and its fix."""
    if not host.isascii():
        with contextlib.suppress(UnicodeError):
            ascii_form = httpx.URL(url).raw_host.decode("ascii")
            return f"url's host {host!r} must be written in its ASCII (IDNA) form: {ascii_form!r}."
    return (
        f"url's host and port must be a host name (letters, digits, '-', '_' and dots), an IPv4 address or an IPv6 "
        f"address in brackets, then a port from 1 to 65535, then a path starting with '/': {url!r}."
    )


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
