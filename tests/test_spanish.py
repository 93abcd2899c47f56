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


# Change detection in Chinese, and what a change does not replace (issue 38: on the multilingual set these
# markings pushed Chinese memories about work and home below every other memory).


def _dated(text: str, said: datetime, occurred: tuple[datetime, datetime] | None = None) -> Statement:
    return Statement(text, None, said, occurred)


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("我们用SQLite存所有的数据。", "我们改用Postgres了。"),
        ("我住在北京朝阳区。", "我上个月搬到上海了。"),
        ("我家在朝阳区。", "我搬到上海了。"),
        ("我每天抽烟。", "我已经戒烟三个月了。"),
    ],
)
def test_chinese_changes_replace_the_statement_of_their_topic(older: str, newer: str) -> None:
    assert replaces(_said(newer, 11), _said(older, 1))


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("大家都说这家火锅店很好吃。", "我搬到上海了。"),  # 大家 (everyone) is no home
        ("我家人周末来看我。", "我搬到上海了。"),  # 家人 (family) neither
        ("我每年春节都回湖南老家过年。", "我搬到上海了。"),  # a move changes no home town
        ("我们公司年会定在一月十八号。", "Me mudé a Valencia con mi novia el año pasado por trabajo."),
        ("我每天坐地铁二号线上班。", "我改用Postgres了，因为我们公司的数据越来越多，工作上需要。"),
    ],
)
def test_chinese_statements_a_change_does_not_replace(older: str, newer: str) -> None:
    # The last two: the change names its topic in its cue's few words (a move, a database); work is mentioned
    # further on, as the reason, and is no change of what was said about work.
    assert not replaces(_said(newer, 11), _said(older, 1))


def test_a_change_that_happened_before_the_older_statement_does_not_replace_it() -> None:
    last_year = (datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 12, 31, 23, 59, tzinfo=UTC))
    march = datetime(2026, 3, 1, tzinfo=UTC)
    november = datetime(2026, 11, 1, tzinfo=UTC)
    moved = "我去年搬到了北京。"
    # Said in November, but the move was last year: "I live in Chaoyang" (March) was said knowing it.
    assert not replaces(_dated(moved, november, last_year), _dated("我住在北京朝阳区。", march))
    assert not replaces(
        _dated("Me mudé a Valencia el año pasado.", november, last_year), _dated("Vivo en Madrid.", march)
    )
    # What the older one tells of came before the move: that it was said after it does not matter.
    lived = (datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 12, 31, 23, 59, tzinfo=UTC))
    assert replaces(_dated(moved, november, last_year), _dated("前年我住在上海。", march, lived))
    # No date in the change: said later is enough, as before.
    assert replaces(_dated("我搬到了北京。", november), _dated("我住在上海。", march))


def test_recall_order_reads_the_dates_of_what_happened() -> None:
    from uuid import uuid4

    from memwrap.engine.recall.order import apply_changes
    from memwrap.models import RecalledMemory

    def memory(text: str, said: datetime, occurred: tuple[datetime, datetime] | None) -> RecalledMemory:
        start, end = occurred or (None, None)
        return RecalledMemory(
            id=uuid4(), text=text, type="raw", mentioned_at=said, occurred_start=start, occurred_end=end
        )

    last_year = (datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 12, 31, 23, 59, tzinfo=UTC))
    lives = memory("我住在北京朝阳区。", datetime(2026, 3, 1, tzinfo=UTC), None)
    moved = memory("我去年搬到了北京。", datetime(2026, 11, 1, tzinfo=UTC), last_year)
    assert apply_changes([lives, moved], "我住在哪里？") == [lives, moved]
    assert lives.replaced_by is None
    moved_now = memory("我搬到了上海。", datetime(2026, 11, 1, tzinfo=UTC), None)
    assert apply_changes([lives, moved_now], "我住在哪里？") == [moved_now, lives]
    assert lives.replaced_by == moved_now.id
