"""The spark-submit command of a `delta_sync` job carries Delta Lake (the jars devstack fetched from Maven Central for
the installed pyspark, its SQL extension and catalog); other templates do not; a standalone master on the loopback
gets a driver bound to 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

from sparkjobs.submit import command


def _conf(argv: list[str]) -> dict[str, str]:
    pairs = [argv[index + 1] for index, item in enumerate(argv) if item == "--conf"]
    return dict(pair.split("=", 1) for pair in pairs)


def test_a_delta_sync_job_gets_delta_lake_and_other_templates_do_not(monkeypatch):
    monkeypatch.delenv("SPARK_KAFKA_PACKAGES", raising=False)
    import pyspark

    argv, _ = command("delta_sync", {"topics": ["t"], "mode": "stream"}, master="local[2]")
    jars = argv[argv.index("--jars") + 1].split(",")
    spark_minor = ".".join(pyspark.__version__.split(".")[:2])
    delta = [jar for jar in jars if Path(jar).name.startswith(f"delta-spark_{spark_minor}_2.13-")]
    assert delta and all(Path(jar).is_file() for jar in jars)
    assert any("spark-sql-kafka-0-10" in Path(jar).name for jar in jars)
    conf = _conf(argv)
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert conf["spark.sql.catalog.spark_catalog"] == "org.apache.spark.sql.delta.catalog.DeltaCatalog"

    argv, _ = command("latest_state", {"topics": ["t"]}, master="local[2]")
    assert not any("delta" in Path(jar).name for jar in argv[argv.index("--jars") + 1].split(","))
    assert "spark.sql.extensions" not in _conf(argv)


def test_a_standalone_master_on_the_loopback_binds_the_driver_there(monkeypatch):
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    argv, env = command("delta_sync", {"topics": ["t"], "mode": "stream"}, master="spark://127.0.0.1:7177")
    assert _conf(argv)["spark.driver.host"] == "127.0.0.1" and env["SPARK_LOCAL_IP"] == "127.0.0.1"
    argv, env = command("delta_sync", {"topics": ["t"], "mode": "stream"}, master="spark://spark.example:7077")
    assert "spark.driver.host" not in _conf(argv) and "SPARK_LOCAL_IP" not in env
