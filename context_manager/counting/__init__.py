"""Token counters behind one interface (see ``base.TokenCounter``).

Loading a tokenizer, looking one up by name and counting are kept apart, as tiktoken does:
``get_counter`` only resolves a spec to an instance; counters never load anything on the hot path.
"""

from __future__ import annotations

from .base import TokenCounter
from .estimate import CharEstimator, message_chars, utf16_len

__all__ = ["CharEstimator", "TokenCounter", "get_counter", "message_chars", "utf16_len"]

_ESTIMATOR_NAMES = frozenset({"chars", "estimate", "approximate", "chars/4"})


def get_counter(spec: str | TokenCounter | None = "chars", *, model: str | None = None) -> TokenCounter:
    """Resolve ``"chars"`` (default) or a ready :class:`TokenCounter` instance."""
    from ..errors import ConfigurationError

    if isinstance(spec, TokenCounter):
        return spec
    if spec is None or spec in _ESTIMATOR_NAMES:
        return CharEstimator()
    raise ConfigurationError(
        f"unknown counter {spec!r}: pass 'chars' or a TokenCounter instance"
    )
