"""The stats, sql and script templates, streaming runs that resume from their checkpoint, and bad input
ending as one clear `failed` line with a non-zero exit status."""

from __future__ import annotations

import datetime
import json
import random
import time
from collections import Counter

import pytest
from bson import json_util

from sparkjobs.errors import describe
from tests.spark.workload import EPOCH, Clock, Collection, create_topics, encode, key_id, oid, produce

pytestmark = pytest.mark.integration


def at(clock: Clock, seconds: int) -> None:
    clock.seconds, clock.inc = EPOCH + seconds, 0


def window_of(record) -> str:
    start = record.cluster_time.time // 60 * 60
    return datetime.datetime.fromtimestamp(start, datetime.UTC).replace(tzinfo=None).isoformat()


@pytest.fixture(scope="module")
def shop(stack):
    """Two collections written over three minutes; events in two topics."""
    clock = Clock()
    orders, users = Collection("shop", "orders", clock), Collection("shop", "users", clock)
    records = []
    at(clock, 0)
    records += [orders.insert({"_id": i, "qty": i}) for i in range(5)]
    records += [users.insert({"_id": oid(i), "name": f"u{i}"}) for i in range(3)]
    at(clock, 70)
    records += [orders.update(i, {"qty": 10 + i}) for i in range(3)]
    records += [users.update(oid(0), {"name": "zero"})]
    at(clock, 130)
    records += [orders.delete(4), users.delete(oid(2)), orders.insert({"_id": 9, "qty": 9})]
    prefix = f"spark.jobs.{oid(random.randrange(1 << 40))}"
    messages = encode(records, prefix)
    topics = sorted({m.topic for m in messages})
    create_topics(stack.kafka_bootstrap, topics)
    produce(stack.kafka_bootstrap, messages)
    expected = Counter((window_of(r), r.namespace.collection, r.operation.value) for r in records)
    return {"topics": topics, "expected": expected, "records": records, "prefix": prefix,
            "orders": orders.docs, "users": users.docs}


def args(stack, **more) -> dict:
    return {"bootstrap_servers": stack.kafka_bootstrap, **more}


# --- stats ------------------------------------------------------------------------------------------


def test_stats_counts_per_collection_op_and_window(run_job, shop, stack, tmp_path):
    code, lines = run_job("stats", args(stack, topics=shop["topics"], window="1 minute",
                                        output_path=str(tmp_path / "stats")))
    assert code == 0, lines[-1]
    result = lines[-1]
    columns = result["preview"]["columns"]
    assert columns == ["window_start", "window_end", "topic", "db", "collection", "op", "events"]
    got = Counter()
    for row in result["preview"]["rows"]:
        item = dict(zip(columns, row, strict=True))
        assert item["db"] == "shop" and item["topic"] == f"{shop['prefix']}.shop.{item['collection']}"
        got[(item["window_start"], item["collection"], item["op"])] += item["events"]
    assert got == shop["expected"]
    assert result["totals"] == {"c": 9, "u": 4, "d": 2}
    assert result["rows_in"] == 17  # 15 events and 2 tombstones
    assert result["rows_out"] == len(shop["expected"])


def test_stats_sliding_windows_and_tombstones(run_job, shop, stack):
    code, lines = run_job("stats", args(stack, topics=shop["topics"], window="2 minutes", slide="1 minute",
                                        include_tombstones=True))
    assert code == 0, lines[-1]
    totals = lines[-1]["totals"]
    assert totals["tombstone"] == 2 * 2  # each event falls into two sliding windows
    assert totals["c"] == 2 * 9 and lines[-1]["output_path"] is None


def test_topic_pattern_and_timestamp_bounds(run_job, shop, stack):
    pattern = shop["prefix"].replace(".", r"\.") + r"\.shop\..*"
    future = int(time.time() * 1000) + 3_600_000
    code, lines = run_job("stats", args(stack, topic_pattern=pattern, starting_timestamp=0, ending_timestamp=future))
    assert code == 0, lines[-1]
    assert lines[-1]["rows_in"] == 17 and sorted(lines[1]["topics"]) == shop["topics"]
    code, lines = run_job("stats", args(stack, topic_pattern=pattern, starting_timestamp=future))
    assert code == 0, lines[-1]
    assert lines[-1]["rows_in"] == 0 and lines[-1]["rows_out"] == 0
    code, lines = run_job("stats", args(stack, topic_pattern=r"no\.such\..*"))
    assert code == 1 and lines[-1]["error"] == r"no topic matches the pattern 'no\.such\..*'"


# --- streaming --------------------------------------------------------------------------------------


def test_streaming_jobs_resume_from_their_checkpoint(run_job, shop, stack, tmp_path, spark):
    """Run 1 reads what is there; more events arrive; run 2 reads only those; a batch replayed after a crash
    (its commit lost) is recognised and not counted twice."""
    clock = Clock()
    coll = Collection("live", "items", clock)
    at(clock, 0)
    first = [coll.insert({"_id": i, "v": 0, "tags": [1, 2]}) for i in range(6)]
    prefix = f"spark.stream.{oid(random.randrange(1 << 40))}"
    stage_messages = encode(first, prefix)
    topic = stage_messages[0].topic
    create_topics(stack.kafka_bootstrap, [topic], partitions=2)
    produce(stack.kafka_bootstrap, stage_messages)
    common = args(stack, topics=[topic], mode="stream", trigger="available_now")
    state_args = {**common, "output_path": str(tmp_path / "state"), "checkpoint_path": str(tmp_path / "ck-state")}
    stats_args = {**common, "output_path": str(tmp_path / "stats"), "checkpoint_path": str(tmp_path / "ck-stats")}

    code, lines = run_job("latest_state", state_args)
    assert code == 0, lines[-1]
    assert lines[-1]["rows_in"] == 6 and lines[-1]["rows_out"] == 6 and lines[-1]["batches"] == 1
    code, lines = run_job("stats", stats_args)
    assert code == 0 and lines[-1]["totals"] == {"c": 6}

    at(clock, 61)
    second = [coll.update(i, {"v": 1, "new.x": i}, truncate=[("tags", 1)]) for i in range(3)]
    second += [coll.delete(4), coll.insert({"_id": 7, "v": 7})]
    produce(stack.kafka_bootstrap, encode(second, prefix))

    code, lines = run_job("latest_state", state_args)
    assert code == 0, lines[-1]
    result = lines[-1]
    assert result["rows_in"] == 6 and result["rows_out"] == 6  # 3 updates, a delete and its tombstone, an insert
    state = {row.id: row for row in spark.read.parquet(result["output_path"]).collect()}
    assert {k for k, row in state.items() if not row.deleted} == {key_id(_id) for _id in coll.docs}
    for _id, document in coll.docs.items():
        assert json_util.loads(state[key_id(_id)].document) == document  # patches applied onto run 1's state
    assert state["4"].deleted

    code, lines = run_job("stats", stats_args)
    assert code == 0 and lines[-1]["totals"] == {"c": 7, "u": 3, "d": 1}

    # A crash after the result was written but before Spark recorded the batch: the batch runs again.
    commit_dir = tmp_path / "ck-stats" / "commits"
    commits = sorted((p for p in commit_dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    commits[-1].unlink()
    (commits[-1].parent / f".{commits[-1].name}.crc").unlink(missing_ok=True)
    code, lines = run_job("stats", stats_args)
    assert code == 0, lines[-1]
    assert lines[-1]["skipped_batches"] == 1 and lines[-1]["totals"] == {"c": 7, "u": 3, "d": 1}

    # A new checkpoint would start at batch 0 again and take the old versions for its own: refused.
    code, lines = run_job("stats", {**stats_args, "checkpoint_path": str(tmp_path / "ck-new")})
    assert code == 1 and "holds the results of another stream" in lines[-1]["error"]


# --- sql ----------------------------------------------------------------------------------------------


def test_sql_over_topic_views(run_job, shop, stack, tmp_path):
    orders, users = (t for t in shop["topics"])
    sql = """
        -- every topic is a view of parsed events, and <view>_latest its latest state
        WITH live_orders AS (SELECT * FROM orders_latest)
        SELECT o.op, count(*) AS n, max(o.collection) AS coll,
               (SELECT count(*) FROM live_orders) AS live, (SELECT count(*) FROM USERS_VIEW) AS u
        FROM orders o WHERE NOT o.is_tombstone GROUP BY o.op ORDER BY o.op;
    """.replace("USERS_VIEW", users.replace(".", "_"))
    code, lines = run_job("sql", args(stack, topics=[users], views={"orders": orders}, sql=sql,
                                      output_path=str(tmp_path / "sql")))
    assert code == 0, lines[-1]
    result = lines[-1]
    assert result["preview"]["columns"] == ["op", "n", "coll", "live", "u"]
    assert result["preview"]["rows"] == [["c", 6, "orders", 5, 6], ["d", 1, "orders", 5, 6], ["u", 3, "orders", 5, 6]]
    assert result["rows_out"] == 3 and (tmp_path / "sql").is_dir()
    views = next(line for line in lines if line.get("event") == "views")["views"]
    assert views == {"orders": orders, users.replace(".", "_"): users}


def test_sql_error_is_one_line(run_job, shop, stack):
    code, lines = run_job("sql", args(stack, topics=shop["topics"][:1], sql="SELECT nope FROM no_such_view"))
    assert code == 1
    assert lines[-1]["status"] == "failed"
    error = lines[-1]["error"]
    assert "TABLE_OR_VIEW_NOT_FOUND" in error and "no_such_view" in error and "\n" not in error
    code, lines = run_job("sql", args(stack, topics=shop["topics"][:1], sql="SELEC 1"))
    assert code == 1 and "PARSE_SYNTAX_ERROR" in lines[-1]["error"]


# --- script ---------------------------------------------------------------------------------------------


def test_script_runs_with_the_session_and_the_topic_reader(run_job, shop, stack, tmp_path):
    script = tmp_path / "count_orders.py"
    script.write_text(
        "events = read_events()\n"
        "emit(message='read', rows=events.count())\n"
        "state = latest_state(events)\n"
        "result = state.groupBy('collection').agg(F.count('*').alias('documents')).orderBy('collection')\n"
        "assert args['factor'] == 2\n"
    )
    code, lines = run_job("script", args(stack, topics=shop["topics"], script_path=str(script),
                                         script_args={"factor": 2}))
    assert code == 0, lines[-1]
    assert {"event": "script", "message": "read", "rows": 17} in lines
    assert lines[-1]["preview"]["rows"] == [["orders", len(shop["orders"])], ["users", len(shop["users"])]]


def test_script_that_raises(run_job, shop, stack, tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("x = 1\n\nraise ValueError('the data is not what I expected')\n")
    code, lines = run_job("script", args(stack, script_path=str(script)))
    assert code == 1
    assert lines[-1]["error"] == "script failed: ValueError: the data is not what I expected (line 3 of broken.py)"


# --- bad input ------------------------------------------------------------------------------------------


def test_unknown_topic(run_job, stack):
    started = time.monotonic()
    code, lines = run_job("stats", args(stack, topics=["no.such.topic.anywhere"]))
    assert code == 1 and lines[-1]["status"] == "failed"
    assert lines[-1]["error"] == "unknown topic: no.such.topic.anywhere"
    assert time.monotonic() - started < 10


def test_unreachable_kafka(run_job):
    code, lines = run_job("stats", {"topics": ["t"], "bootstrap_servers": "127.0.0.1:1", "kafka_timeout_s": 2})
    assert code == 1 and "Kafka at 127.0.0.1:1 did not answer within 2s" in lines[-1]["error"]


def test_missing_jar(monkeypatch, stack):
    import io

    from sparkjobs import run
    from tests.spark.workload import json_lines

    monkeypatch.setenv("SPARK_KAFKA_JARS", "/nowhere/spark-sql-kafka-0-10.jar")
    out = io.StringIO()
    code = run.main(["sql", "--args-json", json.dumps({"sql": "SELECT 1"})], stdout=out)
    (*_, last) = json_lines(out.getvalue())
    assert code == 1
    assert last["error"] == "missing jar: /nowhere/spark-sql-kafka-0-10.jar (Spark's Kafka source cannot be loaded)"


def test_kafka_source_missing_under_spark_submit_is_explained():
    error = RuntimeError("[DATA_SOURCE_NOT_FOUND] Failed to find data source: kafka. Please find packages at ...")
    assert describe(error).startswith("Spark's Kafka source (spark-sql-kafka-0-10) is not on the classpath")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nope"], "unknown template 'nope'"),
        (["sql", "--args-json", "{not json"], "the job arguments are not valid JSON"),
        (["latest_state", "--args-json", '{"topics": ["t"]}'], "`output_path` is required"),
        (["stats", "--args-json", '{"topics": ["t"], "mode": "stream", "output_path": "/tmp/x"}'],
         "needs `checkpoint_path`"),
        (["stats", "--args-json", '{"topics": ["t"], "window": "soon"}'], "`window` must be an interval"),
        (["script", "--args-json", '{"script_path": "/no/such/script.py"}'], "script not found"),
    ],
)
def test_invalid_arguments_exit_2(argv, message):
    import io

    from sparkjobs import run
    from tests.spark.workload import json_lines

    out = io.StringIO()
    assert run.main(argv, stdout=out) == 2
    last = json_lines(out.getvalue())[-1]
    assert last["status"] == "failed" and last["error_type"] == "invalid_arguments" and message in last["error"]


def test_result_file_keeps_the_outcome(tmp_path):
    import io

    from sparkjobs import run

    result = tmp_path / "result.json"
    assert run.main(["nope", "--result-file", str(result)], stdout=io.StringIO()) == 2
    assert json.loads(result.read_text())["error"].startswith("unknown template")
    assert run.main(["sql", "--args-json", "{}", "--result-file", str(result)], stdout=io.StringIO()) == 2
    assert json.loads(result.read_text())["status"] == "failed"
