"""The facts a compaction must not lose, and whether a summary kept them.

A summarizer that forgets (an LLM told to be brief, a generic reply) drops file paths, ids,
URLs, commands, error lines and the user's own rules silently. This module finds those facts in
the messages a compaction replaces (:func:`extract_facts`), checks which ones a summary still
states (:func:`lost_facts`), and renders the lost ones as a labelled block the runner adds to
the summary (:func:`render_facts_block`; ``manifest.py`` sizes it).

Pure functions over normalized records and text. Every pattern is linear in its input (no
nested quantifiers; ``\\b`` anchors each variable-length scan to a word start), since tool
output is untrusted; each fact is clipped to :data:`MAX_FACT_CHARS` and a run keeps at most
``limit`` facts, so the output is bounded whatever the history holds.

File paths, sentences and clipping are the extractive summarizer's own rules
(``extractive.py``), so both agree on what a path is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..messages import Message
from ..offload.area import HANDLE, HANDLE_PREFIX
from .extractive import _clip, _paths, _sentences

__all__ = [
    "KINDS",
    "MAX_FACTS",
    "MAX_FACT_CHARS",
    "MAX_TRACKED_FACTS",
    "Fact",
    "FactKind",
    "Facts",
    "extract_facts",
    "lost_facts",
    "rank_facts",
    "render_facts_block",
]

FactKind = Literal["instruction", "error", "path", "command", "url", "id", "quantity"]

#: Every kind, in the order a facts block lists them.
KINDS: tuple[FactKind, ...] = ("instruction", "error", "path", "command", "url", "id", "quantity")
#: Ranked first, newest first: the user's rules, then error lines.
FIRST_KINDS: tuple[FactKind, ...] = ("instruction", "error")
#: Ranked after those in turns (the newest of each kind, then the next of each, ...), so no
#: kind starves the others when the budget is short.
SHARED_KINDS: tuple[FactKind, ...] = ("path", "command", "url", "id", "quantity")

#: The longest fact text kept (longer instructions and error lines are clipped, with "…").
MAX_FACT_CHARS = 200
#: Facts one compaction tracks at least, and at most (the most important ones; the rest are
#: counted): between the two, one per 8 tokens the facts block may use.
MAX_FACTS = 200
MAX_TRACKED_FACTS = 2000

#: The tags around the block added to a summary (before its file-list blocks).
BLOCK_OPEN, BLOCK_CLOSE = "<kept-facts>", "</kept-facts>"


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact: its kind, its text as stated, and the history index of the newest message that
    stated it (a fact carried from an earlier compaction keeps its index; -1: unknown, e.g. in
    an eviction record).

    ``status`` is set by the compaction that checked it: ``kept`` (the summary states it),
    ``readded`` (lost by the summary, put back in the facts block), ``omitted`` (lost, left
    out of the block for its budget) or ``lost`` (lost, the facts block was turned off).
    """

    kind: FactKind
    text: str
    index: int = -1
    status: str = ""


@dataclass(frozen=True, slots=True)
class Facts:
    """What :func:`extract_facts` returns: ranked facts and how many more were left out."""

    facts: tuple[Fact, ...]
    over_limit: int = 0


# --- Patterns (each linear: one pass, bounded backtracking) --------------------------------------

_URL = re.compile(r"\bhttps?://[^\s<>\"'`()\[\]{}]++")
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
# A commit-like hex id: 7-40 lowercase hex characters with a digit and a letter, not part of a
# longer word, a UUID, a path or a dotted name.
_HEX = re.compile(r"(?<![-\w./#])[0-9a-f]{7,40}(?![-\w/]|\.\w)")
# Named as a commit: all digits is an id here too (elsewhere it is a number).
_NAMED_HEX = re.compile(r"\b(?:commit|sha|revision|rev)[ :]+([0-9a-f]{7,40})\b", re.IGNORECASE)
_ISSUE = re.compile(r"(?<![\w&#])#\d{1,7}\b|\b(?:[Ii]ssue|PR|[Tt]icket)\s#?\d{1,7}\b")
_QUANTITY = re.compile(
    r"(?<![\w.])\d{1,12}(?:[.,]\d{1,6})?[ ]?"
    r"(?:%|ms|µs|us|ns|seconds?|secs?|s|minutes?|mins?|hours?|hrs?|h|days?|"
    r"[KMGT]i?B|bytes?|tokens?|px|rps|qps|req/s|[kMG]Hz|x)(?![\w%/])"
)
# ``FooError: ...``, ``error: ...``, ``fatal: ...``: lazy ``\w*?`` starts only at a word start.
_ERROR = re.compile(
    r"\b(?:[A-Z]\w*?(?:Error|Exception)|[Ee]rror|ERROR|[Ff]atal|FATAL|panic)"
    r"(?:\[[\w-]{1,20}\])?:[ \t]*\S"
)
_INSTRUCTION = re.compile(
    r"\b(?:must|never|always|don't|do not|only|make sure|ensure|required|not allowed|avoid)\b",
    re.IGNORECASE,
)
_BACKTICKED = re.compile(r"`([^`\n]{2,300})`")
_PROGRAMS = frozenset(
    [
        "git",
        "python",
        "python3",
        "pytest",
        "pip",
        "pip3",
        "uv",
        "uvx",
        "npm",
        "npx",
        "yarn",
        "pnpm",
        "node",
        "make",
        "cargo",
        "go",
        "docker",
        "kubectl",
        "curl",
        "wget",
        "ruff",
        "mypy",
        "bash",
        "sh",
        "ls",
        "cd",
        "grep",
        "rg",
        "sed",
        "cat",
        "poetry",
        "tox",
        "gh",
        "psql",
        "redis-cli",
        "alembic",
        "terraform",
        "helm",
        "java",
        "mvn",
        "gradle",
        "dotnet",
        "./manage.py",
    ]
)
_COMMAND_KEYS = ("command", "cmd", "script")


def _commands_in_text(text: str) -> Iterable[str]:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("$ ") and len(stripped) > 2:
            yield stripped[2:]
    if "`" in text:
        for match in _BACKTICKED.finditer(text):
            span = match.group(1).strip()
            if span.split(" ", 1)[0] in _PROGRAMS:
                yield span


def _commands_in_call(arguments: str) -> Iterable[str]:
    """A shell command given to a tool as ``{"command": ...}`` (or ``cmd`` / ``script``)."""
    if not arguments.startswith("{") or len(arguments) > 100_000:
        return
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return
    if isinstance(parsed, dict):
        for key in _COMMAND_KEYS:
            value = parsed.get(key)
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                value = " ".join(value)
            if isinstance(value, str) and value.strip():
                yield value.strip().splitlines()[0]


def _errors(text: str) -> Iterable[str]:
    for line in text.splitlines():
        match = _ERROR.search(line)
        if match:
            yield line[match.start() :]


def _ids(text: str) -> Iterable[str]:
    if HANDLE_PREFIX in text:  # an offloaded result's handle: what the model recalls it by
        yield from (m.group() for m in HANDLE.finditer(text))
    yield from (m.group() for m in _UUID.finditer(text))
    for match in _HEX.finditer(text):
        token = match.group()
        if not token.isalpha() and not token.isdigit():
            yield token
    yield from (m.group(1) for m in _NAMED_HEX.finditer(text) if m.group(1).isdigit())
    yield from (m.group() for m in _ISSUE.finditer(text))


class _Collector:
    """Facts per kind in order of their last mention (a re-mention moves a fact to the end)."""

    def __init__(self) -> None:
        self.by_kind: dict[FactKind, dict[str, int]] = {kind: {} for kind in KINDS}

    def add(self, kind: FactKind, text: str, index: int) -> None:
        text = _clip(text, MAX_FACT_CHARS)
        if not text:
            return
        seen = self.by_kind[kind]
        seen.pop(text, None)
        seen[text] = index

    def scan(self, text: str, index: int, *, instructions: bool) -> None:
        if not text:
            return
        urls = [m.group().rstrip(".,;:!?") for m in _URL.finditer(text)]
        for url in urls:
            self.add("url", url, index)
        bare = _URL.sub(" ", text) if urls else text  # ids and numbers inside URLs are the URL's
        for path in _paths(bare):
            self.add("path", path, index)
        for command in _commands_in_text(text):
            self.add("command", command, index)
        for line in _errors(text):
            self.add("error", line, index)
        for found in _ids(bare):
            self.add("id", found, index)
        for match in _QUANTITY.finditer(bare):
            self.add("quantity", match.group(), index)
        if instructions:
            for sentence in _sentences(text):
                if _INSTRUCTION.search(sentence):
                    self.add("instruction", sentence, index)


def extract_facts(
    records: Sequence[Message],
    indices: Sequence[int] | None = None,
    *,
    limit: int = MAX_FACTS,
) -> Facts:
    """The facts stated in ``records`` (history indices ``indices``, default 0, 1, ...), ranked.

    Ranked by importance (see :data:`FIRST_KINDS`, :data:`SHARED_KINDS`), newest mention first
    within a kind; at most ``limit`` are returned, the rest counted in ``over_limit``.
    Instructions come from user messages only; commands from ``$ `` lines, backticked commands
    and tool calls' ``command`` arguments; the other kinds from every text, tool-call arguments
    and tool results.
    """
    collector = _Collector()
    for position, rec in enumerate(records):
        index = indices[position] if indices is not None else position
        collector.scan(rec.text, index, instructions=rec.role == "user")
        for call in rec.tool_calls:
            for command in _commands_in_call(call.arguments):
                collector.add("command", command, index)
            collector.scan(call.arguments, index, instructions=False)
        for result in rec.tool_results:
            collector.scan(result.text, index, instructions=False)
    return _ranked(
        {
            kind: [Fact(kind, text, index) for text, index in reversed(seen.items())]
            for kind, seen in collector.by_kind.items()
        },
        limit,
    )


def _ranked(by_kind: dict[FactKind, list[Fact]], limit: int) -> Facts:
    """Most important first: :data:`FIRST_KINDS` in order, then :data:`SHARED_KINDS` in turns
    (each list is already newest first); at most ``limit``, the rest counted."""
    ranked = [fact for kind in FIRST_KINDS for fact in by_kind[kind]]
    shared = [by_kind[kind] for kind in SHARED_KINDS]
    for turn in range(max(map(len, shared), default=0)):
        if len(ranked) >= limit:
            break
        ranked.extend(run[turn] for run in shared if turn < len(run))
    total = sum(map(len, by_kind.values()))
    ranked = ranked[:limit]
    return Facts(tuple(ranked), total - len(ranked))


def rank_facts(*runs: Iterable[Fact], limit: int = MAX_FACTS) -> Facts:
    """Merge ranked runs (newer runs first) into one ranking; a text once (its first run's)."""
    by_kind: dict[FactKind, dict[str, Fact]] = {kind: {} for kind in KINDS}
    for run in runs:
        for fact in run:
            bucket = by_kind.get(fact.kind)
            if bucket is not None and fact.text not in bucket:
                bucket[fact.text] = Fact(fact.kind, fact.text, fact.index)
    return _ranked({kind: list(bucket.values()) for kind, bucket in by_kind.items()}, limit)


def _normalized(text: str) -> str:
    return " ".join(text.split()).casefold()


def lost_facts(facts: Iterable[Fact], summary: str) -> list[Fact]:
    """The facts ``summary`` does not state: their text (case and spacing aside; a clipped fact
    by its unclipped part) is not in it. Linear in the summary per fact."""
    text = _normalized(summary)
    return [fact for fact in facts if _normalized(fact.text.rstrip("…")) not in text]


_LABELS: dict[FactKind, str] = {
    "instruction": "Instructions",
    "error": "Errors",
    "path": "Paths",
    "command": "Commands",
    "url": "URLs",
    "id": "IDs",
    "quantity": "Quantities",
}
#: Kinds listed one per line (sentences, lines); the others are joined on one line.
_LINED = frozenset({"instruction", "error", "command"})


def render_facts_block(facts: Sequence[Fact], omitted: int = 0) -> str:
    """The labelled block of facts a summary left out, grouped by kind ("" when empty).

    ``omitted`` (lost facts left out for the budget) is stated at the end, so the model knows
    the list is incomplete.
    """
    if not facts and not omitted:
        return ""
    lines = [
        BLOCK_OPEN,
        "Facts from the compacted messages that the summary above left out, as stated:",
    ]
    for kind in KINDS:
        texts = [fact.text for fact in facts if fact.kind == kind]
        if not texts:
            continue
        if kind in _LINED:
            lines.append(f"{_LABELS[kind]}:")
            lines.extend(f"- {text}" for text in texts)
        else:
            lines.append(f"{_LABELS[kind]}: " + ", ".join(texts))
    if omitted:
        lines.append(f"({omitted} less important facts omitted to fit the budget)")
    lines.append(BLOCK_CLOSE)
    return "\n".join(lines)
