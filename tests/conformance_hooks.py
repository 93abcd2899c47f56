"""schemathesis hooks of the conformance run (tests/test_server_fuzz.py, SCHEMATHESIS_HOOKS): what the OpenAPI
document cannot say.

JSON Schema says what each field may hold, not how two fields compare: an update's `occurred_end` before its
`occurred_start`, a filter's `occurred_after` later than its `occurred_before` (the same for `mentioned_*`) are
refused with a 422 that names the rule, and no schema keyword can make a generator avoid them. Those refusals, and
only those (matched by the engine's own messages), are not counted as a schema-valid request refused; every other
refusal of a schema-valid request still fails the run.
"""

from __future__ import annotations

import json
import re
from typing import Any

import schemathesis
from schemathesis.openapi.checks import RejectedPositiveData

# The engine's messages (memwrap/engine/update.py for an update's dates, memwrap/filters.py RecallFilter._consistent).
ORDER_RULES = re.compile(
    r"occurred_end \([^)]*\) is before occurred_start \([^)]*\)"
    r"|(occurred|mentioned)_after \([^)]*\) is later than \1_before \([^)]*\)"
)


def order_rule(response: Any) -> bool:
    """Is `response` a 422 that names one of the ordering rules?"""
    if response.status_code != 422:
        return False
    try:
        message = json.loads(response.content)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return False
    return isinstance(message, str) and ORDER_RULES.search(message) is not None


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    """Keep every failure but a schema-valid request refused for an ordering rule the schema cannot state."""
    return not (isinstance(failure, RejectedPositiveData) and order_rule(response))
