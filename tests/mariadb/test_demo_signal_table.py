"""The demo's MariaDB connector can take ad-hoc snapshots: database `shop` has Debezium's signal table, the
connector names it and its user may write the watermarks (on a server of the test session's own)."""

from __future__ import annotations

from connectors.mysql.config import MySqlConfig
from connectors.mysql.connection import connect
from connectors.mysql.incremental import check_signal_table
from devstack import demo_sql


def dsn(settings) -> str:
    return f"mysql://{settings.user}:{settings.password}@{settings.host}:{settings.port}/"


def test_demo_connector_has_a_signal_table_its_user_may_write(own_mariadb):
    demo_sql.prepare_mariadb(dsn(own_mariadb.admin), dsn(own_mariadb.cdc))
    demo_sql.prepare_mariadb(dsn(own_mariadb.admin), dsn(own_mariadb.cdc))  # a second demo start changes nothing
    config = MySqlConfig.from_properties(demo_sql.mariadb_properties("demo-mariadb", cdc_dsn=dsn(own_mariadb.cdc)))
    assert config.signal_data_collection == "shop.dbz_signal"
    assert check_signal_table(config) is None
    connection = connect(own_mariadb.cdc)
    try:
        with connection.cursor() as cursor:  # what a watermark does
            cursor.execute("INSERT INTO shop.dbz_signal (id, type, data) VALUES ('w-1', 'snapshot-window-open', '')")
            cursor.execute("DELETE FROM shop.dbz_signal WHERE id = 'w-1'")
    finally:
        connection.close()
