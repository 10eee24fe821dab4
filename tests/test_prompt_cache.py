"""Cache reports agree with an independent prefix computation under each provider's rules.

The oracle below shares no code with ``context_manager.prompt_cache``: it reads plain string
messages, counts them as the ``chars`` counter is documented to (``ceil(chars / 4) + 3`` a
message, ``+ 3`` a prompt) and states each provider's rule from its documentation:

* OpenAI: a prompt prefix of >= 1,024 tokens is cached, in 128-token steps;
* Gemini: implicit caching from the model's minimum (2,048 on 2.5 models, 4,096 on Gemini 3),
  none on Gemini 1.x and 2.0 (explicit caching only);
* Anthropic: entries exist at breakpoints only (last message, end of the system prompt, end of
  the previous turn, each when its prefix holds the model's minimum); a breakpoint reads an
  entry of the previous request at most 20 blocks back; reads cost 0.1x, writes 1.25x (5 min)
  or 2x (1 h).
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_manager import MessageContextManager
from context_manager.compaction.pruning import ToolResultPruning
from context_manager.events import CacheReported
from context_manager.prompt_cache import (
    CacheTracker,
    cache_report,
    cache_rules,
    request_of,
    track_cache,
)
from context_manager.prompt_cache.report import compare

Msg = dict[str, Any]


# -- the oracle ------------------------------------------------------------------------------
def tokens(message: Msg) -> int:
    return math.ceil(len(message["content"]) / 4) + 3


def prefix_tokens(messages: list[Msg], n: int) -> int:
    return sum(tokens(m) for m in messages[:n])


def shared_count(before: list[Msg], now: list[Msg]) -> int:
    n = 0
    while n < min(len(before), len(now)) and before[n] == now[n]:
        n += 1
    return n


def openai_cached(before: list[Msg], now: list[Msg]) -> int:
    shared = prefix_tokens(now, shared_count(before, now))
    return shared - shared % 128 if shared >= 1024 else 0


def gemini_cached(before: list[Msg], now: list[Msg], minimum: int) -> int:
    shared = prefix_tokens(now, shared_count(before, now))
    return shared if shared >= minimum else 0


def anthropic_marks(messages: list[Msg], minimum: int) -> list[int]:
    candidates = [len(messages)]
    if messages and messages[0]["role"] == "system":
        candidates.append(1)
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if users and users[-1] > 0:
        candidates.append(users[-1])
    marks: list[int] = []
    for b in candidates:
        if b not in marks and len(marks) < 4 and b > 0 and prefix_tokens(messages, b) >= minimum:
            marks.append(b)
    return marks


def anthropic_cached(before: list[Msg], now: list[Msg], minimum: int) -> tuple[int, int]:
    """(read, written): one block per plain message, lookback 20 blocks."""
    n = shared_count(before, now)
    entries = [b for b in anthropic_marks(before, minimum) if b <= n]
    marks = anthropic_marks(now, minimum)
    reads = [b for c in marks for b in entries if b <= c and c - b <= 20]
    read = max(reads, default=0)
    last = max(marks, default=0)
    written = prefix_tokens(now, last) - prefix_tokens(now, read) if last > read else 0
    return prefix_tokens(now, read), written


# -- data ------------------------------------------------------------------------------------
def text(tag: str, chars: int) -> str:
    return (tag + ":" + "x" * chars)[: max(chars, len(tag) + 1)]


@st.composite
def request_pairs(draw: st.DrawFn) -> tuple[list[Msg], list[Msg]]:
    """Two requests of one conversation: a window of history each, maybe a new system prompt,
    maybe an edited message."""
    n = draw(st.integers(2, 30))
    history = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": text(f"m{i}", draw(st.integers(1, 3000))),
        }
        for i in range(n)
    ]
    system = {"role": "system", "content": text("sys", draw(st.integers(1, 6000)))}
    a = draw(st.integers(0, n - 1))
    b = draw(st.integers(a + 1, n))
    c = draw(st.integers(a, min(b, n - 1)))
    d = draw(st.integers(max(b, c + 1), n))
    before = [system, *history[a:b]]
    now = [system, *history[c:d]]
    if draw(st.booleans()) and draw(st.booleans()):
        now[0] = {"role": "system", "content": system["content"] + " (changed)"}
    if draw(st.booleans()) and len(now) > 2:
        k = draw(st.integers(1, len(now) - 1))
        now[k] = {**now[k], "content": now[k]["content"] + " (edited)"}
    return before, now


# -- agreement with the oracle ----------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(request_pairs())
def test_openai_report_agrees_with_independent_prefix(pair: tuple[list[Msg], list[Msg]]) -> None:
    before, now = pair
    report = cache_report(before, now, "openai", "gpt-5", counter="chars")
    assert report.shared_tokens == prefix_tokens(now, shared_count(before, now))
    assert report.cached_tokens == openai_cached(before, now)
    assert report.written_tokens == 0
    assert report.prompt_tokens == prefix_tokens(now, len(now)) + 3


@settings(max_examples=300, deadline=None)
@given(request_pairs(), st.sampled_from([("gemini-2.5-flash", 2048), ("gemini-3-pro", 4096)]))
def test_gemini_report_agrees_with_independent_prefix(
    pair: tuple[list[Msg], list[Msg]], model: tuple[str, int]
) -> None:
    before, now = pair
    report = cache_report(before, now, "gemini", model[0], counter="chars")
    assert report.cached_tokens == gemini_cached(before, now, model[1])


ANTHROPIC_MODELS = [
    ("claude-sonnet-4-5", 1024),
    ("claude-3-5-haiku-20241022", 2048),
    ("claude-haiku-4-5", 4096),
    ("claude-opus-4-5", 4096),
]


@settings(max_examples=300, deadline=None)
@given(request_pairs(), st.sampled_from(ANTHROPIC_MODELS))
def test_anthropic_report_agrees_with_independent_breakpoint_model(
    pair: tuple[list[Msg], list[Msg]], model: tuple[str, int]
) -> None:
    before, now = pair
    report = cache_report(before, now, "anthropic", model[0], counter="chars")
    read, written = anthropic_cached(before, now, model[1])
    assert (report.cached_tokens, report.written_tokens) == (read, written)
    total = prefix_tokens(now, len(now)) + 3
    assert report.cost == pytest.approx(0.1 * read + 1.25 * written + (total - read - written))


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_manager_session_reports_agree_with_independent_prefix(provider: str) -> None:
    """Every request of a growing, trimmed session, as the manager reports it."""
    manager = MessageContextManager(
        6_000, reserve_tokens=0, counter="chars", retention_ratio=0.7, system_prompt="s" * 5_000
    )
    track_cache(
        manager,
        provider,
        {"openai": "gpt-5", "anthropic": "claude-sonnet-4-5"}.get(provider, "gemini-2.5-pro"),
    )
    minimum = {"openai": 1024, "anthropic": 1024, "gemini": 2048}[provider]
    previous: list[Msg] | None = None
    checked = 0
    reasons = set()
    cached = 0
    for turn in range(60):
        manager.add({"role": "user", "content": text(f"q{turn}", 300 + 37 * (turn % 7))})
        manager.add({"role": "assistant", "content": text(f"a{turn}", 900 + 53 * (turn % 5))})
        context = manager.get_context()
        report = manager.stats().cache
        assert report is not None
        if previous is None:
            assert report.reason == "first_request"
        elif provider == "openai":
            assert report.cached_tokens == openai_cached(previous, context)
        elif provider == "gemini":
            assert report.cached_tokens == gemini_cached(previous, context, minimum)
        else:
            read, written = anthropic_cached(previous, context, minimum)
            assert (report.cached_tokens, report.written_tokens) == (read, written)
        checked += previous is not None
        reasons.add(report.reason)
        cached += report.cached_tokens
        previous = context
    assert checked == 59
    assert {"extended", "cut_moved"} <= reasons and cached > 0


# -- the rules, one at a time (values from the providers' docs) ---------------------------------
def _chat(*sizes: int, system: int = 0) -> list[Msg]:
    out: list[Msg] = [{"role": "system", "content": text("sys", system)}] if system else []
    for i, size in enumerate(sizes):
        out.append({"role": "user" if i % 2 == 0 else "assistant", "content": text(f"m{i}", size)})
    return out


def test_openai_caches_from_1024_tokens_in_128_token_steps() -> None:
    # 4,384 chars -> 1,096 + 3 = 1,099 tokens shared: 1,024 cached
    before = _chat(4_384)
    now = [*before, *_chat(40)[0:1]]
    assert cache_report(before, now, "openai", counter="chars").cached_tokens == 1024
    longer = _chat(5_400)  # 1,350 + 3 = 1,353 shared: 1,280 cached (10 steps of 128)
    report = cache_report(
        longer, [*longer, {"role": "user", "content": "next"}], "openai", counter="chars"
    )
    assert report.cached_tokens == 1280
    short = _chat(4_000)  # 1,003 tokens: under the minimum
    report = cache_report(
        short, [*short, {"role": "user", "content": "n"}], "openai", counter="chars"
    )
    assert (report.cached_tokens, report.limit) == (0, "below_minimum")


def test_openai_cached_price_follows_the_model_family() -> None:
    assert cache_rules("openai", "gpt-5-mini").read_price == 0.10
    assert cache_rules("openai", "gpt-4.1").read_price == 0.25
    assert cache_rules("openai", "gpt-4o-2024-08-06").read_price == 0.50
    # OpenAI's price list: o1 $15 / $7.50 cached; o1-mini and o3-mini $1.10 / $0.55; o3 $2 /
    # $0.50; o4-mini $1.10 / $0.275; o1-pro and o3-pro list no cached-input price.
    prices = {"o1": 0.50, "o1-mini": 0.50, "o3-mini-2025-01-31": 0.50, "o3": 0.25}
    prices |= {"o4-mini": 0.25, "o1-pro": 1.0, "o3-pro": 1.0}
    assert {model: cache_rules("openai", model).read_price for model in prices} == prices


@pytest.mark.parametrize(
    "model", ["gemini-1.5-pro-002", "models/gemini-1.5-flash", "gemini-2.0-flash-001", "gemini-pro"]
)
def test_gemini_before_2_5_has_no_implicit_cache(model: str) -> None:
    # Google's "Context caching" page: implicit caching is on for Gemini 2.5 and newer only;
    # older models cache only through explicit cachedContents entries.
    before = _chat(20_000)  # 5,003 tokens shared: over every model's minimum
    now = [*before, {"role": "user", "content": "next"}]
    report = cache_report(before, now, "gemini", model, counter="chars")
    assert (report.shared_tokens, report.cached_tokens, report.limit) == (5003, 0, "no_cache")
    assert report.cost == report.prompt_tokens  # billed in full
    assert cache_rules("gemini", model).caches is False
    newer = cache_report(before, now, "gemini", "gemini-2.5-flash", counter="chars")
    assert (newer.cached_tokens, newer.limit) == (5003, None)
    assert cache_rules("gemini", "gemini-3-pro-preview").min_tokens == 4096


def test_prompt_cache_key_change_shares_nothing() -> None:
    rules = cache_rules("openai")
    first = request_of(_chat(8_000), counter="chars", cache_key="a")
    second = request_of(_chat(8_000, 100), counter="chars", cache_key="b")
    report = compare(first, second, rules)
    assert (report.reason, report.cached_tokens) == ("cache_key_changed", 0)


def test_anthropic_minimum_prefix_depends_on_the_model() -> None:
    assert cache_rules("anthropic", "claude-sonnet-4-5-20250929").min_tokens == 1024
    assert cache_rules("anthropic", "claude-opus-4-6").min_tokens == 4096
    assert cache_rules("anthropic", "claude-haiku-4-5").min_tokens == 4096
    assert cache_rules("anthropic", "claude-3-haiku-20240307").min_tokens == 2048
    before = _chat(6_000)  # 1,503 tokens: cached on Sonnet 4.5, not on Haiku 4.5
    now = [*before, {"role": "assistant", "content": "ok"}]
    assert (
        cache_report(before, now, "anthropic", "claude-sonnet-4-5", counter="chars").cached_tokens
        == 1503
    )
    haiku = cache_report(before, now, "anthropic", "claude-haiku-4-5", counter="chars")
    assert (haiku.cached_tokens, haiku.written_tokens) == (0, 0)


def test_anthropic_write_price_depends_on_the_ttl() -> None:
    assert (
        cache_rules("anthropic").write_price,
        cache_rules("anthropic", ttl="1h").write_price,
    ) == (
        1.25,
        2.0,
    )
    assert cache_rules("anthropic").read_price == 0.10
    first = cache_report(None, _chat(8_000), "anthropic", counter="chars", ttl="1h")
    assert first.written_tokens == 2003 and first.cost == pytest.approx(2003 * 2.0 + 3)


def test_anthropic_breakpoint_reads_at_most_20_blocks_back() -> None:
    rules = cache_rules("anthropic")
    base = _chat(8_000)
    for added, hit in ((20, True), (21, False)):
        now = [*base, *({"role": "assistant", "content": f"b{i}"} for i in range(added))]
        before = request_of(base, counter="chars", breakpoints=(1,))
        after = request_of(now, counter="chars", breakpoints=(len(now),))  # automatic: last only
        report = compare(before, after, rules)
        assert (report.cached_tokens == 2003) is hit
        assert report.limit == (None if hit else "lookback")


def test_anthropic_previous_turn_breakpoint_survives_a_wide_turn() -> None:
    """The default placement marks the end of the previous turn, so 30 new blocks still hit."""
    base = _chat(8_000, 40)
    now = [*base, {"role": "user", "content": "go"}]
    now += [{"role": "assistant", "content": f"step {i}"} for i in range(30)]
    report = cache_report(base, now, "anthropic", counter="chars")
    assert report.cached_tokens == prefix_tokens(base, 2) and report.limit is None


def test_anthropic_blocks_count_tool_calls_and_results() -> None:
    call = {
        "role": "assistant",
        "content": "reading",
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
            for i in range(3)
        ],
    }
    request = request_of([call], counter="chars")
    assert request.segments[0].blocks == 4  # a text block and three tool_use blocks


def test_expired_entries_are_not_read() -> None:
    rules = cache_rules("anthropic")
    base = _chat(8_000)
    before = request_of(base, counter="chars", at=0.0)
    late = request_of([*base, {"role": "user", "content": "hi"}], counter="chars", at=301.0)
    report = compare(before, late, rules)
    assert (report.cached_tokens, report.limit) == (0, "expired")
    assert report.written_tokens == late.tokens - 3
    soon = request_of([*base, {"role": "user", "content": "hi"}], counter="chars", at=299.0)
    assert compare(before, soon, rules).cached_tokens == 2003


# -- where and why the prefix broke -----------------------------------------------------------
def test_a_changed_system_prompt_breaks_at_the_start() -> None:
    before = _chat(100, 100, system=5_000)
    now = [{"role": "system", "content": "other"}, *before[1:]]
    report = cache_report(before, now, "openai", counter="chars")
    assert (report.reason, report.section, report.index) == ("system_changed", "system", 0)


def test_changed_tools_break_before_the_system_prompt() -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {}}}
    other = {"type": "function", "function": {"name": "g", "parameters": {}}}
    chat = _chat(100, system=5_000)
    report = cache_report(
        chat, chat, "openai", counter="chars", tools=[other], previous_tools=[tool]
    )
    assert (report.reason, report.section, report.shared_tokens) == ("tools_changed", "tools", 0)


def test_dropping_the_oldest_messages_is_a_moved_cut() -> None:
    chat = _chat(100, 100, 100, 100, system=5_000)
    now = [chat[0], *chat[3:], {"role": "user", "content": "next"}]
    report = cache_report(chat, now, "openai", counter="chars")
    assert (report.reason, report.index) == ("cut_moved", 1)
    assert report.shared_tokens == tokens(chat[0])


def test_an_edited_message_is_named() -> None:
    chat = _chat(100, 100, 100, system=5_000)
    now = [*chat[:2], {**chat[2], "content": "changed"}, *chat[3:]]
    report = cache_report(chat, now, "openai", counter="chars")
    assert (report.reason, report.index) == ("edited", 2)


def test_growth_only_extends_the_prefix() -> None:
    chat = _chat(100, 100, system=5_000)
    report = cache_report(
        chat, [*chat, {"role": "user", "content": "more"}], "openai", counter="chars"
    )
    assert (report.reason, report.index) == ("extended", None)


# -- the manager --------------------------------------------------------------------------------
def test_without_tracking_there_is_no_report_and_no_event() -> None:
    manager = MessageContextManager(2_000, counter="chars")
    events: list[Any] = []
    manager.subscribe(events.append)
    manager.add({"role": "user", "content": "hi"})
    manager.get_context()
    assert manager.stats().cache is None
    assert not any(isinstance(e, CacheReported) for e in events)


def test_each_request_emits_a_cache_report_event() -> None:
    manager = MessageContextManager(20_000, counter="chars", system_prompt="s" * 8_000)
    track_cache(manager, "openai", "gpt-5")
    events: list[Any] = []
    manager.subscribe(lambda e: events.append(e) if isinstance(e, CacheReported) else None)
    for turn in range(3):
        manager.add({"role": "user", "content": f"question {turn}"})
        manager.get_context()
    reports = [e.report for e in events]
    assert [r.reason for r in reports] == ["first_request", "extended", "extended"]
    assert reports[-1] is manager.stats().cache
    assert reports[-1].cached_tokens == (2003 + 3 + 8) // 128 * 128  # system + first question


def test_compaction_is_named_as_the_break() -> None:
    manager = MessageContextManager(20_000, counter="chars", system_prompt="s" * 8_000)
    track_cache(manager, "anthropic")
    for turn in range(4):
        manager.add({"role": "user", "content": f"question {turn}"})
        manager.add({"role": "assistant", "content": f"answer {turn}"})
    manager.get_context()
    manager.apply_compaction({"role": "user", "content": "summary of turns 0-2"}, 6)
    manager.get_context()
    report = manager.stats().cache
    assert (report.reason, report.section, report.index) == ("compacted", "summary", 1)
    assert report.cached_tokens == 2003  # the system prompt's entry is still read


def test_pruning_is_named_as_the_break() -> None:
    pruning = ToolResultPruning(
        max_chars=200, head_chars=50, tail_chars=50, soft_ratio=None, keep_last=1
    )
    manager = MessageContextManager(
        100_000, counter="chars", system_prompt="s" * 8_000, pruning=pruning
    )
    track_cache(manager, "openai")
    reasons = []
    for turn in range(3):
        manager.add({"role": "user", "content": f"look {turn}"})
        call = {
            "id": f"c{turn}",
            "type": "function",
            "function": {"name": "read", "arguments": "{}"},
        }
        manager.add({"role": "assistant", "content": None, "tool_calls": [call]})
        manager.add({"role": "tool", "tool_call_id": f"c{turn}", "content": "r" * 2_000})
        manager.get_context()
        reasons.append(manager.stats().cache.reason)
    assert "pruned" in reasons


def test_tracker_reads_each_message_once() -> None:
    counted: list[int] = []

    class Counting(CacheTracker):
        pass

    tracker = Counting(cache_rules("openai"), "chars", clock=None)
    original = tracker.counter.count_message

    def spy(rec: Any) -> int:
        counted.append(1)
        return original(rec)

    tracker.counter = type("C", (), {"count_message": staticmethod(spy), "prompt_overhead": 3})()  # type: ignore[assignment]
    history: list[Msg] = []
    for turn in range(50):
        history.append({"role": "user", "content": f"q{turn}"})
        tracker.observe(list(history))
    assert len(counted) == 50


@pytest.mark.parametrize("prefix", ["openai/", "azure/", "models/"])
def test_a_provider_prefixed_model_gets_the_models_own_prices(prefix: str) -> None:
    from context_manager.prompt_cache.rules import cache_rules

    plain = cache_rules("openai", "gpt-4o")
    assert cache_rules("openai", prefix + "gpt-4o").read_price == plain.read_price == 0.5
