"""``context-manager replay``: the command's body (the parser lives in ``cli.py``)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any, TextIO

from .._config import check_int
from ..counting import get_counter
from ..manager import MessageContextManager
from ..prompt_cache import cache_rules
from .run import DEFAULT_SETTINGS, recommend, replay, table

__all__ = ["run_replay"]


def run_replay(
    args: argparse.Namespace,
    messages: Sequence[Any],
    tools: Sequence[Any] | None,
    out: TextIO,
    err: TextIO,
) -> int:
    """Replay ``messages`` as ``args`` say; the table or JSON to ``out``, notes to ``err``."""
    budget = args.budget_tokens
    if budget is None:  # the model's window less the usual 20% reserve
        budget = MessageContextManager(model=args.model, counter="chars").budget_tokens
    else:
        check_int("budget_tokens", budget, 1)
    counter = get_counter(args.counter, model=args.model)
    rules = cache_rules(args.provider, args.model, ttl=args.ttl)
    results = replay(
        messages,
        rules,
        budget=budget,
        counter=counter,
        settings=args.setting or DEFAULT_SETTINGS,
        tools=tools,
        seconds_between=args.seconds_between,
    )
    best = recommend(results)
    if args.json:
        doc = {
            "provider": rules.provider,
            "model": args.model,
            "budget": budget,
            "counter": counter.name,
            "recommended": best.setting if best else None,
            "settings": [r.as_dict() for r in results],
        }
        out.write(json.dumps(doc, indent=1) + "\n")
    else:
        out.write(table(results, args.price) + "\n")
        if best is not None:
            share = best.cost / (results[0].cost or 1.0)
            out.write(f"recommended: {best.setting} ({share:.0%} of {results[0].setting}'s cost)\n")
    if args.plot:
        from .plot import plot

        title = f"{rules.provider} {args.model or ''}, budget {budget:,} tokens ({counter.name})"
        err.write(f"plot: {plot(results, args.plot, title)}\n")
    err.write(
        f"{len(messages)} messages, {results[0].requests} requests, budget {budget:,} tokens; "
        f"{rules.provider} cache rules: min {rules.min_tokens:,} tokens, read "
        f"{rules.read_price:g}x, write {rules.write_price:g}x; cost in full-price input tokens\n"
    )
    return 0
