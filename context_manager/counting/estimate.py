"""The default counter: ``ceil(chars / chars_per_token)`` with chars measured as JS does.

JavaScript's ``.length`` counts UTF-16 code units (an emoji is 2), and the TypeScript code we must
match (Pi's ``estimateTokens``) divides that by 4. Measuring the same way keeps Python and TS
budgets equal to the token. It needs no tokenizer and costs well under a microsecond a message.

``CharEstimator._costs`` is the only implementation of what a message costs under this counter:
``count_message`` asks it about one message and ``message_costs`` about a block; the manager,
``trim()`` and the fast lane (``counting.fastlane``) go through one of the two. It is written for
speed (a block of messages in one loop, :func:`_measure`; the ASCII text of a plain chat turn
measured without a call; the rarer fields looked at only when one is set), so that nothing
needs a copy of it for speed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .._config import SAFE_INT, check_int
from .._js import utf16_len
from ..messages import Message
from ..models import check_chars_per_token
from .base import TokenCounter


def message_chars(message: Message) -> int:
    """Characters the estimator charges for: text, thinking, name, tool calls and results."""
    return _measure((message,))[0][0]


def _measure(messages: Sequence[Message]) -> tuple[list[int], list[int]]:
    """:func:`message_chars` of each message (the rule, stated once), and the positions of
    those with images or media blobs, which are charged in tokens on top.

    One loop for a block of messages (``trim()`` reads them so), with no call for an ASCII text
    (most of them; ``isascii`` is O(1) in CPython) and the rarer fields looked at only when one
    is set.
    """
    out: list[int] = []
    odd: list[int] = []
    append, units = out.append, utf16_len
    for message in messages:
        text = message.text
        chars = len(text) if text.isascii() else units(text)
        calls = message.tool_calls
        if calls:
            for call in calls:
                name, args = call.name, call.arguments
                chars += len(name) if name.isascii() else units(name)
                chars += len(args) if args.isascii() else units(args)
        if (
            message.thinking
            or message.name
            or message.tool_results
            or message.other
            or message.media
            or message.images
        ):
            if message.thinking:
                chars += units(message.thinking)
            if message.name:
                chars += units(message.name)
            for result in message.tool_results:
                chars += units(result.text)
            if message.other:
                chars += units(message.other)
            for item in message.media:  # what the part's JSON added to ``other`` (TS reference)
                chars += item.chars
            if message.images or message.media:
                odd.append(len(out))
        append(chars)
    return out, odd


class CharEstimator(TokenCounter):
    """Approximate counter: ``ceil(chars / chars_per_token) + message_overhead`` per message.

    ``image_tokens`` is charged per image part (85 is OpenAI's low-detail cost). ``prompt_overhead``
    is added once per prompt, like OpenAI's reply priming. Set both overheads to 0 to get Pi's
    ``estimateTokens`` arithmetic for text messages.
    """

    def __init__(
        self,
        chars_per_token: float = 4.0,
        *,
        message_overhead: int = 3,
        prompt_overhead: int = 3,
        image_tokens: int = 85,
    ) -> None:
        for what, value in (
            ("message_overhead", message_overhead),
            ("prompt_overhead", prompt_overhead),
            ("image_tokens", image_tokens),
        ):
            if type(value) is not int or not 0 <= value <= SAFE_INT:  # get_counter makes one a call
                check_int(what, value, 0, SAFE_INT)
        self.chars_per_token = chars_per_token
        self.message_overhead = message_overhead
        self.prompt_overhead = prompt_overhead
        self.image_tokens = image_tokens
        self.name = f"chars/{chars_per_token:g}"

    @property
    def chars_per_token(self) -> float:
        return self._chars_per_token

    @chars_per_token.setter
    def chars_per_token(self, value: float) -> None:
        check_chars_per_token(value)
        self._chars_per_token = value
        # A whole ratio divides with integer ceil division (no float rounding at the boundary);
        # worked out here, once, rather than on every count.
        self._whole = int(value) if value == int(value) else 0

    def count_text(self, text: str) -> int:
        whole = self._whole
        chars = utf16_len(text)
        return -(-chars // whole) if whole else math.ceil(chars / self._chars_per_token)

    def count_message(self, message: Message) -> int:
        return self._costs((message,))[0]

    def message_costs(self, messages: Sequence[Message]) -> list[int]:
        """``count_message`` of each message, at once: ``trim()`` reads a block of messages at
        a time and asks about all of them (one loop, no call per message)."""
        if type(self).count_message is not CharEstimator.count_message:
            return [self.count_message(m) for m in messages]  # a subclass's own rule
        return self._costs(messages)

    def _count_settings(self) -> tuple[object, ...]:
        return (self._chars_per_token, self.message_overhead, self.image_tokens)

    def _costs(self, messages: Sequence[Message]) -> list[int]:
        """What each message costs: the one implementation (both methods above ask here)."""
        chars, odd = _measure(messages)
        whole, overhead = self._whole, self.message_overhead
        if whole:
            out = [-(-c // whole) + overhead for c in chars]
        else:
            cpt = self._chars_per_token
            out = [math.ceil(c / cpt) + overhead for c in chars]
        for k in odd:  # images, and Gemini blobs (no JSON form): charged like an image
            message = messages[k]
            blobs = sum(1 for item in message.media if not item.chars)
            out[k] += self.image_tokens * (len(message.images) + blobs)
        return out
