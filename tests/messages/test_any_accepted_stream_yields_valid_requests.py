"""Property: whatever agent stream the manager accepts, in any provider's shape, with SDK objects
and their JSON mixed message by message (google-genai in snake_case or camelCase), every request
it builds passes both ``validate()`` and the provider's independent checker.

Streams follow an agent's turns (a user turn, then the model replies or calls tools, the results
come back whole or in pieces, or the user interrupts) with hostile messages mixed in (a result
for a call never made), under any budget, with or without ``repair`` and pruning. A message the
manager refuses is not part of the stream. Gemini and pydantic-ai send a turn's results in one
message (the Gemini API wants every response of a turn in the next content), as their SDKs do.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager import MessageContextManager, ToolResultPruning
from context_manager.errors import ContextOverflowError, InvalidMessageError
from context_manager.providers import validate

from .agent_shapes import SHAPES, Result, as_json

PRUNING = ToolResultPruning(
    max_chars=600, head_chars=200, tail_chars=200, soft_ratio=0.1, min_prunable_chars=0, keep_last=1
)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_accepted_stream_yields_valid_requests(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(list(SHAPES)), label="shape")
    shape = SHAPES[name]()
    budget = data.draw(st.integers(300, 5_000), label="max_tokens")
    repair = data.draw(st.booleans(), label="repair")
    manager = MessageContextManager(
        budget,
        counter="chars",
        reserve_tokens=budget // 5,
        provider=shape.provider,
        repair=repair,
        pruning=data.draw(st.sampled_from([None, PRUNING]), label="pruning"),
    )
    provider = shape.provider or "openai"
    serial = itertools.count()

    def form(message: Any) -> Any:
        if name == "langchain" or not data.draw(st.booleans(), label="as JSON"):
            return message
        return as_json(message, camel=data.draw(st.booleans(), label="camelCase"))

    def add(messages: list[Any]) -> bool:
        try:
            for message in messages:
                manager.add(form(message))
        except InvalidMessageError:
            assert not repair, "repair=True accepts every stream"
            return False
        return True

    def request() -> None:
        try:
            context = manager.get_context()
        except ContextOverflowError:
            return
        assert shape.check(context) == [], context
        assert validate(context, provider) == [], context

    def text(label: str) -> str:
        return f"{label} " + "w" * data.draw(st.sampled_from([0, 50, 400, 2_500]), label="size")

    add([shape.user(text("question"))])
    request()
    state, open_calls = "model", list[Result]()
    for _ in range(data.draw(st.integers(1, 30), label="steps")):
        if state == "model":
            if data.draw(st.booleans(), label="calls tools"):
                names = data.draw(
                    st.lists(st.sampled_from(["read", "grep"]), min_size=1, max_size=3)
                )
                ids = [f"c{next(serial)}" if shape.ids else "" for _ in names]
                calls = [(i, n, {"k": k}) for k, (i, n) in enumerate(zip(ids, names, strict=True))]
                if add(shape.calls(next(serial), calls)):
                    open_calls = [(i, n, text("result")) for i, n, _a in calls]
                    state = "calls"
            elif add(shape.reply(text("reply"))):
                state = "user"
        elif state == "calls":
            move = data.draw(st.sampled_from(["all", "some", "interrupt", "orphan"]), label="move")
            if move == "all" and add(shape.results(open_calls)):
                state, open_calls = "model", []
                request()
            elif move == "some" and shape.partial and len(open_calls) > 1:
                k = data.draw(st.integers(1, len(open_calls) - 1), label="answered")
                if add(shape.results(open_calls[:k])):
                    open_calls = open_calls[k:]
            elif move == "interrupt" and add([shape.user(text("interrupt"))]):
                state, open_calls = "model", []
                request()
            elif move == "orphan":
                add(shape.results([("zz" if shape.ids else "", "never_called", "late")]))
        elif add([shape.user(text("question"))]):
            state = "model"
            request()
