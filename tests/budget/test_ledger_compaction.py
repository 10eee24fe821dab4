"""The ledger's compaction forgets evicted groups and nothing else.

A full FIFO manager compacts its storage every few thousand adds (slices and comprehensions, not a
step per group). After a compaction every held message, its group, pin, priority and every sum
and index the strategies read must describe exactly the groups held before it. The expected
state is derived here from the held groups alone, by plain loops that share no code with the
ledger.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager.budget._ledger import Ledger
from context_manager.messages import Message

# One step: (role is user, tokens, priority, pinned, joins the previous group, floor move)
_STEP = st.tuples(
    st.booleans(),
    st.integers(0, 50),
    st.integers(-2, 2),
    st.booleans(),
    st.booleans(),
    st.integers(0, 3),
)


def _build(steps: list[tuple[bool, int, int, bool, bool, int]]) -> Ledger:
    ledger = Ledger()
    for n, (user, tokens, priority, pinned, joins, move) in enumerate(steps):
        rec = Message("user" if user else "assistant", f"m{n}")
        ledger.append({"n": n}, rec, tokens, priority, pinned, joins and n > 0)
        if move:
            ledger.evict_before(min(ledger.floor + move, ledger.group_count))
    return ledger


def _held(ledger: Ledger) -> list[dict[str, Any]]:
    """Each held group, in order: its messages (seq, original, record, tokens), pin, priority."""
    groups = []
    for g in ledger.held_groups():
        end = ledger.group_start[g + 1] if g + 1 < ledger.group_count else len(ledger.originals)
        rows = [
            (ledger.seq[i], ledger.originals[i], ledger.records[i], ledger.tokens[i])
            for i in range(ledger.group_start[g], end)
        ]
        groups.append(
            {
                "old": g,
                "rows": rows,
                "pinned": ledger.group_pinned[g],
                "priority": ledger.group_priority[g],
                "tokens": ledger.group_tokens[g],
            }
        )
    return groups


@settings(max_examples=300, deadline=None)
@given(st.lists(_STEP, min_size=1, max_size=60))
def test_compaction_keeps_exactly_the_held_groups(steps: list[Any]) -> None:
    ledger = _build(steps)
    before = _held(ledger)
    old_floor, protected, kept = ledger.floor, ledger.protected, ledger.kept_protected
    turns_before = [g for g in ledger.turns if any(h["old"] == g for h in before)]
    opened = ledger.open
    ledger._compact()

    # Storage: exactly the held rows, in order, grouped as before.
    assert ledger.group_count == len(before)
    for new_g, group in enumerate(before):
        start = ledger.group_start[new_g]
        end = ledger.group_start[new_g + 1] if new_g + 1 < len(before) else len(ledger.originals)
        got = [
            (ledger.seq[i], ledger.originals[i], ledger.records[i], ledger.tokens[i])
            for i in range(start, end)
        ]
        assert got == group["rows"]
        assert all(a[1] is b[1] and a[2] is b[2] for a, b in zip(got, group["rows"], strict=True))
        assert ledger.group_pinned[new_g] == group["pinned"]
        assert ledger.group_priority[new_g] == group["priority"]
        assert ledger.group_tokens[new_g] == group["tokens"]
    assert len(ledger.originals) == sum(len(g["rows"]) for g in before)

    # Sums: trimmable prefix sums, pins, totals, per-priority levels.
    running, cum = 0, [0]
    for group in before:
        running += 0 if group["pinned"] else group["tokens"]
        cum.append(running)
    assert ledger.cum == cum
    assert ledger.pinned_groups == [i for i, g in enumerate(before) if g["pinned"]]
    assert ledger.pinned_total == sum(g["tokens"] for g in before if g["pinned"])
    assert ledger.total == sum(g["tokens"] for g in before)
    expected_levels: dict[int, tuple[list[int], list[int]]] = {}
    for i, group in enumerate(before):
        if group["pinned"]:
            continue
        members, sums = expected_levels.setdefault(group["priority"], ([], [0]))
        members.append(i)
        sums.append(sums[-1] + group["tokens"])
    assert {p: (lv.groups, lv.cum) for p, lv in ledger.levels.items()} == expected_levels

    # Indexes: floor, the latest user turn (and one kept below the floor), user-turn groups.
    new_of = {g["old"]: i for i, g in enumerate(before)}
    assert ledger.floor == sum(1 for g in before if g["old"] < old_floor)
    assert ledger.protected == new_of.get(protected, -1)
    assert ledger.kept_protected == new_of.get(kept, -1)
    assert ledger.turns == [new_of[g] for g in turns_before]
    counts = {"system": 0, "user": 0, "assistant": 0, "tool": 0}
    tokens = dict.fromkeys(counts, 0)
    for group in before:
        for _seq, _original, rec, n in group["rows"]:
            counts[rec.role] += 1
            tokens[rec.role] += n
    assert ledger.role_totals() == (counts, tokens)
    assert ledger.open == opened


def test_a_full_fifo_ledger_compacts_in_place_of_its_evicted_groups() -> None:
    # The steady state the fast eviction path serves: one group in, the oldest one out.
    ledger = Ledger()
    for n in range(20_000):
        ledger.append({"n": n}, Message("user" if n % 2 else "assistant", "x"), 5, 0, False, False)
        if ledger.group_count - ledger.floor > 100:
            ledger.evict_before(ledger.floor + 1)
    held = [ledger.originals[i] for i in ledger.held_indices()]
    # The latest user turn is kept below the floor when FIFO passes it; here it is in the tail.
    assert [m["n"] for m in held] == list(range(20_000 - 100, 20_000))
    assert len(ledger.originals) < 2 * 4096 + 100  # compacted, not grown with every add
    assert ledger.total == 100 * 5
    assert ledger.held_count() == 100
