"""Runners for the fixtures of our own TypeScript reference (``compat_fixtures/reference/trim.ts``).

The reference states the trimming rules in TypeScript so a TS front end can depend on the same
semantics. Each fixture case holds the caller's messages and the reference's camelCase options;
``context_manager.trim()`` must keep exactly the same messages (compared by index, found by
identity) or fail with the same :class:`ContextOverflowError`, which is translated to the
reference's ``{"error": "overflow", "required", "budget"}``. Where the reference throws (a broken
tool-call protocol, a malformed message, a bad option) the fixture holds
``{"error": "invalid_message", "index"}`` or ``{"error": "configuration"}``, and so do we.
Cases of ``reference.trim.providers`` carry ``options.provider``, passed through as ``provider=``;
for Bedrock a joined turn (``providers.fuse_turns``) is the list of the indices it joins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ..counting import CharEstimator
from ..errors import ConfigurationError, ContextOverflowError, InvalidMessageError
from ..messages.shapes import turn_blocks
from ..oneshot import trim
from ..providers import get_provider

__all__ = ["FIXTURE_SUITES", "budget_from_options", "estimator_from_options", "run_trim_case"]

#: The reference's own package name and version, as written in its fixture files.
REFERENCE_PACKAGE = "context-manager-reference@0.1.0"

_ESTIMATOR_DEFAULTS = {
    "charsPerToken": 4,
    "messageOverhead": 3,
    "promptOverhead": 3,
    "imageTokens": 85,
}


def estimator_from_options(options: Mapping[str, Any] | None) -> CharEstimator:
    """The :class:`CharEstimator` the reference's ``estimator`` options describe."""
    values = {**_ESTIMATOR_DEFAULTS, **(options or {})}
    return CharEstimator(
        values["charsPerToken"],
        message_overhead=values["messageOverhead"],
        prompt_overhead=values["promptOverhead"],
        image_tokens=values["imageTokens"],
    )


def run_trim_case(case: Mapping[str, Any]) -> list[int | list[int]] | dict[str, Any]:
    """Kept indices (system prompt first, original order; a joined turn as the list of the
    indices it joins), or the reference's overflow object."""
    messages = case.get("messages")
    options = case.get("options")
    if not isinstance(messages, list) or not isinstance(options, Mapping):
        raise ConfigurationError(
            "a reference case needs 'messages' (a list) and 'options' (an object)",
        )

    def run(provider: Any) -> list[Any]:
        return trim(
            messages,
            budget_from_options(options),
            strategy=options.get("strategy") or "sliding_window",
            max_messages=options.get("maxMessages"),
            priorities=options.get("priorities"),
            pinned=options.get("pinned") or (),
            counter=estimator_from_options(options.get("estimator")),
            provider=provider,
            truncate_newest=False,  # the TS reference predates the cut-to-fit rule
            validate="all",  # the reference rejects a broken message anywhere, even if dropped
        )

    try:
        kept = run(options.get("provider"))
        rules = get_provider(options.get("provider"))
    except ContextOverflowError as exc:
        return {"error": "overflow", "required": exc.required, "budget": exc.budget}
    except InvalidMessageError as exc:
        return {"error": "invalid_message", "index": exc.index}
    except ConfigurationError:
        return {"error": "configuration"}
    if rules is None or not rules.strict:
        return list(_positions(kept, messages))
    plain = run(replace(rules, strict=False))  # the same selection, turns not joined
    return _joined_positions(kept, plain, _positions(plain, messages))


def _positions(kept: list[Any], messages: list[Any]) -> list[int]:
    """Index of each kept message, matched by identity in order (kept is a subsequence)."""
    out: list[int] = []
    j = 0
    for message in kept:
        while messages[j] is not message:
            j += 1
        out.append(j)
        j += 1
    return out


def _joined_positions(sent: list[Any], plain: list[Any], at: list[int]) -> list[int | list[int]]:
    """``sent`` (a strict provider's output) read against ``plain`` (the same trim without the
    joining, at positions ``at``): a new turn in ``sent`` is a run of ``plain`` messages, as many
    as its blocks take, plus the empty turns of its role that follow (they join the run before
    them). A joined turn that is not its parts' blocks in order reads as ``-1``."""
    out: list[int | list[int]] = []
    p = 0
    for message in sent:
        if p < len(plain) and message is plain[p]:
            out.append(at[p])
            p += 1
            continue
        role, blocks = message.get("role"), message.get("content")
        parts: list[int] = []
        taken: list[Any] = []
        while p < len(plain):
            own = _blocks_of(plain[p], role)
            if own is None or (len(taken) >= len(blocks) and own):
                break
            parts.append(at[p])
            taken += own
            p += 1
        out.append(parts if taken == blocks and len(parts) > 1 else -1)
    return out


def _blocks_of(message: Any, role: Any) -> list[Any] | None:
    """A plain turn's content as blocks (as ``fuse_turns`` reads it), None for other turns."""
    if not isinstance(message, dict) or message.get("role") != role:
        return None
    return turn_blocks(message)


FIXTURE_SUITES: dict[str, Callable[[Any], Any]] = {
    "reference.trim.sliding_window": run_trim_case,
    "reference.trim.priority": run_trim_case,
    "reference.trim.invalid": run_trim_case,
    "reference.trim.providers": run_trim_case,
}


def budget_from_options(options: Mapping[str, Any]) -> Any:
    """The reference's input budget, ``trim()``'s ``budget_tokens``: its ``maxTokens`` window less
    its ``reserveTokens`` (bad values go through as they are, for ``trim()`` to refuse)."""
    window, reserve = options.get("maxTokens"), options.get("reserveTokens") or 0
    if type(window) is not int or type(reserve) is not int:
        return window
    if not 0 <= reserve < window:
        raise ConfigurationError(f"reserveTokens must be in [0, maxTokens), got {reserve!r}")
    return window - reserve
