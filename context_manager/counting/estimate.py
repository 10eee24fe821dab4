"""The default counter: ``ceil(chars / chars_per_token)`` with chars measured as JS does.

JavaScript's ``.length`` counts UTF-16 code units (an emoji is 2), and the TypeScript code we must
match (Pi's ``estimateTokens``) divides that by 4. Measuring the same way keeps Python and TS
budgets equal to the token. It needs no tokenizer and costs about a microsecond per message.
"""

from __future__ import annotations

from .._js import utf16_len
from ..messages import Message
from .base import TokenCounter


def message_chars(message: Message) -> int:
    """Characters the estimator charges for: text, thinking, name, tool calls and results."""
    chars = utf16_len(message.text)
    if message.thinking:
        chars += utf16_len(message.thinking)
    if message.name:
        chars += utf16_len(message.name)
    for call in message.tool_calls:
        chars += utf16_len(call.name) + utf16_len(call.arguments)
    for result in message.tool_results:
        chars += utf16_len(result.text)
    if message.other:
        chars += utf16_len(message.other)
    for item in message.media:  # what the part's JSON added to ``other`` (the TS reference rule)
        chars += item.chars
    return chars


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
        if chars_per_token <= 0:
            from ..errors import ConfigurationError

            raise ConfigurationError(f"chars_per_token must be > 0, got {chars_per_token}")
        self.chars_per_token = chars_per_token
        self.message_overhead = message_overhead
        self.prompt_overhead = prompt_overhead
        self.image_tokens = image_tokens
        self.name = f"chars/{chars_per_token:g}"

    def _tokens(self, chars: int) -> int:
        # Integer ceil division when the ratio is whole avoids float rounding at the boundary.
        cpt = self.chars_per_token
        if cpt == int(cpt):
            return -(-chars // int(cpt))
        import math

        return math.ceil(chars / cpt)

    def count_text(self, text: str) -> int:
        return self._tokens(utf16_len(text))

    def count_message(self, message: Message) -> int:
        tokens = self._tokens(message_chars(message)) + self.message_overhead
        if message.images:
            tokens += self.image_tokens * len(message.images)
        if message.media:  # Gemini blobs have no JSON form: charged like an image, as before
            tokens += self.image_tokens * sum(1 for item in message.media if not item.chars)
        return tokens
