"""Which network addresses a webhook delivery may reach, and the connection that checks it on the address it uses.

An address is refused when it is not public: loopback, private (RFC 1918), shared (CGNAT 100.64/10), link-local,
unique-local (fc00::/7), multicast, reserved, unspecified, and the cloud metadata addresses (169.254.169.254,
fd00:ec2::254, ...). IPv6 forms that carry an IPv4 address are judged by that address too: IPv4-mapped
(::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d), NAT64 (64:ff9b::/96; the
local-use 64:ff9b:1::/48 is refused whole), 6to4 (2002::/16) and Teredo (2001::/32, server and client). Host
names and every numeric spelling of an IPv4 address (2130706433, 0x7f000001, 0177.0.0.1, 127.1) are resolved
by the system resolver, and the addresses it returns are judged.

The check is made where the connection is opened (GuardedBackend, httpcore's network backend under httpx): the
name is resolved once, every address it resolves to is judged, and the connection is made to one of those very
addresses, so there is no window for a DNS answer that changes between a check and the connect (rebinding).
Messages name the kind of address refused, never the address itself (a caller must not learn the server's
internal DNS from them).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
import typing
from collections.abc import Iterable

import httpcore
import httpx

from memwrap.errors import InvalidInputError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215: local use, the embedded address may be anywhere
METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200", "192.0.0.192")
)


class BlockedAddressError(InvalidInputError):
    """The webhook's host resolves to an address deliveries may not reach (loopback, private, link-local, ...)."""

    failure_class = "refused_address"


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, compatible, translated, NAT64, 6to4, Teredo)."""
    value = int(ip)
    low = ipaddress.IPv4Address(value & 0xFFFFFFFF)
    found: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if value >> 32 == 0 and value > 1:  # ::a.b.c.d (IPv4-compatible; :: and ::1 are judged as IPv6)
        found.append(low)
    if value >> 32 == 0xFFFF0000:  # ::ffff:0:a.b.c.d (IPv4-translated, RFC 2765)
        found.append(low)
    if ip in NAT64:
        found.append(low)
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    return found


def refusal(address: str | IPAddress) -> str | None:
    """Why deliveries may not reach `address` (a kind, e.g. "loopback"), or None when it is public."""
    if isinstance(address, str):
        address = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 zone (fe80::1%eth0) says nothing more
    if address in METADATA:
        return "metadata"
    if isinstance(address, ipaddress.IPv6Address):
        if address in NAT64_LOCAL:
            return "local-use NAT64"
        if address in NAT64:  # the translator reaches the IPv4 address it carries, and only that (in ::/8, "reserved")
            return refusal(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        for inner in embedded_ipv4(address):
            reason = refusal(inner)
            if reason is not None:
                return reason
    for kind, flag in (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
    ):
        if flag:
            return kind
    if not address.is_global:
        return "non-public"  # CGNAT (100.64.0.0/10) and the other special-purpose blocks
    return None


def judge(addresses: Iterable[str]) -> None:
    """BlockedAddressError if any of the addresses is one deliveries may not reach (never naming it)."""
    kinds = sorted({r for r in (refusal(a) for a in addresses) if r is not None})
    if kinds:
        raise BlockedAddressError(
            f"the webhook's host resolves to a {', '.join(kinds)} address, which webhooks may not reach on this "
            "server (a bank-scoped API key may only send to public addresses; "
            "MEMWRAP_WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true allows private ones)."
        )


async def resolve(host: str, port: int | None = None, *, timeout: float | None = None) -> list[str]:
    """Every address `host` resolves to (a literal resolves to itself, in any numeric spelling the system's
    resolver reads: 2130706433, 0x7f.1, 127.1), in the resolver's order, without repeats."""
    loop = asyncio.get_running_loop()
    infos = await asyncio.wait_for(loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend with the address check at connect time: resolve once, judge every address,
    connect to the judged address itself (TLS still verifies the certificate against the URL's host name)."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self._inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            addresses = await resolve(host, port, timeout=timeout)
        except TimeoutError:
            raise httpcore.ConnectTimeout("the webhook's host did not resolve in time") from None
        except (OSError, UnicodeError):
            raise httpcore.ConnectError("the webhook's host does not resolve") from None
        judge(addresses)
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        raise failure or httpcore.ConnectError("the webhook's host resolves to no address")

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: typing.Iterable[typing.Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise BlockedAddressError("webhooks are sent over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def guarded_transport() -> httpx.AsyncHTTPTransport:
    """An httpx transport whose every connection goes through GuardedBackend; no proxy (a proxy would resolve
    the name itself, out of the check's sight)."""
    transport = httpx.AsyncHTTPTransport(trust_env=False)
    context: ssl.SSLContext = httpx.create_ssl_context(trust_env=False)
    # httpx has no parameter for the network backend: the pool it would build, with ours (httpx 0.2x keeps it in
    # `_pool`; tests/test_webhook_addresses.py fails if a delivery to 127.0.0.1 ever gets through).
    transport._pool = httpcore.AsyncConnectionPool(ssl_context=context, network_backend=GuardedBackend())
    return transport
