"""sparkjobs.delta_log on tables delta-spark wrote with the Delta sync's own MERGE: its versions, operations, rows
affected, userMetadata and txn match Delta's own history; its live row count matches a Spark count, from the
version's checksum or, without one, from replaying the commits; and its reads stay within their limits. The
`delta_query` template reads such a table at its latest version and, with VERSION AS OF, at an older one, and
refuses what is no read-only query over the job's tables."""

from __future__ import annotations

import json
import os

import pytest

from sparkjobs import delta_log, delta_sync

POSITION_ROW = "_cdc_source_ts_ms long, _cdc_ord long, _cdc_txn_order long, _cdc_partition long, _cdc_offset long"
SCHEMA = f"_cdc_key string, _cdc_op string, {POSITION_ROW}, _cdc_deleted boolean, document string"


def _batch(spark, changes: list[tuple[str, str, int]]):
    """(key, op, offset) -> rows as `delta_sync` merges them: c/u write a document, d deletes."""
    rows = [(key, op, offset, 0, 0, 0, offset, op == "d", json.dumps({"_id": key, "at": offset}))
            for key, op, offset in changes]
    return spark.createDataFrame(rows, SCHEMA)


def _merge(spark, path, changes, batch_id):
    from pyspark.sql.types import StringType

    metadata = json.dumps({"topic": "shop.orders", "batch_id": batch_id,
                           "offsets": {"0": max(offset for _, _, offset in changes)}})
    return delta_sync.merge_topic(spark, path, _batch(spark, changes), {"document": StringType()}, soft=False,
                                  txn=("app-1", batch_id, metadata))


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    """Version 0: the table created; 1: 5 inserts; 2: 2 updates, 1 delete, 2 inserts; 3: 1 delete."""
    session = spark.newSession()
    path = str(tmp_path_factory.mktemp("delta-log") / "shop_orders")
    assert _merge(session, path, [(f"k{n}", "c", n) for n in range(5)], 0) == 5
    assert _merge(session, path, [("k0", "u", 5), ("k1", "u", 6), ("k2", "d", 7), ("k5", "c", 8),
                                  ("k6", "c", 9)], 1) == 5
    assert _merge(session, path, [("k3", "d", 10)], 2) == 1
    return session, path


def test_versions_operations_and_metadata_match_delta_history(table):
    from delta.tables import DeltaTable

    spark, path = table
    history = {row["version"]: row for row in DeltaTable.forPath(spark, path).history().collect()}
    log = delta_log.read_table(path)
    assert log.version == max(history) == 3
    assert [commit.version for commit in log.commits] == [3, 2, 1, 0]
    for commit in log.commits:
        delta = history[commit.version]
        assert commit.operation == delta["operation"]
        assert commit.timestamp_ms == int(delta["timestamp"].timestamp() * 1000)
        assert commit.metrics == dict(delta["operationMetrics"] or {})
    affected = {commit.version: commit.rows_affected for commit in log.commits}
    assert affected[1] == 5 and affected[2] == 5 and affected[3] == 1
    newest = log.commits[0]
    assert newest.user_metadata == {"topic": "shop.orders", "batch_id": 2, "offsets": {"0": 10}}
    assert newest.txn == ("app-1", 2)
    commit, offsets = log.last_user_metadata("offsets")
    assert (commit.version, offsets) == (3, {"0": 10})


def test_live_rows_from_the_checksum_and_from_replaying_the_commits(table, tmp_path):
    import shutil

    spark, path = table
    live = spark.read.format("delta").load(path).count()
    assert live == 5
    assert delta_log.read_table(path).rows == live
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    for name in os.listdir(copy / "_delta_log"):
        if name.endswith(".crc"):
            os.remove(copy / "_delta_log" / name)
    assert delta_log.read_table(str(copy)).rows == live  # replayed: every commit is there since version 0
    os.remove(copy / "_delta_log" / f"{0:020d}.json")  # as if folded into a checkpoint and cleaned up
    assert delta_log.read_table(str(copy)).rows is None


def _checkpointed(session, path: str, properties: str) -> int:
    """A table of 6 rows given `properties` (checkpoint settings), then 5 batches that delete, insert and update;
    returns its live row count as Spark reads it."""
    _merge(session, path, [(f"k{n}", "c", n) for n in range(6)], 0)
    session.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({properties})")
    for batch in range(1, 6):
        _merge(session, path, [(f"k{batch}", "d", 10 * batch), (f"n{batch}", "c", 10 * batch + 1),
                               ("k0", "u", 10 * batch + 2)], batch)
    live = session.read.format("delta").load(path).count()
    return live


def test_live_rows_from_a_checkpoint_and_the_commits_after_it(spark, tmp_path):
    """A table whose early commits were folded into checkpoints and cleaned up, without checksums (as writers
    other than delta-spark leave it): the rows come from the newest checkpoint and the commits after it."""
    import shutil

    session = spark.newSession()
    path = str(tmp_path / "checkpointed")
    live = _checkpointed(session, path, "'delta.checkpointInterval' = '3'")
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    log_dir = copy / "_delta_log"
    checkpoints = sorted(name for name in os.listdir(log_dir) if ".checkpoint." in name)
    assert checkpoints, os.listdir(log_dir)
    newest = int(checkpoints[-1][:20])
    for name in os.listdir(log_dir):
        if name.endswith(".crc") or (name.endswith(".json") and int(name[:20]) <= newest):
            os.remove(log_dir / name)
    log = delta_log.read_table(str(copy))
    assert log.version > newest
    assert log.rows == live == 6


@pytest.mark.parametrize("checkpoint_format", ["json", "parquet"])
def test_live_rows_from_a_v2_checkpoint_and_its_sidecars(spark, tmp_path, checkpoint_format):
    """A table with V2 checkpoints (delta.checkpointPolicy = v2: a top-level file named with a UUID whose adds sit
    in sidecar Parquet files), its early commits and checksums removed: the rows come from that checkpoint, its
    sidecars and the commits after it."""
    import shutil

    session = spark.newSession()
    session.conf.set("spark.databricks.delta.checkpointV2.topLevelFileFormat", checkpoint_format)
    path = str(tmp_path / "v2")
    live = _checkpointed(session, path, "'delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '3'")
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    log_dir = copy / "_delta_log"
    top_level = sorted(name for name in os.listdir(log_dir)
                       if delta_log.V2_CHECKPOINT_FILE.match(name) and name.endswith(checkpoint_format))
    assert top_level and os.listdir(log_dir / "_sidecars"), os.listdir(log_dir)
    newest = int(top_level[-1][:20])
    for name in os.listdir(log_dir):
        if name.endswith(".crc") or (name.endswith(".json") and delta_log.COMMIT_FILE.match(name)
                                     and int(name[:20]) <= newest):
            os.remove(log_dir / name)
    log = delta_log.read_table(str(copy))
    assert log.version > newest
    assert log.rows == live == 6


def test_reads_stay_within_their_limits(table, tmp_path):
    _, path = table
    two = delta_log.read_table(path, limit=2)
    assert [commit.version for commit in two.commits] == [3, 2] and two.older == 2
    newest = os.path.getsize(os.path.join(path, "_delta_log", f"{3:020d}.json"))
    capped = delta_log.read_table(path, max_bytes=newest)
    assert [commit.version for commit in capped.commits] == [3] and capped.older == 3
    assert capped.rows is None  # the checksum alone is larger than the budget
    assert delta_log.read_table(str(tmp_path)) is None
    assert not delta_log.is_delta_table(str(tmp_path)) and delta_log.is_delta_table(path)


def test_delta_query_reads_the_latest_and_an_older_version(table, run_job):
    _, path = table
    tables = {"shop_orders": path}
    code, lines = run_job("delta_query", {"tables": tables, "sql": "SELECT _cdc_key FROM shop_orders ORDER BY 1"})
    assert code == 0, lines[-1]
    assert [row[0] for row in lines[-1]["preview"]["rows"]] == ["k0", "k1", "k4", "k5", "k6"]
    code, lines = run_job("delta_query", {"tables": tables,
                                          "sql": "SELECT _cdc_key FROM shop_orders VERSION AS OF 1 ORDER BY 1"})
    assert code == 0, lines[-1]
    assert [row[0] for row in lines[-1]["preview"]["rows"]] == ["k0", "k1", "k2", "k3", "k4"]
    assert os.path.isdir(os.path.join(path, "_delta_log"))  # the table, dropped from the catalog, keeps its files


@pytest.mark.parametrize(("sql", "reason"), [
    ("SELECT * FROM delta.`{path}`", "not one of the job's views"),
    ("SELECT * FROM parquet.`{path}` VERSION AS OF 1", "not one of the job's views"),
    ("DELETE FROM shop_orders WHERE true", "is a command"),
    ("SELECT * FROM shop_orders; DROP TABLE shop_orders", "statements"),
    ("SELECT reflect('java.lang.System', 'exit', 0) FROM shop_orders", "reflect"),
    ("SELECT * FROM other_table", "cannot be found"),
])
def test_delta_query_refuses_what_is_no_read_only_query_over_the_tables(table, run_job, sql, reason):
    _, path = table
    code, lines = run_job("delta_query", {"tables": {"shop_orders": path}, "sql": sql.format(path=path)})
    assert code != 0 and lines[-1]["status"] == "failed"
    assert reason in lines[-1]["error"], lines[-1]["error"]
    assert delta_log.read_table(path).version == 3
