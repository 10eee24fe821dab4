"""Tokenize any text without crashing: long texts in pieces, tokenizer failures typed.

tiktoken's Rust core panics on some long inputs (about 1 MB of spaces raises ``PanicException``,
which derives from ``BaseException``, so ``except Exception`` does not catch it), and its BPE
slows down sharply on very long pre-tokens. So texts above :data:`CHUNK` characters are encoded
in pieces, cut where OpenAI's pre-tokenizer (cl100k / o200k regex) always splits anyway:

* after a newline that is followed by a non-whitespace character, or
* before a space that follows a non-whitespace character and precedes a letter or digit.

Cuts there keep the count exact. A piece whose second half holds no such place (a single 16K+
character run: one huge "word", or whitespace only) is cut at the limit, which can change the
count by a token or two per cut (under 0.1% of such a run). Memory stays bounded by one piece.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import TokenizerUnavailableError

#: Longest piece handed to the tokenizer at once (characters).
CHUNK = 32_768
#: How many candidate places ``safe_cut`` examines before cutting at the limit.
_ATTEMPTS = 64


def safe_cut(text: str, start: int, end: int) -> int:
    """A cut in ``(start + (end - start) // 2, end]`` at a pre-token boundary, else ``end``."""
    low = start + (end - start) // 2
    pos = end
    for _ in range(_ATTEMPTS):
        pos = text.rfind("\n", low, pos)
        if pos < 0:
            break
        if not text[pos + 1].isspace():
            return pos + 1
    pos = end
    for _ in range(_ATTEMPTS):
        pos = text.rfind(" ", low + 1, pos)
        if pos < 0:
            break
        if not text[pos - 1].isspace() and text[pos + 1].isalnum():
            return pos
    return end


def guarded(encode_len: Callable[[str], int], text: str, tokenizer: str) -> int:
    """``encode_len(text)``, with any tokenizer crash (Rust panics too) as a typed error."""
    try:
        return encode_len(text)
    except (KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError):
        raise
    except BaseException as exc:
        raise TokenizerUnavailableError(
            f"{tokenizer} failed on a text of {len(text)} characters "
            f"({type(exc).__name__}: {exc}); count it with counter='estimate' instead"
        ) from exc


def chunked_len(encode_len: Callable[[str], int], text: str, tokenizer: str) -> int:
    """Token count of ``text``, encoding at most :data:`CHUNK` characters at a time."""
    if len(text) <= CHUNK:
        return guarded(encode_len, text, tokenizer)
    total = 0
    start = 0
    size = len(text)
    while start < size:
        end = min(start + CHUNK, size)
        cut = safe_cut(text, start, end) if end < size else end
        total += guarded(encode_len, text[start:cut], tokenizer)
        start = cut
    return total
