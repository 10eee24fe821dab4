"""``ToolResultPruning``: what to trim or clear in old tool results, and the two presets.

Facts behind the presets (checked against the sources, see ``docs/guide/pruning.md``):

- OpenClaw session pruning (``pruneExpiredCacheTtlToolResults``, openclaw 2026.9.6): protect
  everything from the 3rd-to-last assistant message on and everything before the first user
  message; below 30% of the window do nothing; soft-trim results over 4,000 chars to 1,500 head +
  1,500 tail; at >= 50% with >= 50,000 prunable chars, clear oldest-first to a placeholder until
  below 50%. Images count 8,000 chars and become a marker when a result is rewritten.
- Anthropic ``clear_tool_uses_20250919``: trigger 100,000 input tokens, keep the last 3 tool uses,
  ``clear_at_least`` off, ``clear_tool_inputs`` false, no soft trim; clears every older result.
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ..._config import check_int
from ...budget.sections import SectionCaps
from ...errors import ConfigurationError
from ...messages.truncate import DEFAULT_TRIM_MARKER
from ...prompt_cache.rules import CacheRules

if TYPE_CHECKING:
    from ...offload.area import OffloadArea
    from .engine import PruningEngine

OPENCLAW_PLACEHOLDER = "[Old tool result content cleared]"
ANTHROPIC_PLACEHOLDER = "[cleared to save context]"


def _compile(patterns: Sequence[str]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    parts = [fnmatch.translate(p.strip().lower()) for p in patterns if p.strip()]
    return re.compile("|".join(parts)) if parts else None


@dataclass(frozen=True)
class ToolResultPruning:
    """Trim or clear old tool results in the request only; history and log keep everything.

    A result's pruned form depends only on the result and on monotone positions (a result that
    became old stays old; a cleared one stays cleared), so the pruned prefix is byte-identical
    from one request to the next and provider prompt caches keep hitting.

    - Soft trim: results over ``max_chars`` (UTF-16 units) keep ``head_chars`` + ``tail_chars``
      and ``marker`` (fields ``head``, ``tail``, ``total``, ``cut``). ``None`` disables it.
    - Hard clear: results become ``placeholder`` oldest-first when usage of the window is at least
      ``hard_ratio`` and the old prunable results hold ``min_prunable_chars``, or when the input
      reaches ``trigger_tokens``. ``clear_until`` is ``"below_ratio"`` (stop under
      ``hard_ratio``) or ``"all"`` (every old result, Anthropic). ``clear_at_least`` skips a clear
      that would free fewer tokens (a clear breaks the prompt cache, so it must be worth it).
    - Nothing happens below ``soft_ratio`` of the window (``None``: no gate).
    - ``keep_last`` most recent tool uses (``keep_unit="tool_uses"``) or assistant messages
      (``"assistant_turns"``, OpenClaw) stay intact; ``protect_before_first_user`` too.
    - ``exclude_tools`` / ``only_tools``: names or globs, case-insensitive; exclusion wins.
    - ``clear_tool_inputs``: a cleared result's call arguments become ``{}`` as well.
    - ``clear_thinking_keep``: strip thinking from all but the last N assistant turns having it;
      never from the current turn or the last turn that calls tools (signed reasoning the
      provider checks), and only whole blocks.
    - ``images``: ``"clear"`` replaces images in a rewritten result with a marker (each counted
      as ``image_chars``); ``"keep"`` keeps them after the trimmed text.
    - ``cache``: a provider's :class:`~context_manager.prompt_cache.CacheRules` (prices, TTL)
      makes clearing cost-aware: a clear happens only when the tokens it removes from each
      request pay, within ``payback_requests`` later requests, for rewriting what lies behind
      its first changed position (``prompt_cache.economics``), and freely when the cache has
      expired (more than the TTL since the previous request, by ``clock``). Off (None) by
      default: it keeps more in the context than the plain rule.
    - ``caps``: :class:`~context_manager.budget.sections.SectionCaps`; ``tool_results_share``
      clears the oldest results while tool results exceed that share of the window;
      ``tool_schemas_tokens`` is checked against the manager's tool definitions.
    - ``offload``: an offload area; a trimmed result keeps head + tail and a marker naming its
      handle, a cleared one the placeholder and the handle (``docs/guide/offload.md``).
    """

    max_chars: int | None = 4000
    head_chars: int = 1500
    tail_chars: int = 1500
    marker: str = DEFAULT_TRIM_MARKER
    placeholder: str = OPENCLAW_PLACEHOLDER
    hard_clear: bool = True
    soft_ratio: float | None = 0.3
    hard_ratio: float | None = 0.5
    min_prunable_chars: int = 50_000
    trigger_tokens: int | None = None
    clear_until: Literal["below_ratio", "all"] = "below_ratio"
    clear_at_least: int = 0
    keep_last: int = 3
    keep_unit: Literal["tool_uses", "assistant_turns"] = "tool_uses"
    protect_before_first_user: bool = False
    exclude_tools: tuple[str, ...] = ()
    only_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool = False
    clear_thinking_keep: int | None = None
    images: Literal["clear", "keep"] = "clear"
    image_chars: int = 8000
    cache: CacheRules | None = None
    payback_requests: int = 10
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)
    caps: SectionCaps | None = None
    #: An offload area (``context_manager.offload``): trimmed and cleared results are stored
    #: there and their stubs name the handle to ``recall`` (None: what is cut is gone).
    offload: OffloadArea | None = field(default=None, compare=False)
    _deny: re.Pattern[str] | None = field(init=False, repr=False, compare=False, default=None)
    _allow: re.Pattern[str] | None = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        names = ("head_chars", "tail_chars", "min_prunable_chars", "clear_at_least")
        for name in (*names, "payback_requests", "keep_last", "image_chars"):
            check_int(name, getattr(self, name))
        if self.max_chars is not None:
            floor = self.head_chars + self.tail_chars
            check_int(
                "max_chars (None, or at least head_chars + tail_chars)", self.max_chars, floor
            )
        for name in ("soft_ratio", "hard_ratio"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float) and 0 <= value <= 1):
                raise ConfigurationError(f"{name} must be in [0, 1] or None, got {value!r}")
        if self.trigger_tokens is not None:
            check_int("trigger_tokens (or None)", self.trigger_tokens, 1)
        if self.clear_until not in ("below_ratio", "all"):
            raise ConfigurationError(
                f"clear_until must be 'below_ratio' or 'all', got {self.clear_until!r}"
            )
        if self.keep_unit not in ("tool_uses", "assistant_turns"):
            raise ConfigurationError(
                f"keep_unit must be 'tool_uses' or 'assistant_turns', got {self.keep_unit!r}"
            )
        if self.images not in ("clear", "keep"):
            raise ConfigurationError(f"images must be 'clear' or 'keep', got {self.images!r}")
        if self.clear_thinking_keep is not None:
            check_int("clear_thinking_keep (or None)", self.clear_thinking_keep)
        if self.cache is not None and not isinstance(self.cache, CacheRules):
            raise ConfigurationError(
                f"cache must be CacheRules (prompt_cache.cache_rules(...)), got {self.cache!r:.60}"
            )
        if not callable(self.clock):
            raise ConfigurationError(f"clock must be a callable, got {self.clock!r:.60}")
        if self.caps is not None and not isinstance(self.caps, SectionCaps):
            raise ConfigurationError(f"caps must be SectionCaps, got {self.caps!r:.60}")
        for name in ("exclude_tools", "only_tools"):
            value = getattr(self, name)
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise ConfigurationError(f"{name} must be a sequence of names or globs")
            object.__setattr__(self, name, tuple(value))
        for name in ("marker", "placeholder"):
            if not isinstance(getattr(self, name), str):
                raise ConfigurationError(
                    f"{name} must be a string, got {type(getattr(self, name)).__name__}"
                )
        try:
            self.marker.format(head=0, tail=0, total=0, cut=0)
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigurationError(
                f"marker may only use {{head}}, {{tail}}, {{total}}, {{cut}}: {exc}"
            ) from None
        object.__setattr__(self, "_deny", _compile(self.exclude_tools))
        object.__setattr__(self, "_allow", _compile(self.only_tools))

    # -- presets ---------------------------------------------------------------------------
    @classmethod
    def openclaw(cls, **overrides: object) -> ToolResultPruning:
        """OpenClaw session pruning: soft trim 4,000 -> 1,500 + 1,500, ratios 0.3 / 0.5."""
        base: dict[str, object] = {
            "keep_unit": "assistant_turns",
            "protect_before_first_user": True,
        }
        return cls(**{**base, **overrides})  # type: ignore[arg-type]

    @classmethod
    def anthropic(cls, **overrides: object) -> ToolResultPruning:
        """Anthropic ``clear_tool_uses_20250919`` defaults: clear old results past 100k tokens."""
        base: dict[str, object] = {
            "max_chars": None,
            "placeholder": ANTHROPIC_PLACEHOLDER,
            "soft_ratio": None,
            "hard_ratio": None,
            "min_prunable_chars": 0,
            "trigger_tokens": 100_000,
            "clear_until": "all",
            "keep_last": 3,
            "keep_unit": "tool_uses",
        }
        return cls(**{**base, **overrides})  # type: ignore[arg-type]

    # -- rules -----------------------------------------------------------------------------
    def prunable(self, tool_name: str) -> bool:
        """Whether results of ``tool_name`` may be pruned (exclusion wins over ``only_tools``)."""
        name = tool_name.strip().lower()
        if self._deny is not None and self._deny.match(name):
            return False
        return self._allow is None or bool(self._allow.match(name))

    def bind(self) -> PruningEngine:
        """A fresh engine holding the per-conversation state (one per manager)."""
        from .engine import PruningEngine

        return PruningEngine(self)
