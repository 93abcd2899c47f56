"""Memory defense, property-based: secrets of every kind the detector knows, written the way people and input
methods really write them (any Unicode space or dash or dot between digit groups, mixed separators, fullwidth
and mathematical digits and letters, zero-width and other invisible characters inside, a token wrapped over two
lines), leave nothing readable: not in what `redact` returns, nor in what the public API stores, lists, exports
and recalls, nor in the wrappers' on-disk spool, nor in a log line.

"Readable" is measured on the text as a reader sees it (NFKC, invisible characters and separators removed):
no run of 6 characters of the secret may be left. Run time is bounded (max_examples, no deadline).
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import string
import unicodedata
import uuid
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from test_defense import CASES, CN_WEIGHTS, Case

from memwrap import Memory
from memwrap.defense.policy import KINDS, redact, redact_item, scan
from memwrap.invisible import INVISIBLE_RANGES
from memwrap.wrappers.spool import Retainer

WINDOW = 6  # a run this long of a secret's characters, left anywhere, counts as readable

SPACES = [" ", "\t", "\n", "\r\n", "\u00a0", "\u2009", "\u202f", "\u2007", "\u3000", "\u2002", "\u205f", "  "]
DASHES = ["-", "\u2010", "\u2011", "\u2012", "\u2013", "\u2014", "\u2212", "\ufe63", "\uff0d", " - "]
DOTS = [".", "\u00b7", "\u30fb", "\uff0e", ". "]
SEPARATORS = SPACES + DASHES + DOTS
INVISIBLES = [
    "\u200b",
    "\u200c",
    "\u200d",
    "\u2060",
    "\ufeff",
    "\u00ad",
    "\u3164",
    "\u115f",
    "\u2800",
    "\u180e",
    "\U000e0020",
    "\u034f",
    "\ufe0f",
]
LINE_BREAKS = ["\n", "\r\n", "\u2028", "\n  "]
# Kinds whose matches are tokens: a line break inside one is read through (defense/view.py: joined). Key blocks span
# lines by themselves; a bare 40-character AWS secret, assignments and personal data read as prose, where a
# line break ends the value.
NOT_WRAPPED = {
    "private_key",
    "password",
    "generic_secret",
    "aws_secret_key",
    "credit_card",
    "us_ssn",
    "iban",
    "email",
    "cn_resident_id",
    "cn_mobile",
    "phone_number",
}

_INVISIBLE = {chr(c) for a, b in INVISIBLE_RANGES for c in range(a, b + 1)}


# Between two separate strings of a record (JSON keys and values): a reader does not read one into the next, and
# with the separators gone "embedding_dim" + "counts" spelled "…gdimco…", a window of "…@qgdim.com" (issue 37).
BOUNDARY = "\x00"


def readable(text: str) -> str:
    """What a reader makes of `text`: NFKC, invisible characters, combining marks and separators gone; a BOUNDARY
    is kept, so no window reads across it."""
    text = "".join(c for c in unicodedata.normalize("NFKC", text) if c not in _INVISIBLE)
    return "".join(c for c in text if c == BOUNDARY or (c.isalnum() and not unicodedata.combining(c)))


_MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
_TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?")


def leaked(secret: str, text: str, prose: str = "") -> str | None:
    """A run of WINDOW characters of `secret` left readable in `text` (besides the redaction markers), if any; a
    run the surrounding `prose` holds too ("GitHub" of "my GitHub token github_pat_…") does not count."""
    return leaked_run(readable(secret), seen_by_reader(text), readable(prose).lower())


def seen_by_reader(text: str) -> str:
    """What `leaked` looks for a secret's runs in: `text` readable, the redaction markers gone."""
    return readable(_MARKER.sub(" ", text))


def leaked_run(core: str, seen: str, public: str) -> str | None:
    """`leaked` on texts already made readable (`core`: the secret's, `seen`: seen_by_reader's, `public`: the
    prose's, lower-cased), for callers that check many secrets against one text."""
    for start in range(max(1, len(core) - WINDOW + 1)):
        window = core[start : start + WINDOW]
        if window in seen and window.lower() not in public:
            return window
    return None


# --------------------------------------------------------------------------------------------------
# Strategies: how a secret gets written
# --------------------------------------------------------------------------------------------------


def fullwidth(char: str) -> str:
    return chr(ord(char) + 0xFEE0) if "!" <= char <= "~" else char


def math_digit(char: str) -> str:
    return chr(0x1D7CE + int(char)) if char.isdigit() else char  # MATHEMATICAL BOLD DIGIT


@st.composite
def disguised_token(draw: st.DrawFn, secret: str, kind: str) -> str:
    """The secret with invisible characters inside, some characters fullwidth, maybe wrapped over two lines."""
    chars = list(secret)
    width = draw(st.sampled_from(["ascii", "fullwidth", "mixed"]))
    if width != "ascii":
        chars = [fullwidth(c) if width == "fullwidth" or draw(st.booleans()) else c for c in chars]
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(1, max(1, len(chars) - 1)))
        chars.insert(at, draw(st.sampled_from(INVISIBLES)))
    if kind not in NOT_WRAPPED and "\n" not in secret and draw(st.booleans()):
        at = draw(st.integers(1, max(1, len(chars) - 1)))
        chars.insert(at, draw(st.sampled_from(LINE_BREAKS)))
    return "".join(chars)


@st.composite
def grouped_digits(draw: st.DrawFn, groups: list[str], *, dots: bool = True) -> str:
    """Digit groups joined by any separators (mixed too), digits fullwidth or mathematical at random,
    invisible characters anywhere."""
    pool = SEPARATORS if dots else SPACES + DASHES
    mixed = draw(st.booleans())
    one = draw(st.sampled_from(pool))
    out = []
    for index, part in enumerate(groups):
        if index:
            out.append(draw(st.sampled_from(pool)) if mixed else one)
        digits = draw(st.sampled_from(["ascii", "fullwidth", "math", "mixed"]))
        for char in part:
            if digits == "fullwidth" or (digits == "mixed" and draw(st.booleans())):
                char = fullwidth(char)
            elif digits == "math":
                char = math_digit(char)
            out.append(char)
            if draw(st.integers(0, 9)) == 0:
                out.append(draw(st.sampled_from(INVISIBLES)))
    return "".join(out)


def _luhn(body: str) -> str:
    total = 0
    for index, char in enumerate(reversed(body)):
        digit = int(char) * (2 if index % 2 == 0 else 1)
        total += digit - 9 if digit > 9 else digit
    return body + str((10 - total % 10) % 10)


@dataclass(frozen=True)
class Written:
    kind: str
    secret: str  # as generated (ASCII)
    text: str  # the sentence holding it, as written
    prose: str = ""  # the sentence without it: its words ("my GitHub token …") are no leak when stored


CARD_BRANDS = [
    ("4", 16, [4, 4, 4, 4]),
    ("51", 16, [4, 4, 4, 4]),
    ("2221", 16, [4, 4, 4, 4]),
    ("37", 15, [4, 6, 5]),
    ("6011", 16, [4, 4, 4, 4]),
    ("3530", 16, [4, 4, 4, 4]),
    ("62", 16, [4, 4, 4, 4]),
]


def _split(number: str, sizes: list[int]) -> list[str]:
    out, at = [], 0
    for size in sizes:
        out.append(number[at : at + size])
        at += size
    return out


@st.composite
def card(draw: st.DrawFn) -> Written:
    rng = draw(st.randoms(use_true_random=False))
    prefix, length, sizes = draw(st.sampled_from(CARD_BRANDS))
    number = _luhn(prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1)))
    solid = draw(st.integers(0, 4)) == 0
    written = draw(grouped_digits([number] if solid else _split(number, sizes)))
    template = draw(st.sampled_from(["my card is {s} exp 12/27", "卡号：{s}。", "pay with {s}, thanks"]))
    return Written("credit_card", number, template.format(s=written), template.format(s=" "))


@st.composite
def cn_id(draw: st.DrawFn) -> Written:
    rng = draw(st.randoms(use_true_random=False))
    region = draw(st.sampled_from(["110105", "440304", "310115", "510107", "650102"]))
    born = date(1950, 1, 1) + timedelta(days=rng.randrange(0, 365 * 60))
    first17 = region + born.strftime("%Y%m%d") + "".join(rng.choice(string.digits) for _ in range(3))
    number = first17 + "10X98765432"[sum(int(d) * w for d, w in zip(first17, CN_WEIGHTS, strict=True)) % 11]
    sizes = draw(st.sampled_from([[18], [6, 8, 4], [6, 4, 4, 4], [3, 3, 4, 4, 4], [4, 4, 4, 4, 2]]))
    written = draw(grouped_digits(_split(number, sizes)))
    template = draw(st.sampled_from(["身份证号{s}，请保密", "ID number {s} on file", "证件：{s}"]))
    return Written("cn_resident_id", number, template.format(s=written), template.format(s=" "))


@st.composite
def phone(draw: st.DrawFn) -> Written:
    rng = draw(st.randoms(use_true_random=False))
    shape = draw(st.sampled_from(["cn", "cn+86", "e164", "us"]))
    if shape.startswith("cn"):
        number = "1" + rng.choice("3456789") + "".join(rng.choice(string.digits) for _ in range(9))
        groups = _split(number, [3, 4, 4])
        written = draw(grouped_digits(groups, dots=True))
        if shape == "cn+86":
            written = "+86" + draw(st.sampled_from(SPACES + ["-"])) + written
        kind = "cn_mobile"
    elif shape == "e164":
        number = "44" + "20" + "".join(rng.choice(string.digits) for _ in range(8))
        written = "+" + draw(grouped_digits(_split(number, [2, 2, 4, 4]), dots=True))
        kind = "phone_number"
    else:
        number = rng.choice("23456789") + "".join(rng.choice(string.digits) for _ in range(2))
        number += rng.choice("23456789") + "".join(rng.choice(string.digits) for _ in range(6))
        sep = draw(st.sampled_from(["-", "\u2010", "\u2013", "\uff0d", "."]))
        written = "".join(fullwidth(c) if draw(st.booleans()) else c for c in number[:3]) + sep + number[3:6] + sep
        written += number[6:]
        kind = "phone_number"
    template = draw(st.sampled_from(["call me on {s} tonight", "我的手机号是{s}。", "phone: {s}"]))
    return Written(kind, number, template.format(s=written), template.format(s=" "))


@st.composite
def email(draw: st.DrawFn) -> Written:
    rng = draw(st.randoms(use_true_random=False))
    local = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 9)))
    local += rng.choice([".", "_", "+"]) + "".join(rng.choice(string.ascii_lowercase) for _ in range(4))
    domain = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(5, 9))) + rng.choice([".com", ".cn"])
    address = f"{local}@{domain}"
    written = draw(disguised_token(address, "email")).replace("@", draw(st.sampled_from(["@", "\uff20"])))
    template = draw(st.sampled_from(["write to {s} please", "邮箱是{s}", "<{s}>"]))
    return Written("email", address, template.format(s=written), template.format(s=" "))


@st.composite
def known_case(draw: st.DrawFn) -> Written:
    """Every realistic fake of tests/test_defense.py (each kind at least twice), written in disguise."""
    case: Case = draw(st.sampled_from(CASES))
    if case.kind in ("credit_card", "cn_resident_id", "iban", "phone_number", "cn_mobile", "us_ssn"):
        # Their disguises have strategies of their own.
        return Written(case.kind, case.secret, case.text, case.text.replace(case.secret, " "))
    disguised = draw(disguised_token(case.secret, case.kind))
    return Written(
        case.kind, case.secret, case.text.replace(case.secret, disguised), case.text.replace(case.secret, " ")
    )


any_secret = st.one_of(known_case(), card(), cn_id(), phone(), email())
# Stored, a text also gives entities and their romanised names: "张伟的邮箱是zhang.wei@…" keeps 张伟 and its pinyin
# "zhang wei", which is also the address's local part. Not a leak of the address: that case is left out there.
stored_secret = any_secret.filter(lambda w: not (w.kind == "email" and "张伟" in w.text))


# An address written with a fullwidth at sign, as an input method types it (the example issue 37 reported).
FULLWIDTH_AT_EMAIL = Written("email", "jqzeibbnv+eyhl@qgdim.com", "<jqzeibbnv+eyhl\uff20qgdim.com>", "< >")


def test_every_kind_is_generated() -> None:
    assert {case.kind for case in CASES} == set(KINDS)


# --------------------------------------------------------------------------------------------------
# redact() itself: many examples, cheap
# --------------------------------------------------------------------------------------------------


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(written=any_secret)
def test_nothing_readable_survives_redaction(written: Written) -> None:
    out = redact(written.text)
    assert leaked(written.secret, out, written.prose) is None, (written.kind, written.text, out)
    assert scan(out) == [] and redact(out) == out  # idempotent: the redacted text is clean


@settings(max_examples=200, deadline=None)
@given(written=st.one_of(card(), cn_id(), phone()))
def test_the_kind_is_named(written: Written) -> None:
    assert f"[REDACTED:{written.kind}]" in redact(written.text), written.text


def test_a_key_wrapped_before_a_sentence_keeps_the_sentence() -> None:
    key = "ghp_" + "aB3" * 12
    out = redact(f"my token is {key}\nThanks for the help")
    assert out == "my token is [REDACTED:github_token]Thanks for the help" or out.endswith("for the help")
    assert "aB3aB3" not in out


# --------------------------------------------------------------------------------------------------
# Through the public API: stored, listed, exported, recalled, spooled, logged
# --------------------------------------------------------------------------------------------------

FIELDS = ("content", "context", "document_id", "tags", "metadata")
# Machine values (ids, hashes, times) are digits and hex by the dozen: a 6-digit window of a card would turn up
# in them by chance. What people wrote is everything else.
_MACHINE = re.compile(r"^(?:[0-9a-f-]{32,}|\d{4}-\d\d-\d\dT[\d:.]+(?:[+-]\d\d:\d\d|Z)?|observation:[0-9a-f-]+)$")


def _words(value: Any) -> str:
    """Every string in a JSON value (mapping keys too) but machine values, a BOUNDARY between two: each is read
    alone (a secret is written whole into one string)."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            if not _MACHINE.match(node):
                found.append(node)
        elif isinstance(node, dict):
            for key, item in node.items():
                walk(key)
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(value)
    return BOUNDARY.join(found)


def _item(index: int, written: Written) -> dict[str, Any]:
    """A retain item with the secret in one of its fields (whole: a cut secret is no longer the secret)."""
    where = FIELDS[index % len(FIELDS)]
    if (where == "tags" and len(written.text) > 200) or (where == "document_id" and len(written.text) > 480):
        where = "content"  # longer than the field takes
    item: dict[str, Any] = {"content": f"note {index}: {written.text}" if where == "content" else f"note {index}"}
    if where == "context":
        item["context"] = written.text
    elif where == "document_id":
        item["document_id"] = f"doc {index} {written.text}"
    elif where == "tags":
        item["tags"] = [written.text]
    elif where == "metadata":
        item["metadata"] = {"note": written.text, written.text: "as a key", "deep": [{"x": written.text}]}
    return item


def test_a_fullwidth_at_email_is_redacted_and_each_stored_string_is_read_alone() -> None:
    """Issue 37's open defect was the measure's: the export's header keys read as one run ("embedding_dim" then
    "counts": "…gdimco…") held a window of "…@qgdim.com", whose every copy was redacted."""
    written = FULLWIDTH_AT_EMAIL
    assert redact(written.text) == "<[REDACTED:email]>"
    assert redact_item(_item(4, written))["metadata"] == {
        "note": "<[REDACTED:email]>",
        "<[REDACTED:email]>": "as a key",
        "deep": [{"x": "<[REDACTED:email]>"}],
    }
    header = {"embedding_model": "multilingual-e5-small@2", "embedding_dim": None, "counts": {"entity": 0}}
    assert leaked(written.secret, "\n".join(["embedding_dim", "counts"])) == "gdimco"  # one text: read through
    assert leaked(written.secret, _words(header)) is None  # separate strings: each alone
    assert leaked(written.secret, _words({"note": "see qgdim.com"})) == "qgdimc"  # a domain left is still found


@settings(
    max_examples=6,
    deadline=None,
    # No shrinking: a failing batch of 30-40 stored secrets took Hypothesis over ten minutes to shrink.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(batch=st.lists(stored_secret, min_size=30, max_size=40))
# Issue 37: the export's header keys "embedding_dim" and "counts" read as one run held "gdimco" of this domain; the
# address in every field (FIELDS, one item each).
@example(batch=[FULLWIDTH_AT_EMAIL] * len(FIELDS))
def test_nothing_readable_is_stored_listed_exported_or_logged(
    memory: Memory, tmp_path: Path, caplog: pytest.LogCaptureFixture, batch: list[Written]
) -> None:
    bank = f"prop-{uuid.uuid4().hex[:12]}"  # not from `random`: Hypothesis seeds it alike for every example
    caplog.set_level(logging.DEBUG)
    try:
        memory.retain_many(bank, [_item(i, w) for i, w in enumerate(batch)])
        listed = _words([r.model_dump(mode="json") for r in memory.list(bank, limit=1000)])
        path = tmp_path / f"{bank}.jsonl"
        memory.export_bank(bank, path, include_embeddings=False)
        exported = _words([json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()])
        recalled = memory.recall(bank, "note card phone token key password", token_budget=8000)
        answers = {
            "listed": listed,
            "exported": exported,
            "recall": recalled.context,
            "recalled": _words([m.model_dump(mode="json") for m in recalled.memories]),
            "log": caplog.text,
        }
        assert "[REDACTED:" in listed
        public = " ".join(w.prose for w in batch)  # "service key …": the words around any secret of the batch
        for written in batch:
            for where, text in answers.items():
                # The dates and times the block and the records print are no secret's digits (read without
                # separators, "2026-12-04 … [2026-12-04" holds "120420" of card 4000120420000000).
                text = _TIMESTAMP.sub(" ", text)
                assert leaked(written.secret, text, public) is None, (where, written.kind, written.text)
    finally:
        memory.delete_bank(bank)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(any_secret, min_size=20, max_size=30))
def test_nothing_readable_is_spooled(tmp_path: Path, batch: list[Written]) -> None:
    """The wrappers' spool writes an exchange to disk before the engine sees it (here the engine is down, so the
    rows stay): every field is redacted on the way in."""

    def down(bank_id: str, items: list[dict[str, Any]]) -> None:
        raise ConnectionError("engine down")

    # A file per example: Hypothesis seeds `random` alike for every example, so a name drawn from it was one file
    # for all, and a later example read the rows (and the prose) of the earlier ones as its own.
    path = tmp_path / f"spool-{uuid.uuid4().hex}.sqlite3"
    retainer = Retainer(path, down, max_backoff=0.05)
    try:
        for index, written in enumerate(batch):
            retainer.put("alice", _item(index, written))
        assert retainer.wait_spooled(10)
    finally:
        retainer.close(timeout=0.2)  # the engine is down: nothing to wait for
    with sqlite3.connect(path) as db:
        rows = "\n".join(r[0] for r in db.execute("SELECT item FROM spool"))
    on_disk = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*")).decode("utf-8", "replace")
    assert rows.count("[REDACTED:") >= len(batch)
    public = " ".join(w.prose for w in batch)
    for written in batch:
        assert leaked(written.secret, json.loads(json.dumps(rows)), public) is None, (written.kind, written.text)
        assert leaked(written.secret, on_disk, public) is None, (written.kind, written.text)
