"""The safe estimate's accuracy table in ``docs/guide/counting.md``, measured; not a test.

    python -m tests.counting.accuracy_table

For every held-back message (:data:`~.corpus.HELD_BACK`, never read by the fit) and every
reference tokenizer: ``(estimate + 5) / (real + framing)``, the message-level ratio with each
side's chat framing (:data:`~.reference_tokenizers.FRAMING`). Each cell is the lowest and the
median over the class's messages; a lowest value of 1.00 or more means never below.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from context_manager.counting import SafeEstimator, estimate_tokens

from .corpus import HELD_BACK, messages
from .reference_tokenizers import FRAMING, reference_tokenizers

Ratios = dict[str, dict[str, list[float]]]


def ratios(estimate: Callable[[str], int] = estimate_tokens, overhead: int | None = None) -> Ratios:
    """class -> tokenizer (and ``"largest"``) -> message-level ratios on held-back text."""
    refs = reference_tokenizers()
    own = SafeEstimator().message_overhead if overhead is None else overhead
    out: Ratios = {}
    for seed in HELD_BACK:
        for name, texts in messages(seed).items():
            row = out.setdefault(name, {})
            for text in texts:
                ours = estimate(text) + own
                real = {ref: count(text) + FRAMING[ref] for ref, count in refs.items()}
                for ref, count in real.items():
                    row.setdefault(ref, []).append(ours / count)
                row.setdefault("largest", []).append(ours / max(real.values()))
    return out


def table(measured: Ratios) -> str:
    refs = [*reference_tokenizers(), "largest"]
    lines = [
        "| class | messages | " + " | ".join(refs) + " |",
        "| --- | --- | " + " | ".join("---" for _ in refs) + " |",
    ]
    for name, row in measured.items():
        cells = [f"{min(row[r]):.2f} / {statistics.median(row[r]):.2f}" for r in refs]
        lines.append(f"| {name} | {len(row['largest'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(ratios()))
