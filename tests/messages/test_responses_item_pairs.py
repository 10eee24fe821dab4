"""Every Responses tool output item is sent with the call it answers, whatever its type.

The item shapes are the openai SDK's own input params (``response_input_item_param``); the
pairing keys are the SDK's: ``call_id``, except ``LocalShellCallOutput``, which names its call
by ``id`` (the call's ``call_id``), and ``McpApprovalResponse``, which names its request by
``approval_request_id`` (the Agents SDK pairs the two the same way). A type the SDK added
(``program``, ``tool_search_call``, ``additional_tools``, ...) is read too, instead of refused.
"""

from __future__ import annotations

from typing import Any

import pytest

from context_manager import MessageContextManager, trim

params = pytest.importorskip("openai.types.responses.response_input_item_param")


def pairs() -> list[tuple[Any, Any]]:
    shell = params.LocalShellCall(
        type="local_shell_call",
        id="lsh_1",
        call_id="call_l",
        status="completed",
        action=params.LocalShellCallAction(type="exec", command=["ls"], env={}),
    )
    shell_out = params.LocalShellCallOutput(
        type="local_shell_call_output", id="call_l", output="a\n" * 300
    )
    program = params.Program(type="program", id="pg_1", call_id="call_p", code="1", fingerprint="f")
    program_out = params.ProgramOutput(
        type="program_output", id="pgo_1", call_id="call_p", result="r " * 300, status="completed"
    )
    search = params.ToolSearchCall(
        type="tool_search_call", id="ts_1", call_id="call_t", arguments={}
    )
    found = {"type": "tool_search_output", "id": "tso_1", "call_id": "call_t", "tools": []}
    found["tools"] = [
        {"type": "function", "name": f"tool_{k}", "parameters": {}} for k in range(40)
    ]
    request = params.McpApprovalRequest(
        type="mcp_approval_request", id="mcpr_1", server_label="s", name="t", arguments="{}"
    )
    approval = params.McpApprovalResponse(
        type="mcp_approval_response", approval_request_id="mcpr_1", approve=True, reason="ok " * 200
    )
    return [(shell, shell_out), (program, program_out), (search, found), (request, approval)]


def session(call: Any, output: Any) -> list[Any]:
    answer = {
        "type": "message",
        "id": "msg_2",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "ok " * 200, "annotations": []}],
    }
    start = {"role": "user", "content": "Start " + "pad " * 300}
    return [start, call, output, answer, {"role": "user", "content": "next"}]


@pytest.mark.parametrize("k", range(4))
def test_an_output_is_never_sent_without_its_call(k: int) -> None:
    call, output = pairs()[k]
    items = session(call, output)
    for budget in range(100, 1_400, 25):
        kept = trim(items, budget, provider="openai-responses", counter="tiktoken")
        sent = [id(item) for item in kept]
        assert (id(output) in sent) <= (id(call) in sent), (output["type"], budget)
        assert (id(call) in sent) <= (id(output) in sent), (call["type"], budget)


def test_a_call_the_user_interrupted_is_closed_by_an_output_of_its_own_type() -> None:
    manager = MessageContextManager(50_000, counter="chars", provider="openai-responses")
    call, _ = pairs()[0]
    manager.extend([{"role": "user", "content": "list files"}, call])
    manager.add({"role": "user", "content": "never mind"})
    closure = manager.get_context()[2]
    assert closure["type"] == "local_shell_call_output"
    assert closure["id"] == "call_l"  # LocalShellCallOutput names its call by ``id`` only
    from openai.types.responses import ResponseInputItemParam
    from pydantic import TypeAdapter

    assert TypeAdapter(ResponseInputItemParam).validate_python(closure) == closure


def test_items_the_sdk_added_are_read_and_counted() -> None:
    tools = params.AdditionalTools(
        type="additional_tools",
        role="developer",
        tools=[{"type": "function", "name": "lookup", "parameters": {"type": "object"}}],
    )
    items = [
        {"role": "user", "content": "hi"},
        tools,
        params.CompactionTrigger(type="compaction_trigger"),
    ]
    manager = MessageContextManager(50_000, counter="chars")
    manager.extend(items)
    assert manager.get_context() == items
    # the tool definitions are priced by their JSON, not free
    assert manager.count_message(tools) > manager.count_message({"role": "user", "content": ""})


def test_an_approval_the_user_interrupted_is_closed_by_a_denial() -> None:
    manager = MessageContextManager(50_000, counter="chars", provider="openai-responses")
    request = pairs()[3][0]
    manager.extend([{"role": "user", "content": "delete the repo"}, request])
    manager.add({"role": "user", "content": "wait, no"})
    closure = manager.get_context()[2]
    assert closure["type"] == "mcp_approval_response"
    assert closure["approval_request_id"] == "mcpr_1" and closure["approve"] is False
    params.McpApprovalResponse(**closure)  # the SDK's own shape (a TypedDict: its keys)
    assert set(closure) <= set(params.McpApprovalResponse.__annotations__)
