"""Heuristic named-entity extraction, with no LLM and no model download.

Retain runs this on every memory, so it must be cheap. For cased scripts we rely on capitalisation:
capitalised words and phrases ("Alice", "New York", "Bank of America"), acronyms (NASA), camel-case
product names (iPhone) and @handles. Where a sentence, a line or a list item starts, a capital means nothing:
there the word counts only if it is not usually written in lower case (word_case.py: "Budget", "Booked" are;
"Netflix", "Priya" are not), unless the text itself shows it is a name (capitalised elsewhere mid-sentence, or
"Rose and I"). Placeholders ([REDACTED:email]) are skipped, and a message typed all in lower case gets its names
from the same lexicon. Chinese text goes to chinese_names.py. bench/entities measures all of it on a labelled
sample. The engine compares entities through entity_key(), so surface variants such as "Alice's", "ALICE" and
"Alice" meet.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from memwrap.engine.language.chinese_names import (  # noqa: F401 - the surname sets are public through here too
    ZH_COMPOUND_SURNAMES,
    ZH_FAMILIAR_PREFIXES,
    ZH_SURNAMES,
    chinese_entities,
    is_romanised_surname,
)
from memwrap.engine.language.text import LATIN_FUNCTION_WORDS, has_cjk
from memwrap.engine.language.word_case import is_ordinary_word

MAX_ENTITIES = 20

# Letters of the scripts that have case (Latin, Greek, Cyrillic), plus digits; capitalisation is
# meaningless elsewhere, and excluding Han keeps "加入Google" from becoming one token.
_CASED = "A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff\u0370-\u03ff\u0400-\u052f0-9"
_MARKS = "\u0300-\u036f"
_TOKEN_RE = re.compile(
    r"(?<![\w@.])@[A-Za-z0-9_]{2,}"  # @handle, not the middle of an e-mail address
    rf"|[{_CASED}][{_CASED}{_MARKS}]*(?:['’\-.&][{_CASED}][{_CASED}{_MARKS}]*)*"  # Jean-Luc, U.S, AT&T, Alice's
)
# URLs and e-mail addresses contain capitalised fragments that are not names.
# The local part is bounded and must start a run: `[\w.+-]+@` alone is quadratic on long runs of
# letters, and Han characters count as \w.
_URL_OR_EMAIL_RE = re.compile(r"\b(?:https?://|www\.)\S+|(?<![\w.+-])[\w.+-]{1,64}@[\w-]+\.[\w.-]+")
# Placeholders that redaction or templates leave: [REDACTED:email], [REDACTED], <PERSON>. Their capitals name a
# kind of secret, never an entity.
_PLACEHOLDER_RE = re.compile(r"\[[A-Z][A-Z_]*(?::[^\]\s]*)?\]|<[A-Z][A-Z_]+>")
# Anything in the gap between two words that means the second one starts a sentence (or a quotation,
# list item or heading, which behave the same way).
_SENTENCE_GAP_CHARS = frozenset('.!?;:…\n"“«([{。！？；：「『【')

_STOPWORDS = frozenset(
    """
    i me my mine myself you your yours yourself yourselves he him his himself she her hers herself it its
    itself we us our ours ourselves they them their theirs themselves one ones someone somebody something
    anyone anybody anything everyone everybody everything nobody nothing nowhere somewhere everywhere
    i'm i've i'll i'd you're you've you'll you'd he's he'll he'd she's she'll she'd it's it'll we're we've
    we'll we'd they're they've they'll they'd that's there's here's what's who's where's when's how's why's
    let's y'all ya u ur
    a an the this that these those some any every each all both either neither no none such another other
    others much many more most few several own same
    and or but nor so yet for if then than because since although though while whereas unless until
    after before as at by from in into of on onto off out over under to up down with within without about
    above below across along among around behind beside besides between beyond during except inside near
    outside per through throughout toward towards upon via against like unlike
    am is are was were be been being have has had having do does did doing done will would shall should
    can could may might must ought don't doesn't didn't won't wouldn't can't cannot couldn't shouldn't
    isn't aren't wasn't weren't haven't hasn't hadn't ain't gonna wanna gotta
    what when where which who whom whose why how whatever whenever wherever whoever whichever however
    not also just only very really too quite rather still already even ever never always often sometimes
    usually maybe perhaps probably actually basically anyway anyways otherwise instead here there now
    today tonight tomorrow yesterday soon later recently lately again once twice almost definitely
    totally absolutely honestly seriously literally hopefully unfortunately luckily finally first second
    third next last well oh ah uh um hmm hm wow yeah yes yep yup nope nah ok okay sure alright hey hi hello
    heya hiya yo bye goodbye thanks thank thx ty please pls plz sorry congrats congratulations cheers haha
    hahaha hehe lol lmao rofl omg btw imo imho tbh idk fyi asap aka brb ttyl etc ps nb re fw fwd
    morning afternoon evening night weekend weekday week month year day birthday anniversary holidays
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec
    monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri
    mr mrs ms mx dr prof sir madam ma'am miss
    am pm a.m p.m e.g i.e vs
    """.split()
)

# Sentence openers of Spanish, Portuguese, French, Italian and German, which the lexicon (word_case.py) knows
# mostly from English: a memory written "Mi hermano vive en Salamanca." or "Soy alérgico…" names Salamanca, not
# "Mi" or "Soy" (which, as entities, linked every such memory to every other in the graph arm). Their function words
# (language/text.py) and common
# verbs, adverbs and greetings; not words that also begin names ("Su Bingtian", "Ma Yun", "Son Heung-min",
# "Van Gogh"), which a sentence may well start with, and never a word in capitals ("AI", "EU": acronyms).
_OTHER_LANGUAGE_OPENERS = LATIN_FUNCTION_WORDS | frozenset(
    """
    me os un una el la esa aquel aquella soy tienes hay fui era voy vas va vamos quiero quería creo puedo hoy ayer
    mañana anoche ahora siempre nunca ya todavía después antes sí no mucho mucha hola gracias eu elas um o as hoje
    ontem amanhã agora sempre também depois obrigado ce aujourd'hui hier demain maintenant toujours jamais après
    avant comment parce oui non merci bonjour oggi ieri domani adesso dopo prima come ciao grazie die den hat heute
    gestern morgen jetzt immer nie vor ja nein danke
    """.split()
)
# Ordinary words that often begin a proper name ("New York", "Great Wall", "El Salvador", "La Paz", "Den Haag").
# A sentence-initial phrase starting with one keeps it; any other ordinary first word is dropped.
_NAME_STARTERS = frozenset(
    """
    new good great old big little long high north south east west northern southern eastern western
    central upper lower grand golden silver red blue green black white general national international
    royal united holy saint san santa los las mount lake fort port cape el la le les il lo der die das den
    """.split()
)
# Titles written with a period ("Dr. Smith"): the period does not end the sentence.
_TITLES = frozenset("mr mrs ms mx dr prof sr jr rev gen col capt lt sgt".split())
# Abbreviations that begin place names and are followed by a period.
_ABBREVIATED_NAME_PARTS = frozenset(("st", "mt", "ft"))
# Lower-case particles allowed inside a multi-word name: "Bank of America", "Ludwig van Beethoven".
_CONNECTORS = frozenset("of de da del della di du la le van von der den al bin ibn".split())

# Words that open questions and requests; in a query they are never entities, wherever they stand.
_QUERY_WORDS = frozenset(
    """
    tell list name describe explain summarize summarise recall remind give show find search compare
    what's who's where's when's how's please according remember mention mentioned
    """.split()
)

_QUERY_STOPWORDS = _STOPWORDS | _QUERY_WORDS
# Words of a question that never name an entity (public: recall matches the rest against entity keys).
QUERY_STOPWORDS = _QUERY_STOPWORDS

# Pronouns name whoever is speaking or spoken of, never one entity: a model sometimes lists them (我, she).
PRONOUNS = frozenset(
    """
    我 你 您 他 她 它 我们 你们 您们 他们 她们 它们 咱 咱们 俺 俺们 自己 大家 人家 别人 本人 对方
    i me my mine myself you your yours yourself he him his himself she her hers herself it its itself we us our ours
    ourselves they them their theirs themselves user assistant
    """.split()
)

# Edge characters entity_key strips. "@" and "#" go only at the front (@alice, #metoo, but C#), and a
# leading period stays (.NET).
_LEAD_PUNCT = "\"'“”‘’«»‹›「」『』【】〔〕《》〈〉()[]{}<>@#*_~-–—,;:!?。，、；：！？…"
_TRAIL_PUNCT = "\"'“”‘’«»‹›「」『』【】〔〕《》〈〉()[]{}<>*~-–—.,;:!?。，、；：！？…"


@dataclass(slots=True)
class _Token:
    start: int
    end: int  # after stripping a possessive
    word: str
    lower: str
    sentence_start: bool  # or the start of a line, a list item or a heading: a capital there means nothing
    possessive: bool
    candidate: bool  # capitalised, camel-case or an acronym, and not a stopword
    evidence: bool = False  # the text itself shows this sentence-initial word is a name (see _name_evidence)


def extract_entities(text: str) -> list[str]:
    """Named entities in order of first appearance, deduplicated by entity_key, at most MAX_ENTITIES.

    >>> extract_entities("Alice joined Google in March 2026.")
    ['Alice', 'Google']
    """
    return _extract(text, _STOPWORDS)


def extract_query_entities(query: str) -> list[str]:
    """Entities in a question: the same heuristic, but question and request words never count."""
    return _extract(query, _QUERY_STOPWORDS)


def is_entity_name(name: str) -> bool:
    """False for what must not be tagged as an entity however it was found: pronouns, empty or punctuation-only
    names."""
    key = entity_key(name)
    return bool(key) and key not in PRONOUNS


def entity_key(name: str) -> str:
    """Canonical comparison key: NFKC, casefolded, single spaces, no possessive or edge punctuation."""
    key = unicodedata.normalize("NFKC", name).casefold().replace("’", "'")
    key = " ".join(key.split()).lstrip(_LEAD_PUNCT).rstrip(_TRAIL_PUNCT)
    if key.endswith("'s"):
        key = key[:-2]
    return key.rstrip(_TRAIL_PUNCT + " ")


def _extract(text: str, stopwords: frozenset[str]) -> list[str]:
    if not text or text.isspace():
        return []
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)  # "é" as one code point, so the token regex sees a letter
    found = _cased_entities(text, stopwords)
    if has_cjk(text):
        found.extend(chinese_entities(text))
        found.sort(key=lambda item: item[0])
    return _dedupe(found)


def _dedupe(found: list[tuple[int, str]]) -> list[str]:
    seen: set[str] = set()
    entities: list[str] = []
    for _, name in found:
        key = entity_key(name)
        if key and key not in seen:
            seen.add(key)
            entities.append(name)
            if len(entities) == MAX_ENTITIES:
                break
    return entities


# --- cased scripts ---------------------------------------------------------------------------------


def _cased_entities(text: str, stopwords: frozenset[str]) -> list[tuple[int, str]]:
    if ("://" in text or "www." in text or "@" in text) and _URL_OR_EMAIL_RE.search(text):
        # Same-length blanking keeps offsets aligned with the Chinese pass; commas break phrases.
        text = _URL_OR_EMAIL_RE.sub(lambda m: "," * len(m.group()), text)
    if ("[" in text or "<" in text) and _PLACEHOLDER_RE.search(text):
        text = _PLACEHOLDER_RE.sub(lambda m: "," * len(m.group()), text)
    lowercase_typed = _typed_in_lower_case(text)
    tokens = _tokenise(text, stopwords, lowercase_typed)
    if _is_shouting(tokens):
        # All caps carries no signal; only @handles are still recognisable.
        return [(t.start, t.word) for t in tokens if t.word.startswith("@")]
    # In text typed without capitals the lexicon chose the candidates, and no word is capitalised elsewhere.
    lowercase_words = set() if lowercase_typed else {t.lower for t in tokens if t.word[0].islower()}
    _mark_list_items(text, tokens)
    _name_evidence(text, tokens)
    found: list[tuple[int, str]] = []
    phrase: list[_Token] = []
    connector: _Token | None = None
    previous: _Token | None = None
    for token in tokens:
        joins = _joins(text, previous, token)
        if token.candidate and phrase and joins and not token.word.startswith("@"):
            if connector is not None:
                phrase.append(connector)
            phrase.append(token)
        elif token.lower in _CONNECTORS and phrase and joins and connector is None:
            connector = token  # keep it only if another capitalised word follows
            previous = token
            continue
        else:
            _finish_phrase(text, phrase, lowercase_words, found)
            phrase = [token] if token.candidate else []
        connector = None
        previous = token
    _finish_phrase(text, phrase, lowercase_words, found)
    return found


def _typed_in_lower_case(text: str) -> bool:
    """True for a message typed without capitals ("just landed in berlin"): there the lexicon must say which
    words are names, since the writer's case says nothing."""
    if not text.islower():
        return False  # the common case, decided in C
    return sum(1 for ch in text if ch.isascii() and ch.isalpha()) >= 8


def _tokenise(text: str, stopwords: frozenset[str], lowercase_typed: bool) -> list[_Token]:
    tokens: list[_Token] = []
    previous_end = 0
    previous_lower = ""
    for match in _TOKEN_RE.finditer(text):
        start, end = match.span()
        word = match.group()
        possessive = False
        if word.endswith(("'s", "’s", "'S", "’S")) and len(word) > 2:
            word, end, possessive = word[:-2], end - 2, True
        elif word[-1] in "sS" and text[end : end + 1] in ("'", "’") and not text[end + 1 : end + 2].isalpha():
            possessive = True  # "James' car"
        lower = word.lower().replace("’", "'")
        if lowercase_typed:
            sentence_start = False
            candidate = lower not in stopwords and len(word) > 2 and is_ordinary_word(word) is False
        else:
            sentence_start = _gap_starts_sentence(text[previous_end:start], previous_lower, first=not tokens)
            candidate = _is_candidate(word, lower, stopwords)
        tokens.append(_Token(start, end, word, lower, sentence_start, possessive, candidate))
        previous_end, previous_lower = match.end(), lower
    return tokens


def _gap_starts_sentence(gap: str, previous_lower: str, first: bool = False) -> bool:
    if (not gap or gap == " ") and not first:
        return False  # the common case, decided without scanning
    if not gap.isascii():
        # Words of another script (Chinese) before this one: only what follows the last of them counts, and
        # "我用Notion记笔记" has Notion in the middle of a sentence.
        letters = [i for i, ch in enumerate(gap) if ch.isalnum()]
        if letters:
            return any(ch in _SENTENCE_GAP_CHARS for ch in gap[letters[-1] + 1 :])
    if first:
        return True
    if gap == ". " and (previous_lower in _TITLES or previous_lower in _ABBREVIATED_NAME_PARTS):
        return False  # "Dr. Smith": the period belongs to the title
    return any(ch in _SENTENCE_GAP_CHARS for ch in gap)


def _is_candidate(word: str, lower: str, stopwords: frozenset[str]) -> bool:
    if word[0] == "@":
        return True
    if lower in stopwords:
        return False
    if word[0].isupper():
        if word.isupper() and len(word) > 2 and is_ordinary_word(word):
            return False  # "SO HAPPY", "NO WAY": emphasis, not an acronym (two letters are: UN, HR)
        return True
    # Camel case starting lower-case: iPhone, eBay, macOS.
    return word[0].islower() and not word.islower()


def _mark_list_items(text: str, tokens: list[_Token]) -> None:
    """Items of a list written on one line after a colon ("Morning routine: Stretch, Coffee, Walk") are
    capitalised as list items, not as names, when the first item shows it: if that one is an ordinary word, each
    item after a comma is judged as if it started a sentence. A list of names ("Guests: Leo, Ava") is left be."""
    if ":" not in text and "\n" not in text:
        return
    in_list = False
    previous: _Token | None = None
    for token in tokens:
        gap = text[previous.end : token.start] if previous is not None else ""
        if token.sentence_start:
            in_list = (
                (":" in gap or "\n" in gap)
                and token.candidate
                and token.word[0].isupper()
                and is_ordinary_word(token.word) is True
            )
        elif in_list and gap.strip() == "," and token.candidate and token.word[0].isupper():
            token.sentence_start = True
        previous = token


def _name_evidence(text: str, tokens: list[_Token]) -> None:
    """Sentence-initial words that the text itself shows to be names, whatever the lexicon says: written with a
    capital in the middle of a sentence elsewhere ("Will is late. I told Will."), or joined by "and" to a name
    or to "I" ("Pat and Sue are hosting", "Olive and I met")."""
    if not any(t.sentence_start and t.candidate for t in tokens):
        return
    capitalised = {t.lower for t in tokens if t.candidate and not t.sentence_start and t.word[0].isupper()}
    for i, token in enumerate(tokens):
        if not (token.sentence_start and token.candidate):
            continue
        if token.lower in capitalised:
            token.evidence = True
        elif i + 2 < len(tokens) and tokens[i + 1].lower == "and" and _joins(text, token, tokens[i + 1]):
            partner = tokens[i + 2]
            if _joins(text, tokens[i + 1], partner) and (partner.word == "I" or partner.candidate):
                token.evidence = True


def _joins(text: str, left: _Token | None, right: _Token) -> bool:
    """True if a phrase ending in `left` may continue with `right`: only horizontal whitespace between."""
    if left is None or left.possessive or left.word.startswith("@"):
        return False  # "Alice's Bob" and "@alice Bob" are two entities
    gap = text[left.end : right.start]
    if gap == " ":
        return True
    if gap == ". " and left.lower in _ABBREVIATED_NAME_PARTS:
        return True  # "St. Louis", "Mt. Everest"
    return gap != "" and gap.isspace() and "\n" not in gap


def _is_shouting(tokens: list[_Token]) -> bool:
    words = [t.word for t in tokens if len(t.word) > 1 and not t.word[0].isdigit() and t.word[0] != "@"]
    return len(words) >= 4 and sum(w.isupper() for w in words) >= 0.8 * len(words)


def _finish_phrase(text: str, phrase: list[_Token], lowercase_words: set[str], found: list[tuple[int, str]]) -> None:
    if not phrase:
        return
    first = phrase[0]
    if first.sentence_start and not first.word.startswith("@") and _ordinary(first, lowercase_words):
        if len(phrase) == 1:
            return
        # "Visited New York" → "New York"; but a name particle or a romanised Chinese surname begins the name:
        # "El Salvador", "Van Gogh", "Su Bingtian" ("su", "van" are ordinary words to the lexicon).
        if (
            first.lower not in _NAME_STARTERS
            and first.lower not in _CONNECTORS
            and not is_romanised_surname(first.lower)
        ):
            phrase = phrase[1:]
            if phrase[0].lower in _CONNECTORS:
                phrase = phrase[1:]
    if len(phrase) == 1 and len(phrase[0].word) < 2:
        return  # a lone initial ("plan B") is not a name
    found.append((phrase[0].start, text[phrase[0].start : phrase[-1].end]))


def _ordinary(token: _Token, lowercase_words: set[str]) -> bool:
    """Whether a capitalised word at the start of a sentence is an ordinary word rather than a name."""
    if token.lower in _OTHER_LANGUAGE_OPENERS and not token.word.isupper():
        return True
    if token.lower in lowercase_words:
        return True  # the same text uses it in lower case ("Cooking is fun. I love cooking.")
    if token.evidence or (not token.word.isupper() and not token.word[1:].islower()):
        return False  # capitals inside the word (iCloud, YouTube, McDonald) are the writer's, not the sentence's
    return is_ordinary_word(token.word) is True
