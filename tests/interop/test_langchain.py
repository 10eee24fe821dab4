"""LangChain ``trim_messages`` parity: JS fixtures, live LangChain Python, and focused behaviour.

* Every case of ``langchain.trimMessages`` (made by the real LangChain.js) passes.
* On the same inputs, and on seeded random conversations with every counter form, our answer
  equals the real ``langchain_core.messages.trim_messages`` (0 differences).
* Every listed JS-vs-Python divergence is real: ours equals Python and differs from JS.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from context_manager.counting.estimate import CharEstimator
from context_manager.errors import ConfigurationError, InvalidMessageError
from context_manager.interop import langchain as lc
from context_manager.interop.langchain_counting import chars4_tokens, content_of
from context_manager.messages import normalize
from context_manager.parity import langchain as lc_parity
from context_manager.parity.verify import verify_file

lc_utils: Any
try:  # LangChain Python is a test extra; without it only the JS-fixture tests run
    from langchain_core.messages import utils as lc_utils
except ImportError:  # pragma: no cover - exercised only without the extra
    lc_utils = None

needs_langchain = pytest.mark.skipif(lc_utils is None, reason="needs langchain-core (test extra)")

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "compat_fixtures" / "fixtures"
SUITE = FIXTURES / "langchain.trimMessages.json"
JS_ONLY = FIXTURES / "langchain.trimMessages.jsOnly.json"


def _load_reference() -> ModuleType:
    """The generator's LangChain Python runner (compat_fixtures/gen/langchain_reference.py)."""
    path = ROOT / "compat_fixtures" / "gen" / "langchain_reference.py"
    spec = importlib.util.spec_from_file_location("langchain_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reference() -> ModuleType:
    if lc_utils is None:
        pytest.skip("needs langchain-core (test extra)")
    return _load_reference()


@pytest.fixture(scope="module")
def suite() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SUITE.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def js_only() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(JS_ONLY.read_text(encoding="utf-8"))
    return data


# ------------------------------------------------------------------ fixtures from LangChain.js


def test_every_js_fixture_case_passes() -> None:
    result = verify_file(SUITE, lc_parity.FIXTURE_SUITES, max_failures=3)
    assert result.error is None
    assert result.package == "@langchain/core@1.4.0"
    assert result.total >= 1000
    assert result.failures == []
    assert result.passed == result.total


def test_fixture_suite_has_the_promised_variety(suite: dict[str, Any]) -> None:
    inputs = [case["input"] for case in suite["cases"]]
    expected = [case["expected"] for case in suite["cases"]]
    assert {i["strategy"] for i in inputs} == {"first", "last"}
    assert sum(i["allow_partial"] for i in inputs) > 300
    assert sum(i["include_system"] for i in inputs) > 200
    assert sum(bool(i["start_on"]) for i in inputs) > 150
    assert sum(bool(i["end_on"]) for i in inputs) > 150
    lists = [e for e in expected if isinstance(e, list)]
    assert sum(any("content" in kept for kept in e) for e in lists) > 50  # partial cuts
    assert sum(e == [] for e in lists) > 50  # nothing fits
    pairs = zip(expected, inputs, strict=True)
    assert sum(len(e) == len(i["messages"]) for e, i in pairs) > 50  # everything fits
    assert sum(isinstance(e, dict) for e in expected) >= 3  # invalid option combinations
    everything = json.dumps(inputs, ensure_ascii=False)
    for needle in ("😀", "日本語", "e\u0301", "image_url", '"name"', '"tool_call_id"'):
        assert needle in everything
    assert any(len(m.get("tool_calls") or []) > 1 for i in inputs for m in i["messages"])


# ------------------------------------------------------------------ equality with LangChain Python


def _ours(case: Mapping[str, Any]) -> Any:
    return json.loads(json.dumps(lc_parity.run_trim_case(case)))


def test_fixture_inputs_equal_langchain_python(
    suite: dict[str, Any], js_only: dict[str, Any], reference: ModuleType
) -> None:
    cases = [c["input"] for c in suite["cases"]] + [d["input"] for d in js_only["divergences"]]
    differences = [case for case in cases if _ours(case) != reference.run(case)]
    assert len(cases) > 1100
    assert differences == []


def test_listed_divergences_are_real(js_only: dict[str, Any]) -> None:
    assert js_only["divergences"], "the generator found no JS/Python divergence"
    for item in js_only["divergences"]:
        ours = _ours(item["input"])
        assert ours == item["python"], item["id"]
        assert ours != item["js"], item["id"]
    assert set(js_only["kinds"]) <= {
        "include_system, system alone over budget: JS returns [undefined]",
        "include_system, system alone over budget: JS cuts the system message",
        "include_system + start_on not met: JS returns [undefined]",
        "allow_partial: JS repeats the cut message",
        "allow_partial: different content blocks kept",
        "allow_partial: different text cut",
    }


WORDS = ["hello", "world", "😀", "日本語", "e\u0301", "a\nb", "line\n", "x" * 30, "", " ", "'q'"]


def _random_text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 9)))


def _random_content(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.55:
        return _random_text(rng)
    if roll < 0.6:
        return None
    if roll < 0.62:
        return []
    parts: list[Any] = []
    for _ in range(rng.randint(1, 4)):
        kind = rng.random()
        if kind < 0.6:
            parts.append({"type": "text", "text": _random_text(rng)})
        elif kind < 0.75:
            parts.append(_random_text(rng))  # bare string part (LangChain accepts it)
        elif kind < 0.9:
            parts.append({"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}})
        else:
            parts.append({"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}})
    return parts


def random_conversation(rng: random.Random) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if rng.random() < 0.6:
        messages.append({"role": rng.choice(["system", "developer"]), "content": "be brief"})
    for _ in range(rng.randint(0, 10)):
        roll = rng.random()
        message: dict[str, Any]
        if roll < 0.35:
            message = {"role": "user", "content": _random_content(rng)}
        elif roll < 0.7:
            message = {"role": "assistant", "content": _random_content(rng)}
            if rng.random() < 0.4:
                message["tool_calls"] = [
                    {
                        "id": f"c{rng.randint(0, 99)}",
                        "type": "function",
                        "function": {
                            "name": "f",
                            "arguments": json.dumps({"q": _random_text(rng), "n": 1.5}),
                        },
                    }
                    for _ in range(rng.randint(1, 3))
                ]
        elif roll < 0.9:
            message = {
                "role": "tool",
                "content": _random_content(rng) or "ok",
                "tool_call_id": f"c{rng.randint(0, 99)}",
            }
        else:
            message = {"role": "system", "content": _random_text(rng)}
        if rng.random() < 0.1:
            message["name"] = rng.choice(["bob", "Zoë"])
        messages.append(message)
    return messages


def random_options(rng: random.Random) -> dict[str, Any]:
    strategy = rng.choice(["first", "last"])
    options: dict[str, Any] = {
        "max_tokens": rng.randint(-2, 220),
        "strategy": strategy,
        "allow_partial": rng.random() < 0.5,
    }
    if strategy == "last":
        options["include_system"] = rng.random() < 0.5
        options["start_on"] = rng.choice([None, "human", ["human", "ai"], "tool"])
    options["end_on"] = rng.choice([None, "human", "ai", ["human", "tool"], "system"])
    if rng.random() < 0.2:
        options["text_splitter"] = lc.split_after_spaces
    return options


def _encode_ours(kept: list[tuple[int, Any]], messages: list[dict[str, Any]]) -> list[Any]:
    out = []
    for index, message in kept:
        same = content_of(message) == content_of(messages[index])
        if same and message is not messages[index]:  # a cut that kept everything is a copy
            same = message == {**messages[index], "content": message["content"]}
        out.append(("same", index) if same else ("cut", message["content"]))
    return out


def _encode_theirs(kept: list[Any], originals: list[Any]) -> list[Any]:
    out = []
    for message in kept:
        index = int(message.id[1:])
        same = message.content == originals[index].content
        out.append(("same", index) if same else ("cut", message.content))
    return out


def _as_langchain(messages: list[dict[str, Any]]) -> list[Any]:
    return list(
        lc_utils.convert_to_messages([{**m, "id": f"m{i}"} for i, m in enumerate(messages)])
    )


def _dict_of(message: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The dict a LangChain message came from, with the (possibly cut) content it carries now."""
    return {**messages[int(message.id[1:])], "content": message.content}


DEFAULTS: dict[str, Any] = {
    "strategy": "last",
    "allow_partial": False,
    "include_system": False,
    "start_on": None,
    "end_on": None,
    "text_splitter": None,
}


def _compare(seed: int, cases: int, counter: str) -> list[Any]:
    rng = random.Random(seed)
    differences = []
    for _ in range(cases):
        messages = random_conversation(rng)
        options = random_options(rng)
        originals = _as_langchain(messages)
        snapshot = copy.deepcopy(messages)
        ours_calls: list[int] = []
        theirs_calls: list[int] = []
        ours_counter: Any
        theirs_counter: Any
        if counter == "approximate":
            ours_counter = theirs_counter = "approximate"
        elif counter == "per_message":
            ours_counter = lc.per_message(chars4_tokens)

            def theirs_counter(msgs: list[Any], messages: list[Any] = messages) -> int:
                return sum(chars4_tokens(_dict_of(m, messages)) for m in msgs)
        else:  # a NON-additive list counter: results must still match, call for call

            def weigh(contents: list[Any]) -> int:
                return sum(len(json.dumps(c)) for c in contents) // 3 + len(contents) ** 2

            def ours_counter(msgs: list[Any], calls: list[int] = ours_calls) -> int:
                calls.append(len(msgs))
                return weigh([content_of(m) for m in msgs])

            def theirs_counter(msgs: list[Any], calls: list[int] = theirs_calls) -> int:
                calls.append(len(msgs))
                return weigh([m.content for m in msgs])

        try:
            trimmed = lc._trim(messages, **{**DEFAULTS, **options, "token_counter": ours_counter})
            ours: Any = _encode_ours(trimmed, messages)
        except ConfigurationError:
            ours = "error"
        try:
            theirs: Any = _encode_theirs(
                lc_utils.trim_messages(
                    _as_langchain(messages), token_counter=theirs_counter, **options
                ),
                originals,
            )
        except ValueError:
            theirs = "error"
        assert messages == snapshot, "the caller's messages were mutated"
        if ours != theirs or ours_calls != theirs_calls:
            differences.append((messages, options, ours, theirs))
    return differences


@needs_langchain
@pytest.mark.parametrize("counter", ["approximate", "per_message", "list"])
def test_seeded_conversations_equal_langchain_python(counter: str) -> None:
    assert _compare(seed=20261121, cases=1500, counter=counter)[:3] == []


@needs_langchain
def test_count_tokens_approximately_equals_langchain_python() -> None:
    rng = random.Random(7)
    tools = [
        {
            "type": "function",
            "function": {
                "name": "search",
                "description": "Sök 日本",
                "parameters": {"type": "object"},
            },
        }
    ]
    settings: list[dict[str, Any]] = [
        {},
        {"chars_per_token": 3.3, "extra_tokens_per_message": 2.5},
        {"count_name": False, "tokens_per_image": 100},
        {"tools": tools},
    ]
    for _ in range(600):
        messages = random_conversation(rng)
        for setting in settings:
            ours = lc.count_tokens_approximately(messages, **setting)
            theirs = lc_utils.count_tokens_approximately(_as_langchain(messages), **setting)
            assert ours == theirs, (messages, setting)


# ------------------------------------------------------------------ focused behaviour

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "first question"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "content": "A", "tool_call_id": "a"},
    {"role": "tool", "content": "B", "tool_call_id": "b"},
    {"role": "user", "content": "line one\nline two\nline three"},
]
ONE_EACH = lc.per_message(lambda message: 1)


def test_returns_the_callers_dicts_unchanged() -> None:
    before = copy.deepcopy(CHAT)
    kept = lc.trim_messages(CHAT, max_tokens=3, token_counter=ONE_EACH)
    assert kept == CHAT[-3:]
    assert all(k is m for k, m in zip(kept, CHAT[-3:], strict=True))
    assert before == CHAT


def test_orphans_tool_results_like_langchain() -> None:
    kept = lc.trim_messages(CHAT, max_tokens=2, token_counter=ONE_EACH)
    assert [m["role"] for m in kept] == ["tool", "user"]  # its call "a" was dropped


def test_include_system_keeps_system_even_when_it_alone_is_over_budget() -> None:
    counter = lc.per_message(lambda m: 10 if m["role"] == "system" else 1)
    kept = lc.trim_messages(CHAT, max_tokens=5, token_counter=counter, include_system=True)
    assert kept == [CHAT[0]]  # LangChain Python; LangChain.js returns [undefined]
    kept = lc.trim_messages(CHAT, max_tokens=12, token_counter=counter, include_system=True)
    assert kept == [CHAT[0], CHAT[-2], CHAT[-1]]


@needs_langchain
def test_system_over_budget_leaves_zero_budget_not_a_negative_one() -> None:
    def cost(role: str) -> int:
        return {"system": 10, "tool": 0}.get(role, 1)

    ours = lc.trim_messages(
        CHAT,
        max_tokens=4,
        include_system=True,
        token_counter=lc.per_message(lambda m: cost(m["role"])),
    )
    theirs = lc_utils.trim_messages(
        _as_langchain(CHAT),
        max_tokens=4,
        include_system=True,
        token_counter=lambda msgs: sum(cost(m.type) for m in msgs),
    )
    assert [m["role"] for m in ours] == ["system"] == [m.type for m in theirs]
    ours = lc.trim_messages(
        CHAT[:5],
        max_tokens=4,
        include_system=True,
        token_counter=lc.per_message(lambda m: cost(m["role"])),
    )
    theirs = lc_utils.trim_messages(
        _as_langchain(CHAT[:5]),
        max_tokens=4,
        include_system=True,
        token_counter=lambda msgs: sum(cost(m.type) for m in msgs),
    )
    assert ours == [CHAT[0], CHAT[3], CHAT[4]]  # the free tool results still fit in 0 tokens
    assert [m.id for m in theirs] == ["m0", "m3", "m4"]


def test_start_on_and_end_on_accept_openai_roles_and_langchain_types() -> None:
    for start_on in ("user", "human", ["human"], ("user", "tool")):
        kept = lc.trim_messages(CHAT, max_tokens=4, token_counter=ONE_EACH, start_on=start_on)
        expected = CHAT[-3:] if "tool" in start_on else CHAT[-1:]
        assert kept == expected, start_on
    kept = lc.trim_messages(
        CHAT, max_tokens=10, token_counter=ONE_EACH, strategy="first", end_on="assistant"
    )
    assert kept == CHAT[:3]
    assert lc.trim_messages(CHAT, max_tokens=10, token_counter=ONE_EACH, end_on="system") == [
        CHAT[0]
    ]


def test_allow_partial_keeps_the_newest_lines_as_a_copy() -> None:
    counter = lc.per_message(lambda m: len(content_of(m)))
    kept = lc.trim_messages(CHAT[-1:], max_tokens=20, token_counter=counter, allow_partial=True)
    assert kept == [{"role": "user", "content": "line two\nline three"}]
    assert kept[0] is not CHAT[-1] and CHAT[-1]["content"].startswith("line one")
    kept = lc.trim_messages(
        CHAT[-1:], max_tokens=20, token_counter=counter, allow_partial=True, strategy="first"
    )
    assert kept == [{"role": "user", "content": "line one\nline two\n"}]


def test_allow_partial_on_parts_keeps_whole_parts_from_the_near_end() -> None:
    parts = [
        {"type": "text", "text": "a" * 8},
        {"type": "text", "text": "b" * 8},
        {"type": "text", "text": "c" * 8},
    ]
    message = {"role": "user", "content": parts}
    counter = lc.per_message(
        lambda m: (
            sum(len(p["text"]) for p in m["content"])
            if isinstance(m["content"], list)
            else len(m["content"])
        )
    )
    last = lc.trim_messages([message], max_tokens=17, token_counter=counter, allow_partial=True)
    first = lc.trim_messages(
        [message], max_tokens=17, token_counter=counter, allow_partial=True, strategy="first"
    )
    assert last == [{"role": "user", "content": parts[1:]}]
    assert first == [{"role": "user", "content": parts[:2]}]


@needs_langchain
def test_default_text_splitter_keeps_newlines_and_round_trips() -> None:
    for text in ("", "a", "a\n", "a\nb", "\n\n", "x\ny\nz\n"):
        pieces = lc.default_text_splitter(text)
        assert "".join(pieces) == text
        assert pieces == lc_utils._default_text_splitter(text)


def test_token_counter_instance_counts_per_message() -> None:
    estimator = CharEstimator()
    budget = sum(estimator.count_message(normalize(m)) for m in CHAT[-2:])
    kept = lc.trim_messages(CHAT, max_tokens=budget, token_counter=estimator)
    assert kept == CHAT[-2:]


def test_approximate_counts_code_points_roles_names_and_tool_calls() -> None:
    assert lc.count_tokens_approximately([{"role": "user", "content": "😀" * 4}]) == 1 + 3 + 1
    named = {"role": "user", "content": "abcd", "name": "bob"}
    assert lc.count_tokens_approximately([named]) == math.ceil(11 / 4) + 3
    assert lc.count_tokens_approximately([named], count_name=False) == 2 + 3
    image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
    assert lc.count_tokens_approximately([image]) == 85 + 1 + 3
    call = {"role": "assistant", "content": "", "tool_calls": CHAT[2]["tool_calls"][:1]}
    expected_repr = repr([{"name": "f", "args": {}, "id": "a", "type": "tool_call"}])
    assert (
        lc.count_tokens_approximately([call])
        == math.ceil((len(expected_repr) + len("assistant")) / 4) + 3
    )


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"strategy": "first", "start_on": "human"}, ConfigurationError),
        ({"strategy": "first", "include_system": True}, ConfigurationError),
        ({"strategy": "middle"}, ConfigurationError),
        ({"start_on": "Human"}, ConfigurationError),
        ({"end_on": ["developer"]}, ConfigurationError),
        ({"token_counter": "tiktoken"}, ConfigurationError),
        ({"token_counter": 42}, ConfigurationError),
        ({"max_tokens": "10"}, ConfigurationError),
    ],
)
def test_bad_options_raise_typed_errors(options: dict[str, Any], error: type[Exception]) -> None:
    arguments: dict[str, Any] = {"max_tokens": 10, "token_counter": ONE_EACH, **options}
    with pytest.raises(error):
        lc.trim_messages(CHAT, **arguments)


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "robot", "content": "x"},
        "just a string",
        {"role": "tool", "content": "no call id"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": "{not json"}}],
        },
    ],
)
def test_bad_messages_raise_invalid_message_error_with_index(bad: Any) -> None:
    with pytest.raises(InvalidMessageError) as caught:
        lc.count_tokens_approximately([CHAT[1], bad])
    assert caught.value.index == 1
    with pytest.raises(InvalidMessageError) as caught:
        lc.trim_messages([CHAT[1], bad], max_tokens=10, token_counter=ONE_EACH)
    assert caught.value.index == 1


# ------------------------------------------------------------------ generator determinism


@pytest.mark.slow
@needs_langchain
@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node to run the generator")
def test_generator_is_deterministic(tmp_path: Path) -> None:
    fixtures_dir = ROOT / "compat_fixtures"
    if not (fixtures_dir / "node_modules" / "@langchain" / "core").exists():
        pytest.skip("compat_fixtures/node_modules is not installed")
    env = {**os.environ, "FIXTURE_ONLY": "langchain", "PYTHON": sys.executable}
    subprocess.run(
        ["node", "generate.mjs", str(tmp_path)],
        cwd=fixtures_dir,
        env=env,
        check=True,
        capture_output=True,
    )
    for name in (SUITE.name, JS_ONLY.name):
        assert (tmp_path / name).read_bytes() == (FIXTURES / name).read_bytes(), name
