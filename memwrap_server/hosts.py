"""Which `Host` (and `Origin`) a request may come with: the DNS-rebinding guard, as local servers such as Jupyter
have it.

A web page the user visits can make their browser talk to `http://127.0.0.1:8765` under a name of its own: the
page's domain is re-pointed to 127.0.0.1 after it loaded ("DNS rebinding"), so the browser sends the page's
requests here, and treats the answers as the page's own. Without API keys nothing else would stop that page from
reading and writing every memory. Such a request always carries the attacker's name in `Host`, so without keys
the server answers only requests whose Host is

* `localhost` (or a name under `.localhost`, which browsers resolve to loopback themselves),
* an IP address (`127.0.0.1`, `[::1]`, or this machine's LAN address when bound to 0.0.0.0: a page can only
  send an IP as Host if it was itself loaded from that IP, so it is no rebinding),
* or a name in MEMWRAP_ALLOWED_HOSTS (comma-separated; `*` turns the check off, `.example.com` allows the
  domain and its subdomains).

and, from a browser, whose `Origin` is this server itself (same host and port), a loopback origin, or one of
those names: a page elsewhere cannot post to it either (a form or a `text/plain` fetch needs no preflight).

A `Host` is read strictly, as browsers write it (`name[:port]`, `[v6]:port`, `ip:port`): an empty Host, one with
anything else in it (`localhost:8795@evil.example`, a path, spaces), two Host headers, or a request line in
absolute form naming another host (`GET http://evil.example/v1/banks`, which HTTP says overrides Host; the
sidecar's own uvicorn protocol, memwrap_server/http_protocol.py, keeps that target for this check) are refused too:
no browser sends them, and a lenient reading is how a foreign name slips past.

Everything else gets 421 `host_not_allowed` (what the MCP SDK answered before this guard covered every route).
`/health` and `/ready` answer any Host: orchestrators probe them by service name, and they hold no data.

With API keys set, the key is the guard (a page cannot know it, and cannot send a custom header cross-origin
without a preflight this server never grants): the Host check is off unless MEMWRAP_ALLOWED_HOSTS is set, in
which case it applies as well.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

LOOPBACK_NAMES = ("localhost",)
# What a browser puts in Host: a DNS name or IPv4 address, or a bracketed IPv6 address, then an optional port.
_HOST_RE = re.compile(r"(?:[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_.])?|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?", re.IGNORECASE)
# Where the sidecar's uvicorn protocol leaves a request target that is not a path (absolute form, or `*`).
TARGET_EXTENSION = "memwrap.request_target"


def _split_host(value: str) -> str:
    """`Host: name:port` → `name` (lowercase, no trailing dot); `[::1]:8765` → `::1`."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostCheck:
    def __init__(self, allowed: str | None, *, keys_set: bool) -> None:
        names = [n.strip().lower().rstrip(".") for n in (allowed or "").split(",") if n.strip()]
        self.configured = tuple(n for n in names if n != "*")
        # On without keys; with keys only when the operator listed names (and never with `*`).
        self.enabled = "*" not in names and (not keys_set or bool(names))

    def name_allowed(self, name: str) -> bool:
        if not name:
            return True  # no Host at all (HTTP/1.0 tools): not a browser, so not a rebinding
        if name in LOOPBACK_NAMES or name.endswith(".localhost") or _is_ip(name):
            return True
        return any(name == n or (n.startswith(".") and (name.endswith(n) or name == n[1:])) for n in self.configured)

    def refusal(self, headers: Iterable[tuple[bytes, bytes]], target: bytes | None = None) -> str | None:
        """Why a request with these headers (and this request target, when it is not a path) is refused, or None
        when it may pass."""
        if not self.enabled:
            return None
        host = origin = None
        hosts = 0
        for key, value in headers:
            if key == b"host":
                host = value.decode("latin-1")
                hosts += 1
            elif key == b"origin":
                origin = value.decode("latin-1")
        if hosts > 1:
            return "Two Host headers: a request names one host (no browser sends two)."
        if host is not None and not _HOST_RE.fullmatch(host.strip()):
            return (
                f"Host {host!r} is not a host name with an optional port, as browsers send it "
                "(e.g. localhost:8765 or 127.0.0.1:8765)."
            )
        if target is not None:
            authority = _target_authority(target)
            if authority is None or not self.name_allowed(_split_host(authority)):
                return (
                    f"The request target {target[:200].decode('latin-1')!r} names a host this server does not "
                    "answer (send a path, with the name in Host)."
                )
        if host is not None and not self.name_allowed(_split_host(host)):
            return (
                f"Host {host!r} is not allowed: without API keys this server answers only localhost, IP "
                "addresses and the names in MEMWRAP_ALLOWED_HOSTS (a guard against DNS rebinding). Add the "
                "name to MEMWRAP_ALLOWED_HOSTS, or set MEMWRAP_API_KEYS."
            )
        if origin is not None and not self._origin_allowed(origin, host):
            return (
                f"Origin {origin!r} is not allowed: without API keys this server answers browsers only on "
                "pages of its own, of localhost, or of the names in MEMWRAP_ALLOWED_HOSTS."
            )
        return None

    def _origin_allowed(self, origin: str, host: str | None) -> bool:
        parts = urlsplit(origin.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False  # "null" (a sandboxed frame, a file:// page) and the like
        if host is not None and parts.netloc.lower() == host.strip().lower():
            return True  # same origin: the server's own pages (/ui, /docs)
        name = (parts.hostname or "").rstrip(".")
        if name in LOOPBACK_NAMES or name.endswith(".localhost"):
            return True
        if _is_ip(name):
            return ipaddress.ip_address(name).is_loopback
        return any(name == n or (n.startswith(".") and (name.endswith(n) or name == n[1:])) for n in self.configured)


def _target_authority(target: bytes) -> str | None:
    """`http://name:port/path` → `name:port`; None when the target is no absolute URL (`*`, garbage) or its
    authority is not a plain host (userinfo, empty)."""
    parts = urlsplit(target.decode("latin-1"))
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc or "@" in parts.netloc:
        return None
    return parts.netloc if _HOST_RE.fullmatch(parts.netloc) else None
