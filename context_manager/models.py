"""Model name -> context window and output limit; dated variants resolve by longest prefix."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class ModelInfo:
    name: str
    context_window: int
    max_output_tokens: int
    encoding: str | None = None  # tiktoken encoding, when the model's tokenizer is public


_MODELS: dict[str, ModelInfo] = {}


def register_model(info: ModelInfo) -> None:
    """Add or replace a model; later registrations win over built-ins."""
    _MODELS[info.name] = info


for _info in (
    ModelInfo("gpt-4o", 128_000, 16_384, "o200k_base"),
    ModelInfo("gpt-4o-mini", 128_000, 16_384, "o200k_base"),
    ModelInfo("gpt-4", 8_192, 8_192, "cl100k_base"),
    ModelInfo("gpt-3.5-turbo", 16_385, 4_096, "cl100k_base"),
    ModelInfo("claude-sonnet-4", 200_000, 64_000, None),
):
    register_model(_info)


def find_model(name: str) -> ModelInfo | None:
    """Exact name, else the longest registered prefix (``gpt-4o-2024-08-06`` -> ``gpt-4o``)."""
    info = _MODELS.get(name)
    if info is not None:
        return info
    best: ModelInfo | None = None
    for key, candidate in _MODELS.items():
        if name.startswith(key) and (best is None or len(key) > len(best.name)):
            best = candidate
    return best


def get_model(name: str) -> ModelInfo:
    info = find_model(name)
    if info is None:
        raise ConfigurationError(
            f"unknown model {name!r}: register it with context_manager.models.register_model"
            " or pass max_tokens"
        )
    return info
