"""The SQL backends' tables: the statements that create them and how a cell read from them is
trusted (``_sql.py`` holds the algorithm that reads and writes them).

Schema (``<prefix>`` defaults to ``context_``)::

    CREATE TABLE <prefix>sessions (
        session    TEXT PRIMARY KEY,
        generation BIGINT NOT NULL DEFAULT 0,      -- the current generation
        updated_at DOUBLE PRECISION NOT NULL,      -- epoch seconds of the last write
        epoch      TEXT                            -- random, drawn when the row is created
    );
    CREATE TABLE <prefix>records (
        session    TEXT NOT NULL,
        generation BIGINT NOT NULL,
        position   BIGINT NOT NULL,                -- 0, 1, ... within the generation
        checkpoint BIGINT,                         -- the id, on _checkpoint records only
        body       TEXT NOT NULL,                  -- the record's JSON line, byte for byte
        rid        TEXT,                           -- the client-made record id (_cm.id)
        upto       BIGINT,                         -- running sums up to this record
        counter    TEXT,                           --   (_line_ends.Running)
        meta       SMALLINT,                       -- 1 on records that are no message
        PRIMARY KEY (session, generation, position)
    );
    CREATE UNIQUE INDEX <prefix>records_rid ON <prefix>records (session, generation, rid)
        WHERE rid IS NOT NULL;
    CREATE INDEX <prefix>records_checkpoint ON <prefix>records (session, generation, checkpoint)
        WHERE checkpoint IS NOT NULL;
    CREATE INDEX <prefix>records_meta ON <prefix>records (session, generation, position)
        WHERE meta IS NOT NULL;

``upto`` and ``counter`` let an open read only the newest records (``_tail_read.load_tail``): the
stored tokens of the message records up to a row, and under which counter, are read from one
row instead of from every record's end; ``meta`` finds the records that are no message (they
are all read). A row written before those columns existed has none, and neither has any row
after it in its generation: an open reads such a generation whole.

SQLite keeps whatever was written into an ``INTEGER`` column (``'abc'``, ``1.5``): a cell that an
editor, a script or damage left in another type is corruption, reported as
:class:`StoreCorruptionError` like a damaged record, never a ``ValueError`` from deep inside a
write.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import StoreCorruptionError
from ..messages.nesting import short_repr


def schema(prefix: str, *, bigint: str = "BIGINT", real: str = "DOUBLE PRECISION") -> Iterator[str]:
    """The CREATE statements (idempotent) for one table prefix."""
    yield (
        f"CREATE TABLE IF NOT EXISTS {prefix}sessions (session TEXT PRIMARY KEY, "
        f"generation {bigint} NOT NULL DEFAULT 0, updated_at {real} NOT NULL, epoch TEXT)"
    )
    yield (
        f"CREATE TABLE IF NOT EXISTS {prefix}records (session TEXT NOT NULL, "
        f"generation {bigint} NOT NULL, position {bigint} NOT NULL, checkpoint {bigint}, "
        f"body TEXT NOT NULL, rid TEXT, upto {bigint}, counter TEXT, meta SMALLINT, "
        "PRIMARY KEY (session, generation, position))"
    )


def cell(value: object) -> int:
    """A generation, position or checkpoint as read from its column."""
    if type(value) is int:
        return value
    raise StoreCorruptionError(
        f"a stored generation, position or checkpoint is {short_repr(value, 40)}, not an "
        "integer: the session's tables were edited or damaged"
    )
