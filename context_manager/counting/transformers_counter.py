"""Count with a ``transformers`` tokenizer and, when it has one, its chat template.

With a chat template the whole prompt is exact by construction: ``count_prompt`` returns
``len(apply_chat_template(messages, tokenize=True, add_generation_prompt=True))``.
Per-message costs come from prefixes of the same rendering (``message_costs``): message *k*
costs ``L(k) - L(k-1)`` where ``L(k)`` is the token length of the first *k* messages rendered
without the generation prompt and ``L(0)`` is the template's preamble (BOS and the like), and
``prompt_overhead_for`` is the rest (preamble + generation prompt), so costs plus overhead always
sum to the template's total.

``prompt_overhead`` (the constant the manager adds once) is measured on a one-message probe as
preamble + generation prompt, so for templates with position-independent framing the manager's
running sum of ``count_message`` plus ``prompt_overhead`` equals the template total too.

``count_message`` must be fast and context-free (the manager calls it once per added message), so
it charges the template's framing for the message's role, measured once per role by rendering a
probe conversation, plus the tokens of the message's texts. That equals the incremental cost for
templates whose framing does not depend on neighbours (ChatML, Llama 3, DeepSeek); templates that
inject text depending on position (a default system prompt when none is given) make it an
estimate, and ``count_prompt`` stays exact.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..errors import InvalidMessageError, TokenizerUnavailableError
from ..messages import Message
from .framed import DEFAULT_CACHE_SIZE, FramedCounter

_INSTALL_HINT = "pip install 'context-manager[transformers]'"
_OFFLINE_VALUES = frozenset({"1", "true", "yes", "on"})
_PROBE = "probe"
#: A small conversation rendered before the measured message so role order stays valid.
_PROBE_PREFIXES: dict[str, tuple[tuple[dict[str, Any], ...], ...]] = {
    "system": ((),),
    "developer": ((),),
    "user": (
        ({"role": "user", "content": _PROBE}, {"role": "assistant", "content": _PROBE}),
        (),
    ),
    "assistant": (({"role": "user", "content": _PROBE},),),
    "tool": (
        (
            {"role": "user", "content": _PROBE},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_probe",
                        "type": "function",
                        "function": {"name": _PROBE, "arguments": "{}"},
                    }
                ],
            },
        ),
        ({"role": "user", "content": _PROBE},),
    ),
}


def template_dicts(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Messages as chat templates expect them (Hugging Face's convention).

    An assistant turn that only calls tools has ``content: None`` in the OpenAI shape, which
    templates that test or concatenate the content (Qwen3's ``'</think>' in content``, Llama
    3.1's ``content | trim``) cannot render: it becomes ``""``, what such a turn shows the
    model. Tool-call arguments become the JSON object they encode (templates render them with
    ``tojson``); text that is not a JSON object stays a string.
    """
    out = []
    for message in messages:
        rendered = message.to_openai()
        if rendered.get("content") is None:
            rendered["content"] = ""
        for call in rendered.get("tool_calls", ()):
            function = call["function"]
            try:
                arguments = json.loads(function["arguments"])
            except ValueError:
                continue
            if isinstance(arguments, dict):
                function["arguments"] = arguments
        out.append(rendered)
    return out


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` asks Hugging Face libraries not to touch the network."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _OFFLINE_VALUES


def load_auto_tokenizer(path: str | os.PathLike[str], **options: Any) -> Any:
    """``AutoTokenizer.from_pretrained`` that never downloads when offline or given a folder."""
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:
        raise TokenizerUnavailableError(f"transformers is not installed: {_INSTALL_HINT}") from exc
    local = Path(path).is_dir()
    if not local and hub_offline():
        raise TokenizerUnavailableError(
            f"{path!s} is not a local folder and HF_HUB_OFFLINE is set: download the tokenizer "
            "first (huggingface-cli download ...) and pass its folder, or unset HF_HUB_OFFLINE"
        )
    options.setdefault("local_files_only", local or hub_offline())
    try:
        return AutoTokenizer.from_pretrained(str(path), **options)
    except Exception as exc:
        raise TokenizerUnavailableError(
            f"cannot load a tokenizer from {path!s}: {exc}. Pass a folder holding "
            "tokenizer.json / tokenizer_config.json"
        ) from exc


class TransformersCounter(FramedCounter):
    """Counts with a ``transformers`` tokenizer; exact prompts through its chat template."""

    def __init__(
        self,
        tokenizer: Any,
        *,
        chat_template: str | None = None,
        message_overhead: int = 3,
        prompt_overhead: int = 3,
        tool_call_overhead: int = 3,
        image_tokens: int = 765,
        cache_size: int = DEFAULT_CACHE_SIZE,
        name: str | None = None,
    ) -> None:
        label = name or "transformers"
        if isinstance(tokenizer, str | os.PathLike):
            label = name or f"transformers:{tokenizer}"
            tokenizer = load_auto_tokenizer(tokenizer)
        self.tokenizer = tokenizer
        self.name = label
        #: A template given here wins over the tokenizer's own (which is left untouched).
        self.chat_template = chat_template
        self.has_template = bool(chat_template or getattr(tokenizer, "chat_template", None))
        super().__init__(
            message_overhead=message_overhead,
            prompt_overhead=prompt_overhead,
            tool_call_overhead=tool_call_overhead,
            image_tokens=image_tokens,
            cache_size=cache_size,
        )
        self._role_framing: dict[str, int] = {}
        #: Template tokens before the first message (BOS, a fixed preamble).
        self._preamble = 0
        if self.has_template:
            self._measure_constant_parts()

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str], **options: Any) -> TransformersCounter:
        """Load ``AutoTokenizer`` from a local folder (or the hub unless ``HF_HUB_OFFLINE``)."""
        options.setdefault("name", f"transformers:{path}")
        return cls(load_auto_tokenizer(path), **options)

    # -- tokenization ---------------------------------------------------------------------------

    def _encode_len(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def template_length(
        self,
        dicts: Sequence[dict[str, Any]],
        *,
        add_generation_prompt: bool,
        tools: Sequence[Any] | None = None,
    ) -> int:
        """Token length of ``dicts`` rendered by the chat template."""
        extra: dict[str, Any] = {}
        if tools:
            extra["tools"] = list(tools)
        if self.chat_template:
            extra["chat_template"] = self.chat_template
        try:
            ids = self.tokenizer.apply_chat_template(
                list(dicts),
                tokenize=True,
                add_generation_prompt=add_generation_prompt,
                return_dict=False,
                **extra,
            )
        except Exception as exc:
            raise InvalidMessageError(
                f"the chat template of {self.name} cannot render these messages: {exc}",
                hint="check the role order the template expects",
            ) from exc
        return len(ids)

    def _measure_constant_parts(self) -> None:
        """Split a one-message rendering into preamble + message + generation prompt."""
        probe = [{"role": "user", "content": _PROBE}]
        try:
            with_prompt = self.template_length(probe, add_generation_prompt=True)
            without = self.template_length(probe, add_generation_prompt=False)
        except InvalidMessageError:
            return
        message = self._framing("user") + self._encode_len(_PROBE)
        self._preamble = without - message
        self.prompt_overhead = with_prompt - message

    def _framing(self, role: str) -> int:
        """Template tokens around a message of ``role`` (measured once, then cached).

        Measured as the growth of the rendering when a probe message is appended to a short
        conversation that keeps the template's role order valid; when the message must come
        first, the preamble is subtracted instead.
        """
        cached = self._role_framing.get(role)
        if cached is not None:
            return cached
        framing = self.message_overhead
        sample: dict[str, Any] = {"role": role, "content": _PROBE}
        if role == "tool":
            sample["tool_call_id"] = "call_probe"
        for prefix in _PROBE_PREFIXES.get(role, ((),)):
            try:
                before = (
                    self.template_length(prefix, add_generation_prompt=False)
                    if prefix
                    else self._preamble
                )
                after = self.template_length([*prefix, sample], add_generation_prompt=False)
            except InvalidMessageError:
                continue
            framing = max(0, after - before - self._encode_len(_PROBE))
            break
        self._role_framing[role] = framing
        return framing

    # -- the TokenCounter interface ---------------------------------------------------------------

    def count_message(self, message: Message) -> int:
        tokens = super().count_message(message)
        if not self.has_template:
            return tokens
        return tokens - self.message_overhead + self._framing(message.role)

    def message_costs(self, messages: Sequence[Message]) -> list[int]:
        """Exact per-message costs from prefix renderings (sum + overhead = template total)."""
        if not self.has_template:
            return [self.count_message(m) for m in messages]
        dicts = template_dicts(messages)
        costs: list[int] = []
        previous = self._preamble
        for k in range(1, len(dicts) + 1):
            length = self.template_length(dicts[:k], add_generation_prompt=False)
            costs.append(length - previous)
            previous = length
        return costs

    def prompt_overhead_for(self, messages: Sequence[Message]) -> int:
        """What ``messages`` cost beyond their ``message_costs`` (preamble + generation prompt)."""
        if not self.has_template or not messages:
            return self.prompt_overhead
        return self.count_prompt(messages) - sum(self.message_costs(messages))

    def count_prompt(self, messages: Iterable[Message], tools: Sequence[Any] | None = None) -> int:
        """Exactly ``len(apply_chat_template(messages, tools, add_generation_prompt=True))``."""
        items = list(messages)
        if not self.has_template:
            return super().count_prompt(items, tools)
        if not items:
            return self.prompt_overhead + (self.count_tools(tools) if tools else 0)
        dicts = template_dicts(items)
        return self.template_length(dicts, add_generation_prompt=True, tools=tools)

    def count_tools(self, tools: Sequence[Any]) -> int:
        """Tokens the template spends rendering ``tools`` (after a one-message probe)."""
        if not tools:
            return 0
        if not self.has_template:
            return super().count_tools(tools)
        probe = [{"role": "user", "content": _PROBE}]
        return self.template_length(
            probe, add_generation_prompt=False, tools=tools
        ) - self.template_length(probe, add_generation_prompt=False)
