"""Spanish time expressions (issue 38): "el mes pasado", "ayer", "hace dos semanas", "el verano pasado",
"en marzo", "el 3 de mayo de 2025", "el lunes", "últimamente" -- resolved with the calendar the English and
Chinese rules share, so a Spanish question gets the same window an English one does.

Gates are pieces of the text's [a-z]+ words (the scanner's word split): "año" is "a" and "o" there, so the rules
that may hold "año" are gated by their other words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from datetime import date, timedelta

from memwrap.engine.language.timeparse._calendar import (
    _VAGUE_DAYS,
    _as_period,
    _day_of_month,
    _Mode,
    _month_span,
    _offset_window,
    _Period,
    _period_at,
    _pick,
    _season_instance,
    _Span,
    _weekday_span,
)
from memwrap.engine.language.timeparse._rule import _Resolver, _Rule, _tense_of, _Within, _within_week, _within_year


def _plain(text: str) -> str:
    """Lower case without accents: "Próximo" -> "proximo"."""
    return "".join(c for c in unicodedata.normalize("NFD", text.lower()) if unicodedata.category(c) != "Mn")


_ES_MONTHS = {
    "enero": 1, "febrero": 2, "marzo": 3, "abril": 4, "mayo": 5, "junio": 6, "julio": 7, "agosto": 8,
    "septiembre": 9, "setiembre": 9, "octubre": 10, "noviembre": 11, "diciembre": 12,
}  # fmt: skip
_ES_WEEKDAYS = {"lunes": 0, "martes": 1, "miercoles": 2, "jueves": 3, "viernes": 4, "sabado": 5, "domingo": 6}
_ES_SEASON_START = {"primavera": 3, "verano": 6, "otono": 9, "invierno": 12}
_ES_UNITS = {"dia": "day", "semana": "week", "mes": "month", "ano": "year"}
_ES_NUMBERS = {
    "un": 1, "uno": 1, "una": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6, "siete": 7, "ocho": 8,
    "nueve": 9, "diez": 10, "once": 11, "doce": 12, "quince": 15, "veinte": 20, "treinta": 30,
}  # fmt: skip
_ES_FUZZY = {"unos": (2, 4), "unas": (2, 4), "algunos": (2, 4), "algunas": (2, 4), "varios": (2, 5), "varias": (2, 5)}
# el mes pasado / la semana que viene / este año / el próximo mes: the step from the current period.
_ES_REL_STEP = {"pasado": -1, "pasada": -1, "anterior": -1, "este": 0, "esta": 0, "actual": 0,
                "que viene": 1, "proximo": 1, "proxima": 1, "siguiente": 1, "entrante": 1}  # fmt: skip
_ES_REL_MODE: dict[str, _Mode] = {"": "floating", "-1": "last", "0": "this", "1": "next"}
_ES_DAY_OFFSETS = {"anteayer": -2, "antier": -2, "antes de ayer": -2, "ayer": -1, "anoche": -1, "hoy": 0,
                   "esta noche": 0, "manana": 1, "pasado manana": 2}  # fmt: skip

_MON = r"(?P<mon>enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|setiembre|octubre|noviembre|diciembre)"
_UNIT = r"(?P<u>d[ií]as?|semanas?|mes(?:es)?|a[ñn]os?)"
_REL_AFTER = r"(?P<rel>pasad[oa]|anterior|que\s+viene|pr[óo]xim[oa]|siguiente|entrante)"
_NUM = r"(?P<n>\d{1,3}|un[oa]?|dos|tres|cuatro|cinco|seis|siete|ocho|nueve|diez|once|doce|quince|veinte|treinta" \
    r"|unos|unas|algunos|algunas|varios|varias)"  # fmt: skip


def _unit(word: str) -> str:
    plain = _plain(word)  # día, días, mes, meses, año, años
    for singular in (plain, plain[:-2], plain[:-1]):
        if singular in _ES_UNITS:
            return _ES_UNITS[singular]
    raise KeyError(word)


def _step(m: re.Match[str]) -> int:
    return _ES_REL_STEP[re.sub(r"\s+", " ", _plain(m["rel"]))] if m["rel"] else 0


def _mode(m: re.Match[str]) -> _Mode:
    return _ES_REL_MODE[str(_step(m))] if m["rel"] else "floating"


def _es_day_word(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    day = today + timedelta(days=_ES_DAY_OFFSETS[re.sub(r"\s+", " ", _plain(m["w"]))])
    return day, day, "day"


def _es_rel_period(m: re.Match[str], today: date | None) -> _Period | None:
    """el mes pasado, la semana que viene, este año, el próximo mes, el año anterior."""
    return None if today is None else _period_at(today, _unit(m["u"]), _step(m))


def _es_offset(m: re.Match[str], today: date | None) -> _Period | None:
    """hace dos semanas, hace unos días (back); dentro de tres meses (ahead)."""
    if today is None:
        return None
    word = _plain(m["n"])
    low, high = _ES_FUZZY.get(word) or (lambda v: (v, v))(int(word) if word.isdigit() else _ES_NUMBERS[word])
    return _offset_window(today, low, high, _unit(m["u"]), 1 if _plain(m["dir"]) == "dentro de" else -1)


def _es_month(m: re.Match[str], today: date | None) -> _Period | None:
    """(el 3 de) marzo (de 2025), marzo pasado, el próximo mayo; without a year, by tense as in English."""
    month = _ES_MONTHS[_plain(m["mon"])]
    year = int(m["y"]) if m["y"] else None
    if m["d"]:
        day = int(m["d"])
        if today is None and year is None:
            return None
        return _day_of_month(month, day, year, today, _tense_of(m) if year is None else "unknown")
    if year is not None:
        return *_month_span(year, month), "month"
    # "mayo" alone is a month only after en/de/desde/hasta/para, or with pasado/próximo.
    if today is None or not (m["rel"] or m["prep"]):
        return None
    mode = _mode(m)
    span = _pick(lambda y: _month_span(y, month), today, mode, _tense_of(m) if mode == "floating" else "unknown")
    return None if span is None else (*span, "month")


def _es_month_of(m: re.Match[str]) -> Callable[[int], _Span | None] | None:
    if m["rel"] or m["y"]:
        return None
    month = _ES_MONTHS[_plain(m["mon"])]
    return lambda year: _month_span(year, month)


def _es_season(m: re.Match[str], today: date | None) -> _Period | None:
    """el verano pasado, este invierno, la próxima primavera, en otoño (de 2024)."""
    instance = _season_instance(_ES_SEASON_START[_plain(m["s"])])
    if m["y"]:
        return *instance(int(m["y"])), "season"
    if today is None or not (m["rel"] or m["rel2"] or m["prep"]):
        return None
    rel = m["rel"] or m["rel2"]
    step = _ES_REL_STEP[re.sub(r"\s+", " ", _plain(rel))] if rel else None
    mode = _ES_REL_MODE[str(step)] if step is not None else "floating"
    span = _pick(instance, today, mode, _tense_of(m) if mode in ("floating", "this") else "unknown")
    return None if span is None else (*span, "season")


def _es_season_of(m: re.Match[str]) -> Callable[[int], _Span] | None:
    if m["rel"] or m["rel2"] or m["y"]:
        return None
    return _season_instance(_ES_SEASON_START[_plain(m["s"])])


def _es_weekday(m: re.Match[str], today: date | None) -> _Period | None:
    if today is None:
        return None
    mode = _mode(m)
    tense = _tense_of(m) if mode in ("floating", "this") else "unknown"
    return _as_period(_weekday_span(today, _ES_WEEKDAYS[_plain(m["wd"])], mode, tense), "day")


def _es_weekday_of(m: re.Match[str]) -> int | None:
    return None if m["rel"] else _ES_WEEKDAYS[_plain(m["wd"])]


def _es_vague(m: re.Match[str], today: date | None) -> _Period | None:
    return None if today is None else (today - timedelta(days=_VAGUE_DAYS), today, "range")


def _es(pattern: str, resolve: _Resolver, gate: str, *, vague: bool = False, within: _Within | None = None) -> _Rule:
    return _Rule(re.compile(pattern, re.IGNORECASE), resolve, frozenset(gate.split()), vague=vague, within=within)


_ES_RULES: tuple[_Rule, ...] = (
    _es(
        r"\b(?P<w>anteayer|antier|antes\s+de\s+ayer|ayer|anoche|hoy|esta\s+noche|pasado\s+ma[ñn]ana"
        r"|(?<!la\s)(?<!esta\s)(?<!por\s)ma[ñn]ana)\b(?!\s+por\s+la)",
        _es_day_word,
        "anteayer antier ayer anoche hoy noche ma manana",
    ),
    _es(
        r"\b(?:(?:el|la|los|las)\s+)?" + _UNIT.replace("?P<u>", "?P<u>") + r"\s+" + _REL_AFTER + r"\b",
        _es_rel_period,
        "pasado pasada anterior viene ximo xima pr proximo proxima siguiente entrante",
    ),
    _es(
        r"\b(?:(?:el|la)\s+)?(?P<rel>pr[óo]xim[oa]|pasad[oa]|este|esta)\s+"
        r"(?P<u>semana|mes|a[ñn]o)\b",
        _es_rel_period,
        "pasado pasada ximo xima proximo proxima este esta",
    ),
    _es(
        r"\b(?P<dir>hace|dentro\s+de)\s+" + _NUM + r"\s+" + _UNIT + r"\b",
        _es_offset,
        "hace dentro",
    ),
    _es(
        r"\b(?:(?P<prep>en|de|desde|hasta|para|durante)\s+)?(?:(?:el\s+)?(?P<d>[0-3]?\d)\s+de\s+)?"
        + _MON
        + r"(?:\s+(?:de|del)\s+(?P<y>(?:19|20)\d\d))?(?:\s+"
        + _REL_AFTER
        + r")?\b",
        _es_month,
        " ".join(_ES_MONTHS),
        within=_within_year(_es_month_of),
    ),
    _es(
        r"\b(?:(?P<prep>en|durante|desde|hasta|para)\s+)?(?:(?:el|la|este|esta)\s+)?"
        r"(?:(?P<rel2>pr[óo]xim[oa]|pasad[oa])\s+)?(?P<s>primavera|verano|oto[ñn]o|invierno)"
        r"(?:\s+(?:de|del)\s+(?P<y>(?:19|20)\d\d))?(?:\s+" + _REL_AFTER + r")?\b",
        _es_season,
        "primavera verano oto otono invierno",
        within=_within_year(_es_season_of),
    ),
    _es(
        r"\bel\s+(?P<wd>lunes|martes|mi[ée]rcoles|jueves|viernes|s[áa]bado|domingo)"
        r"(?:\s+(?P<rel>pasado|que\s+viene|pr[óo]ximo))?\b",
        _es_weekday,
        "lunes martes rcoles miercoles jueves viernes bado sabado domingo",
        within=_within_week(_es_weekday_of),
    ),
    _es(
        r"\b(?P<w>[úu]ltimamente|recientemente|hace\s+poco(?:\s+tiempo)?)\b",
        _es_vague,
        "ltimamente ultimamente recientemente poco",
        vague=True,
    ),
)
