"""Reading a test's binlog changes up to the end the server has now."""

from __future__ import annotations

from connectors.mysql.binlog import BinlogPosition, BinlogReader, Heartbeat
from connectors.mysql.connection import connect
from connectors.mysql.status import show_binlog_status


def binlog_status(mariadb):
    """Where the test server's binlog ends now (file, position, GTIDs)."""
    connection = connect(mariadb.admin)
    try:
        with connection.cursor() as cursor:
            return show_binlog_status(cursor)
    finally:
        connection.close()


def read_to_end(settings, server_id: int, start: BinlogPosition, database: str, **options) -> list:
    """Every item after `start` (of `database`) the binlog holds now: a blocking read that ends at the server's first
    heartbeat, which it sends only once it has sent everything.

    Not a non-blocking dump: the server closes that connection the moment it has sent the end, and over TCP the
    close can reset the connection before the client has read what was sent (on one machine ~2,200 of 3,200 events
    were read and the rest lost, every time, while a Unix socket read them all)."""
    reader = BinlogReader(settings, server_id=server_id, start=start, only_schemas=[database], heartbeat_seconds=0.2,
                          **options)
    items = []
    try:
        for item in reader:
            if isinstance(item, Heartbeat):
                break
            items.append(item)
    finally:
        reader.close()
    return items
