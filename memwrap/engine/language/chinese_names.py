"""Names in Chinese text, from jieba's part-of-speech tags, its dictionary, and the text's own marks.

jieba tags person, place, organisation and other proper nouns (nr, ns, nt, nz), but its dictionary tags many
everyday words as names too (明白 and 阳光 as nr, 城市 as ns, 聊天 as nz), so a tagged word must pass checks here:
a person's name starts with a surname or is shaped like a transliteration (玛丽), an nz word must be shaped like one
too, and a hand list still removes the frequent everyday words tagged nr or ns (jieba's frequencies do not separate
them from places and famous names: bench/entities/README.md). Familiar forms (老张, 小王) are recognised by their
shape, and names split by the segmenter (张 / 小雨) are joined again. The text itself marks some names: a title in
《》, and what follows 叫 or 名字是.
"""

from __future__ import annotations

import functools
import re

from memwrap.engine.language.text import HAN_RUN_RE, han_pos_words, is_dictionary_word, jieba_word_tags

# jieba part-of-speech flags for proper nouns: person, place, organisation, other proper noun.
_ZH_ENTITY_FLAGS = ("nr", "ns", "nt", "nz")
# jieba's HMM sometimes glues a neighbouring function character onto an unknown name ("和小王").
_ZH_NAME_PREFIXES = frozenset("和跟与同给对被让叫找陪带请问在是")
_ZH_NAME_SUFFIXES = frozenset("的了说和在是也都就吗呢吧啊呀")
# Common Chinese surnames. jieba's dictionary tags many ordinary words as person names (明白, 小姐,
# 阳光), so a dictionary word tagged nr counts only if it starts with a surname (or looks transliterated).
_ZH_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢"
    "姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤常温康施"
    "文牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌毕单季裴霍涂成苗谷"
    "盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕屈饶解牟艾尤阳时穆农司卓古吉缪简车项连芦麦褚娄窦戚岑景党宫费卜冷"
    "晏席卫米柏宗瞿桂全佟应臧闵苟邬边卞姬师仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩明佘池查麻苑迟邝"
)
_ZH_COMPOUND_SURNAMES = frozenset(
    "欧阳 司马 诸葛 上官 东方 皇甫 尉迟 公孙 慕容 长孙 令狐 夏侯 司徒 端木 独孤 南宫 宇文".split()
)
# Everyday words that jieba's dictionary tags as proper nouns and that are common in conversation.
_ZH_NOT_ENTITIES = frozenset(
    """
    谢谢 多谢 明白 小姐 哥哥 伯伯 老公 老婆 宝贝 宝宝 师傅 师兄 师哥 和尚 老太太 小姑娘 老汉 相公 大王 二人 令人
    高峰 高潮 胡同 胡子 顾问 顾客 周转 安静 叶子 康复 王朝 王爷 王公 王府 白领 白雪 梅花 范畴 宁可 黄金周 洪水
    齐声 齐全 石英 金殿 文武 文明 武功 武林 陆军 卫星 雷达 古老 冷笑 宫殿 明星 祖先 祖宗 向东 吉祥 康复
    城市 东西 百科 和平 普通 爱国 南北 英雄 太阳 外国 海洋 湖泊 阳光 大桥 高原 上市 建国 美丽 山区 江湖 大街
    王国 开国 共和国 城镇 京城 阿哥 光荣 庆典 南路 深度 家族 山脉 回国 论文 治安 大国 精华 新鲜 古城 海峡 河口
    汇报 冰川 长度 山水 长大 通讯 正文 中毒 莫非 商城 古典 大战 阴阳 江山 高山 大海 山坡 河谷 上马 太平 福利
    日志 申报 云集 青春 奇特 山河 神圣 中路 新建 恒星 天文 河水 中断 山洞 关联 沙发 海湾 上半场 湖水 广义 上山
    江水 南门 海关 道德 荣誉 权威 智慧 友谊 英勇 公正 辛勤 保健 宝贵 师范 诸如 元帅 雪山 宝剑 玉米 维生素
    青少年 花岗岩 古建筑 琉璃瓦 侍卫 帝王 封锁 宣言 太后 登基 崇拜 金银 子孙 抗议 中文 英文 英语 汉语 汉字
    """.split()
)
# A name tagged nr that does not start with a surname is taken when it is shaped like a transliteration (玛丽, 莎拉,
# 迪士尼, 乔布斯): each of its characters is one that jieba's dictionary uses in transliterated names. These are the
# characters of which at least TRANSLITERATION_SHARE of the dictionary words containing them are tagged nrt: 斯, 尔
# and 莎 are, 太 and 美 are not (太棒了 and 美的 are tagged nr too). Derived from jieba's dictionary, not chosen:
# transliteration_chars() computes the set again, and tests/test_entity_sample.py checks that they agree.
TRANSLITERATION_SHARE = 0.02
_TRANSLITERATION_CHARS = frozenset(
    "丁世丽乌乔亚亨人什令伊伍休伦伯伽佐佛佤佩侭俟俾偃僖克兰兹内冈冕冢凡凯切列利刹加努劳勃勒匈博卜卡卢厄厝古叱各吉吒吕"
    "吠吾咨哇哈哥哲喀嘎噬噶因图圣坂坎坦垦埃基堡塔塞墩多夫夸奇奈奎契奥奴妮姆始威娃娅娜娟媛孚孜"
    "孝孟孺宁安宕宗宙宛宰宾寇尔尤尧尼岐岚岛岢岭岱峨峪崇崎嵊巳巴布希帕帝库底庖庚廉弗弥彻彼得御德恩恰恺慈憧憬戈扈扎托拉"
    "拜捷提摩撒斯施旌日旭旺昂易昭晏晒普曼朗札杜杰林某柔查柯格桑桶梅梓梧梭梵森榭樵比毗汀沃沔沽"
    "泗波泰泽洛涅涧涩淄淑渭湛溓溺滇滕潘潼炀炎烈熹爪牡特猗献玛玻珀珈珊珍珞班琳琴琼瑙瑞瑟瑯璜瓜瓦甘甫畴畿登皆皮盖睿砥砺"
    "磅磐祜祝祯福禧科穆窹米索纣约纳纽绢绥维缅缪罕罗羌羹羿翰考耶聂肯腓膳舍舒艾芒芙芝芥芬芭苑茂"
    "茅茨荔荷莉莎莒莫莱菲萝萨葵蒂蒗蒙蒲蓓蕉蟾衙衮褒襄西觉詹诃诺谘谢谦豪貍贝费赉赖赞赫跖辛辰辽达迈迦迪逊邦郞郾里锆锡闯"
    "阿陀陇隅雅雉雷霍韦顿颇颍馥马骏鲁鲍鸠麦默齐"
)
# jieba's dictionary tags 10k words nz ("other proper noun"), most of them not names (聊天, 美味, 注意安全, 高氯酸钾).
# In MemoryBank's 1,132 Chinese turns 6 of the 102 nz words found were names; on bench/entities' dev sample,
# taking an nz word only when it is shaped like a transliteration (富兰克林) kept F1 (.807 → .808, precision .84 →
# .86) and lost 腾讯 and 淘宝, which the keyword arm still finds.
# A work's title between book-title marks is its name, whatever its words: 《三体》, 《小猪佩奇》.
_TITLE_RE = re.compile(r"《([^《》\n]{1,40})》")
# "我儿子叫乐乐", "我的狗叫旺财", "她的名字是赵雪": the text says what follows is a name, up to the punctuation.
_NAMING_RE = re.compile(r"(?:名叫|叫做|叫作|名字是|名字叫|叫)([\u4e00-\u9fff]{2,4})(?=[，。！？、；,.!?;\s）)]|$)")
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


def chinese_entities(text: str) -> list[tuple[int, str]]:
    """(offset, name) of each name in the Han runs of `text`, plus titles in 《》 and names the text introduces."""
    found: list[tuple[int, str]] = []
    titles = [(m.start(1), m.end(1)) for m in _TITLE_RE.finditer(text)] if "《" in text else []
    for start, end in titles:
        if text[start:end].strip():
            found.append((start, text[start:end].strip()))
    for run in HAN_RUN_RE.finditer(text):
        if any(start <= run.start() < end for start, end in titles):
            continue  # the words of a title are not names of their own (小猪佩奇 is not 佩奇)
        found.extend(_tagged_names(run.group(), run.start()))
    if "叫" in text or "名字" in text:
        found.extend(_introduced_names(text, found))
    return found


def _tagged_names(run: str, offset: int) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    words = han_pos_words(run)
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


def _introduced_names(text: str, found: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Names that follow 叫 or 名字是, when jieba does not know them as something else: 乐乐 (reduplicated, as pet
    and child names are), 旺财 (unknown to the dictionary), 白雪 (tagged as a name); not 叫外卖 (a verb)."""
    introduced = []
    known = {name for _, name in found}
    for match in _NAMING_RE.finditer(text):
        name, start = match.group(1), match.start(1)
        if name[0] in "我你您他她":
            name, start = name[1:], start + 1  # 叫我小琳: "call me 小琳"
        name = name.rstrip("吧啊呀呢了哦")
        if len(name) < 2 or name in known or name[0] in "了着过的":
            continue
        tags = han_pos_words(name)
        reduplicated = len(name) == 2 and name[0] == name[1]
        if reduplicated or not is_dictionary_word(name) and len(tags) > 1 or tags[0][1].startswith("nr"):
            introduced.append((start, name))
    return introduced


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
        known = is_dictionary_word(word)  # else jieba's HMM guessed it, which it does mostly for names
        if len(word) > 4 or (known and not (_starts_with_surname(word) or _transliterated(word))):
            return "", 0
    elif flag == "nz" and is_dictionary_word(word) and not _transliterated(word):
        return "", 0  # "other proper noun" in jieba's dictionary is mostly ordinary words (聊天, 美味): see above
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


def _transliterated(word: str) -> bool:
    return all(ch in _TRANSLITERATION_CHARS for ch in word)


def transliteration_chars() -> frozenset[str]:
    """The characters of jieba's dictionary of which at least TRANSLITERATION_SHARE of the words containing them
    are tagged nrt (transliterated names). Costs about a second: the extractor uses the set computed once."""
    in_names: dict[str, int] = {}
    in_words: dict[str, int] = {}
    for word, tag in jieba_word_tags().items():
        for ch in set(word):
            in_words[ch] = in_words.get(ch, 0) + 1
            if tag == "nrt":
                in_names[ch] = in_names.get(ch, 0) + 1
    return frozenset(ch for ch, count in in_names.items() if count / in_words[ch] >= TRANSLITERATION_SHARE)


def is_romanised_surname(word: str) -> bool:
    """True for a common Chinese surname in pinyin, lower case: "su", "li", "ouyang"."""
    return word in _romanised_surnames()


@functools.lru_cache(maxsize=1)
def _romanised_surnames() -> frozenset[str]:
    from pypinyin import lazy_pinyin  # imported on first use: most text is not Chinese

    return frozenset("".join(lazy_pinyin(name)) for name in _ZH_SURNAMES | _ZH_COMPOUND_SURNAMES)
