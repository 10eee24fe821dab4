"""Fixture runner for ``langchain.trimMessages`` (LangChain.js 1.4.0, via ``gen/langchain.mjs``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ConfigurationError
from ..interop.langchain import Splitter, _trim, default_text_splitter, split_after_spaces
from ..interop.langchain_counting import chars4_tokens, content_of, per_message

_FIXTURE_COUNTERS: dict[str, Any] = {
    "chars4": per_message(chars4_tokens),
    "approximate": "approximate",
}
_FIXTURE_SPLITTERS: dict[str, Splitter] = {
    "newline": default_text_splitter,
    "space": split_after_spaces,
}


def run_trim_case(case: Mapping[str, Any]) -> Any:
    """Fixture runner: kept messages as ``{"index"}`` plus ``"content"`` when it was cut."""
    messages = case["messages"]
    try:
        kept = _trim(
            messages,
            max_tokens=case["max_tokens"],
            token_counter=_FIXTURE_COUNTERS[case["counter"]],
            strategy=case["strategy"],
            allow_partial=case["allow_partial"],
            include_system=case["include_system"],
            start_on=case["start_on"],
            end_on=case["end_on"],
            text_splitter=_FIXTURE_SPLITTERS[case["splitter"]],
        )
    except ConfigurationError:
        return {"error": "invalid_options"}
    out: list[dict[str, Any]] = []
    for index, message in kept:
        entry: dict[str, Any] = {"index": index}
        if content_of(message) != content_of(messages[index]):
            entry["content"] = message["content"]
        out.append(entry)
    return out


FIXTURE_SUITES: dict[str, Callable[[Any], Any]] = {
    "langchain.trimMessages": run_trim_case,
}
