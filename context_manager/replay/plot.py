"""The replay's picture: tokens sent, cached share and cumulative cost per request, per setting.

matplotlib is an optional dependency (the ``plot`` extra): it is imported here only, when a
picture is asked for, with the non-interactive Agg backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import ConfigurationError
from .run import ReplayResult

__all__ = ["plot"]

#: Requests averaged for the cached-share curve (a single request is all or nothing).
WINDOW = 20


def _rolling(values: list[float], window: int) -> list[float]:
    out, total = [], 0.0
    for i, value in enumerate(values):
        total += value - (values[i - window] if i >= window else 0.0)
        out.append(total / min(i + 1, window))
    return out


def plot(results: Sequence[ReplayResult], path: str | Path, title: str = "") -> Path:
    """Draw the three panels to ``path`` (PNG) and return it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigurationError(
            "drawing the replay needs matplotlib: pip install 'context-manager[plot]'"
        ) from None
    fig, (sent, share, cost) = plt.subplots(3, 1, figsize=(8, 8.5), sharex=True)
    for r in results:
        xs = range(1, r.requests + 1)
        sent.plot(xs, [row.sent for row in r.rows], lw=0.8, label=r.setting)
        shares = [row.cached / row.sent if row.sent else 0.0 for row in r.rows]
        share.plot(xs, [100 * v for v in _rolling(shares, WINDOW)], lw=1.0)
        running, total = [], 0.0
        for row in r.rows:
            total += row.cost
            running.append(total / 1e6)
        cost.plot(xs, running, lw=1.2)
    budget = results[0].budget if results else 0
    if budget:
        sent.axhline(budget, color="grey", lw=0.8, ls="--")
    sent.set_ylabel("tokens sent")
    share.set_ylabel(f"cached share, %\n({WINDOW}-request mean)")
    cost.set_ylabel("cumulative cost,\nM full-price input tokens")
    cost.set_xlabel("request")
    for ax in (sent, share, cost):
        ax.grid(alpha=0.3)
    sent.legend(fontsize=7, ncol=2, loc="lower right")
    if title:
        sent.set_title(title, fontsize=10)
    fig.tight_layout()
    out = Path(path)
    out = out if out.suffix else out.with_suffix(".png")  # what savefig writes: say it
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
