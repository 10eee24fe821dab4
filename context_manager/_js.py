"""JavaScript value semantics that TypeScript ports must get right to match to the character.

Pi (and other TS code we reproduce) measures text with ``.length`` (UTF-16 code units), serializes
with ``JSON.stringify`` (compact, non-ASCII kept, JS number formatting, integer-like keys first),
tests truthiness with ``||`` / ``if (x)``, sorts strings by UTF-16 code units, and matches
``RegExp`` literals whose ``\\d``, ``\\s``, ``.`` and ``/i`` differ from Python's ``re``. Each
helper here reproduces one of those rules; the fixtures in ``compat_fixtures/`` prove them.
"""

from __future__ import annotations

import codecs
import math
import re
import sys
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from .errors import ConfigurationError, InvalidMessageError

# CPython stores a string with 1, 2 or 4 bytes a character, the fewest its widest character needs,
# so its size tells in O(1) whether a string may hold astral characters: only a 4-byte string can.
# ``str.__sizeof__`` costs 20 ns, ``sys.getsizeof`` 100 ns for the same number (a string carries
# no GC header). ``_WIDE`` is the size of a 4-byte string of n characters minus 4n. A cached UTF-8
# copy can make a narrower string look as large (a false alarm, settled by ``max``); never the
# reverse, so the check cannot miss an astral character. Encoding beats ``max`` by 10x.
_COMPACT = sys.implementation.name == "cpython"
_WIDE = sys.getsizeof("\U00010000") - 4
_size = str.__sizeof__
# The codec's own encoder: ``str.encode`` spends as long again finding it by name on each call.
_utf16 = codecs.lookup("utf-16-le").encode


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, i.e. JavaScript's ``text.length``.

    Only astral characters (above U+FFFF) take two units, so a string without any is measured by
    ``len``. Lone surrogates count one, as in JS.
    """
    try:
        if text.isascii():
            return len(text)
    except AttributeError:  # not a str (no cost on the usual path: 3.11's try is free)
        raise ConfigurationError(f"text must be a str, got {type(text).__name__}") from None
    if not isinstance(text, str):
        raise ConfigurationError(f"text must be a str, got {type(text).__name__}")
    if _COMPACT and _size(text) < _WIDE + 4 * len(text):
        return len(text)  # stored with 1 or 2 bytes a character: no astral character
    return len(_utf16(text, "surrogatepass")[0]) // 2


__all__ = [
    "js_date_ms",
    "js_len",
    "js_number_str",
    "js_regex",
    "js_slice",
    "js_sort_key",
    "js_string",
    "js_stringify",
    "js_trim",
    "js_truthy",
    "utf16_len",
]


def js_len(text: str) -> int:
    """``text.length``: UTF-16 code units, lone surrogates (e.g. a halved emoji) counting one."""
    return utf16_len(text)


def js_slice(text: str, end: int) -> str:
    """``text.slice(0, end)`` in UTF-16 units; may leave half a surrogate pair, as JS does."""
    if text.isascii():
        return text[:end]
    data = text.encode("utf-16-le", "surrogatepass")[: 2 * max(end, 0)]
    return data.decode("utf-16-le", "surrogatepass")


def js_sort_key(text: str) -> bytes:
    """Key for ``Array.prototype.sort()``'s default order: UTF-16 code units, not code points."""
    return text.encode("utf-16-be", "surrogatepass")


# ECMAScript WhiteSpace + LineTerminator code points: what ``trim()`` and ``\\s`` strip/match.
_JS_SPACE_CHARS = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(text: str) -> str:
    """``text.trim()``: Python's ``strip()`` would also eat ``\\x1c``-``\\x1f`` and ``\\x85``."""
    return text.strip(_JS_SPACE_CHARS)


def js_truthy(value: Any) -> bool:
    """JS truthiness: only ``undefined/null``, ``false``, ``0``, ``NaN`` and ``""`` are falsy.

    Unlike Python, empty lists and dicts are truthy in JS.
    """
    if value is None or value is False:
        return False
    if isinstance(value, int | float):
        return not (value == 0 or (isinstance(value, float) and math.isnan(value)))
    if isinstance(value, str):
        return value != ""
    return True


def js_number_str(value: float | int) -> str:
    """``String(n)`` / ``JSON.stringify(n)`` for a finite number (ECMAScript Number::toString)."""
    if isinstance(value, bool):
        raise TypeError("js_number_str takes numbers, not booleans")
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"  # -0 prints as 0
    sign = "-" if value < 0 else ""
    # repr gives the shortest round-tripping digits, as JS does; only the layout differs.
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    exponent += len("".join(map(str, digit_tuple))) - len(digits)
    k = len(digits)
    n = k + exponent  # position of the decimal point relative to the digits
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body


def js_string(value: Any) -> str:
    """``String(value)`` / template-literal interpolation for the scalar values JSON can hold."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number_str(value)
    raise InvalidMessageError(
        f"expected a text or number, got {type(value).__name__}",
        hint="Pi would print objects as '[object Object]'; pass plain strings",
    )


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group()
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def _quote(text: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, text) + '"'


def _is_array_index(key: str) -> bool:
    if not (key.isascii() and key.isdigit()):
        return False
    return (key == "0" or key[0] != "0") and int(key) < 2**32 - 1


def js_object_keys(obj: Mapping[str, Any]) -> list[str]:
    """Own-key order of a JS object: array-index keys ascending first, then insertion order."""
    keys = [str(k) for k in obj]
    indices = [k for k in keys if _is_array_index(k)]
    if not indices:
        return keys
    return sorted(indices, key=int) + [k for k in keys if not _is_array_index(k)]


def js_stringify(value: Any) -> str:
    """``JSON.stringify(value)`` with no spacing, for JSON-shaped Python values."""
    if isinstance(value, str):
        return _quote(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "null" if math.isnan(value) or math.isinf(value) else js_number_str(value)
    if isinstance(value, Mapping):
        items = (
            f"{_quote(k)}:{js_stringify(value[k] if k in value else value[int(k)])}"
            for k in js_object_keys(value)
        )
        return "{" + ",".join(items) + "}"
    if isinstance(value, Sequence):
        return "[" + ",".join(js_stringify(v) for v in value) + "]"
    raise InvalidMessageError(
        f"cannot serialize {type(value).__name__} as JSON",
        hint="use str, numbers, bool, None, lists and dicts",
    )


# --- RegExp literals ---------------------------------------------------------------------------
# JS \s is the set trim() strips (not Python's str.isspace(), which adds \x1c-\x1f and \x85 but
# lacks \ufeff); as escapes, for use inside a character class.
_JS_SPACE = "".join(f"\\u{ord(ch):04x}" for ch in _JS_SPACE_CHARS)
_JS_DOT = "[^\\n\\r\\u2028\\u2029]"  # '.' stops at every JS line terminator, not only \n
_SUPPORTED_FLAGS = frozenset("is")


def _translate(source: str, dot_all: bool) -> str:
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(source):
        ch = source[i]
        if ch == "\\":
            if i + 1 >= len(source):
                raise ConfigurationError(f"regex {source!r} ends with a lone backslash")
            esc = source[i + 1]
            i += 2
            if esc == "d":
                out.append("0-9" if in_class else "[0-9]")
            elif esc == "s":
                out.append(_JS_SPACE if in_class else f"[{_JS_SPACE}]")
            elif esc in "DS" and not in_class:
                out.append("[^0-9]" if esc == "D" else f"[^{_JS_SPACE}]")
            elif esc in "DS":
                raise ConfigurationError(f"regex {source!r}: \\{esc} inside [...] is not supported")
            elif esc.isalnum() and esc not in "wWbBnrtfvux0123456789":
                out.append(re.escape(esc))  # JS reads an unknown letter escape as the letter
            else:
                out.append("\\" + esc)
            continue
        if in_class:
            if ch == "]":
                in_class = False
            out.append("\\[" if ch == "[" else ch)
        elif ch == "[":
            in_class = True
            out.append(ch)
            if source[i + 1 : i + 2] == "^":
                out.append("^")
                i += 1
            if source[i + 1 : i + 2] == "]":  # JS [] / [^] are legal: match nothing / anything
                raise ConfigurationError(f"regex {source!r}: empty character class unsupported")
        elif ch == ".":
            out.append("[\\s\\S]" if dot_all else _JS_DOT)
        elif ch == "$":
            out.append("\\Z")  # Python's $ also matches before a final newline
        elif source.startswith("(?<", i) and source[i + 3 : i + 4] not in ("=", "!"):
            out.append("(?P<")
            i += 3
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def js_regex(source: str, flags: str = "") -> re.Pattern[str]:
    """Compile a JS ``RegExp`` (non-unicode mode) into a Python pattern that matches the same.

    Supported: flags ``i`` and ``s``, ASCII pattern text. Case folding is ASCII-only, as in JS
    non-unicode mode (``/s/i`` does not match U+017F, ``/k/i`` not the Kelvin sign); ``\\d`` is
    ASCII, ``\\s`` is the JS set, ``.`` stops at ``\\r``, U+2028 and U+2029 too.
    """
    unknown = set(flags) - _SUPPORTED_FLAGS
    if unknown:
        raise ConfigurationError(
            f"regex /{source}/{flags}: flags {sorted(unknown)} unsupported",
        )
    if not source.isascii():
        raise ConfigurationError(f"regex /{source}/{flags}: only ASCII patterns are supported")
    py_flags = re.ASCII | (re.IGNORECASE if "i" in flags else 0)
    return re.compile(_translate(source, "s" in flags), py_flags)


# --- Dates ---------------------------------------------------------------------------------------
_ISO = re.compile(
    r"([+-]\d{6}|\d{4})(?:-(\d\d)(?:-(\d\d))?)?"
    r"(?:T(\d\d):(\d\d)(?::(\d\d)(?:\.(\d+))?)?(Z|[+-]\d\d:\d\d)?)?"
)
_MAX_TIME = 8.64e15


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's method)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def js_date_ms(value: Any, *, unreproduced_as_nan: bool = False) -> int | None:
    """``new Date(value).getTime()``; ``None`` stands for NaN (JSON ``null``).

    Numbers are time-clipped; strings must use the ECMAScript date-time format (what
    ``toISOString()`` writes). A date-time without an offset is local time in JS and depends on
    the machine, so it is refused rather than guessed, like any other string format (JS's
    fallback parser reads e.g. ``" 2026-01-05"`` or ``"Jan 5 2026"`` as local time).
    ``unreproduced_as_nan`` turns that refusal into ``None``: for readers of files where one odd
    timestamp must not make the whole file unreadable (JS gives NaN for most such text anyway).
    """
    try:
        return _date_ms(value)
    except InvalidMessageError:
        if unreproduced_as_nan:
            return None
        raise


def _date_ms(value: Any) -> int | None:
    if value is None:
        return 0  # new Date(null) is the epoch
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        if math.isnan(value) or abs(value) > _MAX_TIME:
            return None
        return int(value)  # truncates toward zero, as TimeClip does
    if not isinstance(value, str):
        raise InvalidMessageError(f"timestamp {value!r} is neither a number nor an ISO string")
    match = _ISO.fullmatch(value)
    if match is None:
        raise InvalidMessageError(
            f"timestamp {value!r} is not in the ECMAScript date-time format",
            hint="use toISOString() output such as 2026-01-01T00:00:00.000Z",
        )
    year_s, month_s, day_s, hour_s, minute_s, second_s, frac_s, zone = match.groups()
    if hour_s is not None and zone is None:
        raise InvalidMessageError(
            f"timestamp {value!r} has no offset (JS reads it as local time)",
            hint="append Z or an offset like +02:00",
        )
    if year_s == "-000000":
        raise InvalidMessageError(f"timestamp {value!r}: year -000000 is not a valid date")
    year, month, day = int(year_s), int(month_s or 1), int(day_s or 1)
    hour, minute, second = int(hour_s or 0), int(minute_s or 0), int(second_s or 0)
    millis = int((frac_s or "0")[:3].ljust(3, "0"))  # V8 keeps milliseconds, drops the rest
    # V8 accepts day 29..31 in any month and rolls over (2026-02-30 is March 2), so do we.
    if not (
        1 <= month <= 12
        and 1 <= day <= 31
        and minute < 60
        and second < 60
        and (hour < 24 or (hour == 24 and minute == second == millis == 0))
    ):
        return None
    offset = 0
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        offset = sign * (int(zone[1:3]) * 60 + int(zone[4:6]))
        if int(zone[1:3]) > 23 or int(zone[4:6]) > 59:
            return None
    minutes = _days_from_civil(year, month, day) * 1440 + hour * 60 + minute - offset
    ms = (minutes * 60 + second) * 1000 + millis
    return ms if abs(ms) <= _MAX_TIME else None
