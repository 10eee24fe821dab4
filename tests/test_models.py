"""The model registry: families, dated variants, provider prefixes, user registrations."""

from __future__ import annotations

import pytest

from context_manager.errors import ConfigurationError
from context_manager.models import ModelInfo, find_model, get_model, list_models, register_model


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("gpt-4o", "gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4.1-nano-2025-04-14", "gpt-4.1-nano"),
        ("gpt-5-2025-08-07", "gpt-5"),
        ("gpt-5-mini", "gpt-5-mini"),
        ("o3-mini-2025-01-31", "o3-mini"),
        ("o4-mini", "o4-mini"),
        ("o1-2024-12-17", "o1"),
        ("gpt-4-0613", "gpt-4"),
        ("gpt-4-turbo-2024-04-09", "gpt-4-turbo"),
        ("gpt-3.5-turbo-0125", "gpt-3.5-turbo"),
        ("gpt-oss-120b", "gpt-oss"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-3-5-haiku-20241022", "claude-3-5-haiku"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
        ("gemini-2.5-flash-preview-09-2025", "gemini-2.5-flash"),
        ("gemini-3-pro-preview", "gemini-3-pro"),
        ("gpt-5.1-codex", "gpt-5.1"),
        ("gpt-5-codex", "gpt-5-codex"),
        ("o3-pro-2025-06-10", "o3-pro"),
        ("llama3.1:8b", "llama3.1"),
        ("llama3.2:3b-instruct-q4_K_M", "llama3.2"),
        ("llama3:8b", "llama3"),
        ("qwen2.5:7b", "qwen2.5"),
        ("qwen3:30b-a3b", "qwen3"),
        ("deepseek-r1:671b", "deepseek-r1"),
        ("deepseek-v3.1", "deepseek-v3"),
        ("mistral-nemo:12b", "mistral-nemo"),
        ("grok-4-0709", "grok-4"),
        ("grok-4-fast-reasoning", "grok-4-fast"),
        ("grok-3-mini", "grok-3-mini"),
        ("kimi-k2-0711-preview", "kimi-k2-0711"),
        ("deepseek-chat", "deepseek-chat"),
        ("deepseek-reasoner", "deepseek-reasoner"),
        ("qwen3-235b-a22b", "qwen3"),
        ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5"),
        ("kimi-k2-0905-preview", "kimi-k2"),
        ("moonshot-v1-128k", "moonshot-v1-128k"),
        ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.3"),
        ("mistral-large-2411", "mistral-large"),
        ("openai/gpt-4o", "gpt-4o"),
        ("GPT-4O", "gpt-4o"),
    ],
)
def test_names_resolve_to_their_family(name: str, family: str) -> None:
    info = find_model(name)
    assert info is not None
    assert info.name == family


def test_openai_models_have_tiktoken_encodings() -> None:
    assert get_model("gpt-4o").encoding == "o200k_base"
    assert get_model("gpt-5").encoding == "o200k_base"
    assert get_model("o3").encoding == "o200k_base"
    assert get_model("gpt-4").encoding == "cl100k_base"
    assert get_model("gpt-oss-20b").encoding == "o200k_harmony"
    assert get_model("gpt-4o").counter_spec == "tiktoken:o200k_base"


def test_models_without_public_tokenizer_use_the_safe_estimate() -> None:
    claude = get_model("claude-sonnet-4")
    assert claude.counter_spec == "estimate"
    assert claude.provider == "anthropic"
    for name in ("gemini-2.5-pro", "llama3.1:8b", "qwen3", "kimi-k2", "mistral-large", "grok-4"):
        assert get_model(name).counter_spec == "estimate", name
    assert get_model("deepseek-chat").counter_spec == "deepseek"


def test_windows_and_limits() -> None:
    assert get_model("gpt-4o").context_window == 128_000
    assert get_model("gpt-4o").max_output_tokens == 16_384
    assert get_model("gpt-4.1").context_window == 1_047_576
    assert get_model("claude-sonnet-4-5").context_window == 200_000
    for info in list_models():
        assert info.context_window > 0
        assert 0 <= info.max_output_tokens <= info.context_window, info.name


def test_every_family_of_the_issue_is_present() -> None:
    providers = {info.provider for info in list_models()}
    assert {
        "openai",
        "anthropic",
        "google",
        "deepseek",
        "qwen",
        "moonshot",
        "meta",
        "mistral",
        "xai",
    } <= providers


def test_unknown_names_list_close_matches() -> None:
    with pytest.raises(ConfigurationError, match=r"did you mean 'gpt-4\.1'"):
        get_model("gtp-4.1")


def test_user_registration_wins_and_resolves_by_prefix() -> None:
    register_model(ModelInfo("my-llm", 10_000, 1_000, provider="me", chars_per_token=3.0))
    assert get_model("my-llm-v1.2").context_window == 10_000
    register_model(ModelInfo("my-llm", 20_000, 2_000, provider="me"))
    assert get_model("my-llm").context_window == 20_000


def test_unknown_and_invalid_models_raise_configuration_errors() -> None:
    assert find_model("no-such-model") is None
    with pytest.raises(ConfigurationError, match="register_model"):
        get_model("no-such-model")
    with pytest.raises(ConfigurationError, match="context_window"):
        register_model(ModelInfo("broken", 0, 10))
    with pytest.raises(ConfigurationError, match="chars_per_token"):
        register_model(ModelInfo("broken", 10, 10, chars_per_token=0))


@pytest.mark.parametrize(
    ("bedrock_id", "bare"),
    [
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet-20240620"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"),
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"),
    ],
)
def test_a_bedrock_model_id_is_the_model_it_names(bedrock_id: str, bare: str) -> None:
    """Bedrock ids (Converse's ``modelId``) carry a cross-region prefix and the vendor."""
    from context_manager import MessageContextManager
    from context_manager.models import find_model

    assert find_model(bedrock_id) is not None
    assert find_model(bedrock_id) == find_model(bare)
    assert MessageContextManager(model=bedrock_id).max_tokens == find_model(bare).context_window
