"""The one interface every token counter implements.

A counter answers three questions: how many tokens a text is, how many a message costs in a chat
prompt (its text plus per-message framing), and how many a whole prompt costs (messages plus reply
priming, plus tool definitions). The manager asks the second question once per message, on add.

A counter defined outside the package is user code, and its answers go straight into budget
arithmetic: a negative count, a NaN or a string would make ``trim()`` keep everything and
``used_tokens`` meaningless, with no error. So its answers are checked where they enter the
library, once, here: :meth:`TokenCounter.__init_subclass__` wraps the counting methods such a
class defines with :func:`checked_count` (and checks its ``prompt_overhead`` when set). The
package's own counters return ints by construction and are not wrapped, so the hot path of the
estimators stays a direct call.
"""

from __future__ import annotations

import functools
import hashlib
import operator
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import FunctionType
from typing import Any

from .._config import SAFE_INT
from ..errors import ConfigurationError, InvalidMessageError
from ..messages import Message
from ..messages.nesting import short_repr

#: Methods whose answer is one count (each is wrapped on a counter defined elsewhere).
_SCALAR_METHODS = ("count_text", "count_message", "count_tools", "count_prompt")


def _builtin(cls: type) -> bool:
    """A counter class of this package (its answers are ints by construction)."""
    return cls.__module__.startswith("context_manager.")


def checked_count(counter: object, what: str, value: object) -> int:
    """``value`` as an int if it is a token count (an int from 0 to 2**53, bool refused),
    else a :class:`ConfigurationError` naming the counter and the method that answered.

    An object with ``__index__`` (a NumPy integer) is taken as its int; a float is refused
    (2.5 tokens is a counter bug, and NaN would poison every sum it enters).
    """
    if type(value) is int and 0 <= value <= SAFE_INT:
        return value
    number: int | None = None
    if not isinstance(value, bool):
        try:
            number = operator.index(value)  # type: ignore[arg-type]
        except Exception:  # any __index__ of user code; the error below says what came back
            number = None
    if number is not None and 0 <= number <= SAFE_INT:
        return number
    raise ConfigurationError(
        f"{_label(counter, what)} returned {short_repr(value, 60)}; a token count must be an "
        "int from 0 to 2**53"
    )


def _label(counter: object, what: str) -> str:
    """``counter 'name' (Class.method)``: which counter answered, for an error message."""
    name = getattr(counter, "name", None)
    shown = short_repr(name, 60) if isinstance(name, str) else "<unnamed>"
    kind = counter if isinstance(counter, type) else type(counter)
    return f"counter {shown} ({kind.__name__}.{what})"


def _check_scalar(method: Callable[..., Any], what: str) -> Callable[..., int]:
    @functools.wraps(method)
    def checked(self: TokenCounter, *args: Any, **kwargs: Any) -> int:
        return checked_count(self, what, method(self, *args, **kwargs))

    return checked


def _check_costs(method: Callable[..., Any]) -> Callable[..., list[int]]:
    @functools.wraps(method)
    def checked(self: TokenCounter, messages: Sequence[Message]) -> list[int]:
        costs = method(self, messages)
        if isinstance(costs, str | bytes | Mapping) or not isinstance(costs, Iterable):
            checked_count(self, "message_costs", costs)  # raises: not a list of counts
        out = [checked_count(self, "message_costs", c) for c in costs]
        if len(out) != len(messages):
            raise ConfigurationError(
                f"{_label(self, 'message_costs')} returned {len(out)} counts for "
                f"{len(messages)} messages"
            )
        return out

    return checked


def _check_bound(method: Callable[..., Any]) -> Callable[..., Callable[[Message], int] | None]:
    @functools.wraps(method)
    def checked(self: TokenCounter) -> Callable[[Message], int] | None:
        bound = method(self)
        if bound is None:
            return None
        if not callable(bound):
            raise ConfigurationError(
                f"{_label(self, 'message_bound')} must return a callable or None, got "
                f"{short_repr(bound, 60)}"
            )
        return lambda message: checked_count(self, "message_bound", bound(message))

    return checked


class _CheckedOverhead:
    """``prompt_overhead`` of a counter defined elsewhere: checked when the class or an
    instance sets it (the manager adds it to every prompt's size)."""

    def __init__(self, default: int) -> None:
        self.default = default

    def __get__(self, obj: object, owner: type | None = None) -> int:
        if obj is None:
            return self.default
        value: int = obj.__dict__.get("prompt_overhead", self.default)
        return value

    def __set__(self, obj: object, value: object) -> None:
        obj.__dict__["prompt_overhead"] = checked_count(obj, "prompt_overhead", value)


class TokenCounter(ABC):
    """Base class for counters; subclasses override ``count_text`` and ``count_message``."""

    #: Short identifier shown in stats and the CLI (e.g. ``"chars/4"``, ``"tiktoken:o200k_base"``).
    name: str = "counter"
    #: Tokens added once per prompt (the reply priming of OpenAI chat models).
    prompt_overhead: int = 0
    #: True for a real tokenizer; the manager calibrates only estimates on usage by default.
    exact: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Route the answers of a counter defined outside the package through
        :func:`checked_count` (see the module docs); the package's own are left as written."""
        super().__init_subclass__(**kwargs)
        if _builtin(cls):
            return
        own = cls.__dict__
        for what in _SCALAR_METHODS:
            if isinstance(own.get(what), FunctionType):
                setattr(cls, what, _check_scalar(own[what], what))
        if isinstance(own.get("message_costs"), FunctionType):
            cls.message_costs = _check_costs(own["message_costs"])  # type: ignore[method-assign]
        if isinstance(own.get("message_bound"), FunctionType):
            cls.message_bound = _check_bound(own["message_bound"])  # type: ignore[method-assign]
        raw = next(
            k.__dict__["prompt_overhead"] for k in cls.__mro__ if "prompt_overhead" in k.__dict__
        )
        if isinstance(raw, _CheckedOverhead):
            return  # a checked parent's: inherited
        if not hasattr(type(raw), "__get__"):  # a plain class value (not a property of theirs)
            checked = _CheckedOverhead(checked_count(cls, "prompt_overhead", raw))
            cls.prompt_overhead = checked  # type: ignore[assignment]

    @abstractmethod
    def count_text(self, text: str) -> int:
        """Tokens of a bare text, without any chat framing."""

    @abstractmethod
    def count_message(self, message: Message) -> int:
        """Tokens one message costs inside a chat prompt, framing included."""

    def message_bound(self) -> Callable[[Message], int] | None:
        """A cheap function never below ``count_message``, or None when the counter has none.

        ``trim()`` reads a history under it first: when the bounds of everything it keeps fit the
        budget, the exact counts cannot cut anything either, so nothing is tokenized (the common
        case of a conversation well inside the window). Only a bound that is cheaper than the
        count by far is worth offering.
        """
        return None

    def fingerprint(self) -> str | None:
        """What a message's count depends on, as 12 hex digits: a store keeps each message's
        count with it, and a restore under an equal fingerprint takes the count instead of
        counting again (None: counts are never reused).

        Only the package's own counters have one (their class, the package version and the
        settings :meth:`_count_settings` names); a subclass defined elsewhere may count
        differently from its base, so its counts are always recounted.
        """
        settings = self._count_settings()
        cls = type(self)
        if settings is None or not cls.__module__.startswith("context_manager."):
            return None
        memo = self.__dict__.get("_fingerprint")  # a store asks on every write
        if memo is not None and memo[0] == settings:
            return str(memo[1])
        from .. import __version__

        key = repr((cls.__module__, cls.__qualname__, __version__, settings))
        digest = hashlib.blake2b(key.encode(), digest_size=6).hexdigest()
        self.__dict__["_fingerprint"] = (settings, digest)
        return digest

    def _count_settings(self) -> tuple[object, ...] | None:
        """Every setting ``count_message`` reads, each with a stable ``repr`` (None: none
        given, so :meth:`fingerprint` is None)."""
        return None

    def count_tools(self, tools: Sequence[Any]) -> int:
        """Tokens of tool/function definitions sent with the prompt (0 when none)."""
        if not tools:
            return 0
        from ..messages import to_json_text

        return self.count_text(to_json_text(list(tools)))

    def message_costs(self, messages: Sequence[Message]) -> list[int]:
        """Per-message costs in context; with ``prompt_overhead`` they sum to ``count_prompt``.

        Counters whose framing depends on neighbouring messages (chat templates) override this.
        """
        return [self.count_message(m) for m in messages]

    def count_prompt(self, messages: Iterable[Message], tools: Sequence[Any] | None = None) -> int:
        """Tokens of a whole request: every message, reply priming and tool definitions."""
        if tools is not None and (
            isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence)
        ):
            raise InvalidMessageError(
                f"tools must be a list of tool definitions, got {type(tools).__name__}"
            )
        total = sum(self.count_message(m) for m in messages)
        return total + self.prompt_overhead + (self.count_tools(tools) if tools else 0)
