"""The `sql` template runs one read-only query over the job's views and nothing else (sparkjobs/sqlcheck.py).

A corpus of escape attempts (the statements an audit used to write files, read the encryption key and call Java,
and the classics) goes through the job as a user would send it: each must end `failed` with exit status 2 and a
message naming the rule, and leave nothing behind (no directory written, no view, function, cache or setting left in
the session). The same corpus goes through `check_query` alone, so the parser-based check is shown to refuse each
one without the text pre-check in front of it. Legitimate queries (joins, aggregates, window functions, CTEs,
unions over the registered views) still run and give the right rows.
"""

from __future__ import annotations

import json
import random

import pytest

from sparkjobs import sqlcheck
from tests.spark.workload import Clock, Collection, create_topics, encode, oid, produce

pytestmark = pytest.mark.integration

SECRET = "the-encryption-key-3f9c"
VIEWS = ["orders", "users", "orders_latest", "users_latest", "cdc_events"]


@pytest.fixture(scope="module")
def topics(stack):
    clock = Clock()
    orders, users = Collection("rules", "orders", clock), Collection("rules", "users", clock)
    records = [orders.insert({"_id": i, "qty": i}) for i in range(3)]
    records += [users.insert({"_id": oid(i), "name": f"u{i}"}) for i in range(2)]
    records += [orders.update(0, {"qty": 10}), orders.delete(2)]
    prefix = f"spark.rules.{oid(random.randrange(1 << 40))}"
    messages = encode(records, prefix)
    names = sorted({m.topic for m in messages})
    create_topics(stack.kafka_bootstrap, names)
    produce(stack.kafka_bootstrap, messages)
    return {"orders": names[0], "users": names[1]}


@pytest.fixture
def places(tmp_path):
    key = tmp_path / "encryption_key"
    key.write_text(SECRET + "\n")
    return {"key": str(key), "escaped": str(tmp_path / "escaped"), "jar": str(tmp_path / "evil.jar")}


ESCAPES = [
    # the audit's three
    ("FROM orders INSERT OVERWRITE DIRECTORY '{escaped}' USING text SELECT topic",
     "INSERT OVERWRITE DIRECTORY is a command"),
    ("SELECT '/*'; CREATE TEMPORARY VIEW f USING text OPTIONS (path '{key}'); SELECT value, '*/' FROM f", "statements"),
    ("SELECT `reflect`('java.lang.System', 'getProperty', 'user.name')", "the function `reflect` is not allowed"),
    # several statements, and statements hidden by comments
    ("SELECT 1; SELECT 2", "statements"),
    ("SELECT 1 -- ;\n; SET spark.sql.shuffle.partitions=7", "statements"),
    ("SELECT 1 /* a comment */; CACHE TABLE orders", "statements"),
    # commands
    ("SET spark.sql.shuffle.partitions=7", "SET is a command"),
    ("ADD JAR '{jar}'", "ADD JAR is a command"),
    ("CREATE FUNCTION evil AS 'com.example.Evil' USING JAR '{jar}'", "CREATE FUNCTION is a command"),
    ("CREATE TEMPORARY FUNCTION evil() RETURNS STRING RETURN 'x'", "CREATE FUNCTION is a command"),
    ("CACHE TABLE orders", "CACHE TABLE is a command"),
    ("INSERT INTO orders SELECT * FROM orders", "INSERT is a command"),
    ("LOAD DATA LOCAL INPATH '{key}' INTO TABLE orders", "LOAD DATA is a command"),
    ("CREATE TEMPORARY VIEW leak USING text OPTIONS (path '{key}')", "is a command"),
    ("CREATE OR REPLACE TEMP VIEW leak AS SELECT * FROM orders", "is a command"),
    ("DESCRIBE orders", "DESCRIBE is a command"),
    ("SHOW TABLES", "is a command"),
    ("EXPLAIN SELECT * FROM orders", "EXPLAIN is a command"),
    ("ANALYZE TABLE orders COMPUTE STATISTICS", "is a command"),
    ("REFRESH TABLE orders", "is a command"),
    ("USE other_database", "USE is a command"),
    ("DECLARE VARIABLE leak STRING", "is a command"),
    ("EXECUTE IMMEDIATE 'SET spark.sql.shuffle.partitions=7'", "EXECUTE IMMEDIATE is a command"),
    # files and other data sources
    ("SELECT * FROM parquet.`/tmp`", "`parquet`.`/tmp` is not one of the job's views"),
    ("SELECT * FROM text.`{key}`", "is not one of the job's views"),
    ("SELECT * FROM csv.`{key}`", "is not one of the job's views"),
    ("SELECT * FROM read_files('{key}')", "the table function `read_files` is not allowed"),
    ("SELECT (SELECT max(value) FROM text.`{key}`) FROM orders", "is not one of the job's views"),
    ("WITH k AS (SELECT * FROM text.`{key}`) SELECT * FROM k", "is not one of the job's views"),
    ("SELECT * FROM orders WITH ('path' = '{key}')", "options on `orders` are not allowed"),
    ("SELECT * FROM platform_secret", "`platform_secret` is not one of the job's views"),
    ("SELECT * FROM global_temp.platform_secret", "is not one of the job's views"),
    # Java, scripts, functions that are not built in, hints
    ("SELECT java_method('java.lang.System', 'getenv', 'HOME')", "the function `java_method` is not allowed"),
    ("SELECT try_reflect('java.lang.System', 'getenv', 'HOME')", "the function `try_reflect` is not allowed"),
    ("SELECT IDENTIFIER('reflect')('java.lang.System', 'getenv', 'HOME')", "is not allowed in a query"),
    ("SELECT system.builtin.reflect('java.lang.System', 'getenv', 'HOME')", "call built-in functions by their plain"),
    ("SELECT count(*) OVER w FROM orders WINDOW w AS (ORDER BY reflect('java.lang.System', 'getenv', 'HOME'))",
     "the function `reflect` is not allowed"),
    ("SELECT TRANSFORM(topic) USING 'cat' AS (t) FROM orders", "TRANSFORM … USING (a script)"),
    ("SELECT evil(topic) FROM orders", "`evil` is not one of Spark's built-in functions"),
    ("SELECT /*+ BROADCAST(orders) */ * FROM orders", "a hint"),
]


def _session_is_clean(spark, places) -> None:
    import os

    assert not os.path.exists(places["escaped"])
    assert spark.conf.get("spark.sql.shuffle.partitions") != "7"
    for view in ("f", "leak"):
        assert not spark.catalog.tableExists(view)
    assert not spark.catalog.functionExists("evil")
    assert not any("evil" in jar for jar in spark.sparkContext._jsc.sc().listJars().mkString(",").split(","))
    if spark.catalog.tableExists("orders"):
        assert not spark.catalog.isCached("orders")


@pytest.fixture(scope="module")
def sql_session(spark):
    """One session the escape attempts share, as jobs sharing a JVM would; apart from the other modules' sessions,
    since the `sql` template locks the session it runs in."""
    return spark.newSession()


@pytest.fixture
def secret_view(sql_session):
    """A temp view in the session that is not one of the job's (another job's, or the platform's)."""
    sql_session.sql(f"SELECT '{SECRET}' AS s").createOrReplaceTempView("platform_secret")
    sql_session.sql(f"SELECT '{SECRET}' AS s").createOrReplaceGlobalTempView("platform_secret")
    yield
    sql_session.catalog.dropTempView("platform_secret")
    sql_session.catalog.dropGlobalTempView("platform_secret")


@pytest.mark.parametrize(("sql", "reason"), ESCAPES, ids=[sql[:50] for sql, _ in ESCAPES])
def test_an_escape_attempt_is_refused_and_leaves_nothing(run_job, sql_session, stack, topics, places, secret_view,
                                                          sql, reason):
    spark = sql_session
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    code, lines = run_job("sql", {"bootstrap_servers": stack.kafka_bootstrap, "topics": [topics["users"]],
                                  "views": {"orders": topics["orders"], "users": topics["users"]},
                                  "sql": sql.format(**places)}, session=spark)
    final = lines[-1]
    assert (code, final["status"], final["error_type"]) == (2, "failed", "invalid_arguments"), final
    assert final["error"].startswith(sqlcheck.RULE) and reason in final["error"], final["error"]
    assert SECRET not in json.dumps(lines)
    assert not any(line.get("event") == "step" and line.get("name") == "sql" for line in lines)
    _session_is_clean(spark, places)
    assert spark.conf.get("spark.sql.shuffle.partitions") == partitions


@pytest.mark.parametrize(("sql", "reason"), ESCAPES, ids=[sql[:50] for sql, _ in ESCAPES])
def test_the_parse_tree_check_alone_refuses_each_escape(sql_session, places, secret_view, sql, reason):
    """Without the text pre-check of the arguments: Spark's parser and the plan walk decide."""
    spark = sql_session
    text = sql.format(**places)
    with pytest.raises(sqlcheck.QueryRefused) as refused:
        sqlcheck.check_query(spark, text, VIEWS)
        sqlcheck.check_analyzed(spark.sql(text), VIEWS)  # only names the analyser resolves get this far
    assert str(refused.value).startswith(sqlcheck.RULE) and SECRET not in str(refused.value)
    _session_is_clean(spark, places)


LEGITIMATE = [
    ("SELECT op, count(*) AS n FROM orders WHERE op IS NOT NULL GROUP BY op ORDER BY op",
     [["c", 3], ["d", 1], ["u", 1]]),
    ("SELECT id, row_number() OVER (PARTITION BY id ORDER BY offset) AS nth, count(*) OVER (PARTITION BY id) AS events "
     "FROM orders WHERE op IS NOT NULL QUALIFY nth = 1 ORDER BY id",
     [["0", 1, 2], ["1", 1, 1], ["2", 1, 2]]),
    ("WITH live AS (SELECT id FROM orders_latest WHERE NOT deleted) "
     "SELECT count(*) AS created FROM live JOIN orders USING (id) WHERE orders.op = 'c'", [[2]]),
    ("SELECT o.collection, u.collection FROM orders o CROSS JOIN (SELECT DISTINCT collection FROM users) u "
     "WHERE o.op = 'd'", [["orders", "users"]]),
    ("SELECT collection, count(*) AS n FROM (SELECT collection FROM orders UNION ALL SELECT collection FROM users) "
     "WHERE collection IS NOT NULL GROUP BY collection ORDER BY collection", [["orders", 5], ["users", 2]]),
    ("SELECT count(DISTINCT topic) AS topics FROM cdc_events", [[2]]),
    ("SELECT id FROM orders_latest WHERE EXISTS (SELECT 1 FROM orders WHERE orders.id = orders_latest.id "
     "AND orders.op = 'u') ORDER BY id", [["0"]]),
    ("SELECT n FROM orders LATERAL VIEW explode(sequence(1, 2)) s AS n WHERE op = 'u' ORDER BY n", [[1], [2]]),
    ("VALUES (1, 'a') AS t(x, y)", [[1, "a"]]),
]


@pytest.mark.parametrize(("sql", "rows"), LEGITIMATE, ids=[sql[:50] for sql, _ in LEGITIMATE])
def test_queries_over_the_views_still_run(run_job, stack, topics, sql, rows):
    code, lines = run_job("sql", {"bootstrap_servers": stack.kafka_bootstrap, "topics": [topics["users"]],
                                  "views": {"orders": topics["orders"], "users": topics["users"]}, "sql": sql})
    assert code == 0, lines[-1]
    assert lines[-1]["preview"]["rows"] == rows


def test_variables_in_the_text_are_not_substituted(run_job, spark, stack, topics):
    """`${env:…}`, `${system:…}` and `${conf}` would be replaced by Spark before parsing: the environment, Java's
    properties and the session's settings. The job turns substitution off: the text stays text."""
    sql = "SELECT '${env:PATH}' AS e, '${system:user.name}' AS s, '${spark.app.name}' AS c"
    code, lines = run_job("sql", {"bootstrap_servers": stack.kafka_bootstrap, "topics": [topics["users"]], "sql": sql})
    assert code == 0, lines[-1]
    assert lines[-1]["preview"]["rows"] == [["${env:PATH}", "${system:user.name}", "${spark.app.name}"]]
    unlocked = spark.newSession()  # its own settings: the shared session stays as the other tests expect it
    unlocked.conf.set("spark.sql.variable.substitute", "true")  # a session that was not locked: the check refuses
    with pytest.raises(sqlcheck.QueryRefused, match="variable substitution"):
        sqlcheck.check_query(unlocked, sql, VIEWS)
