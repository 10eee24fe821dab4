"""Fixtures with real servers (see ``servers.py``): skipped loudly only when not installed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .servers import Unavailable, postgres_server, redis_server


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    pytest.importorskip("redis", reason="REDIS TESTS SKIPPED: pip install redis")
    try:
        with redis_server() as url:
            yield url
    except Unavailable as exc:
        pytest.skip(f"REDIS TESTS SKIPPED: {exc}")


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    pytest.importorskip("psycopg", reason="POSTGRES TESTS SKIPPED: pip install 'psycopg[binary]'")
    try:
        with postgres_server() as url:
            yield url
    except Unavailable as exc:
        pytest.skip(f"POSTGRES TESTS SKIPPED: {exc}")
