"""Where the server's binlog ends now: `SHOW BINARY LOG STATUS` (MySQL 8.2+, the only form in 8.4) or
`SHOW MASTER STATUS` (MariaDB, MySQL before 8.2), plus the GTID position in the flavour's own form; and how many
binlog bytes lie between a captured position and that end (`SHOW BINARY LOGS`)."""

from __future__ import annotations

from dataclasses import dataclass

import pymysql

from connectors import ConnectorError

PARSE_ERROR = 1064  # what a server answers to a statement it does not know


class BinlogDisabled(ConnectorError):
    pass


@dataclass(frozen=True)
class BinlogStatus:
    file: str
    position: int
    gtids: str  # MySQL: Executed_Gtid_Set; MariaDB: @@gtid_binlog_pos; "" without GTIDs
    statement: str  # which statement answered


def show_binlog_status(cursor) -> BinlogStatus:
    row, statement = None, "SHOW BINARY LOG STATUS"
    try:
        cursor.execute(statement)
        row = cursor.fetchone()
    except pymysql.err.ProgrammingError as error:
        if not error.args or error.args[0] != PARSE_ERROR:
            raise
        statement = "SHOW MASTER STATUS"
        cursor.execute(statement)
        row = cursor.fetchone()
    if row is None:
        raise BinlogDisabled(
            "the server's binary log is off; start it with log_bin (and binlog_format=ROW, binlog_row_image=FULL, "
            "binlog_row_metadata=FULL) in its configuration"
        )
    names = [column[0].lower() for column in cursor.description]
    values = dict(zip(names, row, strict=False))
    if "executed_gtid_set" in values:
        gtids = (values["executed_gtid_set"] or "").replace("\n", "")
    else:
        cursor.execute("SELECT @@GLOBAL.gtid_binlog_pos")
        gtids = cursor.fetchone()[0] or ""
    return BinlogStatus(file=values["file"], position=int(values["position"]), gtids=gtids, statement=statement)


def binlog_files(cursor) -> list[tuple[str, int]]:
    """(file, size in bytes) of every binlog the server keeps, oldest first."""
    cursor.execute("SHOW BINARY LOGS")
    return [(row[0], int(row[1])) for row in cursor.fetchall()]


def bytes_behind(files: list[tuple[str, int]], file: str | None, pos: int | None, end: BinlogStatus) -> int | None:
    """Binlog bytes written after (`file`, `pos`) up to the server's end; None when `file` is no longer kept
    (purged) or unknown."""
    if not file or pos is None:
        return None
    if file == end.file:
        return max(0, end.position - pos)
    names = [name for name, _ in files]
    if file not in names or end.file not in names:
        return None
    start, stop = names.index(file), names.index(end.file)
    if start > stop:
        return None
    return (files[start][1] - pos) + sum(size for _, size in files[start + 1:stop]) + end.position
