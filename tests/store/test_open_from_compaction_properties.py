"""Any session, reopened: the open that starts at the latest compaction builds the manager that
reading every record (``strict=True``) builds, and the one the writer had.

Sessions are random sequences of what a chat backend does: user turns, tool exchanges (some
left open, closed by the next user turn), pinned messages, usage reports, compactions by hand
and by the compaction package, checkpoints and reverts, a new system prompt, clears, and
reopens in the middle (the writes after a reopen build on the manager the open built).
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Callable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from context_manager import MessageContextManager
from context_manager.compaction import SimpleCompaction
from context_manager.errors import NothingToCompactError

from .test_open_from_compaction import observed

OPTIONS = {"max_tokens": 3_000}

turn = st.tuples(st.just("turn"), st.integers(1, 80))
tools = st.tuples(st.just("tools"), st.integers(1, 3), st.booleans())
usage = st.tuples(st.just("usage"), st.integers(90, 160))
compact = st.tuples(st.just("compact"), st.floats(0, 1))
op = st.one_of(  # the common steps several times over: most sessions get compacted
    turn,
    turn,
    turn,
    tools,
    tools,
    usage,
    usage,
    compact,
    compact,
    st.tuples(st.just("policy"), st.integers(1, 4)),
    st.tuples(st.just("pinned"), st.integers(1, 30)),
    st.tuples(st.just("checkpoint")),
    st.tuples(st.just("revert"), st.integers(0, 5)),
    st.tuples(st.just("system"), st.integers(0, 3)),
    st.tuples(st.just("clear"), st.booleans()),
    st.tuples(st.just("reopen")),
)


class Session:
    def __init__(self, target: str) -> None:
        self.target = target
        self.turn = 0
        self.checkpoints: list[int] = []
        self.manager = self.open()

    def open(self, **options: Any) -> MessageContextManager:
        return MessageContextManager.open(self.target, session="s", **OPTIONS, **options)

    def apply(self, step: tuple[Any, ...]) -> None:
        m, kind = self.manager, step[0]
        self.turn += 1
        n = self.turn
        if kind == "turn":
            m.add({"role": "user", "content": f"q{n} " + "w " * step[1]})
            m.add({"role": "assistant", "content": f"a{n}"})
        elif kind == "tools":
            function = {"name": "f", "arguments": "{}"}
            calls = [
                {"id": f"c{n}_{k}", "type": "function", "function": function}
                for k in range(step[1])
            ]
            m.add({"role": "user", "content": f"use tools {n}"})
            m.add({"role": "assistant", "content": None, "tool_calls": calls})
            answered = calls if step[2] else calls[:-1]  # the last one left open
            for call in answered:
                m.add({"role": "tool", "tool_call_id": call["id"], "content": "r " * 20})
        elif kind == "pinned":
            m.add({"role": "user", "content": f"remember {n} " + "p " * step[1]}, pinned=True)
        elif kind == "usage":
            m.record_usage(m.context_tokens() * step[1] // 100)
        elif kind == "compact":
            held = [h.index for h in m.history()]
            if held:
                kept = held[min(len(held) - 1, int(step[1] * len(held)))]
                m.apply_compaction({"role": "user", "content": f"summary {n}"}, kept)
        elif kind == "policy":
            with contextlib.suppress(NothingToCompactError):  # too little history yet
                m.compact(lambda text: f"summary {n}", policy=SimpleCompaction(step[1]))
        elif kind == "checkpoint":
            self.checkpoints.append(m.checkpoint())
        elif kind == "revert" and self.checkpoints:
            target = self.checkpoints[step[1] % len(self.checkpoints)]
            m.revert_to(target)
            self.checkpoints = [c for c in self.checkpoints if c < target]
        elif kind == "system":
            m.set_system_prompt(f"system prompt {step[1]}")
        elif kind == "clear":
            m.clear(keep_system_prompt=step[1])
            self.checkpoints = []
        elif kind == "reopen":
            m.store.close()
            self.manager = self.open()

    def check_reopens(self, observe: Callable[[MessageContextManager], Any]) -> None:
        """Closed, the session reopens as its manager was: read whole (``strict``), then as an
        open reads it."""
        live = observe(self.manager)
        self.manager.store.close()
        for options in ({"strict": True}, {}):
            reopened = self.open(**options)
            assert observe(reopened) == live
            reopened.store.close()


@given(st.lists(op, min_size=5, max_size=40))
def test_an_open_from_the_latest_compaction_is_a_full_read(steps: list[tuple[Any, ...]]) -> None:
    logging.getLogger("context_manager.store").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as directory:
        session = Session(f"{directory}/sessions")
        for step in [*steps, ("compact", 0.5), ("turn", 10)]:  # the last compaction near the end
            session.apply(step)
        session.check_reopens(observed)
