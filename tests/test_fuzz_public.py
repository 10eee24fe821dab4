"""Hypothesis throws arbitrary values at every public entry point: only ContextManagerError may
escape (never a raw TypeError / ValueError / RecursionError / OverflowError).

A long fuzz run: marked slow (``python -m pytest -m slow``; .ci/run runs it).
"""

from __future__ import annotations

import io
import math
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_manager import MessageContextManager, count_tokens, normalize, trim
from context_manager.cli import main
from context_manager.compaction.pi_rules.overflow import is_context_overflow
from context_manager.errors import ContextManagerError
from context_manager.providers import PROVIDERS, fuse_turns, validate

pytestmark = pytest.mark.slow

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(),
    st.sampled_from([math.nan, math.inf, -math.inf, 10.5, -5, 0, True]),
    st.text(),
    st.sampled_from(["a\ud800b", "high", "user", "assistant", "tool", "", "abc"]),
    st.binary(max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "content",
                    "tool_calls",
                    "tool_call_id",
                    "id",
                    "type",
                    "name",
                    "parts",
                    "text",
                    "x",
                ]
            ),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=12,
)
blocks = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking"]) | values},
        optional={"text": values, "id": values, "tool_use_id": values, "content": values},
    ),
    max_size=3,
)
messages = st.one_of(
    values,
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "system", "tool", "x"]), "content": values}
    ),
    # the shapes the fast paths read first, with a hostile role or block type
    st.fixed_dictionaries({"role": values, "content": st.text(max_size=8) | blocks}),
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]), "content": blocks},
        optional={"tool_calls": values, "tool_call_id": values},
    ),
)
OPTIONS = [
    "max_tokens",
    "model",
    "counter",
    "strategy",
    "reserve_ratio",
    "reserve_tokens",
    "max_messages",
    "retention_ratio",
    "warn_ratio",
    "on_near_limit",
    "on_evict",
    "repair",
    "tools",
    "system_prompt",
]
fuzz = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def only_typed(call: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return call(*args, **kwargs)
    except ContextManagerError:
        return None


@fuzz
@given(st.dictionaries(st.sampled_from(OPTIONS), values, max_size=4))
def test_constructor(options: dict[str, Any]) -> None:
    only_typed(MessageContextManager, **options)


@fuzz
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "add",
                    "add_counted",
                    "usage",
                    "count",
                    "can_add",
                    "system",
                    "clear",
                    "context",
                    "stats",
                    "revert",
                    "checkpoint",
                ]
            ),
            messages,
            values,
        ),
        max_size=8,
    )
)
def test_manager_methods(calls: list[tuple[str, Any, Any]]) -> None:
    manager = MessageContextManager(2000, reserve_tokens=100)
    for name, arg, extra in calls:
        if name == "add":
            only_typed(
                manager.add,
                arg,
                priority=extra if isinstance(extra, int) else 0,
                pinned=bool(extra) if isinstance(extra, bool) else False,
            )
            only_typed(manager.add, arg, priority=extra)
            only_typed(manager.add, arg, pinned=extra)
        elif name == "add_counted":
            only_typed(manager.add_counted, arg, extra)
        elif name == "usage":
            only_typed(manager.record_usage, arg)
        elif name == "count":
            only_typed(manager.count_message, arg)
        elif name == "can_add":
            only_typed(manager.can_add, arg)
        elif name == "system":
            only_typed(manager.set_system_prompt, arg)
        elif name == "clear":
            only_typed(manager.clear, keep_system_prompt=extra)
        elif name == "revert":
            only_typed(manager.revert_to, arg)
        elif name == "checkpoint":
            only_typed(manager.checkpoint)
        only_typed(manager.get_context)
        only_typed(manager.stats)


@fuzz
@given(
    st.lists(messages, max_size=5) | values,
    values,
    st.dictionaries(
        st.sampled_from(
            [
                "counter",
                "strategy",
                "validate",
                "max_messages",
                "priorities",
                "pinned",
                "repair",
                "tools",
                "retention_ratio",
            ]
        ),
        values,
        max_size=3,
    ),
)
def test_trim(batch: Any, max_tokens: Any, options: dict[str, Any]) -> None:
    only_typed(trim, batch, max_tokens, **options)


@fuzz
@given(
    st.lists(messages, max_size=4) | values,
    st.sampled_from(["gpt-4o", "nope", ""]) | values,
    values,
)
def test_count_tokens(batch: Any, model: Any, tools: Any) -> None:
    only_typed(count_tokens, batch, model, tools)


@fuzz
@given(messages)
def test_normalize(message: Any) -> None:
    only_typed(normalize, message)


@fuzz
@given(
    st.lists(messages, max_size=5),
    st.sampled_from(sorted(PROVIDERS)),
    st.sampled_from(["sliding_window", "priority"]),
    st.integers(1, 3_000),
)
def test_providers(batch: list[Any], provider: str, strategy: str, max_tokens: int) -> None:
    """validate(), the provider rules and the Bedrock join read hostile lists too."""
    only_typed(validate, batch, provider)
    only_typed(fuse_turns, batch)
    kept = only_typed(trim, batch, max_tokens, provider=provider, strategy=strategy)
    manager = MessageContextManager(max_tokens + 500, provider=provider, reserve_tokens=0)
    for message in batch:
        only_typed(manager.add, message)
    only_typed(manager.get_context)
    assert kept is None or isinstance(kept, list)


@fuzz
@given(
    values | st.fixed_dictionaries({"stopReason": values, "errorMessage": values, "usage": values}),
    values,
)
def test_is_context_overflow(message: Any, window: Any) -> None:
    only_typed(is_context_overflow, message, window)


@fuzz
@given(
    st.lists(
        st.sampled_from(
            [
                "count",
                "trim",
                "stats",
                "--budget-tokens",
                "--window",
                "0",
                "-5",
                "10",
                "--model",
                "gpt-4o",
                "--counter",
                "zz",
                "--strategy",
                "priority",
                "--reserve-tokens",
                "--repair",
                "FILE",
                "-x",
            ]
        ),
        max_size=7,
    ),
    st.binary(max_size=64),
)
def test_cli_main(tmp_path: Path, argv: list[str], content: bytes) -> None:
    path = tmp_path / "in.json"
    path.write_bytes(content)
    argv = [str(path) if a == "FILE" else a for a in argv]
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse's own usage errors
            assert exc.code == 2
            return
    assert status in (0, 1, 2)


def test_escapes_are_reported_by_name() -> None:
    """The harness itself: an untyped error would fail the test (not be swallowed)."""
    with pytest.raises(TypeError):
        only_typed(lambda: (_ for _ in ()).throw(TypeError("raw")))


def test_an_absurd_window_is_a_configuration_error() -> None:
    with pytest.raises(ContextManagerError, match="at most 2"):
        MessageContextManager(10**400)
    assert MessageContextManager(2**53).max_tokens == 2**53
