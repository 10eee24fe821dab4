"""Fixtures with real servers (see ``servers.py``): skipped loudly only when not installed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .backends import BACKENDS, Backend, make_backend
from .servers import (
    RedisCluster,
    Unavailable,
    pgbouncer_server,
    postgres_server,
    redis_cluster,
    redis_server,
)


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


@pytest.fixture(scope="session")
def pgbouncer_url(postgres_url: str) -> Iterator[str]:
    """A PgBouncer in transaction pooling mode in front of the test PostgreSQL."""
    try:
        with pgbouncer_server(postgres_url) as url:
            yield url
    except Unavailable as exc:
        pytest.skip(f"PGBOUNCER TESTS SKIPPED: {exc}")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Each of the four backends in turn (``backends.py``)."""
    return make_backend(request, tmp_path)


@pytest.fixture(scope="module")
def redis_cluster_nodes() -> Iterator[RedisCluster]:
    """A real three-node Redis Cluster (``servers.redis_cluster``), one per test module."""
    pytest.importorskip("redis", reason="REDIS TESTS SKIPPED: pip install redis")
    try:
        with redis_cluster() as cluster:
            yield cluster
    except Unavailable as exc:
        pytest.skip(f"REDIS CLUSTER TESTS SKIPPED: {exc}")
