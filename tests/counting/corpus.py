"""A deterministic corpus per content class, made offline (never downloaded) for estimator checks.

Natural-language classes come from Faker's locale word lists (real words, realistic frequency);
structured classes (code, JSON, logs, base64, ...) are built with ``random.Random(seed)``. Real
text comes from files installed packages ship: English prose from the standard library's own
documentation (``pydoc_data`` topics, IDLE's NEWS / README / help, the license, the email
package's notes) and chat from ``chatterbot-corpus`` (real dialogue lines in English and 20+
other languages). Real text is split into :data:`FOLDS` disjoint folds by a hash of each
paragraph or line; generated text by seed.

**Fit and held-back text.** The safe estimate's weights are fitted on seeds / folds
:data:`FIT_SEEDS` (``tests/counting/fit_safe_estimate.py``) and tested on :data:`HELD_BACK`, which
the fit never reads.
"""

from __future__ import annotations

import ast
import base64
import functools
import html.parser
import json
import random
import sys
import zlib
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from faker import Faker

Generator = Callable[[Faker, random.Random], str]


def _prose(locale: str) -> Callable[[int], str]:
    def make(seed: int) -> str:
        fake = Faker(locale)
        fake.seed_instance(seed)
        return "\n\n".join(fake.paragraph(nb_sentences=8) for _ in range(6))

    return make


def _korean(seed: int) -> str:
    fake = Faker("ko_KR")
    fake.seed_instance(seed)
    parts = []
    for _ in range(40):
        parts.append(f"{fake.name()}님은 {fake.address()}에 사는 {fake.job()}입니다.")
    return " ".join(parts)


def _people(locale: str) -> Callable[[int], str]:
    def make(seed: int) -> str:
        fake = Faker(locale)
        fake.seed_instance(seed)
        return "\n".join(f"{fake.name()}, {fake.address()}" for _ in range(40))

    return make


def _stdlib_sources(seed: int, count: int = 3) -> list[str]:
    """Source files of a few pure-Python standard-library modules, picked by ``seed``."""
    root = __import__("pathlib").Path(ast.__file__).parent
    names = sorted(n for n in sys.stdlib_module_names if (root / f"{n}.py").is_file())
    rng = random.Random(seed)
    return [(root / f"{name}.py").read_text(encoding="utf-8") for name in rng.sample(names, count)]


def _docstrings(seed: int) -> str:
    """Technical English: the docstrings of standard-library modules (rich vocabulary)."""
    docs = []
    for source in _stdlib_sources(seed):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.Module):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 80:
                    docs.append(doc)
    return "\n\n".join(docs)[:6000]


def _python_source(seed: int) -> str:
    return "\n".join(_stdlib_sources(seed + 7, 2))[:8000]


def _code(seed: int) -> str:
    fake = Faker("en_US")
    fake.seed_instance(seed)
    rng = random.Random(seed)
    lines = []
    for _ in range(8):
        name = "_".join(fake.words(2))
        args = ", ".join(f"{w}: int" for w in fake.words(rng.randint(1, 3)))
        lines.append(f"def {name}({args}) -> dict[str, int]:")
        lines.append(f'    """{fake.sentence()}"""')
        for _ in range(rng.randint(2, 5)):
            var = fake.word()
            value = rng.randint(0, 999)
            lines.append(f"    {var} = {value} * len({fake.word()!r})  # {fake.word()}")
            lines.append(f"    if {var} > {rng.randint(1, 50)}:")
            lines.append(f"        return {{'{fake.word()}': {var}}}")
        lines.append("    return {}\n")
    return "\n".join(lines)


def _json(seed: int) -> str:
    fake = Faker("en_US")
    fake.seed_instance(seed)
    rows = [
        {
            "id": fake.uuid4(),
            "name": fake.name(),
            "email": fake.email(),
            "score": round(fake.pyfloat(min_value=0, max_value=100), 3),
            "tags": fake.words(3),
            "active": fake.pybool(),
            "created": fake.iso8601(),
        }
        for _ in range(12)
    ]
    return json.dumps({"results": rows, "count": len(rows)}, indent=seed % 2 * 2 or None)


def _logs(seed: int) -> str:
    fake = Faker("en_US")
    fake.seed_instance(seed)
    rng = random.Random(seed)
    levels = ["INFO", "WARN", "ERROR", "DEBUG"]
    return "\n".join(
        f"{fake.iso8601()} {rng.choice(levels):5} [{fake.word()}-{rng.randint(1, 9)}] "
        f"{fake.ipv4()} GET /{fake.uri_path()} {rng.choice([200, 404, 500])} "
        f"{rng.randint(1, 9999)}ms req={fake.uuid4()[:8]} {fake.sentence(nb_words=5)}"
        for _ in range(30)
    )


def _tables(seed: int) -> str:
    """Tables as tools print them and clipboards carry them: tab-separated (a spreadsheet copy,
    ``mysql -B``), comma- and pipe-separated, and one-column lists (a value a line); each a
    header row, then cells of lowercase words (the most common case: tags, states, keywords),
    names, cities, numbers and dates, in seeded columns."""
    fake = Faker("en_US")
    fake.seed_instance(seed)
    rng = random.Random(seed)
    cells: dict[str, Callable[[], str]] = {
        "word": fake.word,
        "words": lambda: " ".join(fake.words(rng.randint(2, 4))),
        "name": fake.name,
        "city": fake.city,
        "int": lambda: str(rng.randint(0, 10 ** rng.randint(1, 7))),
        "float": lambda: f"{rng.uniform(0, 1000):.2f}",
        "date": fake.date,
    }
    kinds = ("word", "word", "word", "words", "name", "city", "int", "float", "date")
    tables = []
    # A sheet of lowercase words (the costliest per character: no cell merges with a space),
    # mixed sheets, and a one-column list.
    for sep, columns, pool in 2 * (
        ("\t", 6, ("word",)),
        ("\t", 6, kinds),
        (",", 5, kinds),
        (",", 4, ("word",)),
        (" | ", 4, kinds),
        ("\t", 1, kinds),
    ):
        row_kinds = [rng.choice(pool) for _ in range(rng.randint(1, columns))]
        rows = [sep.join(fake.word() for _ in row_kinds)]
        rows += [sep.join(cells[k]() for k in row_kinds) for _ in range(rng.randint(10, 30))]
        tables.append("\n".join(rows))
    return "\n\n".join(tables)


def _digits(seed: int) -> str:
    rng = random.Random(seed)
    rows = []
    for _ in range(60):
        cells = [str(rng.randint(0, 10 ** rng.randint(1, 12))) for _ in range(6)]
        cells.append(f"{rng.uniform(-1e6, 1e6):.6f}")
        rows.append(",".join(cells))
    return "\n".join(rows)


def _punctuation(seed: int) -> str:
    rng = random.Random(seed)
    marks = list("!@#$%^&*()[]{}<>?/\\|~`'\";:,.-_=+")
    parts = []
    for _ in range(150):
        parts.append("".join(rng.choice(marks) for _ in range(rng.randint(1, 6))))
        parts.append(rng.choice(["", " ", "\n", "  "]))
    parts.append("\n" + "| --- | --- | --- |\n" * 10 + "=" * 40 + "\n" + "-" * 72)
    return "".join(parts)


def _whitespace(seed: int) -> str:
    rng = random.Random(seed)
    parts = []
    for _ in range(80):
        parts.append(rng.choice([" ", "\t", "\n", "  ", "\r\n"]) * rng.randint(1, 30))
        parts.append(rng.choice(["x", "a;", "{", "}", "if", "end"]))
    return "".join(parts)


def _base64(seed: int) -> str:
    rng = random.Random(seed)
    raw = bytes(rng.getrandbits(8) for _ in range(3000))
    text = base64.b64encode(raw).decode()
    return "\n".join(text[i : i + 76] for i in range(0, len(text), 76))


def _hex(seed: int) -> str:
    rng = random.Random(seed)
    return "\n".join(
        f"{rng.getrandbits(160):040x} {rng.getrandbits(128):032x} 0x{rng.getrandbits(32):08X}"
        for _ in range(40)
    )


def _emoji(seed: int) -> str:
    fake = Faker("en_US")
    fake.seed_instance(seed)
    return " ".join(f"{fake.emoji()}{fake.emoji()} {fake.word()}" for _ in range(120))


def _urls(seed: int) -> str:
    fake = Faker("en_US")
    fake.seed_instance(seed)
    return "\n".join(
        f"{fake.url()}{fake.uri_path()}?q={fake.word()}&id={fake.pyint()}" for _ in range(50)
    )


def _mixed_cjk_code(seed: int) -> str:
    zh = Faker("zh_CN")
    zh.seed_instance(seed)
    rng = random.Random(seed)
    return "\n".join(
        f"# {zh.sentence()}\nvalue_{rng.randint(0, 99)} = "
        f"call('{zh.word()}', {rng.randint(0, 999)})"
        for _ in range(30)
    )


def _draws(rng: random.Random, ranges: tuple[tuple[int, int], ...], count: int) -> str:
    """``count`` code points drawn uniformly from ``ranges`` (each range by its size)."""
    sizes = [hi - lo + 1 for lo, hi in ranges]
    picks = rng.choices(ranges, weights=sizes, k=count)
    return "".join(chr(rng.randint(lo, hi)) for lo, hi in picks)


#: CJK Extension A, the rest of the BMP's unified ideographs (most of them rare), Extension B.
_RARE_CJK = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0x20000, 0x2A6DF))


def _rare_cjk(seed: int) -> str:
    """Rare ideographs (names, classical text, OCR of old documents): seeded draws per line from
    one of :data:`_RARE_CJK`, sometimes after a little common Chinese or punctuation."""
    zh = Faker("zh_CN")
    zh.seed_instance(seed)
    rng = random.Random(seed)
    lines = []
    for _ in range(40):
        block = rng.choice(_RARE_CJK)
        body = _draws(rng, (block,), rng.randint(1, 40))
        lines.append(
            rng.choice(("", f"{zh.word()}\uff1a", "「", "- ")) + body + rng.choice(("", "。", "」"))
        )
    return "\n".join(lines)


#: The 118 elements' Chinese names (mainland forms; 104-118 named in 2007-2017, most outside
#: the BMP's common range), and the hydrogen isotopes protium, deuterium and tritium.
_ELEMENTS = (
    "氢氦锂铍硼碳氮氧氟氖钠镁铝硅磷硫氯氩钾钙钪钛钒铬锰铁钴镍铜锌镓锗砷硒溴氪铷锶钇锆铌钼锝钌"
    "铑钯银镉铟锡锑碲碘氙铯钡镧铈镨钕钷钐铕钆铽镝钬铒铥镱镥铪钽钨铼锇铱铂金汞铊铅铋钋砹氡钫镭"
    "锕钍镤铀镎钚镅锔锫锎锿镄钔锘铹\U0002cb3b\U0002cb4a\U0002cb73\U0002cb5b\U0002cb76\u9fcf"
    "\U0002b7fc\U0002cb2d\u9fd4\u9fed\U0002b4e7\u9546\U0002b7f7\u9fec\u9feb"
)
_ISOTOPES = "氕氘氚"
_SYMBOL_ROW = (
    "H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As Se "
    "Br Kr Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd Tb "
    "Dy Ho Er Tm Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th Pa U Np Pu Am Cm "
    "Bk Cf Es Fm Md No Lr Rf Db Sg Bh Hs Mt Ds Rg Cn Nh Fl Mc Lv Ts Og"
)
_SYMBOLS = _SYMBOL_ROW.split()


def _elements(seed: int) -> str:
    """Chemistry in Chinese: the element names as tables, runs and sentences (seeded order)."""
    rng = random.Random(seed)
    order = list(range(len(_ELEMENTS)))
    rng.shuffle(order)
    lines = [
        f"{_ELEMENTS[i]}\uff08{_SYMBOLS[i]}\uff09的原子序数是{i + 1}。"
        if rng.random() < 0.5
        else f"{i + 1}\t{_SYMBOLS[i]}\t{_ELEMENTS[i]}"
        for i in order[:60]
    ]
    for _ in range(8):
        run = rng.sample(_ELEMENTS + _ISOTOPES, rng.randint(3, 30))
        lines.append(
            rng.choice(("", "元素\uff1a", "同位素与元素 ")) + rng.choice(("", "、")).join(run)
        )
    lines.append("".join(_ELEMENTS[i] for i in order))
    return "\n".join(lines)


#: Thai consonants, vowel signs above/below (and sara am), tone marks and other marks.
_THAI_CONSONANTS = [chr(c) for c in range(0x0E01, 0x0E2F)]
_THAI_SIGNS = ["", "", *map(chr, (0x0E31, *range(0x0E33, 0x0E3B), 0x0E47))]
_THAI_MARKS = ["", *map(chr, range(0x0E48, 0x0E4F))]
_THAI_LEADING = ["", "", *map(chr, range(0x0E40, 0x0E45))]


def _thai_marks(seed: int) -> str:
    """Thai heavy in tone marks and vowel signs: real words (Faker's th_TH lists) spaced the way
    word lists and search queries are, made-up syllables (leading vowel, consonant, vowel sign,
    tone mark) and seeded draws from the whole Thai block (digits and rare signs included)."""
    fake = Faker("th_TH")
    fake.seed_instance(seed)
    rng = random.Random(seed)
    lines = []
    for _ in range(30):
        kind = rng.randrange(3)
        if kind == 0:
            lines.append(" ".join(fake.words(rng.randint(2, 25))))
        elif kind == 1:
            syllables = [
                rng.choice(_THAI_LEADING)
                + rng.choice(_THAI_CONSONANTS)
                + rng.choice(_THAI_SIGNS)
                + rng.choice(_THAI_MARKS)
                for _ in range(rng.randint(2, 40))
            ]
            lines.append(rng.choice(("", " ")).join(syllables))
        else:
            lines.append(_draws(rng, ((0x0E01, 0x0E3A), (0x0E3F, 0x0E5B)), rng.randint(1, 40)))
    return "\n".join(lines)


def _braille(seed: int) -> str:
    """Braille patterns (U+2800-28FF): seeded cells in words, the way braille transcripts are."""
    rng = random.Random(seed)
    return "\n".join(
        " ".join(
            _draws(rng, ((0x2800, 0x28FF),), rng.randint(1, 9)) for _ in range(rng.randint(1, 12))
        )
        for _ in range(40)
    )


@functools.cache
def common_cjk() -> tuple[str, str]:
    """Common ideographs: the characters of Faker's zh_CN words, and the shipped one-token ones."""
    from faker.providers.lorem.zh_CN import Provider

    from context_manager.counting.estimate_safe import char_classes

    words = "".join(sorted(set("".join(Provider.word_list))))
    cheap = "".join(sorted(chr(c) for c, mark in char_classes().items() if mark == "\x00"))
    return words, cheap


def _cjk_draws(seed: int) -> str:
    """Common ideographs in seeded random order (character lists, OCR, shuffled hanzi drills):
    no word to merge with, so each costs its own token; some lines interleave ASCII digits or
    punctuation, or full-width commas."""
    rng = random.Random(seed)
    lines = []
    for _ in range(40):
        pool = rng.choice(common_cjk())
        chars = [rng.choice(pool) for _ in range(rng.randint(1, 60))]
        between = rng.choice(("", "", "", "\uff0c", "\u3001"))
        if rng.random() < 0.2:
            lines.append("".join(c + rng.choice("0123456789,.;") for c in chars))
        else:
            lines.append(between.join(chars))
    return "\n".join(lines)


def _cjk_spaced(seed: int) -> str:
    """Word-segmented Chinese (the output of a segmenter, tokenized corpora, learners' texts):
    Faker's zh_CN sentences with a space after each character, its words separated by spaces,
    and seeded common ideographs each followed by a space."""
    zh = Faker("zh_CN")
    zh.seed_instance(seed)
    rng = random.Random(seed)
    lines = []
    for _ in range(40):
        kind = rng.randrange(3)
        if kind == 0:
            lines.append("".join(c + " " for c in zh.sentence(nb_words=rng.randint(2, 12))))
        elif kind == 1:
            lines.append(" ".join(zh.words(rng.randint(1, 20))))
        else:
            pool = rng.choice(common_cjk())
            lines.append("".join(rng.choice(pool) + " " for _ in range(rng.randint(1, 60))))
    return "\n".join(lines)


def _spaced(rng: random.Random, ranges: tuple[tuple[int, int], ...]) -> str:
    """A line of seeded draws from ``ranges``, one or two characters a word, spaces between."""
    words = [_draws(rng, ranges, rng.choice((1, 1, 1, 2))) for _ in range(rng.randint(1, 50))]
    return " ".join(words) + rng.choice(("", " "))


def _rare_cjk_spaced(seed: int) -> str:
    """Rare ideographs (:data:`_RARE_CJK`) separated by spaces: lists of names, glossaries."""
    rng = random.Random(seed)
    return "\n".join(_spaced(rng, (rng.choice(_RARE_CJK),)) for _ in range(40))


def _thai_spaced(seed: int) -> str:
    """Thai letters and signs separated by spaces (spelling lists, search queries): draws from
    the whole Thai block and from its marks (tone marks, vowel signs, rare signs)."""
    rng = random.Random(seed)
    blocks = (((0x0E01, 0x0E3A), (0x0E3F, 0x0E5B)), ((0x0E31, 0x0E3A), (0x0E47, 0x0E5B)))
    return "\n".join(_spaced(rng, rng.choice(blocks)) for _ in range(40))


def _braille_spaced(seed: int) -> str:
    """Braille cells one or two at a time, separated by spaces."""
    rng = random.Random(seed)
    return "\n".join(_spaced(rng, ((0x2800, 0x28FF),)) for _ in range(40))


CLASSES: dict[str, Callable[[int], str]] = {
    "english": _prose("en_US"),
    "english_docs": _docstrings,
    "german": _prose("de_DE"),
    "french": _prose("fr_FR"),
    "spanish": _prose("es_ES"),
    "python_src": _python_source,
    "code": _code,
    "json": _json,
    "logs": _logs,
    "chinese": _prose("zh_CN"),
    "japanese": _prose("ja_JP"),
    "korean": _korean,
    "russian": _prose("ru_RU"),
    "arabic": _prose("ar_AA"),
    "greek": _prose("el_GR"),
    "hebrew": _prose("he_IL"),
    "thai": _prose("th_TH"),
    "hindi": _people("hi_IN"),
    "digits": _digits,
    "punctuation": _punctuation,
    "whitespace": _whitespace,
    "base64": _base64,
    "hex": _hex,
    "emoji": _emoji,
    "urls": _urls,
    "cjk_code": _mixed_cjk_code,
    "rare_cjk": _rare_cjk,
    "elements": _elements,
    "thai_marks": _thai_marks,
    "braille": _braille,
    "cjk_draws": _cjk_draws,
    "cjk_spaced": _cjk_spaced,
    "rare_cjk_spaced": _rare_cjk_spaced,
    "thai_spaced": _thai_spaced,
    "braille_spaced": _braille_spaced,
    "tables": _tables,
}


#: Disjoint folds of the real text; fold ``seed % FOLDS`` goes with a seed.
FOLDS = 5
#: What the safe estimate was fitted on, and what is held back to test it.
FIT_SEEDS = (0, 1)
HELD_BACK = (2, 3, 4)


def _fold(unit: str) -> int:
    return zlib.crc32(unit.encode("utf-8", "surrogatepass")) % FOLDS


class _TextOnly(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


@functools.cache
def _prose_units() -> tuple[str, ...]:
    """Paragraphs of English documentation the standard library ships (prose, wrapped lines,
    some inline code): the language reference's pydoc topics, IDLE's notes and help page, the
    email package's design notes and the Python license."""
    import pydoc_data.topics

    root = Path(ast.__file__).parent
    docs = [pydoc_data.topics.topics[key] for key in sorted(pydoc_data.topics.topics)]
    for name in (
        "idlelib/NEWS2x.txt",
        "idlelib/README.txt",
        "idlelib/HISTORY.txt",
        "idlelib/TODO.txt",
        "idlelib/extend.txt",
        "email/architecture.rst",
        "LICENSE.txt",
    ):
        path = root / name
        if path.is_file():
            docs.append(path.read_text(encoding="utf-8", errors="replace"))
    help_page = root / "idlelib/help.html"
    if help_page.is_file():
        parser = _TextOnly()
        parser.feed(help_page.read_text(encoding="utf-8", errors="replace"))
        docs.append("".join(parser.parts))
    units = (p.strip("\n") for doc in docs for p in doc.split("\n\n"))
    return tuple(p for p in units if len(p.strip()) > 1)


#: chatterbot-corpus languages per chat class (the rest of its languages, in other scripts, are
#: "chat_scripts": Bengali, Hebrew, Hindi, Marathi, Oriya, Persian, Russian, Tamil, ...).
_CHAT_CJK = ("chinese", "traditionalchinese", "japanese", "korean")
_CHAT_LATIN = (
    "dutch",
    "french",
    "german",
    "hinglish",
    "indonesian",
    "italian",
    "portuguese",
    "spanish",
    "swedish",
    "turkish",
    "yoruba",
)


@functools.cache
def _chat_lines(language: str) -> tuple[str, ...]:
    """Every distinct line of chatterbot-corpus's dialogues in ``language`` (needs
    ``chatterbot-corpus`` and PyYAML)."""
    import yaml

    folder = resources.files("chatterbot_corpus") / "data" / language
    lines: dict[str, None] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yml"):
            continue
        data = yaml.safe_load(entry.read_text(encoding="utf-8")) or {}
        for conversation in data.get("conversations") or ():
            for line in conversation or ():
                if line is not None and str(line).strip():
                    lines[str(line)] = None
    return tuple(lines)


def _chat_languages() -> list[str]:
    folder = resources.files("chatterbot_corpus") / "data"
    return sorted(entry.name for entry in folder.iterdir() if entry.is_dir())


def _real_units() -> dict[str, tuple[str, ...]]:
    languages = _chat_languages()
    return {
        "prose": _prose_units(),
        "chat": _chat_lines("english"),
        "chat_cjk": tuple(line for lang in _CHAT_CJK for line in _chat_lines(lang)),
        "chat_latin": tuple(line for lang in _CHAT_LATIN for line in _chat_lines(lang)),
        "chat_scripts": tuple(
            line
            for lang in languages
            if lang not in (*_CHAT_CJK, *_CHAT_LATIN, "english")
            for line in _chat_lines(lang)
        ),
    }


#: Classes of real text (units split into folds), besides the generated :data:`CLASSES`.
REAL_CLASSES = ("prose", "chat", "chat_cjk", "chat_latin", "chat_scripts")
#: How real units are joined into one text: chat lines as a transcript, prose as paragraphs.
_JOIN = {"prose": "\n\n", "chat": "\n", "chat_cjk": "\n", "chat_latin": "\n", "chat_scripts": "\n"}


def real_units(seed: int) -> dict[str, list[str]]:
    """The real text of fold ``seed % FOLDS``: paragraphs (prose) or chat lines, per class."""
    fold = seed % FOLDS
    return {
        name: [unit for unit in units if _fold(unit) == fold]
        for name, units in _real_units().items()
    }


def corpus(seed: int, repeat: int = 3, real_chars: int = 12_000) -> dict[str, str]:
    """One text per class: ``repeat`` generations joined (a few KB each), and the first
    ``real_chars`` characters of each real class's fold."""
    texts = {
        name: "\n\n".join(make(seed * 1000 + i) for i in range(repeat))
        for name, make in CLASSES.items()
    }
    for name, units in real_units(seed).items():
        texts[name] = _JOIN[name].join(units)[:real_chars]
    return texts


def messages(seed: int) -> dict[str, list[str]]:
    """Message-sized texts per class: each chat line alone; prose in runs of 1-6 paragraphs;
    every generated text cut at line breaks into pieces of 1-60 lines (sizes drawn from
    ``random.Random(seed)``), so short and long messages of every class are both there."""
    rng = random.Random(seed)
    out: dict[str, list[str]] = {}
    for name, text in corpus(seed).items():
        if name in REAL_CLASSES:
            continue
        lines = text.split("\n")
        pieces = []
        while lines:
            take = rng.choice((1, 1, 2, 3, 5, 8, 13, 30, 60))
            pieces.append("\n".join(lines[:take]))
            lines = lines[take:]
        out[name] = [piece for piece in pieces if piece.strip()]
    for name, units in real_units(seed).items():
        if name != "prose":
            out[name] = units
            continue
        pieces = []
        while units:
            take = rng.randint(1, 6)
            pieces.append("\n\n".join(units[:take]))
            units = units[take:]
        out[name] = pieces
    return out
