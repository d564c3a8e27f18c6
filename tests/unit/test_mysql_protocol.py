"""MySQL-only parts on captured server answers: GTID set text, SHOW BINARY LOG STATUS (8.4) vs SHOW MASTER STATUS,
and the source checks' rules."""

from __future__ import annotations

import pymysql
import pytest

from connectors.mysql.checks import SourceFacts, evaluate, failures, granted_privileges
from connectors.mysql.gtid import GtidFormatError, MariaGtidPosition, MysqlGtidSet
from connectors.mysql.status import BinlogDisabled, BinlogStatus, bytes_behind, show_binlog_status

A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
B = "4f4f4f4f-71ca-11e1-9e33-c80aa9429562"


def test_mysql_gtid_set_parse_merge_and_format():
    text = f"{B}:1-3,\n{A.upper()}:7:1-5:6"  # as Executed_Gtid_Set prints it: newlines, any case, any order
    gtids = MysqlGtidSet.parse(text)
    assert str(gtids) == f"{A}:1-7,{B}:1-3"
    assert str(gtids.add(f"{A}:9")) == f"{A}:1-7:9,{B}:1-3"
    assert str(gtids.add(f"{A}:8")) == f"{A}:1-8,{B}:1-3"
    assert str(gtids.union(MysqlGtidSet.parse(f"{B}:4-10,{A}:3"))) == f"{A}:1-7,{B}:1-10"
    assert gtids.contains(f"{A}:5") and gtids.contains(f"{A}:2-4") and not gtids.contains(f"{A}:8")
    assert not MysqlGtidSet.parse("") and str(MysqlGtidSet.parse("")) == ""


def test_mysql_tagged_gtids():
    gtids = MysqlGtidSet.parse(f"{A}:1-5:blue:1-2,{A}:blue:3")
    assert str(gtids) == f"{A}:1-5:blue:1-3"
    assert gtids.contains(f"{A}:blue:3") and not gtids.contains(f"{A}:red:1")


@pytest.mark.parametrize("bad", ["not-a-uuid:1-5", f"{A}", f"{A}:5-3", f"{A}:0-2", f"{A}:1-x-2"])
def test_mysql_gtid_errors_name_the_format(bad):
    with pytest.raises(GtidFormatError):
        MysqlGtidSet.parse(bad)


def test_mariadb_gtid_position():
    position = MariaGtidPosition.parse("1-2-7,0-1-42")
    assert str(position) == "0-1-42,1-2-7"
    assert str(position.advance("0-3-43")) == "0-3-43,1-2-7"
    assert str(position.advance("2-1-1")) == "0-1-42,1-2-7,2-1-1"
    assert str(position.merge(MariaGtidPosition.parse("0-1-40,1-2-9"))) == "0-1-42,1-2-9"
    assert position.contains("0-1-41") and not position.contains("0-1-43") and not position.contains("5-1-1")
    with pytest.raises(GtidFormatError):
        MariaGtidPosition.parse("0-1-1,0-1-2")
    with pytest.raises(GtidFormatError):
        MariaGtidPosition.parse("0-1")


class CapturedServer:
    """Answers statements with result sets captured from servers (description tuples as pymysql gives them)."""

    def __init__(self, answers: dict):
        self.answers, self.executed = answers, []
        self.description, self._rows = None, []

    def execute(self, statement, args=None):
        self.executed.append(statement)
        answer = self.answers[statement]
        if isinstance(answer, Exception):
            raise answer
        columns, self._rows = answer
        self.description = [(name, 253, None, 0, 0, 0, True) for name in columns]

    def fetchone(self):
        return self._rows[0] if self._rows else None


PARSE_ERROR = pymysql.err.ProgrammingError(1064, "You have an error in your SQL syntax; ... near 'MASTER STATUS'")
MASTER_COLUMNS = ("File", "Position", "Binlog_Do_DB", "Binlog_Ignore_DB")


def test_mysql_84_answers_show_binary_log_status():
    server = CapturedServer({
        "SHOW BINARY LOG STATUS": (MASTER_COLUMNS + ("Executed_Gtid_Set",),
                                   [("binlog.000003", 1575, "", "", f"{A}:1-5,\n{B}:1-3")]),
        "SHOW MASTER STATUS": PARSE_ERROR,  # removed in 8.4
    })
    status = show_binlog_status(server)
    assert (status.file, status.position, status.gtids) == ("binlog.000003", 1575, f"{A}:1-5,{B}:1-3")
    assert server.executed == ["SHOW BINARY LOG STATUS"]


def test_older_servers_fall_back_to_show_master_status():
    mysql80 = CapturedServer({
        "SHOW BINARY LOG STATUS": PARSE_ERROR,
        "SHOW MASTER STATUS": (MASTER_COLUMNS + ("Executed_Gtid_Set",), [("mysql-bin.000001", 157, "", "", "")]),
    })
    status = show_binlog_status(mysql80)
    assert (status.file, status.position, status.gtids, status.statement) == (
        "mysql-bin.000001", 157, "", "SHOW MASTER STATUS")
    mariadb = CapturedServer({
        "SHOW BINARY LOG STATUS": PARSE_ERROR,
        "SHOW MASTER STATUS": (MASTER_COLUMNS, [("mariadb-bin.000002", 1051, "", "")]),
        "SELECT @@GLOBAL.gtid_binlog_pos": (("@@GLOBAL.gtid_binlog_pos",), [("0-1-8",)]),
    })
    assert show_binlog_status(mariadb).gtids == "0-1-8"


def test_binlog_off_is_reported():
    server = CapturedServer({"SHOW BINARY LOG STATUS": PARSE_ERROR, "SHOW MASTER STATUS": (MASTER_COLUMNS, [])})
    with pytest.raises(BinlogDisabled, match="log_bin"):
        show_binlog_status(server)


def test_other_errors_are_not_swallowed():
    denied = pymysql.err.OperationalError(1227, "Access denied; you need the REPLICATION CLIENT privilege")
    with pytest.raises(pymysql.err.OperationalError):
        show_binlog_status(CapturedServer({"SHOW BINARY LOG STATUS": denied}))


GOOD_VARIABLES = {"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL"}
MYSQL_GRANTS = ("GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO `cdc`@`%`",)


def test_check_rules_on_a_good_mysql():
    facts = SourceFacts("8.4.2", GOOD_VARIABLES, MYSQL_GRANTS, "cdc@%")
    assert failures(evaluate(facts)) == []


def test_each_failing_rule_says_how_to_fix_it():
    facts = SourceFacts("8.0.36", {"log_bin": "OFF", "binlog_format": "MIXED", "binlog_row_image": "MINIMAL"},
                        ("GRANT USAGE ON *.* TO `cdc`@`%`",), "cdc@%")
    failed = {r.name: r for r in failures(evaluate(facts))}
    assert set(failed) == {"log_bin", "binlog_format", "binlog_row_image", "binlog_row_metadata",
                           "privilege REPLICATION SLAVE", "privilege REPLICATION CLIENT", "privilege SELECT",
                           "privilege RELOAD or LOCK TABLES"}
    assert all(r.fix for r in failed.values())
    assert "upgrade" in failed["binlog_row_metadata"].fix
    assert "RELOAD" in failed["privilege RELOAD or LOCK TABLES"].fix
    relaxed = {r.name for r in failures(evaluate(facts, locking_mode="none"))}
    assert "privilege RELOAD or LOCK TABLES" not in relaxed


def test_grant_parsing():
    grants = ("GRANT ALL PRIVILEGES ON `app`.* TO `u`@`%`", "GRANT SELECT (a, b), INSERT ON `app`.`t` TO `u`@`%`",
              "GRANT `role1` TO `u`@`%`", "GRANT BINLOG MONITOR, REPLICATION SLAVE ON *.* TO `u`@`%`")
    privileges = granted_privileges(grants)
    assert privileges["SELECT"] == {"`app`.`t`"}
    assert privileges["BINLOG MONITOR"] == {"*.*"}
    facts = SourceFacts("10.11.6-MariaDB", GOOD_VARIABLES, grants, "u@%")
    assert {r.name for r in failures(evaluate(facts))} == set()  # SELECT on one table only: reported, not failed


def test_binlog_bytes_behind_counts_across_files_and_knows_when_a_file_is_gone():
    files = [("mysql-bin.000007", 1_000), ("mysql-bin.000008", 5_000), ("mysql-bin.000009", 700)]
    end = BinlogStatus("mysql-bin.000009", 700, "", "SHOW MASTER STATUS")
    assert bytes_behind(files, "mysql-bin.000009", 300, end) == 400
    assert bytes_behind(files, "mysql-bin.000009", 700, end) == 0
    assert bytes_behind(files, "mysql-bin.000007", 400, end) == 600 + 5_000 + 700
    assert bytes_behind(files, "mysql-bin.000003", 4, end) is None  # purged: not a number to trust
    assert bytes_behind(files, None, None, end) is None
