"""TiktokenCounter: OpenAI's published API numbers, framing rules, tools, images, the text cache.

Expected numbers come from OpenAI's cookbook "How to count tokens with tiktoken", where each was
checked against the API's ``prompt_tokens``, from OpenAI's vision pricing examples, or from the
real tokenizer at test time.
"""

from __future__ import annotations

import pytest

pytest.importorskip("tiktoken")

from context_manager.counting.tiktoken_counter import TiktokenCounter
from context_manager.errors import ConfigurationError, InvalidMessageError
from context_manager.messages import Image, Message, normalize

COOKBOOK_MESSAGES = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates corporate "
        "jargon into plain English.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "New synergies will help drive top-line growth.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Things working well together will increase revenue.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more bandwidth to touch base on opportunities "
        "for increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean for the client "
        "deliverable.",
    },
]

WEATHER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {
                        "type": "string",
                        "description": "The city and state, e.g. San Francisco, CA",
                    },
                    "unit": {
                        "type": "string",
                        "description": "The unit of temperature to return",
                        "enum": ["celsius", "fahrenheit"],
                    },
                },
                "required": ["location"],
            },
        },
    }
]
WEATHER_MESSAGES = [
    {
        "role": "system",
        "content": "You are a helpful assistant that can answer to questions about the weather.",
    },
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]


@pytest.fixture(scope="module")
def gpt4o() -> TiktokenCounter:
    return TiktokenCounter("gpt-4o")


@pytest.fixture(scope="module")
def gpt4() -> TiktokenCounter:
    return TiktokenCounter("gpt-4")


def _prompt(counter: TiktokenCounter, raw: list[dict[str, object]], tools: object = None) -> int:
    return counter.count_prompt([normalize(m) for m in raw], tools)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("model", "api_prompt_tokens"),
    [
        ("gpt-4o", 124),
        ("gpt-4o-mini", 124),
        ("gpt-4", 129),
        ("gpt-4-0613", 129),
        ("gpt-3.5-turbo", 129),
    ],
)
def test_messages_with_names_equal_the_api_numbers_the_cookbook_published(
    model: str, api_prompt_tokens: int
) -> None:
    assert _prompt(TiktokenCounter(model), COOKBOOK_MESSAGES) == api_prompt_tokens


@pytest.mark.parametrize(
    ("model", "api_prompt_tokens"),
    [("gpt-4o", 101), ("gpt-4o-mini", 101), ("gpt-4", 105), ("gpt-3.5-turbo", 105)],
)
def test_tool_definitions_equal_the_api_numbers_the_cookbook_published(
    model: str, api_prompt_tokens: int
) -> None:
    assert _prompt(TiktokenCounter(model), WEATHER_MESSAGES, WEATHER_TOOLS) == api_prompt_tokens


def test_message_formula_is_three_plus_role_plus_content(gpt4o: TiktokenCounter) -> None:
    enc = gpt4o.encoding
    text = "Bonjour, ça va ? 👋🏽 日本語も"
    expected = 3 + len(enc.encode_ordinary("user")) + len(enc.encode_ordinary(text))
    assert gpt4o.count_message(Message("user", text)) == expected
    assert gpt4o.prompt_overhead == 3


def test_name_costs_its_tokens_plus_one_and_chatml_replaces_the_role(
    gpt4o: TiktokenCounter,
) -> None:
    chatml = TiktokenCounter("gpt-4o", chat_format="chatml")
    plain, named = Message("user", "hi there"), Message("user", "hi there", name="alice_bob")
    name_tokens = len(gpt4o.encoding.encode_ordinary("alice_bob"))
    role_tokens = len(gpt4o.encoding.encode_ordinary("user"))
    assert gpt4o.count_message(named) == gpt4o.count_message(plain) + name_tokens + 1
    assert chatml.count_message(plain) == gpt4o.count_message(plain)
    assert chatml.count_message(named) == gpt4o.count_message(plain) - role_tokens + name_tokens


def test_gpt35_chatml_frames_messages_with_newlines() -> None:
    gpt35 = TiktokenCounter("gpt-3.5-turbo", chat_format="chatml")
    gpt4 = TiktokenCounter("gpt-4", chat_format="chatml")
    message = Message("user", "hello")
    assert gpt35.count_message(message) == gpt4.count_message(message) + 1


def test_special_token_text_is_counted_as_plain_text(gpt4o: TiktokenCounter) -> None:
    assert gpt4o.count_text("<|endoftext|>") == len(gpt4o.encoding.encode_ordinary("<|endoftext|>"))
    assert gpt4o.count_text("<|endoftext|>") > 1


def test_tool_calls_and_results_are_counted(gpt4o: TiktokenCounter) -> None:
    count = gpt4o.count_text
    call = normalize(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": '{"tz":"CET"}'},
                },
            ],
        }
    )
    bare = gpt4o.count_message(Message("assistant"))
    expected = bare + sum(
        3 + count(name) + count(args)
        for name, args in (("get_weather", '{"city":"Paris"}'), ("get_time", '{"tz":"CET"}'))
    )
    assert gpt4o.count_message(call) == expected

    openai_result = normalize({"role": "tool", "tool_call_id": "c1", "content": "18°C, sunny"})
    anthropic_result = normalize(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "18°C, sunny"}],
        }
    )
    assert gpt4o.count_message(openai_result) == 3 + count("tool") + count("18°C, sunny")
    # The embedded result costs what the equivalent OpenAI tool message would.
    assert gpt4o.count_message(anthropic_result) == (
        gpt4o.count_message(Message("user")) + gpt4o.count_message(openai_result)
    )


def test_thinking_and_unknown_parts_are_not_free(gpt4o: TiktokenCounter) -> None:
    base = gpt4o.count_message(Message("assistant", "answer"))
    thinking = Message("assistant", "answer", thinking="let me think about it")
    assert gpt4o.count_message(thinking) == base + gpt4o.count_text("let me think about it")
    other = normalize({"role": "user", "content": [{"type": "audio", "id": "a1"}]})
    assert gpt4o.count_message(other) > gpt4o.count_message(Message("user"))


@pytest.mark.parametrize(
    ("image", "tokens"),
    [
        (Image("low", 4096, 4096), 85),
        (Image("high", 1024, 1024), 765),  # 768x768 -> 4 tiles
        (Image("high", 2048, 4096), 1105),  # OpenAI's example: 768x1536 -> 6 tiles
        (Image("high", 512, 512), 255),  # no upscaling: 1 tile
        (Image(None, 4096, 8192), 1105),  # auto with a size: as high
        (Image("high", None, None), 765),  # size unknown: documented default
    ],
)
def test_image_tile_formula(gpt4o: TiktokenCounter, image: Image, tokens: int) -> None:
    message = Message("user", images=(image,))
    assert gpt4o.count_message(message) - gpt4o.count_message(Message("user")) == tokens


def test_gpt4o_mini_images_cost_more_tokens() -> None:
    mini = TiktokenCounter("gpt-4o-mini-2024-07-18")
    message = Message("user", images=(Image("high", 1024, 1024),))
    assert mini.count_message(message) - mini.count_message(Message("user")) == 2833 + 4 * 5667


def test_count_prompt_is_messages_plus_priming_plus_tools(gpt4o: TiktokenCounter) -> None:
    messages = [normalize(m) for m in WEATHER_MESSAGES]
    per_message = sum(gpt4o.count_message(m) for m in messages)
    assert gpt4o.count_prompt(messages) == per_message + 3
    assert gpt4o.count_prompt(messages, WEATHER_TOOLS) == (
        per_message + 3 + gpt4o.count_tools(WEATHER_TOOLS)
    )
    assert gpt4o.message_costs(messages) == [gpt4o.count_message(m) for m in messages]


def test_tool_shapes_openai_bare_and_anthropic_cost_the_same(gpt4o: TiktokenCounter) -> None:
    function = WEATHER_TOOLS[0]["function"]
    anthropic = {
        "name": function["name"],
        "description": function["description"],
        "input_schema": function["parameters"],
    }
    openai_cost = gpt4o.count_tools(WEATHER_TOOLS)
    assert gpt4o.count_tools([function]) == openai_cost
    assert gpt4o.count_tools([anthropic]) == openai_cost
    assert gpt4o.count_tools([]) == 0


def test_tool_without_description_or_parameters(gpt4o: TiktokenCounter) -> None:
    assert gpt4o.count_tools([{"name": "ping"}]) == 7 + gpt4o.count_text("ping:") + 12


def test_bad_tool_definition_raises_a_typed_error(gpt4o: TiktokenCounter) -> None:
    with pytest.raises(InvalidMessageError, match="tool definition 0"):
        gpt4o.count_tools(["not a dict"])
    with pytest.raises(InvalidMessageError, match="name"):
        gpt4o.count_tools([{"description": "no name"}])


def test_identical_texts_are_encoded_once() -> None:
    counter = TiktokenCounter("gpt-4o", cache_size=8)
    system = Message("system", "You are a careful assistant. " * 50)
    for _ in range(100):
        counter.count_message(system)
    info = counter.cache_info()
    assert info.misses == 1
    assert info.hits == 99
    for i in range(20):  # bounded: old entries leave
        counter.count_text(f"text {i}")
    assert counter.cache_info().currsize == 8


def test_long_texts_are_cached_in_a_small_bounded_tier() -> None:
    from context_manager.counting.cache import LONG_ENTRIES, LONG_TEXT

    counter = TiktokenCounter("gpt-4o", cache_size=1000)
    long_prompt = "Follow the style guide. " * (LONG_TEXT // 10)
    first = counter.count_text(long_prompt)
    assert counter.count_text(long_prompt) == first
    assert counter.cache_info().hits == 1
    for i in range(LONG_ENTRIES + 10):
        counter.count_text(f"{i} " + long_prompt)
    assert counter.cache_info().currsize == LONG_ENTRIES


def test_cache_can_be_disabled() -> None:
    counter = TiktokenCounter("gpt-4o", cache_size=0)
    assert counter.count_text("hello world") == 2
    assert counter.cache_info().currsize == 0


def test_encoding_resolution() -> None:
    assert TiktokenCounter("gpt-4o-2024-08-06").encoding_name == "o200k_base"
    assert TiktokenCounter("gpt-4-0613").encoding_name == "cl100k_base"
    assert TiktokenCounter("gpt-5-mini").encoding_name == "o200k_base"
    assert TiktokenCounter(encoding="cl100k_base").name == "tiktoken:cl100k_base"
    assert TiktokenCounter().encoding_name == "o200k_base"


def test_bad_options_raise_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="chat_format"):
        TiktokenCounter("gpt-4o", chat_format="harmony")
    with pytest.raises(ConfigurationError, match="no known tiktoken encoding"):
        TiktokenCounter("claude-sonnet-4-5")
    with pytest.raises(ConfigurationError, match="cache_size"):
        TiktokenCounter("gpt-4o", cache_size=-1)
