"""No credential in any output: hostile store URLs through every public entry point.

Each URL holds a password made of the markers ``s3cr3t`` and ``-PW`` around something that
breaks the URL in its own way (a bad ``%`` escape, a space, a bracket, an unencoded ``@`` or
``/``, a bad port, a password in the query string, non-ASCII...). Whatever the backend does with
it (a ``ConfigurationError``, a ``StoreError`` from the real server, or working), neither marker
may appear in the error's text or repr, in the printed traceback with its chained causes, in a
log record, a warning, a store's ``target`` or the CLI's stdout and stderr. Checking the two
markers separately also catches a library quoting just a piece of the password.

The servers are real (``conftest.py``); the tests call URLs through variables, so a traceback's
source lines never hold a password either.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from context_manager import MessageContextManager
from context_manager.cli import main
from context_manager.errors import ConfigurationError, ContextManagerError
from context_manager.store.targets import open_store

MARKERS = ("s3cr3t", "-PW")


@dataclass(frozen=True)
class Case:
    name: str
    template: str  # {pg} / {redis}: host:port of the test servers
    #: The error it must raise, if any (None: whatever the server says, or success).
    raises: type[ContextManagerError] | None = None


POSTGRES = [
    Case("bad-percent", "postgresql://postgres:s3cr3t%zz-PW@{pg}/postgres", ConfigurationError),
    Case("percent-00", "postgresql://postgres:s3cr3t%00-PW@{pg}/postgres", ConfigurationError),
    Case("space", "postgresql://postgres:s3cr3t -PW@{pg}/postgres", ConfigurationError),
    Case("open-bracket-in-password", "postgresql://postgres:s3cr3t[-PW@{pg}/postgres"),
    Case("unclosed-ipv6", "postgresql://postgres:s3cr3t-PW@[::1/postgres", ConfigurationError),
    Case("unclosed-ipv6-port", "postgresql://u:s3cr3t-PW@[::1:5432/db", ConfigurationError),
    Case("port-not-a-number", "postgresql://u:s3cr3t-PW@127.0.0.1:nope/db", ConfigurationError),
    Case("port-out-of-range", "postgresql://u:s3cr3t-PW@127.0.0.1:99999/db", ConfigurationError),
    Case(
        "port-fullwidth-digits",
        "postgresql://u:s3cr3t-PW@127.0.0.1:\uff15\uff14\uff13\uff12/db",
        ConfigurationError,
    ),
    Case("unencoded-at", "postgresql://postgres:s3cr3t@-PW@{pg}/postgres", ConfigurationError),
    Case("unencoded-slash", "postgresql://u:s3cr3t/-PW@{pg}/postgres", ConfigurationError),
    Case("digits-then-slash", "postgresql://u:5432/s3cr3t-PW@{pg}/postgres", ConfigurationError),
    Case("unencoded-hash-and-query", "postgresql://postgres:s3cr3t#?-PW@{pg}/postgres"),
    Case(
        "query-password-broken-query",
        "postgresql://{pg}/postgres?password=s3cr3t-PW&broken",
        ConfigurationError,
    ),
    Case(
        "query-password-bad-percent",
        "postgresql://{pg}/postgres?password=s3cr3t%zz-PW",
        ConfigurationError,
    ),
    Case(
        "query-password-unknown-param",
        "postgresql://{pg}/postgres?password=s3cr3t-PW&nonsense=1",
        ConfigurationError,
    ),
    Case(
        "query-host-with-at",
        "postgresql://{pg}/postgres?password=s3cr3t-PW&host=a@b",
        ConfigurationError,
    ),
    Case("unicode-password", "postgresql://postgres:s3cr3t-é-PW@{pg}/postgres"),
    Case("not-utf8", "postgresql://postgres:s3cr3t%FF-PW@{pg}/postgres", ConfigurationError),
    Case("nul", "postgresql://postgres:s3cr3t\x00-PW@{pg}/postgres", ConfigurationError),
    Case("encoded-unicode-password", "postgresql://postgres:s3cr3t%C3%A9-PW@{pg}/postgres"),
    Case("invalid-dns-name", "postgresql://u:s3cr3t-PW@bad..host.example/db", ConfigurationError),
    Case("refused", "postgresql://u:s3cr3t-PW@127.0.0.1:1/db"),
    Case("no-such-role", "postgresql://nobody:s3cr3t-PW@{pg}/postgres"),
    Case("no-such-database", "postgresql://postgres:s3cr3t-PW@{pg}/missing"),
    Case("bad-sslmode", "postgresql://postgres:s3cr3t-PW@{pg}/postgres?sslmode=bogus"),
    Case("postgres-scheme", "postgres://postgres:s3cr3t-PW@{pg}/postgres"),
]

REDIS = [
    Case("bad-percent", "redis://:s3cr3t%zz-PW@{redis}/0"),
    Case("space", "redis://:s3cr3t -PW@{redis}/0"),
    Case("bracket-in-password", "redis://:s3cr3t[-PW@{redis}/0", ConfigurationError),
    Case("unclosed-ipv6", "redis://:s3cr3t-PW@[::1:6379/0", ConfigurationError),
    Case("port-not-a-number", "redis://:s3cr3t-PW@127.0.0.1:nope/0", ConfigurationError),
    Case("port-out-of-range", "redis://:s3cr3t-PW@127.0.0.1:99999/0", ConfigurationError),
    Case(
        "port-fullwidth-digits",
        "redis://:s3cr3t-PW@127.0.0.1:\uff16\uff13\uff17\uff19/0",
        ConfigurationError,
    ),
    Case("db-not-a-number", "redis://:s3cr3t-PW@{redis}/zero", ConfigurationError),
    Case("db-negative", "redis://:s3cr3t-PW@{redis}/-1", ConfigurationError),
    Case("unencoded-slash", "redis://:s3cr3t/-PW@{redis}/0", ConfigurationError),
    Case("unencoded-at", "redis://bob:s3cr3t@-PW@{redis}/0"),
    Case("query-password-bad-db", "redis://{redis}/0?password=s3cr3t-PW&db=x", ConfigurationError),
    Case(
        "query-password-bad-option",
        "redis://{redis}/0?password=s3cr3t-PW&socket_timeout=soon",
        ConfigurationError,
    ),
    Case("unicode-password", "redis://bob:s3cr3t-é-PW@{redis}/0"),
    Case("nul", "redis://bob:s3cr3t\x00-PW@{redis}/0", ConfigurationError),
    Case("invalid-dns-name", "redis://:s3cr3t-PW@bad..host.example:6379/0", ConfigurationError),
    Case("wrong-user", "redis://bob:s3cr3t-PW@{redis}/0"),
    Case("refused", "redis://:s3cr3t-PW@127.0.0.1:1/0"),
    Case(
        "tls-to-a-plain-server",
        "rediss://bob:s3cr3t-PW@{redis}/0?socket_timeout=1&socket_connect_timeout=1",
    ),
]

# open_store itself (targets.py) quotes these; see the report for the one-line fix.
ROUTING = [
    Case("sqlite-with-credentials", "sqlite://u:s3cr3t-PW@host/x.db", ConfigurationError),
    Case("unknown-scheme", "mysql://u:s3cr3t-PW@host/db", ConfigurationError),
]


def _hostport(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port}"


def _servers(request: pytest.FixtureRequest, backend: str) -> dict[str, str]:
    """host:port of the real server the backend needs (the other one is never used)."""
    found = {"pg": "127.0.0.1:1", "redis": "127.0.0.1:1"}
    if backend == "postgres":
        found["pg"] = _hostport(request.getfixturevalue("postgres_url"))
    if backend == "redis":
        found["redis"] = _hostport(request.getfixturevalue("redis_url"))
    return found


def _cases() -> Iterator[Any]:
    for backend, cases in (("postgres", POSTGRES), ("redis", REDIS)):
        for case in cases:
            yield pytest.param(backend, case, id=f"{backend}-{case.name}")


def _leaks(text: str) -> list[str]:
    return [marker for marker in MARKERS if marker in text]


def _check_error(exc: BaseException | None, case: Case) -> None:
    if exc is None:
        assert case.raises is None, f"{case.name}: expected {case.raises}"
        return
    assert isinstance(exc, ContextManagerError), f"{case.name}: untyped {exc!r}"
    if case.raises is not None:
        assert isinstance(exc, case.raises), f"{case.name}: {exc!r}"
    printed = "".join(traceback.format_exception(exc))
    cause = exc.__cause__
    texts = {
        "str": str(exc),
        "repr": repr(exc),
        "traceback": printed,
        "cause": "" if cause is None else f"{cause!s} {cause!r}",
    }
    for where, text in texts.items():
        assert not _leaks(text), f"{case.name}: the password is in the error's {where}: {text}"
    assert "Traceback" in printed and type(exc).__name__ in printed  # it did print something


def _attempt(action: Callable[[], Any]) -> BaseException | None:
    try:
        action()
    except BaseException as exc:  # anything at all: the test checks its type
        return exc
    return None


@pytest.fixture
def watched(caplog: pytest.LogCaptureFixture) -> Iterator[list[str]]:
    """Every log record (any logger, DEBUG up) and warning emitted meanwhile, as text."""
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seen: list[str] = []
        yield seen
        seen += [str(w.message) for w in caught]
    seen += [record.getMessage() for record in caplog.records]
    seen.append(caplog.text)
    assert not _leaks("\n".join(seen)), "the password is in a log record or warning"


@pytest.mark.parametrize(("backend", "case"), list(_cases()))
def test_hostile_urls_through_the_api_never_show_the_password(
    backend: str, case: Case, request: pytest.FixtureRequest, watched: list[str]
) -> None:
    pytest.importorskip("psycopg" if backend == "postgres" else "redis")
    url = case.template.format(**_servers(request, backend))
    prefix = "sec_" if backend == "postgres" else "sec:"

    def through_open_store() -> None:
        store = open_store(url, session="s", prefix=prefix, **_fast(backend))
        try:
            store.load()
            store.append([{"role": "user", "content": "hi"}])
            assert not _leaks(f"{store.target} {store!r}")
        finally:
            store.close()

    def through_the_manager() -> None:
        manager = MessageContextManager.open(
            url,
            session="m",
            max_tokens=10_000,
            store_options={"prefix": prefix, **_fast(backend)},
        )
        try:
            manager.add({"role": "user", "content": "hi"})
            assert not _leaks(f"{manager.store!r} {manager!r}")
        finally:
            manager.store.close()

    def through_the_class() -> None:
        if backend == "postgres":
            from context_manager.store.postgres import PostgresStore

            store: Any = PostgresStore(url, "c", prefix=prefix, connect_timeout=2)
        else:
            from context_manager.store.redis import RedisStore

            store = RedisStore(url, "c", prefix=prefix)
        try:
            store.sessions()
            assert not _leaks(f"{store.target} {store!r}")
        finally:
            store.close()

    for action in (through_open_store, through_the_manager, through_the_class):
        _check_error(_attempt(action), case)


def _fast(backend: str) -> dict[str, Any]:
    return {"connect_timeout": 2} if backend == "postgres" else {}


def test_targets_show_the_url_without_credentials_or_query(
    postgres_url: str, redis_url: str
) -> None:
    pg, rd = _hostport(postgres_url), _hostport(redis_url)
    url = f"postgresql://postgres:s3cr3t-PW@{pg}/postgres?application_name=x"
    store = open_store(url, session="t", prefix="sec_")
    assert store.target == f"postgresql://postgres@{pg}/postgres"
    store.close()
    url = f"redis://bob:s3cr3t-PW@{rd}/3?password=s3cr3t-PW"
    store = open_store(url, session="t", prefix="sec:")
    assert store.target == f"redis://{rd}/3"
    store.close()


def test_a_postgres_key_value_string_never_shows_its_password(watched: list[str]) -> None:
    pytest.importorskip("psycopg")
    from context_manager.store.postgres import PostgresStore

    for text in (
        "host=127.0.0.1 port=1 password=s3cr3t-PW connect_timeout=1",
        "host=127.0.0.1 port=nope password='s3cr3t -PW'",
        "host=127.0.0.1 port=1 password=s3cr3t-PW sslmode=bogus",
    ):
        exc = _attempt(lambda text=text: PostgresStore(text, connect_timeout=1))
        _check_error(exc, Case("key-value", text))
        assert exc is not None


@pytest.mark.parametrize("case", ROUTING, ids=lambda case: case.name)
def test_targets_no_backend_accepts_never_show_the_password(case: Case) -> None:
    url = case.template
    _check_error(_attempt(lambda: open_store(url, session="s")), case)
    _check_error(_attempt(lambda: MessageContextManager.open(url, max_tokens=100)), case)


def _cli(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "context_manager.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parent,
    )


def _check_cli(case: Case, status: int, out: str, err: str) -> None:
    assert not _leaks(out + err), f"{case.name}: the CLI printed the password: {out} {err}"
    assert "Traceback" not in err, f"{case.name}: {err}"
    if status != 0:
        assert status == 2 and err.startswith("context-manager: error:"), err
    if case.raises is not None:
        assert status == 2, f"{case.name} was accepted: {out} {err}"


@pytest.mark.slow
def test_the_sessions_cli_never_prints_the_password(
    postgres_url: str,
    redis_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    watched: list[str],
) -> None:
    """``context-manager sessions list|copy`` for every hostile URL, through ``main()`` (what an
    embedding application or CI log captures), the password in either argument of ``copy``."""
    servers = {"pg": _hostport(postgres_url), "redis": _hostport(redis_url)}
    source = f"sqlite:///{tmp_path}/src.db"
    for case in [*POSTGRES, *REDIS, *ROUTING]:
        url = case.template.format(**servers)
        status = main(["sessions", "list", url])
        captured = capsys.readouterr()
        _check_cli(case, status, captured.out, captured.err)
        for argv in (
            ["sessions", "copy", source, url, "--session", "s", "--to-session", "c"],
            ["sessions", "copy", url, source, "--session", "s", "--to-session", "c"],
        ):
            status = main(argv)
            captured = capsys.readouterr()
            assert not _leaks(captured.out + captured.err), f"{case.name}: {captured.err}"


@pytest.mark.slow
def test_the_sessions_cli_process_never_prints_the_password(
    postgres_url: str, redis_url: str
) -> None:
    """The same in real processes (what a shell user sees: interpreter warnings, unhandled
    errors), for one URL of each kind: malformed, refused by the server, accepted."""
    servers = {"pg": _hostport(postgres_url), "redis": _hostport(redis_url)}
    chosen = {
        "postgres": ("bad-percent", "unencoded-slash", "no-such-role", "unicode-password"),
        "redis": ("port-not-a-number", "db-not-a-number", "wrong-user"),
        "routing": ("sqlite-with-credentials", "unknown-scheme"),
    }
    cases = [
        case
        for group, pool in (("postgres", POSTGRES), ("redis", REDIS), ("routing", ROUTING))
        for case in pool
        if case.name in chosen[group]
    ]
    assert len(cases) == sum(len(names) for names in chosen.values())
    argvs = [["sessions", "list", case.template.format(**servers)] for case in cases]
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(_cli, argvs))
    for case, result in zip(cases, results, strict=True):
        _check_cli(case, result.returncode, result.stdout, result.stderr)
    assert [r.returncode for r in results].count(2) >= 6
