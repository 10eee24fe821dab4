"""What each provider API accepts, as small named rule sets: checked by :func:`validate`, and
kept by every strategy when a manager or ``trim()`` is given ``provider=``.

Sources (each rule names its own):

- OpenAI Chat Completions, "Function calling": a ``tool`` message must follow the assistant
  message whose ``tool_calls`` holds its id, and every call must be answered before the next
  user or assistant message (the API rejects the request otherwise).
- OpenAI Responses, "Function calling" and "Reasoning": ``function_call`` and
  ``function_call_output`` pair by ``call_id``; with reasoning models a ``function_call`` must be
  preceded by the ``reasoning`` item that produced it.
- Anthropic Messages, "Messages API" and "Tool use": the first message is a user turn;
  consecutive same-role turns are merged by the API (so trimming must not create them: an
  answer would lose its question); each ``tool_use`` is answered by ``tool_result`` blocks in the
  very next user turn, results before any text; a final assistant turn is a prefill. With
  extended thinking an assistant turn starts with its thinking block, and the last assistant
  turn that calls tools in the current tool loop (no user text after it) keeps it: "the
  complete unmodified block" must be passed back ("Extended thinking", "Preserving thinking
  blocks"); a final assistant message without it is rejected.
- Amazon Bedrock Converse: the first message is a user message and roles strictly alternate.
  Where two plain same-role turns meet (an interrupted call's synthetic result and the user's
  next words, or two user turns the caller sent), :func:`fuse_turns` joins them into one turn,
  as Anthropic's own API does server-side, so the output alternates.
- Gemini, "Function calling": contents start with a user turn; a function call follows a user
  turn or a function response; responses to parallel calls without ids pair by position, and
  the content after a call turn holds as many function responses as it has calls (the API's
  400: "the number of function response parts is equal to the number of function call parts"),
  so :func:`fuse_turns` joins response-only contents that follow one another.
  "Thought signatures": with thinking on (a signature in the current turn, i.e. after the latest
  user turn), each function-call step of the current turn carries its ``thought_signature``.
- OpenAI Responses, "Reasoning": a ``reasoning`` item is sent directly before the output item
  (function call or message) it produced, never before a tool output or a user message.
- Native compaction (OpenAI Responses ``compaction`` items, Anthropic ``compaction`` blocks):
  only the provider that made one can read it (``compaction-provider``); Anthropic rejects a
  compaction block that is not the first block of the conversation (``compaction-first``), and
  a turn that starts with one is the conversation's valid first turn.

Signed reasoning is never edited by the library (a turn carrying it is sent as given or not at
all; see ``docs/guide/providers.md``), so these rules are kept by keeping turns whole and
together. :func:`validate` checks what a list alone can show, and with ``source=`` (what the
context was made from) that the turns these rules name still carry their reasoning.
- Every provider: a result takes the shape of its call (an OpenAI ``tool`` message answers no
  Anthropic ``tool_use``, a chat dict no pydantic-ai ``ToolCallPart``): ``result-shape``, read
  through :func:`~context_manager.messages.shapes.shape_of`. SDK objects are judged exactly as
  the same content written as dicts.

The restriction only ever *drops* groups from a selection (never adds), so it cannot push a
context over its budget; the latest user turn and the newest exchange are never dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Literal

from .errors import ConfigurationError, InvalidMessageError
from .messages import Message, message_list, normalize
from .messages.gemini import answered_calls
from .messages.joining import fused
from .messages.nesting import short_repr
from .messages.shapes import THINKING_KINDS, part_kinds, same_shape, shape_of

__all__ = [
    "PROVIDERS",
    "Problem",
    "ProviderRules",
    "fuse_turns",
    "get_provider",
    "validate",
]

ProviderName = Literal["openai", "openai-responses", "anthropic", "bedrock", "gemini"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason a provider would reject a context: where, which rule, in plain words."""

    index: int
    rule: str
    reason: str

    def __str__(self) -> str:
        return f"message {self.index}: {self.reason} [{self.rule}]"


@dataclass(frozen=True, slots=True)
class ProviderRules:
    """A provider's rule set. ``first_user``: the first non-system message is a user turn.
    ``alternate``: trimming never brings two turns of the same role together (Anthropic merges
    such turns, so an answer would lose its question). ``strict``: the list itself must alternate
    exactly (Bedrock Converse), which :func:`validate` checks. ``one_response_turn``: the
    responses to one call turn are sent as one turn (Gemini counts the function responses of
    the content after a call turn against its calls); :func:`fuse_turns` joins them."""

    name: str
    first_user: bool = False
    alternate: bool = False
    strict: bool = False
    results_first: bool = False
    thinking_first: bool = False
    one_response_turn: bool = False
    #: The signed-reasoning rule: ``"anthropic"`` (the last tool-calling turn of the current
    #: loop starts with thinking), ``"gemini"`` (the current turn's calls carry signatures),
    #: ``"responses"`` (a reasoning item directly precedes what it produced), or ``""``.
    reasoning: str = ""
    #: Call ids are unique within a request (Anthropic: "tool_use ids must be unique";
    #: Responses pairs calls and outputs by ``call_id`` over the whole input). Chat Completions
    #: pairs a result with the call message before it, so servers that reuse ids accept them.
    unique_ids: bool = False
    #: Every turn has content (Anthropic: "all messages must have non-empty content except for
    #: the optional final assistant message"; Gemini: "contents.parts must not be empty";
    #: Bedrock Converse: a message's content is required). An SDK returns such turns: Claude's
    #: empty ``end_turn`` reply, a Gemini candidate with no parts after a safety stop.
    non_empty: bool = False


PROVIDERS: dict[str, ProviderRules] = {
    "openai": ProviderRules("openai"),
    "openai-responses": ProviderRules("openai-responses", reasoning="responses", unique_ids=True),
    "anthropic": ProviderRules(
        "anthropic",
        first_user=True,
        alternate=True,
        results_first=True,
        thinking_first=True,
        reasoning="anthropic",
        unique_ids=True,
        non_empty=True,
    ),
    "bedrock": ProviderRules(
        "bedrock", first_user=True, alternate=True, strict=True, results_first=True, non_empty=True
    ),
    "gemini": ProviderRules(
        "gemini",
        first_user=True,
        alternate=True,
        one_response_turn=True,
        reasoning="gemini",
        non_empty=True,
    ),
}


#: What :func:`validate` checks with ``provider=None`` (as ``trim()`` and the manager take it: no
#: provider's own rules): tool pairing and result shapes, which every provider requires.
_SHARED = ProviderRules("any provider")


def get_provider(name: str | ProviderRules | None) -> ProviderRules | None:
    if name is None or isinstance(name, ProviderRules):
        return name
    rules = PROVIDERS.get(name) if isinstance(name, str) else None
    if rules is None:
        raise ConfigurationError(
            f"unknown provider {short_repr(name, 60)}; use one of {', '.join(PROVIDERS)} or None"
        )
    return rules


def _turn_role(rec: Message) -> str:
    """The role a provider sees: tool results travel in user turns outside OpenAI."""
    if rec.role == "tool":
        return "user"
    return rec.role


# -- checking a list -----------------------------------------------------------------------


def _pairing(given: Sequence[Any], records: Sequence[Message], out: list[Problem]) -> None:
    """Each call answered before the next message, no result without its open call, and each
    result in the shape of its call (an OpenAI tool message cannot answer an Anthropic call)."""
    pending: dict[str, int] = {}
    shapes: dict[int, str | None] = {}

    def shape(k: int) -> str | None:
        if k not in shapes:
            shapes[k] = shape_of(given[k])
        return shapes[k]

    for i, rec in enumerate(records):
        mismatch = None
        for rid in answered_calls(rec.result_ids, pending):
            if rid not in pending:
                out.append(Problem(i, "tool-pairing", f"tool result {rid!r} answers no open call"))
                continue
            caller = pending.pop(rid)
            theirs, mine = shape(caller), shape(i)
            if mismatch is None and not same_shape(theirs, mine):
                mismatch = (
                    f"the result of tool call {rid!r} is a {mine} message, its call "
                    f"(message {caller}) a {theirs} one: answer in the call's shape"
                )
        if mismatch is not None:
            out.append(Problem(i, "result-shape", mismatch))
        if pending and not rec.result_ids and not (rec.item and rec.tool_calls):
            waiting = ", ".join(pending)
            out.append(Problem(i, "tool-pairing", f"tool call(s) {waiting} are not answered"))
            pending.clear()
        for call in rec.tool_calls:
            pending[call.id] = i
    if pending:
        first = min(pending.values())
        out.append(Problem(first, "tool-pairing", "tool call(s) without results at the end"))


def _unique_ids(records: Sequence[Message], out: list[Problem]) -> None:
    """A call id used by an earlier call of the same request (a server that numbers calls per
    reply made it; an id-less Gemini call, ``~name~k``, has none to repeat)."""
    used: set[str] = set()
    for i, rec in enumerate(records):
        for call in rec.tool_calls:
            if call.id in used and not call.id.startswith("~"):
                reason = f"tool call id {call.id!r} is used again: ids must be unique in a request"
                out.append(Problem(i, "unique-ids", reason))
            used.add(call.id)


def _one_response_turn(
    caller: Message, body: Sequence[tuple[int, Message]], at: int, out: list[Problem]
) -> None:
    """Gemini counts the responses of the content after a call turn (``body[at]``) against its
    calls: calls answered only by a later response content (the responses split in two) are a
    problem (ones never answered are the pairing rule's). Reads only that run of contents."""
    index, first = body[at]
    open_calls = dict.fromkeys(caller.call_ids)
    answered, later = set(answered_calls(first.result_ids, open_calls)), set[str]()
    for c in answered:
        open_calls.pop(c, None)
    k = at + 1
    while k < len(body) and body[k][1].result_ids:
        ids = answered_calls(body[k][1].result_ids, open_calls)
        later.update(ids)
        for c in ids:  # in place: each content costs its own responses, not the open calls
            open_calls.pop(c, None)
        k += 1
    split = [c for c in caller.tool_calls if c.id not in answered and c.id in later]
    if split:  # an id-less call (``~name~k``) is named by its function
        names = ", ".join(c.name if c.id.startswith("~") else c.id for c in split)
        reason = f"the calls {names} are answered in a later content, not the one after the call"
        out.append(Problem(index, "one-response-turn", reason))


def validate(
    messages: Iterable[Any],
    provider: str | ProviderRules | None = "openai",
    *,
    source: Iterable[Any] | None = None,
) -> list[Problem]:
    """The problems ``provider`` would reject ``messages`` for (empty when it accepts them).

    Works on any list, trimmed or not; each problem names the message index and the rule.
    ``source``: the messages a context was made from; the signed-reasoning rules then also
    check that each tool-calling turn the provider checks still has its reasoning, unmodified.
    """
    rules = get_provider(provider) or _SHARED  # None: the rules every provider shares
    given = message_list(messages)
    records: list[Message] = []
    problems: list[Problem] = []
    for i, message in enumerate(given):
        try:
            records.append(normalize(message, i))
        except InvalidMessageError as exc:
            problems.append(Problem(i, "readable", exc.reason))
            records.append(Message("user"))
    _pairing(given, records, problems)
    if rules.unique_ids:
        _unique_ids(records, problems)
    body = [(i, r) for i, r in enumerate(records) if r.role not in ("system", "developer")]
    _compactions(rules, body, problems)
    first_ok = bool(body) and (_turn_role(body[0][1]) == "user" or bool(body[0][1].compaction))
    if rules.first_user and body and not first_ok:
        problems.append(
            Problem(
                body[0][0],
                "first-user",
                "the first message after the system prompt is not a user turn",
            )
        )
    if rules.non_empty:
        _non_empty(rules, body, problems)
    for k, ((_, a), (j, b)) in enumerate(pairwise(body)):
        if rules.one_response_turn and a.tool_calls and b.result_ids:
            _one_response_turn(a, body, k + 1, problems)
        if _turn_role(a) != _turn_role(b) or (a.item and b.item):
            continue
        if rules.strict and not (a.result_ids and b.result_ids):
            problems.append(Problem(j, "alternate", f"two {_turn_role(b)} turns in a row"))
        elif rules.name == "gemini" and b.role == "assistant" and b.tool_calls:
            problems.append(
                Problem(
                    j,
                    "call-follows-user",
                    "a function call must follow a user turn or a function response",
                )
            )
    said = False  # the user turn so far (consecutive user turns merged) has non-result content
    for i, message in enumerate(given):
        kinds = part_kinds(message) if rules.results_first or rules.thinking_first else []
        if rules.results_first and _turn_role(records[i]) == "user":
            said = _results_first(i, kinds or _kinds(records[i]), said, problems)
        elif records[i].role not in ("system", "developer"):
            said = False
        if rules.thinking_first and records[i].role == "assistant":
            first = next((k for k, t in enumerate(kinds) if t in THINKING_KINDS), None)
            if first not in (None, 0):
                problems.append(Problem(i, "thinking-first", "thinking is not first in its turn"))
    if rules.reasoning:
        src = None if source is None else list(source)
        _signed_reasoning(rules.reasoning, given, records, src, problems)
    problems.sort(key=lambda p: p.index)
    return problems


def _non_empty(rules: ProviderRules, body: list[tuple[int, Message]], out: list[Problem]) -> None:
    """Each turn says something: text that is not blank, a call, a result, an image or
    document, reasoning, or a block the provider reads (Anthropic's final assistant turn, a
    prefill, may be empty)."""
    unreadable = {p.index for p in out if p.rule == "readable"}  # reported once, as that
    for k, (i, rec) in enumerate(body):
        if (
            i in unreadable
            or rec.text.strip()
            or rec.tool_calls
            or rec.tool_call_id is not None
            or rec.tool_results
            or rec.images
            or rec.media
            or rec.thinking
            or rec.other
            or rec.compaction
            or rec.signed
        ):
            continue
        if rules.name == "anthropic" and k == len(body) - 1 and rec.role == "assistant":
            continue
        out.append(Problem(i, "non-empty", "a turn with no content (the API refuses it)"))


def _kinds(rec: Message) -> list[str]:
    """A turn's part kinds when its content has no parts (a text content, a tool message)."""
    if rec.tool_call_id is not None:  # its text is the result's
        return ["tool_result"]
    return ["tool_result"] * len(rec.tool_results) + (["text"] if rec.text else [])


def _results_first(i: int, kinds: list[str], said: bool, out: list[Problem]) -> bool:
    """Anthropic and Bedrock merge consecutive user turns, and the merged turn after a call
    turn must begin with its results ("Messages following tool_use blocks must begin with a
    matching number of tool_result blocks"): a result after text, an image or a document of
    the same merged turn is a problem. ``said``: such content came before in the merged turn;
    returns whether it has by the end of this one. (A call left unanswered by that turn is the
    pairing rule's.)"""
    for kind in kinds:
        if kind != "tool_result":
            said = True
        elif said:
            out.append(Problem(i, "results-first", "text comes before a tool_result"))
            break
    return said


#: Which provider rule sets read a native compaction made by which provider.
_COMPACTION_READERS = {"openai": ("openai-responses",), "anthropic": ("anthropic",)}


def reads_compaction(rules: ProviderRules | None, maker: str) -> bool:
    """Whether a request under ``rules`` can carry a native compaction made by ``maker``.
    With no rules the target is unknown: the compaction is taken as made for it."""
    return rules is None or rules.name in _COMPACTION_READERS.get(maker, ())


def _compactions(rules: ProviderRules, body: list[tuple[int, Message]], out: list[Problem]) -> None:
    """A native compaction sent to a provider other than its maker, which cannot read it; for
    Anthropic, one that is not the first turn after the system prompt."""
    for k, (i, rec) in enumerate(body):
        if not rec.compaction:
            continue
        if not reads_compaction(rules, rec.compaction):
            reason = (
                f"a compaction made by {rec.compaction} sent to {rules.name}, which cannot "
                "read it: compact the conversation for this provider (our summary) instead"
            )
            out.append(Problem(i, "compaction-provider", reason))
        elif rules.name == "anthropic" and k:
            reason = "a compaction block is not the first block of the conversation"
            out.append(Problem(i, "compaction-first", reason))


def _signed_reasoning(
    rule: str,
    given: Sequence[Any],
    records: Sequence[Message],
    source: Sequence[Any] | None,
    out: list[Problem],
) -> None:
    """The provider's rule for signed reasoning (see the module docstring). From the list alone:
    a Responses reasoning item directly precedes an output item; with Gemini thought signatures
    in the current turn (after the latest user turn), each of its calls carries one. Given the
    ``source`` the context was made from, also: a turn that calls tools keeps the reasoning it
    had there (Anthropic: the last tool-calling turn of the current turn, its thinking first;
    Gemini: the current turn's signatures; Responses: the reasoning item before each call run).
    Records are compared (thinking text, opaque signed data, block order), never raw keys."""
    if rule == "responses":
        for i, rec in enumerate(records[:-1]):
            nxt = records[i + 1]
            # an assistant message item reads as a plain assistant message (``item`` unset)
            if _is_reasoning_item(rec) and nxt.role != "assistant":
                reason = "a reasoning item is not directly followed by the call or message it made"
                out.append(Problem(i, "reasoning-before-output", reason))
    loop = next((k + 1 for k in range(len(records) - 1, -1, -1) if records[k].is_user_turn), 0)
    callers = [k for k in range(loop, len(records)) if records[k].tool_calls]
    if rule == "gemini" and any(records[k].signed for k in range(loop, len(records))):
        for k in callers:
            if not records[k].signed:
                reason = "a function call of the current turn has no thought signature"
                out.append(Problem(k, "thought-signature", reason))
    if source is None:
        return
    src = list(source)
    src_records = [_readable(m, i) for i, m in enumerate(src)]
    where = {r.tool_calls: k for k, r in enumerate(src_records) if r.tool_calls}
    if rule == "responses":
        at = {id(m): k for k, m in enumerate(src)}  # a message or hosted call: the same object
        for i, rec in enumerate(records):
            k = where.get(rec.tool_calls, -1) if rec.tool_calls else at.get(id(given[i]), -1)
            if rec.role != "assistant" or _is_reasoning_item(rec):
                continue
            if k <= 0 or not _is_reasoning_item(src_records[k - 1]):
                continue
            if i and _same_reasoning(records[i - 1], src_records[k - 1]):
                continue
            reason = "an output lost the reasoning item it was made with, directly before it"
            out.append(Problem(i, "reasoning-before-output", reason))
        return
    checked = callers if rule == "gemini" else callers[-1:]
    for i in checked:
        k = where.get(records[i].tool_calls, -1)
        if k < 0 or not (src_records[k].signed or src_records[k].thinking):
            continue
        if rule == "gemini":
            kept = _same_reasoning(records[i], src_records[k])
        else:
            kept = _same_reasoning(records[i], src_records[k]) and _thinking_prefix(
                given[i]
            ) == _thinking_prefix(src[k])
        if not kept:
            name = "thought-signature" if rule == "gemini" else "thinking-kept"
            reason = (
                "a tool-calling turn of the current turn lost or changed the signed reasoning "
                "it was given with; send it unmodified (its thinking first)"
            )
            out.append(Problem(i, name, reason))


def _readable(message: Any, index: int) -> Message:
    try:
        return normalize(message, index)
    except InvalidMessageError:
        return Message("user")


def _is_reasoning_item(rec: Message) -> bool:
    return rec.item and rec.signed and rec.role == "assistant" and not rec.tool_calls


def _same_reasoning(a: Message, b: Message) -> bool:
    return (a.signed, a.thinking, a.other) == (b.signed, b.thinking, b.other)


def _thinking_prefix(message: Any) -> list[str]:
    kinds = part_kinds(message)
    n = next((k for k, t in enumerate(kinds) if t not in THINKING_KINDS), len(kinds))
    return kinds[:n]


# -- strict alternation: joining same-role neighbours -------------------------------------


def fuse_turns(messages: list[Any], provider: str | ProviderRules | None = "bedrock") -> list[Any]:
    """``messages`` with each run of turns ``provider`` wants as one turn joined into one.

    Strict providers (Bedrock): plain same-role turns. Only dict turns whose keys are ``role``
    and ``content`` are joined, and only where the joined turn keeps the other rules (tool
    results first, thinking first, a call ends its turn); the joined turn is a new dict holding
    the same blocks, never costlier to send than the two turns. ``one_response_turn``
    (Gemini): user contents holding only function responses, which answer the same call turn
    (:func:`~context_manager.messages.joining.joined_responses`: a new ``Content`` or dict in
    the conversation's shape; pydantic-ai requests answering one call turn become one request);
    a text turn is never joined to them. Returns ``messages``
    itself when nothing is joined; every turn not joined is the caller's object.
    """
    rules = get_provider(provider)
    messages = message_list(messages)
    if rules is None or not (rules.strict or rules.one_response_turn):
        return messages
    return fused(messages, plain=rules.strict, answers=rules.one_response_turn)
