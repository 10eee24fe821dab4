"""A deliberately naive statement of the trimming semantics, used as a test oracle.

No prefix sums, no bisect, no levels: plain loops over the whole history, recounting everything
on every call. The fast manager must return exactly what this returns.

It shares no code with the library: messages (the OpenAI and Anthropic dict shapes that
``conversations.py`` generates) are read by :func:`naive_read`, and counted by
:class:`NaiveCounter`, a from-scratch statement of the default estimate (ceil(UTF-16 chars / 4)
plus 3 per message, plus 3 per prompt).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


def _units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


@dataclass
class NaiveRead:
    role: str
    call_ids: list[str]
    result_ids: list[str]
    chars: int
    has_text: bool

    @property
    def is_user_turn(self) -> bool:
        return self.role == "user" and (self.has_text or not self.result_ids)


def naive_read(m: dict[str, Any]) -> NaiveRead:
    """Role, tool ids and charged characters of an OpenAI or Anthropic dict."""
    calls: list[str] = []
    results: list[str] = []
    chars = 0
    text = 0
    content = m.get("content")
    if isinstance(content, str):
        text += _units(content)
    elif isinstance(content, list):
        for block in content:
            if block["type"] == "text":
                text += _units(block["text"])
            elif block["type"] == "tool_use":
                calls.append(block["id"])
                arguments = json.dumps(block["input"], separators=(",", ":"), ensure_ascii=False)
                chars += _units(block["name"]) + _units(arguments)
            elif block["type"] == "tool_result":
                results.append(block["tool_use_id"])
                chars += _units(block["content"])
    for call in m.get("tool_calls") or ():
        calls.append(call["id"])
        function = call["function"]
        # A call without ``arguments`` is read as one with none (the empty string).
        chars += _units(function["name"]) + _units(function.get("arguments", ""))
    if m["role"] == "tool":
        results.append(m["tool_call_id"])
        chars, text = chars + text, 0  # a tool message's content is its result
        return NaiveRead("tool", calls, results, chars, False)
    return NaiveRead(m["role"], calls, results, chars + text, text > 0)


class NaiveCounter:
    """ceil(chars / 4) + 3 per message; 3 more per prompt (the reply priming)."""

    prompt_overhead = 3

    def read(self, m: dict[str, Any]) -> NaiveRead:
        return naive_read(m)

    def count(self, m: dict[str, Any]) -> int:
        return -(-naive_read(m).chars // 4) + 3

    def count_prompt(self, messages: list[dict[str, Any]]) -> int:
        return sum(self.count(m) for m in messages) + self.prompt_overhead


@dataclass
class NaiveGroup:
    indices: list[int] = field(default_factory=list)
    tokens: int = 0
    pinned: bool = False
    priority: int = 0
    pending: set[str] = field(default_factory=set)


def build_groups(
    messages: list[Any], counter: Any, pinned: set[int], priorities: list[int]
) -> list[NaiveGroup]:
    groups: list[NaiveGroup] = []
    for i, m in enumerate(messages):
        rec = counter.read(m)
        if groups and groups[-1].pending and rec.result_ids:
            g = groups[-1]
            g.priority = max(g.priority, priorities[i])
        else:
            g = NaiveGroup(priority=priorities[i])
            groups.append(g)
        g.indices.append(i)
        g.tokens += counter.count(m)
        g.pinned = g.pinned or i in pinned
        g.pending -= set(rec.result_ids)
        g.pending |= set(rec.call_ids)
    return groups


def naive_select(
    messages: list[Any],
    *,
    counter: Any,
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
    if messages and messages[0]["role"] in ("system", "developer"):
        system = [0]
        rest = rest[1:]
        fixed += counter.count(messages[0])
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
    last_user = max((i for i in rest if counter.read(messages[i]).is_user_turn), default=None)
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


def naive_fifo_held(
    messages: list[Any], pinned: set[int], budget: int, caps: list[int] | None = None
) -> list[list[int]]:
    """Held message indices after each add, by replaying FIFO eviction one group at a time.

    ``caps[n]``: what the history may take when message ``n`` is added, when something outside
    ``messages`` changes it (a system prompt or summary set apart, a calibrated budget); by
    default the budget less reply priming and a leading system message. A leading system
    message is always held. After each add, while the unpinned groups held exceed the room
    (the cap less the pinned groups) and the latest user turn fits, the oldest held groups are
    dropped one at a time, except pinned ones, a group still awaiting results, the newest
    complete tool exchange (the view cuts it to fit instead; see docs/guide/pruning.md) and the
    latest user turn's group, which stays until a newer user turn arrives.

    Plain loops: every add recounts the groups still held (so long runs stay affordable when the
    budget is small), and nothing is shared with the library.
    """
    counter = NaiveCounter()
    history: list[list[int]] = []
    groups: list[NaiveGroup] = []
    live: list[int] = []  # groups not evicted, oldest first
    sys_first = bool(messages) and messages[0]["role"] in ("system", "developer")
    fixed = counter.prompt_overhead + (counter.count(messages[0]) if sys_first else 0)
    user_group: int | None = None  # the group holding the latest user turn
    kept_p: int | None = None  # that group, kept while eviction passed it
    for n, message in enumerate(messages):
        read = naive_read(message)
        if not (sys_first and n == 0):
            if groups and groups[-1].pending and read.result_ids:
                group = groups[-1]
            else:
                group = NaiveGroup()
                groups.append(group)
                live.append(len(groups) - 1)
            group.indices.append(n)
            group.tokens += counter.count(message)
            group.pinned = group.pinned or n in pinned
            group.pending -= set(read.result_ids)
            group.pending |= set(read.call_ids)
            if read.is_user_turn:
                user_group = len(groups) - 1
        cap = budget - fixed if caps is None else caps[n]
        p = user_group if user_group is not None and not groups[user_group].pinned else None
        if kept_p is not None and kept_p != p and read.is_user_turn:
            live.remove(kept_p)
            kept_p = None
        room = cap - sum(groups[g].tokens for g in live if groups[g].pinned)
        tp = groups[p].tokens if p is not None else 0

        def trimmable() -> int:
            return sum(groups[g].tokens for g in live if not groups[g].pinned)

        if trimmable() > room and room >= tp:
            open_last = len(groups) - 1 if groups[-1].pending else None
            newest = len(groups) - (2 if open_last is not None else 1)
            newest_exchange = (
                newest
                if newest >= 0 and naive_read(messages[groups[newest].indices[-1]]).result_ids
                else None
            )
            for gi in list(live):
                if trimmable() <= room:
                    break
                if groups[gi].pinned or gi in (open_last, newest_exchange):
                    continue
                if gi == p:
                    kept_p = p
                    continue
                live.remove(gi)
        history.append(([0] if sys_first else []) + [i for g in live for i in groups[g].indices])
    return history
