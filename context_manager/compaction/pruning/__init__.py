"""Tool-result pruning: trim or clear old tool output in the request only.

Guide: ``docs/guide/pruning.md``.

``ToolResultPruning`` is the configuration (with ``openclaw()`` and ``anthropic()`` presets),
``PruningReport`` what one request's pruning did, ``PruningEngine`` the per-conversation state a
manager holds (``ToolResultPruning.bind()``), and ``openclaw_prune`` the OpenClaw-shaped pure
function the parity fixtures check.
"""

from .config import ANTHROPIC_PLACEHOLDER, OPENCLAW_PLACEHOLDER, ToolResultPruning
from .engine import PruningEngine
from .fallback import PruningFallback, emergency_pruning
from .report import PruningReport

__all__ = [
    "ANTHROPIC_PLACEHOLDER",
    "OPENCLAW_PLACEHOLDER",
    "PruningEngine",
    "PruningFallback",
    "PruningReport",
    "ToolResultPruning",
    "emergency_pruning",
]
