"""Text helpers shared by retain and recall: cleaning, whitespace, CJK detection and search text.

PostgreSQL's full-text parser splits on spaces and punctuation, which works for English but leaves a
whole run of Chinese characters as one token, so "张伟加入阿里巴巴" could only ever match itself. We
segment Han runs with jieba before the text reaches `to_tsvector('english', …)`. jieba is loaded lazily,
once, with its chatty logger silenced; its dictionary ships inside the wheel, so this works offline.
"""

from __future__ import annotations

import functools
import logging
import re
from types import ModuleType

from memwrap.engine.language.spanish import spanish_terms

# Han ideographs (CJK Unified + Extension A + compatibility + astral extensions B–H): jieba segments these.
_HAN_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
# Scripts that count as "CJK" for has_cjk: Han plus kana and Hangul.
_CJK_CLASS = _HAN_CLASS + "\u3040-\u30ff\u31f0-\u31ff\uac00-\ud7af\u1100-\u11ff"
# CJK and full-width punctuation: 、。「」 … plus the punctuation half of the full-width forms block.
# Depending on the database locale PostgreSQL may treat these as letters and glue them onto words.
_CJK_PUNCT_CLASS = "\u3000-\u303f\ufe30-\ufe4f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"

_CJK_RE = re.compile(f"[{_CJK_CLASS}]")
HAN_RUN_RE = re.compile(f"[{_HAN_CLASS}]+")
_SEARCH_RE = re.compile(f"(?P<han>[{_HAN_CLASS}]+)|(?P<punct>[{_CJK_PUNCT_CLASS}]+)")
# C0 controls other than tab and newline, plus every UTF-16 surrogate code point (a Python str holds
# surrogates only when something decoded badly, and PostgreSQL's UTF-8 text cannot store them).
_UNSAFE_RE = re.compile("[\x00-\x08\x0b-\x1f\ud800-\udfff]")
_SURROGATE_PAIR_RE = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_DROP_RE = re.compile("[\x00-\x08\x0e-\x1f\ud800-\udfff]")

# Chinese function words and question words. The `english` text-search config only knows English
# stopwords, and without this list "的" or "什么" would make every Chinese memory look relevant.
ZH_STOPWORDS: frozenset[str] = frozenset(
    """
    的 地 得 了 着 过 在 是 有 和 与 及 或 而 但 并 也 都 就 还 又 才 只 很 太 更 最 再 已 已经 曾 将
    我 你 您 他 她 它 我们 你们 他们 她们 它们 咱 咱们 自己 人家 大家 们
    这 那 这个 那个 这些 那些 这里 那里 这儿 那儿 这样 那样 这么 那么 其 之 此 该 某 每 各
    吗 呢 吧 啊 呀 哦 哈 哈哈 嗯 嘛 啦 呗 哎 喔 噢 么
    哪 哪里 哪儿 哪个 哪些 哪家 哪位 哪天 什么 啥 怎么 怎样 怎么样 为什么 为何 如何 谁 多少 几 是否 是不是 有没有
    不 没 没有 别 把 被 给 让 叫 从 到 对 向 往 于 以 为 跟 同 比 由 按 就是 还是 或者 而且 但是 可是 不过
    因为 所以 如果 虽然 然后 一个 个 一下 一些 一点 要 会 能 可以 可能 应该 去 来
    上 下 里 中 内 外 前 后 时 时候
    """.split()
)

# The same for Spanish, Portuguese, French, Italian and German: pronouns, possessives, articles, prepositions,
# conjunctions, auxiliaries and question words. In a bank that is mostly English (or Chinese), "mi" or "que" is
# rare, so the keyword arm took it for a telling word: "¿A qué es alérgico mi hijo?" matched every Spanish memory
# starting "Mi …". Left in: words that are also English words or common names and acronyms ("son", "come",
# "comment", "car", "hay", "la", "el", "un", "os", "mit", "ai", "eu") and Chinese or Vietnamese surnames ("su",
# "tu", "han", "le", "lo", "du", "lei", "chi", "hai", "bei", "da") or names ("mia", "ella", "della"): a question
# may need them.
LATIN_FUNCTION_WORDS: frozenset[str] = frozenset(
    """
    yo tú él ellos ellas nosotros nosotras vosotros vosotras usted ustedes mi mis mí tus sus nuestro nuestra
    nuestros nuestras vuestro vuestra te se nos les los las unos unas de en con por para y ni pero porque que
    qué quien quién quienes cuál cuáles cuando cuándo donde dónde como cómo cuánto cuánta cuántos cuántas es
    están está estoy estás estamos eran fue fueron ser estar eres somos hemos tengo tiene tienen tenemos muy
    más menos también este esta estos estas ese esos esas eso esto
    você vocês ele eles nós meu minha meus minhas teu tua seu sua seus suas nosso nossa uma uns umas das na
    em pelo pela qual quais quem quando onde é são sou estão estou foi tem tenho têm muito isso isto esse essa
    je il nous vous ils elles mon mes tes ses votre vos leur leurs une et ou mais donc qui quoi où quand
    pourquoi quel quelle quels quelles est sont suis sommes êtes avons avez ont était été avec dans chez très
    aussi cet cette ces
    noi voi loro mio miei mie tuo suo gli uno dei delle nel nella tra perché è sono sei siamo abbiamo
    hanno molto anche questo questa quello quella
    ich sie wir ihr mein meine meinen meinem meiner dein deine sein seine ihre unser unsere der das dem ein
    eine einen einem einer und oder aber weil dass wenn wie wo wann warum wer welche ist sind bist waren habe
    haben hast wird werden nicht auch sehr von zu auf für nach
    """.split()
)
_LATIN_WORD_RE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")


def without_function_words(text: str) -> str:
    """`text` with the LATIN_FUNCTION_WORDS left out (a question's keyword terms; stored text keeps them)."""
    return _LATIN_WORD_RE.sub(lambda m: " " if m.group().lower() in LATIN_FUNCTION_WORDS else m.group(), text)


# Runs up to this length are memoised; longer ones are rare and would pin a lot of memory.
_CACHED_RUN_CHARS = 64


@functools.cache
def _jieba() -> ModuleType:
    # Imported on first use only: loading the dictionary costs ~0.5 s and most text is not Chinese.
    # jieba.initialize() takes its own lock, so concurrent first calls are safe.
    import jieba

    jieba.setLogLevel(logging.CRITICAL)  # it logs "Building prefix dict…" to stderr at DEBUG level
    jieba.initialize()
    return jieba


@functools.cache
def _posseg() -> ModuleType:
    _jieba()  # posseg reuses the main tokenizer, which must be initialised quietly first
    import jieba.posseg as posseg  # builds its own word→tag table on import (~0.5 s)

    return posseg


def han_pos_words(run: str) -> tuple[tuple[str, str], ...]:
    """(word, part-of-speech flag) pairs for one run of Han characters, using jieba's tagger.

    jieba.posseg alone runs a 256-state Viterbi over every stretch of characters missing from its
    dictionary, which makes it ~10× slower than jieba.cut. So we segment with jieba.cut, take the tag
    of dictionary words from posseg's table, and run posseg only on the unknown words jieba.cut
    produced. That also fixes cut's habit of gluing a particle onto a new name ("张伟于" → 张伟 / 于).
    Runs must contain only Han characters; digits or Latin letters would reach the slow path.
    """
    if len(run) <= _CACHED_RUN_CHARS:
        return _han_pos_words_cached(run)
    return _han_pos_words(run)


def is_dictionary_word(word: str) -> bool:
    """True if jieba's dictionary knows the word (as opposed to its HMM having guessed it)."""
    return bool(_jieba().dt.FREQ.get(word))


def jieba_word_tags() -> dict[str, str]:
    """jieba's dictionary: each word it knows, with its part-of-speech tag."""
    tags = _posseg().dt.word_tag_tab
    freq = _jieba().dt.FREQ
    return {word: tag for word, tag in tags.items() if freq.get(word)}


@functools.lru_cache(maxsize=4096)
def _han_pos_words_cached(run: str) -> tuple[tuple[str, str], ...]:
    # Retain asks for the same text twice (entities, then search text), and short runs such as
    # "哈哈" or "谢谢" recur constantly in chat.
    return _han_pos_words(run)


def _han_pos_words(run: str) -> tuple[tuple[str, str], ...]:
    tokenizer = _jieba().dt
    posseg = _posseg()
    posseg.dt.makesure_userdict_loaded()  # words added with jieba.add_word(..., tag=...) get their tags
    tags = posseg.dt.word_tag_tab
    pairs: list[tuple[str, str]] = []
    for word in tokenizer.cut(run):
        if len(word) == 1 or tokenizer.FREQ.get(word):
            pairs.append((word, tags.get(word, "x")))
        else:
            pairs.extend(_tag_unknown_word(word))
    return tuple(pairs)


@functools.lru_cache(maxsize=8192)
def _tag_unknown_word(word: str) -> tuple[tuple[str, str], ...]:
    # Unknown words are mostly names, and a user's names recur in every conversation.
    return tuple((pair.word, pair.flag) for pair in _posseg().cut(word))


def has_cjk(text: str) -> bool:
    """True if text contains any Han, kana or Hangul character."""
    return _CJK_RE.search(text) is not None


def normalise_whitespace(text: str) -> str:
    """Collapse every run of whitespace (including newlines) to one space and strip the ends. str.split's white
    space is the regex's \\s (str.isspace, every code point the same), at a quarter of the regex's cost: it runs
    on every line of every block."""
    return " ".join(text.split())


def clean_text(text: str) -> str:
    """Remove what PostgreSQL text cannot store or what breaks rendering.

    Drops NUL and the other C0 controls except tab and newline. The line-breaking controls (carriage
    return, vertical tab, form feed) become newlines instead, so that "a\\rb" does not turn into "ab".
    A surrogate pair left as two code points (JSON "\\ud83d\\ude00" decoded loosely) is joined into the
    real character; lone surrogates are dropped.
    """
    if _UNSAFE_RE.search(text) is None:
        return text  # the common case: nothing to do, no copy
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\x0b", "\n").replace("\x0c", "\n")
    text = _SURROGATE_PAIR_RE.sub(_join_surrogates, text)
    return _DROP_RE.sub("", text)


def _join_surrogates(match: re.Match[str]) -> str:
    pair = match.group()  # a high and a low surrogate: two characters
    high, low = pair[0], pair[1]
    return chr(0x10000 + ((ord(high) - 0xD800) << 10) + (ord(low) - 0xDC00))


def search_text(text: str) -> str:
    """The string to feed to PostgreSQL `to_tsvector('english', …)`.

    Han runs are segmented with jieba and joined with spaces, in cut_for_search style: a long word is
    preceded by its dictionary sub-words, so 北京大学 yields "北京 大学 北京大学" and a query for any
    of them matches.
    Chinese stopwords and CJK punctuation are dropped. Spanish text gets its Spanish stems appended
    (language/spanish.py). Other text comes back unchanged.
    """
    spanish = spanish_terms(text)  # Spanish stems beside the words (language/spanish.py)
    if _SEARCH_RE.search(text) is None:
        return f"{text} {spanish}" if spanish else text
    segmented = _SEARCH_RE.sub(_search_replacement, text).strip()
    return f"{segmented} {spanish}" if spanish else segmented


def _search_replacement(match: re.Match[str]) -> str:
    run = match.group("han")
    if run is None:
        return " "  # CJK punctuation separates tokens and carries no meaning for search
    tokens = _search_tokens(run)
    return f" {' '.join(tokens)} " if tokens else " "


def _search_tokens(run: str) -> list[str]:
    freq = _jieba().dt.FREQ
    tokens: list[str] = []
    for word, _flag in han_pos_words(run):
        if word in ZH_STOPWORDS:
            continue
        # Same expansion as jieba.cut_for_search: dictionary 2- and 3-grams inside longer words.
        for n in (2, 3):
            for i in range(len(word) - n + 1 if len(word) > n else 0):
                gram = word[i : i + n]
                if freq.get(gram) and gram not in ZH_STOPWORDS:
                    tokens.append(gram)
        tokens.append(word)
    return tokens
