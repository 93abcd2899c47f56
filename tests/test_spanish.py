"""Spanish text paths (issue 38): time expressions, statements of change and keyword stems; Chinese beside them."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from memwrap.engine.language.changes import Statement, asks_past, asks_present, replaces, states_change, subject
from memwrap.engine.language.spanish import spanish_terms
from memwrap.engine.language.text import search_text
from memwrap.engine.language.timeparse import parse_time_window

NOW = datetime(2026, 12, 6, 12, tzinfo=UTC)  # a Sunday


@pytest.mark.parametrize(
    ("question", "first", "last"),
    [
        ("¿Qué hice el mes pasado?", date(2026, 11, 1), date(2026, 11, 30)),
        ("¿Adónde fui el verano pasado?", date(2026, 6, 1), date(2026, 8, 31)),
        ("¿Qué pasó la semana pasada?", date(2026, 11, 23), date(2026, 11, 29)),
        ("¿Qué comí ayer?", date(2026, 12, 5), date(2026, 12, 5)),
        ("¿Dónde estuve el año pasado?", date(2025, 1, 1), date(2025, 12, 31)),
        ("¿Qué hice en marzo?", date(2026, 3, 1), date(2026, 3, 31)),
        ("¿Qué compré hace dos semanas?", date(2026, 11, 19), date(2026, 11, 25)),
        ("¿Qué planes tengo para la semana que viene?", date(2026, 12, 7), date(2026, 12, 13)),
        ("¿Qué pasó el 3 de mayo de 2025?", date(2025, 5, 3), date(2025, 5, 3)),
        ("¿Qué hice el lunes pasado?", date(2026, 11, 30), date(2026, 11, 30)),
        ("¿Qué hice en otoño de 2024?", date(2024, 9, 1), date(2024, 11, 30)),
        ("El año pasado en marzo me mudé", date(2025, 3, 1), date(2025, 3, 31)),
        ("去年夏天我去了哪里？", date(2025, 6, 1), date(2025, 8, 31)),
    ],
)
def test_spanish_and_chinese_time_expressions(question: str, first: date, last: date) -> None:
    window = parse_time_window(question, NOW)
    assert window is not None, question
    assert (window.start.date(), window.end.date()) == (first, last)


@pytest.mark.parametrize(
    "text", ["Mi hermano mayor vive en Madrid.", "¿Qué tal la mañana?", "Tengo mayor interés en esto."]
)
def test_spanish_words_that_are_no_dates(text: str) -> None:
    assert parse_time_window(text, NOW) is None


def _said(text: str, month: int) -> Statement:
    return Statement(text, None, datetime(2026, month, 1, tzinfo=UTC))


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("Vivo en Madrid con mi novia.", "Me mudé a Sevilla el mes pasado."),
        ("Como carne todos los días.", "Ya no como carne, soy vegetariana."),
        ("Uso Neovim para programar.", "Ahora uso VS Code."),
        ("Juego al tenis los sábados.", "Dejé de jugar al tenis."),
        ("我用Neovim写代码。", "我改用VS Code了。"),
        ("我每天喝咖啡。", "我不再喝咖啡了。"),
    ],
)
def test_spanish_and_chinese_changes_replace_the_earlier_statement(older: str, newer: str) -> None:
    assert states_change(newer) and subject(newer) == "I"
    assert replaces(_said(newer, 11), _said(older, 1))
    assert not replaces(_said(older, 11), _said(newer, 1))  # said earlier: no change of what came after


def test_spanish_statements_that_are_no_change_of_that_topic() -> None:
    assert not states_change("Como carne todos los días.")
    assert not replaces(_said("Ya no tengo coche.", 11), _said("Vivo en Madrid.", 1))  # another topic
    assert asks_present("¿Dónde vivo ahora?") and asks_past("¿Dónde vivía antes?")


def test_spanish_stems_let_inflections_meet_and_leave_english_alone() -> None:
    memory = search_text("Mi hermana vive en Sevilla con sus hijos.")
    question = search_text("¿Dónde viven mis hermanos?")
    assert "herman" in memory.split() and "herman" in question.split()
    assert "viv" in memory.split() and "viv" in question.split()
    assert spanish_terms("My brother lives in Toronto.") == ""
    assert search_text("My brother lives in Toronto.") == "My brother lives in Toronto."
