"""The sidecar's HTTP/1.1 protocol: uvicorn's own, keeping a request target that is not a path for the Host check.

HTTP lets a request line carry an absolute URL (`GET http://evil.example/v1/banks HTTP/1.1`, the form meant for
proxies), and says its host then overrides the `Host` header. uvicorn's httptools protocol routes such a request by
its path alone and drops the host, so the DNS-rebinding guard (memwrap_server/hosts.py) would judge it by a `Host`
the target overrides. This protocol leaves the raw target in the scope's extensions (hosts.TARGET_EXTENSION) when it
is not a plain path, and the Gate checks its host too. (uvicorn's h11 protocol keeps the whole target in `path`,
which the Gate reads the same way.) Used by `memwrap serve`; an app run under another server goes without it.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from memwrap_server.hosts import TARGET_EXTENSION


class MemwrapHttpProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]  # httptools' when installed, else h11's
    def on_headers_complete(self) -> None:
        url: bytes = getattr(self, "url", b"/")
        if url[:1] != b"/":  # absolute form, or `*`: seen by the Gate before any route
            scope: Any = self.scope
            scope.setdefault("extensions", {})[TARGET_EXTENSION] = bytes(url)
        super().on_headers_complete()
