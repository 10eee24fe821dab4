"""Any long session, reopened: the open that leaves the oldest messages unread builds the
manager that reading every record (``strict=True``) builds, and the one the writer had.

Sessions are random sequences of what a chat backend does (user turns, tool exchanges, some
left open and closed by the next user turn, pinned messages, usage reports far above or below
our counts, checkpoints and reverts, a new system prompt, clears, a rare compaction), with
reopens in the middle: the writes after a reopen build on a manager holding messages unread.
"""

from __future__ import annotations

import logging
import tempfile
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager import MessageContextManager
from context_manager.store import delete_session

from .test_open_from_compaction_properties import Session
from .test_open_reads_the_newest import observed

grow = st.one_of(  # the history grows past twice the budget
    st.tuples(st.just("turn"), st.integers(30, 80)),
    st.tuples(st.just("tools"), st.integers(1, 3), st.booleans()),
    st.tuples(st.just("usage"), st.integers(20, 400)),
)
other = st.one_of(  # now and then, anywhere
    st.tuples(st.just("reopen")),
    st.tuples(st.just("pinned"), st.integers(1, 10)),
    st.tuples(st.just("checkpoint")),
    st.tuples(st.just("revert"), st.integers(0, 5)),
    st.tuples(st.just("system"), st.integers(0, 3)),
    st.tuples(st.just("clear"), st.booleans()),
    st.tuples(st.just("compact"), st.floats(0, 1)),
)


@st.composite
def sessions(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    steps = draw(st.lists(grow, min_size=20, max_size=80))
    for at, step in draw(st.lists(st.tuples(st.integers(0, 80), other), max_size=6)):
        steps.insert(at, step)
    return steps


class LongSession(Session):
    #: Pinned messages a session takes at most: more would leave the latest turn no room in
    #: this small budget (ContextOverflowError on the writer, before any reopen).
    PINS = 3

    def __init__(self, target: str, provider: str | None = None) -> None:
        self.provider = provider
        self.pins = 0
        super().__init__(target)

    def apply(self, step: tuple[Any, ...]) -> None:
        if step[0] == "pinned":
            if self.pins == self.PINS:
                return
            self.pins += 1
        super().apply(step)

    def open(self, **options: Any) -> MessageContextManager:
        return MessageContextManager.open(
            self.target, session="s", max_tokens=300, provider=self.provider, **options
        )


@given(
    sessions(),
    st.sampled_from(["jsonl", "sqlite"]),
    st.sampled_from([None, "anthropic", "bedrock", "gemini"]),
)
def test_an_open_that_leaves_old_messages_unread_is_a_full_read(
    steps: list[tuple[Any, ...]], backend: str, provider: str | None
) -> None:
    logging.getLogger("context_manager.store").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as directory:
        target = f"{directory}/sessions" if backend == "jsonl" else f"sqlite:///{directory}/s.db"
        session = LongSession(target, provider)
        for step in [*steps, ("turn", 10)]:
            session.apply(step)
        session.check_reopens(observed)


@settings(max_examples=100)  # long sessions: a fixed count in every profile
@given(
    st.lists(sessions(), min_size=3, max_size=4).map(lambda parts: [s for p in parts for s in p]),
    st.sampled_from([None, "anthropic"]),
)
def test_a_long_sqlite_session_leaves_its_older_rows_in_the_database_as_a_full_read_would(
    steps: list[tuple[Any, ...]], provider: str | None
) -> None:
    """Sessions of several hundred rows: SQLite's open stops short of the older rows (running
    sums, ``store/_tail_read.py``), or reads from the latest compaction on."""
    logging.getLogger("context_manager.store").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as directory:
        session = LongSession(f"sqlite:///{directory}/s.db", provider)
        for step in [*steps, ("turn", 10)]:
            session.apply(step)
        session.check_reopens(observed)


@settings(max_examples=50)  # long sessions on a real server: a fixed count in every profile
@given(
    steps=st.lists(sessions(), min_size=3, max_size=4).map(
        lambda parts: [s for p in parts for s in p]
    ),
    provider=st.sampled_from([None, "anthropic"]),
)
def test_a_long_redis_session_leaves_its_older_records_in_redis_as_a_full_read_would(
    redis_url: str, steps: list[tuple[Any, ...]], provider: str | None
) -> None:
    """The same on Redis, whose writer computes the sums from those of its head
    (``store/_redis_tail.py``): through reopens, reverts to checkpoints and clears."""
    logging.getLogger("context_manager.store").setLevel(logging.ERROR)
    delete_session(redis_url, session="s")
    session = LongSession(redis_url, provider)
    for step in [*steps, ("turn", 10)]:
        session.apply(step)
    session.check_reopens(observed)
