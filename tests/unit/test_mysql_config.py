"""The MySQL/MariaDB connector's properties: Debezium's names, every invalid value refused with its property named,
the password never echoed; table/column/GTID filters and message.key.columns."""

from __future__ import annotations

import pytest

from connectors.config.types import ConfigError
from connectors.mysql.config import MySqlConfig

BASE = {"name": "m1", "database.hostname": "db", "database.user": "cdc", "database.password": "s3cret",
        "database.server.id": "5400", "topic.prefix": "m1"}


def problems(**extra) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        MySqlConfig.from_properties({**BASE, **extra})
    return {p.property: p.message for p in caught.value.problems}


def test_defaults_are_debeziums():
    config = MySqlConfig.from_properties(BASE)
    assert (config.port, config.snapshot_mode, config.snapshot_locking_mode) == (3306, "initial", "minimal")
    assert config.include_schema_changes and config.tombstones_on_delete and config.skipped_operations == ("t",)
    assert config.mariadb and config.errors_topic_name == "m1.errors"
    assert config.heartbeat_topic_name == "__debezium-heartbeat.m1"
    assert config.snapshot_lock_timeout_ms == 10_000


@pytest.mark.parametrize(("prop", "value"), [
    ("database.port", "x"), ("database.port", "70000"), ("database.server.id", "0"), ("snapshot.mode", "sometimes"),
    ("snapshot.locking.mode", "extended"), ("decimal.handling.mode", "float"), ("time.precision.mode", "nano"),
    ("bigint.unsigned.handling.mode", "big"), ("binary.handling.mode", "raw"), ("skipped.operations", "x"),
    ("tombstones.on.delete", "maybe"), ("max.batch.size", "0"), ("table.include.list", "a[("),
    ("message.key.columns", "db.t"), ("heartbeat.interval.ms", "-1"), ("topic.prefix", "bad topic"),
    ("provide.transaction.metadata", "maybe"), ("topic.transaction", "bad topic"), ("no.such.property", "1"),
    ("snapshot.lock.timeout.ms", "0"),
])
def test_invalid_values_name_their_property(prop, value):
    found = problems(**{prop: value})
    assert prop in found and prop in found[prop]


def test_required_and_exclusive_and_secret():
    found = problems(**{"database.hostname": "", "table.include.list": "a.b", "table.exclude.list": "a.c"})
    assert "database.hostname" in found and "table.exclude.list" in found
    with pytest.raises(ConfigError) as caught:
        MySqlConfig.from_properties({**BASE, "database.port": "nope"})
    assert "s3cret" not in str(caught.value)
    assert "s3cret" not in repr(MySqlConfig.from_properties(BASE))


def test_filters_keys_and_gtid_sources():
    config = MySqlConfig.from_properties({**BASE, "database.include.list": "shop",
                                          "table.exclude.list": r"shop\.tmp_.*",
                                          "column.exclude.list": r"shop\.users\.password",
                                          "message.key.columns": r"shop\.orders:customer,id",
                                          "gtid.source.includes": "0-1"})
    assert config.captures_table("shop", "orders") and not config.captures_table("shop", "tmp_x")
    assert not config.captures_table("other", "orders")
    assert not config.captures_column("shop", "users", "password") and config.captures_column("shop", "users", "name")
    assert config.key_columns("shop", "orders") == ("customer", "id") and config.key_columns("shop", "x") is None
    assert config.captures_gtid("0-1-42") and not config.captures_gtid("0-2-42") and config.captures_gtid(None)
    mysql = MySqlConfig.from_properties({**BASE, "gtid.source.excludes": "3e11fa47-71ca-11e1-9e33-c80aa9429562"})
    assert not mysql.captures_gtid("3e11fa47-71ca-11e1-9e33-c80aa9429562:23")
    assert mysql.captures_gtid("aaaaaaaa-71ca-11e1-9e33-c80aa9429562:23")
