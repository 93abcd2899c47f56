"""Webhooks safe by default: which addresses a bank-scoped key's webhook may reach, checked where the connection is
made, and what such a key reads back.

The SSRF table: every spelling of a private, loopback, link-local, CGNAT, unique-local or metadata address (IPv4
in IPv6 forms, NAT64, 6to4, Teredo, the numeric forms of 127.0.0.1) is refused to a bank-scoped key, and allowed
with MEMWRAP_WEBHOOK_ALLOW_PRIVATE_ADDRESSES=true or to an admin; the check holds at connect time on the address
actually used (a receiver on 127.0.0.1 reached by name gets nothing); refusals never name the resolved address; a
scoped key reads failure classes, not status codes or timings; a description is stored redacted, a URL's query is
hidden in listings.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from webhook_receiver import Receiver, drive, free_port

from memwrap import Memory
from memwrap.config import load_settings
from memwrap.engine.webhooks.addresses import BlockedAddressError, refusal
from memwrap.engine.webhooks.delivery import post
from memwrap.engine.webhooks.urls import check_public, scoped_caller, scoped_keys_configured, shown_url

QUICK: dict[str, Any] = {
    "webhook_max_attempts": 3,
    "webhook_backoff_seconds": 0.01,
    "webhook_backoff_cap_seconds": 0.05,
    "webhook_timeout_seconds": 3.0,
}

# Every form the issue found passing, and their kin. The host part of a URL.
REFUSED = {
    "127.0.0.1": "loopback",
    "2130706433": "loopback",  # decimal
    "0x7f000001": "loopback",  # hex
    "0x7f.1": "loopback",  # hex, short
    "127.1": "loopback",  # short
    "127.0.1": "loopback",
    "localhost": "loopback",
    "[::1]": "loopback",
    "[::ffff:127.0.0.1]": "loopback",  # IPv4-mapped
    "[::127.0.0.1]": "loopback",  # IPv4-compatible
    "[::ffff:0:7f00:1]": "loopback",  # IPv4-translated
    "10.1.2.3": "private",
    "172.16.0.1": "private",
    "192.168.0.10": "private",
    "100.64.0.1": "non-public",  # CGNAT
    "169.254.169.254": "metadata",
    "169.254.1.1": "link-local",
    "[fe80::1]": "link-local",
    "[fd00::1]": "private",  # ULA
    "[fd00:ec2::254]": "metadata",
    "[64:ff9b::a9fe:a9fe]": "metadata",  # NAT64 of 169.254.169.254
    "[64:ff9b::7f00:1]": "loopback",  # NAT64 of 127.0.0.1
    "[64:ff9b:1::a00:1]": "local-use NAT64",
    "[2002:a9fe:a9fe::]": "metadata",  # 6to4 of 169.254.169.254
    "[2002:7f00:1::]": "loopback",  # 6to4 of 127.0.0.1
    "[2001:0:4136:e378:8000:63bf:80ff:fffe]": "loopback",  # Teredo, client 127.0.0.1 (inverted bits)
    "0.0.0.0": "unspecified",
    "224.0.0.1": "multicast",
}
PUBLIC = ["93.184.215.14", "[2606:2800:21f:cb07:6820:80da:af6b:8b2c]", "[64:ff9b::808:808]", "[2002:808:808::]"]


@pytest.fixture(scope="module")
def mem() -> Iterator[Memory]:
    home = Path(tempfile.mkdtemp(prefix="memwrap-webhook-addresses-"))
    with Memory(settings=load_settings(home=home, worker="off", **QUICK)) as memory:
        yield memory
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver(free_port())
    r.start()
    yield r
    r.stop()


async def _refused(url: str) -> str | None:
    try:
        await check_public(url)
    except BlockedAddressError as exc:
        return str(exc)
    return None


def test_the_ssrf_table() -> None:
    """Every form refused (with a message naming the kind, never the address); public forms allowed."""
    results = {host: asyncio.run(_refused(f"http://{host}:8080/x")) for host in [*REFUSED, *PUBLIC]}
    table = [f"  {host:45} {'refused' if message else 'allowed'}" for host, message in results.items()]
    print("\nSSRF table (a bank-scoped key's webhook URL):\n" + "\n".join(table))
    for host, kind in REFUSED.items():
        message = results[host]
        assert message is not None, host
        assert kind in message, (host, message)
        assert "127.0.0.1" not in message and "169.254" not in message  # the resolved address is never echoed
    assert [host for host in PUBLIC if results[host] is not None] == []
    assert refusal("8.8.8.8") is None and refusal("fd00:ec2::254") == "metadata"


def test_a_scoped_key_is_refused_every_form_and_the_setting_or_an_admin_allows_them(mem: Memory) -> None:
    bank = "ssrf-bank"
    with scoped_caller():
        for host in REFUSED:
            with pytest.raises(BlockedAddressError):
                mem.create_webhook(bank, f"http://{host}:8080/x")
        # An existing subscription cannot be pointed inward by a scoped key either.
        hook = mem.create_webhook(bank, "https://93.184.215.14/hooks")
        with pytest.raises(BlockedAddressError):
            mem.update_webhook(bank, hook.id, url="http://169.254.169.254/latest/meta-data")
    # An admin key (or the library, or a server without keys): allowed.
    admin_hook = mem.create_webhook(bank, "http://127.0.0.1:8080/x")
    assert admin_hook.url == "http://127.0.0.1:8080/x"
    home = Path(tempfile.mkdtemp(prefix="memwrap-webhook-allow-"))
    try:
        allowed = load_settings(home=home, worker="off", webhook_allow_private_addresses=True)
        with Memory(settings=allowed) as permissive, scoped_caller():
            for i, host in enumerate(REFUSED):  # 20 a bank: a bank holds 25 subscriptions at most
                permissive.create_webhook(f"ssrf-allowed-{i // 20}", f"http://{host}:8080/x", enabled=False)
            made = sum(len(permissive.webhooks(f"ssrf-allowed-{n}")) for n in range(len(REFUSED) // 20 + 1))
        assert made == len(REFUSED)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_the_check_is_made_on_the_address_connected_to(mem: Memory, receiver: Receiver) -> None:
    """A name (and the numeric spellings) resolving to 127.0.0.1: refused at connect time, the receiver untouched;
    with private addresses allowed the same URL is delivered."""
    settings = mem.settings
    receiver.secrets["/in"] = "whsec_x"
    urls = [f"http://{host}:{receiver.port}/in" for host in ("localhost", "2130706433", "0x7f000001", "127.1")]

    async def attempts(allowed: bool) -> list[tuple[int | None, str | None]]:
        out = []
        for url in urls:
            outcome = await post(url, "whsec_x", "e", "retained", "{}", settings, private_allowed=allowed)
            out.append((outcome.status_code, outcome.error))
        return out

    refused = asyncio.run(attempts(False))
    assert refused == [(None, "refused_address")] * len(urls)
    assert receiver.raw == []
    delivered = asyncio.run(attempts(True))
    assert [code for code, _ in delivered] == [200] * len(urls) and len(receiver.raw) == len(urls)


def test_a_scoped_key_reads_failure_classes_only(mem: Memory, receiver: Receiver) -> None:
    bank = "ssrf-classes"
    receiver.mode = "503"
    path = "/busy?token=ghp_aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4"
    hook = mem.create_webhook(bank, f"{receiver.url}{path}", events=["retained"])
    receiver.secrets[path] = hook.secret or ""
    mem.retain(bank, "A note the receiver is too busy for.")

    async def done() -> bool:
        return all(d.status != "pending" for d in await mem.aio.webhook_deliveries(bank))

    drive(mem, done, "the retries to run out")
    [admin_view] = mem.webhook_deliveries(bank)
    assert [a.status_code for a in admin_view.log] == [503] * 3
    assert all(a.duration_ms is not None for a in admin_view.log)
    with scoped_caller():
        [scoped_view] = mem.webhook_deliveries(bank)
    assert [(a.status_code, a.error, a.duration_ms) for a in scoped_view.log] == [(None, "http_5xx", None)] * 3
    assert scoped_view.last_status is None and scoped_view.last_error == "http_5xx"
    # The URL's query (a token) is hidden in listings; the receiver still got it.
    assert mem.webhooks(bank)[0].url == f"{receiver.url}/busy?…" and "token=" in receiver.raw[0].path


def test_a_description_is_stored_redacted(mem: Memory) -> None:
    token = "ghp_aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4"
    hook = mem.create_webhook("ssrf-described", "https://93.184.215.14/h", description=f"CRM, token {token}")
    assert token not in (hook.description or "") and "REDACTED" in (hook.description or "")
    assert token not in (mem.webhooks("ssrf-described")[0].description or "")
    assert shown_url("https://x.example/h?k=v#f") == "https://x.example/h?…"


def test_scoped_keys_are_seen_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMWRAP_API_KEYS", "admin-key")
    assert scoped_keys_configured() is False
    monkeypatch.setenv("MEMWRAP_API_KEYS", "admin-key,alice-key:alice|team-*")
    assert scoped_keys_configured() is True
