"""The command line's commands on stored sessions: ``sessions list | delete | copy`` and
``compactions``. Apart from ``cli.py`` because they share one rule the message commands do not
need: a target a command reads or deletes from must exist (:func:`existing`), so a typo is an
error, not a new empty session (or a directory named after a password).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, TextIO

from ._cli_input import CliError

__all__ = ["cmd_compactions", "cmd_sessions"]


def cmd_sessions(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``sessions list`` / ``delete`` / ``copy``. The targets are URLs that may hold a password,
    and a client library's error may quote it: :func:`main` shows everything without them."""
    from .store.copy import copy_session
    from .store.targets import open_store

    if args.action == "list":
        store = open_store(existing(args.target), session=args.session)
        try:
            out.write("".join(f"{name}\n" for name in store.sessions()))
        finally:
            store.close()
        return 0
    if args.action == "delete":
        from .store.delete import delete_session, deletion_summary

        found, plan = deletion_summary(existing(args.target), session=args.session)
        if found and args.yes and delete_session(args.target, session=args.session):
            err.write(f"deleted {plan}\n")
            return 0
        err.write(f"would delete {plan}; run again with --yes to delete it\n" if found else plan)
        return 1
    source = existing(args.source)
    # A log file is one session (a Kimi CLI context.jsonl): --session names it at the dest.
    one_file = "://" not in source and os.path.isfile(source)
    copied = copy_session(
        source,
        args.dest,
        session=None if one_file else args.session,
        to_session=args.to_session or args.session,
    )
    if not copied:  # a mistyped id reads as an empty session: say so, as compactions does
        err.write(f"no session {args.session!r} in {source}: nothing copied\n")
        return 1
    err.write(f"copied {copied} records of session {args.session!r}\n")
    return 0


def cmd_compactions(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Each compaction of a stored session: what it dropped and which facts survived (errors
    without the target's credentials: :func:`main`)."""
    from .store.compactions import list_compactions

    entries = list_compactions(existing(args.target), session=args.session)
    if not entries:  # none, or no such session (a typo): say which, as ``sessions delete`` does
        from .store.targets import open_store

        store = open_store(args.target, session=args.session)
        try:
            missing = store.session not in store.sessions()
        finally:
            store.close()
        if missing:
            err.write(f"no session {store.session!r} in {store.target}\n")
            return 1
    if args.json:
        rows = [{"number": n, **e.to_dict()} for n, e in enumerate(entries, 1)]
        out.write(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
    else:
        out.write("".join(compaction_lines(n, e) for n, e in enumerate(entries, 1)))
    err.write(f"{len(entries)} compaction(s)\n")
    return 0


def existing(target: str) -> str:
    """A target a command reads or deletes from, refused when it does not exist rather than
    created by opening it (a mistyped path or SQLite file; a libpq DSN where a URL was meant
    would become a directory named after its password). Servers are asked, not checked here."""
    from .store.targets import SCHEMES, plain_path, sqlite_path

    scheme = target.lower()
    if scheme.startswith(SCHEMES) and not scheme.startswith("sqlite:"):
        return target
    path = sqlite_path(target) if scheme.startswith("sqlite://") else plain_path(target)
    if not os.path.exists(path):
        raise CliError(f"{target}: no such session log, directory or database")
    return target  # a file that is no session log is refused by the store (check_log_kind)


def compaction_lines(number: int, entry: Any) -> str:
    """``compactions``' text for one entry: when, why, the dropped range, the facts' fate."""
    head = f"#{number} {entry.reason} {entry.created_at or '-'}"
    manifest = entry.manifest
    if manifest is None:
        return f"{head}: kept from message {entry.first_kept_index} (no manifest)\n"
    counts = manifest.counts()
    lines = [
        f"{head}: dropped messages {manifest.first_index}-{manifest.end_index - 1} "
        f"({manifest.messages} messages, {manifest.tokens:,} tokens), "
        f"summary {len(entry.summary):,} chars",
        f"  facts: {len(manifest.facts)} tracked, {counts['kept']} kept by the summary, "
        f"{counts['readded']} re-added, {counts['omitted']} omitted, {counts['lost']} lost"
        + (f" ({manifest.untracked} more not tracked)" if manifest.untracked else ""),
    ]
    lost = manifest.lost
    lines += [f"  {f.status}: {f.kind} {f.text}" for f in lost[:LISTED_FACTS]]
    if len(lost) > LISTED_FACTS:
        lines.append(f"  ... {len(lost) - LISTED_FACTS} more (--json lists every fact)")
    return "\n".join(lines) + "\n"


#: Lost facts ``compactions`` prints per compaction (``--json`` has them all).
LISTED_FACTS = 20
