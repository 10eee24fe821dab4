"""Tool-call protocol: which messages belong together, and repairing histories that break it.

An assistant message with tool calls opens a *group*; the messages carrying its results join it;
the group closes when every call has a result. Groups are the atomic unit of trimming: a call is
never sent without all its results, nor a result without its call. Only the newest group can be
open, because any other message arriving while results are missing is a protocol error (the
provider APIs reject such a history) unless the caller asked for repair.

:class:`ToolProtocol` reads a stream forwards and is the authority (its checks live in one
method, ``_verdict``); :func:`joins_previous` is the same grouping rule read from two neighbours,
for a reader going backwards (``trim()``'s scan), which then replays the protocol over what it
keeps.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import InvalidMessageError
from .gemini import answered_calls
from .joining import joined_responses
from .listing import message_list
from .normalize import normalize
from .record import Message, ToolCall
from .results import without_results
from .shapes import GEMINI, render_results, shape_of

#: Text of the result inserted for a call whose result never arrived.
MISSING_RESULT_TEXT = "Error: no result was recorded for this tool call."
#: Text of the result that closes a call a new user turn interrupted.
INTERRUPTED_RESULT = "Error: the tool call was interrupted before it returned a result."


def is_glue(rec: Message) -> bool:
    """A reasoning-only Responses item: the assistant output that follows it (a call, a
    message, a hosted tool's item) joins its group. OpenAI refuses either without the other
    ("... was provided without its required 'reasoning' item")."""
    return (
        rec.item
        and rec.role == "assistant"
        and (bool(rec.thinking) or rec.signed)
        and not rec.text
        and not rec.tool_calls
        and not rec.result_ids
    )


def leads_calls(rec: Message) -> bool:
    """A Responses assistant item that calls nothing and answers nothing (an output message, a
    hosted tool's item, reasoning): a call item right after it belongs to the same response, so
    it joins its group. A reasoning model that says something before it calls returns
    ``[reasoning, message, function_call]``: one group, so the call is never sent without its
    reasoning. Messages in a row stay groups of their own (an agent's progress updates)."""
    return (
        rec.item
        and rec.role == "assistant"
        and not rec.tool_calls
        and not rec.result_ids
        and not rec.compaction
    )


def joins_previous(prev: Message | None, rec: Message) -> bool | None:
    """Whether ``rec`` joins the group of the message before it, ``prev``, in a stream that
    :class:`ToolProtocol` accepts: what :meth:`ToolProtocol.check` returns there, read from the
    two messages alone. ``prev=None``: not read yet; the answer is then None when it depends
    on ``prev`` (only an assistant message's does), so a reader fetches ``prev`` only then.

    A reader that goes backwards (``trim()``'s scan) has no protocol state yet: this is the
    same rule seen locally. A result joins (it must answer a pending call); an assistant output
    joins a reasoning-only item (glue); a call also joins when it is a parallel call item and
    ``prev`` issued calls and answered none (the protocol's "issuing" state); anything else
    starts a group. On a stream the protocol rejects, the answer means nothing: a reader using
    it replays the protocol over what it keeps (:meth:`ToolProtocol.replay`), which rejects that
    stream. On one it accepts from a group's start, the two agree message for message
    (property-tested), so the rule lives here, next to the protocol, and nowhere else.
    """
    if rec.tool_call_id is not None or rec.tool_results:
        return True
    if rec.role != "assistant":
        return False
    if prev is None:
        return None
    # a parallel call item; the call item of a preamble (``leads_calls``)
    if (
        rec.item
        and rec.tool_calls
        and not prev.result_ids
        and (prev.tool_calls or leads_calls(prev))
    ):
        return True
    return is_glue(prev)


def interrupted(rec: Message, pending: Iterable[str]) -> tuple[str, ...]:
    """The open calls (ids in ``pending``) that the user turn ``rec`` interrupts: they are
    closed right before it. A user turn that answers none of them interrupts them all (the
    person moved on); one that answers some and also carries other content (text, images,
    media) interrupts the rest. Anthropic and Bedrock merge consecutive user turns and want
    every result of the call turn before any other content ("Messages following tool_use
    blocks must begin with a matching number of tool_result blocks"): a closure sent after
    such a turn would land behind its text, one sent before it lands in front. The one home
    of the interruption rule (the manager, ``trim()`` and :func:`repair` ask here)."""
    if rec.role != "user":
        return ()
    result_ids = rec.result_ids
    if not result_ids:
        return tuple(pending)
    if not (rec.text or rec.images or rec.media or rec.other):
        return ()
    pending = tuple(pending)
    answered = set(answered_calls(result_ids, pending))
    return tuple(c for c in pending if c not in answered)


def closes_after(original: Any, rec: Message) -> bool:
    """Whether the closure of the calls the user turn ``rec`` interrupts (:func:`interrupted`)
    goes right after the turn instead of before it: for a Gemini content that answers some
    calls and says more. Gemini reads the responses to a call turn from the one content after
    it, in order (an id-less response answers the first open call of its name, as
    :func:`~.gemini.answered_calls` pairs them), so the closure follows the turn's own responses
    and the two are sent as one content (:func:`~.joining.joined_responses`). Anthropic and
    Bedrock want every result before any text: there it goes before."""
    return bool(rec.result_ids) and shape_of(original) == GEMINI


def _error(reason: str, index: int | None) -> InvalidMessageError:
    if "duplicate result" in reason:
        hint = (
            "a call takes one result, and this one came after it was answered or closed as "
            "interrupted: add what it says as a message, or pass repair=True to drop it"
        )
    else:
        hint = "add every tool result right after its call, or pass repair=True"
    return InvalidMessageError(reason, index=index, hint=hint)


class ToolProtocol:
    """Incremental checker: ``accept`` says whether a message joins the open group."""

    __slots__ = ("_answered", "_issued", "_issuing", "glue", "leads", "pending")

    def __init__(self) -> None:
        self.pending: dict[str, None] = {}  # ids of the open group still awaiting results
        self._issued: set[str] = set()
        self._answered: set[str] = set()
        # True while the open group has only received calls (Responses items arrive one call
        # per item, so the next call item still belongs to it).
        self._issuing = False
        #: True after a reasoning-only item: the calls that follow join its group.
        self.glue = False
        #: True after a Responses item that calls nothing: a call item joins it (``leads_calls``).
        self.leads = False

    def outside(self, rec: Message) -> bool:
        """True when ``rec`` takes no part in any tool exchange (nothing to check or commit)."""
        return (
            not self.pending
            and not self.glue
            and not self.leads
            and not rec.thinking
            and not rec.signed
            and not rec.item  # a Responses item may glue what follows (``is_glue``)
            and not rec.tool_calls
            and rec.tool_call_id is None
            and not rec.tool_results
        )

    def problem(self, rec: Message) -> str | None:
        """Why ``rec`` cannot come next, or None when it can (nothing is changed)."""
        verdict = self._verdict(rec, answered_calls(rec.result_ids, self.pending))
        return verdict if isinstance(verdict, str) else None

    def _verdict(self, rec: Message, result_ids: tuple[str, ...]) -> str | bool:
        """Why ``rec`` cannot come next (a text), else whether it joins the open group: the
        protocol's rules, in one place (:meth:`problem`, :meth:`check`, :meth:`accept` and
        :meth:`replay` ask here). ``result_ids``: the calls ``rec`` answers, as
        :func:`~.gemini.answered_calls` reads them (an id-less Gemini response by its place),
        worked out once by the caller for this check and the commit after it."""
        pending = self.pending
        # The usual message is settled by two lookups (one pending result, or one new call);
        # anything else takes the full reading below, which names the problem.
        if result_ids:
            if len(result_ids) == 1 and result_ids[0] in pending and not rec.tool_calls:
                return True  # one result for an open call: it joins
            answered: set[str] = set()
            for rid in result_ids:
                if rid in answered:
                    return f"duplicate result for tool call {rid!r}"
                answered.add(rid)
                if rid in pending:
                    continue
                if rid in self._answered and not rid.startswith("~"):
                    return f"duplicate result for tool call {rid!r}"
                if rid in self._issued:
                    return f"result for tool call {rid!r} arrives after other messages"
                return f"tool result references unknown tool call id {rid!r}"
        elif pending and not self._more_calls(rec, result_ids):
            waiting = ", ".join(pending)
            return f"tool call(s) {waiting} still await results"
        calls = rec.tool_calls
        # An id names one open call: it may come back once its call is answered (llama.cpp sends
        # one id for every call, Kimi and Grok number calls per reply; the server that made
        # them reads the next result as the answer to the open call), never while it is open.
        if calls and (len(calls) > 1 or calls[0].id in pending):
            seen: set[str] = set()
            for call in calls:
                if call.id in seen:
                    return f"tool call id {call.id!r} appears twice in one message"
                seen.add(call.id)
                if call.id in pending:
                    return f"tool call id {call.id!r} is still open"
        if pending:
            return bool(result_ids) or self._more_calls(rec, result_ids)
        if self.leads and rec.item and calls:
            return True
        return self.glue and rec.role == "assistant"

    def check(self, rec: Message, index: int | None = None) -> bool:
        """True when ``rec`` would join the open group; raises on protocol errors. Changes
        nothing, so a write-ahead journal can refuse the message before :meth:`commit`."""
        if (
            not self.pending
            and not self.glue
            and not rec.tool_calls
            and rec.tool_call_id is None
            and not rec.tool_results
        ):
            return False  # the common case: a plain message outside any tool exchange
        return self._check(rec, index, answered_calls(rec.result_ids, self.pending))

    def _check(self, rec: Message, index: int | None, result_ids: tuple[str, ...]) -> bool:
        verdict = self._verdict(rec, result_ids)
        if isinstance(verdict, str):
            raise _error(verdict, index)
        return verdict

    def _more_calls(self, rec: Message, result_ids: tuple[str, ...]) -> bool:
        """A call-only item while the open group has had only calls: a parallel call."""
        return self._issuing and rec.item and bool(rec.tool_calls) and not result_ids

    def accept(self, rec: Message, index: int | None = None) -> bool:
        """Record ``rec``; True when it joins the open group. Raises on protocol errors."""
        result_ids = answered_calls(rec.result_ids, self.pending)  # once, for both steps
        joins = self._check(rec, index, result_ids)
        self._commit(rec, result_ids)
        return joins

    def replay(self, recs: Iterable[Message], index: int = 0) -> list[bool]:
        """:meth:`accept` each of ``recs`` in turn (``index``: the first one's, for errors);
        for each, whether it joined the group before it (False: it starts a group).

        A message outside any exchange (most of a chat) is neither checked nor recorded, as
        the manager's add does: accepting it would change nothing. ``trim()`` replays all it
        keeps through here (hundreds of messages, a third of them tool results), so the loop
        calls the checks directly, not through ``accept``; it asks :meth:`outside` only of a
        message that answers no call (one that answers some never is), and reads
        ``result_ids`` only of one that does (else it can only be ()).
        """
        out: list[bool] = []
        append, outside, verdict, commit = out.append, self.outside, self._verdict, self._commit
        for k, rec in enumerate(recs, index):
            if rec.tool_call_id is not None or rec.tool_results:
                result_ids = answered_calls(rec.result_ids, self.pending)
            elif outside(rec):
                append(False)
                continue
            else:
                result_ids = ()
            joins = verdict(rec, result_ids)
            if isinstance(joins, str):
                raise _error(joins, k)
            append(joins)
            commit(rec, result_ids)
        return out

    def skipped(self) -> None:
        """Messages were left out before the next one (no call open): it starts a group."""
        self.glue = self.leads = self._issuing = False

    def commit(self, rec: Message) -> None:
        """Record a message :meth:`check` accepted."""
        self._commit(rec, answered_calls(rec.result_ids, self.pending))

    def _commit(self, rec: Message, result_ids: tuple[str, ...]) -> None:
        """Record ``rec``, answering ``result_ids`` (as :meth:`_verdict` was given them)."""
        pending = self.pending
        for rid in result_ids:
            del pending[rid]
            self._answered.add(rid)
        for call in rec.tool_calls:
            self._issued.add(call.id)
            pending[call.id] = None
        self._issuing = bool(pending) and not result_ids
        self.glue = rec.item and is_glue(rec)
        self.leads = leads_calls(rec)

    def copy(self) -> ToolProtocol:
        twin = ToolProtocol()
        twin.pending = dict(self.pending)
        twin._issued = set(self._issued)
        twin._answered = set(self._answered)
        twin._issuing, twin.glue, twin.leads = self._issuing, self.glue, self.leads
        return twin

    def reset(self) -> None:
        self.pending.clear()
        self._issued.clear()
        self._answered.clear()
        self._issuing = self.glue = self.leads = False


def missing_results(
    callers: Iterable[tuple[Any, Message]],
    call_ids: Iterable[str],
    text: str = MISSING_RESULT_TEXT,
) -> list[Any]:
    """Synthetic error results for ``call_ids``, each rendered in the shape of the message that
    made its call (:func:`~.shapes.render_results`): ``callers`` are the (message, record) pairs
    of the open group that issued calls, in order. A call whose message is gone (evicted) is
    answered in the shape of the others, else as an OpenAI tool message."""
    wanted = dict.fromkeys(call_ids)
    out: list[Any] = []
    last: Any = None
    for caller, rec in callers:
        mine = [call for call in rec.tool_calls if call.id in wanted]
        for call in mine:
            del wanted[call.id]
        out += render_results(caller, mine, text)
        last = caller if mine else last
    if wanted:
        out += render_results(last, [ToolCall(i, "", "") for i in wanted], text)
    return out


def _without_stale_results(original: Any, rec: Message, stale: set[str]) -> Any | None:
    """A copy of a message without the results that answer nothing (None: drop it): it stays
    when something else is left, text, images, calls or results that answer an open call."""
    answers = any(rid not in stale for rid in rec.result_ids)
    keeps_content = rec.text or rec.images or rec.tool_calls or answers
    if rec.tool_call_id is not None or not keeps_content:
        return None
    return without_results(original, stale)


class Repairer:
    """Streams messages and yields a history that satisfies the tool-call protocol.

    Orphan, duplicate and late results are dropped (a mixed user turn keeps its other content);
    calls whose results never arrived get a synthetic error result right before the next
    unrelated message, or before a user turn that answers some of them and says more
    (:func:`interrupted`), or at the end, via ``finish``.
    """

    def __init__(self) -> None:
        self.protocol = ToolProtocol()
        #: The messages of the open group that issued calls (they decide the results' shape).
        self._callers: list[tuple[Any, Message]] = []
        #: How many closures the last :meth:`feed` put after its message (a Gemini turn's).
        self.closed_after = 0

    @classmethod
    def resuming(cls, protocol: ToolProtocol, callers: Iterable[tuple[Any, Message]]) -> Repairer:
        """A repairer that continues a stream ``protocol`` has followed so far (repair switched
        on mid-conversation): open calls are closed with synthetic results on the next message.
        ``callers``: the (message, record) pairs that issued the open calls."""
        fixer = cls()
        fixer.protocol = protocol.copy()
        fixer._callers = list(callers)
        return fixer

    def feed(
        self,
        original: Any,
        index: int | None = None,
        rec: Message | None = None,
        interrupted_text: str = INTERRUPTED_RESULT,
    ) -> list[tuple[Any, Message]]:
        """What to store for ``original``, as (message, record) pairs: records are reused, so a
        caller that already normalized ``original`` passes ``rec`` and nothing is parsed twice.

        Calls a user turn interrupts (:func:`interrupted`) are closed with ``interrupted_text``
        (the manager passes its ``interrupted_result``, so a closure reads the same with repair
        on or off); calls closed for any other reason say no result was recorded."""
        if rec is None:
            rec = normalize(original, index)
        out: list[tuple[Any, Message]] = []
        self.closed_after = 0
        result_ids = rec.result_ids
        if self.protocol.pending and not result_ids and not self.protocol._more_calls(rec, ()):
            # Not a result, nor a parallel call item of the group: the group ends here.
            cut = interrupted(rec, self.protocol.pending)
            out.extend(self.finish(cut, interrupted_text) if cut else self.finish())
        pending = self.protocol.pending
        answers = zip(result_ids, answered_calls(result_ids, pending), strict=True)
        stale = {given for given, call in answers if call not in pending}
        if stale:
            fixed = _without_stale_results(original, rec, stale)
            if fixed is None:
                return out
            original, rec = fixed, normalize(fixed, index)
            if self.protocol.pending and not rec.result_ids:  # it answers nothing: the group ends
                out.extend(self.finish())
        if self.protocol.problem(rec) is not None:  # e.g. a reused call id: drop the message
            return out
        pending = self.protocol.pending
        cut = interrupted(rec, pending) if pending and rec.result_ids else ()
        after = bool(cut) and closes_after(original, rec)
        if cut and not after:
            out.extend(self.finish(cut, interrupted_text))
        opens = not self.protocol.pending
        self.protocol.accept(rec, index)
        if rec.tool_calls:
            if opens:
                self._callers = []
            self._callers.append((original, rec))
        out.append((original, rec))
        if after:
            closures = self.finish(cut, interrupted_text)
            out.extend(closures)
            self.closed_after = len(closures)
        return out

    def finish(
        self, ids: Iterable[str] | None = None, text: str = MISSING_RESULT_TEXT
    ) -> list[tuple[Any, Message]]:
        """Close the open group with synthetic results saying ``text`` (if any are missing);
        ``ids``: only those open calls (the ones a user turn interrupts, :func:`interrupted`)."""
        ids = list(self.protocol.pending if ids is None else ids)
        if not ids:
            return []
        fillers = missing_results(self._callers, ids, text)
        out = []
        for filler in fillers:
            rec = normalize(filler)
            self.protocol.accept(rec)
            out.append((filler, rec))
        return out


def repair(messages: Iterable[Any]) -> list[Any]:
    """Return a protocol-valid copy of ``messages`` (input untouched; see :class:`Repairer`)."""
    fixer = Repairer()
    out: list[Any] = []
    for i, message in enumerate(message_list(messages)):
        out.extend(original for original, _ in fixer.feed(message, i))
        if fixer.closed_after:  # a Gemini turn, then the closure of the calls it interrupted
            _join_closures(out, fixer.closed_after)
    out.extend(original for original, _ in fixer.finish())
    return out


def _join_closures(out: list[Any], closures: int) -> None:
    """The last ``closures`` entries of ``out`` joined into the turn before them, as Gemini
    wants the responses to one call turn in one content (the manager joins them when it sends,
    with the provider's rules; :func:`repair` knows no provider, so it joins what it made)."""
    turn = out[-closures - 1]
    for closure in out[-closures:]:
        joined = joined_responses(turn, closure)
        if joined is None:
            return  # left apart, as given
        turn = joined
    del out[-closures:]
    out[-1] = turn
