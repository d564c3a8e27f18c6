"""Jars matching the installed pyspark: Spark's Kafka source (spark-sql-kafka-0-10) and Delta Lake (delta-spark)."""

from __future__ import annotations

import re
from pathlib import Path

from devstack import settings
from devstack.maven import fetch_jars
from devstack.process import StackError

POM = Path(__file__).parent / "maven" / "spark-kafka-pom.xml"
JARS = settings.STATE_DIR / "jars" / "spark-kafka"
DELTA_POM = Path(__file__).parent / "maven" / "spark-delta-pom.xml"
DELTA_JARS = settings.STATE_DIR / "jars" / "spark-delta"


def _artifact(jar: Path) -> str:
    """`lz4-java-1.10.1.jar` -> `lz4-java`."""
    return re.sub(r"-\d[\w.\-]*\.jar$", "", jar.name)


def pyspark_version() -> str:
    try:
        import pyspark
    except ImportError:
        raise StackError("pyspark is not installed; run: pip install -r requirements.txt") from None
    return pyspark.__version__


def delta_version() -> str:
    try:
        from importlib.metadata import version
        return version("delta-spark")
    except ImportError:
        raise StackError("delta-spark is not installed; run: pip install -r requirements.txt") from None
    except Exception:
        raise StackError("delta-spark is not installed; run: pip install -r requirements.txt") from None


def _not_shipped(fetched: list[Path]) -> list[Path]:
    import pyspark

    shipped = {_artifact(jar) for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return [jar for jar in fetched if _artifact(jar) not in shipped]


def kafka_source_jars() -> list[Path]:
    """Jars to put on spark.jars: the Kafka source plus what pyspark does not already ship."""
    version = pyspark_version()
    return _not_shipped(fetch_jars(POM.read_text().replace("SPARK_VERSION", version), JARS / version,
                                   "Spark Kafka source"))


def delta_jars() -> list[Path]:
    """Delta Lake's jars for this Spark (`delta-spark_<major.minor>_2.13` at the installed delta-spark's version)."""
    spark_minor = ".".join(pyspark_version().split(".")[:2])
    delta = delta_version()
    pom = DELTA_POM.read_text().replace("SPARK_MINOR", spark_minor).replace("DELTA_VERSION", delta)
    return _not_shipped(fetch_jars(pom, DELTA_JARS / f"{delta}-spark{spark_minor}", "Delta Lake"))


def up() -> str:
    jars = kafka_source_jars()
    delta = delta_jars()
    return (f"{len(jars)} Kafka source jars for pyspark {pyspark_version()} in {jars[0].parent}, "
            f"{len(delta)} Delta Lake {delta_version()} jars in {delta[0].parent}")
