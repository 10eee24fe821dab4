"""A SQL or Redis store opens a long session from its newest records and leaves the older ones
where they are: their count and stored tokens come from one record's running sums (SQL: the
``upto`` and ``counter`` columns; Redis: the ``s:<N>`` list beside each generation), and the
records themselves are read when the history is first needed.

The laziness shows where a row damaged in the database is reported: an open that reads every
row reports it at once; one that leaves it in the database reports it when it is first read.
The oracle is the live manager and a ``strict=True`` open (which reads and checks every row).
"""

from __future__ import annotations

import logging
import sqlite3
from contextlib import closing
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.errors import StoreConflictError, StoreError
from context_manager.store import delete_session

from .backends import Backend, user
from .test_open_reads_the_newest import SMALL, build, observed, reopen

#: Long enough that the open stops short of the oldest rows (its first pages are 64 and 256
#: rows, about 2,000 and 8,000 tokens here, against a reach of 3,200).
TURNS = 100


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Any) -> Backend:
    from .backends import make_backend

    return make_backend(request, tmp_path)


def redis_keys(backend: Backend) -> tuple[Any, str]:
    """A client of the session's server and the prefix of its keys, as an operator sees them."""
    redis = pytest.importorskip("redis")
    return redis.Redis.from_url(backend.target), f"{backend.options['prefix']}{{s}}:"


def execute(backend: Backend, statement: str, params: tuple[Any, ...] = ()) -> None:
    """Run ``statement`` on the session's tables as an operator would (``{p}``: the prefix)."""
    statement = statement.replace("{p}", backend.options.get("prefix", "context_"))
    if backend.name == "sqlite":
        with closing(sqlite3.connect(backend.target.removeprefix("sqlite:///"))) as db:
            db.execute(statement, params)
            db.commit()
    else:
        psycopg = pytest.importorskip("psycopg")
        with psycopg.connect(backend.target, autocommit=True) as db:
            db.execute(statement.replace("?", "%s"), params)


def damage_row(backend: Backend, position: int, generation: int = 0) -> None:
    """Cut the record at ``position`` short (SQL: in every generation)."""
    cut_short = '{"role":"user","content":"cut sho'
    if backend.name == "redis":
        client, keys = redis_keys(backend)
        client.lset(f"{keys}g:{generation}", position, cut_short)
        return
    execute(
        backend,
        "UPDATE {p}records SET body = ? WHERE session = 's' AND position = ?",
        (cut_short, position),
    )


def assert_read_whole_at_open(backend: Backend, caplog: pytest.LogCaptureFixture) -> None:
    """That an open reads every record: one old record damaged is reported at the open, not
    when the history is first needed."""
    damage_row(backend, 6)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        reopen(backend).store.close()
    assert "corrupt" in caplog.text


def forget_sums(backend: Backend) -> None:
    """Make the session look written by an earlier version: SQL tables without the columns,
    Redis without the lists beside the generation."""
    if backend.name == "redis":
        client, keys = redis_keys(backend)
        client.delete(f"{keys}s:0", f"{keys}m:0")
        return
    execute(backend, "DROP INDEX {p}records_meta")
    for column in ("upto", "counter", "meta"):
        execute(backend, f"ALTER TABLE {{p}}records DROP COLUMN {column}")


def test_an_open_reads_no_older_row_until_the_history_needs_it(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    live = reopen(backend)
    build(live, TURNS)  # 400 messages, 100 usage reports, the system prompt
    context = live.get_context()
    live.store.close()
    damage_row(backend, 6)  # an old user turn (5: a usage report, read by every open)

    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        reopened = reopen(backend)
        assert reopened.get_context() == context
        reopened.add(user("one more"))
        assert len(reopened) == 1 + 401
        assert "corrupt" not in caplog.text  # never read
        history = reopened.history()
    assert "corrupt" in caplog.text  # read now, and reported
    assert len(history) == 400  # one unreadable, one added
    reopened.store.close()


def test_rows_written_before_the_running_sums_existed_are_read_whole(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """Tables of an earlier version lack the columns (the open adds them), Redis sessions the
    lists: a generation whose records have no sums is read whole (the damaged record is
    reported at the open), and so are the records written after them."""
    live = reopen(backend)
    build(live, TURNS)
    expected = observed(live)
    live.store.close()
    forget_sums(backend)

    assert observed(reopen(backend)) == expected
    assert observed(reopen(backend, strict=True)) == expected
    reopened = reopen(backend)
    build(reopened, 5)  # rows after them carry no sums either
    expected = observed(reopened)
    reopened.store.close()
    assert observed(reopen(backend)) == expected
    damage_row(backend, 6)
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        reopen(backend).store.close()
    assert "corrupt" in caplog.text


@pytest.mark.parametrize(
    "first",
    [
        {"message": user("remember this " * 20), "pinned": True},
        {"message": user("rank this " * 20), "priority": 3},
        {"message": {"role": "system", "content": "answer in French"}},
    ],
)
def test_an_old_row_a_reader_must_read_makes_the_open_read_every_row(
    backend: Backend, first: dict[str, Any]
) -> None:
    attributes = dict(first)
    live = reopen(backend)
    live.add(attributes.pop("message"), **attributes)
    build(live, TURNS)
    expected = observed(live)
    live.store.close()
    assert observed(reopen(backend)) == expected
    assert observed(reopen(backend, strict=True)) == expected


def test_another_counter_reads_every_row(backend: Backend) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    del tiktoken
    live = reopen(backend)
    build(live, TURNS)
    live.store.close()
    options = {"counter": "tiktoken:cl100k_base"}
    assert observed(reopen(backend, **options)) == observed(reopen(backend, strict=True, **options))


def test_a_session_deleted_after_a_partial_open_is_refused_not_read_as_another(
    backend: Backend,
) -> None:
    live = reopen(backend)
    build(live, TURNS)
    live.store.close()
    reopened = reopen(backend)
    reopened.get_context()
    assert delete_session(backend.target, session="s", **backend.options)
    other = reopen(backend)  # the same id again, a new session
    build(other, TURNS)
    other.store.close()
    with pytest.raises(StoreConflictError, match="deleted or rebuilt"):
        reopened.history()
    assert len(reopened) == 1 + 4 * TURNS  # still holds what it held
    reopened.store.close()


def test_a_manager_a_session_cache_kept_reads_its_older_rows_through_its_new_store(
    backend: Backend,
) -> None:
    from context_manager.store import SessionCache, connect

    with connect(backend.target, cache=SessionCache(), **backend.options) as handle:
        live = MessageContextManager.open(handle, session="s", **SMALL)
        build(live, TURNS)
        expected = observed(live)
        live.store.close()
        handle.cache.clear()  # type: ignore[union-attr]
        first = MessageContextManager.open(handle, session="s", **SMALL)
        first.get_context()  # opened from the newest rows
        first.store.close()  # parked in the cache
        again = MessageContextManager.open(handle, session="s", **SMALL)
        assert again is first
        assert observed(again) == expected
        again.store.close()


def test_the_older_rows_are_refused_once_the_session_is_closed(backend: Backend) -> None:
    """They are read through the session's store: after ``close()`` the error says to read
    them before closing; what was read before stays (nothing half-read)."""
    live = reopen(backend)
    build(live, TURNS)
    live.store.close()
    reopened = reopen(backend)
    context = reopened.get_context()
    reopened.store.close()
    with pytest.raises(StoreError, match=r"before closing"):
        reopened.history()
    assert reopened.get_context() == context
    assert len(reopen(backend).history()) == 4 * TURNS


def _redis_sums(backend: Backend, edit: Any) -> None:
    client, keys = redis_keys(backend)
    entries = [edit(entry) for entry in client.lrange(f"{keys}s:0", 0, -1)]
    client.delete(f"{keys}s:0")
    client.rpush(f"{keys}s:0", *entries)


def _redis_message_as_meta(backend: Backend, position: int) -> None:
    """List the record at ``position`` (a message) in ``m:0`` as if it were no message: its
    position, the sums entry of its place and its line, one per line."""
    client, keys = redis_keys(backend)
    line = client.lindex(f"{keys}g:0", position)
    sums = client.lindex(f"{keys}s:0", position)
    client.rpush(f"{keys}m:0", b"%d\n%s\n%s" % (position, b"m" + sums, line))


#: Edits of the running sums: (SQL statement, Redis edit of the session's keys).
SUMS_EDITS = {
    "tokens not a number": (  # SQLite keeps text in an integer column
        "UPDATE {p}records SET upto = 'x'",
        lambda b: _redis_sums(b, lambda e: b"x " + e.partition(b" ")[2]),
    ),
    "no counter": (
        "UPDATE {p}records SET counter = NULL",
        lambda b: _redis_sums(b, lambda e: e.partition(b" ")[0]),
    ),
    "a message flagged as no message": (
        "UPDATE {p}records SET meta = 1 WHERE position = 6",
        lambda b: _redis_message_as_meta(b, 6),
    ),
}


@pytest.mark.parametrize("edit", sorted(SUMS_EDITS))
def test_running_sums_an_edit_changed_make_the_open_read_every_row(
    backend: Backend, edit: str, caplog: pytest.LogCaptureFixture
) -> None:
    if edit == "tokens not a number" and backend.name == "postgres":
        pytest.skip("PostgreSQL refuses text in a BIGINT column")
    live = reopen(backend)
    build(live, TURNS)
    expected = observed(live)
    live.store.close()
    statement, redis_edit = SUMS_EDITS[edit]
    if backend.name == "redis":
        redis_edit(backend)
    else:
        execute(backend, statement)
    assert observed(reopen(backend)) == expected
    assert_read_whole_at_open(backend, caplog)


def test_the_oldest_rows_removed_by_a_retention_job_reopen_as_a_full_read_does(
    backend: Backend,
) -> None:
    live = reopen(backend)
    build(live, TURNS)
    live.store.close()
    if backend.name == "redis":  # (the later records move down: the sums no longer fit)
        client, keys = redis_keys(backend)
        client.ltrim(f"{keys}g:0", 10, -1)
    else:
        execute(backend, "DELETE FROM {p}records WHERE session = 's' AND position < 10")
    assert observed(reopen(backend)) == observed(reopen(backend, strict=True))


def test_rows_removed_in_the_middle_are_reported_when_the_history_is_read(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    if backend.name == "redis":
        pytest.skip("a Redis list has no holes (removing records moves the later ones down)")
    live = reopen(backend)
    build(live, TURNS)
    live.store.close()
    turn_1 = "position BETWEEN 6 AND 9"
    execute(backend, f"DELETE FROM {{p}}records WHERE session = 's' AND {turn_1}")
    full = reopen(backend, strict=True)
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        reopened = reopen(backend)
        assert "missing" not in caplog.text
        history = reopened.history()
    assert "4 of the" in caplog.text
    assert [h.message for h in history] == [h.message for h in full.history()]


@pytest.mark.parametrize("turns_after", [3, TURNS])
def test_a_compacted_session_reopens_from_the_compaction_as_the_live_one_was(
    backend: Backend, turns_after: int
) -> None:
    """The open reads the compaction's held messages and the rows from its resume point on;
    the message rows it compacted away are never fetched (``Skipped`` runs)."""
    live = reopen(backend)
    live.add(user("remember this " * 10), pinned=True)
    build(live, TURNS)
    live.apply_compaction(user("summary of it all"), len(live.history()) - 30)
    build(live, turns_after)
    expected = observed(live)
    live.store.close()
    damage_row(backend, 8)  # compacted away: never read
    assert observed(reopen(backend)) == expected


def test_a_write_that_read_nothing_first_continues_the_sums_or_makes_the_open_read_all(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """A store that appends before any load (a blind append): a SQL write continues the sums
    in its transaction; a Redis script cannot compute them, so that generation is then read
    whole at every open. Either way the open has what a full read has."""
    from context_manager.store import connect

    live = reopen(backend)
    build(live, TURNS)
    live.store.close()
    with connect(backend.target, **backend.options) as handle:
        blind = handle.session("s")
        blind.checkpoint()  # (a record no reader must read: it cannot poison the sums itself)
        blind.close()
    assert observed(reopen(backend)) == observed(reopen(backend, strict=True))
    damage_row(backend, 6)
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        reopened = reopen(backend)
        reopened.get_context()
    assert ("corrupt" in caplog.text) == (backend.name == "redis")  # read at the open


def test_a_revert_keeps_the_sums_of_the_records_it_keeps(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    live = reopen(backend)
    build(live, TURNS)
    checkpoint = live.checkpoint()
    build(live, 3)
    live.revert_to(checkpoint)
    build(live, 2)
    expected = observed(live)
    live.store.close()
    assert observed(reopen(backend)) == expected
    damage_row(backend, 6, generation=1)  # a kept record of the new generation
    with caplog.at_level(logging.WARNING, logger="context_manager.store"):
        reopened = reopen(backend)
        reopened.get_context()
        assert "corrupt" not in caplog.text  # left unread by the open
        reopened.history()
    assert "corrupt" in caplog.text


@pytest.fixture
def redis_backend(redis_url: str) -> Backend:
    import uuid

    return Backend("redis", redis_url, {"prefix": f"t{uuid.uuid4().hex[:10]}:"})


@pytest.mark.parametrize(
    "edit",
    [
        "rpop a reply",  # the last record removed, then as many written: the sums would shift
        "ltrim the oldest",
        "del m",  # an eviction policy (allkeys-lru) may drop one key of the session
        "m not a number",
        "m not an integer",
        "m repeated",
        "m reversed",
        "m wrong type",
        "s wrong type",
        "id not a number",  # (what a revert copies: it skips the entry)
    ],
)
def test_redis_lists_an_operator_edited_make_the_open_read_every_record(
    redis_backend: Backend, edit: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Records removed from a generation (then as many written), or the lists beside it
    edited, evicted or of another type: the open reads every record, as a full read has it
    (the system prompt, the usage reports, every message), and writes and reverts go on."""
    backend = redis_backend
    live = reopen(backend)
    build(live, TURNS)
    live.add(user("a bad reply " + "y " * 400))
    live.store.close()
    client, keys = redis_keys(backend)
    metas = client.lrange(f"{keys}m:0", 0, -1)  # each: position, sums, line
    if edit == "rpop a reply":
        client.rpop(f"{keys}g:0")
    elif edit == "ltrim the oldest":
        client.ltrim(f"{keys}g:0", 10, -1)
    elif edit == "del m":
        client.delete(f"{keys}m:0")
    elif edit == "m not a number":
        client.lset(f"{keys}m:0", 0, "abc")
    elif edit == "m not an integer":
        client.lset(f"{keys}m:0", 2, "4.5")
    elif edit == "m repeated":
        client.rpush(f"{keys}m:0", metas[3])
    elif edit == "m reversed":
        client.delete(f"{keys}m:0")
        client.rpush(f"{keys}m:0", *reversed(metas))
    elif edit == "id not a number":
        client.hset(f"{keys}id:0", "edited", "abc")
    else:
        name = f"{keys}{edit[0]}:0"
        client.delete(name)
        client.hset(name, "damaged", "1")
    again = reopen(backend)  # (after "rpop": one record, and g:0 is as long as s:0 again)
    again.add(user("a good reply"))
    again.store.close()
    writer = reopen(backend)
    build(writer, 40)  # (the open then starts after the edit: it would take the sums there)
    expected = observed(writer)
    writer.store.close()
    assert observed(reopen(backend)) == expected
    assert observed(reopen(backend, strict=True)) == expected
    if edit != "id not a number":  # (what only a revert reads)
        assert_read_whole_at_open(backend, caplog)
    reverted = reopen(backend)
    reverted.revert_to(reverted.checkpoint())  # a new generation from the edited one
    reverted.store.close()


def test_an_old_redis_generation_that_expired_is_refused_not_read_as_missing_records(
    redis_backend: Backend,
) -> None:
    """With ``ttl=``, a generation another writer left (``clear()``) expires while the session
    lives on: a manager that opened it reads none of its records, not some."""
    import time

    options = {"store_options": {"prefix": redis_backend.options["prefix"], "ttl": 1}}
    live = MessageContextManager.open(redis_backend.target, session="s", **SMALL, **options)
    build(live, TURNS)
    live.store.close()
    reader = MessageContextManager.open(redis_backend.target, session="s", **SMALL, **options)
    reader.get_context()
    other = MessageContextManager.open(redis_backend.target, session="s", **SMALL, **options)
    other.clear()
    client, keys = redis_keys(redis_backend)
    for i in range(40):  # the session lives on; its generation 0 expires
        other.add(user(f"keep alive {i}"))
        if not client.exists(f"{keys}g:0"):
            break
        time.sleep(0.1)
    assert not client.exists(f"{keys}g:0")
    with pytest.raises(StoreConflictError, match="expired"):
        reader.history()
    assert len(reader) == 1 + 4 * TURNS
    reader.store.close()
    other.store.close()


def test_redis_writers_with_and_without_a_ttl_leave_no_stale_list_to_a_rebuilt_session(
    redis_backend: Backend,
) -> None:
    """A writer without a ttl makes ``m:0``: it takes the session's expiry, so the session
    rebuilt after the others expire finds nothing stale, and opens as a full read has it."""
    import time

    from .test_open_reads_the_newest import exchange

    prefix, target = redis_backend.options["prefix"], redis_backend.target

    def open_(ttl: int | None = 1, **options: Any) -> MessageContextManager:
        store = {"prefix": prefix, **({"ttl": ttl} if ttl else {})}
        return MessageContextManager.open(
            target, session="s", max_tokens=800, store_options=store, **options
        )

    first = open_()
    for i in range(31):
        first.extend(exchange(i))
    first.store.close()
    without = open_(ttl=None)
    without.record_usage(3_000)  # the first record that is no message: m:0 without a ttl
    without.store.close()
    client, keys = redis_keys(redis_backend)
    for _ in range(50):
        if not client.exists(f"{keys}g:0"):
            break
        time.sleep(0.1)
    assert not client.keys(f"{keys}*")  # m:0 expired with the rest
    rebuilt = open_()
    for i in range(100, 160):
        rebuilt.extend(exchange(i))
        rebuilt.record_usage(rebuilt.context_tokens() * 11 // 10)
    expected = observed(rebuilt)
    rebuilt.store.close()
    assert observed(open_()) == expected
    assert observed(open_(strict=True)) == expected


def test_a_redis_position_list_edited_on_a_compacted_session_makes_the_open_read_it_whole(
    redis_backend: Backend,
) -> None:
    """A listed position moved onto a message: the open from the latest compaction does not
    take that message for a record that is no message."""
    live = reopen(redis_backend)
    build(live, TURNS)
    live.apply_compaction(user("summary of it all"), len(live.history()) - 30)
    build(live, 3)
    expected = observed(live)
    live.store.close()
    client, keys = redis_keys(redis_backend)
    first, sums, _ = client.lindex(f"{keys}m:0", 0).split(b"\n", 2)  # the system prompt's
    message = client.lindex(f"{keys}g:0", int(first) + 1)
    assert not message.startswith(b'{"role": "_')
    client.lset(f"{keys}m:0", 0, b"%d\n%s\n%s" % (int(first) + 1, sums, message))
    assert observed(reopen(redis_backend)) == expected


def test_a_redis_writer_without_a_ttl_lets_the_session_expire_whole(
    redis_backend: Backend,
) -> None:
    """It keeps the expiry another writer's ``ttl=`` set on the session's keys: when the
    records expire the session's epoch goes with them, so a manager opened before reads none
    of the session rebuilt after, and a stale writer conflicts."""
    import time

    prefix, target = redis_backend.options["prefix"], redis_backend.target

    def open_(ttl: int | None = None) -> MessageContextManager:
        store = {"prefix": prefix, **({"ttl": ttl} if ttl else {})}
        return MessageContextManager.open(
            target, session="s", max_tokens=2_000, store_options=store
        )

    live = open_(ttl=1)
    build(live, TURNS)
    live.store.close()
    without = open_()
    without.add(user("a writer without a ttl"))
    without.store.close()
    reader = open_(ttl=1)
    stale = open_(ttl=1)
    client, keys = redis_keys(redis_backend)
    for _ in range(50):
        if not client.exists(f"{keys}g:0"):
            break
        time.sleep(0.1)
    assert not client.exists(f"{keys}epoch")  # gone with the records
    rebuilt = open_()
    for i in range(2 * TURNS):
        rebuilt.add(user(f"rebuilt {i} " + "w " * 30))
    rebuilt.store.close()
    with pytest.raises(StoreConflictError):
        reader.history()
    with pytest.raises(StoreConflictError):
        stale.add(user("from a stale view"))


def test_a_redis_retry_of_a_stored_batch_continues_the_sums_stored_after_it(
    redis_backend: Backend,
) -> None:
    """A batch sent again with the same record ids (a retry after a lost reply) writes
    nothing; the writer's next records continue the sums stored after that batch, not its
    own view's sums plus the batch a second time."""
    import json

    from context_manager.store import connect

    live = reopen(redis_backend)
    build(live, TURNS)
    live.extend(user(f"the last batch {i} " + "w " * 20) for i in range(4))
    live.store.close()
    with connect(redis_backend.target, **redis_backend.options) as handle:
        store = handle.session("s")
        last = [json.loads(line) for _, line in store.load().lines[-4:]]
        store.append(last)  # the last batch, already stored: found by its first id
        store.checkpoint()  # continues from the stored sums
        store.close()
    writer = reopen(redis_backend)
    build(writer, 40)
    expected = observed(writer)
    writer.store.close()
    assert observed(reopen(redis_backend)) == expected
    assert observed(reopen(redis_backend, strict=True)) == expected


def test_keys_a_redis_writer_without_a_ttl_makes_expire_with_the_session(
    redis_backend: Backend,
) -> None:
    """Its records, revert and clear included, take the expiry another writer's ``ttl=``
    gave the session: none is stranded in a key that never expires."""
    prefix, target = redis_backend.options["prefix"], redis_backend.target
    with_ttl = MessageContextManager.open(
        target, session="s", max_tokens=2_000, store_options={"prefix": prefix, "ttl": 100}
    )
    with_ttl.add(user("from a writer with a ttl"))
    with_ttl.store.close()
    without = MessageContextManager.open(
        target, session="s", max_tokens=2_000, store_options={"prefix": prefix}
    )
    without.add(user("one"))
    checkpoint = without.checkpoint()
    without.add(user("two"))
    without.revert_to(checkpoint)
    without.add(user("three"))
    without.clear()
    without.add(user("four"))
    without.store.close()
    client, keys = redis_keys(redis_backend)
    lives = {key: client.ttl(key) for key in client.scan_iter(f"{keys}*")}
    assert len(lives) > 8
    assert all(0 < left <= 100 for left in lives.values()), lives
