"""A table prefix with capitals works on both SQL backends.

The prefix rule takes letters of either case, and the tables are created with unquoted names,
which PostgreSQL folds to lower case. Its schema check then looked the tables up by the prefix
as written, found no columns, and tried to add them again: every open of the store failed
("column "epoch" of relation "app_sessions" already exists").
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from context_manager import MessageContextManager


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/chat.db"
    return str(request.getfixturevalue("postgres_url"))


def test_a_prefix_with_capitals_opens_writes_and_reads_back(target: str) -> None:
    prefix = "App" + uuid.uuid4().hex[:8] + "_"
    options = {"store_options": {"prefix": prefix}, "max_tokens": 1_000}
    for turn in range(3):  # the first open creates the tables, the next ones check them
        manager = MessageContextManager.open(target, session="s", **options)
        manager.add({"role": "user", "content": f"turn {turn}"})
        manager.store.close()
    reopened = MessageContextManager.open(target, session="s", **options)
    assert [m["content"] for m in reopened.messages] == ["turn 0", "turn 1", "turn 2"]
    reopened.store.close()
