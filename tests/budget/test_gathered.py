"""The last scattered context kept and patched: against a list filter that shares no code.

``LastGather`` re-gathers only the span where the new keep-mask differs from the last one
(``budget/gathered.py``). Each step here draws a new mask from the last (a few flips, anywhere,
and new messages at the end) and checks the answer against ``[m for m, k in zip(...) if k]``;
then whole managers, adding between requests, against the naive oracle.
"""

from __future__ import annotations

import gc
import itertools
import random
import weakref
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from context_manager import MessageContextManager
from context_manager.budget.gathered import LastGather

from ..naive import naive_select
from ..test_properties import positions
from .scattering import mask_gathers, scattered_everywhere, scattered_nowhere
from .test_scattered import COUNTER, history

#: Masks span several of the 4 KB blocks the gather compares at a time (budget/gathered.py).
BLOCK = 4096


class Tracked(dict[str, Any]):
    """A message dict that can be watched with a weak reference."""


@st.composite
def mask_pairs(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A mask and the next one: a few flips (or a stretch of them) and a longer tail."""
    size = draw(st.integers(0, 3 * BLOCK + 7))
    seed = draw(st.integers(0, 2**32))
    rng = random.Random(seed)
    old = bytearray(rng.choice(b"\0\1") for _ in range(size))
    new = bytearray(old)
    for _ in range(draw(st.integers(0, 4))):
        if size:
            new[rng.randrange(size)] ^= 1
    if size and draw(st.booleans()):  # a whole stretch changes (a priority level drops out)
        a = rng.randrange(size)
        b = min(size, a + rng.randrange(1, 2 * BLOCK))
        new[a:b] = bytes(b - a)
    new += bytes(rng.choice(b"\0\1") for _ in range(draw(st.integers(0, 50))))
    return bytes(old), bytes(new)


@given(mask_pairs(), st.booleans())
def test_a_mask_that_changed_anywhere_gathers_what_a_plain_filter_keeps(
    pair: tuple[bytes, bytes], mutable: bool
) -> None:
    """A gather right after another over the same messages keeps what a plain filter keeps,
    wherever the masks differ (nowhere, one byte, a stretch across blocks, either end), for
    bytes and bytearray masks alike."""
    old, new = (bytearray(m) for m in pair) if mutable else pair
    originals = [object() for _ in range(len(new))]
    memo = LastGather()
    memo.gather(originals, 0, len(old), old)
    got = memo.gather(originals, 0, len(new), new)
    want = [m for m, keep in zip(originals, new, strict=True) if keep]
    assert [id(m) for m in got] == [id(m) for m in want]


@given(st.lists(mask_pairs(), min_size=1, max_size=6), st.integers(0, 3))
def test_each_gather_equals_a_plain_filter(steps: list[tuple[bytes, bytes]], first: int) -> None:
    """Successive gathers, each mask drawn from the last; the list returned is the caller's."""
    memo = LastGather()
    originals: list[Any] = []
    for old, new in steps:
        for mask in (old, new):
            while len(originals) < first + len(mask):
                originals.append(object())
            stop = first + len(mask)
            got = list(memo.gather(originals, first, stop, mask))
            want = [m for m, keep in zip(originals[first:stop], mask, strict=True) if keep]
            assert [id(m) for m in got] == [id(m) for m in want]


def test_another_start_or_a_shorter_span_starts_over() -> None:
    originals = [object() for _ in range(10)]
    memo = LastGather()
    memo.gather(originals, 0, 10, b"\1" * 10)
    assert memo.gather(originals, 2, 10, b"\1\0" * 4) == originals[2:10:2]
    assert memo.gather(originals, 2, 6, b"\0\1\1\1") == originals[3:6]


def test_adds_between_requests_match_the_oracle() -> None:
    """A priority manager over a scattered cut, asked for its context after every add (a chat
    backend's pattern): each answer equals the naive oracle's and the uncached group runs'."""
    messages = history(6, 900)
    rng = random.Random(6)
    priorities = [rng.choice([-3, 0, 0, 1, 5]) for _ in messages]
    pinned = set(rng.sample(range(1, len(messages)), 8))
    budget = COUNTER.count_prompt(messages) // 2
    manager = MessageContextManager(budget, reserve_tokens=0, strategy="priority", counter="chars")
    with scattered_everywhere(), mask_gathers() as gathers:
        for i, message in enumerate(messages):
            manager.add(message, priority=priorities[i], pinned=i in pinned)
            if i < len(messages) - 300:
                continue
            kept = manager.get_context()
            done = messages[: i + 1]
            expected = naive_select(
                done,
                counter=COUNTER,
                budget=budget,
                strategy="priority",
                pinned={p for p in pinned if p <= i},
                priorities=priorities[: i + 1],
            )
            if expected != "overflow":
                assert positions(kept, done) == expected, f"after message {i}"
            with scattered_nowhere():
                assert [id(m) for m in manager.get_context()] == [id(m) for m in kept]
    # Each request asks the same gather over the same start with a mask no shorter than the
    # last one: the case where only the changed span is redone.
    patched = sum(
        now[0] == last[0] and now[1] == last[1] and now[2] >= last[2] > 0
        for last, now in itertools.pairwise(gathers)
    )
    assert len(gathers) >= 300 and patched > 250, "most answers should reuse the last one"


def test_a_context_after_compaction_is_right_and_frees_what_was_cut() -> None:
    """Compaction drops the messages before its cut: the last context sent (which held them) is
    let go with them, and the next one equals the group runs' answer."""
    messages = [Tracked(m) for m in history(7, 400)]
    budget = COUNTER.count_prompt(messages) // 2
    priorities = [i % 3 for i in range(len(messages))]
    manager = MessageContextManager(budget, reserve_tokens=0, strategy="priority")
    with scattered_everywhere():
        for message, priority in zip(messages, priorities, strict=True):
            manager.add(message, priority=priority)
        with mask_gathers() as gathers:
            manager.get_context()
        assert gathers, "the cut should take the mask path"
        cut = len(messages) // 3
        manager.apply_compaction({"role": "user", "content": "summary"}, cut)
        where = {id(m): i for i, m in enumerate(messages)}
        held = {id(item.message) for item in manager.history()}
        dropped = [weakref.ref(m) for m in messages[1:cut] if id(m) not in held]
        del messages[1:cut]  # the caller lets go of what was summarized
        gc.collect()
        assert dropped and all(ref() is None for ref in dropped), "the manager still holds them"
        after = manager.get_context()
    with scattered_nowhere():
        assert [id(m) for m in manager.get_context()] == [id(m) for m in after]
    assert after[0] is messages[0] and after[1]["content"] == "summary"
    assert min(where[id(m)] for m in after[2:]) >= cut - 3  # a cut moves to its group's start


def test_a_patch_that_fails_half_way_starts_over_next_time() -> None:
    class Failing(list[Any]):
        def __getitem__(self, key: Any) -> Any:
            if isinstance(key, slice) and key.start >= 6:  # the new messages' slice only
                raise MemoryError("no room for the new messages")
            return super().__getitem__(key)

    originals = [object() for _ in range(8)]
    memo = LastGather()
    memo.gather(originals, 0, 6, b"\1\0\1\0\1\0")
    grown = Failing(originals)
    try:
        memo.gather(grown, 0, 8, b"\1\1\1\0\1\0\1\1")  # patches, then fails reading the tail
    except MemoryError:
        pass
    else:
        raise AssertionError("the failing slice should have raised")
    mask = b"\1\1\1\0\1\0\1\1"
    want = [m for m, keep in zip(originals, mask, strict=True) if keep]
    assert memo.gather(originals, 0, 8, mask) == want
