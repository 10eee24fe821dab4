"""Command line: ``context-manager demo | count | trim | stats | check | replay | verify |
sessions | compactions``.

``trim`` is the library's ``trim()``: ``--budget-tokens`` is its input budget, and every option has
``trim()``'s default. ``demo`` and ``stats`` fill a ``MessageContextManager``: their ``--window``
is the manager's context window, of which 20% is reserved for the reply.

Machine-readable output (kept messages, counts) goes to stdout; the human summary with a usage
bar goes to stderr, so ``context-manager trim chat.json --budget-tokens 8000 > kept.json`` works.

Input files are untrusted: any bad file (missing, not UTF-8, nested too deeply, bad JSON) gives
one ``context-manager: error: ...`` line and exit status 2. Output is built whole before the
first byte is written, so a failure never leaves half a JSON document on stdout; a reader that
closes the pipe early (``| head``) ends the command quietly.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from . import __version__
from ._cli_input import CliError, as_json, load_messages
from ._cli_store import cmd_compactions, cmd_sessions
from ._config import SAFE_INT
from .budget.strategies import STRATEGIES
from .counting import count_tokens
from .errors import ContextManagerError
from .manager import MessageContextManager
from .messages import normalize
from .oneshot import trim
from .stats import ContextStats

SAMPLE = "sample_conversation.json"
PROVIDER_NAMES = ["openai", "openai-responses", "anthropic", "bedrock", "gemini"]
#: ``trim()``'s largest budget: what ``trim`` runs with when no ``--budget-tokens`` is given.
NO_TOKEN_LIMIT = SAFE_INT


def usage_bar(stats: ContextStats, width: int = 30) -> str:
    return _bar(stats.context_tokens, stats.budget_tokens, width)


def _bar(used: int, budget: int, width: int = 30) -> str:
    ratio = min(used / budget, 1.0) if budget > 0 else 1.0
    filled = round(ratio * width)
    return "[" + "#" * filled + "." * (width - filled) + f"] {ratio:6.1%}"


def summary_line(stats: ContextStats, total_messages: int) -> str:
    return (
        f"kept {stats.context_message_count}/{total_messages} messages, "
        f"{stats.context_tokens}/{stats.budget_tokens} tokens "
        f"(window {stats.max_tokens}, reserve {stats.reserve_tokens}, "
        f"history {stats.used_tokens}) {usage_bar(stats)}"
    )


def trim_summary(kept: int, total: int, tokens: int, budget: int | None) -> str:
    """``trim``'s stderr line: what was kept, its tokens against ``trim()``'s budget."""
    if budget is None:
        return f"kept {kept}/{total} messages, {tokens} tokens (no --budget-tokens: no token limit)"
    return f"kept {kept}/{total} messages, {tokens}/{budget} tokens {_bar(tokens, budget)}"


def _manager(args: argparse.Namespace, **extra: Any) -> MessageContextManager:
    """The manager ``count`` and ``stats`` fill: ``--window`` is its context window."""
    return MessageContextManager(
        max_tokens=getattr(args, "window", None),
        model=args.model,
        counter=args.counter,
        strategy=getattr(args, "strategy", "sliding_window"),
        reserve_tokens=getattr(args, "reserve_tokens", None),
        max_messages=getattr(args, "max_messages", None),
        repair=args.repair,
        provider=getattr(args, "provider", None),
        **extra,
    )


def _preview(message: Any, width: int = 90) -> str:
    rec = normalize(message)
    text = rec.text.replace("\n", " ")
    if rec.tool_calls:
        text = "calls " + ", ".join(f"{c.name}({c.arguments})" for c in rec.tool_calls)
    elif rec.tool_call_id:
        text = f"[{rec.tool_call_id}] {text}"
    line = f"{rec.role:>9}: {text}"
    return line if len(line) <= width else line[: width - 1] + "…"


def cmd_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    messages = json.loads(resources.files("context_manager.data").joinpath(SAMPLE).read_text())
    manager = MessageContextManager(
        max_tokens=args.window, strategy="sliding_window", reserve_ratio=0.2
    )
    manager.extend(messages)
    kept = manager.get_context()
    out.write(
        f"Sample conversation: {len(messages)} messages; a manager's window of {args.window} "
        f"tokens, 20% reserved for the reply.\nKept, in order:\n"
    )
    for message in kept:
        out.write("  " + _preview(message) + "\n")
    out.write(summary_line(manager.stats(), len(messages)) + "\n")
    return 0


def count_report(messages: Sequence[Any], manager: MessageContextManager) -> dict[str, Any]:
    """Per-message tokens, totals by role and the counter's name: what ``count --json`` prints."""
    rows = []
    for i, message in enumerate(messages):
        tokens = manager.add(message)
        rows.append({"index": i, "role": normalize(message, i).role, "tokens": tokens})
    stats = manager.stats()
    return {
        "messages": rows,
        "total": manager.token_count,
        "prompt_total": stats.used_tokens,
        "by_role": stats.tokens_by_role,
        "counter": stats.counter,
    }


def cmd_count(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    messages = load_messages(args.file)
    report = count_report(messages, _manager(args))
    if args.json:
        out.write(json.dumps(report, indent=1) + "\n")
        return 0
    lines = [f"{row['index']:>5} {row['role']:>9} {row['tokens']:>8}" for row in report["messages"]]
    lines.append(f"{'total':>15} {report['total']:>8}  (prompt {report['prompt_total']})")
    lines.extend(f"{role:>15} {tokens:>8}" for role, tokens in report["by_role"].items())
    lines.append(f"counter: {report['counter']}")
    out.write("\n".join(lines) + "\n")
    return 0


def cmd_trim(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``trim()`` on the file, with the same options and defaults (no count cache: one call)."""
    messages = load_messages(args.file)
    kept = trim(
        messages,
        NO_TOKEN_LIMIT if args.budget_tokens is None else args.budget_tokens,
        counter=args.counter,
        model=args.model,
        strategy=args.strategy,
        max_messages=args.max_messages,
        repair=args.repair,
        provider=args.provider,
        validate=args.validate,
    )
    try:
        text = json.dumps(kept, indent=1, ensure_ascii=False, default=as_json, allow_nan=False)
        text += "\n"
    except (TypeError, ValueError) as exc:
        raise CliError(f"cannot write the kept messages as JSON: {exc}") from None
    tokens = count_tokens(kept, args.model, counter=args.counter)  # the counter trim() used
    out.write(text)
    summary = trim_summary(len(kept), len(messages), tokens, args.budget_tokens)
    err.write(summary + "\n")
    return 0


def cmd_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .providers import validate

    messages = load_messages(args.file)
    problems = validate(messages, args.provider)
    out.write("".join(f"{problem}\n" for problem in problems))
    err.write(f"{len(problems)} problem(s) for {args.provider} in {len(messages)} messages\n")
    return 1 if problems else 0


def cmd_stats(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    messages = load_messages(args.file)
    manager = _manager(args)  # a manager, not trim(): its budget is --window less a reserve
    manager.extend(messages)
    stats = manager.stats()
    fields = {k: getattr(stats, k) for k in stats.__dataclass_fields__ if k != "extra"}
    json.dump(fields, out, indent=1)
    out.write("\n")
    err.write(summary_line(stats, len(messages)) + "\n")
    if stats.sections:
        err.write(sections_line(stats.sections) + "\n")
    return 0


def sections_line(sections: dict[str, int]) -> str:
    """Where the context's tokens go: ``sections: history 1,200 (60%), tool_results ...``."""
    total = sum(sections.values()) or 1
    ranked = sorted(((n, k) for k, n in sections.items() if n), reverse=True)
    return "sections: " + ", ".join(f"{k} {n:,} ({n / total:.0%})" for n, k in ranked)


def cmd_replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Replay the session under several settings; a table (or JSON) and optionally a PNG."""
    from .replay.command import run_replay

    messages = load_messages(args.file)
    tools = load_messages(args.tools) if args.tools else None
    if args.budget_tokens is None and args.model is None:
        raise CliError("replay needs --budget-tokens, or a --model whose window sets it")
    return run_replay(args, messages, tools, out, err)


def cmd_verify(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .parity.verify import describe_failure, verify_directory

    directory = Path(args.dir)
    if not directory.is_dir():
        raise CliError(f"{args.dir}: not a directory of fixture files")
    results = verify_directory(directory)
    if not results:
        raise CliError(f"{args.dir}: no fixture files (JSON with 'suite' and 'cases') found")
    failed = 0
    for result in results:
        status = "PASS" if result.ok else "FAIL"
        out.write(f"{status} {result.suite} ({result.package}): {result.passed}/{result.total}\n")
        if result.error:
            out.write(f"  {result.error}\n")
        for case_id, expected, actual in result.failures:
            out.write(describe_failure(case_id, expected, actual) + "\n")
        failed += 0 if result.ok else 1
    total = sum(r.total for r in results)
    out.write(f"{len(results) - failed} suites passed, {failed} failed ({total} cases)\n")
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="context-manager",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, model_help: str, *strategies: str) -> None:
        """The file and counter options; with ``strategies`` (a help text, then the choices),
        which messages to keep (trim and stats)."""
        p.add_argument("file", help="JSON array of messages or JSONL; - for stdin")
        p.add_argument("--model", default=None, help=model_help)
        p.add_argument(
            "--counter",
            default=None,
            help="counter spec (chars, estimate, tiktoken, hf:...); default: the --model's "
            "most precise counter, else the safe estimate",
        )
        p.add_argument("--repair", action="store_true", help="fix broken tool-call pairing")
        if strategies:
            p.add_argument(
                "--strategy", default="sliding_window", choices=strategies[1:], help=strategies[0]
            )
            p.add_argument("--max-messages", type=int, default=None, help="keep at most this many")
            p.add_argument("--provider", default=None, choices=PROVIDER_NAMES)

    demo = sub.add_parser("demo", help="a manager keeps the bundled sample within its window")
    demo.add_argument("--window", type=int, default=600, help="its window; 20%% is reserved")
    demo.set_defaults(func=cmd_demo)
    count = sub.add_parser("count", help="tokens per message, total and by role")
    common(count, "model name: counts with its most precise counter")
    count.add_argument("--json", action="store_true", help="JSON: per message, by role, total")
    count.set_defaults(func=cmd_count)
    trimming = sub.add_parser(
        "trim",
        help="the library's trim(): print the messages that fit --budget-tokens as JSON",
        description="Apply context_manager.trim() to the file and print what it keeps as JSON. "
        "Every option means what the trim() argument of the same name means, with its default.",
    )
    model_help = "model name: picks its counter (not the budget, as in trim())"
    fifo = "default sliding_window; fifo is a manager's: it evicts on add"
    common(trimming, model_help, f"trim()'s strategy= ({fifo})", "sliding_window", "priority")
    trimming.add_argument(
        "--budget-tokens",
        type=int,
        default=None,
        help="the input budget, trim()'s budget_tokens: the kept messages (with reply priming "
        "and tools) fit in it; nothing is set aside for the reply; default: no token limit",
    )
    trimming.add_argument(
        "--validate", default="kept", choices=["kept", "all"], help="check kept messages or all"
    )
    trimming.set_defaults(func=cmd_trim)
    stats = sub.add_parser(
        "stats",
        help="a manager's budget statistics as JSON (--window less a 20%% reserve)",
        description="Fill a MessageContextManager with the file and print its stats() as JSON. "
        "--window is the manager's context window, of which 20% is reserved for the reply "
        "unless --reserve-tokens is given; trim, not stats, applies trim()'s budget.",
    )
    common(stats, "model name (sets the window and limits)", "the manager's", *STRATEGIES)
    stats.add_argument("--window", type=int, default=None, help="default: --model's, else 128000")
    stats.add_argument("--reserve-tokens", type=int, default=None, help="default: 20%% of window")
    stats.set_defaults(func=cmd_stats)
    check = sub.add_parser("check", help="list what a provider would reject (exit 1 if any)")
    check.add_argument("file", help="JSON array of messages or JSONL; - for stdin")
    check.add_argument("--provider", default="openai", choices=PROVIDER_NAMES)
    check.set_defaults(func=cmd_check)
    replaying = sub.add_parser(
        "replay",
        help="replay a session under several settings: tokens sent, cached share, cost",
        description="Send the session's requests (one before each assistant step) under each "
        "--setting and judge each against the previous one under --provider's prompt-cache "
        "rules. Prints per-setting averages and the recommended setting; --plot draws tokens "
        "sent, cached share and cumulative cost (needs matplotlib).",
    )
    replaying.add_argument("file", help="session log, JSON array of messages or JSONL; - for stdin")
    replaying.add_argument("--provider", required=True, choices=["anthropic", "openai", "gemini"])
    replaying.add_argument("--model", default=None, help="model: its cache minimum and prices")
    replaying.add_argument(
        "--budget-tokens", type=int, default=None, help="input budget, as trim()'s budget_tokens"
    )
    replaying.add_argument("--counter", default=None, help="counter spec (default: --model's)")
    replaying.add_argument(
        "--setting",
        action="append",
        default=None,
        help="repeatable: sliding_window, fifo, langchain, retention=R, prune=openclaw, "
        "prune=anthropic, cache_aware, joined with '+' (default: a standard set)",
    )
    replaying.add_argument("--tools", default=None, help="JSON file of tool definitions sent")
    replaying.add_argument("--ttl", default=None, help="Anthropic 5m / 1h; OpenAI in_memory / 24h")
    replaying.add_argument(
        "--seconds-between", type=float, default=None, help="simulated time between requests"
    )
    replaying.add_argument("--price", type=float, default=None, help="$ per million input tokens")
    replaying.add_argument("--plot", default=None, help="write a PNG here")
    replaying.add_argument("--json", action="store_true", help="per-request rows as JSON")
    replaying.set_defaults(func=cmd_replay)
    verify = sub.add_parser("verify", help="check TypeScript fixtures against Python")
    verify.add_argument("dir", help="directory of fixture JSON files")
    verify.set_defaults(func=cmd_verify)
    sessions = sub.add_parser("sessions", help="list, copy or delete sessions of a store")
    actions = sessions.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="session ids of a directory or store URL")
    listing.add_argument("target", help="directory, sqlite:///x.db, redis://..., postgresql://...")
    listing.add_argument("--session", default=None, help=argparse.SUPPRESS)
    copy = actions.add_parser("copy", help="copy one session to another store")
    copy.add_argument("source", help="source path or URL")
    copy.add_argument("dest", help="destination path or URL")
    copy.add_argument(
        "--session", required=True, help="session id to copy (a log file: its id at the dest)"
    )
    copy.add_argument("--to-session", default=None, help="id in the destination (default: same)")
    deleting = actions.add_parser("delete", help="delete one session for good (asks for --yes)")
    deleting.add_argument("target", help="directory, sqlite:///x.db, redis://..., postgresql://...")
    deleting.add_argument("session", help="the session id (every generation, offloaded results)")
    deleting.add_argument("--yes", action="store_true", help="delete (else: say what would go)")
    sessions.set_defaults(func=cmd_sessions)
    listed = sub.add_parser(
        "compactions",
        help="what each compaction of a stored session dropped, and which facts survived",
    )
    listed.add_argument("target", help="session log, directory, sqlite:///x.db, redis://...")
    listed.add_argument("--session", default=None, help="session id in a directory or database")
    listed.add_argument("--json", action="store_true", help="the entries with manifests as JSON")
    listed.set_defaults(func=cmd_compactions)
    return parser


#: Exit status after the reader closed stdout early (128 + SIGPIPE, as a shell reports it).
EXIT_PIPE_CLOSED = 141


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Everything it prints goes through one redaction of the credentials
    found in the command line (a URL's password, a libpq ``password=``), whichever command,
    message or library text would show them."""
    from .store._urls import redact, secrets_in

    given = list(sys.argv[1:] if argv is None else argv)
    secrets = {s for arg in given if isinstance(arg, str) for s in secrets_in(arg)}
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = build_parser().parse_args(given)  # its usage errors quote arguments
    except SystemExit as done:  # --help, --version, a usage error: argparse's own exit
        _emit(redact(out.getvalue(), secrets), redact(err.getvalue(), secrets), 0)
        raise done from None
    try:
        result: int = args.func(args, out, err)
    except ContextManagerError as exc:
        text = f"context-manager: error: {_one_line(exc)}\n"
    except OSError as exc:  # the OS's own, about a path we were given (a plot in no directory)
        named = f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else None
        text = f"context-manager: error: {_one_line(named or f'{type(exc).__name__}: {exc}')}\n"
    except Exception as exc:  # a client library's own, or no memory left
        text = f"context-manager: error: {type(exc).__name__}: {_one_line(exc)}\n"
    else:
        return _emit(redact(out.getvalue(), secrets), redact(err.getvalue(), secrets), result)
    return _emit("", redact(text, secrets), 2)


def _one_line(exc: BaseException | str) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 2000 else text[:1999] + "…"


def _emit(out: str, err: str, status: int) -> int:
    """Write the finished output in one go; a closed pipe ends the command quietly. Another
    failure to write stdout (``> /dev/full``) is one error line on stderr and exit status 2;
    stdout then points at /dev/null, so the final flush of what is buffered cannot raise."""
    try:
        if out:
            sys.stdout.write(out)
            sys.stdout.flush()
    except BrokenPipeError:  # the reader is gone (``| head``): nobody asked for more
        _silence_stdout()
        return EXIT_PIPE_CLOSED
    except OSError as exc:
        _silence_stdout()
        err += f"context-manager: error: cannot write the output: {_one_line(exc)}\n"
        status = 2
    if err:
        try:
            sys.stderr.write(err)
            sys.stderr.flush()
        except OSError:  # stderr is gone or full too: nowhere left to report it
            pass
    return status


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, io.UnsupportedOperation):  # stdout without a descriptor
        pass


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
