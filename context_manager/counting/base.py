"""The one interface every token counter implements.

A counter answers three questions: how many tokens a text is, how many a message costs in a chat
prompt (its text plus per-message framing), and how many a whole prompt costs (messages plus reply
priming, plus tool definitions). The manager asks the second question once per message, on add.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..errors import InvalidMessageError
from ..messages import Message


class TokenCounter(ABC):
    """Base class for counters; subclasses override ``count_text`` and ``count_message``."""

    #: Short identifier shown in stats and the CLI (e.g. ``"chars/4"``, ``"tiktoken:o200k_base"``).
    name: str = "counter"
    #: Tokens added once per prompt (the reply priming of OpenAI chat models).
    prompt_overhead: int = 0
    #: True for a real tokenizer; the manager calibrates only estimates on usage by default.
    exact: bool = False

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
