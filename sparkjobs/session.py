"""A SparkSession configured for this platform's stack.

- master: the ``master`` argument, else ``SPARK_MASTER``, else ``local[*]``. Under ``spark-submit`` the
  master (and the driver's memory) are spark-submit's and are left alone.
- Spark's Kafka source: ``spark.jars`` from ``SPARK_KAFKA_JARS`` (comma-separated paths) or the jars
  devstack fetched (`devstack.spark.kafka_source_jars`); ``spark.jars.packages`` instead when
  ``SPARK_KAFKA_PACKAGES`` is set (``online`` for the coordinate matching the installed pyspark, or an
  explicit list of coordinates). A listed jar that does not exist is an error before any JVM starts.
- Delta Lake (the ``delta_sync`` and ``delta_query`` templates, ``delta=True``): its jars from ``SPARK_DELTA_JARS``
  or devstack (`devstack.spark.delta_jars`), or its coordinate beside the Kafka source's in
  ``spark.jars.packages``; its SQL extension and catalog.
- sized for a 2-core machine: driver memory ``SPARK_DRIVER_MEMORY`` (1g), ``spark.sql.shuffle.partitions``
  ``SPARK_SHUFFLE_PARTITIONS`` (4); the web UI and the console progress bar off (jobs report stage
  progress as ``CDCJOB`` lines instead); session time zone UTC; local masters bind to 127.0.0.1.
- the ``sparkjobs`` package is shipped to the executors (``addPyFile``), so the Python UDFs resolve on
  any cluster.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from sparkjobs.errors import JobError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PACKAGE_DIR = Path(__file__).resolve().parent
# Modules of the connectors the UDFs use (standard library only), shipped beside the package.
SHARED_MODULES = ("connectors/__init__.py", "connectors/mongodb/__init__.py", "connectors/mongodb/update_paths.py")
KAFKA_SOURCE_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
DELTA_TEMPLATES = frozenset({"delta_sync", "delta_query"})
DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.databricks.delta.snapshotPartitions": "2",  # Delta's 50 are for clusters: a small log's state in 2 tasks
}


def default_master() -> str:
    return os.environ.get("SPARK_MASTER") or "local[*]"


def under_spark_submit() -> bool:
    """True when this Python process was started by spark-submit (its JVM is already running)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def scala_binary_version() -> str:
    import pyspark

    for jar in (Path(pyspark.__file__).parent / "jars").glob("spark-core_*.jar"):
        return jar.name.split("_", 1)[1].split("-", 1)[0]
    return "2.13"


def kafka_packages() -> str | None:
    """Maven coordinates for spark.jars.packages, when SPARK_KAFKA_PACKAGES asks for them."""
    raw = os.environ.get("SPARK_KAFKA_PACKAGES", "").strip()
    if not raw or raw.lower() in ("0", "false", "no", "off"):
        return None
    if raw.lower() in ("1", "true", "yes", "on", "online"):
        import pyspark

        return f"org.apache.spark:spark-sql-kafka-0-10_{scala_binary_version()}:{pyspark.__version__}"
    return raw


def delta_package() -> str:
    """The Maven coordinate of Delta Lake for the installed pyspark and delta-spark."""
    from importlib.metadata import version

    import pyspark

    spark_minor = ".".join(pyspark.__version__.split(".")[:2])
    return f"io.delta:delta-spark_{spark_minor}_{scala_binary_version()}:{version('delta-spark')}"


def _jars(variable: str, fetcher: str, what: str) -> list[str]:
    """Jar paths from ``variable`` (comma-separated) or devstack's ``fetcher``; raises JobError naming a missing
    jar."""
    raw = os.environ.get(variable, "").strip()
    if raw:
        jars = [part.strip() for part in raw.replace(os.pathsep, ",").split(",") if part.strip()]
    else:
        try:
            from devstack import spark as devstack_spark
        except ImportError:
            raise JobError(
                f"no jars for {what}: set {variable} to its jars, or SPARK_KAFKA_PACKAGES=online to let Spark "
                "download them"
            ) from None
        try:
            jars = [str(path) for path in getattr(devstack_spark, fetcher)()]
        except Exception as error:  # devstack's StackError, a Maven failure, ...
            raise JobError(f"could not fetch the jars of {what}: {error}") from error
    missing = [jar for jar in jars if not Path(jar).is_file()]
    if missing:
        raise JobError(f"missing jar: {', '.join(missing)} ({what} cannot be loaded)")
    if not jars:
        raise JobError(f"{variable} lists no jar")
    return jars


def kafka_jars() -> list[str]:
    """Paths of the Kafka source jars; raises JobError naming a jar that is missing."""
    return _jars("SPARK_KAFKA_JARS", "kafka_source_jars", "Spark's Kafka source")


def delta_jars() -> list[str]:
    """Paths of Delta Lake's jars; raises JobError naming a jar that is missing."""
    return _jars("SPARK_DELTA_JARS", "delta_jars", "Delta Lake")


def jars_and_packages(delta: bool) -> tuple[list[str], str | None]:
    """(jar paths, Maven coordinates) a job needs: the Kafka source, and Delta Lake when ``delta``."""
    packages = kafka_packages()
    if packages:
        return [], f"{packages},{delta_package()}" if delta else packages
    return kafka_jars() + (delta_jars() if delta else []), None


def session_conf(master: str | None = None, app_name: str = "cdc-sparkjob", *, delta: bool = False) -> dict[str, str]:
    """The configuration build_session applies (without starting anything)."""
    conf: dict[str, str] = {
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": os.environ.get("SPARK_SHUFFLE_PARTITIONS", "4"),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stopGracefullyOnShutdown": "true",
        "spark.sql.execution.pythonUDF.arrow.enabled": "false",
    }
    if not under_spark_submit():
        master = master or default_master()
        conf["spark.master"] = master
        conf["spark.driver.memory"] = os.environ.get("SPARK_DRIVER_MEMORY", "1g")
        if master.startswith("local"):
            conf["spark.driver.host"] = "127.0.0.1"
            conf["spark.driver.bindAddress"] = "127.0.0.1"
    if delta:
        conf.update(DELTA_CONF)
    if not under_spark_submit():
        jars, packages = jars_and_packages(delta)
        if packages:
            conf["spark.jars.packages"] = packages
        else:
            conf["spark.jars"] = ",".join(jars)
    return conf


def build_session(
    master: str | None = None,
    app_name: str = "cdc-sparkjob",
    conf: Mapping[str, str] | None = None,
    *,
    log_level: str = "WARN",
    delta: bool = False,
) -> SparkSession:
    settings = session_conf(master, app_name, delta=delta)
    settings.update(conf or {})
    if settings.get("spark.master", "").startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors run this interpreter
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    ship_code(spark)
    return spark


def check_kafka_source(spark: SparkSession) -> None:
    """Raise JobError unless Spark can load its Kafka source (the jars may be missing under spark-submit)."""
    jvm = spark.sparkContext._jvm
    try:
        jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(
            "kafka", spark._jsparkSession.sessionState().conf()
        )
    except Exception as error:
        raise JobError(
            "Spark's Kafka source (spark-sql-kafka-0-10) is not on the classpath: launch through "
            "`python -m sparkjobs.submit` (it passes --jars), or set SPARK_KAFKA_JARS / SPARK_KAFKA_PACKAGES"
        ) from error


_SHIPPED: dict[int, str] = {}


def package_zip(directory: str | None = None) -> str:
    """A zip of the sparkjobs package (sources only) and the shared modules it uses, for --py-files or addPyFile."""
    target = Path(directory or tempfile.mkdtemp(prefix="sparkjobs-")) / "sparkjobs.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for source in sorted(PACKAGE_DIR.rglob("*.py")):
            archive.write(source, Path("sparkjobs") / source.relative_to(PACKAGE_DIR))
        for module in SHARED_MODULES:
            archive.write(PACKAGE_DIR.parent / module, module)
    return str(target)


def ship_code(spark: SparkSession) -> None:
    """Make ``sparkjobs`` importable on the executors (once per SparkContext)."""
    context = spark.sparkContext
    key = id(context._jsc)
    if key in _SHIPPED:
        return
    if "sparkjobs.zip" in (context.getConf().get("spark.submit.pyFiles") or ""):
        _SHIPPED[key] = "spark-submit"
        return
    path = package_zip()
    context.addPyFile(path)
    _SHIPPED[key] = path


def cleanup_shipped() -> None:
    for path in _SHIPPED.values():
        if path.endswith("sparkjobs.zip"):
            shutil.rmtree(Path(path).parent, ignore_errors=True)
    _SHIPPED.clear()
