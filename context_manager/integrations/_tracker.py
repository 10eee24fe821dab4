"""Follow a framework's growing message list with a manager, counting only what is new.

Shared by the LangGraph hook, the LangChain middleware, the pydantic-ai capability and the
Agents SDK filters; imports no framework. Frameworks hand over the whole list on every request,
often as new objects (LangGraph deserializes its checkpoint, the Agents SDK rebuilds its item
dicts): a message is "the same" when it is the same object or equal to the one seen before at
that position, so an edit that keeps the message's id (LangGraph replaces a message by id) is
seen as a change, and the objects sent are always this request's.

What the framework sends apart from the list (the system prompt or instructions, the tool
schemas) is counted against the budget exactly like the messages (the first system text as the
manager's system prompt, tools as the manager's tool definitions), but not returned: the
framework adds it itself.

Several conversations may share one hook or middleware (a compiled graph serves many threads,
an agent many users): each conversation, recognised by the key of its first message, keeps its
own manager in a small LRU, so switching between them does not recount anything.

A list is taken as it is, never refused for its tool protocol: the state may have been edited
(LangGraph's ``RemoveMessage`` can take away the turn that closed a call, or a call whose result
stays), so a message that breaks the protocol is added with the manager's ``repair`` on (its
repairer closes the open calls or drops the orphan result); the manager's own rules (a user turn
closes the calls it interrupted) apply to every other message. And since a context is asked for
right before the model is called, a call still open then will never get its result: it is
closed (``close_pending_tool_calls``) rather than left out with its group.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import ConfigurationError, InvalidMessageError
from ..manager import MessageContextManager
from ..messages import normalize
from ..messages.nesting import short_repr

__all__ = ["ContextTracker", "check_messages"]

#: Conversations followed at once by one tracker (least recently used dropped first).
MAX_CONVERSATIONS = 32


def message_key(message: Any) -> Any:
    """Which conversation a first message starts: its ``id`` when it has one, else its content
    for a dict (rebuilt per request), else the object."""
    given = getattr(message, "id", None)
    if isinstance(given, str | int):
        return given
    return hash(repr(message)) if isinstance(message, Mapping) else id(message)


@functools.cache
def _manager_options() -> frozenset[str]:
    """The keyword options ``MessageContextManager`` takes (what a tracker passes on to it)."""
    parameters = inspect.signature(MessageContextManager.__init__).parameters
    return frozenset(parameters) - {"self"}


def check_messages(messages: object) -> None:
    """The list a framework hands over: a sequence of messages (not a dict or a string)."""
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
        raise ConfigurationError(
            f"the messages must be a list of messages, got {type(messages).__name__}"
        )


class _Conversation:
    """One followed conversation: its manager and the messages it was given (as first seen)."""

    __slots__ = ("extra", "manager", "position", "seen", "system", "tools")

    def __init__(self, manager: MessageContextManager, tools: Any, extra: int) -> None:
        self.manager = manager
        self.seen: list[Any] = []
        self.position: dict[int, int] = {}  # id(object first seen) -> its index
        self.tools = tools
        self.extra = extra
        self.system: Any = None

    def same_prefix(self, messages: Sequence[Any]) -> bool:
        """Whether ``messages`` starts with what was seen (newest first: edits are recent)."""
        seen = self.seen
        if len(messages) < len(seen):
            return False
        for i in range(len(seen) - 1, -1, -1):
            a, b = seen[i], messages[i]
            if a is not b and a != b:
                return False
        return True


class ContextTracker:
    """Managers that follow growing message lists, adding only what is new.

    A conversation is found by the ``key`` of its first message (default :func:`message_key`);
    if its list was rewritten (a removed, edited or replaced message) or the tool schemas
    changed, its manager is rebuilt (:attr:`rebuilds` counts it). ``pin_first`` pins the first
    message. A leading system message in the list is always pinned.
    """

    def __init__(
        self, *, pin_first: bool = False, key: Callable[[Any], Any] | None = None, **options: Any
    ) -> None:
        unknown = sorted(set(options) - _manager_options())
        if unknown:
            raise ConfigurationError(
                f"unknown option {', '.join(short_repr(name, 60) for name in unknown[:5])}; "
                f"the options are the manager's: {', '.join(sorted(_manager_options()))}"
            )
        if key is not None and not callable(key):
            raise ConfigurationError(f"key must be callable, got {short_repr(key, 60)}")
        self.pin_first = pin_first
        self.key = key or message_key
        self.options = options
        self.rebuilds = 0
        self._lock = threading.RLock()
        self._conversations: OrderedDict[Any, _Conversation] = OrderedDict()
        self._latest = self._new(None, 0)  # validates the options at once
        self._base_reserve = self._latest.manager.reserve_tokens

    @property
    def manager(self) -> MessageContextManager:
        """The manager of the conversation served last."""
        return self._latest.manager

    def _new(self, tools: tuple[Any, ...] | None, extra: int) -> _Conversation:
        options = dict(self.options)
        if tools:
            options["tools"] = [*(options.get("tools") or ()), *tools]
        if extra:
            options.pop("reserve_ratio", None)
            options["reserve_tokens"] = self._base_reserve + extra
        return _Conversation(MessageContextManager(**options), tools, extra)

    def context(
        self,
        messages: Sequence[Any],
        *,
        system: Any = None,
        extra_system: Sequence[Any] = (),
        tools: Sequence[Any] | None = None,
    ) -> list[Any]:
        """The messages to send for this list (the caller's objects, trimmed).

        ``system``: a system message (or text) the framework sends before ``messages``;
        ``extra_system``: more such messages after it (counted, kept out of the trimming);
        ``tools``: the tool definitions sent with the request (OpenAI or Anthropic dicts).
        None of them is returned.
        """
        check_messages(messages)
        defs = tuple(tools) if tools else None
        with self._lock:
            extra = sum(self._latest.manager.count_message(m) for m in extra_system)
            head = self.key(messages[0]) if messages else None
            conv = self._conversations.get(head)
            if (
                conv is None
                or conv.tools != defs
                or conv.extra != extra
                or (system is None and conv.system is not None)  # no longer sent: uncount it
            ):
                conv = self._new(defs, extra)
                if head in self._conversations:
                    self.rebuilds += 1
            self._conversations[head] = conv
            self._conversations.move_to_end(head)
            while len(self._conversations) > MAX_CONVERSATIONS:
                self._conversations.popitem(last=False)
            self._latest = conv
            out = self._follow(conv, head, messages, system)
        return out

    def _follow(
        self, conv: _Conversation, head: Any, messages: Sequence[Any], system: Any
    ) -> list[Any]:
        if not conv.same_prefix(messages):
            conv = self._new(conv.tools, conv.extra)  # the list was rewritten
            self._conversations[head] = self._latest = conv
            self.rebuilds += 1
        seen, position, manager = conv.seen, conv.position, conv.manager
        with manager.locked():
            if system is not None and (conv.system is None or conv.system != system):
                manager.set_system_prompt(system)
                conv.system = system
            for i in range(len(seen), len(messages)):
                message = messages[i]
                pinned = i == 0 and (self.pin_first or _is_system(message))
                _add_mended(manager, message, pinned)
                position[id(message)] = i
                seen.append(message)
            manager.close_pending_tool_calls()  # the model is called now: no result will come
            out = manager.get_context()
        if conv.system is not None and out and out[0] is manager.system_message:
            del out[0]
        for k, sent in enumerate(out):  # this request's objects (equal to those first seen)
            at = position.get(id(sent))
            if at is not None and seen[at] is sent:
                out[k] = messages[at]
        return out


def _add_mended(manager: MessageContextManager, message: Any, pinned: bool) -> None:
    """Add ``message``; if it breaks the tool protocol (a refused add changes nothing), add it
    again through the manager's repairer, which mends the exchange instead of refusing it."""
    try:
        manager.add(message, pinned=pinned)
    except InvalidMessageError:
        if manager.repair:
            raise  # unreadable, not a protocol break: repair cannot help
        manager.repair = True
        try:
            manager.add(message, pinned=pinned)
        finally:
            manager.repair = False


def _is_system(message: Any) -> bool:
    return normalize(message).role in ("system", "developer")
