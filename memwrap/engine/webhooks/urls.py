"""Which URLs a subscription may point at.

http or https, a host, no credentials in the URL, at most MAX_URL_CHARS. Where the host may be is a setting
(MEMWRAP_WEBHOOK_ALLOW_PRIVATE_ADDRESSES, default true): memwrap usually runs beside the app that receives its
events (127.0.0.1, a LAN address, a container's name). A server whose callers you do not trust with your network
sets it to false: a subscription, and each delivery again (DNS may have changed since), must then resolve to
public addresses only, so no caller can make the server POST to its own loopback, a private network or a cloud
metadata address (169.254.169.254). Redirects are never followed (a public URL cannot bounce a delivery inward).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import unquote, urlsplit

import httpx

from memwrap.errors import InvalidInputError

MAX_URL_CHARS = 2048


class BlockedAddressError(InvalidInputError):
    """The webhook's host resolves to an address deliveries may not reach (loopback, private, link-local, ...)."""


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


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


async def check_public(url: str) -> None:
    """BlockedAddressError unless every address the URL's host resolves to is public (a name that does not
    resolve is left to the delivery, which then fails and retries)."""
    host = unquote(urlsplit(url).hostname or "")  # an IPv6 zone comes %-encoded: [fe80::1%25eth0]
    try:
        addresses = {ipaddress.ip_address(host).compressed}
    except ValueError:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return
        addresses = {str(info[4][0]) for info in infos}
    blocked = sorted(a for a in addresses if not is_public(a))
    if blocked:
        raise BlockedAddressError(
            f"{host!r} resolves to {', '.join(blocked)}, which webhooks may not reach on this server "
            "(MEMWRAP_WEBHOOK_ALLOW_PRIVATE_ADDRESSES=false)."
        )
