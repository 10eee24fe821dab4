"""Refit the safe estimate (``context_manager/counting/estimate_safe.py``); not a test.

    python -m tests.counting.fit_safe_estimate words   # rewrite the word list and char classes
    python -m tests.counting.fit_safe_estimate fit     # print WEIGHTS for estimate_safe.py

Needs the reference tokenizers (``reference_tokenizers``), Faker, chatterbot-corpus and, for
``fit``, SciPy (``linprog``). Reads only the fit folds (:data:`~.corpus.FIT_SEEDS`); the folds in
:data:`~.corpus.HELD_BACK` are what ``test_estimate_safe`` checks, and are never read here.

**Word list.** Every lowercase ASCII word that cl100k_base has as one token after a space, kept if
each reference tokenizer also encodes `` word`` as one token: about 20,000 words.

**Character classes.** Each ideograph of U+3400-9FFF and each Thai character, encoded alone by
every reference tokenizer: the ideographs none needs more than one token for (cheap), the ones
one of them needs 3 for (costly), and the Thai characters one of them needs 2 for.

**Fit.** One row per fit message (every message of :func:`~.corpus.messages`), plus long rows
(each class's messages joined, and each chat language's lines joined) so that the linear part
alone stays safe on long texts of one script. The target of a row is the largest message-level
count: each tokenizer's count plus its framing (:data:`~.reference_tokenizers.FRAMING`), minus
the estimator's own framing (5). A linear program then finds weights ``w`` with

    w . features(text) >= (1 + MARGIN) * target - SLACK     for every row

(the result is rounded up, so ``SLACK`` < 1 is the ceiling's own room) that minimize the estimate
on English (prose, chat, generated English, technical English; each class weighted by its total)
plus a tenth of that on every other class. Weights are bounded below and above by what a byte-
level BPE can do: a character never costs more tokens than its UTF-8 bytes, and groups the fit
corpus barely covers (U+1000-1FFF, U+E000-FFFF) cost their byte count; a class of characters
(one-token ideographs, costly ideographs, Thai, Braille) never costs less, group weight plus the
class's adjustment, than one of its characters costs alone (:data:`FLOORS`).
"""

from __future__ import annotations

import gzip
import math
import re
import sys
from pathlib import Path

from context_manager.counting import estimate_safe
from context_manager.counting.tiktoken_loader import load_encoding

from .corpus import FIT_SEEDS, _chat_languages, _chat_lines, _fold, messages
from .reference_tokenizers import message_tokens, reference_tokenizers

MARGIN = 0.05
SLACK = 0.5
OVERHEAD = 5  # SafeEstimator's default message_overhead
ENGLISH = ("english", "english_docs", "prose", "chat")
#: (low, high) per feature; unlisted features are >= 0.
BOUNDS = {
    # One pre-token each in every cl100k-style pre-tokenizer (o200k, cl100k, Llama 3, Qwen): the
    # space before a number, a run of line breaks, and a run of 2+ spaces or tabs (all but the
    # space a word takes).
    "space_digit": (1.0, None),
    "newline_runs": (1.0, None),
    # Long runs: o200k and DeepSeek need 8 tokens for 120 line breaks, DeepSeek 15 for 120 tabs.
    "newlines": (0.1, None),
    "tabs": (0.125, None),
    "space_runs": (1.0, None),
    # o200k reads "don't" as one pre-token, the others split it: a contraction saves at most
    # about half a token. Looser, the fit trades it against other features and undercounts
    # held-back Latin-script chat (Qwen: 0.92 with -0.97).
    "contractions": (-0.6, 0.0),
    # Every text is at least a token (the estimate also never returns 0 for one).
    "const": (0.05, None),
    "latin1": (1.0, 2.0),
    "latin_ext": (1.0, 2.0),
    "greek": (0.0, 2.0),
    "cyrillic": (0.0, 2.0),
    "hebrew": (0.0, 2.0),
    "arabic": (0.0, 2.0),
    "arabic_ext": (0.0, 2.0),
    "indic": (0.0, 3.0),
    "thai": (0.0, 3.0),
    "devanagari": (0.0, 3.0),
    "misc3": (3.0, 3.0),
    "symbols": (1.0, 3.0),
    "cjk": (0.0, 3.0),
    "hangul": (0.0, 3.0),
    "specials": (3.0, 3.0),
    "astral": (1.0, 4.0),
    # Two-byte scripts few tokenizers merge (Armenian, Syriac, Thaana, NKo, Cyrillic Supplement):
    # cl100k spends a token a byte on them, and the fit corpus has none of them.
    "armenian": (2.0, 2.0),
    "syriac": (2.0, 2.0),
    # Adjustments of the group weights above, within what the bytes allow.
    "cjk_cheap": (-3.0, 0.0),
    "cjk_costly": (0.0, 3.0),
    "astral_cjk": (0.0, 3.0),
    "thai_rare": (0.0, 3.0),
    "braille": (0.0, 2.0),
    # A space before an ideograph, Thai letter or Braille cell is a token of its own in cl100k,
    # Qwen and DeepSeek (no pre-token joins them); never more than its one byte.
    "space_wide": (0.0, 1.0),
}
#: What one character of a class costs at least, alone (no neighbour to merge with), in some
#: reference tokenizer: the sum of its group's weight and the class's adjustment may not go below
#: it. Without this the fit lowered the one-token ideographs to 0.88 a character (cjk_cheap
#: -0.95), which Chinese prose allows (common pairs merge) and random or word-segmented
#: ideographs do not (0.49-0.92x of cl100k).
FLOORS = {
    ("cjk", "cjk_cheap"): 1.0,
    ("cjk", "cjk_costly"): 3.0,
    ("astral", "astral_cjk"): 4.0,
    ("thai", "thai_rare"): 2.0,
    ("symbols", "braille"): 3.0,
    # ... and after a space (word-segmented text, glossaries): no pre-token joins the space to
    # the character, and cl100k and Qwen spend two tokens on " " plus one of the one-token
    # ideographs in five of them. The mean over 600 seeded characters of each class, in the
    # tokenizer that needs the most: one-token ideographs 2.2 (cl100k, Qwen), costly ones 3.45
    # (cl100k), costly Thai 3.0 (cl100k).
    ("space_wide", "cjk", "cjk_cheap"): 2.2,
    ("space_wide", "cjk", "cjk_costly"): 3.45,
    ("space_wide", "thai", "thai_rare"): 3.0,
    # A word of the common-word list right after a tab or a comma (a sheet's cell: no space to
    # merge with, so it often splits) costs, with its separator, 2.65 and 2.68 tokens on
    # average (4,000 seeded words, DeepSeek V3; the others 2.36-2.58): the fit's tables hold
    # the most frequent words, which cost less.
    ("common_words", "tabs", "tab_words"): 2.65,
    ("common_words", "punct", "comma_words"): 2.68,
}


def write_words() -> Path:
    encoding = load_encoding("cl100k_base")
    refs = reference_tokenizers()
    words = set()
    for token in encoding.token_byte_values():
        if re.fullmatch(rb" [a-z]+", token):
            word = token[1:].decode()
            if all(count(" " + word) == 1 for count in refs.values()):
                words.add(word)
    path = Path(estimate_safe.__file__).parent.parent / "data" / estimate_safe.WORDS_FILE
    data = "\n".join(sorted(words)).encode() + b"\n"
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"{len(words)} words -> {path}")
    return path


def write_chars() -> Path:
    refs = reference_tokenizers()

    def cost(char: str) -> int:
        return max(count(char) for count in refs.values())

    ideographs = [chr(c) for c in range(0x3400, 0xA000)]
    costs = {char: cost(char) for char in ideographs}
    cheap = "".join(c for c in ideographs if costs[c] == 1)
    costly = "".join(c for c in ideographs if costs[c] >= 3)
    thai = "".join(chr(c) for c in range(0x0E00, 0x0E80) if cost(chr(c)) >= 2)
    path = Path(estimate_safe.__file__).parent.parent / "data" / estimate_safe.CHARS_FILE
    data = "\n".join((cheap, costly, thai)).encode() + b"\n"
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"{len(cheap)} cheap, {len(costly)} costly ideographs, {len(thai)} Thai -> {path}")
    return path


def rows() -> list[tuple[str, str, int]]:
    """(class, text, target) for every fit row (see the module docstring)."""
    refs = reference_tokenizers()

    def target(text: str) -> int:
        return message_tokens({name: count(text) for name, count in refs.items()}) - OVERHEAD

    out = []
    for seed in FIT_SEEDS:
        for name, texts in messages(seed).items():
            out.extend((name, text, target(text)) for text in texts)
            joined = "\n".join(texts)
            out.append(("long", joined, target(joined)))
        for language in _chat_languages():
            lines = [line for line in _chat_lines(language) if _fold(line) == seed]
            if lines:
                joined = "\n".join(lines)
                out.append(("long", joined, target(joined)))
    return out


def fit() -> tuple[float, ...]:
    import numpy as np
    from scipy.optimize import linprog

    data = rows()
    x = np.array([estimate_safe.features(text) for _, text, _ in data])
    t = np.array([float(target) for _, _, target in data])
    totals: dict[str, float] = {}
    for (name, _, _), target in zip(data, t, strict=True):
        totals[name] = totals.get(name, 0.0) + target + OVERHEAD
    share = np.array([(1.0 if name in ENGLISH else 0.1) / totals[name] for name, _, _ in data])
    bounds = [BOUNDS.get(name, (0.0, None)) for name in estimate_safe.FEATURES]
    index = {name: k for k, name in enumerate(estimate_safe.FEATURES)}
    floors = np.zeros((len(FLOORS), len(index)))
    for row, pair in enumerate(FLOORS):
        floors[row, [index[name] for name in pair]] = 1.0
    result = linprog(
        share @ x,
        A_ub=np.vstack((-x, -floors)),
        b_ub=np.concatenate((-((1 + MARGIN) * t - SLACK), -np.array(list(FLOORS.values())))),
        bounds=bounds,
        method="highs",
    )
    if result.status != 0:
        raise SystemExit(f"no fit: {result.message}")
    weights = tuple(math.ceil(w * 10_000) / 10_000 for w in result.x)  # rounded up
    return weights


def main(argv: list[str]) -> None:
    command = argv[1] if len(argv) > 1 else "fit"
    if command == "words":
        write_words()
        write_chars()
        return
    weights = fit()
    print("WEIGHTS = (")
    for name, weight in zip(estimate_safe.FEATURES, weights, strict=True):
        print(f"    {weight!r},  # {name}")
    print(")")


if __name__ == "__main__":
    main(sys.argv)
