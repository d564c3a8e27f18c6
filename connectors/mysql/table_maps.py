"""Table map events decoded once per table definition, not once per transaction.

The server writes a table map event before the rows events of each transaction (each statement, for a table first
used in it). python-mysql-replication decodes every one of them in full (its columns, its optional metadata: the
names, charsets, key, enum and set values); with transactions of one row, that was about 40 % of the binlog reader's
CPU. A table map whose bytes (table id included) are those of one the same stream decoded before (a stream's reading
options do not change) decodes to the same table: its decoded fields are taken from that one, and only the event's
own fields (its header, its packet, the checksum check) are read. The decoded columns are then the same objects as
last time, which the reader's schema cache (binlog.BinlogReader._schema_of) recognises by identity.

Installed by connectors.mysql.binlog (as its other adjustments of the library). The decoded maps are kept on the
stream's control connection (one per stream, so a reopened stream starts afresh); `enabled = False` (the tests'
comparison) brings the library's own decoding back.
"""

from __future__ import annotations

from pymysqlreplication.event import BinLogEvent
from pymysqlreplication.row_event import TableMapEvent

enabled = True
MAX_DECODED = 512  # table definitions kept per stream; past that its cache starts again
HEADER = 20  # the OK byte and the event header, read before the event's own bytes
# set by BinLogEvent.__init__ from the event at hand: never taken from an earlier event
EVENT_FIELDS = frozenset({"packet", "table_map", "event_type", "timestamp", "event_size", "_is_event_valid",
                          "_processed", "complete"})
_library_init = TableMapEvent.__init__


def _init(self, from_packet, event_size, table_map, ctl_connection, **kwargs) -> None:
    decoded = getattr(ctl_connection, "cdc_table_maps", None) if enabled else None
    if decoded is None:
        if enabled:
            decoded = ctl_connection.cdc_table_maps = {}
        else:
            _library_init(self, from_packet, event_size, table_map, ctl_connection, **kwargs)
            return
    data = from_packet.packet.get_all_data()
    body = bytes(data[HEADER:HEADER + event_size])
    fields = decoded.get(body)
    if fields is None:
        _library_init(self, from_packet, event_size, table_map, ctl_connection, **kwargs)
        if self._processed:  # else filtered out (its schema or table): nothing was decoded
            if len(decoded) >= MAX_DECODED:
                decoded.clear()
            decoded[body] = {name: value for name, value in vars(self).items() if name not in EVENT_FIELDS}
        return
    BinLogEvent.__init__(self, from_packet, event_size, table_map, ctl_connection, **kwargs)
    vars(self).update(fields)
    table_map[self.table_id] = self.table_obj


TableMapEvent.__init__ = _init
