"""Verify's reads of a MySQL / MariaDB server (connectors/core/verify.py, docs/verify.md).

A view is the snapshot reader's own consistent snapshot (`START TRANSACTION WITH CONSISTENT SNAPSHOT` and the
binlog position it matches, with its GTID position): the tables are planned and read in key-ordered chunks in it,
each row built into the snapshot's event. A streamed event is covered when its transaction starts before that
position (binlog file and offset, else its GTID); a snapshot event when it was read at or before it. The connector
has captured the whole view once its committed binlog position reaches the view's, or its GTID position holds
every GTID of the view's.
"""

from __future__ import annotations

from connectors.core.snapshot.chunks import Chunk, Plan
from connectors.core.verify import OpenedPartition
from connectors.core.verify_events import SourceRow, key_text, read_event, rows_of_messages
from connectors.mysql.config import MySqlConfig
from connectors.mysql.envelope import topic_name
from connectors.mysql.gtid import MariaGtidPosition
from connectors.mysql.overlap import BinlogPlace, ReadPoint
from connectors.mysql.position import MySqlPosition
from connectors.mysql.snapshot_reader import MySqlSnapshotReader
from connectors.mysql.source import MySqlSource, ServerSource


class MySqlView:
    placeholder = None
    read_event = staticmethod(read_event)
    read_key = staticmethod(key_text)
    runs_ahead = False  # an event carries the row as its own change left it

    def __init__(self, config: MySqlConfig, server: ServerSource):
        self.config = config
        self._reader = MySqlSnapshotReader(config)
        start = self._reader.capture_start()
        self.read_point = ReadPoint(start.fields["file"], int(start.fields["pos"]), start.fields["gtids"] or "")
        self._read_at = start.read_at
        self.position = {"file": self.read_point.file, "pos": self.read_point.pos, "gtids": self.read_point.gtids}
        self._builder = server.event_builder()

    def tables(self) -> list[str]:
        return self._reader.collections()

    def topic(self, table: str) -> str:
        database, _, name = table.partition(".")
        return topic_name(self.config.topic_prefix, database, name)

    def plan(self, table: str, chunk_size: int) -> Plan:
        return self._reader.plan(table, chunk_size)

    def row_bytes(self, table: str) -> int:
        return self._reader.row_bytes(table)

    def read_rows(self, chunk: Chunk) -> list[SourceRow]:
        messages, _ = self._reader.read_chunk(self._builder, chunk, self._read_at, None, False, None)
        return rows_of_messages(messages, self.topic(chunk.namespace))

    def covers(self, source: dict) -> bool:
        file, pos, gtid = source.get("file") or None, source.get("pos"), source.get("gtid") or None
        if source.get("snapshot", "false") != "false" and file is not None and pos is not None:
            return BinlogPlace.of(file, int(pos)) <= self.read_point.place
        return self.read_point.includes(file, int(pos) if pos is not None else None, gtid)

    def reached(self, position: MySqlPosition) -> bool:
        binlog = position.binlog
        if binlog.file and binlog.pos is not None and BinlogPlace.of(binlog.file, binlog.pos) >= self.read_point.place:
            return True
        if binlog.gtids and self.read_point.gtids and ":" not in self.read_point.gtids:
            done = MariaGtidPosition.parse(binlog.gtids).domains()
            return all(g.domain in done and done[g.domain].sequence >= g.sequence
                       for g in MariaGtidPosition.parse(self.read_point.gtids).last)
        return False

    def close(self) -> None:
        self._reader.close()


def partitions(config: MySqlConfig) -> list[OpenedPartition]:
    source = MySqlSource(config)
    return [OpenedPartition(config, source.open(source.partitions()[0]), MySqlView)]
