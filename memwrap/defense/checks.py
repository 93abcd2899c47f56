"""Memory defense, validators: the checks a rule's candidate must pass when its shape alone is not enough.

Checksums (Luhn, IBAN mod-97, GB 11643), issuer and numbering-plan ranges, placeholder and prose
filters, and the `refine` functions built on them. Why each exists is noted at the rule that uses it.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from datetime import date

from memwrap.defense.rule import _rx

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


_VOWELS = frozenset("aeiouAEIOU")


def _class_of(char: str) -> int:
    return 0 if char.islower() else 1 if char.isupper() else 2 if char.isdigit() else 3


def _random_base64_40(value: str) -> bool:
    """A bare AWS secret access key: 40 random base64 characters. Random text switches between lower case,
    upper case, digits and symbols at most steps (25 of 39 on average; 14 or more in 99.3% of random keys)
    and holds few vowels (6 on average); identifiers, paths and base-16 hashes do neither ("AbstractSingleton
    ProxyFactoryBean1234567": 10 switches, 13 vowels), and hex digests lack upper case."""
    if not (any(c.islower() for c in value) and any(c.isupper() for c in value) and any(c.isdigit() for c in value)):
        return False
    switches = sum(_class_of(a) != _class_of(b) for a, b in zip(value, value[1:], strict=False))
    return switches >= 14 and sum(c in _VOWELS for c in value) <= 12


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


_GROUP_SEPARATORS = re.compile(r"[ .-]")


def _card_grouping_ok(candidate: str) -> bool:
    """Cards are written solid or in the printed groups (4-4-4-4, 4-6-5 ...), whatever separates them (mixed
    separators too: the groups are the signal). This keeps phone numbers and ID numbers with odd groupings
    from passing as cards."""
    groups = [len(g) for g in _GROUP_SEPARATORS.split(candidate)]
    if len(groups) == 1:
        return True
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


def _cn_id_grouped_ok(candidate: str) -> bool:
    """A resident ID solid or in groups of three or more digits (the last group may be shorter)."""
    groups = _GROUP_SEPARATORS.split(candidate)
    if len(groups) > 1 and any(len(g) < 3 for g in groups[:-1]):
        return False
    return _cn_id_ok("".join(groups))


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
