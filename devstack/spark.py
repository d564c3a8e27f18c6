"""Spark's Kafka source jars (spark-sql-kafka-0-10) matching the installed pyspark."""

from __future__ import annotations

import re
from pathlib import Path

from devstack import settings
from devstack.maven import fetch_jars
from devstack.process import StackError

POM = Path(__file__).parent / "maven" / "spark-kafka-pom.xml"
JARS = settings.STATE_DIR / "jars" / "spark-kafka"


def _artifact(jar: Path) -> str:
    """`lz4-java-1.10.1.jar` -> `lz4-java`."""
    return re.sub(r"-\d[\w.\-]*\.jar$", "", jar.name)


def pyspark_version() -> str:
    try:
        import pyspark
    except ImportError:
        raise StackError("pyspark is not installed; run: pip install -r requirements.txt") from None
    return pyspark.__version__


def kafka_source_jars() -> list[Path]:
    """Jars to put on spark.jars: the Kafka source plus what pyspark does not already ship."""
    import pyspark

    version = pyspark_version()
    fetched = fetch_jars(POM.read_text().replace("SPARK_VERSION", version), JARS / version, "Spark Kafka source")
    shipped = {_artifact(jar) for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return [jar for jar in fetched if _artifact(jar) not in shipped]


def up() -> str:
    jars = kafka_source_jars()
    return f"{len(jars)} jars for pyspark {pyspark_version()} in {jars[0].parent}"
