"""A backend's option given to another backend (``ttl=`` is Redis's, ``busy_timeout=`` is
SQLite's) is a ``ConfigurationError`` naming it and what the backend takes, through every door
that passes options on: ``open_store``, ``connect`` and ``MessageContextManager.open``'s
``store_options``. It was a bare ``TypeError`` from the backend's constructor."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_manager import MessageContextManager
from context_manager.errors import ConfigurationError
from context_manager.store import connect, open_store


@pytest.mark.parametrize("option", [{"ttl": 60}, {"client": object()}, {"typo_timeout": 1}])
def test_an_option_sqlite_does_not_take_is_named(tmp_path: Path, option: dict[str, object]) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    (name,) = option
    with pytest.raises(
        ConfigurationError, match=f"unknown options for a SqliteStore: \\['{name}'\\]"
    ):
        open_store(url, session="s", **option)
    with pytest.raises(ConfigurationError, match=name):
        MessageContextManager.open(url, session="s", max_tokens=1_000, store_options=option)
    with pytest.raises(ConfigurationError, match=name):
        connect(url, **option).session("s")


def test_the_options_sqlite_takes_still_work(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    store = open_store(url, session="s", prefix="mine_", busy_timeout=5.0)
    try:
        store.append([{"role": "user", "content": "hi"}])
        assert len(store.load().lines) == 1
    finally:
        store.close()


@pytest.mark.parametrize("options", [5, "ab", 1.5, {1: 2}, [("ttl", 1)]])
def test_store_options_that_are_no_dict_of_names_are_refused(
    tmp_path: Path, options: object
) -> None:
    """They raised ``TypeError`` / ``ValueError`` from ``dict()`` or the call's ``**``."""
    with pytest.raises(ConfigurationError, match="store_options must be a dict"):
        MessageContextManager.open(
            tmp_path,
            session="s",
            max_tokens=1_000,
            store_options=options,  # type: ignore[arg-type]
        )
    assert list(tmp_path.iterdir()) == []
