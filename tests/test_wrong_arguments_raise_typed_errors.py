"""Wrong arguments end in the library's typed errors, never a bare ``TypeError``, ``ValueError``,
``RecursionError`` or ``OSError``, and never in silently wrong numbers.

Each group also shows that the right arguments still work, with expected values worked out
here from the inputs (a custom counter's own arithmetic, Pi's real output), not read back from
the library.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import context_manager as cm
from context_manager import prompt_cache as pc
from context_manager import replay as rp
from context_manager.compaction import ExtractiveSummarizer, send_with_recovery, summary_message
from context_manager.counting import estimate_tokens, utf16_len
from context_manager.errors import ConfigurationError, ContextManagerError, StoreError
from context_manager.integrations.langgraph import pre_model_hook
from context_manager.integrations.pydantic_ai import history_processor
from context_manager.interop import read_pi_session
from context_manager.messages import Message
from context_manager.offload import MemoryOffload
from context_manager.providers import fuse_turns, validate

MESSAGES = [{"role": "user", "content": "x" * 4000}] * 20 + [{"role": "user", "content": "last"}]


def _deep(levels: int = 10_000) -> list[Any]:
    """A list nested past the recursion limit (its ``repr`` raises ``RecursionError``)."""
    root: list[Any] = []
    node = root
    for _ in range(levels):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


def _counter_answering(answer: object) -> cm.TokenCounter:
    class Answers(cm.TokenCounter):
        name = "answers"

        def count_text(self, text: str) -> Any:
            return answer

        def count_message(self, message: Message) -> Any:
            return answer

    return Answers()


# -- a custom counter's answers ----------------------------------------------------------------
BAD_COUNTS = [-1000, float("nan"), 2.5, None, "7", True, 10**30, 2**53 + 1]
ENTRY_POINTS: dict[str, Callable[[cm.TokenCounter], object]] = {
    "count_tokens": lambda c: cm.count_tokens(MESSAGES, counter=c),
    "trim": lambda c: cm.trim(MESSAGES, 100, counter=c),
    "manager": lambda c: cm.MessageContextManager(1000, counter=c).extend(MESSAGES),
}


@pytest.mark.parametrize("answer", BAD_COUNTS, ids=repr)
@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_custom_counters_bad_count_is_refused_naming_it(answer: object, entry: str) -> None:
    with pytest.raises(ConfigurationError, match=r"counter 'answers' \(Answers\.count_message\)"):
        ENTRY_POINTS[entry](_counter_answering(answer))


class WordCounter(cm.TokenCounter):
    """One token a word, one a message: arithmetic a test can redo by hand."""

    name = "words"
    prompt_overhead = 2

    def count_text(self, text: str) -> int:
        return len(text.split())

    def count_message(self, message: Message) -> Any:
        return np.int64(len(message.text.split()) + 1)  # an __index__ integer is a count too


def test_a_well_behaved_custom_counter_still_counts_and_trims() -> None:
    messages = [{"role": "user", "content": " ".join(["w"] * n)} for n in (50, 30, 20, 10)]
    assert cm.count_tokens(messages, counter=WordCounter()) == (51 + 31 + 21 + 11) + 2
    kept = cm.trim(messages, 2 + 21 + 11, counter=WordCounter())
    assert [len(m["content"].split()) for m in kept] == [20, 10]
    manager = cm.MessageContextManager(1000, counter=WordCounter(), reserve_tokens=0)
    manager.extend(messages)
    assert manager.stats().used_tokens == (51 + 31 + 21 + 11) + 2
    assert type(WordCounter().count_message(Message("user", "a b"))) is int


def test_a_custom_message_costs_and_bound_are_checked() -> None:
    class Short(WordCounter):
        def message_costs(self, messages: Sequence[Message]) -> list[int]:
            return [1]

    class BadBound(WordCounter):
        def message_bound(self) -> Callable[[Message], int] | None:
            return lambda message: -5

    records = [Message("user", "a"), Message("user", "b")]
    with pytest.raises(ConfigurationError, match="returned 1 counts for 2 messages"):
        Short().message_costs(records)
    bound = BadBound().message_bound()
    assert bound is not None
    with pytest.raises(ConfigurationError, match=r"BadBound\.message_bound"):
        bound(records[0])


@pytest.mark.parametrize("overhead", [-1, float("nan"), "3", None])
def test_a_custom_prompt_overhead_is_checked_when_set(overhead: object) -> None:
    with pytest.raises(ConfigurationError, match="prompt_overhead"):

        class OnTheClass(WordCounter):
            prompt_overhead = overhead  # type: ignore[assignment]

    counter = WordCounter()
    with pytest.raises(ConfigurationError, match="prompt_overhead"):
        counter.prompt_overhead = overhead  # type: ignore[assignment]
    assert counter.prompt_overhead == 2


# -- numbers of the estimator and the model registry --------------------------------------------
BAD_ESTIMATOR_OPTIONS = (
    [{"chars_per_token": value} for value in (float("nan"), float("inf"), 10**400, None, "4", 0)]
    + [{"message_overhead": value} for value in (float("nan"), float("-inf"), -(10**6), None, "3")]
    + [{"prompt_overhead": -1}, {"image_tokens": 1.5}]
)


@pytest.mark.parametrize("options", BAD_ESTIMATOR_OPTIONS, ids=repr)
def test_char_estimator_refuses_a_bad_number_at_construction(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match=next(iter(options))):
        cm.CharEstimator(**options)


def test_char_estimator_still_takes_its_numbers() -> None:
    assert cm.CharEstimator(3).count_text("x" * 7) == 3  # ceil(7 / 3)
    assert cm.CharEstimator(2.5).count_text("x" * 6) == 3  # ceil(6 / 2.5)
    pi = cm.CharEstimator(message_overhead=0, prompt_overhead=0)
    assert cm.count_tokens([{"role": "user", "content": "abcdefgh"}], counter=pi) == 2  # 8 / 4


BAD_MODELS: list[Callable[[], object]] = [
    *(
        (lambda v=v: cm.ModelInfo("zz-typed-errors", v, 10))
        for v in (float("nan"), float("inf"), 10**400, 0, None, True)
    ),
    lambda: cm.ModelInfo("zz-typed-errors", 1000, 10, chars_per_token=float("nan")),
    lambda: cm.ModelInfo("zz-typed-errors", 1000, 10, message_overhead=-1),
    lambda: cm.ModelInfo(None, 1000, 10),  # type: ignore[arg-type]
    lambda: "gpt-4o",
]


@pytest.mark.parametrize("make", BAD_MODELS)
def test_register_model_refuses_a_bad_model(make: Callable[[], Any]) -> None:
    with pytest.raises(ConfigurationError):
        cm.register_model(make())


def test_register_model_still_registers() -> None:
    cm.register_model(cm.ModelInfo("zz-typed-errors-ok", 5000, 100, chars_per_token=3))
    manager = cm.MessageContextManager(model="zz-typed-errors-ok")
    assert manager.max_tokens == 5000


@pytest.mark.parametrize("name", [None, 3, ["gpt-4o"]], ids=repr)
def test_get_model_refuses_a_name_that_is_not_text(name: Any) -> None:
    with pytest.raises(ConfigurationError, match="model name must be a str"):
        cm.get_model(name)


# -- error messages describe any value (short_repr) ---------------------------------------------
DESCRIBED: dict[str, Callable[[], object]] = {
    "max_tokens deep": lambda: cm.MessageContextManager(_deep()),
    "reserve_ratio deep": lambda: cm.MessageContextManager(1000, reserve_ratio=_deep()),
    "trim budget deep": lambda: cm.trim([{"role": "user", "content": "x"}], _deep()),
    "reserve_ratio huge": lambda: cm.MessageContextManager(1000, reserve_ratio=10**5000),
    "warn_ratio huge": lambda: cm.MessageContextManager(1000, warn_ratio=10**5000),
    "retention_ratio huge": lambda: cm.MessageContextManager(1000, retention_ratio=10**5000),
    "model deep": lambda: cm.MessageContextManager(1000, model=_deep()),
    "hook deep": lambda: cm.MessageContextManager(1000, on_evict=_deep()),
    "trim provider deep": lambda: cm.trim([], 100, provider=_deep()),
    "trim validate deep": lambda: cm.trim([], 100, validate=_deep()),
    "trim priorities huge": lambda: cm.trim([], 100, priorities=10**5000),
    "cache_rules provider deep": lambda: pc.cache_rules(_deep()),
    "cache_rules price huge": lambda: pc.cache_rules("anthropic", read_price=10**5000),
    "cache_rules price nan": lambda: pc.cache_rules("anthropic", write_price=float("nan")),
    "replay settings deep": lambda: rp.replay(
        [{"role": "user", "content": "x"}], pc.cache_rules("openai"), budget=100, settings=_deep()
    ),
}


@pytest.mark.parametrize("case", DESCRIBED)
def test_an_option_error_describes_any_value(case: str) -> None:
    with pytest.raises(ConfigurationError):
        DESCRIBED[case]()


def test_short_repr_never_raises_and_stays_short() -> None:
    from context_manager.messages.nesting import short_repr

    class Broken:
        def __repr__(self) -> str:
            raise KeyError("no")

    assert short_repr(_deep()) == "<a list>"
    assert short_repr(Broken()) == "<a Broken>"
    assert short_repr(10**5000) == f"<an integer of {(10**5000).bit_length()} bits>"
    assert short_repr("x" * 10**6, 10) == "'xxxxxx..."
    assert short_repr("abc") == "'abc'"


# -- the CLI, the Pi reader --------------------------------------------------------------------
@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_cli_output_that_cannot_be_written_is_one_error_line(tmp_path: Path) -> None:
    source = tmp_path / "m.json"
    source.write_text('[{"role":"user","content":"hi"}]', encoding="utf-8")
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "context_manager", "count", str(source)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "context-manager: error: cannot write the output: [Errno 28] No space left on device"
    ]


def test_read_pi_session_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="No such file"):
        read_pi_session(tmp_path / "missing.jsonl")
    with pytest.raises(StoreError, match="Is a directory"):
        read_pi_session(tmp_path)
    with pytest.raises(ConfigurationError):
        read_pi_session(None)  # type: ignore[arg-type]


def test_read_pi_session_decodes_invalid_utf8_as_pi_does(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        b'{"type":"session","version":3,"id":"s"}\n'
        b'{"type":"message","id":"a","parentId":null,'
        b'"message":{"role":"user","content":"h\xffi \xed\xa0\x80 \xe2\x82 ok"}}\n'
    )
    # What SessionManager.open(path).buildSessionContext() of @mariozechner/pi-coding-agent
    # 0.73.1 returned for this file under Node (readFileSync "utf8": U+FFFD per bad sequence).
    expected = "h\ufffdi \ufffd\ufffd\ufffd \ufffd ok"
    assert [m["content"] for m in read_pi_session(path)["messages"]] == [expected]


# -- wrong types at other entry points ----------------------------------------------------------
WRONG_TYPES: dict[str, Callable[[], object]] = {
    "compare(str, ...)": lambda: pc.compare(
        "x",  # type: ignore[arg-type]
        pc.request_of([{"role": "user", "content": "hi"}]),
        pc.cache_rules("openai"),
    ),
    "compare(rules=str)": lambda: pc.compare(None, pc.request_of([]), "openai"),  # type: ignore[arg-type]
    "request_of(int)": lambda: pc.request_of(5),  # type: ignore[arg-type]
    "request_of(at=nan)": lambda: pc.request_of([], at=float("nan")),
    "cache_report(int)": lambda: pc.cache_report(None, 5, "openai"),  # type: ignore[arg-type]
    "summary_message(None)": lambda: summary_message(None),  # type: ignore[arg-type]
    "send_with_recovery(send=str)": lambda: send_with_recovery(
        cm.MessageContextManager(1000),
        "not a function",  # type: ignore[arg-type]
    ),
    "request_points(int)": lambda: rp.request_points(5),  # type: ignore[arg-type]
    "recommend(None)": lambda: rp.recommend(None),  # type: ignore[arg-type]
    "table(dict)": lambda: rp.table({1: 2}),  # type: ignore[arg-type]
    "history_processor()(dict)": lambda: history_processor(max_tokens=1000)({1: 2}),  # type: ignore[arg-type]
    "pre_model_hook(bogus=1)": lambda: pre_model_hook(bogus=1),
    "history_processor(bogus=1)": lambda: history_processor(bogus=1),
    "MemoryOffload(lone surrogate)": lambda: MemoryOffload("\ud800"),
    "fuse_turns(None)": lambda: fuse_turns(None),  # type: ignore[arg-type]
    "estimate_tokens(int)": lambda: estimate_tokens(5),  # type: ignore[arg-type]
    "utf16_len(None)": lambda: utf16_len(None),  # type: ignore[arg-type]
    "ExtractiveSummarizer(max_items=str)": lambda: ExtractiveSummarizer(max_items="5"),  # type: ignore[arg-type]
    "ExtractiveSummarizer(chars_per_token=nan)": lambda: ExtractiveSummarizer(
        chars_per_token=float("nan")
    ),
    "ToolResultPruning(image_chars=nan)": lambda: cm.ToolResultPruning(image_chars=float("nan")),  # type: ignore[arg-type]
    "ToolResultPruning(exclude_tools=None)": lambda: cm.ToolResultPruning(exclude_tools=None),  # type: ignore[arg-type]
    "ToolResultPruning(only_tools=5)": lambda: cm.ToolResultPruning(only_tools=5),  # type: ignore[arg-type]
    # a tool definition is an object; the estimator used to count [1, 2] as JSON and go on
    "manager tools=[1, 2]": lambda: cm.MessageContextManager(1000, tools=[1, 2]),
    "trim tools=[[]]": lambda: cm.trim([{"role": "user", "content": "x"}], 1000, tools=[[]]),
}


@pytest.mark.parametrize("case", WRONG_TYPES)
def test_a_wrong_type_is_a_configuration_error(case: str) -> None:
    with pytest.raises(ConfigurationError):
        WRONG_TYPES[case]()


def test_validate_without_a_provider_checks_the_rules_every_provider_shares() -> None:
    """``provider=None`` means no provider's own rules, as in ``trim()`` and the manager: the
    pairing of calls and results is still checked, and nothing is fused."""
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": ""}}],
    }
    two_users = [{"role": "user", "content": "hi"}, {"role": "user", "content": "again"}]
    assert validate(two_users, None) == []
    assert [p.rule for p in validate([*two_users, call], None)] == ["tool-pairing"]
    assert fuse_turns(two_users, None) is two_users


def test_the_right_types_still_work() -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    first = pc.request_of(messages[:1], breakpoints=[1])
    report = pc.compare(first, pc.request_of(messages), pc.cache_rules("openai"))
    assert report.prompt_tokens == pc.request_of(messages).tokens
    assert rp.request_points(messages) == [1]
    assert rp.recommend([]) is None
    assert summary_message("done")["content"].count("done") == 1
    assert send_with_recovery(cm.MessageContextManager(1000), len) == 0
    assert MemoryOffload("sessión").session == "sessión"
    assert history_processor(max_tokens=1000)([]) == []
    assert issubclass(ConfigurationError, ContextManagerError)


@pytest.mark.parametrize(
    "options",
    [
        {"pinned": [0.0]},
        {"pinned": ["a"]},
        {"pinned": [True]},
        {"pinned": 5},
        {"truncate_newest": "no"},
    ],
    ids=repr,
)
def test_trim_refuses_pins_it_cannot_apply_and_flags_that_are_no_bools(
    options: dict[str, Any],
) -> None:
    """A pin that is no index was ignored, and ``truncate_newest="no"`` read as true: the
    caller got a context that did not do what was asked, silently."""
    from context_manager import trim

    with pytest.raises(ConfigurationError):
        trim([{"role": "user", "content": "hi"}], 100, **options)


@pytest.mark.parametrize("pinned", ["yes", 1, None])
def test_add_refuses_a_pin_flag_that_is_no_bool(pinned: object) -> None:
    from context_manager import MessageContextManager

    manager = MessageContextManager(1_000)
    with pytest.raises(ConfigurationError, match="pinned"):
        manager.add({"role": "user", "content": "hi"}, pinned=pinned)  # type: ignore[arg-type]
    assert manager.messages == []
