"""The one place a pruned result's replacement is rendered: placeholder, trim or offload stub.

The engine sends a rewrite only if it costs fewer tokens than what it replaces, so it renders
the replacement itself rather than predicting its length: ``store=False`` renders an offload
stub with a sample handle (nothing stored) to size it before anything is stored, and the
planner's estimate of a trim comes from here too, never from a second copy of the formats.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING, Any

from ..._js import utf16_len
from ...messages.results import edit_results
from ...messages.truncate import clear_call_inputs, strip_thinking
from ...offload.stub import clear_rule, trim_rule

if TYPE_CHECKING:
    from ...budget._ledger import Ledger
    from .config import ToolResultPruning


def rewrite_message(
    cfg: ToolResultPruning,
    message: Any,
    cleared: frozenset[str],
    soft: frozenset[str],
    thinking: bool,
    inputs: frozenset[str],
    store: bool,
    lengths: dict[str, int] | None = None,
) -> Any:
    """``message`` with the results answering ``cleared`` cleared, those answering ``soft``
    trimmed, its reasoning stripped (``thinking``) and the inputs of the ``inputs`` calls
    cleared (``message`` itself: nothing changed or a shape we cannot rewrite).
    ``lengths``: filled with the chars each rewritten result is sent as."""

    def noted(call_id: str, text: str) -> str:
        if lengths is not None:
            lengths[call_id] = utf16_len(text)
        return text

    new: Any = message
    if thinking:
        new = strip_thinking(new) or new
    if inputs:
        new = clear_call_inputs(new, inputs) or new
    if cleared:  # with cfg.offload, the full text is stored and the stub names it
        clear = clear_rule(cfg.offload, cfg.placeholder, store=store)

        def clear_one(call_id: str, text: str, images: int) -> str | None:
            return noted(call_id, clear(text, images)) if call_id in cleared else None

        new = edit_results(new, clear_one, "clear") or new
    if soft:
        cut = trim_rule(cfg.offload, cfg.head_chars, cfg.tail_chars, cfg.marker, store=store)

        def trim(call_id: str, text: str, images: int) -> str | None:
            if call_id not in soft:
                return None
            if utf16_len(text) > (cfg.max_chars or 0):
                return noted(call_id, cut(text))
            return text if images and cfg.images == "clear" else None

        new = edit_results(new, trim, cfg.images) or new
    return new


def trimmed_chars(cfg: ToolResultPruning, ledger: Ledger, seq: int, call_id: str) -> int | None:
    """Chars the result answering ``call_id`` in message ``seq`` is sent as once trimmed (an
    offload stub sized with a sample handle, nothing stored); None when it is not held."""
    i = bisect_left(ledger.seq, seq)
    if i == len(ledger.seq) or ledger.seq[i] != seq:
        return None
    for result_id, text, _ in ledger.records[i].results:
        if result_id == call_id:
            chars = utf16_len(text)
            if cfg.max_chars is None or chars <= cfg.max_chars:
                return chars
            cut = trim_rule(cfg.offload, cfg.head_chars, cfg.tail_chars, cfg.marker, store=False)
            return utf16_len(cut(text))
    return None
