"""``trim()`` (one backwards scan, an optional caller-owned count cache) gives exactly what a
filled manager gives, reading only what it keeps.

Random protocol-valid histories (OpenAI, Anthropic and Responses-item shapes, parallel calls,
reasoning items, system messages mid-history), random pins, priorities, budgets and
``max_messages``, the sliding window and priority, every provider rule set (the scan keeps them)
and ``retention_ratio`` (the full path): the kept messages (by identity), or the same
``ContextOverflowError`` figures. A broken message placed in what is kept raises the same
``InvalidMessageError`` index as the manager. Only the public API is used.
"""

from __future__ import annotations

import copy
import json
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_manager import ContextOverflowError, MessageContextManager, trim
from context_manager.budget.strategies import FIFO
from context_manager.counting import CharEstimator, MessageCountCache, SafeEstimator
from context_manager.errors import ConfigurationError, InvalidMessageError
from context_manager.messages import normalize
from context_manager.messages.groups import ToolProtocol, joins_previous

from ..conversations import TEXTS, conversation
from ..naive import naive_read

COUNTER = CharEstimator()
EXAMPLES = settings(
    max_examples=150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@st.composite
def scenario(draw: st.DrawFn) -> tuple[list[Any], set[int], list[int], int, int | None]:
    messages = draw(conversation())
    # An open tail (calls still awaiting results) now and then.
    if messages and draw(st.booleans()) and messages[-1].get("role") == "tool":
        messages = messages[:-1]
    n = len(messages)
    pinned = set(draw(st.lists(st.integers(-1, n), max_size=3)))
    priorities = [draw(st.integers(0, 3)) for _ in range(n)]
    total = sum(COUNTER.count_message(normalize(m)) for m in messages) + 3
    budget = draw(st.integers(1, total + 20))
    cap = draw(st.none() | st.integers(0, n + 1))
    return messages, pinned, priorities, budget, cap


def manager_context(messages: list[Any], strategy: str, **options: Any) -> Any:
    pins = options.pop("pinned")
    priorities = options.pop("priorities")
    manager = MessageContextManager(
        options.pop("max_tokens"), strategy=strategy, reserve_tokens=0, **options
    )
    manager.close_interrupted = False  # trim() checks a given list as it is
    try:
        for i, m in enumerate(messages):
            manager.add(m, priority=priorities[i], pinned=i in pins)
        return manager.get_context()
    except ContextOverflowError as exc:
        return ("overflow", exc.required, exc.budget)
    except InvalidMessageError as exc:
        return ("invalid", exc.index)


def trim_context(messages: list[Any], strategy: str, **options: Any) -> Any:
    try:
        return trim(messages, options.pop("max_tokens"), strategy=strategy, **options)
    except ContextOverflowError as exc:
        return ("overflow", exc.required, exc.budget)
    except InvalidMessageError as exc:
        return ("invalid", exc.index)


def same(a: Any, b: Any, given: list[Any] | None = None) -> bool:
    """The same outcome, message for message: the caller's own objects, or equal messages that
    each call built itself (a joined turn; with ``given``, any message not among them, such as
    a tool result trimmed to fit)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    built = {id(m) for m in given} if given is not None else None
    return len(a) == len(b) and all(
        x is y
        or _joined(x, y)
        or (built is not None and x == y and id(x) not in built and id(y) not in built)
        for x, y in zip(a, b, strict=True)
    )


def _joined(x: Any, y: Any) -> bool:
    """Two equal turns that a strict provider joined (each call builds its own joined dict)."""
    return isinstance(x, dict) and x == y and x.keys() == {"role", "content"}


@pytest.mark.parametrize("strategy", ["sliding_window", "priority"])
@pytest.mark.parametrize("cached", [True, False])
@EXAMPLES
@given(data=scenario())
def test_trim_equals_manager(strategy: str, cached: bool, data: Any) -> None:
    messages, pinned, priorities, budget, cap = data
    if strategy == "priority":
        cap = None
    before = copy.deepcopy(messages)
    options = {
        "max_tokens": budget,
        "max_messages": cap,
        "pinned": pinned,
        "priorities": priorities,
    }
    expected = manager_context(messages, strategy, **dict(options))
    cache = MessageCountCache() if cached else None
    for _ in range(2):  # the second call reads the count cache
        got = trim_context(messages, strategy, cache=cache, **dict(options))
        assert same(got, expected, messages), (got, expected)
    # Reloaded from a database: equal contents, new objects; the answer maps one to one.
    reloaded = copy.deepcopy(messages)
    got = trim_context(reloaded, strategy, cache=cache, **dict(options))
    if isinstance(expected, tuple):
        assert got == expected
    else:
        # A message either call built (a tool result cut to fit) is compared by value.
        ids = {id(m): i for i, m in enumerate(reloaded)}
        old = {id(m): i for i, m in enumerate(messages)}
        assert [ids.get(id(m), m) for m in got] == [old.get(id(m), m) for m in expected]
    assert messages == before, "input mutated"


PROVIDERS = [None, "openai", "openai-responses", "anthropic", "bedrock", "gemini"]


@st.composite
def responses_items(draw: st.DrawFn) -> list[Any]:
    """A Responses API input list: messages, reasoning items, (parallel) call items, outputs."""
    items: list[Any] = []
    if draw(st.booleans()):
        items.append({"role": "developer", "content": draw(TEXTS)})
    for n in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "calls"]))
        if kind == "user":
            items.append({"role": "user", "content": draw(TEXTS)})
        elif kind == "assistant":
            text = draw(TEXTS)
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text}],
                }
            )
        else:
            if draw(st.booleans()):
                summary = [{"type": "summary_text", "text": draw(TEXTS)}]
                items.append({"type": "reasoning", "id": f"rs{n}", "summary": summary})
            ids = [f"c{n}_{j}" for j in range(draw(st.integers(1, 3)))]
            for i in ids:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": i,
                        "name": "fn",
                        "arguments": f'{{"q":"{draw(TEXTS)}"}}',
                    }
                )
            for i in ids:
                items.append({"type": "function_call_output", "call_id": i, "output": draw(TEXTS)})
    return items


@st.composite
def any_scenario(draw: st.DrawFn) -> tuple[list[Any], set[int], list[int], int, int | None]:
    if not draw(st.booleans()):
        return draw(scenario())
    messages = draw(responses_items())
    # An open tail now and then: the last output is missing.
    if messages and draw(st.booleans()) and messages[-1].get("type") == "function_call_output":
        messages = messages[:-1]
    n = len(messages)
    pinned = set(draw(st.lists(st.integers(0, n), max_size=3)))
    total = sum(COUNTER.count_message(normalize(m)) for m in messages) + 3
    budget = draw(st.integers(1, total + 20))
    cap = draw(st.none() | st.integers(0, n + 1))
    return messages, pinned, [0] * n, budget, cap


@EXAMPLES
@given(
    data=any_scenario(),
    provider=st.sampled_from(PROVIDERS),
    ratio=st.sampled_from([None, None, 0.5, 0.7]),
)
def test_trim_equals_manager_with_provider_and_retention(
    data: Any, provider: str | None, ratio: float | None
) -> None:
    """``provider=`` runs the backwards scan, ``retention_ratio`` the full path: both equal
    a manager given the same settings."""
    messages, pinned, priorities, budget, cap = data
    options = {
        "max_tokens": budget,
        "max_messages": cap,
        "pinned": pinned,
        "priorities": priorities,
        "provider": provider,
        "retention_ratio": ratio,
    }
    expected = manager_context(messages, "sliding_window", **dict(options))
    cache = MessageCountCache()
    for _ in range(2):
        got = trim_context(messages, "sliding_window", cache=cache, **dict(options))
        assert same(got, expected, messages), (got, expected)
    assert same(trim_context(messages, "sliding_window", **dict(options)), expected, messages)


@EXAMPLES
@given(data=any_scenario())
def test_the_scans_group_edges_are_the_protocols(data: Any) -> None:
    """``joins_previous`` (how the backwards scan reads group edges) says of every message what
    ``ToolProtocol`` says, on protocol-valid streams and on every tail of one that starts at a
    group: so replaying what ``trim`` keeps settles its groups too."""
    records = [normalize(m) for m in data[0]]
    flags = ToolProtocol().replay(records)
    local = [False][: len(records)] + [bool(joins_previous(a, b)) for a, b in pairwise(records)]
    assert flags == local
    for start in [k for k, joined in enumerate(flags) if not joined][1:4]:
        assert ToolProtocol().replay(records[start:], start) == [False, *local[start + 1 :]]


class _Reads(list[Any]):
    """A history that records which messages were read (by index or by slice)."""

    def __init__(self, items: list[Any]) -> None:
        super().__init__(items)
        self.read: set[int] = set()

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            self.read.update(range(*key.indices(len(self))))
        else:
            self.read.add(key % len(self))
        return super().__getitem__(key)


def _long_chat(n: int) -> list[Any]:
    history: list[Any] = [{"role": "system", "content": "Be brief."}]
    for i in range(n):
        history.append({"role": "user", "content": f"question {i} " * 20})
        if i % 3 == 0:
            call = {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            history.append({"role": "assistant", "content": None, "tool_calls": [call]})
            history.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"r {i} " * 30})
        history.append({"role": "assistant", "content": f"answer {i} " * 20})
    return history


@pytest.mark.parametrize("provider", [None, "anthropic", "bedrock", "gemini", "openai"])
@pytest.mark.parametrize("counter", [CharEstimator(4.25), SafeEstimator()])
def test_trim_reads_only_what_it_keeps(provider: str | None, counter: Any) -> None:
    """O(kept): the messages read are the system prompt, the kept ones and a few past the cut,
    never the rest of the history (at most twice what is kept, plus a first block)."""
    history = _long_chat(1_000)
    for budget in (300, 3_000, 30_000):
        spy = _Reads(history)
        kept = trim(spy, budget, counter=counter, provider=provider)
        expected = manager_context(
            history,
            "sliding_window",
            max_tokens=budget,
            counter=counter,
            provider=provider,
            pinned=set(),
            priorities=[0] * len(history),
        )
        assert same(kept, expected)
        assert len(spy.read) <= 2 * len(kept) + 20, (budget, len(kept), len(spy.read))
        assert min(spy.read - {0}) >= len(history) - 2 * len(kept) - 20


def test_fifo_is_a_configuration_error_in_trim() -> None:
    """A FIFO manager evicts on each add, so its answer depends on the order of the adds; a
    list has none. ``trim`` names the strategy that fits a list instead of taking another."""
    history = [{"role": "user", "content": "hi"}]
    for strategy in ("fifo", FIFO()):
        with pytest.raises(ConfigurationError, match="sliding_window"):
            trim(history, 1_000, strategy=strategy)


def test_fifo_and_the_sliding_window_keep_different_messages_from_one_list() -> None:
    """Why ``"fifo"`` is no alias of the sliding window in ``trim``: fed the same list, the two
    managers keep different messages (FIFO evicted the reply while an older user turn was the
    latest one, and never gets it back)."""
    history = [
        {"role": "developer", "content": "a"},
        {"role": "user", "content": "a"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "aaaaa"}],
        },
        {"role": "user", "content": ""},
    ]
    kept = {}
    for strategy in ("fifo", "sliding_window"):
        manager = MessageContextManager(15, reserve_tokens=0, strategy=strategy, counter="chars")
        for message in history:
            manager.add(message)
        kept[strategy] = manager.get_context()
    assert kept["fifo"] != kept["sliding_window"]
    assert same(trim(history, 15, counter="chars"), kept["sliding_window"])


BROKEN = [
    {"role": "tool", "tool_call_id": "nope", "content": "orphan"},
    {"role": "robot", "content": "x"},
    {"role": "user", "content": 42},
    {"role": "assistant", "content": None, "tool_calls": "bad"},
]


@pytest.mark.parametrize("strategy", ["sliding_window", "priority"])
@EXAMPLES
@given(data=scenario(), broken=st.sampled_from(BROKEN), back=st.integers(0, 2))
def test_broken_message_in_the_kept_part(strategy: str, data: Any, broken: Any, back: int) -> None:
    messages = data[0]
    at = max(0, len(messages) - back)
    messages = [*messages[:at], broken, *messages[at:]]
    options = {
        "max_tokens": 10**6,
        "max_messages": None,
        "pinned": set(),
        "priorities": [0] * len(messages),
    }
    expected = manager_context(messages, strategy, **dict(options))
    assert same(trim_context(messages, strategy, **dict(options)), expected)


def test_overflow_figures_are_the_managers() -> None:
    messages = [{"role": "system", "content": "s" * 400}, {"role": "user", "content": "u" * 400}]
    with pytest.raises(ContextOverflowError) as info:
        trim(messages, 150, counter="chars")
    assert (info.value.required, info.value.budget) == (3 + 103 + 103, 150)


def test_a_callers_cache_skips_what_it_counted_before() -> None:
    """A reloaded history (equal contents, new objects) plus one new message: with the caller's
    cache, only the new message is counted (and what the read-ahead takes past the cut that
    was not read before), and the answer is the uncached one."""
    counter = SafeEstimator()  # no fast lane: every count goes through the cache
    cache = MessageCountCache()
    history = [
        {"role": "user" if i % 2 else "assistant", "content": f"m{i} " * 50} for i in range(2000)
    ]
    first = trim(history, 5_000, counter=counter, cache=cache)
    misses = cache.misses
    reloaded = [*copy.deepcopy(history), {"role": "user", "content": "new"}]
    second = trim(reloaded, 5_000, counter=counter, cache=cache)
    assert 1 <= cache.misses - misses <= 3
    assert same(second, trim(reloaded, 5_000, counter=counter))
    assert len(second) >= len(first) - 1
    assert len(first) < 100 and len(cache) < 150  # only what was read, not 2,000 messages


def test_trim_keeps_nothing_between_calls_unless_given_a_cache() -> None:
    """No process-wide state: after ``trim`` returns, nothing holds a message's text but the
    caller (and the cache the caller passed, until the caller clears or drops it)."""
    text = "".join(["a private message ", str(id(object())), " " * 200])
    history = [{"role": "user", "content": text}]
    baseline = sys.getrefcount(text)
    for counter in (None, SafeEstimator()):
        assert trim(history, 1_000, counter=counter)[0] is history[0]
        assert sys.getrefcount(text) == baseline
    cache = MessageCountCache()
    trim(history, 1_000, counter=SafeEstimator(), cache=cache)
    assert sys.getrefcount(text) > baseline and len(cache) == 1
    cache.clear()
    assert sys.getrefcount(text) == baseline


def test_cache_must_be_a_message_count_cache() -> None:
    with pytest.raises(ConfigurationError, match="MessageCountCache"):
        trim([{"role": "user", "content": "hi"}], 100, cache={})  # type: ignore[arg-type]


def _reference_cases(suite: str) -> list[dict[str, Any]]:
    root = Path(__file__).resolve().parents[2] / "compat_fixtures" / "fixtures"
    cases: list[dict[str, Any]] = json.loads((root / f"{suite}.json").read_text("utf-8"))["cases"]
    return cases


@pytest.mark.parametrize(
    "suite",
    ["reference.trim.sliding_window", "reference.trim.priority", "reference.trim.invalid"],
)
def test_reference_fixtures_through_the_backwards_scan(suite: str) -> None:
    """The TS reference's cases with ``validate="kept"`` (the fast path, the default).

    The reference rejects a broken message anywhere; the default only checks what it keeps, so
    an expected error may legitimately become a kept list when the broken message is dropped.
    """
    from context_manager.parity.reference import budget_from_options, estimator_from_options

    mismatches = []
    for case in _reference_cases(suite):
        messages, options = case["input"]["messages"], case["input"]["options"]
        try:
            kept = trim(
                messages,
                budget_from_options(options),
                strategy=options.get("strategy") or "sliding_window",
                max_messages=options.get("maxMessages"),
                priorities=options.get("priorities"),
                pinned=options.get("pinned") or (),
                counter=estimator_from_options(options.get("estimator")),
                truncate_newest=False,  # the TS reference predates the cut-to-fit rule
            )
            ids = {id(m): i for i, m in enumerate(messages)}
            got: Any = [ids[id(m)] for m in kept]
        except ContextOverflowError as exc:
            got = {"error": "overflow", "required": exc.required, "budget": exc.budget}
        except InvalidMessageError as exc:
            got = {"error": "invalid_message", "index": exc.index}
        except ConfigurationError:
            got = {"error": "configuration"}
        expected = case["expected"]
        if got != expected and not (
            isinstance(expected, dict) and expected["error"] == "invalid_message"
        ):
            mismatches.append((case["id"], expected, got))
    assert mismatches == [], mismatches[:5]


class _Unhashable(CharEstimator):
    """A custom counter that defines equality and so is unhashable: a cache still serves it."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Unhashable)

    __hash__ = None  # type: ignore[assignment]


def test_an_unhashable_counter_works_with_a_cache() -> None:
    counter = _Unhashable()
    history = [{"role": "user", "content": "x" * 400}, {"role": "assistant", "content": "y" * 400}]
    expected = manager_context(
        history, "sliding_window", max_tokens=150, counter=counter, pinned=set(), priorities=[0, 0]
    )
    cache = MessageCountCache()
    for _ in range(2):
        assert same(trim(history, 150, counter=counter, cache=cache), expected)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "ascii only",
        "é" * 10,
        "中文" * 1000,
        "😀",
        "a😀b" * 10,
        "\ud800 lone high",
        "lone low \udfff",
        "\ud83d\ude00 a pair written as two surrogates",
        "x" * 1_000_000 + "😀",
        "é" * 1_000_000,
    ],
)
def test_utf16_len_matches_an_encoding(text: str) -> None:
    from context_manager.counting import utf16_len

    assert utf16_len(text) == len(text.encode("utf-16-le", "surrogatepass")) // 2


class _Text(str):
    """A str subclass: CPython stores its characters apart from the object (a larger size)."""


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec=None, exclude_categories=()), max_size=300), st.booleans())
def test_utf16_len_counts_astral_characters_twice(text: str, subclass: bool) -> None:
    from context_manager.counting import utf16_len

    value = _Text(text) if subclass else text
    assert utf16_len(value) == sum(2 if ord(ch) > 0xFFFF else 1 for ch in text)


HOSTILE = [
    {"role": ["user"], "content": "an unhashable role"},
    {"role": "user", "content": 5},
    {"role": "narrator", "content": "an unknown role"},
    "not a message",
    None,
    {"role": "tool", "tool_call_id": "t0_0", "content": "a result out of place"},
    {"role": "tool", "tool_call_id": ["x"], "content": "an unhashable id"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": ["x"], "function": {}}]},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "d", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "d", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        ],
    },
    {"role": "user", "content": "\ud800 lone surrogate " + " " * 500},
    {"role": "assistant", "content": "😀" * 300},
    # A key the shape needs is missing (the walk reads them by subscript).
    {"content": "no role"},
    {"role": "user", "text": "no content"},
    {"role": "user"},
    {"role": "tool", "content": "no call id", "name": "f"},
    {"role": "assistant", "tool_calls": [{"id": "t0_0", "function": {"name": "f"}}]},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "t0_0"}]},
    {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f"}}]},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "t0_0", "function": {}}]},
]


@st.composite
def chat_history(draw: st.DrawFn) -> list[Any]:
    """OpenAI chat dicts only: plain turns and (parallel) tool groups, the chat pass's shapes."""
    out: list[Any] = []
    for n in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["user", "assistant", "tools"]))
        if kind != "tools":
            out.append({"role": kind, "content": draw(TEXTS)})
            continue
        ids = [f"c{n}_{j}" for j in range(draw(st.integers(1, 3)))]
        calls = [
            {"id": i, "type": "function", "function": {"name": "f", "arguments": draw(TEXTS)}}
            for i in ids
        ]
        out.append({"role": "assistant", "content": draw(st.none() | TEXTS), "tool_calls": calls})
        out += [{"role": "tool", "tool_call_id": i, "content": draw(TEXTS)} for i in ids]
    return out


@EXAMPLES
@given(
    messages=chat_history() | chat_history() | conversation(),
    mutate=st.none() | st.tuples(st.integers(0, 60), st.sampled_from(HOSTILE)),
    extra=st.integers(0, 400),
    system=st.booleans(),
)
def test_chat_histories_hostile_or_not_give_the_managers_answer(
    messages: list[Any], mutate: Any, extra: int, system: bool
) -> None:
    """Plain chat dicts (the shapes the estimator reads without ``normalize``), valid or with
    a hostile message anywhere. Valid: every budget gives the manager's answer. Hostile: when
    everything fits, the manager's answer or error; with a cut, the manager's answer or error,
    or an answer that leaves the hostile message out (beyond the cut, it is never read)."""
    messages = ([{"role": "system", "content": "Be brief."}] if system else []) + messages
    bad = -1
    if mutate is not None and messages:
        at, hostile = mutate
        bad = at % len(messages)
        messages[bad] = hostile
    total = 3 + sum(len(json.dumps(m)) // 4 for m in messages)  # roughly what all of it costs
    for budget in (1, total // 8 + extra + 1, total // 3 + 1, total // 2 + extra, 10**9):
        got = outcome(trim, messages, budget, counter="chars")  # the estimator's quick reading
        options = {"max_tokens": budget, "max_messages": None, "pinned": set()}
        expected = manager_context(
            messages, "sliding_window", priorities=[0] * len(messages), counter="chars", **options
        )
        if bad < 0 or budget == 10**9 or same_outcome(got, expected):
            assert same_outcome(got, expected), (got, expected)
        else:  # the hostile message left out, or kept where it breaks nothing (a valid message
            # put after a call whose results it replaced: the broken call is beyond the cut)
            assert isinstance(got, list), got
            assert all(m is not messages[bad] for m in got) or pairs_hold(got), got


def pairs_hold(kept: list[Any]) -> bool:
    """Every result answers a call made before it in ``kept`` and every call is answered before
    the next message that is not a result (the naive reading, independent of the library)."""
    waiting: set[str] = set()
    for message in kept:
        read = naive_read(message)
        if read.result_ids:
            if not set(read.result_ids) <= waiting:
                return False
            waiting -= set(read.result_ids)
            continue
        if waiting:
            return False
        waiting = set(read.call_ids)
    return not waiting


def same_outcome(a: Any, b: Any) -> bool:
    return same(a, b) if isinstance(a, list) and isinstance(b, list) else bool(a == b)


def outcome(call: Any, *args: Any, **options: Any) -> Any:
    try:
        return call(*args, **options)
    except ContextOverflowError as exc:
        return ("overflow", exc.required, exc.budget)
    except InvalidMessageError as exc:
        return ("invalid", exc.index)


@pytest.mark.parametrize(
    "call",
    [
        {"id": "a", "function": {}},
        {"id": "a", "function": {"arguments": "{}"}},
        {"id": "a"},
        {"function": {"name": "f", "arguments": "{}"}},
        {"id": "a", "function": {"name": "f", "arguments": 5}},
        {"id": "a", "function": {"name": "f"}},  # arguments may be left out: "" is sent
    ],
)
@pytest.mark.parametrize("content", ["", None, "missing"])
def test_calls_missing_a_key_give_the_managers_answer(call: Any, content: Any) -> None:
    """A tool call whose message lacks a key the estimator's quick reading expects: ``trim``
    answers (or raises) as the manager when the call is kept."""
    issued: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": [call]}
    if content == "missing":
        del issued["content"]
    history = [
        {"role": "user", "content": "look it up"},
        issued,
        {"role": "tool", "tool_call_id": "a", "content": "found"},
        {"role": "user", "content": "thanks"},
    ]
    options = {"max_tokens": 1_000, "max_messages": None, "pinned": set()}
    expected = manager_context(history, "sliding_window", priorities=[0] * 4, **options)
    assert same_outcome(outcome(trim, history, 1_000), expected)
