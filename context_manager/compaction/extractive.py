"""The offline, deterministic summarizer: facts extracted from the messages, no LLM.

It fills the same sections an LLM summary has (goal, constraints, progress, decisions, next
steps, critical context), from regular expressions over the text. Every pattern is linear in its
input (no nested quantifiers), since tool output and error text are untrusted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._config import check_int
from ..messages import Message
from ..models import check_chars_per_token
from .prompts import PREFIX_SECTIONS, PROGRESS_SUBSECTIONS, SUMMARY_SECTIONS
from .summarizers import SummaryRequest

_KNOWN_EXTENSIONS = frozenset(
    (
        "py",
        "pyi",
        "js",
        "mjs",
        "cjs",
        "ts",
        "tsx",
        "jsx",
        "json",
        "jsonl",
        "md",
        "rst",
        "txt",
        "toml",
        "yaml",
        "yml",
        "cfg",
        "ini",
        "rs",
        "go",
        "java",
        "kt",
        "c",
        "h",
        "cc",
        "cpp",
        "hpp",
        "cs",
        "rb",
        "php",
        "sh",
        "bash",
        "zsh",
        "html",
        "css",
        "scss",
        "sql",
        "lock",
        "ipynb",
        "csv",
        "xml",
        "swift",
        "vue",
        "svelte",
        "env",
        "gradle",
        "proto",
        "graphql",
        "tf",
        "lua",
    )
)
_TOKEN = re.compile(r"[\w~./-]+")
# A maximal dotted name, consumed whole (possessive): a name is a call when "(" follows it.
# Matching "name(" directly retried the chain from every segment of "a.a.a..." (quadratic).
_DOTTED_NAME = re.compile(r"\b[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)*+")
_DEFINITION = re.compile(r"\b(?:def|class|function|fn|func)\s+([A-Za-z_]\w*)")
_NOT_FUNCTIONS = frozenset(
    {
        "if",
        "for",
        "while",
        "return",
        "and",
        "or",
        "not",
        "in",
        "with",
        "switch",
        "catch",
        "elif",
        "print",
        "e.g",
        "i.e",
    }
)
_ERROR_LINE = re.compile(
    r"\b\w*(?:Error|Exception)\b|Traceback|\bfailed\b|\bFAILED\b|\berror:|\bcannot\b|"
    r"\bnot found\b|\bpanic",
    re.IGNORECASE,
)
_CONSTRAINT = re.compile(
    r"\b(?:must|should|never|always|don't|do not|avoid|prefer|please|only|without|make sure|"
    r"keep)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:decided|decide|chose|choose|instead|will use|going with|settled on|switch(?:ed)? to|"
    r"rather than|let's use|we'll use|I'll use)\b",
    re.IGNORECASE,
)
_NEXT = re.compile(
    r"\b(?:next|todo|remaining|still need|then I|follow[- ]up|afterwards)\b", re.IGNORECASE
)
_DONE = re.compile(
    r"\b(?:done|fixed|added|implemented|created|updated|wrote|passes|passing|"
    r"resolved|finished|completed)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_FILE_TAG = re.compile(r"<(read-files|modified-files)>")
_BULLET = re.compile(r"^(?:[-*]\s++(?:\[[ xX]\]\s++)?|\d++[.)]\s++)")


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def _paths(text: str) -> list[str]:
    found = []
    has_url = "://" in text  # once per text, not once per token
    for token in _TOKEN.findall(text):
        if has_url and token.startswith("//"):
            continue
        token = token.rstrip(".")
        name = token.rsplit("/", 1)[-1]
        ext = _extension(name)
        rooted = token.startswith(("/", "./", "../", "~/")) and len(token) > 2
        named = ext in _KNOWN_EXTENSIONS and len(name) > len(ext) + 1
        if named or (rooted and "/" in token[1:]):
            found.append(token)
    return found


def _functions(text: str) -> list[str]:
    calls = [m.group() for m in _DOTTED_NAME.finditer(text) if text.startswith("(", m.end())]
    names = calls + _DEFINITION.findall(text)
    return [n for n in names if n not in _NOT_FUNCTIONS and _extension(n) not in _KNOWN_EXTENSIONS]


def _extension(name: str) -> str:
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


def _errors(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if _ERROR_LINE.search(line)]


def _call_text(name: str, arguments: str, limit: int) -> str:
    return _clip(f"{name}({arguments})" if arguments and arguments != "{}" else f"{name}()", limit)


def parse_sections(summary: str) -> dict[str, list[str]]:
    """Items under each ``##`` / ``###`` heading of a summary (file-list blocks ignored).

    Keys are heading titles (Progress items live under Done / In Progress / Blocked); lines
    keep their bullet text without the marker. Unknown headings are kept too.
    """
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in _without_file_blocks(summary).splitlines():
        title = _heading_title(raw)
        if title is not None:
            current = sections.setdefault(title, [])
            continue
        line = raw.strip()
        if current is None or not line or line == "---" or line.startswith("**"):
            continue
        line = _BULLET.sub("", line, count=1)
        if line and line != "(none)":
            current.append(line)
    return sections


def _heading_title(line: str) -> str | None:
    """The title of a ``## `` / ``### `` heading line, else None.

    Exactly what ``^(#{2,3})\\s+(.+?)\\s*$`` captures, in linear time (that regex is quadratic
    on a long whitespace run inside the title): the title is the rest stripped; when the rest is
    only whitespace the regex still needs one character for ``.+?`` and takes the last one.
    """
    level = 3 if line.startswith("###") else 2 if line.startswith("##") else 0
    rest = line[level:]
    if not level or not rest[:1].isspace():
        return None
    title = rest.strip()
    if title:
        return title
    return rest[-1] if len(rest) >= 2 else None


def _without_file_blocks(summary: str) -> str:
    """``summary`` without ``<read-files>...</read-files>`` / ``<modified-files>`` blocks and the
    whitespace before them: ``re.sub(r"\\s*<(read-files|modified-files)>.*?</\\1>", "", s,
    flags=re.DOTALL)`` in linear time (that regex rescans whitespace runs and unclosed tags).
    A closing tag missing after one position is missing after every later one, so each kind is
    searched for at most once past each match.
    """
    out: list[str] = []
    done = 0  # end of the text already handled
    no_close_after: dict[str, int] = {}
    for tag in _FILE_TAG.finditer(summary):
        start = tag.start()
        if start < done:
            continue
        name = tag.group(1)
        if no_close_after.get(name, len(summary) + 1) <= tag.end():
            continue
        close = summary.find(f"</{name}>", tag.end())
        if close < 0:
            no_close_after[name] = tag.end()
            continue
        begin = start
        while begin > done and summary[begin - 1].isspace():
            begin -= 1
        out.append(summary[done:begin])
        done = close + len(name) + 3
    out.append(summary[done:])
    return "".join(out)


class _Facts:
    """What the extractive summarizer pulls out of a run of messages, in first-seen order."""

    def __init__(self, messages: Sequence[Message], limit: int) -> None:
        self.requests: list[str] = []
        self.constraints: dict[str, None] = {}
        self.done: dict[str, None] = {}
        self.in_progress: dict[str, None] = {}
        self.blocked: dict[str, None] = {}
        self.decisions: dict[str, None] = {}
        self.next_steps: dict[str, None] = {}
        self.files: dict[str, None] = {}
        self.functions: dict[str, None] = {}
        self.last_reply = ""
        pending: dict[str, str] = {}
        for rec in messages:
            self._message(rec, pending, limit)
        for text in pending.values():  # calls whose results were not in this run
            self.in_progress.setdefault(text, None)

    def _text(self, text: str) -> None:
        self.files.update(dict.fromkeys(_paths(text)))
        self.functions.update(dict.fromkeys(_functions(text)))

    def _message(self, rec: Message, pending: dict[str, str], limit: int) -> None:
        self._text(rec.text)
        if rec.role == "user" and rec.text.strip():
            self.requests.append(_clip(rec.text, limit))
            for sentence in _sentences(rec.text):
                if _CONSTRAINT.search(sentence):
                    self.constraints.setdefault(_clip(sentence, limit), None)
        elif rec.role == "assistant":
            if rec.text.strip():
                self.last_reply = _clip(rec.text, limit)
            for sentence in _sentences(rec.text):
                clipped = _clip(sentence, limit)
                if _DECISION.search(sentence):
                    self.decisions.setdefault(clipped, None)
                elif _NEXT.search(sentence):
                    self.next_steps.setdefault(clipped, None)
                elif _DONE.search(sentence):
                    self.done.setdefault(clipped, None)
            for call in rec.tool_calls:
                pending[call.id] = _call_text(call.name, call.arguments, limit)
                self._text(call.arguments)
        for call_id, text, is_error in rec.results:
            self._text(text)
            called = pending.pop(call_id, None) or "tool call"
            errors = _errors(text)
            if is_error or errors:
                detail = errors[0] if errors else text
                self.blocked.setdefault(_clip(f"{called}: {detail}", limit), None)
            else:
                self.done.setdefault(called, None)


class ExtractiveSummarizer:
    """Offline, deterministic summaries in the same section layout the LLM prompts ask for.

    It keeps the user's requests, stated constraints, tool calls done or failing (with the
    error line), decision and next-step sentences, file paths and function names. With a
    previous summary, its items are kept and the new ones appended (oldest dropped first when a
    section is over ``max_items``). Output is cut to fit ``request.max_tokens`` at
    ``chars_per_token`` (3 by default: conservative for real tokenizers) and to half the length
    of what it summarizes (but at least ``min_chars``), so compacting always saves room.
    """

    def __init__(
        self,
        *,
        max_items: int = 12,
        max_item_chars: int = 240,
        chars_per_token: float = 3.0,
        min_chars: int = 1500,
    ) -> None:
        # Checked here, not at the first compaction, which may run hours later in a worker.
        self.max_items = check_int("max_items", max_items, 1)
        self.max_item_chars = check_int("max_item_chars", max_item_chars, 16)
        self.chars_per_token = check_chars_per_token(chars_per_token)
        self.min_chars = check_int("min_chars", min_chars)

    def __call__(self, request: SummaryRequest) -> str:
        facts = _Facts(request.messages, self.max_item_chars)
        # A summary should be shorter than what it replaces: at most half the source text.
        source = len(request.previous_summary or "") + sum(
            len(m.text)
            + len(m.thinking)
            + sum(len(c.arguments) for c in m.tool_calls)
            + sum(len(r.text) for r in m.tool_results)
            for m in request.messages
        )
        budget = max(
            1, min(int(request.max_tokens * self.chars_per_token), max(self.min_chars, source // 2))
        )
        if request.kind == "turn_prefix":
            return self._fit(lambda cap: self._prefix(facts, cap), budget)
        previous = parse_sections(request.previous_summary or "")
        return self._fit(lambda cap: self._summary(facts, previous, request.focus, cap), budget)

    def _fit(self, render: Any, budget: int) -> str:
        cap = self.max_items
        text: str = render(cap)
        while len(text) > budget and cap > 1:
            cap -= 1
            text = render(cap)
        return text if len(text) <= budget else text[: max(0, budget - 1)] + "…"

    @staticmethod
    def _items(groups: Iterable[Iterable[str]], cap: int, *, newest: bool = True) -> list[str]:
        merged = list(dict.fromkeys(item for group in groups for item in group))
        return merged[-cap:] if newest else merged[:cap]

    def _summary(
        self, facts: _Facts, previous: Mapping[str, list[str]], focus: str | None, cap: int
    ) -> str:
        goal = self._items([previous.get("Goal") or facts.requests[:1]], cap, newest=False)
        goal = [g for g in goal if not g.startswith("Focus: ")]
        if focus:
            goal.append(f"Focus: {_clip(focus, self.max_item_chars)}")
        done_now = set(facts.done)
        in_progress = [i for i in previous.get("In Progress", []) if i not in done_now]
        next_steps = list(facts.next_steps)
        if facts.requests and facts.requests[-1] not in goal:
            next_steps.append(f"Continue with the latest request: {facts.requests[-1]}")
        earlier = previous.get("Critical Context", [])

        def carried(label: str, found: Iterable[str]) -> list[str]:
            old = [i for i in earlier if i.startswith(label)]
            return self._items([old, [label + f for f in found]], cap)

        last = (
            [f"Last assistant reply: {facts.last_reply}"]
            if facts.last_reply
            else [i for i in earlier if i.startswith("Last assistant reply: ")]
        )
        sections = {
            "Goal": goal,
            "Constraints & Preferences": self._items(
                [previous.get("Constraints & Preferences", []), facts.constraints], cap
            ),
            "Done": self._items([previous.get("Done", []), facts.done], cap),
            "In Progress": self._items([in_progress, facts.in_progress], cap),
            "Blocked": self._items([previous.get("Blocked", []), facts.blocked], cap),
            "Key Decisions": self._items([previous.get("Key Decisions", []), facts.decisions], cap),
            "Next Steps": self._items([next_steps or previous.get("Next Steps", [])], cap),
            "Critical Context": [
                *carried("File: ", facts.files),
                *carried("Function: ", facts.functions),
                *last,
            ],
        }
        return render_summary(sections)

    def _prefix(self, facts: _Facts, cap: int) -> str:
        sections = {
            "Original Request": facts.requests[:1] or ["(not in the summarized part)"],
            "Early Progress": self._items([facts.done, facts.blocked, facts.in_progress], cap),
            "Context for Suffix": self._items(
                [
                    [f"File: {f}" for f in facts.files],
                    facts.decisions,
                    [f"Last assistant reply: {facts.last_reply}"] if facts.last_reply else [],
                ],
                cap,
            ),
        }
        return "\n\n".join(f"## {title}\n" + _bullets(sections[title]) for title in PREFIX_SECTIONS)


def _bullets(items: Sequence[str], marker: str = "- ") -> str:
    return "\n".join(f"{marker}{item}" for item in items) if items else f"{marker}(none)"


def render_summary(sections: Mapping[str, Sequence[str]]) -> str:
    """Render section items in the documented layout (missing sections say ``(none)``)."""
    parts = []
    for title in SUMMARY_SECTIONS:
        if title == "Progress":
            marks = {"Done": "- [x] ", "In Progress": "- [ ] ", "Blocked": "- "}
            sub = [
                f"### {name}\n" + _bullets(sections.get(name, []), marks[name])
                for name in PROGRESS_SUBSECTIONS
            ]
            parts.append("## Progress\n" + "\n\n".join(sub))
        elif title == "Goal":
            goal = sections.get("Goal", [])
            parts.append("## Goal\n" + ("\n".join(goal) if len(goal) == 1 else _bullets(goal)))
        elif title == "Next Steps":
            steps = sections.get("Next Steps", [])
            body = "\n".join(f"{n}. {s}" for n, s in enumerate(steps, 1)) or "1. (none)"
            parts.append("## Next Steps\n" + body)
        else:
            parts.append(f"## {title}\n" + _bullets(sections.get(title, [])))
    return "\n\n".join(parts)
