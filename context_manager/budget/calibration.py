"""Learning from billed usage how far our count is from the provider's, and acting on it.

An estimate (chars/4, the safe estimate, a custom counter) can be off by 2x on some content. The
provider reports what a request really cost; ``record_usage`` hands that figure here together
with our count of the same context, and the ratio (real tokens per counted token) becomes a
correction factor that the manager applies to every budget decision: what ``get_context`` sends
(the budget is divided by the factor, in counted tokens), ``can_add`` and the near-limit warning
(counted growth is multiplied by it). The figure shown is therefore also the figure acted on.

The factor rises at once to a higher ratio (undercounting is what overflows a window) and falls
slowly (an exponential moving average) so one cheap request does not open the budget wide.
Decisions add :data:`MARGIN` on top, since the next context's mix differs a little from the
last one's. Samples that cannot be trusted are ignored: a context under :data:`MIN_COUNTED`
tokens (framing and hidden system text dominate it) or a ratio under :data:`LOW` (a usage
record that belongs to another context, a cached prefix reported oddly: trusting it would open
the budget wide). A ratio above :data:`HIGH` counts as :data:`HIGH`: it may be an odd record
too, but it may also be real (chars/4 on Chinese text bills about 3.4x under o200k, rare
ideographs about 12x), and ignoring an undercount is what overflows a window.

The factor is rebuilt on reopen by replaying the usage records of the log, and forgotten on
``clear()``. A record keeps our count of the context it measured (``record_usage`` counts it once,
:meth:`Calibration.sent`), so replay folds in the ratio the live manager learned even where the
replayed state would send another context (a pruning view, other tools); a record without one,
or counted under another counter, is counted again from the replayed state.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..errors import ContextOverflowError

__all__ = ["HIGH", "LOW", "MARGIN", "MIN_COUNTED", "WEIGHT", "Calibration"]

#: Ratios (reported / counted) under LOW are ignored as outliers; above HIGH they count as HIGH.
LOW, HIGH = 0.5, 4.0
#: Contexts smaller than this (counted tokens) teach nothing reliable.
MIN_COUNTED = 500
#: Weight of a new sample in the moving average.
WEIGHT = 0.3
#: Headroom added to the factor in budget decisions once a factor is learned.
MARGIN = 0.01


class Calibration:
    """The correction factor of one manager (1.0 until a trusted sample arrives)."""

    __slots__ = ("anchor", "enabled", "factor", "samples")

    def __init__(self, enabled: bool) -> None:
        self.enabled = bool(enabled)
        self.factor = 1.0
        self.samples = 0
        #: ``(reported, at)`` of the last usage report (None: none since the start, a clear or a
        #: compaction); see :meth:`record` and :meth:`used`.
        self.anchor: tuple[int, int] | None = None

    @staticmethod
    def sent(context_tokens: Callable[[], int]) -> int | None:
        """Our count of the context that would be sent now (None: nothing fits, none is sent)."""
        try:
            return context_tokens()
        except ContextOverflowError:
            return None

    def observe(self, reported: int, ours: int) -> bool:
        """Fold in one request: ``reported`` prompt tokens for a context we counted at ``ours``.
        Returns whether the sample was used."""
        if not self.enabled:
            return False
        if ours < MIN_COUNTED or reported / ours < LOW:
            return False
        ratio = min(reported / ours, HIGH)
        if not self.samples or ratio > self.factor:  # rise at once: undercounting overflows
            self.factor = ratio
        else:  # fall slowly: one cheap request should not open the budget wide
            self.factor += WEIGHT * (ratio - self.factor)
        self.samples += 1
        return True

    def record(self, reported: int, sent: int | None, held: int, fixed: int) -> None:
        """Fold in a usage report of a context we counted at ``sent`` (:meth:`sent`) and anchor
        the count of the whole history on it.

        The provider measured the context it was sent, which a sliding window keeps smaller than
        the ``held`` history. The report is anchored at our count of that context (less the
        ``fixed`` part: tool definitions, reply priming), so the held messages the window left
        out stay counted on top of it and ``used_tokens`` (what compaction triggers and the
        near-limit warning read) means the same before and after a report. When nothing fitted
        (``sent`` is None), nothing of ours was sent: the report stands for everything
        (``held``), and teaches nothing.
        """
        if sent is None:
            self.anchor = (reported, held)
            return
        self.observe(reported, sent)
        self.anchor = (reported, max(0, min(held, sent - fixed)))

    def used(self, held: int, fixed: int) -> int:
        """What sending the whole history (``held`` counted tokens) costs now: the last report
        plus the counted growth since, scaled; ``held + fixed`` before any report."""
        if self.anchor is None:
            return held + fixed
        reported, at = self.anchor
        return reported + self.scale(held - at)

    def reset(self) -> None:
        self.factor = 1.0
        self.samples = 0
        self.anchor = None

    def budget(self, budget: int) -> int:
        """``budget`` real tokens expressed in counted tokens."""
        return budget if not self.samples else math.floor(budget / (self.factor * (1 + MARGIN)))

    def scale(self, counted: int) -> int:
        """``counted`` tokens expressed in real tokens (rounded up)."""
        return counted if not self.samples else math.ceil(counted * self.factor * (1 + MARGIN))
