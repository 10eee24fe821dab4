"""Neighbouring turns a provider wants as one, joined: each rule once, each turn read once.

- Bedrock's strict alternation (what Anthropic joins server-side): plain same-role turns (dicts
  of ``role`` and ``content``) become one turn of their blocks, unless the joined turn would
  break another rule (results after text, a call not ending its turn, thinking not first).
- Gemini: user contents answering one call turn become one content (:func:`joined_responses`);
  pydantic-ai requests answering one call turn become one request.

A run of such turns is read once per turn and built once (:class:`PlainRun`, :class:`AnswerRun`,
:class:`RequestRun`): joined pairwise, each join read and copied the growing turn again, so a
run of 4,000 same-role turns took 9 s. :func:`joined_responses` (a closure joined to the
responses given) is a run of two.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .sdk import answers_a_call, family, field, is_pydantic_ai_dict
from .shapes import PYDANTIC_AI, THINKING_KINDS, data_of, part_kinds, shape_of, turn_blocks

__all__ = ["AnswerRun", "PlainRun", "RequestRun", "fused", "joined_responses"]

_PLAIN_KEYS = frozenset(("role", "content"))
_RESPONSE_KEYS = frozenset(("function_response", "functionResponse"))
_THINKING = frozenset(THINKING_KINDS)


class PlainRun:
    """Plain same-role turns joined into one: their blocks in order, and the kinds read so far
    (the rule reads the joined turn's kinds, so they are kept, not read again)."""

    __slots__ = ("blocks", "first", "joined", "kinds", "role")

    def __init__(self, first: Any, role: str, blocks: list[Any], kinds: set[str]) -> None:
        self.first, self.role, self.blocks, self.kinds = first, role, blocks, kinds
        self.joined = False

    @staticmethod
    def read(message: Any) -> tuple[str, list[Any], set[str]] | None:
        """A plain turn's role, blocks and block kinds (None: no plain user / assistant turn)."""
        if not isinstance(message, dict):
            return None
        role = message.get("role")
        if role not in ("user", "assistant") or not message.keys() <= _PLAIN_KEYS:
            return None
        blocks = turn_blocks(message)
        if blocks is None:
            return None
        # one reading of block kinds (Anthropic ``type``, a Converse block's key) for both shapes
        return str(role), blocks, set(part_kinds({"role": role, "content": blocks}))

    @classmethod
    def start(cls, message: Any) -> PlainRun | None:
        read = cls.read(message)
        return None if read is None else cls(message, *read)

    def take(self, message: Any) -> bool:
        """Join ``message`` when it is a plain turn of the same role the joined turn allows."""
        read = self.read(message)
        if read is None or read[0] != self.role:
            return False
        _, blocks, kinds = read
        if self.role == "user" and "tool_result" in kinds and self.kinds - {"tool_result"}:
            return False  # results would come after text
        if self.role == "assistant" and ("tool_use" in self.kinds or kinds & _THINKING):
            return False  # a call must end its turn; thinking must open it
        if not self.joined:
            self.blocks, self.joined = list(self.blocks), True
        self.blocks.extend(blocks)
        self.kinds |= kinds
        return True

    def result(self) -> Any:
        """The joined turn (a new dict holding the same blocks), or the first turn itself."""
        return {"role": self.role, "content": self.blocks} if self.joined else self.first


class _Answers:
    """Turns answering one call turn: every answer in the order given, then what the one that
    says more says (at most one may: the person's text after the answers)."""

    __slots__ = ("answers", "first", "joined", "rest")

    def __init__(self, first: Any, split: tuple[list[Any], list[Any]]) -> None:
        self.first, (self.answers, self.rest) = first, split
        self.joined = False

    def _join(self, split: tuple[list[Any], list[Any]] | None) -> bool:
        if split is None or (self.rest and split[1]):
            return False
        if not self.joined:
            self.answers, self.rest, self.joined = list(self.answers), list(self.rest), True
        self.answers.extend(split[0])
        self.rest.extend(split[1])
        return True


class AnswerRun(_Answers):
    """Gemini user contents answering one call turn, as one content in the first one's form.

    Gemini wants the content after a function-call turn to hold a response for each of its
    calls, and the responses to one turn can arrive apart (a parallel call answered, the rest
    closed by the library when the person interrupted), in either form the SDK accepts (the
    call turn a ``Content`` as the SDK returned it, the responses the caller's dicts). One of
    the two may carry more after its responses (the person's text, in the turn that answered
    some calls and interrupted the rest, which the closure follows: :func:`~.groups.
    closes_after`): the joined content holds every response in the order given, then that
    text. The parts are the caller's own objects, so a response's place (how an id-less one
    pairs) is as Gemini reads it; only a part joining the other form is rewritten in that form
    (a dict part read into a ``types.Part``, a ``Part`` dumped to its dict, bytes kept).
    pydantic-ai requests (provider-neutral: the closure is stored before the person's turn, as
    Anthropic wants) are joined as one request when sent to Gemini
    (:class:`RequestRun`), which its ``GoogleModel`` sends as one content of responses."""

    __slots__ = ()

    @classmethod
    def start(cls, message: Any) -> AnswerRun | None:
        split = _responses_then_rest(message)
        return None if split is None else cls(message, split)

    def take(self, message: Any) -> bool:
        return self._join(_responses_then_rest(message))

    def result(self) -> Any:
        if not self.joined:
            return self.first
        parts = [*self.answers, *self.rest]
        if isinstance(self.first, Mapping):
            dumped = [
                p if isinstance(p, Mapping) else p.model_dump(exclude_none=True) for p in parts
            ]
            return {"role": "user", "parts": dumped}
        from google.genai import types

        try:
            return types.Content(
                role="user",
                parts=[
                    types.Part.model_validate(p) if isinstance(p, Mapping) else p for p in parts
                ],
            )
        except ValueError:  # a dict part the SDK's model refuses (pydantic's error is a ValueError)
            dumped = [
                p if isinstance(p, Mapping) else p.model_dump(exclude_none=True) for p in parts
            ]
            return {"role": "user", "parts": dumped}  # joined in the form that holds it as given


class RequestRun(_Answers):
    """pydantic-ai requests answering one call turn as one request (the form Gemini gets): the
    answers of all in order, then the other parts (a user prompt) of the one that has them. Its
    other fields (instructions, timestamp, ...) are that one's, else the first's; instructions
    left empty there are the first non-empty ones of the others. Requests in different forms (an
    object and its JSON) are not joined."""

    __slots__ = ("base", "members")

    def __init__(self, first: Any, split: tuple[list[Any], list[Any]]) -> None:
        super().__init__(first, split)
        self.members, self.base = [first], first if split[1] else None

    @classmethod
    def start(cls, message: Any) -> RequestRun | None:
        split = _requests_answers(message)
        return None if split is None else cls(message, split)

    def take(self, message: Any) -> bool:
        if isinstance(message, Mapping) != isinstance(self.first, Mapping):
            return False
        split = _requests_answers(message)
        if not self._join(split):
            return False
        self.members.append(message)
        if split is not None and split[1]:
            self.base = message
        return True

    def result(self) -> Any:
        if not self.joined:
            return self.first
        base = self.base if self.base is not None else self.first
        parts = [*self.answers, *self.rest]
        instructions = field(base, "instructions")
        for member in self.members:  # the first others say, when the base says none
            if member is not base:
                instructions = instructions or field(member, "instructions")
        if isinstance(base, Mapping):
            joined = {**base, "parts": parts}
            if instructions:
                joined["instructions"] = instructions
            return joined
        changes: dict[str, Any] = {"parts": parts}
        if instructions is not None:
            changes["instructions"] = instructions
        return dataclasses.replace(base, **changes)


def answer_run(message: Any) -> AnswerRun | RequestRun | None:
    """The run of answers ``message`` starts (pydantic-ai requests join as requests)."""
    if shape_of(message) == PYDANTIC_AI:
        return RequestRun.start(message)
    return AnswerRun.start(message)


def joined_responses(a: Any, b: Any) -> Any | None:
    """Two Gemini user contents (or pydantic-ai requests) answering one call turn as one, in
    ``a``'s form (:class:`AnswerRun`, :class:`RequestRun`); None for anything else."""
    run = answer_run(a)
    return run.result() if run is not None and run.take(b) else None


def fused(messages: list[Any], *, plain: bool, answers: bool) -> list[Any]:
    """``messages`` with each run of ``plain`` same-role turns and of ``answers`` to one call
    turn joined into one turn; ``messages`` itself when nothing is joined (every turn not
    joined is the caller's object)."""
    out: list[Any] = []
    run: PlainRun | AnswerRun | RequestRun | None = None
    changed = False
    for message in messages:
        if run is not None and run.take(message):
            changed = True
            continue
        if run is not None:
            out.append(run.result())
        run = PlainRun.start(message) if plain else None
        if run is None and answers:
            run = answer_run(message)
        if run is None:
            out.append(message)
    if run is not None:
        out.append(run.result())
    return out if changed else messages


def _responses_then_rest(message: Any) -> tuple[list[Any], list[Any]] | None:
    """A Gemini user content's function responses and the parts after them, or None when it is
    no such content (no response first, a response after other parts, another key)."""
    if isinstance(message, Mapping):
        if message.get("role") != "user" or not message.keys() <= {"role", "parts"}:
            return None
        parts = message.get("parts")
    elif family(message) == "gemini" and type(message).__name__ == "Content":
        if field(message, "role") != "user":
            return None
        parts = list(field(message, "parts") or ())
    else:
        return None
    if not isinstance(parts, list):
        return None

    def responds(part: Any) -> bool:
        data = data_of(part)
        return isinstance(data, Mapping) and bool(data) and data.keys() <= _RESPONSE_KEYS

    def names_one(part: Any) -> bool:  # a response key among others still moves a response
        data = data_of(part)
        return isinstance(data, Mapping) and not _RESPONSE_KEYS.isdisjoint(data)

    return _answers_then_rest(parts, responds, names_one)


def _requests_answers(message: Any) -> tuple[list[Any], list[Any]] | None:
    """A pydantic-ai request's call answers and the parts after them, or None when it is no
    request, does not start with an answer, or has an answer after another part."""
    if isinstance(message, Mapping):
        if not is_pydantic_ai_dict(message):
            return None
    elif family(message) != "pydantic_ai":
        return None
    parts = field(message, "parts")
    if field(message, "kind") != "request" or not isinstance(parts, list | tuple):
        return None

    def answers(part: Any) -> bool:
        return answers_a_call(part, field(part, "part_kind"))

    return _answers_then_rest(parts, answers, answers)


def _answers_then_rest(
    parts: Sequence[Any], answers: Callable[[Any], bool], names_one: Callable[[Any], bool]
) -> tuple[list[Any], list[Any]] | None:
    """The leading ``parts`` that ``answer`` a call and the parts after them; None when none
    leads, or when a later part ``names_one`` (joined, its place would move)."""
    lead = 0
    for part in parts:
        if not answers(part):
            break
        lead += 1
    rest = list(parts[lead:])
    if not lead or any(names_one(part) for part in rest):
        return None
    return list(parts[:lead]), rest
