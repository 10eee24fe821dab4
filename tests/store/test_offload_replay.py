"""Agent replay: a scripted model works through a tool-heavy session whose tool outputs are
megabytes each. Each output is cut to a stub in the context; the model reads the stub, calls
``recall`` with the handle it names (a search, then the lines around the hit) and answers.
The facts behind every stub must come back exactly, on every backend and in memory."""

from __future__ import annotations

import json
import random
import re
from typing import Any

from context_manager import MessageContextManager
from context_manager.offload import MemoryOffload, OffloadArea, attach_offload, run_recall
from context_manager.store.offload import attach_store_offload

from .backends import Backend

HANDLE = re.compile(r'handle="(cm-off:[0-9a-f]{8}-[0-9a-f]{32})"')
TASKS = 5


def tool_output(i: int, rng: random.Random) -> tuple[str, str]:
    """About 2.5 MB of service log with one incident (two lines) somewhere in the middle."""
    rows = [
        f"2026-11-{(n % 28) + 1:02d} host{n % 50:02d} svc-{i} GET /v1/items/{n} 200 {n % 97}ms"
        for n in range(40_000)
    ]
    secret = f"{rng.getrandbits(64):016x}"
    at = rng.randrange(15_000, 25_000)
    rows[at : at + 1] = [f"INCIDENT-{i} root cause follows", f"  cause: disk quota {secret}"]
    return "\n".join(rows), secret


class ScriptedModel:
    """Reads only what the context shows; follows the stub's instructions to ``recall``."""

    def __init__(self) -> None:
        self.recalls = 0

    def reply(self, context: list[dict[str, Any]], task: int) -> dict[str, Any]:
        last = context[-1]
        if last["role"] == "user":
            return _call(f"t{task}", "read_log", {"service": task})
        text = str(last["content"])
        found = re.search(r"cause: disk quota ([0-9a-f]{16})", text)
        if found:
            return {"role": "assistant", "content": found.group(1)}
        hit = re.search(rf"^(\d+): INCIDENT-{task} ", text, re.M)
        handle = HANDLE.search(text)
        if hit is not None:  # the search found the incident: read it and the line after
            line = int(hit.group(1))
            args = {"handle": self.handle, "lines": [line, line + 1]}
        elif handle is not None:  # a stub: search the stored output
            self.handle = handle.group(1)
            args = {"handle": self.handle, "pattern": f"INCIDENT-{task}"}
        else:
            raise AssertionError(f"nothing to go on in {text[:200]!r}")
        self.recalls += 1
        return _call(f"r{task}-{self.recalls}", "recall", args)


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ],
    }


def run_session(manager: MessageContextManager, area: OffloadArea) -> ScriptedModel:
    rng = random.Random(40)
    model = ScriptedModel()
    answers, secrets = [], []
    for task in range(TASKS):
        manager.add({"role": "user", "content": f"Why did service {task} fail?"})
        while True:
            context = manager.get_context()
            assert manager.context_tokens() <= manager.budget_tokens
            message = model.reply(context, task)
            manager.add(message)
            if not message.get("tool_calls"):
                answers.append(message["content"])
                break
            (call,) = message["tool_calls"]
            if call["function"]["name"] == "read_log":
                output, secret = tool_output(task, rng)
                secrets.append(secret)
                assert secret not in str(manager.get_context())  # hidden before the output
            else:
                output = run_recall(area, call["function"]["arguments"])
            manager.add({"role": "tool", "tool_call_id": call["id"], "content": output})
            if call["function"]["name"] == "read_log":
                assert secret not in str(manager.get_context())  # the stub cut it out
    assert answers == secrets
    return model


def test_replay_recovers_every_fact_in_memory() -> None:
    manager = MessageContextManager(16_000, counter="chars")
    area = attach_offload(manager, MemoryOffload("agent"))
    model = run_session(manager, area)
    assert model.recalls == 2 * TASKS  # one search and one read per stub


def test_replay_recovers_every_fact_on_each_backend(backend: Backend) -> None:
    manager = backend.manager("agent", max_tokens=16_000, counter="chars")
    area = attach_store_offload(manager)
    model = run_session(manager, area)
    assert model.recalls == 2 * TASKS
    # A new process reopening the session reads the last stub's output the same way.
    reopened = backend.manager("agent", max_tokens=16_000, counter="chars")
    again = attach_store_offload(reopened)
    page = run_recall(again, {"handle": model.handle, "pattern": f"INCIDENT-{TASKS - 1}"})
    assert f"INCIDENT-{TASKS - 1} root cause follows" in page
