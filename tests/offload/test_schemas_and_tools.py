"""The recall tool's schemas checked by each SDK's own request types (and sent through the
real clients to a scripted HTTP endpoint), and the framework tool objects run for real."""

from __future__ import annotations

import asyncio
import json
from typing import Any, get_type_hints

import httpx
import jsonschema
import pytest

from context_manager.offload import MemoryOffload
from context_manager.offload.schemas import (
    PARAMETERS,
    anthropic_tool,
    gemini_function,
    openai_tool,
    responses_tool,
)

TEXT = "\n".join(f"row {i}" for i in range(1, 501)) + "\nFACT: the cache TTL is 300s\n"


def keys_fit(value: dict[str, Any], typed_dict: Any) -> None:
    """``value`` holds every key ``typed_dict`` requires and none it does not declare."""
    declared = set(get_type_hints(typed_dict))
    assert set(value) <= declared, set(value) - declared
    assert typed_dict.__required_keys__ <= set(value)


def captured(handler_body: dict[str, Any], http: Any = httpx) -> tuple[Any, list[dict[str, Any]]]:
    """An HTTP client (of the SDK's HTTP package) whose server records each request body and
    answers ``handler_body``: the SDK builds and sends its real request, offline."""
    sent: list[dict[str, Any]] = []

    def handle(request: Any) -> Any:
        sent.append(json.loads(request.content))
        return http.Response(200, json=handler_body)

    return http.Client(transport=http.MockTransport(handle)), sent


def test_parameters_are_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(PARAMETERS)
    validator = jsonschema.Draft202012Validator(PARAMETERS)
    validator.validate({"handle": "cm-off:x", "lines": [1, 20], "max_tokens": 500})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"lines": [1, 2]})  # no handle
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"handle": "h", "path": "/etc"})


def test_openai_chat_tool_builds_a_real_request() -> None:
    import openai
    from openai.types.chat import ChatCompletionFunctionToolParam
    from openai.types.shared_params import FunctionDefinition

    tool = openai_tool()
    keys_fit(tool, ChatCompletionFunctionToolParam)
    keys_fit(tool["function"], FunctionDefinition)
    reply = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "ok"},
            }
        ],
    }
    http, sent = captured(reply)
    client = openai.OpenAI(api_key="test", base_url="http://llm.test/v1", http_client=http)
    client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}], tools=[tool]
    )
    assert sent[0]["tools"] == [tool]


def test_openai_responses_tool_builds_a_real_request() -> None:
    import openai
    from openai.types.responses import FunctionToolParam

    tool = responses_tool()
    keys_fit(tool, FunctionToolParam)
    reply = {
        "id": "r",
        "object": "response",
        "created_at": 0,
        "model": "gpt-4o",
        "status": "completed",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    http, sent = captured(reply)
    client = openai.OpenAI(api_key="test", base_url="http://llm.test/v1", http_client=http)
    client.responses.create(model="gpt-4o", input="hi", tools=[tool])  # type: ignore[list-item]
    assert sent[0]["tools"] == [tool]


def test_anthropic_tool_builds_a_real_request() -> None:
    import anthropic
    from anthropic.types import ToolParam

    tool = anthropic_tool()
    keys_fit(tool, ToolParam)
    reply = {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    http, sent = captured(reply, pytest.importorskip("httpx2"))
    client = anthropic.Anthropic(api_key="test", base_url="http://llm.test", http_client=http)
    client.messages.create(
        model="claude-haiku-4-5",
        max_tokens=10,
        messages=[{"role": "user", "content": "hi"}],
        tools=[tool],  # type: ignore[list-item]
    )
    assert sent[0]["tools"] == [tool]


def test_gemini_declaration_is_a_real_function_declaration() -> None:
    from google.genai import types

    declaration = types.FunctionDeclaration.model_validate(gemini_function())  # extra: forbid
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[declaration])])
    params = config.tools[0].function_declarations[0].parameters  # type: ignore[index,union-attr]
    assert params is not None and params.required == ["handle"]
    assert params.properties["lines"].type == types.Type.ARRAY  # type: ignore[index]
    assert params.properties["lines"].max_items == 2  # type: ignore[index]


def test_agents_function_tool_runs() -> None:
    from agents import FunctionTool
    from agents.tool_context import ToolContext

    from context_manager.integrations.recall_tools import agents_recall_tool

    area = MemoryOffload("s")
    handle = area.put(TEXT)
    tool = agents_recall_tool(area)
    assert isinstance(tool, FunctionTool) and tool.params_json_schema == PARAMETERS
    args = json.dumps({"handle": handle, "pattern": "cache ttl"})
    context = ToolContext(None, tool_name="recall", tool_call_id="c1", tool_arguments=args)
    out = asyncio.run(tool.on_invoke_tool(context, args))
    assert out.endswith("501: FACT: the cache TTL is 300s")


def test_langchain_structured_tool_runs() -> None:
    from langchain_core.tools import StructuredTool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from context_manager.integrations.recall_tools import langchain_recall_tool

    area = MemoryOffload("s")
    handle = area.put(TEXT)
    tool = langchain_recall_tool(area)
    assert isinstance(tool, StructuredTool)
    assert convert_to_openai_tool(tool)["function"]["parameters"]["required"] == ["handle"]
    out = tool.invoke({"handle": handle, "lines": [501, 501]})
    assert out.endswith("\nFACT: the cache TTL is 300s")
    assert tool.invoke({"handle": "../../etc/passwd"}).startswith("recall error: ")


def test_pydantic_ai_tool_runs_in_an_agent() -> None:
    from pydantic_ai import Agent, Tool
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from context_manager.integrations.recall_tools import pydantic_ai_recall_tool

    area = MemoryOffload("s")
    handle = area.put(TEXT)
    tool = pydantic_ai_recall_tool(area)
    assert isinstance(tool, Tool)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert [t.name for t in info.function_tools] == ["recall"]
        returned = [p.content for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if returned and isinstance(returned[-1], str) and "FACT" in returned[-1]:
            return ModelResponse(parts=[TextPart(returned[-1].rsplit("FACT: ", 1)[1])])
        return ModelResponse(parts=[ToolCallPart("recall", {"handle": handle, "pattern": "fact"})])

    result = Agent(FunctionModel(model), tools=[tool]).run_sync("what is the TTL?")
    assert result.output == "the cache TTL is 300s"
