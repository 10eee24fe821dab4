"""The fast lane: the common chat dicts' record and count, with no cache lookup.

A one-shot ``trim()`` of a history where everything fits reads every message, so the cost per
message is the cost of the call. The three common OpenAI chat dicts are read by
:mod:`context_manager.messages.chat_dicts` (the first step of ``normalize``, so every reader of
them agrees); with the plain chars estimator their count is cheaper to redo than to look up in a
caller's content cache, so :func:`lane_for` pairs that reader with the estimator's
``count_message`` (the one implementation of what a message costs; nothing here repeats its
arithmetic). Anything else returns None: the caller takes the general path, so the lane can only
be faster, never different.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..messages import Message
from ..messages.chat_dicts import read_common
from .base import TokenCounter
from .estimate import CharEstimator

Lane = Callable[[Any], "tuple[Message, int] | None"]


def lane_for(counter: TokenCounter) -> Lane | None:
    """``message -> (record, tokens)`` for the fast shapes with ``counter``, or None.

    Only for the chars estimator (exact class), whose count is cheaper to redo than to look up
    in a content cache: the manager takes it on add, and ``trim()`` skips a caller's cache for
    these shapes with it. The tokens are ``counter.count_message(record)``, the estimator's one
    implementation of a message's cost. Other counters (a real tokenizer) return None: they use
    :func:`~context_manager.messages.chat_dicts.read_common` and a cache when the caller gives one.
    """
    if type(counter) is not CharEstimator:
        return None
    count = counter.count_message

    def lane(message: Any) -> tuple[Message, int] | None:
        rec = read_common(message)
        return None if rec is None else (rec, count(rec))

    return lane
