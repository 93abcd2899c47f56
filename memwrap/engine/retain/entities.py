"""Heuristic named-entity extraction, with no LLM and no model download.

Retain runs this on every memory, so it must be cheap. For cased scripts we rely on capitalisation:
capitalised words and phrases ("Alice", "New York", "Bank of America"), acronyms (NASA), camel-case
product names (iPhone) and @handles. Capitalisation at the start of a sentence means nothing, so a
sentence-initial word counts only if it is not a common English word. For Chinese, jieba's
part-of-speech tagger marks person, place, organisation and other proper nouns (nr, ns, nt, nz).
The engine compares entities through entity_key(), so surface variants such as "Alice's", "ALICE"
and "Alice" meet.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from memwrap.engine.text import LATIN_FUNCTION_WORDS, HAN_RUN_RE, han_pos_words, has_cjk, is_dictionary_word

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
# Anything in the gap between two words that means the second one starts a sentence (or a quotation,
# list item or heading, which behave the same way).
_SENTENCE_GAP_CHARS = frozenset(".!?;:…\n\"“«([{。！？；：「『【")

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

# Ordinary words that are capitalised only because they start a sentence ("Good to see you!").
# They are dropped when sentence-initial and kept mid-sentence, where a capital means a name.
_COMMON_WORDS = frozenset(
    """
    good great nice cool awesome amazing fantastic wonderful lovely beautiful perfect fine glad happy sad
    excited tired busy lucky fun funny interesting exciting true right wrong exactly indeed same sounds
    sound seems seem looks look looking love loved loving like liked hope hoping wish think thinking thought
    feel feeling felt guess know knew get got getting go going went gone come coming came make making made
    take taking took give gave tell told say said ask asked see saw seen watch watched let try tried trying
    need needed want wanted keep kept check remember reminds remind find found show list name describe
    explain summarize summarise recall start started starting finish finished finally bought buy visited
    visit met meet spent spend planning plan working work worked worker play played playing read reading
    reading wrote write writing moved move living live lived stay stayed staying call called calling talk
    talked talking speaking wait waiting welcome enjoy enjoyed enjoying miss missed learn learned learning
    help helped helping use used using bring brought put run ran leave left walk walked eat ate cooking cook
    cooked made taking took hey life things thing stuff lots plenty lot kind sort part people person
    family friends friend kids kid guys guy everyone anyway besides speaking especially personally also
    being having doing getting yesterday's today's since once after before during
    new old big small little long short high low early late young old north south east west northern
    southern eastern western central upper lower grand golden silver red blue green black white first
    general national international royal united holy saint san santa los las mount lake fort port cape
    """.split()
)
# The same for the commonest sentence-openers of Spanish, Portuguese, French, Italian and German: a memory
# written "Mi hermano vive en Salamanca." or "Soy alérgico…" names Salamanca, not "Mi" or "Soy" (which, as
# entities, linked every such memory to every other in the graph arm). Their function words (text.py) and common
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
# Among the common words, those that often begin a proper name ("New York", "Great Wall", "El Salvador", "La
# Paz", "Den Haag"). A sentence-initial phrase starting with one keeps it; any other common first word is dropped.
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

# jieba part-of-speech flags for proper nouns: person, place, organisation, other proper noun.
_ZH_ENTITY_FLAGS = ("nr", "ns", "nt", "nz")
# jieba's HMM sometimes glues a neighbouring function character onto an unknown name ("和小王").
_ZH_NAME_PREFIXES = frozenset("和跟与同给对被让叫找陪带请问在是")
_ZH_NAME_SUFFIXES = frozenset("的了说和在是也都就吗呢吧啊呀")
# Common Chinese surnames. jieba's dictionary tags many ordinary words as person names (明白, 小姐,
# 阳光), so a dictionary word tagged nr counts only if it starts with a surname.
_ZH_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢"
    "姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤常温康施"
    "文牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌毕单季裴霍涂成苗谷"
    "盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解牟艾尤阳时穆农司卓古吉缪简车项连芦麦褚娄窦戚岑景党宫费卜冷"
    "晏席卫米柏宗瞿桂全佟应臧闵苟邬边卞姬师仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩明佘池查麻苑迟邝"
)
_ZH_COMPOUND_SURNAMES = frozenset("欧阳 司马 诸葛 上官 东方 皇甫 尉迟 公孙 慕容 长孙 令狐 夏侯 司徒 端木 独孤 南宫 宇文".split())
# Everyday words that jieba's dictionary tags as proper nouns and that are common in conversation.
_ZH_NOT_ENTITIES = frozenset(
    """
    谢谢 多谢 明白 小姐 哥哥 伯伯 老公 老婆 宝贝 宝宝 师傅 师兄 师哥 和尚 老太太 小姑娘 老汉 相公 大王 二人 令人
    高峰 高潮 胡同 胡子 顾问 顾客 周转 安静 叶子 康复 王朝 王爷 王公 王府 白领 白雪 梅花 范畴 宁可 黄金周 洪水
    齐声 齐全 石英 金殿 文武 文明 武功 武林 陆军 卫星 雷达 古老 冷笑 宫殿 明星 祖先 祖宗 向东 吉祥 康复 安娜
    城市 东西 百科 和平 普通 爱国 南北 英雄 太阳 外国 海洋 湖泊 阳光 大桥 高原 上市 建国 美丽 山区 江湖 大街
    王国 开国 共和国 城镇 京城 阿哥 光荣 庆典 南路 深度 家族 山脉 回国 论文 治安 大国 精华 新鲜 古城 海峡 河口
    汇报 冰川 长度 山水 长大 通讯 正文 中毒 莫非 商城 古典 大战 阴阳 江山 高山 大海 山坡 河谷 上马 太平 福利
    日志 申报 云集 青春 奇特 山河 神圣 中路 新建 恒星 天文 河水 中断 山洞 关联 沙发 海湾 上半场 湖水 广义 上山
    江水 南门 海关 道德 荣誉 权威 智慧 友谊 英勇 公正 辛勤 保健 宝贵 师范 诸如 元帅 雪山 宝剑 玉米 维生素
    青少年 花岗岩 古建筑 琉璃瓦 侍卫 帝王 封锁 宣言 太后 登基 崇拜 金银 子孙 抗议 中文 英文 英语 汉语 汉字
    """.split()
)
# "小王", "老李": familiar names, a prefix before a surname.
_ZH_FAMILIAR_PREFIXES = frozenset("小老")
ZH_SURNAMES, ZH_COMPOUND_SURNAMES, ZH_FAMILIAR_PREFIXES = _ZH_SURNAMES, _ZH_COMPOUND_SURNAMES, _ZH_FAMILIAR_PREFIXES
# Everyday words that look like a familiar name (小 or 老 + a surname): 小时 is an hour, 老师 a teacher. jieba's
# dictionary tags most familiar names as plain nouns (老张 'n'), so the form decides, minus these.
_ZH_FAMILIAR_NOT_NAMES = frozenset(
    """
    小时 老师 小麦 小于 小康 小孔 小路 小米 小马 小牛 小车 小农 小包 小费 小曲 小钱 老牛 小房 小商 老农 小金 老路
    小熊 小解 小池 小宫 小谷 小边 小方 老边 老房 小龙 老成 小成 小许 老许 小付 小苗 小石 小景 小童 小毛 老毛 小项
    老实 小白 老白 小黄 老黄 小丁 老百 小姚 小时候 老乡 老家 小区 小说 小学 老板 小姐 小孩 老人 小心 小吃
    """.split()
)

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
    sentence_start: bool
    possessive: bool
    candidate: bool  # capitalised, camel-case or an acronym, and not a stopword


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
        found.extend(_chinese_entities(text))
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
    tokens = _tokenise(text, stopwords)
    if _is_shouting(tokens):
        # All caps carries no signal; only @handles are still recognisable.
        return [(t.start, t.word) for t in tokens if t.word.startswith("@")]
    lowercase_words = {t.lower for t in tokens if t.word[0].islower()}
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


def _tokenise(text: str, stopwords: frozenset[str]) -> list[_Token]:
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
        sentence_start = not tokens or _gap_starts_sentence(text[previous_end:start], previous_lower)
        tokens.append(
            _Token(start, end, word, lower, sentence_start, possessive, _is_candidate(word, lower, stopwords))
        )
        previous_end, previous_lower = match.end(), lower
    return tokens


def _gap_starts_sentence(gap: str, previous_lower: str) -> bool:
    if not gap or gap == " ":
        return False  # the common case, decided without scanning
    if gap == ". " and (previous_lower in _TITLES or previous_lower in _ABBREVIATED_NAME_PARTS):
        return False  # "Dr. Smith": the period belongs to the title
    return any(ch in _SENTENCE_GAP_CHARS for ch in gap)


def _is_candidate(word: str, lower: str, stopwords: frozenset[str]) -> bool:
    if word[0] == "@":
        return True
    if lower in stopwords:
        return False
    if word[0].isupper():
        if word.isupper() and len(word) > 1 and lower in _COMMON_WORDS:
            return False  # "SO HAPPY" is emphasis, not an acronym
        return True
    # Camel case starting lower-case: iPhone, eBay, macOS.
    return word[0].islower() and not word.islower()


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


def _finish_phrase(
    text: str, phrase: list[_Token], lowercase_words: set[str], found: list[tuple[int, str]]
) -> None:
    if not phrase:
        return
    first = phrase[0]
    if first.sentence_start and not first.word.startswith("@") and _ordinary(first, lowercase_words):
        if len(phrase) == 1:
            return
        if first.lower not in _NAME_STARTERS:
            phrase = phrase[1:]  # "Visited New York" → "New York"
            if phrase[0].lower in _CONNECTORS:
                phrase = phrase[1:]
    if len(phrase) == 1 and len(phrase[0].word) < 2:
        return  # a lone initial ("plan B") is not a name
    found.append((phrase[0].start, text[phrase[0].start : phrase[-1].end]))


def _ordinary(token: _Token, lowercase_words: set[str]) -> bool:
    # A sentence-initial word is ordinary if it is a common word, or if the same text also uses it
    # in lower case ("Cooking is fun. I love cooking.").
    if token.lower in _OTHER_LANGUAGE_OPENERS and not token.word.isupper():
        return True
    return token.lower in _COMMON_WORDS or token.lower in lowercase_words


# --- Chinese ---------------------------------------------------------------------------------------


def _chinese_entities(text: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for run in HAN_RUN_RE.finditer(text):
        offset = run.start()
        words = han_pos_words(run.group())
        i = 0
        while i < len(words):
            word, flag = words[i]
            merged = _split_name(words, i)
            if merged:
                found.append((offset, merged))
                offset += len(merged)
                i += 2
                continue
            if _is_familiar_name(word):
                found.append((offset, word))
            elif flag.startswith(_ZH_ENTITY_FLAGS):
                name, shift = _chinese_name(word, flag)
                if name:
                    found.append((offset + shift, name))
            offset += len(word)
            i += 1
    return found


def _split_name(words: tuple[tuple[str, str], ...], i: int) -> str:
    """A name jieba cut in two: surname + given name (张 / 小雨, 欧阳 / 娜娜) or 小/老 + surname (小 / 王)."""
    if i + 1 >= len(words):
        return ""
    (word, _), (following, following_flag) = words[i], words[i + 1]
    if not following_flag.startswith("nr"):
        return ""
    if word in _ZH_FAMILIAR_PREFIXES:
        return word + following if following in _ZH_SURNAMES else ""
    is_surname = word in _ZH_SURNAMES or word in _ZH_COMPOUND_SURNAMES
    after_numeral = i > 0 and words[i - 1][1] == "m"  # "三张" is a count, not a surname
    if is_surname and len(following) <= 2 and not after_numeral and following not in _ZH_NOT_ENTITIES:
        return word + following
    return ""


def _chinese_name(word: str, flag: str) -> tuple[str, int]:
    """The entity in a tagged word (or "" to reject it), and how many characters were trimmed in front."""
    shift = 0
    if flag == "nr":  # Chinese personal names; nrt (transliterated) and nrfg are taken as tagged
        if len(word) >= 3 and word[0] in _ZH_NAME_PREFIXES:
            word, shift = word[1:], 1
        if len(word) >= 3 and word[-1] in _ZH_NAME_SUFFIXES:
            word = word[:-1]
        if len(word) > 4 or (is_dictionary_word(word) and not _starts_with_surname(word)):
            return "", 0
    if len(word) < 2 or word in _ZH_NOT_ENTITIES:
        return "", 0  # single characters tagged ns/nr are usually mis-tags (云, 王)
    return word, shift


def _is_familiar_name(word: str) -> bool:
    """老张, 小王, 老欧阳: how colleagues and friends are called."""
    if len(word) < 2 or word[0] not in _ZH_FAMILIAR_PREFIXES or word in _ZH_FAMILIAR_NOT_NAMES:
        return False
    return word[1:] in _ZH_SURNAMES or word[1:] in _ZH_COMPOUND_SURNAMES


def _starts_with_surname(word: str) -> bool:
    if word[0] in _ZH_FAMILIAR_PREFIXES:
        word = word[1:]  # 老李, 小王
    return word[:1] in _ZH_SURNAMES or word[:2] in _ZH_COMPOUND_SURNAMES
