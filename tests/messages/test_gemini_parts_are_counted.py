"""Every part kind google-genai defines costs what it holds: code the model ran with its
built-in tool and what it printed, media a tool returned inside ``function_response.parts``,
server-side tool calls, and each of them in the REST API's camelCase spelling as in the SDK's
snake_case one. Contents are built with the real ``google.genai.types`` classes; their dict forms
are the SDK's own JSON (``model_dump(by_alias=True)`` is the REST body, camelCase)."""

from __future__ import annotations

import math
import struct
import zlib
from typing import Any

import pytest
from google.genai import types

from context_manager import MessageContextManager, normalize, trim

COUNTERS = [None, "chars"]  # the default safe estimate, and Pi's chars/4 arithmetic

CODE = "import math\n" + "".join(f"print({i}, math.sqrt({i}))\n" for i in range(60))
OUTPUT = "row,value\n" + "".join(f"{i},{i * i}\n" for i in range(600))


def manager(counter: str | None) -> MessageContextManager:
    return (
        MessageContextManager(10**6)
        if counter is None
        else MessageContextManager(10**6, counter=counter)
    )


def png(width: int, height: int) -> bytes:
    """A real PNG file (signature, IHDR, IDAT, IEND) of ``width`` x ``height`` black pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    rows = b"".join(b"\x00" + b"\x00" * (width * 3) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


PDF = b"%PDF-1.4\n" + b"".join(b"%d 0 obj << /Type /Page >> endobj\n" % i for i in range(1, 4))


def code_turn() -> types.Content:
    return types.Content(
        role="model",
        parts=[
            types.Part(executable_code=types.ExecutableCode(code=CODE, language="PYTHON")),
            types.Part(
                code_execution_result=types.CodeExecutionResult(outcome="OUTCOME_OK", output=OUTPUT)
            ),
            types.Part(text="Done."),
        ],
    )


def rest(content: types.Content) -> dict[str, Any]:
    """The REST JSON of a content (camelCase keys, bytes as base64), as the SDK sends it."""
    return content.model_dump(mode="json", by_alias=True, exclude_none=True)


def snake(content: types.Content) -> dict[str, Any]:
    """The same content as a dict with the SDK's Python (snake_case) field names."""
    return content.model_dump(mode="json", exclude_none=True)


@pytest.mark.parametrize("counter", COUNTERS)
@pytest.mark.parametrize("form", ["sdk", "rest", "snake"])
def test_a_code_execution_turn_costs_its_code_and_output(counter: str | None, form: str) -> None:
    turn = code_turn()
    given = {"sdk": turn, "rest": rest(turn), "snake": snake(turn)}[form]
    floor = (len(CODE) + len(OUTPUT) + len("Done.")) / 4  # chars/4 of the text it carries
    assert manager(counter).count_message(given) >= floor
    # what the model said stays its text; the code and its output are charged beside it
    assert normalize(given).text == "Done."


def _image_cost(counter: str | None, parts: list[types.Part], with_image: list[types.Part]) -> int:
    m = manager(counter)
    return m.count_message(types.Content(role="user", parts=with_image)) - m.count_message(
        types.Content(role="user", parts=parts)
    )


@pytest.mark.parametrize("counter", COUNTERS)
@pytest.mark.parametrize(
    ("mime", "data"), [("image/png", png(1024, 768)), ("application/pdf", PDF)], ids=["png", "pdf"]
)
def test_media_in_a_function_response_costs_what_the_same_media_costs_as_a_part(
    counter: str | None, mime: str, data: bytes
) -> None:
    as_part = _image_cost(
        counter, [], [types.Part(inline_data=types.Blob(mime_type=mime, data=data))]
    )
    assert as_part > 0

    def response(*parts: types.FunctionResponsePart) -> types.Part:
        return types.Part(
            function_response=types.FunctionResponse(
                name="screenshot", response={"ok": True}, parts=list(parts)
            )
        )

    inside = types.FunctionResponsePart(
        inline_data=types.FunctionResponseBlob(mime_type=mime, data=data)
    )
    in_response = _image_cost(counter, [response()], [response(inside)])
    assert in_response == as_part


@pytest.mark.parametrize("counter", COUNTERS)
def test_a_file_in_a_function_response_costs_what_the_same_file_costs_as_a_part(
    counter: str | None,
) -> None:
    uri, mime = "gs://bucket/report.pdf", "application/pdf"
    as_part = _image_cost(
        counter, [], [types.Part(file_data=types.FileData(file_uri=uri, mime_type=mime))]
    )
    assert as_part > 0
    inside = types.FunctionResponsePart(
        file_data=types.FunctionResponseFileData(file_uri=uri, mime_type=mime)
    )
    fr = types.FunctionResponse(name="fetch", response={"ok": True})
    plain = types.Part(function_response=fr)
    with_file = types.Part(function_response=fr.model_copy(update={"parts": [inside]}))
    assert _image_cost(counter, [plain], [with_file]) == as_part


def _every_kind() -> list[types.Content]:
    """One content per part kind the reader models, plus a field it does not."""
    shot = png(640, 480)
    call = types.FunctionCall(name="lookup", args={"q": "x" * 300})
    return [
        types.Content(
            role="user",
            parts=[
                types.Part(
                    file_data=types.FileData(
                        file_uri="gs://bucket/report.pdf",
                        mime_type="application/pdf",
                        display_name="r",
                    )
                )
            ],
        ),
        types.Content(
            role="user",
            parts=[types.Part(inline_data=types.Blob(mime_type="image/png", data=shot))],
        ),
        types.Content(
            role="model", parts=[types.Part(function_call=call, thought_signature=b"s" * 600)]
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        name="lookup",
                        response={"answer": "y" * 300},
                        will_continue=False,
                        parts=[
                            types.FunctionResponsePart(
                                inline_data=types.FunctionResponseBlob(
                                    mime_type="image/png", data=shot
                                )
                            )
                        ],
                    )
                )
            ],
        ),
        code_turn(),
        types.Content(role="model", parts=[types.Part(text="step by step " * 40, thought=True)]),
    ]


@pytest.mark.parametrize("counter", COUNTERS)
def test_camel_case_and_snake_case_parts_count_the_same(counter: str | None) -> None:
    m = manager(counter)
    empty = m.count_message({"role": "user", "parts": []})
    for content in _every_kind():
        counts = {
            "sdk": m.count_message(content),
            "rest": m.count_message(rest(content)),
            "snake": m.count_message(snake(content)),
        }
        assert len(set(counts.values())) == 1, (content, counts)
        assert counts["sdk"] > empty + 50, (content, counts)  # every one carries real content
        assert normalize(rest(content)) == normalize(snake(content))


@pytest.mark.parametrize("counter", COUNTERS)
def test_a_server_side_tool_call_is_counted_by_its_json(counter: str | None) -> None:
    query = "weather in Lisbon tomorrow and the day after " * 20
    part = types.Part(
        tool_call=types.ToolCall(id="t1", tool_type="GOOGLE_SEARCH_WEB", args={"query": query})
    )
    content = types.Content(role="model", parts=[part])
    m = manager(counter)
    assert m.count_message(content) >= len(query) / 4
    assert m.count_message(rest(content)) == m.count_message(snake(content))


def _chars_of(content: types.Content) -> int:
    """chars/4 of the text a content carries, read from the SDK object itself."""
    chars = 0
    for part in content.parts or []:
        chars += len(part.text or "")
        chars += len(part.executable_code.code or "") if part.executable_code else 0
        chars += len(part.code_execution_result.output or "") if part.code_execution_result else 0
    return math.ceil(chars / 4)


@pytest.mark.parametrize("counter", COUNTERS)
@pytest.mark.parametrize("form", ["sdk", "rest"])
def test_trim_keeps_a_code_execution_history_inside_the_budget(
    counter: str | None, form: str
) -> None:
    contents: list[types.Content] = []
    for k in range(8):
        contents += [types.Content(role="user", parts=[types.Part(text=f"run {k}")]), code_turn()]
    contents.append(types.Content(role="user", parts=[types.Part(text="summarize")]))
    given = contents if form == "sdk" else [rest(c) for c in contents]
    budget = 5_000
    kept = trim(given, budget, counter=counter) if counter else trim(given, budget)
    assert kept and kept[-1] is given[-1]  # the caller's objects, as given
    assert all(any(k is g for g in given) for k in kept)
    assert sum(_chars_of(contents[given.index(k)]) for k in kept) <= budget
    assert sum(manager(counter).count_message(k) for k in kept) <= budget
    assert len(kept) < len(given)


@pytest.mark.parametrize("counter", COUNTERS)
def test_sdk_objects_inside_a_dict_part_count_as_their_json(counter: str | None) -> None:
    """``{"parts": [{"function_call": types.FunctionCall(...)}]}`` mixes the SDK's objects into
    a dict, as callers do: each counts what the same part written as plain JSON counts."""
    call = types.FunctionCall(name="get", args={"city": "Paris"})
    code = types.ExecutableCode(code=CODE, language=types.Language.PYTHON)
    mixed = {"role": "model", "parts": [{"function_call": call}, {"executable_code": code}]}
    plain = {
        "role": "model",
        "parts": [
            {"function_call": call.model_dump(mode="json", exclude_none=True)},
            {"executable_code": code.model_dump(mode="json", exclude_none=True)},
        ],
    }
    count = manager(counter).count_message
    assert count(mixed) == count(plain) >= len(CODE) / 4
    assert normalize(mixed).tool_calls == normalize(plain).tool_calls != ()


def test_a_camel_case_field_beside_its_unset_snake_case_twin_is_read() -> None:
    """A plain ``Part().model_dump()`` has every field, unset ones as None; a camelCase field
    added beside them is the one that holds the value."""
    part = {**types.Part().model_dump(), "functionCall": {"name": "get", "args": {"c": "P"}}}
    rec = normalize({"role": "model", "parts": [part]})
    assert [(c.name, c.arguments) for c in rec.tool_calls] == [("get", '{"c":"P"}')]
