"""Memory defense, property-based: each kind of secret in each encoding people and tools write it in (issue 37)
leaves nothing readable: not in what `redact` returns, nor in what retain stores, lists and exports, nor in the
wrappers' spool, nor in a log line.

Kinds: GitHub token, OpenAI key, AWS access key id, Slack webhook, card number, a password under a label in
another language, e-mail address, private key. Encodings: plain, base64 (and data: URLs), base64url,
percent-encoding, HTML character references, \\u escapes, \\x escapes, card separators, homoglyphs (UTS #39),
markup or an e-mail quote inside the token, a JSON number. "Readable" is judged after undoing every encoding
here, independently of memwrap's decoders (urllib, html, base64 at every alignment, the UTS #39 skeleton, tags
stripped): no run of 6 characters of the secret may be left in any of those readings.

`python tests/test_defense_encodings.py` prints the kinds x encodings table (seeded, 25 examples a cell).
"""

from __future__ import annotations

import base64
import html
import json
import logging
import random
import re
import sqlite3
import string
import sys
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fence_forgeries import skeleton
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_defense_properties import leaked, leaked_run, readable, seen_by_reader

from memwrap import Memory
from memwrap.defense.policy import defend, redact, scan
from memwrap.wrappers.spool import Retainer

ALNUM = string.ascii_letters + string.digits


def _alnum(rng: random.Random, n: int) -> str:
    """Random alphanumerics that mix classes, as a real token does."""
    return rng.choice(string.ascii_uppercase) + rng.choice(string.digits) + "".join(rng.choices(ALNUM, k=n - 2))


def _luhn(body: str) -> str:
    total = 0
    for index, char in enumerate(reversed(body)):
        digit = int(char) * (2 if index % 2 == 0 else 1)
        total += digit - 9 if digit > 9 else digit
    return body + str((10 - total % 10) % 10)


@dataclass(frozen=True)
class Secret:
    kind: str
    secret: str  # what must not be readable
    piece: str  # what gets encoded: the secret with its label or context
    groups: tuple[str, ...] = ()  # a card's printed groups


PASSWORD_LABELS = [
    "Passwort: ",
    "mot de passe : ",
    "contraseña: ",
    "senha: ",
    "wachtwoord = ",
    "lösenord: ",
    "hasło: ",
    "пароль: ",
    "パスワード：",
    "密碼：",
    "salasana: ",
]


def make(kind: str, rng: random.Random) -> Secret:
    if kind == "github_token":
        token = "ghp_" + _alnum(rng, 36)
        return Secret(kind, token, rng.choice(["", "GH_TOKEN="]) + token)
    if kind == "openai_key":
        key = "sk-proj-" + _alnum(rng, rng.randint(40, 80))
        return Secret(kind, key, rng.choice(["", "OPENAI_API_KEY="]) + key)
    if kind == "aws_access_key":
        key = "AKIA" + "".join(rng.choices(string.ascii_uppercase + string.digits, k=16))
        return Secret(kind, key, rng.choice(["", "aws_access_key_id = "]) + key)
    if kind == "slack_webhook":
        path = f"T{_alnum(rng, 8).upper()}/B{_alnum(rng, 8).upper()}/{_alnum(rng, 24)}"
        return Secret(kind, path, f"https://hooks.slack.com/services/{path}")
    if kind == "credit_card":
        prefix = rng.choice(["4", "51", "2221", "6011"])
        number = _luhn(prefix + "".join(rng.choices(string.digits, k=15 - len(prefix))))
        groups = tuple(number[i : i + 4] for i in range(0, 16, 4))
        return Secret(kind, number, " ".join(groups), groups)
    if kind == "password":
        value = _alnum(rng, 8) + rng.choice("!#%*") + rng.choice(string.ascii_lowercase)
        return Secret(kind, value, rng.choice(PASSWORD_LABELS) + value)
    if kind == "email":
        local = (
            "".join(rng.choices(string.ascii_lowercase, k=rng.randint(5, 9)))
            + "."
            + "".join(rng.choices(string.ascii_lowercase, k=5))
        )
        domain = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(6, 9))) + ".com"
        return Secret(kind, f"{local}@{domain}", f"{local}@{domain}")
    if kind == "private_key":
        body = ["".join(rng.choices(ALNUM + "+/", k=64)) for _ in range(4)]
        block = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----"
        return Secret(kind, body[1], block)
    raise ValueError(kind)


KINDS = [
    "github_token",
    "openai_key",
    "aws_access_key",
    "slack_webhook",
    "credit_card",
    "password",
    "email",
    "private_key",
]

# --------------------------------------------------------------------------------------------------
# Encodings: (secret, rng) -> the text written, or None where the encoding does not apply to the kind
# --------------------------------------------------------------------------------------------------

TOKENS = {"github_token", "openai_key", "aws_access_key", "slack_webhook"}
HOMOGLYPHS = {
    "a": "\u0430",
    "c": "\u0441",
    "e": "\u0435",
    "o": "\u043e",
    "p": "\u0440",
    "x": "\u0445",
    "y": "\u0443",
    "s": "\u0455",
    "i": "\u0456",
    "A": "\u0410",
    "B": "\u0412",
    "E": "\u0415",
    "K": "\u041a",
    "M": "\u041c",
    "O": "\u041e",
    "P": "\u0420",
    "T": "\u0422",
    "I": "\u0406",
    "S": "\u0405",
}
CARD_SEPARATORS = ["/", "_", ",", ":", "\u2022", " / ", ";", "|"]


def _b64(text: str) -> bytes:
    return base64.b64encode(text.encode())


def _percent(s: Secret, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return urllib.parse.quote(s.piece, safe="")  # what a URL does: every non-alphanumeric
    # Some bytes encoded, some not (UTF-8 beyond ASCII always: a byte alone is no character).
    return "".join(f"%{b:02X}" if b >= 0x80 or rng.random() < 0.5 else chr(b) for b in s.piece.encode())


def _entities(s: Secret, rng: random.Random) -> str:
    out = []
    for char in s.piece:
        if char == " " and rng.random() < 0.7:
            out.append("&nbsp;")
        elif not char.isalnum() or rng.random() < 0.3:
            out.append(rng.choice([f"&#{ord(char)};", f"&#x{ord(char):x};"]))
        else:
            out.append(char)
    return "".join(out)


def _escape(form: str) -> Callable[[Secret, random.Random], str | None]:
    def encode(s: Secret, rng: random.Random) -> str:
        every = rng.random() < 0.5
        out = []
        for char in s.piece:
            if every or not char.isalnum() or rng.random() < 0.3:
                if form == "x" and ord(char) < 0x80:
                    out.append(f"\\x{ord(char):02x}")
                elif form == "x":
                    out.append("".join(f"\\x{b:02x}" for b in char.encode()))
                else:
                    out.append(f"\\u{ord(char):04x}")
            else:
                out.append(char)
        return "".join(out)

    return encode


def _separators(s: Secret, rng: random.Random) -> str | None:
    if not s.groups:
        return None
    return rng.choice(CARD_SEPARATORS).join(s.groups)


def _homoglyphs(s: Secret, rng: random.Random) -> str | None:
    if s.kind not in TOKENS | {"password", "private_key"}:
        return None
    # The vendor prefix (or label, or the block's header) written with look-alikes: at least one, some more.
    head = len(s.piece) - len(s.secret) + min(8, len(s.secret)) if s.kind != "private_key" else 40
    chars = list(s.piece)
    swappable = [i for i in range(head) if chars[i] in HOMOGLYPHS]
    if s.kind == "slack_webhook":
        swappable = [i for i in range(8, 33) if chars[i] in HOMOGLYPHS]  # in "hooks.slack.com/services"
    if not swappable:  # a label with no look-alike letter (密碼：): the value's letters then
        swappable = [i for i in range(len(chars)) if chars[i] in HOMOGLYPHS]
    if not swappable:
        return None
    for index in rng.sample(swappable, rng.randint(1, len(swappable))):
        chars[index] = HOMOGLYPHS[chars[index]]
    return "".join(chars)


def _markup(s: Secret, rng: random.Random) -> str | None:
    if s.kind not in TOKENS:
        return None
    at = len(s.piece) - len(s.secret) + rng.randint(5, len(s.secret) - 4)
    wrap = rng.choice(["<b>{}</b>", "<span class='k'>{}</span>", "<code>{}</code>", "<!-- -->{}"])
    cut = rng.randint(at + 1, min(len(s.piece) - 1, at + 12))
    if rng.random() < 0.3:  # an e-mail reply quotes the line it wrapped
        return "> " + s.piece[:at] + "\n> " + s.piece[at:]
    return s.piece[:at] + wrap.format(s.piece[at:cut]) + s.piece[cut:]


ENCODINGS: dict[str, Callable[[Secret, random.Random], str | None]] = {
    "plain": lambda s, rng: s.piece,
    "base64": lambda s, rng: rng.choice(["", "data:text/plain;base64,"]) + _b64(s.piece).decode(),
    "base64url": lambda s, rng: (
        base64.urlsafe_b64encode(s.piece.encode()).decode().rstrip("=" if rng.random() < 0.5 else "")
    ),
    "percent": _percent,
    "html": _entities,
    "\\u": _escape("u"),
    "\\x": _escape("x"),
    "separators": _separators,
    "homoglyph": _homoglyphs,
    "markup": _markup,
    "number": lambda s, rng: None,  # a JSON number: only in metadata, below
}
TEMPLATES = ["{} ", "here it is: {} thanks", "{}\n-- sent from my phone", "见 {} 谢谢"]


def applies(kind: str, encoding: str) -> bool:
    if encoding == "number":
        return kind == "credit_card"
    probe = make(kind, random.Random(1))
    return ENCODINGS[encoding](probe, random.Random(2)) is not None


PAIRS = [
    (kind, encoding) for kind in KINDS for encoding in ENCODINGS if encoding != "number" and applies(kind, encoding)
]


# --------------------------------------------------------------------------------------------------
# Reading the output back, every way a reader could
# --------------------------------------------------------------------------------------------------

_ESCAPES = re.compile(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})")
_RUN = re.compile(r"[A-Za-z0-9+/_-]{8,}")


def _unescape(text: str) -> str:
    return _ESCAPES.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), text)


def readings(text: str) -> list[str]:
    """`text` as it reads raw, percent-decoded, HTML-decoded, unescaped, without tags and quote marks, on its
    skeleton, and each base64 run of it decoded at every alignment in both alphabets."""
    out = [
        text,
        urllib.parse.unquote(text),
        html.unescape(text),
        _unescape(text),
        re.sub(r"<[^<>]*>|\n> ?", "", text),
        skeleton(text),
    ]
    for run in _RUN.findall(text):
        for shift in range(4):
            body = run[shift:]
            body = body[: len(body) - len(body) % 4]
            for altchars in (None, b"-_"):
                try:
                    out.append(base64.b64decode(body, altchars=altchars).decode("utf-8", "ignore"))
                except ValueError:
                    continue
    return out


def leaks(secret: Secret, text: str, prose: str = "") -> str | None:
    """A run of the secret left readable in `text`, read every way above. Line by line: the lines of a listing are
    separate strings, and six digits of a card are found by chance where the digits of many ids run together."""
    return Reading(text, prose).leak(secret)


class Reading:
    """`text` read every way above, line by line, once: `leak(secret)` is `leaks(secret, text, prose)` for each
    of many secrets (a batch's listing read again for each of its 30 secrets was most of a test's minute)."""

    def __init__(self, text: str, prose: str = "") -> None:
        self.lines = [(line, [seen_by_reader(r) for r in readings(line)]) for line in text.splitlines() or [text]]
        self.public = readable(prose).lower()

    def leak(self, secret: Secret) -> str | None:
        core = readable(secret.secret)
        for line, seen in self.lines:
            for reading in seen:
                found = leaked_run(core, reading, self.public)
                if found is not None:
                    return f"{found} in {line[:200]!r}"
        return None


@dataclass(frozen=True)
class Case:
    kind: str
    encoding: str
    secret: Secret
    text: str
    prose: str


@st.composite
def encoded(draw: st.DrawFn, pairs: list[tuple[str, str]] = PAIRS) -> Case:
    kind, encoding = draw(st.sampled_from(pairs))
    rng = draw(st.randoms(use_true_random=False))
    secret = make(kind, rng)
    written = ENCODINGS[encoding](secret, rng)
    assume(written is not None)  # a password of digits and letters none of which has a look-alike
    assert written is not None
    template = draw(st.sampled_from(TEMPLATES))
    return Case(kind, encoding, secret, template.format(written), template.format(" "))


# --------------------------------------------------------------------------------------------------
# redact() itself
# --------------------------------------------------------------------------------------------------


def test_every_kind_has_every_encoding_that_applies() -> None:
    assert {kind for kind, _ in PAIRS} == set(KINDS)
    assert {encoding for _, encoding in PAIRS} == set(ENCODINGS) - {"number"}
    assert len(PAIRS) >= 55


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=encoded())
def test_nothing_readable_survives_redaction_in_any_encoding(case: Case) -> None:
    assert leaks(case.secret, case.text, case.prose) is not None or case.encoding != "plain"  # the test can fail
    out = redact(case.text)
    assert leaks(case.secret, out, case.prose) is None, (case.kind, case.encoding, case.text, out)
    assert scan(out) == [], (case.kind, case.encoding, out)  # idempotent: what is left is clean


def test_a_number_in_metadata_is_redacted() -> None:
    rng = random.Random(37)
    for _ in range(20):
        card = make("credit_card", rng)
        out = defend(
            {"metadata": {"card": int(card.secret), "n": 3, "nested": [{"pan": float(card.secret)}]}}, "redact"
        )
        assert out == {
            "metadata": {
                "card": "[REDACTED:credit_card]",
                "n": 3,
                "nested": [{"pan": "[REDACTED:credit_card]"}],
            }
        }


def test_ordinary_encoded_text_is_left_alone() -> None:
    """Base64 of ordinary text, ids, hashes and escapes hold nothing: none of it is redacted."""
    texts = [
        base64.b64encode(b"The quarterly report is due next Friday, please review it.").decode(),
        "data:text/plain;base64," + base64.b64encode(b"hello world, nothing to see here").decode(),
        "request 550e8400-e29b-41d4-a716-446655440000, commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "md5 d41d8cd98f00b204e9800998ecf8427e, sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709",
        "https://example.com/search?q=caf%C3%A9%20au%20lait&lang=fr%2DFR",
        "Tom &amp; Jerry &lt;3 &#8212; the classic",
        "path C:\\x64\\users and \\u00e9t\\u00e9 in JSON",
        "lists: 2019, 2020, 2021, 2022 and 1/2/3/4; times 10:30:45:12",
        "Passwort: vergessen. Mot de passe : oublié. パスワード：忘れた",
        "eyJhbGciOiJIUzI1NiJ9 alone is a header, not a token",
    ]
    for text in texts:
        assert scan(text) == [], text


# --------------------------------------------------------------------------------------------------
# Stored, listed, exported; spooled; logged
# --------------------------------------------------------------------------------------------------

FIELDS = ("content", "context", "document_id", "tags", "metadata")
_MACHINE = re.compile(r"^(?:[0-9a-f-]{32,}|\d{4}-\d\d-\d\dT[\d:.]+(?:[+-]\d\d:\d\d|Z)?|observation:[0-9a-f-]+)$")
_TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?")


def _words(value: Any) -> str:
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            if not _MACHINE.match(node):
                found.append(node)
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            found.append(str(int(node)) if isinstance(node, float) and node.is_integer() else str(node))
        elif isinstance(node, dict):
            for key, item in node.items():
                walk(key)
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(value)
    return "\n".join(found)


def _item(index: int, case: Case) -> dict[str, Any]:
    where = FIELDS[index % len(FIELDS)]
    if (where == "tags" and len(case.text) > 200) or (where == "document_id" and len(case.text) > 400):
        where = "content"
    item: dict[str, Any] = {"content": f"note {index}: {case.text}" if where == "content" else f"note {index}"}
    if where == "context":
        item["context"] = case.text
    elif where == "document_id":
        item["document_id"] = f"doc {index} {case.text}"
    elif where == "tags":
        item["tags"] = [case.text]
    elif where == "metadata":
        item["metadata"] = {"note": case.text, case.text: "as a key", "deep": [{"x": case.text}]}
    if case.kind == "credit_card":  # and as a JSON number, where metadata takes one
        item.setdefault("metadata", {})["card"] = int(case.secret.secret)
    return item


def _text(value: Any) -> str:
    return _TIMESTAMP.sub(" ", _words(value))


@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(batch=st.lists(encoded(), min_size=25, max_size=35))
def test_nothing_readable_is_stored_listed_or_exported_in_any_encoding(
    memory: Memory, tmp_path: Path, batch: list[Case]
) -> None:
    bank = f"enc-{uuid.uuid4().hex[:12]}"
    try:
        memory.retain_many(bank, [_item(i, c) for i, c in enumerate(batch)])
        listed = _text([r.model_dump(mode="json") for r in memory.list(bank, limit=1000)])
        path = tmp_path / f"{bank}.jsonl"
        memory.export_bank(bank, path, include_embeddings=False)
        exported = _text([json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()])
        assert "[REDACTED:" in listed
        public = " ".join(c.prose for c in batch)
        read = {"listed": Reading(listed, public), "exported": Reading(exported, public)}
        for case in batch:
            for where, text in read.items():
                assert text.leak(case.secret) is None, (where, case.kind, case.encoding, case.text)
    finally:
        memory.delete_bank(bank)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(encoded(), min_size=25, max_size=35))
def test_nothing_readable_is_spooled_in_any_encoding(tmp_path: Path, batch: list[Case]) -> None:
    def down(bank_id: str, items: list[dict[str, Any]]) -> None:
        raise ConnectionError("engine down")

    path = tmp_path / f"spool-{uuid.uuid4().hex}.sqlite3"
    retainer = Retainer(path, down, max_backoff=0.05)
    try:
        for index, case in enumerate(batch):
            retainer.put("alice", _item(index, case))
        assert retainer.wait_spooled(10)
    finally:
        retainer.close(timeout=0.2)
    with sqlite3.connect(path) as db:
        rows = [json.loads(r[0]) for r in db.execute("SELECT item FROM spool")]
    on_disk = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*")).decode("utf-8", "replace")
    public = " ".join(c.prose for c in batch)
    spooled = Reading(_words(rows), public)
    for case in batch:
        assert spooled.leak(case.secret) is None, (case.kind, case.encoding, case.text)
        assert leaked(case.secret.secret, on_disk, public) is None, (case.kind, case.encoding, case.text)


def test_the_debug_access_log_redacts_percent_encoded_secrets() -> None:
    """uvicorn's access line (on at --log-level debug) holds the request target as sent: percent-encoded."""
    from memwrap_server.logs import LineFormatter

    rng = random.Random(4)
    for kind in ("github_token", "openai_key", "email", "credit_card"):
        secret = make(kind, rng)
        target = "/v1/banks/b/memories?q=" + urllib.parse.quote(secret.piece, safe="")
        record = logging.LogRecord(
            "uvicorn.access",
            logging.INFO,
            __file__,
            1,
            '%s - "%s %s HTTP/%s" %d',
            ("1.2.3.4:5", "GET", target, "1.1", 200),
            None,
        )
        line = LineFormatter().format(record)
        assert leaks(secret, line) is None, (kind, line)
        assert "[REDACTED:" in line


# --------------------------------------------------------------------------------------------------
# The kinds x encodings table (for the closing note)
# --------------------------------------------------------------------------------------------------


def table(examples: int = 25, seed: int = 37) -> dict[tuple[str, str], str]:
    """For each kind and encoding: 'ok' when no seeded example leaves anything readable after redact (and, for
    'number', after the metadata defense), 'n/a' when the encoding does not apply, else the count of leaks."""
    rng = random.Random(seed)
    cells: dict[tuple[str, str], str] = {}
    for kind in KINDS:
        for encoding, encode in ENCODINGS.items():
            if not applies(kind, encoding):
                cells[kind, encoding] = "n/a"
                continue
            bad = 0
            for _ in range(examples):
                secret = make(kind, rng)
                if encoding == "number":
                    out = json.dumps(defend({"metadata": {"card": int(secret.secret)}}, "redact"))
                    prose = ""
                else:
                    template = rng.choice(TEMPLATES)
                    written = encode(secret, rng)
                    if written is None:
                        continue  # no letter of it has a look-alike
                    out, prose = redact(template.format(written)), template.format(" ")
                bad += leaks(secret, out, prose) is not None
            cells[kind, encoding] = "ok" if bad == 0 else f"{bad}/{examples} leak"
    return cells


def markdown(cells: dict[tuple[str, str], str]) -> str:
    encodings = list(ENCODINGS)
    lines = ["| kind | " + " | ".join(encodings) + " |", "|---" * (len(encodings) + 1) + "|"]
    for kind in KINDS:
        lines.append(f"| {kind} | " + " | ".join(cells[kind, e] for e in encodings) + " |")
    return "\n".join(lines)


def test_the_table_has_no_leak(capsys: pytest.CaptureFixture[str]) -> None:
    cells = table()
    with capsys.disabled():
        print("\n" + markdown(cells))
    assert [cell for cell, value in cells.items() if value not in ("ok", "n/a")] == []


if __name__ == "__main__":
    sys.stdout.write(markdown(table()) + "\n")
