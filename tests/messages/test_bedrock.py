"""Bedrock Converse messages (``toolUse`` / ``toolResult`` / ``{"text"}`` blocks, as boto3
returns them): understood by every rule, trimmed to a valid request, judged by ``validate()``.

Every kept context is checked by an independent checker written here from the Converse docs
(the first message is a user turn, roles alternate, each ``toolResult`` answers a ``toolUse`` of
the assistant turn just before it and every ``toolUse`` is answered in the next turn) and by
botocore's own parameter validation of a ``Converse`` request.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from context_manager import trim
from context_manager.providers import validate

botocore_session = pytest.importorskip("botocore.session")
botocore_validate = pytest.importorskip("botocore.validate")


def converse_shape() -> Any:
    session = botocore_session.get_session()
    model = session.get_service_model("bedrock-runtime")
    return model.operation_model("Converse").input_shape


def session_turns(turns: int) -> list[dict[str, Any]]:
    """A Converse tool loop: user asks, the assistant calls two tools, the results come back in
    one user turn, the assistant answers."""
    messages: list[dict[str, Any]] = []
    for t in range(turns):
        messages.append({"role": "user", "content": [{"text": f"step {t}: look at file {t}"}]})
        calls = [
            {"toolUse": {"toolUseId": f"tu_{t}_{k}", "name": "read", "input": {"path": f"{t}.{k}"}}}
            for k in range(2)
        ]
        messages.append({"role": "assistant", "content": [{"text": "reading"}, *calls]})
        results = [
            {
                "toolResult": {
                    "toolUseId": f"tu_{t}_{k}",
                    "content": [{"text": f"contents of {t}.{k} " * 20}],
                    "status": "success",
                }
            }
            for k in range(2)
        ]
        messages.append({"role": "user", "content": results})
        messages.append({"role": "assistant", "content": [{"text": f"done with step {t}"}]})
    return messages


def converse_problems(messages: list[dict[str, Any]]) -> list[str]:
    """The Converse rules, independently of the library."""
    problems = []
    if not messages or messages[0]["role"] != "user":
        problems.append("the first message is not a user turn")
    for before, after in itertools.pairwise(messages):
        if before["role"] == after["role"]:
            problems.append(f"two {after['role']} turns in a row")
    for i, message in enumerate(messages):
        uses = [b["toolUse"]["toolUseId"] for b in message["content"] if "toolUse" in b]
        results = [b["toolResult"]["toolUseId"] for b in message["content"] if "toolResult" in b]
        if results:
            previous = messages[i - 1]["content"] if i else []
            asked = [b["toolUse"]["toolUseId"] for b in previous if "toolUse" in b]
            if sorted(results) != sorted(asked):
                problems.append(f"message {i}: results {results} do not answer {asked}")
        if uses:
            following = messages[i + 1]["content"] if i + 1 < len(messages) else None
            answered = [b["toolResult"]["toolUseId"] for b in following or [] if "toolResult" in b]
            if following is not None and sorted(answered) != sorted(uses):
                problems.append(f"message {i}: calls {uses} are not all answered")
    return problems


@pytest.mark.parametrize("budget", [*range(200, 2_000, 61), 20_000])
def test_trimmed_bedrock_sessions_are_valid_converse_requests(budget: int) -> None:
    history = session_turns(25)
    shape = converse_shape()
    for end in range(3, len(history) + 1):  # every request of the session
        kept = trim(history[:end], budget, provider="bedrock")
        assert converse_problems(kept) == [], (end, budget)
        assert validate(kept, "bedrock") == []
        if end % 10 == 0:  # botocore's own check of the request's shapes
            report = botocore_validate.ParamValidator().validate(
                {"modelId": "anthropic.claude-3-5-sonnet", "messages": kept}, shape
            )
            assert not report.has_errors(), report.generate_report()


def test_validate_finds_an_orphan_tool_result() -> None:
    history = session_turns(3)
    orphan = history[2:]  # starts with the user turn holding results of a dropped call
    assert converse_problems(orphan)
    problems = validate(orphan, "bedrock")
    assert problems, "validate() must see the orphan toolResult"
    assert any("tu_0_0" in str(problem) for problem in problems)


def test_a_tool_use_without_its_id_is_a_typed_error() -> None:
    from context_manager.errors import InvalidMessageError

    with pytest.raises(InvalidMessageError, match="toolUseId"):
        trim([{"role": "assistant", "content": [{"toolUse": {"name": "read"}}]}], 1000)


def png(width: int, height: int) -> bytes:
    header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"
    return header + width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes(60_000)


IMAGE = png(1024, 768)


def tokens(messages: list[Any], counter: str | None, model: str | None = None) -> int:
    from context_manager import MessageContextManager

    manager = MessageContextManager(100_000, counter=counter, model=model, reserve_tokens=0)
    for message in messages:
        manager.add(message)
    return manager.token_count


@pytest.mark.parametrize(("counter", "model"), [("chars", None), (None, None), (None, "gpt-4o")])
def test_an_image_block_of_bytes_costs_what_the_same_image_costs_elsewhere(
    counter: str | None, model: str | None
) -> None:
    import base64

    url = "data:image/png;base64," + base64.b64encode(IMAGE).decode()
    openai = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}
    converse = {
        "role": "user",
        "content": [{"image": {"format": "png", "source": {"bytes": IMAGE}}}],
    }
    botocore_validate.validate_parameters(
        {"modelId": "m", "messages": [converse]}, converse_shape()
    )  # the request boto3 sends, bytes and all
    expected = tokens([openai], counter, model)
    assert expected < 2_000  # an image, not 60 KB of text
    assert tokens([converse], counter, model) == expected


def test_images_and_documents_a_tool_returns_are_priced_as_media() -> None:
    pdf = b"%PDF-1.4\n" + bytes(40_000)
    call = {
        "role": "assistant",
        "content": [{"toolUse": {"toolUseId": "t1", "name": "shot", "input": {}}}],
    }
    result = {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": "t1",
                    "content": [
                        {"text": "here"},
                        {"image": {"format": "png", "source": {"bytes": IMAGE}}},
                        {"document": {"format": "pdf", "name": "r", "source": {"bytes": pdf}}},
                    ],
                }
            }
        ],
    }
    botocore_validate.validate_parameters(
        {"modelId": "m", "messages": [{"role": "user", "content": [{"text": "go"}]}, call, result]},
        converse_shape(),
    )
    assert tokens([call, result], None) < 10_000  # 100 KB of bytes are not counted as text
    assert validate([{"role": "user", "content": [{"text": "go"}]}, call, result]) == []
