"""schemathesis hooks of the conformance run (tests/test_server_fuzz.py, SCHEMATHESIS_HOOKS): what the OpenAPI
document cannot say.

JSON Schema says what each field may hold, not how two fields compare: an update's `occurred_end` before its
`occurred_start`, a filter's `occurred_after` later than its `occurred_before` (the same for `mentioned_*`) are
refused with a 422 that names the rule, and no schema keyword can make a generator avoid them. The same for a
date-time's range: the engine takes the years 2..9997 (validate.timestamp, MIN_YEAR/MAX_YEAR: the ends of the
calendar overflow once shifted to UTC or widened into a period), and JSON Schema 2020-12 has no bound for a
`date-time` string (`formatMinimum` is an extension no generator reads). Those refusals, and only those (matched
by the engine's own messages), are not counted as a schema-valid request refused; every other refusal of a
schema-valid request still fails the run.

The other way round, one acceptance: a bank id the document's pattern refuses but the server's takes. The document
says `\\w` in ECMA-262, which is ASCII; the server's `validate.BANK_ID_RE` is Python's, where `\\w` is any letter or
digit of any script ("Ù", "张三": every language's users name banks). The document states the ASCII subset on
purpose (openapi_rules.PATTERN_PARAMETERS: what it allows, the server accepts); a schema-violating request whose
only violation is such a bank id is not counted as accepted wrongly.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote

import schemathesis
from schemathesis.core.failures import AcceptedNegativeData
from schemathesis.openapi.checks import RejectedPositiveData

from memwrap.validate import BANK_ID_RE, MAX_YEAR, MIN_YEAR

# The engine's messages (memwrap/engine/update.py for an update's dates, memwrap/filters.py RecallFilter._consistent).
ORDER_RULES = re.compile(
    r"occurred_end \([^)]*\) is before occurred_start \([^)]*\)"
    r"|(occurred|mentioned)_after \([^)]*\) is later than \1_before \([^)]*\)"
    # validate.timestamp's message, with the bounds it states
    + rf"|must be between the years {MIN_YEAR} and {MAX_YEAR} \(got -?\d+\)"
)


def order_rule(response: Any) -> bool:
    """Is `response` a 422 that names one of the ordering rules or the years' bounds?"""
    if response.status_code != 422:
        return False
    try:
        message = json.loads(response.content)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return False
    return isinstance(message, str) and ORDER_RULES.search(message) is not None


# ("violates `pattern`", or "`maxLength`, `pattern`" as schemathesis reports a 2-letter "Yñ": the id is then checked
# against the server's own rule, length included)
BANK_ID_ONLY = re.compile(
    r"Invalid component: parameter `bank_id` in path - violates [^\n]* at /properties/bank_id\s*$"
)


def unicode_bank_id(failure: Any, case: Any) -> bool:
    """Is `failure` a schema-violating request accepted whose only violation is a bank id the server's pattern takes?"""
    sent = (getattr(case, "path_parameters", None) or {}).get("bank_id")  # as sent: percent-encoded ("Y%C3%B1")
    bank_id = unquote(sent) if isinstance(sent, str) else None
    return (
        bank_id is not None
        and BANK_ID_RE.fullmatch(bank_id) is not None
        and BANK_ID_ONLY.search(str(getattr(failure, "message", ""))) is not None
    )


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    """Keep every failure but a schema-valid request refused for an ordering rule the schema cannot state, and a
    request accepted whose only violation is a bank id in a script other than ASCII."""
    if isinstance(failure, RejectedPositiveData) and order_rule(response):
        return False
    return not (isinstance(failure, AcceptedNegativeData) and unicode_bank_id(failure, case))
