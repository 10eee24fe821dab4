"""A deliberately naive statement of the trimming semantics, used as a test oracle.

No prefix sums, no bisect, no levels: plain loops over the whole history, recounting everything
on every call. The fast manager must return exactly what this returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from context_manager.counting import TokenCounter
from context_manager.messages import normalize


@dataclass
class NaiveGroup:
    indices: list[int] = field(default_factory=list)
    tokens: int = 0
    pinned: bool = False
    priority: int = 0
    pending: set[str] = field(default_factory=set)


def build_groups(
    messages: list[Any], counter: TokenCounter, pinned: set[int], priorities: list[int]
) -> list[NaiveGroup]:
    groups: list[NaiveGroup] = []
    for i, m in enumerate(messages):
        rec = normalize(m)
        if groups and groups[-1].pending and rec.result_ids:
            g = groups[-1]
            g.priority = max(g.priority, priorities[i])
        else:
            g = NaiveGroup(priority=priorities[i])
            groups.append(g)
        g.indices.append(i)
        g.tokens += counter.count_message(rec)
        g.pinned = g.pinned or i in pinned
        g.pending -= set(rec.result_ids)
        g.pending |= {c.id for c in rec.tool_calls}
    return groups


def naive_select(
    messages: list[Any],
    *,
    counter: TokenCounter,
    budget: int,
    strategy: str,
    pinned: set[int] | None = None,
    priorities: list[int] | None = None,
    max_messages: int | None = None,
) -> list[int] | str:
    """Indices kept (system prompt first), or ``"overflow"``.

    ``budget`` is the input budget (window minus reserve). The first message is the system prompt
    when its role is system/developer. Strategies: sliding_window, priority.
    """
    pinned = pinned or set()
    priorities = priorities or [0] * len(messages)
    system: list[int] = []
    rest = list(range(len(messages)))
    fixed = counter.prompt_overhead
    if messages and normalize(messages[0]).role in ("system", "developer"):
        system = [0]
        rest = rest[1:]
        fixed += counter.count_message(normalize(messages[0]))
    sub = [messages[i] for i in rest]
    groups = build_groups(
        sub, counter, {rest.index(p) for p in pinned if p in rest}, [priorities[i] for i in rest]
    )
    for g in groups:
        g.indices = [rest[i] for i in g.indices]
    if groups and groups[-1].pending:
        groups = groups[:-1]  # an open group is never sent
    # the latest user message: the group of the last message the person wrote (a user message
    # that only carries tool results does not count), if that group is complete and unpinned
    last_user = max((i for i in rest if normalize(messages[i]).is_user_turn), default=None)
    p = None
    for gi, g in enumerate(groups):
        if last_user is not None and last_user in g.indices and not g.pinned:
            p = gi
    room = budget - fixed - sum(g.tokens for g in groups if g.pinned)
    tp = groups[p].tokens if p is not None else 0
    if tp > room:
        return "overflow"
    keep: set[int] = {gi for gi, g in enumerate(groups) if g.pinned}
    n = len(groups)

    def cost(gis: range) -> int:
        return sum(groups[g].tokens for g in gis if not groups[g].pinned)

    def msgs(gis: range) -> int:
        return sum(len(groups[g].indices) for g in gis)

    if strategy == "sliding_window":
        s = next(
            s
            for s in range(n + 1)
            if cost(range(s, n)) <= room
            and (max_messages is None or msgs(range(s, n)) <= max_messages)
        )
        if p is not None and p < s:
            keep.add(p)
            cap = None if max_messages is None else max(max_messages - len(groups[p].indices), 0)
            s = next(
                t
                for t in range(max(s, p + 1), n + 1)
                if cost(range(t, n)) <= room - tp and (cap is None or msgs(range(t, n)) <= cap)
            )
        keep |= set(range(s, n))
    elif strategy == "priority":
        kept = {gi for gi, g in enumerate(groups) if not g.pinned}
        order = sorted((g.priority, gi) for gi, g in enumerate(groups) if not g.pinned and gi != p)
        for _, gi in order:
            if sum(groups[k].tokens for k in kept) <= room:
                break
            kept.discard(gi)
        keep |= kept
    else:
        raise ValueError(strategy)
    out = list(system)
    for gi in sorted(keep):
        out.extend(groups[gi].indices)
    return out
