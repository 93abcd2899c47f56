"""Memory defense: find secrets and personal identifiers before anything is stored.

Runs first in retain, in every mode, so that no raw secret reaches the database, the spool, an
LLM prompt or a log line. Pure Python and regexes, no I/O.

Design notes
------------
* Every rule is a precompiled regex plus, where the shape alone is not enough, a `refine` check
  (Luhn, mod-97, GB 11643, a real birth date, a decodable Discord user id ...). Only
  high-confidence shapes are listed; a secret scanner that cries wolf gets switched off.
* Token boundaries are ASCII: a key glued to CJK text ("密钥是sk-proj-…谢谢") is still found, but
  nothing matches in the middle of a longer run of ASCII letters and digits. Python's `\\b` is
  Unicode-aware and would treat 是 as a word character, so the rules use explicit look-arounds
  and every regex is compiled with `re.ASCII`.
* Rules overlap (a Stripe key is also a `password=` value). Each rule has a rank; the most specific
  rank wins, then the longest span, so the reported kind is the most informative one and the
  findings never overlap.
* Speed: each rule names cheap "needles" (literal substrings) or a minimum digit count. A rule's
  regex only runs when the text could possibly contain a match, so an ordinary 30-word chat turn
  costs a handful of `in` checks and a few regex searches.
* A `Finding` records the kind and the span, never the secret itself, so findings can be logged.
"""

from __future__ import annotations

import base64
import binascii
import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["KINDS", "DefenseResult", "Finding", "Policy", "apply_policy", "redact", "scan"]

Policy = Literal["redact", "block", "off"]
_POLICIES: frozenset[str] = frozenset({"redact", "block", "off"})


class Finding(BaseModel):
    """One detected secret: what kind and where. The secret itself is deliberately not kept."""

    model_config = ConfigDict(frozen=True)

    kind: str
    start: int
    end: int


class DefenseResult(BaseModel):
    """The text to store (redacted or untouched), what was found, and whether storing is refused."""

    text: str
    findings: list[Finding]
    blocked: bool


# --------------------------------------------------------------------------------------------------
# Rule machinery
# --------------------------------------------------------------------------------------------------

# A refiner gets the whole text and a candidate span and returns the final span, or None to reject.
Refiner = Callable[[str, int, int], tuple[int, int] | None]

# Ranks: on overlap the higher rank wins (then the longer span).
_R_BLOCK = 100  # multi-line key material: always the outermost finding
_R_VENDOR = 90  # vendor tokens with a distinctive prefix or structure
_R_LABELLED = 80  # vendor secrets recognised by their label (aws_secret_access_key = ...)
_R_STRUCT = 75  # JWTs, URLs with credentials
_R_GENERIC = 70  # generic sk-..., Authorization headers
_R_ASSIGN = 60  # password=..., api_key: "..."
_R_CN_ID = 55  # checksum + birth date + region: more specific than a card number
_R_CHECKSUM = 50  # numbers that pass a checksum: cards, IBANs
_R_PII = 40  # SSN, e-mail
_R_CN_MOBILE = 35
_R_PHONE = 30


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    regex: re.Pattern[str]
    rank: int
    # Pre-check. If needles are given, at least one must occur in the text (in the lower-cased text
    # when `folded`), otherwise the regex cannot match and is skipped.
    needles: tuple[str, ...] = ()
    folded: bool = False
    min_digits: int = 0  # skip unless the text holds at least this many ASCII digits
    min_len: int = 0  # skip unless the text is at least this long
    refine: Refiner | None = None


def _rx(pattern: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    flags = re.ASCII | (re.IGNORECASE if ignore_case else 0)
    return re.compile(pattern, flags)


# ASCII token boundaries. A token may follow CJK, punctuation, whitespace or '_' (FOO_KEY_ghp_...
# is rare, but an env-var dump glued with '=' or ':' is common), but never an ASCII letter/digit.
_B = r"(?<![A-Za-z0-9])"
_E = r"(?![A-Za-z0-9])"
_E_URLSAFE = r"(?![A-Za-z0-9_-])"  # for base64url alphabets, so a longer run is not cut short
_E_B64 = r"(?![A-Za-z0-9+/=])"  # for standard base64 alphabets

# Label/value glue for `name = value`, `"name": "value"`, `name: value`, `name => value`.
_ASSIGN = r"""["']?\s*(?:=>|:=|[:=])\s*"""

# The value part of a labelled assignment: double-quoted (may hold an apostrophe), single-quoted,
# or bare. Three group names because Python's `re` does not allow a name twice; `_secret_span`
# takes whichever one participated.
_QUOTED_OR_BARE = (
    r"""(?:"(?P<secret>[^"\r\n]{4,256})"|'(?P<single>[^'\r\n]{4,256})'"""
    r"""|(?P<bare>[^\s"',;&<>()\[\]{}]{4,256}))"""
)


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    """The span to redact: the `secret` / `single` / `bare` group when the rule has one, else the match."""
    groups = match.re.groupindex
    for name in ("secret", "single", "bare"):
        if name in groups and match.group(name) is not None:
            return match.span(name)
    return match.span()


def _accept_if(predicate: Callable[[str], bool]) -> Refiner:
    """Lift a predicate on the candidate string to a refiner that keeps or drops the span."""

    def refine(text: str, start: int, end: int) -> tuple[int, int] | None:
        return (start, end) if predicate(text[start:end]) else None

    return refine


# --------------------------------------------------------------------------------------------------
# Validators (why each exists is noted at the rule that uses it)
# --------------------------------------------------------------------------------------------------


def _char_classes(value: str) -> int:
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() for c in value)
    )


_VENDOR_PREFIX = re.compile(r"^[a-z0-9]{1,8}[-_]", re.ASCII)


def _mixed(value: str) -> bool:
    """Random tokens mix letter cases and digits; identifiers and English words usually do not.
    The vendor prefix (hf_, sk-, xai- ...) is ignored so it cannot supply a class by itself."""
    body = _VENDOR_PREFIX.sub("", value, count=1)
    return (
        any("a" <= c <= "z" for c in body) + any("A" <= c <= "Z" for c in body) + any("0" <= c <= "9" for c in body)
    ) >= 2


_PLACEHOLDER_WORDS = frozenset(
    {
        "none", "null", "nil", "true", "false", "undefined", "empty", "required", "optional",
        "string", "str", "bytes", "secret", "password", "passwd", "token", "apikey", "api_key",
        "your_api_key", "your-api-key", "yourapikey", "your_password", "redacted", "hidden",
        "example", "placeholder", "changeit", "xxxxxxxx", "dummy", "sample", "default",
    }
)  # fmt: skip
_PLACEHOLDER_SHAPES = re.compile(
    r"""^(?:
        [$%]                        # $VAR, ${VAR}, %(name)s, %s
        | [<{\[(]                   # <your-key>, {{ secret }}, [REDACTED:...], (hidden)
        | (?:os|process|self|this|settings|config|cfg|env|secrets?|params?|args?|request|req|ctx)\.
        | (?:get_?env|environ|getpass|input)\b
        | (.)\1*$                   # ****, xxxx, .... (one repeated character)
    )""",
    re.ASCII | re.IGNORECASE | re.VERBOSE,
)
_DOTTED_IDENTIFIER = _rx(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:\(\))?$")


def _not_placeholder(value: str) -> bool:
    """Config snippets and docs are full of `password=os.environ[...]`; those are not secrets."""
    stripped = value.strip()
    if stripped.lower() in _PLACEHOLDER_WORDS:
        return False
    if _PLACEHOLDER_SHAPES.match(stripped) or _DOTTED_IDENTIFIER.match(stripped):
        return False
    return "REDACTED" not in stripped  # keep redaction idempotent


_TRAILING_PUNCTUATION = ".,!?;:)]}'\""


def _is_prose_word(value: str) -> bool:
    """'wrong', 'Please', 'NONE': a plain word, which is what follows "password:" in prose."""
    return value.isalpha() and (value.islower() or value.istitle() or value.isupper())


def _is_quoted(text: str, start: int) -> bool:
    return start > 0 and text[start - 1] in "\"'“"


_LABEL_BEFORE_VALUE = _rx(r"""([A-Za-z_][A-Za-z0-9_-]*)["']?\s*(=>|:=|[:=])\s*["']?$""")


def _config_style(text: str, start: int) -> bool:
    """`password=hunter`, `DB_PASSWORD: hunter`, `passwd: hunter` are configuration; a plain
    `Password: hunter` may well be the start of a sentence."""
    label = _LABEL_BEFORE_VALUE.search(text, max(0, start - 48), start)
    if label is None:
        return False
    name, glue = label.group(1), label.group(2)
    return "=" in glue or "_" in name or name.isupper() or name.lower() in ("passwd", "pwd")


def _refine_password(text: str, start: int, end: int) -> tuple[int, int] | None:
    # Classify on the value without sentence punctuation ("the password is wrong." must not
    # count '.' as a symbol), but redact the whole span in case the punctuation is part of it.
    value = text[start:end].rstrip(_TRAILING_PUNCTUATION)
    if len(value) < 4 or not _not_placeholder(value):
        return None
    if _is_quoted(text, start):
        return (start, end)
    if _is_prose_word(value) and not _config_style(text, start):
        return None
    if len(value) < 6 and _char_classes(value) < 2:
        return None  # "pass: abcd" is more likely a typo or prose than a password
    return (start, end)


def _refine_api_secret(text: str, start: int, end: int) -> tuple[int, int] | None:
    # Machine-made secrets are long and mix character classes; "token: expired" and
    # `api_key = "PLACEHOLDER"` are not secrets.
    value = text[start:end].rstrip(_TRAILING_PUNCTUATION)
    if len(value) < 8 or not _not_placeholder(value) or _is_prose_word(value):
        return None
    if _char_classes(value) >= 2 or len(value) >= 24:
        return (start, end)
    return None


def _digits(value: str) -> str:
    return "".join(c for c in value if "0" <= c <= "9")


def _luhn_ok(number: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(number)):
        digit = ord(char) - 48
        if index % 2 == 1:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def _card_brand_ok(number: str) -> bool:
    """Known issuer prefixes (IIN ranges) with the lengths each scheme actually issues."""
    n = len(number)
    p2, p3, p4, p6 = int(number[:2]), int(number[:3]), int(number[:4]), int(number[:6])
    if number[0] == "4":  # Visa
        return n in (13, 16, 19)
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:  # Mastercard
        return n == 16
    if p2 in (34, 37):  # American Express
        return n == 15
    if p4 == 6011 or p2 == 65 or 644 <= p3 <= 649 or 622126 <= p6 <= 622925:  # Discover
        return 16 <= n <= 19
    if 3528 <= p4 <= 3589:  # JCB
        return 16 <= n <= 19
    if 300 <= p3 <= 305 or p2 in (36, 38, 39):  # Diners Club
        return 14 <= n <= 19
    if p2 == 62:  # UnionPay
        return 16 <= n <= 19
    if p2 == 50 or 56 <= p2 <= 69:  # Maestro
        return 13 <= n <= 19
    return False


def _card_grouping_ok(candidate: str) -> bool:
    """Cards are written solid or in the printed groups (4-4-4-4, 4-6-5 ...), one separator kind.
    This keeps phone numbers and ID numbers with odd groupings from passing as cards."""
    separators = {c for c in candidate if c in " -"}
    if not separators:
        return True
    if len(separators) > 1:
        return False
    groups = [len(g) for g in candidate.split(separators.pop())]
    if any(size == 0 for size in groups):
        return False
    if groups in ([4, 6, 5], [4, 6, 4]):  # Amex, Diners
        return True
    return all(size == 4 for size in groups[:-1]) and 1 <= groups[-1] <= 4


def _card_ok(candidate: str) -> bool:
    number = _digits(candidate)
    return 13 <= len(number) <= 19 and _card_grouping_ok(candidate) and _card_brand_ok(number) and _luhn_ok(number)


# SSA never issues area 000, 666 or 900-999, group 00 or serial 0000 (the regex enforces those);
# these two were printed on sample cards and later voided.
_VOIDED_SSNS = frozenset({"078051120", "219099999"})


def _ssn_ok(candidate: str) -> bool:
    number = _digits(candidate)
    if len(number) != 9 or number in _VOIDED_SSNS:
        return False
    area, group, serial = number[:3], number[3:5], number[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


# IBAN lengths per country (ISO 13616 registry); mod-97 alone would accept any length.
_IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30,
    "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22,
    "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28,
    "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip


def _iban_mod97_ok(iban: str) -> bool:
    rearranged = iban[4:] + iban[:4]
    numeric = "".join(str(int(c, 36)) for c in rearranged)
    return int(numeric) % 97 == 1


def _refine_iban(text: str, start: int, end: int) -> tuple[int, int] | None:
    """Trim the candidate to the country's IBAN length, then check mod 97.

    The printed form is space-separated groups of four, so the regex may swallow a following
    upper-case word ("... 0130 00 THEN"); the registry length tells where the IBAN really ends."""
    expected = _IBAN_LENGTHS.get(text[start : start + 2])
    if expected is None:
        return None
    compact: list[str] = []
    position = start
    while position < end and len(compact) < expected:
        if text[position] != " ":
            compact.append(text[position])
        position += 1
    if len(compact) != expected:
        return None
    if position < len(text) and text[position].isascii() and text[position].isalnum():
        return None  # the IBAN would end inside a group
    iban = "".join(compact)
    return (start, position) if _iban_mod97_ok(iban) else None


# GB 11643-1999: 6-digit region, 8-digit birth date, 3-digit sequence, 1 check character.
_CN_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_ID_CHECK = "10X98765432"
_CN_PROVINCES = frozenset(
    {11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46,
     50, 51, 52, 53, 54, 61, 62, 63, 64, 65, 71, 81, 82, 83, 91}
)  # fmt: skip


def _cn_id_checksum(first17: str) -> str:
    total = sum(int(d) * w for d, w in zip(first17, _CN_ID_WEIGHTS, strict=True))
    return _CN_ID_CHECK[total % 11]


def _cn_id_ok(candidate: str) -> bool:
    if int(candidate[:2]) not in _CN_PROVINCES:
        return False
    try:
        born = date(int(candidate[6:10]), int(candidate[10:12]), int(candidate[12:14]))
    except ValueError:  # 2023-02-30 and friends
        return False
    if not (date(1900, 1, 1) <= born <= date.today()):
        return False
    return _cn_id_checksum(candidate[:17]) == candidate[17].upper()


def _discord_token_ok(candidate: str) -> bool:
    """The first segment of a Discord bot token is the bot's numeric user id in base64."""
    head = candidate.split(".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return False
    return decoded.isdigit() and 17 <= len(decoded) <= 20


def _phone_digits_between(low: int, high: int) -> Callable[[str], bool]:
    def check(candidate: str) -> bool:
        return low <= len(_digits(candidate)) <= high

    return check


def _us_phone_ok(candidate: str) -> bool:
    """NANP: area code and exchange start with 2-9; dashed/dotted forms use one separator."""
    number = _digits(candidate)
    if len(number) == 11:
        number = number[1:]
    if len(number) != 10 or number[0] in "01" or number[3] in "01":
        return False
    body = candidate.split(")", 1)[-1] if "(" in candidate else candidate
    separators = {c for c in body[-9:] if c in "-. "}
    return len(separators) <= 1 or "(" in candidate


def _twilio_context(text: str, start: int, end: int) -> tuple[int, int] | None:
    """An account SID alone identifies, it does not authenticate. Flag it only when Twilio
    credentials are being discussed around it, where the auth token is usually nearby."""
    window = text[max(0, start - 256) : end + 256].lower()
    if "twilio" in window or "auth_token" in window or "auth token" in window or "authtoken" in window:
        return (start, end)
    return None


# --------------------------------------------------------------------------------------------------
# The rules, grouped by family
# --------------------------------------------------------------------------------------------------

_URLSAFE = r"[A-Za-z0-9_-]"
_B64 = r"[A-Za-z0-9+/]"

_LLM_VENDOR_RULES: tuple[_Rule, ...] = (
    # Anthropic before the generic sk-: "sk-ant-api03-..." / "sk-ant-admin01-...".
    _Rule(
        "anthropic_key",
        _rx(_B + r"sk-ant-[a-z]{2,8}\d{0,3}-" + _URLSAFE + r"{32,}"),
        _R_VENDOR + 5,
        needles=("sk-ant-",),
    ),
    # OpenAI: project, service-account, admin and user keys; legacy keys embed "T3BlbkFJ"
    # (base64 of "OpenAI") in the middle.
    _Rule(
        "openai_key",
        _rx(_B + r"sk-(?:proj|svcacct|admin|None)-" + _URLSAFE + r"{20,}"),
        _R_VENDOR + 5,
        needles=("sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-"),
    ),
    _Rule(
        "openai_key",
        _rx(_B + r"sk-[A-Za-z0-9]{16,}T3BlbkFJ[A-Za-z0-9]{16,}" + _E),
        _R_VENDOR + 5,
        needles=("T3BlbkFJ",),
    ),
    _Rule("openrouter_key", _rx(_B + r"sk-or-v1-[a-f0-9]{64}" + _E), _R_VENDOR + 5, needles=("sk-or-",)),
    # DeepSeek, Moonshot, DashScope, legacy OpenAI ... all use "sk-" plus a long alphanumeric run.
    _Rule(
        "generic_sk_key", _rx(_B + r"sk-[A-Za-z0-9]{32,}" + _E), _R_GENERIC, needles=("sk-",), refine=_accept_if(_mixed)
    ),
    _Rule("google_api_key", _rx(_B + r"AIza" + _URLSAFE + r"{35}" + _E_URLSAFE), _R_VENDOR, needles=("AIza",)),
    _Rule("groq_key", _rx(_B + r"gsk_[A-Za-z0-9]{48,}" + _E), _R_VENDOR, needles=("gsk_",)),
    _Rule(
        "huggingface_token",
        _rx(_B + r"hf_[A-Za-z0-9]{34,40}" + _E),
        _R_VENDOR,
        needles=("hf_",),
        refine=_accept_if(_mixed),
    ),
    _Rule(
        "replicate_token", _rx(_B + r"r8_[A-Za-z0-9]{37}" + _E), _R_VENDOR, needles=("r8_",), refine=_accept_if(_mixed)
    ),
    _Rule("perplexity_key", _rx(_B + r"pplx-[A-Za-z0-9]{40,}" + _E), _R_VENDOR, needles=("pplx-",)),
    _Rule("xai_key", _rx(_B + r"xai-[A-Za-z0-9]{48,}" + _E), _R_VENDOR, needles=("xai-",), refine=_accept_if(_mixed)),
    _Rule("langsmith_key", _rx(_B + r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + _E), _R_VENDOR, needles=("lsv2_",)),
    # Cohere keys have no prefix: only trust them under a Cohere label.
    _Rule(
        "cohere_key",
        _rx(
            r"cohere[_ .-]?(?:api[_ .-]?)?(?:key|token)" + _ASSIGN + r"""["']?(?P<secret>[A-Za-z0-9]{40})""" + _E,
            ignore_case=True,
        ),
        _R_LABELLED,
        needles=("cohere",),
        folded=True,
    ),
)

_CLOUD_RULES: tuple[_Rule, ...] = (
    # AWS key ids: long-term (AKIA), temporary (ASIA) and the rarer ABIA/ACCA/A3T prefixes.
    _Rule(
        "aws_access_key",
        _rx(_B + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}" + _E),
        _R_VENDOR,
        needles=("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
    ),
    # The 40-char secret key has no prefix and looks like any base64; only trust it when labelled.
    _Rule(
        "aws_secret_key",
        _rx(
            r"(?:aws[_ .-]?secret[_ .-]?(?:access[_ .-]?)?key|secret[_ ]?access[_ ]?key)"
            + _ASSIGN
            + r"""["']?(?P<secret>[A-Za-z0-9/+]{40})"""
            + _E_B64,
            ignore_case=True,
        ),
        _R_LABELLED,
        needles=("secret",),
        folded=True,
    ),
    _Rule(
        "aws_session_token",
        _rx(
            r"(?:aws[_ .-]?session[_ .-]?token|sessiontoken|security[_ .-]?token)"
            + _ASSIGN
            + r"""["']?(?P<secret>[A-Za-z0-9/+=]{100,})""",
            ignore_case=True,
        ),
        _R_LABELLED,
        needles=("token",),
        folded=True,
        min_len=100,
    ),
    # Service-account JSON: the key id is a 40-hex handle on the private key (which the
    # private_key block rule catches separately).
    _Rule(
        "gcp_private_key_id",
        _rx(r'"private_key_id"\s*:\s*"(?P<secret>[a-f0-9]{40})"'),
        _R_LABELLED,
        needles=("private_key_id",),
    ),
    _Rule(
        "google_oauth_secret", _rx(_B + r"GOCSPX-" + _URLSAFE + r"{28}" + _E_URLSAFE), _R_VENDOR, needles=("GOCSPX-",)
    ),
    _Rule("google_oauth_token", _rx(_B + r"ya29\." + _URLSAFE + r"{30,}"), _R_VENDOR, needles=("ya29.",)),
    # Azure storage / Service Bus connection strings: redact the key, keep the account name.
    _Rule(
        "azure_storage_key",
        _rx(r"AccountKey=(?P<secret>" + _B64 + r"{40,}={0,2})", ignore_case=True),
        _R_LABELLED,
        needles=("accountkey=",),
        folded=True,
    ),
    _Rule(
        "azure_shared_access_key",
        _rx(r"SharedAccessKey=(?P<secret>" + _B64 + r"{40,}={0,2})", ignore_case=True),
        _R_LABELLED,
        needles=("sharedaccesskey=",),
        folded=True,
    ),
    # SAS URLs: the signature is a URL-encoded base64 HMAC-SHA256 (43+ chars).
    _Rule(
        "azure_sas_signature",
        _rx(r"(?<=[?&;])sig=(?P<secret>[A-Za-z0-9%+/]{40,}(?:%3D|=){0,2})"),
        _R_LABELLED,
        needles=("sig=",),
    ),
    # Azure AD (Entra) client secrets carry "Q~" after a 3-char id and a version digit.
    _Rule(
        "azure_ad_client_secret",
        _rx(r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])"),
        _R_VENDOR,
        needles=("Q~",),
    ),
    _Rule("digitalocean_token", _rx(_B + r"do[opr]_v1_[a-f0-9]{64}" + _E), _R_VENDOR, needles=("_v1_",)),
    _Rule("heroku_key", _rx(_B + r"HRKU-" + _URLSAFE + r"{40,}"), _R_VENDOR, needles=("HRKU-",)),
    _Rule(
        "heroku_key",
        _rx(
            r"heroku[_ .-]?api[_ .-]?key"
            + _ASSIGN
            + r"""["']?(?P<secret>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"""
            + _E,
            ignore_case=True,
        ),
        _R_LABELLED,
        needles=("heroku",),
        folded=True,
    ),
    # Personal tokens "dp.pt.<43>", service tokens "dp.st.<config>.<44>", ...
    _Rule(
        "doppler_token",
        _rx(_B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_-]{2,35}\.)?[A-Za-z0-9]{40,44}" + _E),
        _R_VENDOR,
        needles=("dp.",),
    ),
    _Rule("vault_token", _rx(_B + r"hv[sbr]\." + _URLSAFE + r"{24,}"), _R_VENDOR, needles=("hvs.", "hvb.", "hvr.")),
    _Rule("databricks_token", _rx(_B + r"dapi[a-f0-9]{32}(?:-\d{1,2})?" + _E), _R_VENDOR, needles=("dapi",)),
)

_DEV_PLATFORM_RULES: tuple[_Rule, ...] = (
    # GitHub classic tokens: personal, OAuth, user-to-server, server-to-server, refresh.
    _Rule(
        "github_token",
        _rx(_B + r"gh[pousr]_[A-Za-z0-9]{36,255}" + _E),
        _R_VENDOR,
        needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _Rule(
        "github_fine_grained_pat",
        _rx(_B + r"github_pat_[A-Za-z0-9_]{50,255}" + _E),
        _R_VENDOR,
        needles=("github_pat_",),
    ),
    _Rule(
        "gitlab_token",
        _rx(_B + r"gl(?:pat|ptt|rt|dt|ft|soat|cbt|imt)-" + _URLSAFE + r"{20,}"),
        _R_VENDOR,
        needles=("glpat-", "glptt-", "glrt-", "gldt-", "glft-", "glsoat-", "glcbt-", "glimt-"),
    ),
    _Rule("atlassian_token", _rx(_B + r"ATATT3[A-Za-z0-9_=-]{150,}"), _R_VENDOR, needles=("ATATT3",)),
    _Rule("bitbucket_token", _rx(_B + r"ATBB[A-Za-z0-9]{32,}" + _E), _R_VENDOR, needles=("ATBB",)),
    _Rule("npm_token", _rx(_B + r"npm_[A-Za-z0-9]{36}" + _E), _R_VENDOR, needles=("npm_",), refine=_accept_if(_mixed)),
    # PyPI tokens are macaroons whose base64 starts "AgE" (version byte + location).
    _Rule("pypi_token", _rx(_B + r"pypi-AgE" + _URLSAFE + r"{50,}"), _R_VENDOR, needles=("pypi-",)),
    _Rule("linear_key", _rx(_B + r"lin_api_[A-Za-z0-9]{40}" + _E), _R_VENDOR, needles=("lin_api_",)),
    _Rule(
        "notion_token",
        _rx(_B + r"(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{46})" + _E),
        _R_VENDOR,
        needles=("secret_", "ntn_"),
        refine=_accept_if(_mixed),
    ),
    _Rule(
        "sentry_token",
        _rx(_B + r"(?:sntrys_eyJ[A-Za-z0-9+/=_-]{50,}|sntryu_[a-f0-9]{64}" + _E + r")"),
        _R_VENDOR,
        needles=("sntry",),
    ),
    _Rule(
        "grafana_token",
        _rx(_B + r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_eyJ[A-Za-z0-9+/=_-]{32,})" + _E),
        _R_VENDOR,
        needles=("glsa_", "glc_"),
    ),
    _Rule("new_relic_key", _rx(_B + r"NRAK-[A-Z0-9]{27}" + _E), _R_VENDOR, needles=("NRAK-",)),
    _Rule("postman_key", _rx(_B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _E), _R_VENDOR, needles=("PMAK-",)),
    _Rule(
        "age_secret_key",
        _rx(_B + r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}" + _E),
        _R_VENDOR,
        needles=("AGE-SECRET-KEY-",),
    ),
)

_MESSAGING_PAYMENT_RULES: tuple[_Rule, ...] = (
    _Rule(
        "slack_token",
        _rx(_B + r"xox[abeoprs]-[0-9A-Za-z]+(?:-[0-9A-Za-z]+)+" + _E),
        _R_VENDOR,
        needles=("xox",),
        refine=_accept_if(lambda s: len(s) >= 24),
    ),
    _Rule("slack_app_token", _rx(_B + r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]{32,}" + _E), _R_VENDOR, needles=("xapp-",)),
    _Rule(
        "slack_webhook",
        _rx(r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}"),
        _R_VENDOR,
        needles=("hooks.slack.com",),
    ),
    _Rule(
        "discord_webhook",
        _rx(r"https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{17,20}/" + _URLSAFE + r"{60,}"),
        _R_VENDOR,
        needles=("/api/webhooks/",),
    ),
    # id (base64 of the numeric bot id) . timestamp . HMAC
    _Rule(
        "discord_bot_token",
        _rx(r"(?<![A-Za-z0-9_-])[MNO][A-Za-z0-9_-]{22,26}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}" + _E_URLSAFE),
        _R_VENDOR,
        needles=(".",),
        min_len=59,
        refine=_accept_if(_discord_token_ok),
    ),
    _Rule(
        "telegram_bot_token",
        _rx(r"(?<![0-9A-Za-z])\d{8,10}:AA[A-Za-z0-9_-]{33}" + _E_URLSAFE),
        _R_VENDOR,
        needles=(":AA",),
        min_digits=8,
    ),
    _Rule(
        "stripe_secret_key",
        _rx(_B + r"sk_(?:live|test)_[A-Za-z0-9]{24,}" + _E),
        _R_VENDOR,
        needles=("sk_live_", "sk_test_"),
    ),
    _Rule(
        "stripe_restricted_key",
        _rx(_B + r"rk_(?:live|test)_[A-Za-z0-9]{24,}" + _E),
        _R_VENDOR,
        needles=("rk_live_", "rk_test_"),
    ),
    _Rule("stripe_webhook_secret", _rx(_B + r"whsec_[A-Za-z0-9+/]{32,}={0,2}"), _R_VENDOR, needles=("whsec_",)),
    _Rule("twilio_api_key", _rx(_B + r"SK[0-9a-f]{32}" + _E), _R_VENDOR, needles=("SK",)),
    _Rule("twilio_account_sid", _rx(_B + r"AC[0-9a-f]{32}" + _E), _R_VENDOR, needles=("AC",), refine=_twilio_context),
    _Rule(
        "twilio_auth_token",
        _rx(
            r"(?:twilio[_ .-]?)?auth[_ .-]?token" + _ASSIGN + r"""["']?(?P<secret>[0-9a-f]{32})""" + _E,
            ignore_case=True,
        ),
        _R_LABELLED,
        needles=("token",),
        folded=True,
    ),
    _Rule(
        "sendgrid_key",
        _rx(_B + r"SG\." + _URLSAFE + r"{22}\." + _URLSAFE + r"{43}" + _E_URLSAFE),
        _R_VENDOR,
        needles=("SG.",),
    ),
    _Rule("mailgun_key", _rx(_B + r"key-[0-9a-f]{32}" + _E), _R_VENDOR, needles=("key-",)),
    _Rule("mailchimp_key", _rx(_B + r"[0-9a-f]{32}-us\d{1,2}" + _E), _R_VENDOR, needles=("-us",)),
    _Rule("shopify_token", _rx(_B + r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}" + _E), _R_VENDOR, needles=("shp",)),
)

# Between PEM lines: real newlines, JSON-escaped "\n", or spaces when a paste lost its newlines.
_PEM_SEP = r"(?:[ \t]*(?:\r?\n|\\r?\\n)?[ \t]*)"

_STRUCTURED_RULES: tuple[_Rule, ...] = (
    # PEM / OpenSSH / PGP private keys, through the matching END line. An unterminated block (a
    # paste cut short) is still key material: take the base64 body that follows.
    _Rule(
        "private_key",
        _rx(
            r"-----BEGIN (?P<label>(?:[A-Z0-9]+ ){0,3})PRIVATE KEY(?P<block>(?: BLOCK)?)-----"
            r"(?:[\s\S]{0,40000}?-----END (?P=label)PRIVATE KEY(?P=block)-----"
            # unterminated: optional PEM headers, then base64 lines (the first one long, so a
            # header merely quoted in prose does not swallow the sentence after it)
            r"|(?:" + _PEM_SEP + r"(?:Proc-Type|DEK-Info|Comment|Version):[^\r\n\\]*)*"
            r"(?:" + _PEM_SEP + r"[A-Za-z0-9+/]{40,}={0,2})(?:" + _PEM_SEP + r"[A-Za-z0-9+/]{16,}={0,2})*"
            r"(?:(?:\r?\n|\\r?\\n)[A-Za-z0-9+/]{1,15}={0,2})?)"
        ),
        _R_BLOCK,
        needles=("PRIVATE KEY",),
    ),
    # Header.payload.signature, both JSON parts starting '{"' (base64 "eyJ").
    _Rule(
        "jwt",
        _rx(
            r"(?<![A-Za-z0-9_-])eyJ"
            + _URLSAFE
            + r"{8,}\.eyJ"
            + _URLSAFE
            + r"{8,}\.(?:"
            + _URLSAFE
            + r"+)?"
            + _E_URLSAFE
        ),
        _R_STRUCT,
        needles=("eyJ",),
    ),
    # Database / queue URLs with a password: redact the whole URL, host names are sensitive too.
    _Rule(
        "database_url",
        _rx(
            _B + r"(?:jdbc:)?(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver"
            r"|oracle|cockroachdb|clickhouse|neo4j(?:\+s)?|bolt|couchdb|nats|kafka)(?:\+[a-z0-9]+)?"
            r"://[^\s:/@]*:[^\s/?#]+@[^\s/?#@\"'<>]+(?:[/?#][^\s\"'<>]*)?",
            ignore_case=True,
        ),
        _R_STRUCT + 5,
        needles=("://",),
    ),
    # Any other URL with user:password@ (https, ftp, ssh ...): redact the credentials part.
    _Rule(
        "url_credentials",
        _rx(r"(?<=://)(?P<secret>[^\s:/@]*:[^\s/?#]+)@[^\s/?#@\"'<>]+", ignore_case=True),
        # "https://[REDACTED:github_token]@host" must not turn into a new finding on re-scan
        _R_STRUCT,
        needles=("://",),
        refine=_accept_if(lambda creds: "[REDACTED:" not in creds),
    ),
    _Rule(
        "bearer_token",
        _rx(r"(?<![A-Za-z0-9])bearer\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)", ignore_case=True),
        _R_GENERIC,
        needles=("bearer",),
        folded=True,
        refine=_accept_if(_mixed),
    ),
    _Rule(
        "basic_auth",
        _rx(r"authorization" + _ASSIGN + r"""["']?basic\s+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})""", ignore_case=True),
        _R_GENERIC,
        needles=("basic",),
        folded=True,
    ),
)

# Generic assignments. Password labels in English and Chinese (密码 "password", 口令 "passphrase").
_PASSWORD_LABEL = r"(?<![A-Za-z0-9])(?:pass(?:word|wd|phrase|code)?|pwd)"
_SECRET_LABEL = (
    r"(?<![A-Za-z0-9])(?:api[_-]?(?:key|secret|token)|apikey|access[_-]?(?:token|key)|auth[_-]?token"
    r"|refresh[_-]?token|client[_-]?secret|secret[_-]?key|private[_-]?key|app[_-]?secret|token|secret)"
)
_CJK_VALUE = r"""["'“]?(?P<secret>[A-Za-z0-9!#$%&*+\-./:<=>?@^_~]{6,128})"""

_ASSIGNMENT_RULES: tuple[_Rule, ...] = (
    _Rule(
        "password",
        _rx(_PASSWORD_LABEL + _ASSIGN + _QUOTED_OR_BARE, ignore_case=True),
        _R_ASSIGN,
        needles=("pass", "pwd"),
        folded=True,
        refine=_refine_password,
    ),
    # "my password is hunter22": prose, so the value must look machine-ish (see validator).
    _Rule(
        "password",
        _rx(
            r"(?<![A-Za-z0-9])(?:password|passcode|passphrase)\s+(?:is|was|=)\s*:?\s*[\"']?"
            r"(?P<secret>[A-Za-z0-9!#$%&*+\-./:<=>?@^_~]{6,128})",
            ignore_case=True,
        ),
        _R_ASSIGN,
        needles=("pass",),
        folded=True,
        refine=_refine_password,
    ),
    _Rule(
        "password",
        _rx(r"(?:密码|口令)\s*(?:[:：=]|是|为)\s*" + _CJK_VALUE),
        _R_ASSIGN,
        needles=("密码", "口令"),
        refine=_refine_password,
    ),
    _Rule(
        "generic_secret",
        _rx(_SECRET_LABEL + _ASSIGN + _QUOTED_OR_BARE, ignore_case=True),
        _R_ASSIGN,
        needles=("key", "token", "secret"),
        folded=True,
        refine=_refine_api_secret,
    ),
    _Rule(
        "generic_secret",
        _rx(r"(?:密钥|秘钥|令牌)\s*(?:[:：=]|是|为)\s*" + _CJK_VALUE),
        _R_ASSIGN,
        needles=("密钥", "秘钥", "令牌"),
        refine=_refine_api_secret,
    ),
)

_PERSONAL_DATA_RULES: tuple[_Rule, ...] = (
    # Luhn + issuer prefix + printed grouping, 13-19 digits.
    _Rule(
        "credit_card",
        _rx(r"(?<![0-9A-Za-z.,-])[2-6][0-9](?:[ -]?[0-9]){11,17}(?![0-9A-Za-z]|[.,-][0-9])"),
        _R_CHECKSUM,
        min_digits=13,
        refine=_accept_if(_card_ok),
    ),
    # Dashed form only when unlabelled: a bare 9-digit number is anything at all.
    _Rule(
        "us_ssn",
        _rx(r"(?<![0-9A-Za-z.-])[0-9]{3}-[0-9]{2}-[0-9]{4}(?![0-9A-Za-z]|[.-][0-9])"),
        _R_PII,
        min_digits=9,
        refine=_accept_if(_ssn_ok),
    ),
    _Rule(
        "us_ssn",
        _rx(
            r"(?<![A-Za-z0-9])(?:ssn|social security (?:number|no\.?|#))\s*(?:is|:|#|=)?\s*"
            r"(?P<secret>[0-9]{3}[ -]?[0-9]{2}[ -]?[0-9]{4})(?![0-9])",
            ignore_case=True,
        ),
        _R_PII,
        needles=("ssn", "social security"),
        folded=True,
        min_digits=9,
        refine=_accept_if(_ssn_ok),
    ),
    _Rule(
        "iban",
        _rx(r"(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}(?:[A-Z0-9]{11,30}|(?: [A-Z0-9]{4}){2,7}(?: [A-Z0-9]{1,4})?)" + _E),
        _R_CHECKSUM,
        min_digits=4,
        refine=_refine_iban,
    ),
    _Rule(
        "email",
        _rx(
            r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@"
            r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9-])"
        ),
        _R_PII,
        needles=("@",),
    ),
    # GB 11643 resident ID: region, real birth date, sequence, checksum digit or X.
    _Rule(
        "cn_resident_id",
        _rx(
            r"(?<![0-9A-Za-z])[1-9][0-9]{5}(?:19|20)[0-9]{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])"
            r"[0-9]{3}[0-9Xx](?![0-9A-Za-z])"
        ),
        _R_CN_ID,
        min_digits=17,
        refine=_accept_if(_cn_id_ok),
    ),
    # Mainland mobile: 1[3-9] + 9 digits, optionally +86/0086 and 3-4-4 grouping.
    _Rule(
        "cn_mobile",
        _rx(r"(?<![0-9A-Za-z+])(?:(?:\+|00)86[ -]?)?1[3-9][0-9](?:[ -]?[0-9]{4}){2}(?![0-9A-Za-z]|[.-][0-9])"),
        _R_CN_MOBILE,
        min_digits=11,
    ),
    # International numbers in E.164 style: "+" then 8-15 digits with light punctuation.
    _Rule(
        "phone_number",
        _rx(r"(?<![0-9A-Za-z+])\+[1-9](?:[ .()-]{0,2}[0-9]){7,14}(?![0-9])"),
        _R_PHONE,
        needles=("+",),
        min_digits=8,
        refine=_accept_if(_phone_digits_between(8, 15)),
    ),
    # North American numbers need separators: (415) 555-0132, 415-555-0132, 1-800-555-0199.
    # Bare ten-digit runs are too often order numbers or timestamps.
    _Rule(
        "phone_number",
        _rx(
            r"(?<![0-9A-Za-z+.-])(?:1[ .-])?(?:\([0-9]{3}\)[ ]?|[0-9]{3}[-.])[0-9]{3}[-. ][0-9]{4}"
            r"(?![0-9A-Za-z]|[.-][0-9])"
        ),
        _R_PHONE,
        min_digits=10,
        refine=_accept_if(_us_phone_ok),
    ),
    # UK national formats: 07xxx xxxxxx mobiles, 020 xxxx xxxx, 01xxx xxxxxx, 0161 xxx xxxx ...
    _Rule(
        "phone_number",
        _rx(
            r"(?<![0-9A-Za-z+.-])0(?:7[0-9]{3}[ ]?[0-9]{6}|2[0-9][ ]?[0-9]{4}[ ]?[0-9]{4}"
            r"|1[0-9]1[ ]?[0-9]{3}[ ]?[0-9]{4}|11[0-9][ ]?[0-9]{3}[ ]?[0-9]{4}|1[0-9]{3}[ ]?[0-9]{5,6}"
            r"|[389][0-9]{2}[ ]?[0-9]{3}[ ]?[0-9]{4})(?![0-9A-Za-z]|[.-][0-9])"
        ),
        _R_PHONE,
        min_digits=10,
    ),
)

_RULES: tuple[_Rule, ...] = (
    _STRUCTURED_RULES
    + _LLM_VENDOR_RULES
    + _CLOUD_RULES
    + _DEV_PLATFORM_RULES
    + _MESSAGING_PAYMENT_RULES
    + _ASSIGNMENT_RULES
    + _PERSONAL_DATA_RULES
)

KINDS: frozenset[str] = frozenset(rule.kind for rule in _RULES)

_ASCII_DIGITS = "0123456789"


def _digit_count(text: str) -> int:
    # Ten C-level str.count calls beat a Python loop or a regex findall on short texts.
    return sum(text.count(d) for d in _ASCII_DIGITS)


# --------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------


def scan(text: str) -> list[Finding]:
    """All secrets in `text`, non-overlapping, in text order. On overlap the most specific kind
    wins, then the longest span."""
    if not text:
        return []
    length = len(text)
    lowered = text.lower()
    digits = _digit_count(text)
    candidates: list[tuple[int, int, int, str]] = []  # (rank, start, end, kind)
    for rule in _RULES:
        if length < rule.min_len or digits < rule.min_digits:
            continue
        if rule.needles:
            haystack = lowered if rule.folded else text
            if not any(needle in haystack for needle in rule.needles):
                continue
        for match in rule.regex.finditer(text):
            span: tuple[int, int] | None = _secret_span(match)
            if rule.refine is not None:
                span = rule.refine(text, *span)
            if span is not None and span[1] > span[0]:
                candidates.append((rule.rank, span[0], span[1], rule.kind))
    if not candidates:
        return []
    # Most specific first, then longest, then leftmost; keep what does not overlap a better one.
    # `taken` stays sorted and disjoint, so one bisect finds the only neighbours that could
    # overlap (a log dump can hold thousands of findings; no quadratic pass).
    candidates.sort(key=lambda c: (-c[0], c[1] - c[2], c[1]))
    starts: list[int] = []
    taken: list[tuple[int, int, str]] = []
    for _rank, start, end, kind in candidates:
        at = bisect_right(starts, start)
        if at > 0 and taken[at - 1][1] > start:
            continue  # the finding to the left reaches into this one
        if at < len(taken) and taken[at][0] < end:
            continue  # this one reaches into the finding to the right
        starts.insert(at, start)
        taken.insert(at, (start, end, kind))
    return [Finding(kind=kind, start=start, end=end) for start, end, kind in taken]


def apply_policy(text: str, policy: Policy = "redact") -> DefenseResult:
    """Apply a bank's memory-defense policy to one piece of text.

    redact: each finding is replaced by "[REDACTED:kind]"; findings keep the original offsets.
    block:  text unchanged; blocked=True when anything was found (the caller refuses to store).
    off:    text unchanged, nothing scanned.
    """
    if policy not in _POLICIES:
        raise ValueError(f"unknown memory-defense policy {policy!r}; use 'redact', 'block' or 'off'")
    if policy == "off":
        return DefenseResult(text=text, findings=[], blocked=False)
    findings = scan(text)
    if policy == "block":
        return DefenseResult(text=text, findings=findings, blocked=bool(findings))
    if not findings:
        return DefenseResult(text=text, findings=[], blocked=False)
    pieces: list[str] = []
    cursor = 0
    for finding in findings:
        pieces.append(text[cursor : finding.start])
        pieces.append(f"[REDACTED:{finding.kind}]")
        cursor = finding.end
    pieces.append(text[cursor:])
    return DefenseResult(text="".join(pieces), findings=findings, blocked=False)


def redact(text: str) -> str:
    """`text` with every secret replaced by "[REDACTED:kind]"; safe to use on log lines."""
    return apply_policy(text, "redact").text
