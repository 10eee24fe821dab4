"""``copy_session`` given a store object and another session's name refuses, as
``delete_session`` does: a store is one session, and copying it under the name asked for would
silently copy the wrong conversation."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_manager.errors import ConfigurationError
from context_manager.store import copy_session, delete_session, open_store

from .backends import Backend, contents, user


def test_a_store_of_one_session_is_not_copied_as_another(backend: Backend, tmp_path: Path) -> None:
    for name in ("A", "B"):
        writer = backend.manager(name)
        writer.add(user(f"I am {name}"))
        writer.store.close()
    destination = f"sqlite:///{tmp_path}/copy.db"
    with pytest.raises(ConfigurationError, match="'A', not 'B'"):
        copy_session(backend.store("A"), destination, session="B")
    with pytest.raises(ConfigurationError, match="'A', not 'B'"):
        delete_session(backend.store("A"), session="B")  # the same rule
    assert contents(destination, "B") == []  # nothing copied
    # naming the store's own session, or none, copies it
    assert copy_session(backend.store("A"), destination, session="A", to_session="B") == 1
    assert contents(destination, "B") == ["I am A"]


def test_a_destination_store_of_another_session_is_refused(
    backend: Backend, tmp_path: Path
) -> None:
    writer = backend.manager("A")
    writer.add(user("I am A"))
    writer.store.close()
    destination = f"sqlite:///{tmp_path}/copy.db"
    with pytest.raises(ConfigurationError, match="'C', not 'B'"):
        copy_session(
            backend.target, open_store(destination, session="C"), session="A", to_session="B"
        )
    assert contents(destination, "B") == contents(destination, "C") == []
