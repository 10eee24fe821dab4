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
        chars += _units(call["function"]["name"]) + _units(call["function"]["arguments"])
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
