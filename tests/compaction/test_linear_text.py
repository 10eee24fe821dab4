"""Untrusted text (tool output, provider error text, summaries) is handled in linear time.

Each rewritten pattern is checked twice, through the public function it serves: against the
original regex on generated strings built from the pattern's own fragments (same results), and
on an adversarial 1 MB input with a time bound that is a ratio to a linear pass over the same
text (tests/linear_time.py).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_manager.compaction.extractive import ExtractiveSummarizer, parse_sections
from context_manager.compaction.pi_rules import get_overflow_patterns, is_context_overflow
from context_manager.compaction.summarizers import SummaryRequest
from context_manager.messages import normalize
from tests.linear_time import assert_linear

MB = 1_000_000

# The patterns as they were before the linear rewrites (the reference semantics).
OLD_HEADING = re.compile(r"^(#{2,3})\s+(.+?)\s*$")
OLD_FILE_BLOCKS = re.compile(r"\s*<(read-files|modified-files)>.*?</\1>", re.DOTALL)
OLD_IDENT_CALL = re.compile(r"\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\(")
OLD_DEFINITION = re.compile(r"\b(?:def|class|function|fn|func)\s+([A-Za-z_]\w*)")


def fragments(*parts: str) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(parts), max_size=24).map("".join)


# --- same results as the original patterns -------------------------------------------------------
OVERFLOW_BITS = (
    "400",
    "413",
    "4",
    " ",
    "\t",
    "\n",
    "\r",
    "\u2028",
    "\xa0",
    "status code",
    "(no body)",
    "(no",
    "input token count",
    "INPUT TOKEN",
    " count",
    "x",
    "exceeds the maximum",
    "exceeds",
    "maximum",
)


@given(fragments(*OVERFLOW_BITS))
def test_overflow_detection_matches_the_translated_pi_patterns(text: str) -> None:
    """``get_overflow_patterns()`` are Pi's patterns translated faithfully (no rate-limit text
    is generated here, so those exclusions never apply)."""
    faithful = any(pattern.search(text) for pattern in get_overflow_patterns())
    assert overflow(text) == faithful, text


@given(fragments("#", "##", "###", " ", "\t", "\xa0", "x", "title", "  y ", "\u3000"))
def test_heading_titles_match_the_original_regex(line: str) -> None:
    match = OLD_HEADING.match(line)
    assert parse_sections(line + "\nitem") == ({match.group(2): ["item"]} if match else {})


@given(
    fragments(
        "<read-files>",
        "</read-files>",
        "<modified-files>",
        "</modified-files>",
        " ",
        "\n",
        "a.py",
        "x",
        "<read-files",
        "\u2003",
    )
)
def test_file_block_removal_matches_the_original_regex(text: str) -> None:
    """The items of a section are the lines the original regex leaves, whitespace runs before
    a block (line breaks included) going with it."""
    summary = "## Files\n.\n" + text  # the dot keeps the heading's line break
    lines = [line.strip() for line in OLD_FILE_BLOCKS.sub("", summary).splitlines()[1:]]
    assert parse_sections(summary) == {"Files": [line for line in lines if line]}


@given(fragments("a", "b1", ".", "(", " ", "_", "1", "def ", "class ", "x.y", "print", "é"))
def test_function_names_match_the_original_regexes(text: str) -> None:
    old = list(
        dict.fromkeys(
            n
            for n in OLD_IDENT_CALL.findall(text) + OLD_DEFINITION.findall(text)
            if n not in ("print",)
        )
    )
    new = [n for n in functions_named(text) if n not in ("print",)]
    assert new == [n for n in old if n in new]  # same order; filters only drop names
    assert set(new) <= set(old)


# --- adversarial 1 MB inputs ----------------------------------------------------------------------
def overflow(text: str) -> bool:
    return is_context_overflow({"role": "assistant", "stopReason": "error", "errorMessage": text})


def summary_of(text: str) -> str:
    """The extractive summary of one user message saying ``text``."""
    request = SummaryRequest(
        "s", "p", 10**6, "summary", (normalize({"role": "user", "content": text}),), text, None
    )
    return ExtractiveSummarizer(max_items=10**6, min_chars=10**8)(request)  # nothing cut


def critical(text: str, kind: str) -> list[str]:
    """The ``File: `` or ``Function: `` items of the summary of ``text``, in first-seen order."""
    items = parse_sections(summary_of(text)).get("Critical Context", [])
    return [item.removeprefix(kind) for item in items if item.startswith(kind)]


def functions_named(text: str) -> list[str]:
    return critical(text, "Function: ")


def paths_named(text: str) -> list[str]:
    return critical(text, "File: ")


@pytest.mark.parametrize(
    ("what", "text"),
    [
        ("status code + whitespace run", "400" + " " * MB),
        ("status code + mixed whitespace", "413" + "\u2028 \t" * (MB // 3)),
        ("repeated 'input token count'", "input token count " * (MB // 18)),
        ("many lines of it", "input token count\n" * (MB // 18)),
    ],
)
def test_overflow_detection_is_linear(what: str, text: str) -> None:
    assert_linear(overflow, text, what=what)
    assert overflow(text) is False


@pytest.mark.parametrize(
    ("what", "text"),
    [
        ("heading with a whitespace run", "## x" + " " * MB + "y"),
        ("whitespace only", " " * MB),
        ("unclosed file tags", "<read-files>" * (MB // 12)),
        ("whitespace before an unclosed tag", " " * MB + "<modified-files>"),
        ("bullets with long whitespace", "- " + " " * MB + "x"),
    ],
)
def test_section_parsing_is_linear(what: str, text: str) -> None:
    assert_linear(parse_sections, "## Goal\n" + text, what=what)


@pytest.mark.parametrize(
    ("what", "text"),
    [
        ("dotted chain without a call", "a." * (MB // 2)),
        ("one long identifier", "a" * MB),
        ("definition keyword + whitespace", "def" + " " * MB),
    ],
)
def test_function_extraction_is_linear(what: str, text: str) -> None:
    assert_linear(functions_named, text, what=what, ratio=150)


def test_path_extraction_is_linear_with_a_url() -> None:
    text = "http://x " + "//a " * (MB // 4)
    assert_linear(paths_named, text, what="url + many // tokens", ratio=150)


@pytest.mark.parametrize(
    ("what", "output"),
    [
        ("whitespace", " " * MB),
        ("dotted chain", "a." * (MB // 2)),
        ("url tokens", "see http://h " + "//p/q.py " * (MB // 9)),
        ("error lines", "Error x\n" * (MB // 8)),
        ("sentences", ". " * (MB // 2)),
        ("headings", "## " + " " * (MB // 2) + "x\n<read-files>" * 2),
    ],
)
def test_extractive_summary_of_a_1mb_tool_output_is_linear(what: str, output: str) -> None:
    messages = (
        normalize({"role": "user", "content": "go"}),
        normalize(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            }
        ),
        normalize({"role": "tool", "tool_call_id": "c", "content": output}),
    )

    def summarize(text: str) -> str:
        return ExtractiveSummarizer()(
            SummaryRequest("s", "p", 2000, "summary", messages, text, None)
        )

    # The whole summarizer passes over the text ~10 times (tokens, names, lines, sentences,
    # the previous summary): a larger ratio, still far below quadratic (minutes on 1 MB).
    assert_linear(summarize, output, what=what, ratio=150)
