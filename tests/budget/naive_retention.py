"""The retention rule (``SlidingWindow(retention_ratio=r)``) restated naively, as a test oracle.

Plain loops over whole lists, recounting on every call; it reuses only the naive grouping of
``tests/naive.py``. The rule, from the docs: ``step = max(1, floor(room * (1 - r)))``; a group's
offset is the trimmable (unpinned) tokens before it and its cell ``offset // step``; the cut is
the smallest *turn anchor* at or after the plain sliding-window start, where candidates are the
first group and every group holding a user turn, and an anchor is a candidate whose cell is above
the previous candidate's. Without such an anchor: keep the latest user turn, then the groups from
the smallest group anchor at or after the plain start for the room left (or from that start).
"""

from __future__ import annotations

import math
from typing import Any

from ..naive import NaiveCounter, NaiveGroup, build_groups, naive_read


def naive_retained(
    messages: list[Any],
    *,
    counter: NaiveCounter,
    budget: int,
    ratio: float,
    pinned: set[int] | None = None,
    max_messages: int | None = None,
) -> tuple[list[int], list[int], bool] | str:
    """``"overflow"``, or (kept indices, system prompt first; indices of complete groups; whether
    the cut fell on a turn anchor, i.e. the context is one run from that anchor to the end)."""
    pinned = pinned or set()
    rest = list(range(len(messages)))
    system: list[int] = []
    fixed = counter.prompt_overhead
    if messages and messages[0]["role"] in ("system", "developer"):
        system, rest = [0], rest[1:]
        fixed += counter.count(messages[0])
    groups: list[NaiveGroup] = build_groups(
        [messages[i] for i in rest],
        counter,
        {rest.index(p) for p in pinned if p in rest},
        [0] * len(rest),
    )
    for g in groups:
        g.indices = [rest[i] for i in g.indices]
    if groups and groups[-1].pending:
        groups = groups[:-1]
    complete = system + [i for g in groups for i in g.indices]
    n = len(groups)
    is_turn = [any(naive_read(messages[i]).is_user_turn for i in g.indices) for g in groups]
    last_user = max((i for i in rest if naive_read(messages[i]).is_user_turn), default=None)
    p = None
    for gi, g in enumerate(groups):
        if last_user in g.indices and not g.pinned:
            p = gi
    room = budget - fixed - sum(g.tokens for g in groups if g.pinned)
    tp = groups[p].tokens if p is not None else 0
    if tp > room:
        return "overflow"

    def cost(a: int) -> int:
        return sum(g.tokens for g in groups[a:] if not g.pinned)

    def count(a: int) -> int:
        return sum(len(g.indices) for g in groups[a:])

    step = max(1, math.floor(room * (1.0 - ratio)))
    offsets = [0]
    for g in groups:
        offsets.append(offsets[-1] + (0 if g.pinned else g.tokens))

    def cell(g: int) -> int:
        return offsets[g] // step

    s0 = next(
        s
        for s in range(n + 1)
        if cost(s) <= room and (max_messages is None or count(s) <= max_messages)
    )
    candidates = [0] + [g for g in range(1, n) if is_turn[g]]
    anchors = [c for k, c in enumerate(candidates) if k == 0 or cell(c) > cell(candidates[k - 1])]
    keep = {gi for gi, g in enumerate(groups) if g.pinned}
    cut = min((a for a in anchors if a >= s0), default=None)
    on_anchor = cut is not None and (p is None or p >= cut)
    if cut is not None and on_anchor:
        keep |= set(range(cut, n))
    elif p is None:
        group_anchors = [g for g in range(n) if g == 0 or cell(g) > cell(g - 1)]
        cut = min((a for a in group_anchors if a >= s0), default=s0)
        keep |= set(range(cut, n))
    else:
        keep.add(p)
        cap = None if max_messages is None else max(max_messages - len(groups[p].indices), 0)
        first = p + 1
        s1 = next(
            t
            for t in range(first, n + 1)
            if cost(t) <= room - tp and (cap is None or count(t) <= cap)
        )
        group_anchors = [g for g in range(first, n) if g == first or cell(g) > cell(g - 1)]
        cut = min((a for a in group_anchors if a >= s1), default=s1)
        keep |= set(range(cut, n))
    kept = list(system)
    for gi in sorted(keep):
        kept.extend(groups[gi].indices)
    return kept, complete, on_anchor
