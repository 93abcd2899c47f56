"""Memory defense, personal-data rules: card numbers, SSNs, IBANs, e-mail, Chinese resident IDs, phones.

Most of these shapes are plain digit runs, so nearly every rule leans on a validator in
`defense_checks` (checksum, issuer range, real birth date, numbering plan).
"""

from __future__ import annotations

from memwrap.engine.retain.defense_checks import (
    _card_ok,
    _cn_id_grouped_ok,
    _phone_digits_between,
    _refine_iban,
    _ssn_ok,
    _us_phone_ok,
)
from memwrap.engine.retain.defense_rule import (
    _E,
    _R_CHECKSUM,
    _R_CN_ID,
    _R_CN_MOBILE,
    _R_PHONE,
    _R_PII,
    _accept_if,
    _Rule,
    _rx,
)

_PERSONAL_DATA_RULES: tuple[_Rule, ...] = (
    # Luhn + issuer prefix + printed grouping, 13-19 digits. The normalised view (defense_view) writes any
    # separator run between groups (tabs, NBSP, ideographic spaces, " - ") as one ' ', '-' or '.'.
    _Rule(
        "credit_card",
        _rx(r"(?<![0-9A-Za-z.,-])[2-6][0-9](?:[ .-]?[0-9]){11,17}(?![0-9A-Za-z]|[.,-][0-9])"),
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
            r"(?P<secret>[0-9]{3}[ .-]?[0-9]{2}[ .-]?[0-9]{4})(?![0-9])",
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
    # GB 11643 resident ID: region, real birth date, sequence, checksum digit or X; solid or in groups
    # ("110105 19900307 123X", "110 105 1990 0307 123X").
    _Rule(
        "cn_resident_id",
        _rx(r"(?<![0-9A-Za-z])[1-9](?:[ .-]?[0-9]){16}[ .-]?[0-9Xx](?![0-9A-Za-z])"),
        _R_CN_ID,
        min_digits=17,
        refine=_accept_if(_cn_id_grouped_ok),
    ),
    # Mainland mobile: 1[3-9] + 9 digits, optionally +86/0086 and 3-4-4 grouping.
    _Rule(
        "cn_mobile",
        _rx(r"(?<![0-9A-Za-z+])(?:(?:\+|00)86[ .-]?)?1[3-9][0-9](?:[ .-]?[0-9]{4}){2}(?![0-9A-Za-z]|[.-][0-9])"),
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
