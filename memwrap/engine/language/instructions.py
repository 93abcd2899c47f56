"""Standing instructions and preferences the user states, and requests they apply to, without an LLM.

"Always format code with black", "I prefer minimal dependencies", "from now on answer in bullet points": said
once, they hold for every later task of their kind. Retain recognises them (`standing_domain`: the domain they
apply to, or None) and stores the domain on the memory; recall asks `task_domains` whether the question is a task
of a domain ("write a function that parses the log", "draft an email to the landlord") and brings the bank's
standing instructions of that domain back (engine/recall/standing.py).

Every alternative is a named rule (`Rule`): `instruction_rules(text)` / `task_rules(question)` say which rules
matched, so a false positive can be traced to its rule and mended there.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    pattern: re.Pattern[str]


def _rule(name: str, pattern: str) -> Rule:
    return Rule(name, re.compile(pattern, re.IGNORECASE))


# Sentence starts: the beginning of the text or after a sentence's end (a chat line, a bullet).
_START = r"(?:^|[.!?;:\n]\s*|\b(?:and|also|btw|oh|so|ok|okay)[,\s]+)"
_DIRECTIVE_VERBS = (
    r"(?:use|format|write|add|include|run|answer|reply|respond|keep|put|prefer|avoid|give|show|explain|name|sort|"
    r"type|annotate|document|comment|check|test|lint|pin|mention|ask|start|end|wrap|quote|cite|respond|stick)"
)

# A statement the user means to hold beyond the current turn.
INSTRUCTION_RULES: tuple[Rule, ...] = (
    # "Always format code with black", "please never use tabs": an imperative with always/never.
    _rule("imperative-always", rf"{_START}(?:please\s+)?(?:always|never)\s+(?:\w+\s+)?{_DIRECTIVE_VERBS}\b"),
    # "I prefer minimal dependencies", "we'd rather keep it in SQL".
    _rule(
        "first-person-preference",
        r"\b(?:i|we)\s+(?:really\s+|always\s+|generally\s+|strongly\s+)?(?:prefer|'d\s+rather|would\s+rather)\b",
    ),
    # "my preference is …", "our convention is …", "house style: …".
    _rule(
        "stated-convention",
        r"\b(?:my|our)\s+(?:preference|convention|style\s+guide|coding\s+style|rule|policy)\s+(?:is|are|:)",
    ),
    # "From now on, answer in English", "going forward use pnpm".
    _rule(
        "from-now-on",
        r"\b(?:from\s+now\s+on|going\s+forward|in\s+(?:all\s+)?future\s+(?:answers|replies|responses|code))\b",
    ),
    # "Whenever you write SQL, uppercase the keywords."
    _rule("whenever-you", r"\bwhenever\s+you\s+(?:write|give|suggest|answer|reply|generate|show|make)\b"),
    # "Don't ever suggest jQuery", "do not ever use emojis".
    _rule("never-ever", r"\b(?:don't|do\s+not|dont)\s+ever\s+\w+"),
    # "Use structlog, not print", "stick to pnpm rather than npm": a directive that names what not to use.
    _rule(
        "use-not",
        rf"{_START}(?:please\s+|for\s+[\w\s-]{{1,30}}?,?\s+)?(?:use|stick\s+(?:to|with)|go\s+with)\s+[^.!?\n]{{1,60}}?"
        r",?\s+(?:not|never|instead\s+of|rather\s+than)\s+\w+",
    ),
    # "Tests are pytest only, never unittest classes", "English only, no emojis": an exclusive choice.
    _rule("only-never", r"\b\w+\s+only[,;]?\s+(?:never|not|no)\s+\w+"),
    # "Use type hints everywhere", "add a docstring to every function": a directive for every case.
    _rule(
        "directive-everywhere",
        rf"{_START}(?:please\s+)?{_DIRECTIVE_VERBS}\b[^.!?\n]{{0,60}}?\b(?:everywhere|in\s+every\s+\w+|"
        r"(?:to|for|on)\s+(?:all|every)\s+\w+)",
    ),
    # "Keep the prose short", "give me code first and the explanation after": how answers are to be shaped.
    _rule(
        "answer-shape",
        r"\b(?:keep|make)\s+(?:the\s+|your\s+)?(?:answers?|repl(?:y|ies)|prose|explanations?|responses?)\s+"
        r"(?:short|brief|concise|terse)\b|\bgive\s+me\s+(?:the\s+)?\w+\s+first\b",
    ),
)

# The domain an instruction applies to, by its words (a rule each, checked in order; none: "any" task).
DOMAIN_RULES: tuple[tuple[str, Rule], ...] = (
    (
        "code",
        _rule(
            "code-words",
            r"\b(?:code|coding|function|functions|class|classes|variable|variables|script|scripts|tests?|pytest|"
            r"unit\s+tests?|lint\w*|formatter|format\w*\s+(?:code|python|files?)|black|ruff|flake8|prettier|eslint|"
            r"type\s+hints?|typing|docstrings?|dependenc(?:y|ies)|librar(?:y|ies)|packages?|imports?|commits?|git|"
            r"branch|pull\s+requests?|api|sql|query|queries|python|typescript|javascript|rust|golang|java|bash|"
            r"shell|regex|snake_case|camelcase|tabs|indent\w*|repo|repository|framework|async|logging|errors?)\b",
        ),
    ),
    (
        "writing",
        _rule(
            "writing-words",
            r"\b(?:emails?|letters?|messages?|posts?|tone|formal|informal|emojis?|wording|essays?|cover\s+letters?|"
            r"blog|tweets?|slides?|sign[- ]off|greeting|proofread\w*)\b",
        ),
    ),
)

# A request for work (as opposed to a question about the past): what standing instructions are for.
TASK_RULES: tuple[Rule, ...] = (
    _rule(
        "imperative-task",
        r"^\s*(?:please\s+|now\s+|ok(?:ay)?,?\s+|so,?\s+)?(?:write|implement|create|add|fix|refactor|generate|"
        r"draft|build|make|set\s+up|setup|rewrite|update|convert|port|design|compose|format|review|optimi[sz]e|"
        r"debug|code|scaffold|suggest|recommend|plan|outline|translate|test)\b",
    ),
    _rule(
        "polite-request",
        r"\b(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:help\s+me\s+)?(?:write|implement|create|add|fix|"
        r"refactor|generate|draft|build|make|set\s+up|rewrite|update|convert|port|design|compose|format|review|"
        r"optimi[sz]e|debug|scaffold|suggest|recommend)\b",
    ),
    _rule(
        "help-me",
        r"\b(?:help\s+me|i\s+need\s+(?:you\s+)?to|i\s+want\s+(?:you\s+)?to|let's|lets)\s+(?:write|implement|"
        r"create|add|fix|refactor|build|make|set\s+up|draft|debug|design|pick|choose|parse|handle|load|store|"
        r"migrate|deploy|test|clean\s+up)\b",
    ),
    # "How do I paginate the endpoint?", "how should I do it?": asking how to do a piece of work.
    _rule("how-do-i", r"\bhow\s+(?:do|should|can|would)\s+(?:i|we)\s+(?:best\s+)?(?!feel|know\b|look\b)\w+"),
    # "Clean up this helper", "tidy the config".
    _rule("clean-up", r"^\s*(?:please\s+)?(?:clean\s+up|tidy(?:\s+up)?)\b"),
)


@functools.lru_cache(maxsize=8192)
def instruction_rules(text: str) -> tuple[str, ...]:
    """The names of the instruction rules that match `text` (empty: no standing instruction)."""
    return tuple(rule.name for rule in INSTRUCTION_RULES if rule.pattern.search(text))


def domain_of(text: str) -> str:
    """The domain of an instruction or a task: "code", "writing", or "any"."""
    for domain, rule in DOMAIN_RULES:
        if rule.pattern.search(text):
            return domain
    return "any"


def standing_domain(text: str, speaker: str | None) -> str | None:
    """The domain a standing instruction applies to, or None when `text` states none. Only the user's words (or
    an unlabelled memory's) count: the assistant saying "always test your code" instructs nobody."""
    if speaker not in (None, "user") or not instruction_rules(text):
        return None
    return domain_of(text)


@functools.lru_cache(maxsize=4096)
def task_rules(question: str) -> tuple[str, ...]:
    """The names of the task rules that match a request (empty: not a request for work)."""
    return tuple(rule.name for rule in TASK_RULES if rule.pattern.search(question))


def task_domains(question: str) -> list[str]:
    """The standing-instruction domains that apply to a request: [] when it is no task, else its domain and "any"
    (an instruction of no particular domain, "answer in bullet points", applies to every task)."""
    if not task_rules(question):
        return []
    domain = domain_of(question)
    return ["any"] if domain == "any" else [domain, "any"]


__all__ = [
    "DOMAIN_RULES",
    "INSTRUCTION_RULES",
    "TASK_RULES",
    "Rule",
    "domain_of",
    "instruction_rules",
    "standing_domain",
    "task_domains",
    "task_rules",
]
