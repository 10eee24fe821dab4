"""A deterministic synthetic coding-agent session with the facts planted in it.

Each turn: a user request (sometimes with a rule: "must", "never", "always", "do not", ...,
an issue number, a URL or a commit id), an assistant tool call (a shell command or a file read),
its result (an error line, a duration, a size), and a short assistant reply. The generator
returns the messages and, separately, every planted fact with the index of the message that
states it, so a test checks survival against what was planted, not against the extractor.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

RULES = (
    "You must never edit {path} by hand.",
    "Always run `pytest -q {test}` before you commit.",
    "Do not change the public signature of {func} in {path}.",
    "Only touch files under {dir}/ for this task.",
    "Make sure {path} stays compatible with Python 3.9.",
    "Never push directly to the release-{n} branch.",
)
ERRORS = (
    "AssertionError: expected status 200, got {code} for order {n}",
    "ModuleNotFoundError: No module named 'pkg{n}_helpers'",
    "KeyError: 'order_{n}'",
    "error: could not compile `engine{n}` due to previous error",
    "TypeError: unsupported operand type(s) for +: 'int' and 'str' in {func}()",
)
UNITS = ("ms", "s", "MB", "GB", "%")


@dataclass(frozen=True)
class Planted:
    kind: str
    text: str
    index: int


def _fact(planted: list[Planted], kind: str, text: str, index: int) -> str:
    planted.append(Planted(kind, text, index))
    return text


def coding_session(turns: int = 220, seed: int = 7) -> tuple[list[dict[str, Any]], list[Planted]]:
    """``turns`` turns of OpenAI-shaped messages and the facts planted in them."""
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = []
    planted: list[Planted] = []
    for n in range(turns):
        pkg = f"pkg{n % 37}"
        path = f"src/{pkg}/module_{n}.py"
        test = f"tests/{pkg}/test_module_{n}.py"
        func = f"handle_{n}"
        user_at = len(messages)
        parts = [f"Turn {n}: please look at {_fact(planted, 'path', path, user_at)}."]
        if n % 3 == 0:
            rule = rng.choice(RULES).format(path=path, test=test, func=func, dir=f"src/{pkg}", n=n)
            parts.append(_fact(planted, "instruction", rule, user_at))
        if n % 4 == 1:
            issue = f"#{1000 + n}"
            parts.append(f"It was reported in issue {_fact(planted, 'id', issue, user_at)}.")
        if n % 5 == 2:
            url = f"https://github.com/acme/shop/pull/{2000 + n}"
            parts.append(f"Context: {_fact(planted, 'url', url, user_at)}")
        if n % 6 == 3:
            sha = f"{rng.getrandbits(28):07x}{n % 10}"
            parts.append(f"The regression came with commit {_fact(planted, 'id', sha, user_at)}.")
        messages.append({"role": "user", "content": " ".join(parts)})
        call_id = f"call_{n}"
        if n % 2 == 0:
            command = f"python -m pytest {test} -q -k case_{n}"
            _fact(planted, "command", command, len(messages))
            name, args = "bash", {"command": command}
        else:
            name, args = "read_file", {"path": path}
        messages.append(
            {
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
        )
        result_at = len(messages)
        body = [f"line {i}: ok" for i in range(rng.randint(3, 8))]
        if n % 2 == 0 and n % 4 != 0:
            error = rng.choice(ERRORS).format(code=500 + n % 4, n=n, func=func)
            body.append(_fact(planted, "error", error, result_at))
        if n % 7 == 0:
            quantity = f"{rng.randint(2, 900)} {rng.choice(UNITS)}"
            body.append(f"finished in {_fact(planted, 'quantity', quantity, result_at)}")
        messages.append({"role": "tool", "tool_call_id": call_id, "content": "\n".join(body)})
        messages.append(
            {"role": "assistant", "content": f"I looked into turn {n}; moving on to the next one."}
        )
    return messages, planted
