"""Redis URLs whose options redis-py refuses, the target a URL's query points at, and writes to a
server that was never reached.

redis-py makes its connections at the first command, so an option it does not take used to be
a ``TypeError`` (and a timeout a socket refuses a ``ValueError``) from the first read or write:
it must be a ``ConfigurationError`` when the store is opened, without the password. A URL's
``db=`` wins over its path, so the target shown must name that database. A write that fails
because the server refused the connection or the password sent nothing: a plain ``StoreError``,
not "may have been applied".

Real redis-server (``conftest.redis_url``); a wrong password is tried on an ACL user of its own.
"""

from __future__ import annotations

import socket
import traceback
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import ConfigurationError, StoreError, StoreOutcomeUnknownError
from context_manager.store import adelete_session, connect, delete_session, open_store
from context_manager.store.redis import RedisStore

from .aio import run
from .backends import user

redis = pytest.importorskip("redis")

SECRET = "Pw-s3cret-77"


def _hostport(redis_url: str) -> str:
    return redis_url.split("//", 1)[1].split("/", 1)[0]


def _shown(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


def _opened(url: str) -> None:
    open_store(url, session="s")


def _managed(url: str) -> None:
    MessageContextManager.open(url, session="s", max_tokens=1000)


def _handle(url: str) -> None:
    connect(url)


def _deleted(url: str) -> None:
    delete_session(url, session="s")


def _aopened(url: str) -> None:
    run(MessageContextManager.aopen(url, session="s", max_tokens=1000))


@pytest.mark.parametrize(
    "query",
    [
        "foo=1",
        "ssl_cert_reqs=none",  # an option of rediss:// only
        "socket_timeout=-1",
        "socket_timeout=nan",
        "socket_timeout=inf",
        "socket_timeout=0",
        "socket_connect_timeout=-5",
        "protocol=9",
    ],
)
@pytest.mark.parametrize("how", [_opened, _managed, _handle, _deleted, _aopened])
def test_an_option_redis_py_refuses_is_a_configuration_error_at_open(
    redis_url: str, query: str, how: Callable[[str], None]
) -> None:
    url = f"redis://:{SECRET}@{_hostport(redis_url)}/0?{query}"
    with pytest.raises(ConfigurationError) as caught:
        how(url)
    assert SECRET not in _shown(caught.value)


def test_options_redis_py_takes_still_work(redis_url: str) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    url = f"{redis_url}?socket_timeout=5&socket_connect_timeout=2.5&health_check_interval=10"
    store = open_store(url, session="s", prefix=prefix)
    store.append([user("hello")])
    assert len(store.load().lines) == 1
    store.close()


def test_the_target_names_the_database_of_the_query(redis_url: str) -> None:
    hostport, prefix = _hostport(redis_url), f"t{uuid.uuid4().hex[:8]}:"
    store = open_store(f"redis://{hostport}/0?db=5", session="s", prefix=prefix)
    assert store.target == f"redis://{hostport}/5"
    store.append([user("hello")])
    store.close()
    key = f"{prefix}{{s}}:gen"
    assert redis.Redis.from_url(f"redis://{hostport}/5").exists(key) == 1
    assert redis.Redis.from_url(f"redis://{hostport}/0").exists(key) == 0


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"redis://u:{SECRET}@h:1/0?db=7&password={SECRET}", "redis://h:1/7"),
        ("redis://h:1/2?db=3&db=4", "redis://h:1/3"),  # redis-py reads the first one
        ("redis://h:1?db=6", "redis://h:1/6"),
        ("unix:///tmp/redis.sock?db=3", "unix:///tmp/redis.sock?db=3"),
        (f"redis://:{SECRET}@/0?host=h&port=2", "redis://h:2/0"),  # used where the URL has none
        ("redis://h:1/2?socket_timeout=5", "redis://h:1/2"),
    ],
)
def test_the_target_is_where_redis_py_connects(url: str, shown: str) -> None:
    store = RedisStore(url, session="s")  # nothing connects before the first command
    assert store.target == shown
    store.close()


@pytest.fixture
def wrong_password(redis_url: str) -> Iterator[str]:
    """A URL naming an ACL user of this test with a password it does not have."""
    name = f"cm-{uuid.uuid4().hex[:8]}"
    admin = redis.Redis.from_url(redis_url)
    admin.acl_setuser(name, enabled=True, passwords=["+right-one"], keys="*", commands=["+@all"])
    try:
        yield f"redis://{name}:{SECRET}@{_hostport(redis_url)}/0"
    finally:
        admin.acl_deluser(name)
        admin.close()


def _refused() -> str:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"redis://:{SECRET}@127.0.0.1:{port}/0"


def _writes(url: str) -> list[Callable[[], Any]]:
    def fresh() -> Any:
        return open_store(url, session="s", prefix=f"t{uuid.uuid4().hex[:8]}:")

    return [
        lambda: delete_session(url, session="s"),
        lambda: run(adelete_session(url, session="s")),
        lambda: fresh().append([user("x")]),
        lambda: fresh().checkpoint(),
        lambda: fresh().clear(),
        lambda: fresh().revert_to(0),
    ]


@pytest.mark.parametrize("server", ["refused", "wrong password"])
def test_a_write_to_a_server_never_reached_sent_nothing(server: str, request: Any) -> None:
    url = _refused() if server == "refused" else request.getfixturevalue("wrong_password")
    for write in _writes(url):
        with pytest.raises(StoreError) as caught:
            write()
        assert not isinstance(caught.value, StoreOutcomeUnknownError), caught.value
        assert "may have been applied" not in str(caught.value)
        assert SECRET not in _shown(caught.value)
