"""SQL tables edited or damaged under a session: a sessions row pruned by a cleanup job while
the records stay, or an integer cell holding text (SQLite keeps whatever is written into an
INTEGER column). The session must stay readable and writable, or fail with a typed error; never
a conflict that no retry can pass, never a ``ValueError``."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from context_manager import MessageContextManager
from context_manager.errors import StoreCorruptionError
from context_manager.store import retrying

from .backends import contents


def _sqlite(tmp_path: Path) -> tuple[str, Callable[[str], None]]:
    path = tmp_path / "chat.db"

    def run(statement: str) -> None:
        with sqlite3.connect(path) as db:
            db.execute(statement)

    return f"sqlite:///{path}", run


def _postgres(url: str) -> Callable[[str], None]:
    psycopg = pytest.importorskip("psycopg")

    def run(statement: str) -> None:
        with psycopg.connect(url, autocommit=True) as db:
            db.execute(statement)

    return run


def _written(url: str, session: str, n: int) -> None:
    manager = MessageContextManager.open(url, session=session, max_tokens=100_000)
    manager.extend({"role": "user", "content": f"m{i}"} for i in range(n))
    manager.store.close()


def _check_lost_row(url: str, run: Callable[[str], None], session: str) -> None:
    _written(url, session, 3)
    run(f"DELETE FROM context_sessions WHERE session = '{session}'")  # a cleanup pruned it
    manager = MessageContextManager.open(url, session=session, max_tokens=100_000)
    assert len(manager.messages) == 3
    retrying(manager, lambda m: m.add({"role": "user", "content": "m3"}), attempts=2)
    manager.store.close()
    assert contents(url, session) == ["m0", "m1", "m2", "m3"]


def test_sqlite_records_whose_row_was_pruned_stay_writable(tmp_path: Path) -> None:
    url, run = _sqlite(tmp_path)
    _check_lost_row(url, run, "s")


def test_postgres_records_whose_row_was_pruned_stay_writable(postgres_url: str) -> None:
    _check_lost_row(postgres_url, _postgres(postgres_url), "pruned-row")


def test_a_pruned_row_after_clear_keeps_the_newest_generation(tmp_path: Path) -> None:
    url, run = _sqlite(tmp_path)
    _written(url, "s", 2)
    manager = MessageContextManager.open(url, session="s", max_tokens=100_000)
    manager.clear()
    manager.add({"role": "user", "content": "after clear"})
    manager.store.close()
    run("DELETE FROM context_sessions WHERE session = 's'")
    assert contents(url, "s") == ["after clear"]


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE context_sessions SET generation = 'abc'",
        "UPDATE context_records SET position = 'x' WHERE position = 1",
        "UPDATE context_sessions SET generation = 2.5",
    ],
)
def test_a_damaged_integer_cell_is_corruption(tmp_path: Path, damage: str) -> None:
    url, run = _sqlite(tmp_path)
    _written(url, "s", 3)
    run(damage)
    with pytest.raises(StoreCorruptionError, match="not an integer"):
        contents(url, "s")
