"""What the command line reads: message lists, session logs and request bodies, untrusted.

One reader for every sub-command, so ``count``, ``trim``, ``stats`` and ``check`` accept the same
files:

- a JSON array of messages, or JSONL with one message per line;
- a session log the library wrote (``MessageContextManager.open``): read by the stores' own
  reader (``store.replayer.Replayer``), so SDK objects stored losslessly come back as the objects
  they were and the system prompt comes first, as a restore would give them;
- a request body: ``{"messages": [...]}`` (OpenAI chat, Anthropic and Bedrock Converse, whose
  ``system`` becomes the first message), ``{"input": [...]}`` (Responses, ``instructions``
  first) or ``{"contents": [...]}`` (Gemini, ``systemInstruction`` first).

A file with no message is an error (exit 2), not an empty success. Bad input of any kind gives
one typed line naming the file, line or message and field. Input larger than
:data:`MAX_INPUT_BYTES` (256 MiB; environment variable ``CONTEXT_MANAGER_MAX_INPUT_BYTES``) is
refused after reading one byte past the limit, never read whole: parsing holds several copies of
it, so an unbounded read of a huge file or an endless pipe would exhaust memory first.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any, BinaryIO

from .errors import ContextManagerError
from .messages.nesting import format_path


class CliError(ContextManagerError):
    """A problem with the command line's input (bad file, bad JSON)."""


#: Largest input the command line reads, in bytes (default 256 MiB).
MAX_INPUT_BYTES = 256 * 1024 * 1024
#: Environment variable overriding :data:`MAX_INPUT_BYTES` (a whole number of bytes).
MAX_INPUT_ENV = "CONTEXT_MANAGER_MAX_INPUT_BYTES"


def input_limit() -> int:
    """The input cap: ``CONTEXT_MANAGER_MAX_INPUT_BYTES`` when set, else 256 MiB."""
    text = os.environ.get(MAX_INPUT_ENV, "").strip()
    if not text:
        return MAX_INPUT_BYTES
    if not re.fullmatch(r"[0-9]{1,18}", text) or int(text) < 1:
        raise CliError(f"{MAX_INPUT_ENV} must be a whole number of bytes >= 1, got {text!r:.40}")
    return int(text)


#: Bytes read at a time: ``read(limit)`` would allocate the whole limit up front.
_CHUNK = 1 << 20


def _read_at_most(stream: BinaryIO, size: int) -> bytes:
    """Up to ``size`` bytes of ``stream``, read in chunks (memory follows the input, not the
    limit)."""
    parts: list[bytes] = []
    left = size
    while left > 0:
        part = stream.read(min(left, _CHUNK))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def load_messages(source: str) -> list[Any]:
    """Read a JSON array of messages or JSONL (one message per line) from a path or ``-``."""
    name = "<stdin>" if source == "-" else source
    limit = input_limit()
    try:
        if source == "-":
            raw = _read_at_most(sys.stdin.buffer, limit + 1)
        else:
            path = Path(source)
            if not path.is_file():
                what = "a directory" if path.is_dir() else "no such file"
                what = "not a regular file" if path.exists() and not path.is_dir() else what
                raise CliError(f"{source}: {what} (pass a JSON array or JSONL file, or -)")
            with path.open("rb") as file:
                raw = _read_at_most(file, limit + 1)
    except OSError as exc:
        raise CliError(f"{name}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise CliError(
            f"{name}: larger than the input limit of {limit:,} bytes; set {MAX_INPUT_ENV} "
            "to read more"
        )
    try:
        text = raw.decode("utf-8-sig")  # a UTF-8 byte order mark is dropped
    except UnicodeDecodeError as exc:
        raise CliError(
            f"{name}: not UTF-8 text (byte {exc.start}: {raw[exc.start : exc.start + 1]!r}); "
            "save the file as UTF-8"
        ) from None
    try:
        return _parse_messages(text, name)
    except RecursionError:
        raise CliError(f"{name}: JSON nested too deeply to read") from None


def _parse_messages(text: str, name: str) -> list[Any]:
    stripped = text.lstrip()
    if not stripped:
        raise CliError(f"{name}: empty: pass a JSON array of messages, JSONL or a request body")
    if stripped.startswith("["):
        return _document(_load(text, name), text, name)
    if stripped.startswith("{"):  # a request body (on one line or many), or JSONL
        try:
            whole = _DECODER.decode(text)
        except (ValueError, RecursionError):
            whole = None  # JSONL: each line is read (and reported) on its own below
        if isinstance(whole, dict) and _REQUEST_KEYS & whole.keys():
            return _document(whole, text, name)
    lines = text.splitlines()
    records = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    items = [(n, _load(line, f"{name}:{n}", "invalid JSON line")) for n, line in records]
    if any(_is_record(item) for _, item in items):
        return _session_log(records, name)
    messages: list[Any] = []
    for number, item in items:
        if _SURROGATE_ESCAPE.search(lines[number - 1]):
            _refuse_lone_surrogates(item, f"{name}:{number}")
        messages.append(item)
    return _nonempty(messages, name)


#: The keys that make a JSON object a provider request body rather than one message.
_REQUEST_KEYS = frozenset({"messages", "input", "contents"})


def _finite(number: str) -> float:
    """A JSON number with a fraction or exponent; ``1e999`` is legal JSON but overflows to
    infinity, which no JSON writer can put back (the output would not be JSON)."""
    value = float(number)
    if math.isinf(value):
        raise ValueError(f"{number[:40]} is too large for a float (portable JSON has no infinity)")
    return value


def _not_json(name: str) -> Any:
    raise ValueError(f"bare {name} is not JSON")


#: ``json.loads`` as the CLI reads files: NaN, Infinity and numbers that overflow to infinity are
#: refused (Node's ``JSON.parse`` rejects them and the output could not write them back).
_DECODER = json.JSONDecoder(parse_constant=_not_json, parse_float=_finite)


def _load(text: str, where: str, invalid: str = "") -> Any:
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        if invalid:
            raise CliError(f"{where}: {invalid}: {exc.msg}") from None
        raise CliError(f"{where}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise CliError(f"{where}: JSON nested too deeply to be a message list") from None
    except ValueError as exc:  # NaN, Infinity, 1e999, an integer past 4,300 digits
        reason = "an integer of more than 4,300 digits" if "digits" in str(exc) else exc
        raise CliError(f"{where}: unreadable number: {reason}") from None


def _document(data: Any, text: str, name: str) -> list[Any]:
    """A JSON array of messages, or a request body's messages with its system prompt first."""
    if isinstance(data, dict):
        data = _request_messages(data, name)
    if not isinstance(data, list):
        raise CliError(f"{name}: expected a JSON array of messages or a request body")
    if _SURROGATE_ESCAPE.search(text):
        for index, item in enumerate(data):
            _refuse_lone_surrogates(item, f"{name}: message {index}")
    return _nonempty(data, name)


def _request_messages(body: dict[str, Any], name: str) -> list[Any]:
    """The conversation a provider request body sends, its system prompt as the first message."""
    for key, system_keys in (
        ("messages", ("system",)),  # OpenAI chat, Anthropic, Bedrock Converse
        ("input", ("instructions",)),  # OpenAI Responses
        ("contents", ("systemInstruction", "system_instruction")),  # Gemini
    ):
        if key not in body:
            continue
        messages = body[key]
        if key == "input" and isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        if not isinstance(messages, list):
            raise CliError(f"{name}: the request's {key!r} is not a list of messages")
        system = next((body[k] for k in system_keys if body.get(k) is not None), None)
        text = _system_text(system)
        if system is not None and text is None:
            raise CliError(f"{name}: the request's system prompt is neither text nor text blocks")
        return ([{"role": "system", "content": text}] if text else []) + messages
    raise CliError(
        f"{name}: a JSON object must be a request body with 'messages', 'input' or 'contents' "
        f"(got keys {sorted(map(str, body))[:8]})"
    )


def _system_text(system: Any) -> str | None:
    """Anthropic / Bedrock system blocks, Gemini's system instruction or a plain string."""
    if isinstance(system, str):
        return system
    if isinstance(system, dict) and isinstance(system.get("parts"), list):
        system = system["parts"]
    if isinstance(system, list):
        texts = [b.get("text") for b in system if isinstance(b, dict)]
        if texts and all(isinstance(t, str) for t in texts):
            return "\n".join(t for t in texts if isinstance(t, str))
    return None


def _is_record(item: Any) -> bool:
    """A line only the library's session log has: metadata, or a message with ``_cm``."""
    return isinstance(item, dict) and (
        str(item.get("role", "")).startswith("_") or isinstance(item.get("_cm"), dict)
    )


def _session_log(lines: list[tuple[int, str]], name: str) -> list[Any]:
    """A session log as a restore reads it: the stores' reader, replayed into a manager (the one
    replay a store's open runs), so a compaction leaves what it kept and its summary. What that
    manager holds, in the order it sends it: the system prompt, the summary, the messages (held,
    not ``get_context()``: a call still awaiting its result is held but not sent, and the
    commands read the log as it stands)."""
    from .manager import MessageContextManager
    from .store._replay import replay
    from .store.replayer import Replayer

    replayer = Replayer(name, strict=True)
    manager = MessageContextManager(_UNBOUNDED, reserve_tokens=0, counter="chars")
    try:
        for number, line in lines:
            replayer.feed(number, (line + "\n").encode("utf-8", "surrogatepass"), True)
        state = replayer.state
        replay(manager, replayer.sequence, strict=True, path=name, tally=state, restored=state)
    except ContextManagerError as exc:
        raise CliError(str(exc)) from None
    head = [m for m in (manager.system_message, manager.summary) if m is not None]
    return _nonempty([*head, *manager.messages], name)


#: A restored session log's manager holds everything: no budget decides what it keeps.
_UNBOUNDED = 1 << 53


def as_json(message: Any) -> Any:
    """An SDK object's JSON form for output (``json.dumps(default=...)``): what the stores
    keep of it (``messages.codec``), so ``trim`` writes a session log's objects as JSON."""
    from .messages.codec import encode

    try:
        return encode(message)[0]
    except ContextManagerError as exc:
        raise TypeError(str(exc)) from None


def _nonempty(messages: list[Any], name: str) -> list[Any]:
    if not messages:
        raise CliError(f"{name}: no messages in the file")
    return messages


#: A JSON escape of a UTF-16 surrogate (``\ud800``-``\udfff``): a pair decodes to one character,
#: a lone one to a string that cannot be written out again. Only lines holding one are walked.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_lone_surrogates(value: Any, where: str) -> None:
    """Raise ``CliError`` naming the field of a parsed message that holds a lone surrogate.

    JSON allows the escape, but no UTF-8 output (``trim``'s JSON, a provider request) can carry
    it, so the file is refused as a whole, like a file that is not UTF-8. Iterative, with parent
    links for the path: linear however deep the file nests.
    """
    stack: list[tuple[Any, Any]] = [(value, None)]
    while stack:
        item, link = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                stack.append((key, link))  # a key's problem is reported at its object
                stack.append((child, (link, key)))
        elif isinstance(item, list):
            stack.extend((child, (link, i)) for i, child in enumerate(item))
        elif isinstance(item, str) and not item.isascii():
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                keys: list[Any] = []
                while link is not None:
                    link, key = link
                    keys.append(key)
                path = format_path(keys[::-1])
                raise CliError(
                    f"{where}: {path} holds a lone surrogate (\\u{ord(item[exc.start]):04x}) at "
                    f"position {exc.start}; surrogate escapes must come in pairs: fix or drop it"
                ) from None
