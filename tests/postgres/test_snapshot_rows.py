"""A snapshot chunk's events, read in fetched batches and written a batch at a time (`PgSnapshotReader.read_chunk`,
`PgEventBuilder.snapshot_rows`, the compiled `write_rows`), are those each row written alone gives
(`PgEventBuilder.snapshot_row`, with the chunk's first and last rows marked by `snapshot_marker`): for the compiled
and the pure-Python writers, fetch sizes that cut the chunk anywhere (its last row alone in a batch, a batch that
ends the chunk exactly), chunks of 0 to a few rows, the snapshot's first and last chunks, keyed and unkeyed tables,
schemas on and off, and values the compiled writer leaves to the per-row path (an infinite timestamp)."""

from __future__ import annotations

import random

import psycopg
import pytest
from psycopg.types.string import TextLoader

from connectors.core.snapshot.chunks import Chunk, snapshot_marker
from connectors.postgres import events, rows
from connectors.postgres.chunk_tasks import ReadTarget
from connectors.postgres.events import PgEventBuilder
from connectors.postgres.snapshot import PgSnapshotReader, ReadPoint
from connectors.postgres.source import connect_sql
from tests.postgres.test_source import pg_config

pytestmark = [pytest.mark.integration]

LSN = 123_456_789
ROWS = 23


def _table(pg_db) -> None:
    pg_db.execute("CREATE TABLE keyed (id int PRIMARY KEY, label text, amount numeric(12,2), at timestamptz, "
                  "flag bool, required text NOT NULL DEFAULT 'r')")
    pg_db.execute("CREATE TABLE unkeyed (id int, label text)")
    rng = random.Random(5)
    for n in range(1, ROWS + 1):
        pg_db.execute("INSERT INTO keyed VALUES (%s, %s, %s, %s, %s)",
                      (n, rng.choice([None, "plain", 'q"é\x01', "\u2028"]), rng.choice([None, "1.50", "-3"]),
                       rng.choice([None, "2024-01-02 03:04:05.5+00", "infinity"]), rng.choice([None, True, False])))
        pg_db.execute("INSERT INTO unkeyed VALUES (%s, %s)", (n, f"u{n}"))
    pg_db.execute("CREATE PUBLICATION dbz_publication FOR TABLE keyed, unkeyed")


def _expected(pg_db, builder: PgEventBuilder, reader: PgSnapshotReader, chunk: Chunk, mark_last: bool,
              read_at: ReadPoint) -> list:
    """Each row of the chunk written alone, as read_chunk wrote them before it wrote batches."""
    table = reader._table(builder, chunk.namespace)
    where, params = reader._range(chunk.namespace, chunk)
    with psycopg.connect(pg_db.dsn) as conn:
        cursor = conn.cursor()
        for column in table.columns:
            cursor.adapters.register_loader(column.type.result_oid, TextLoader)
        schema, name = chunk.namespace.split(".")
        cursor.execute(psycopg.sql.SQL("SELECT * FROM {}.{}").format(psycopg.sql.Identifier(schema),
                                                                    psycopg.sql.Identifier(name)) + where, params)
        found = cursor.fetchall()
    return [builder.snapshot_row(table, row, reader._source(
        table, read_at, snapshot_marker(chunk, mark_last, i == 0, i == len(found) - 1))) for i, row in enumerate(found)]


@pytest.mark.parametrize("path", ["compiled", "python"])
@pytest.mark.parametrize("schemas", [False, True], ids=["plain", "schemas"])
def test_chunks_read_in_batches_give_each_row_as_written_alone(pg_db, monkeypatch, path, schemas):
    _table(pg_db)
    # rows the compiled writer leaves to the per-row path are among those read
    assert pg_db.execute("SELECT count(*) FROM keyed WHERE at = 'infinity' AND id > 1") != [(0,)]
    if path == "python":
        monkeypatch.setattr(rows, "compiled", None)
        monkeypatch.setattr(events, "compiled", None)
    monkeypatch.setattr(events, "now_ns", lambda: 1_700_000_000_123_456_789)
    extra = {"key.converter.schemas.enable": "true", "value.converter.schemas.enable": "true"} if schemas else {}
    read_at = ReadPoint(1_700_000_000_000_000, LSN, None, tx_id=777)
    chunks = [Chunk("public.keyed", 0, 0, ["1"], ["1"], False, 4),  # empty
              Chunk("public.keyed", 1, 1, ["1"], ["2"], False, 4),  # one row
              Chunk("public.keyed", 2, 2, ["2"], ["6"], False, 4),
              Chunk("public.keyed", 3, 3, ["6"], [str(ROWS)], True, 4),
              Chunk("public.unkeyed", 0, 4, None, None, True, 1)]
    for fetch_size in (1, 2, 3, 4, 17, 10_240):
        config = pg_config(pg_db, "batches", **{"snapshot.fetch.size": fetch_size, **extra})
        builder = PgEventBuilder(config, lambda: connect_sql(pg_db.dsn))
        reader = PgSnapshotReader(ReadTarget(config, pg_db.dsn), None)
        reader.lsn = LSN
        try:
            for chunk in chunks:
                for mark_last in (False, True):
                    messages, count = reader.read_chunk(builder, chunk, read_at, None, mark_last, None)
                    expected = _expected(pg_db, builder, reader, chunk, mark_last, read_at)
                    assert count == len(expected), (fetch_size, chunk)
                    assert messages == expected, (fetch_size, chunk, mark_last)
        finally:
            reader.close()
            builder.close()
