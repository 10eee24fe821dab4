"""One page of an offloaded result: by lines, by bytes or by a search text, within a token cap.

Pure functions over the stored bytes, shared by every area (the backends only fetch). Every
page says where it is (lines ``a-b`` / bytes ``[a, b)`` of the totals) and, when there is more,
the exact ``recall`` arguments that read the next page, so a model can page without arithmetic.

Why these rules: a search is a literal, case-insensitive text, not a regular expression, so a
model's pattern cannot make a request backtrack for minutes (linear time); a single line larger
than the cap (minified JSON, a base64 blob) is paged by bytes instead of being refused; byte
ranges move to UTF-8 character boundaries so a page never starts inside a character.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from .._config import check_int
from ..counting import TokenCounter
from ..errors import ConfigurationError

__all__ = ["MATCH_LINE_CHARS", "Slice", "line_count", "select"]

#: Longest search text (a model's pattern is echoed back in the page it gets).
MAX_PATTERN = 1_000

#: A matching line is shown up to this many characters (page a longer one by bytes).
MATCH_LINE_CHARS = 400
#: No tokenizer packs more characters than this into one token (a generous bound for cuts).
_CHARS_PER_TOKEN_MAX = 32


@dataclass(frozen=True, slots=True)
class Slice:
    """What :meth:`~context_manager.offload.OffloadArea.get` returns."""

    handle: str
    text: str
    total_bytes: int
    total_lines: int
    unit: Literal["lines", "bytes", "matches"]
    #: lines: first and last line shown (1-based); bytes: ``[start, end)``; matches: the lines
    #: searched, first and last.
    start: int
    end: int
    #: Whether the requested range holds more than this page (``next`` reads it).
    more: bool
    #: The ``recall`` arguments of the next page (None: nothing more in the range asked for).
    next: dict[str, Any] | None = None
    #: Matches on this page (pattern searches only).
    matches: int = 0
    tokens: int = field(default=0)

    def header(self) -> str:
        size = f"{self.total_bytes:,} bytes, {self.total_lines:,} lines"
        if self.unit == "lines":
            where = f"lines {self.start}-{self.end} of {self.total_lines:,} ({size})"
        elif self.unit == "bytes":
            where = f"bytes {self.start:,}-{self.end:,} of {self.total_bytes:,} ({size})"
        else:
            where = (
                f"{self.matches} matching line(s) in lines {self.start}-{self.end} of "
                f"{self.total_lines:,} ({size})"
            )
        more = ""
        if self.next is not None:
            args = ", ".join(f"{k}={json.dumps(v)}" for k, v in self.next.items())
            more = f'; more: call recall with handle="{self.handle}", {args}'

        return f"[recall {self.handle}: {where}{more}]"

    def render(self) -> str:
        """The page as the model reads it: a header line, then the text."""
        return f"{self.header()}\n{self.text}"


def _range(value: object, name: str) -> tuple[int, int | None] | None:
    if value is None:
        return None
    if isinstance(value, list | tuple) and len(value) in (1, 2):
        first = value[0]
        last = value[1] if len(value) == 2 else None
        if (
            isinstance(first, int)
            and not isinstance(first, bool)
            and first >= 0
            and (last is None or (isinstance(last, int) and not isinstance(last, bool)))
        ):
            if last is not None and last < first:  # an empty page would tell the model nothing
                raise ConfigurationError(f"{name} must end where it starts or after: {value!r:.60}")
            return first, last
    raise ConfigurationError(f"{name} must be [first, last] (non-negative ints), got {value!r:.60}")


def _fit_chars(text: str, cap: int, counter: TokenCounter) -> int:
    """The most leading characters of ``text`` that count at most ``cap`` tokens (bisection)."""
    hi = min(len(text), cap * _CHARS_PER_TOKEN_MAX)
    if counter.count_text(text[:hi]) <= cap:
        return hi
    lo = 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count_text(text[:mid]) <= cap:
            lo = mid
        else:
            hi = mid - 1
    return lo


def line_count(data: bytes) -> int:
    """Lines in ``data``; a last line without a newline counts too."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _boundary(data: bytes, at: int) -> int:
    """``at`` moved back to the start of the UTF-8 character it falls in."""
    while 0 < at < len(data) and (data[at] & 0xC0) == 0x80:
        at -= 1
    return at


def select(
    handle: str,
    data: bytes,
    *,
    lines: object = None,
    byte_range: object = None,
    pattern: object = None,
    max_tokens: object = 2000,
    counter: TokenCounter,
) -> Slice:
    """The page of ``data`` asked for (one of ``lines`` / ``byte_range`` / ``pattern``; a
    ``pattern`` may be narrowed by ``lines``); from the first line when none is given."""
    cap = check_int("max_tokens", max_tokens, 1)
    line_range = _range(lines, "lines")
    span = _range(byte_range, "bytes")
    if span is not None and (line_range is not None or pattern is not None):
        raise ConfigurationError("give bytes alone, or lines and/or pattern")
    if pattern is not None and (not isinstance(pattern, str) or not pattern):
        raise ConfigurationError("pattern must be a non-empty text")
    if isinstance(pattern, str) and len(pattern) > MAX_PATTERN:
        # echoed in the answer (no match, next page): a huge one would blow the token cap
        raise ConfigurationError(f"pattern must be at most {MAX_PATTERN} characters")
    total_lines = line_count(data)
    base: dict[str, Any] = {"handle": handle, "total_bytes": len(data), "total_lines": total_lines}
    if span is not None:
        if span[0] > len(data):
            raise ConfigurationError(f"bytes start past the end: the result has {len(data)}")
        return _bytes_page(data, span, cap, counter, base)
    first, last = line_range if line_range is not None else (1, None)
    if first > max(total_lines, 1):
        raise ConfigurationError(f"lines start past the end: the result has {total_lines}")
    first = max(first, 1)
    last = total_lines if last is None else min(last, total_lines)
    if isinstance(pattern, str):
        rows = data.decode("utf-8", "replace").split("\n")
        return _search(rows, pattern, first, last, cap, counter, base)
    raw = data.split(b"\n")  # only the rows shown are decoded
    out: list[str] = []
    used, n = 0, first - 1
    longest = cap * _CHARS_PER_TOKEN_MAX * 4  # bytes no page of the cap could hold
    while n < last and len(raw[n]) <= longest:
        row = raw[n].decode("utf-8", "replace")
        cost = counter.count_text(row) + 1
        if used + cost > cap:
            break
        out.append(row)
        used += cost
        n += 1
    if not out and n < last:  # one line over the cap: page it by bytes
        start = sum(len(r) + 1 for r in raw[: first - 1])
        return _bytes_page(data, (start, start + len(raw[first - 1])), cap, counter, base)
    more = n < last
    nxt = {"lines": [n + 1, last]} if more else None
    return Slice(
        **base, text="\n".join(out), unit="lines", start=first, end=n, more=more, next=nxt,
        tokens=used,
    )  # fmt: skip


def _bytes_page(
    data: bytes, span: tuple[int, int | None], cap: int, counter: TokenCounter, base: dict[str, Any]
) -> Slice:
    """Bytes ``span`` within ``cap``. A span that is one whole line (a line too long for the
    cap, paged by bytes) continues with the next lines once it is read."""
    start, end = span
    end = len(data) if end is None else min(end, len(data))
    start = _boundary(data, min(start, len(data)))
    end = max(_boundary(data, end), start)
    # Decode no more than the cap could ever show.
    window = data[start : min(end, start + cap * _CHARS_PER_TOKEN_MAX * 4)]
    text = window.decode("utf-8", "ignore")
    keep = _fit_chars(text, cap, counter)
    shown = text[:keep]
    stop = start + len(shown.encode("utf-8"))
    nxt: dict[str, Any] | None = {"bytes": [stop, end]} if stop < end else None
    if nxt is None and data[end : end + 1] == b"\n" and end + 1 < len(data):
        line_start = data.rfind(b"\n", 0, start) + 1
        if data.find(b"\n", line_start, end) == -1:  # the span ends its line: go on by lines
            nxt = {"lines": [data.count(b"\n", 0, end) + 2, None]}
    return Slice(
        **base, text=shown, unit="bytes", start=start, end=stop, more=nxt is not None, next=nxt,
        tokens=counter.count_text(shown),
    )  # fmt: skip


def _search(
    rows: list[str],
    pattern: str,
    first: int,
    last: int,
    cap: int,
    counter: TokenCounter,
    base: dict[str, Any],
) -> Slice:
    needle = pattern.casefold()
    out: list[str] = []
    used, n, found = 0, first - 1, 0
    while n < last:
        row = rows[n]
        if needle in row.casefold():
            shown = row if len(row) <= MATCH_LINE_CHARS else row[:MATCH_LINE_CHARS] + "…"
            line = f"{n + 1}: {shown}"
            cost = counter.count_text(line) + 1
            if used + cost > cap and out:
                break
            if cost > cap:  # the first match alone is over the cap: show what fits of it
                line = line[: _fit_chars(line, max(cap - 1, 0), counter)]
                cost = counter.count_text(line) + 1
            out.append(line)
            used += cost
            found += 1
        n += 1
    more = n < last
    nxt = {"pattern": pattern, "lines": [n + 1, last]} if more else None
    text = "\n".join(out) if out else f"(no line contains {pattern[:80]!r})"
    return Slice(
        **base, text=text, unit="matches", start=first, end=n, more=more, next=nxt,
        matches=found, tokens=used,
    )  # fmt: skip
